#!/usr/bin/env python3
"""The cross-checks' view of fits/vae.json, through the vramfit Python package.

Usage: vramfit_reader.py COEFFICIENTS.json < queries.json > prices.json
Each query: {"vae", "op", "tile", "width", "height", "batch", "dtype",
"loaded_dtype", "conv_backend", "allocator", "os"} with the allocator and
OS given. Each answer: {"bytes", "rule", "weight_growth_bytes"}.

The pricing itself is the package's (the vramfit-vae wheel, the runtime
crate compiled), the one Python apps import; this file only adapts the
cross-checks' query format to it.
"""

import json
import sys

import vramfit_vae as vramfit


def main():
    coefficients = vramfit.load(sys.argv[1])
    answers = []
    for q in json.load(sys.stdin):
        r = vramfit.reserve(
            q["vae"], q["op"], q["width"], q["height"], dtype=q["dtype"],
            loaded_dtype=q.get("loaded_dtype"), batch=q["batch"], tile=q["tile"], backend=q["conv_backend"],
            allocator=q["allocator"], os=q["os"], coefficients=coefficients, env={},
        )
        answers.append({"bytes": r.bytes, "rule": r.rule, "weight_growth_bytes": r.weight_growth_bytes})
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    main()
