"""Running a plan: each group of points in a fresh child (one point, a
point fresh then warm, or a grid's points in one process), the rows
appended to the CSV as they come (flushed and synced, so an interrupted
run loses at most the group in flight), points already written (or already
out of memory) skipped on a restart. A group with some points done runs
whole again (its order decides each point's context) and writes the rest."""

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
    "loaded_dtype", "run_dtype", "width", "height", "batch", "frames", "temporal_tile", "run", "runs", "aggregate",
    "context",
    "reserved_bytes", "allocated_bytes", "driver_bytes", "note",
    "driver_version", "diffusers", "harness", "config_source", "measured_on",
]

NOTE = ("random-init VAE from the model's config; weights and input on the device before the baseline; "
        "the op run once; deltas of max_memory_reserved, max_memory_allocated and the driver's used memory")
#: How each context's process ran, in the row's note.
CONTEXT_NOTE = {
    "fresh": "the first op of a fresh process",
    "warm": "after an earlier op of the same process (its cache released before the baseline)",
}



def csv_cell(value):
    """A cell as the measurement CSV holds it: text that begins as a spreadsheet formula does (=, +, -, @, a tab or
    a carriage return: a device name or a note is free text) gets a leading apostrophe, as the runtime writes an
    observation row (``vramfit_runtime::text::formula_safe``); numbers and other text unchanged."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value

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


def run_group(group, device, python, timeout):
    """One child for a group of points: each point's answer (by key) and
    the child's exit code."""
    spec = {"device": device, "points": [dict(p.__dict__, key=p.key()) for p in group]}
    env = allocators.child_env(os.environ, group[0].allocator)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run(
        [python, "-m", "harness.child"], input=json.dumps(spec), capture_output=True, text=True,
        env=env, timeout=timeout * len(group))
    answers = {}
    for line in proc.stdout.splitlines():
        if line.strip().startswith("{"):
            a = json.loads(line)
            answers[a.get("key")] = a
    if proc.returncode not in (0, OOM_EXIT) or not answers:
        raise RuntimeError("%s: the child failed (exit %d): %s"
                           % (group[0].key(), proc.returncode, proc.stderr.strip()[-2000:]))
    return answers, proc.returncode


def context_note(point, facts):
    """How the point's process ran it: first, or after how many ops (and which first)."""
    earlier = facts.get("earlier", 0)
    if point.context == "fresh" or not earlier:
        return CONTEXT_NOTE[point.context]
    return "%s: %d op(s) ran before it in its process, the first %s" % (
        CONTEXT_NOTE["warm"], earlier, facts.get("first", ""))


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
        "tile": facts.get("tile", point.tile),
        "loaded_dtype": point.dtype,
        "run_dtype": point.dtype,
        "width": point.width,
        "height": point.height,
        "batch": point.batch,
        "frames": point.frames,
        "temporal_tile": facts.get("temporal_tile", 0) if point.video() else "",
        "run": point.run,
        "runs": runs,
        "aggregate": "single",
        # The first op of a process holds its first use (docs/data.md, "Context").
        "context": point.context,
        "reserved_bytes": facts["reserved"],
        "allocated_bytes": facts["allocated"],
        "driver_bytes": facts["driver"],
        "note": context_note(point, facts) + "; " + NOTE + ("; SIMULATED (fake device), not a measurement" if device == "fake" else "")
        + ("" if doc.get("confirmed", True) else "; config UNCONFIRMED against the model repository"),
        "driver_version": facts.get("driver_version", ""),
        "diffusers": facts.get("diffusers", ""),
        "harness": __version__,
        "config_source": ("" if doc.get("confirmed", True) else "UNCONFIRMED: ") + doc["source"],
        "measured_on": date,
    }


def run_plan(plan, out, oom_log, device, python=None, timeout=600, say=print):
    """Runs every group with a point not yet done; returns (written, oom, skipped).

    A child that fails (not out of memory: a crash, a timeout) does not stop
    the plan: its group is reported, the other groups of its family under
    its allocator are passed over (they would fail the same way, and a GPU's
    minutes are counted), and the rest run. A RuntimeError at the end names
    every failure, so the exit status still says the plan did not finish.
    An out-of-memory point goes to its log; the rest of its child's group
    still runs."""
    python = python or sys.executable
    done = done_keys(out, oom_log)
    written = oom = skipped = 0
    failed = {}
    for group in plan.groups:
        todo = [p for p in group if p.key() not in done]
        skipped += len(group) - len(todo)
        if not todo:
            continue
        first = group[0]
        if (first.family, first.allocator) in failed:
            continue
        started = time.monotonic()
        try:
            answers, code = run_group(group, device, python, timeout)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            failed[(first.family, first.allocator)] = str(e)
            say("fail  %s: %s" % (first.key(), str(e)[-600:]))
            continue
        for point in todo:
            answer = answers.get(point.key())
            if answer is None:
                continue  # the child printed nothing for it (it died before): measured again on a restart
            if "oom" in answer:
                entry = {"key": point.key(), "point": point.__dict__, "device": device, "message": answer["oom"]}
                _append(oom_log, lambda f, new: f.write(json.dumps(entry, sort_keys=True) + "\n"))
                oom += 1
                say("oom   %s" % point.key())
                continue
            values = {k: csv_cell(v) for k, v in row(point, plan.runs, answer, device).items()}

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
