#!/usr/bin/env python3
"""The Python package's speed against the last pure-Python one, on the same queries.

Usage (from the repository root, with the wheel installed in this python):

    python benches/python_speed.py [--old-rev REV] [--rounds N] [--json]

It measures, for the installed ``vramfit_vae`` (the runtime crate compiled)
and for the pure-Python ``vramfit`` package of commit REV (default
``90dd74a``, the last one before the wheel; extracted with ``git archive``
into a temporary folder):

- import time: the ``import`` and the bundled coefficients' first load in
  a fresh interpreter (timed inside it, so its start is not counted), the
  median of N runs;
- ``reserve()`` per call: every query of a fixed grid (each family, image
  sizes and clips, dtypes, backends, allocators, a tile), each answered once
  per round, the median round divided by the queries;
- ``plan()`` per call: the same for a grid of plans (batches and budgets
  that give every verdict).

Both packages answer every query the same (it checks ``to_dict()`` and the
plans before timing). Nothing is asserted about the figures: they go in
benches/README.md as measured, with the machine named.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def grid(c):
    """The reserve queries: (model, op, width, height, keywords)."""
    out = []
    families = sorted(c.registry)
    for fam in families:
        video = c.registry[fam].get("video") is not None
        for op in ("decode", "encode"):
            for size in ((512, 512), (1024, 1024), (1248, 704), (2048, 2048)):
                for dtype in ("fp16", "bf16", "fp32"):
                    for backend, allocator in (("cudnn", "native"), ("cudnn", "cudaMallocAsync"), ("miopen", "native")):
                        kw = dict(dtype=dtype, backend=backend, allocator=allocator, os="linux", env={})
                        if video:
                            kw["frames"] = 49
                        out.append((fam, op, size[0], size[1], kw))
            out.append((fam, op, 2048, 2048, dict(dtype="fp16", tile=512, os="linux", env={})))
    return out


def plans():
    out = []
    for model in ("sdxl", "flux1", "sd3", "qwen-image", "wan2.1", "ltx-2"):
        for batch, free in ((1, 24 << 30), (8, 24 << 30), (8, 6 << 30), (1, 1 << 30)):
            kw = dict(dtype="bf16", batch=batch, free=free, share="0.9", os="linux", env={})
            if model in ("wan2.1", "ltx-2"):
                kw["frames"] = 49
            out.append((model, "decode", 1024, 1024, kw))
    return out


def answer(mod, fn, q):
    model, op, w, h, kw = q
    try:
        r = getattr(mod, fn)(model, op, w, h, **kw)
        return r.to_dict() if hasattr(r, "to_dict") else r
    except ValueError as e:
        return "refused: %s" % e


def per_call(mod, fn, queries, rounds):
    f = getattr(mod, fn)
    times = []
    for _ in range(rounds):
        t = time.perf_counter_ns()
        for model, op, w, h, kw in queries:
            try:
                f(model, op, w, h, **kw)
            except ValueError:
                pass
        times.append((time.perf_counter_ns() - t) / len(queries))
    return statistics.median(times)


def import_time(code, env, rounds):
    def once(stmt):
        script = "import time; t = time.perf_counter(); %s; print(time.perf_counter() - t)" % stmt
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        return float(out.stdout)

    return statistics.median(once(code) for _ in range(rounds))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old-rev", default="90dd74a")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    import vramfit_vae as new

    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "archive", a.old_rev, "python"], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        old_path = os.path.join(tmp, "python")
        sys.path.insert(0, old_path)
        import vramfit as old

        queries = grid(new.bundled())
        plan_queries = plans()
        differ = [q for q in queries if answer(old, "reserve", q) != answer(new, "reserve", q)]
        differ += [q for q in plan_queries if answer(old, "plan", q) != answer(new, "plan", q)]
        if differ:
            sys.exit("the two packages answer %d queries differently, first: %r" % (len(differ), differ[0]))
        for mod in (old, new):  # warm: the bundled coefficients loaded once
            per_call(mod, "reserve", queries[:5], 1)
        r_old, r_new = per_call(old, "reserve", queries, a.rounds), per_call(new, "reserve", queries, a.rounds)
        p_old, p_new = per_call(old, "plan", plan_queries, a.rounds), per_call(new, "plan", plan_queries, a.rounds)
        env_old = dict(os.environ, PYTHONPATH=old_path)
        env_new = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        i_old = import_time("import vramfit; vramfit.bundled()", env_old, a.rounds)
        i_new = import_time("import vramfit_vae; vramfit_vae.bundled()", env_new, a.rounds)
    rows = {
        "queries": {"reserve": len(queries), "plan": len(plan_queries)},
        "reserve_us": {"pure_python": r_old / 1e3, "wheel": r_new / 1e3, "speedup": r_old / r_new},
        "plan_us": {"pure_python": p_old / 1e3, "wheel": p_new / 1e3, "speedup": p_old / p_new},
        "import_and_load_ms": {"pure_python": i_old * 1e3, "wheel": i_new * 1e3},
        "python": sys.version.split()[0],
        "old_rev": a.old_rev,
    }
    if a.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return
    print("%-32s %14s %14s %9s" % ("", "pure Python", "wheel", "speedup"))
    print("%-32s %12.1f µs %12.2f µs %8.0f×" % ("reserve() per call (%d queries)" % len(queries), r_old / 1e3,
                                              r_new / 1e3, r_old / r_new))
    print("%-32s %12.1f µs %12.2f µs %8.0f×" % ("plan() per call (%d plans)" % len(plan_queries), p_old / 1e3,
                                              p_new / 1e3, p_old / p_new))
    print("%-32s %12.1f ms %12.1f ms" % ("import + bundled()", i_old * 1e3, i_new * 1e3))


if __name__ == "__main__":
    main()
