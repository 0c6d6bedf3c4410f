"""Running a plan: each run of each point in a fresh child, the rows
appended to the CSV as they come (flushed and synced, so an interrupted
run loses at most the point in flight), points already written (or already
out of memory) skipped on a restart."""

import csv
import datetime
import json
import os
import subprocess
import sys
import time

from . import __version__, allocators, configs
from .child import OOM_EXIT

COLUMNS = [
    "id", "source", "device", "torch", "conv_backend", "allocator", "os", "vae", "model", "op", "tile",
    "loaded_dtype", "run_dtype", "width", "height", "batch", "run", "runs", "aggregate", "context",
    "reserved_bytes", "allocated_bytes", "driver_bytes", "note",
    "driver_version", "diffusers", "harness", "config_source", "measured_on",
]

NOTE = ("fresh process per run; random-init VAE from the model's config; weights and input on the device "
        "before the baseline; the op run once; deltas of max_memory_reserved, max_memory_allocated and "
        "the driver's used memory")


def done_keys(out, oom_log):
    """Point keys already written to the CSV or the out-of-memory log."""
    keys = set()
    if os.path.exists(out):
        with open(out, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is not None and header != COLUMNS:
                raise ValueError("%s: its header is not the harness's (%s…); write to a new file"
                                 % (out, ",".join(header[:3])))
            for row in reader:
                if row:
                    keys.add(row[0].split("/", 1)[-1])
    if os.path.exists(oom_log):
        with open(oom_log, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    keys.add(json.loads(line)["key"])
    return keys


def _append(path, write):
    new = not os.path.exists(path)
    with open(path, "a", newline="", encoding="utf-8") as f:
        write(f, new)
        f.flush()
        os.fsync(f.fileno())


def run_point(point, device, python, timeout):
    """One child: its parsed answer and exit code."""
    spec = dict(point.__dict__, device=device, key=point.key())
    env = allocators.child_env(os.environ, point.allocator)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run(
        [python, "-m", "harness.child"], input=json.dumps(spec), capture_output=True, text=True,
        env=env, timeout=timeout)
    lines = [l for l in proc.stdout.splitlines() if l.strip()]
    if proc.returncode not in (0, OOM_EXIT) or not lines:
        raise RuntimeError("%s: the child failed (exit %d): %s" % (point.key(), proc.returncode, proc.stderr.strip()[-2000:]))
    return json.loads(lines[-1]), proc.returncode


def row(point, runs, facts, device):
    doc = configs.load(point.family)
    slug = "".join(c if c.isalnum() else "-" for c in facts["device"].lower()).strip("-")
    date = datetime.date.today().isoformat()
    return {
        "id": "h-%s/%s" % (slug, point.key()),
        "source": "vramfit harness %s on %s, %s" % (__version__, facts["device"], date),
        "device": facts["device"],
        "torch": facts.get("torch", ""),
        "conv_backend": facts["conv_backend"],
        "allocator": point.allocator,
        "os": facts.get("os", ""),
        "vae": doc["vae"],
        "model": doc["model"],
        "op": point.op,
        "tile": point.tile,
        "loaded_dtype": point.dtype,
        "run_dtype": point.dtype,
        "width": point.width,
        "height": point.height,
        "batch": point.batch,
        "run": point.run,
        "runs": runs,
        "aggregate": "single",
        # One fresh process per run: the op's first use in it (docs/data.md, "Context").
        "context": "fresh",
        "reserved_bytes": facts["reserved"],
        "allocated_bytes": facts["allocated"],
        "driver_bytes": facts["driver"],
        "note": NOTE + ("; SIMULATED (fake device), not a measurement" if device == "fake" else "")
        + ("" if doc.get("confirmed", True) else "; config UNCONFIRMED against the model repository"),
        "driver_version": facts.get("driver_version", ""),
        "diffusers": facts.get("diffusers", ""),
        "harness": __version__,
        "config_source": ("" if doc.get("confirmed", True) else "UNCONFIRMED: ") + doc["source"],
        "measured_on": date,
    }


def run_plan(plan, out, oom_log, device, python=None, timeout=600, say=print):
    """Runs every point not yet done; returns (written, oom, skipped).

    A child that fails (not out of memory: a crash, a timeout) does not stop
    the plan: its point is reported, the other points of its family under
    its allocator are passed over (they would fail the same way, and a GPU's
    minutes are counted), and the rest run. A RuntimeError at the end names
    every failure, so the exit status still says the plan did not finish."""
    python = python or sys.executable
    done = done_keys(out, oom_log)
    written = oom = skipped = 0
    failed = {}
    for point in plan.points:
        if point.key() in done:
            skipped += 1
            continue
        if (point.family, point.allocator) in failed:
            continue
        started = time.monotonic()
        try:
            answer, code = run_point(point, device, python, timeout)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            failed[(point.family, point.allocator)] = str(e)
            say("fail  %s: %s" % (point.key(), str(e)[-600:]))
            continue
        if code == OOM_EXIT:
            entry = {"key": point.key(), "point": point.__dict__, "device": device, "message": answer.get("oom", "")}
            _append(oom_log, lambda f, new: f.write(json.dumps(entry, sort_keys=True) + "\n"))
            oom += 1
            say("oom   %s" % point.key())
            continue
        values = row(point, plan.runs, answer, device)

        def write(f, new):
            w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
            if new:
                w.writeheader()
            w.writerow(values)

        _append(out, write)
        written += 1
        say("ok    %s  reserved %d B  (%.1f s)" % (point.key(), answer["reserved"], time.monotonic() - started))
    if failed:
        raise RuntimeError("%d written, then failed (the rest of each family under that allocator passed over): %s"
                           % (written, "; ".join("%s under %s" % k for k in sorted(failed))))
    return written, oom, skipped
