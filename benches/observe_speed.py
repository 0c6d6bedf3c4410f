#!/usr/bin/env python3
"""What ``vramfit_vae.Observer`` costs a host, per op.

Usage (from the repository root, with the wheel installed in this python):

    python benches/observe_speed.py [--rounds N] [--ops N] [--json]

Four loops of the same ComfyUI drop-in call (``memory_used_decode("sdxl", ...)``) and an empty op, on the
harness's simulated device (``harness/fake.py``, ``Cuda``: its memory calls are Python attribute reads, so
what is timed is the observer's own work, not a GPU's synchronisation):

- off: the drop-in without ``observe=`` (what a host runs today);
- off, ``observe=None``: the keyword given and empty;
- on, no file: ``Observer(None)`` around the op (read the peaks, make the row, check the answer);
- on, a file: ``Observer(path)`` around the op (the above, and the row appended under the file lock).

The median round divided by the ops, per op. Nothing is asserted: the figures go in benches/README.md as
measured, with the machine named.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness import fake  # noqa: E402

import vramfit_vae  # noqa: E402
from vramfit_vae.hosts import comfyui  # noqa: E402

SHAPE = [1, 4, 128, 128]


def loop(ops, observer=None, keyword=False):
    start = time.perf_counter()
    for _ in range(ops):
        if observer is None:
            if keyword:
                comfyui.memory_used_decode("sdxl", SHAPE, "torch.float16", observe=None)
            else:
                comfyui.memory_used_decode("sdxl", SHAPE, "torch.float16")
            continue
        comfyui.memory_used_decode("sdxl", SHAPE, "torch.float16", observe=observer)
        with observer:
            observer.device.peak_allocated += 1 << 20
    return (time.perf_counter() - start) / ops


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--ops", type=int, default=400)
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "observed.csv")
        cases = {
            "off": lambda: loop(a.ops),
            "off, observe=None": lambda: loop(a.ops, keyword=True),
            "on, no file": lambda: loop(a.ops, vramfit_vae.Observer(None, device=fake.Cuda())),
            "on, a file": lambda: loop(a.ops, vramfit_vae.Observer(path, device=fake.Cuda(), max_bytes=1 << 40)),
        }
        figures = {}
        for name, run in cases.items():
            run()  # warm-up
            figures[name] = statistics.median(run() for _ in range(a.rounds)) * 1e6
    if a.json:
        print(json.dumps(figures, indent=1))
        return
    for name, us in figures.items():
        print("%-20s %8.1f µs per op" % (name, us))


if __name__ == "__main__":
    main()
