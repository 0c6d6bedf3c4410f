#!/usr/bin/env python3
"""Runs the Python side of the refusal table (tests/fixtures/refusals.json):
prints, per case, {"error": message} for a ValueError, {"ok": answer} when
the call is accepted, or {"crash": "Type: message"} for any other exception
(a refusal must be a ValueError)."""

import json
import sys

import vramfit_vae as vramfit

table = json.load(open(sys.argv[1], encoding="utf-8"))
out = []
for case in table["cases"]:
    call = case["python"]
    kw = dict(call["kw"])
    if call["call"] == "reserve":
        kw.setdefault("os", "linux")
        kw.setdefault("env", {})
    try:
        fn = vramfit.reserve if call["call"] == "reserve" else vramfit.budget
        r = fn(*call["args"], **kw)
        out.append({"ok": r.to_dict() if hasattr(r, "to_dict") else [r.bytes, r.bound]})
    except ValueError as e:
        out.append({"error": str(e)})
    except Exception as e:  # noqa: BLE001 - any other exception is the finding
        out.append({"crash": "%s: %s" % (type(e).__name__, e)})
json.dump(out, sys.stdout)
