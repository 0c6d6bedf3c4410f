#!/usr/bin/env python3
"""Prices queries through the vramfit Python package, for the agreement test.

Reads a JSON list of queries on stdin, each {"model", "op", "width",
"height", "kw": {keyword arguments of vramfit.reserve}, "env": {variables},
"coefficients": path or null (the bundled copy)}; prints a JSON list with,
per query, {"ok": the answer as vramfit reserve --format json prints it}
or {"error": the ValueError's message} (with "load": true when the file
itself was refused).
"""

import json
import sys

import vramfit_vae as vramfit

loaded = {}
answers = []
for q in json.load(sys.stdin):
    path = q.get("coefficients")
    if path is not None and path not in loaded:
        try:
            loaded[path] = vramfit.load(path)
        except ValueError as e:
            loaded[path] = e
    coefficients = loaded.get(path)
    if isinstance(coefficients, ValueError):
        answers.append({"error": str(coefficients), "load": True})
        continue
    try:
        r = vramfit.reserve(q["model"], q["op"], q["width"], q["height"], coefficients=coefficients,
                            env=q.get("env", {}), **q["kw"])
        answers.append({"ok": r.to_dict()})
    except ValueError as e:
        answers.append({"error": str(e)})
json.dump(answers, sys.stdout)
