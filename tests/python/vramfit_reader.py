#!/usr/bin/env python3
"""A runtime's view of fits/vae.json: price a VAE query from the JSON alone.

Standard library only, as a Python app (InvokeAI, ComfyUI) would embed it.
It prices as vramfit does: the query's own line (and, for an OS-specific
key, the platform's line measured without an OS when that is higher); else
the largest line with the same (vae, op, tile, dtype) plus cast growth,
never below the legacy estimate. Every figure is an integer or a Fraction, never a float.

Usage: vramfit_reader.py COEFFICIENTS.json < queries.json > prices.json
Each query: {"vae", "op", "tile", "width", "height", "batch", "dtype",
"loaded_dtype", "conv_backend", "allocator", "os"} with the allocator and
OS already decided. Each answer: {"bytes", "rule", "weight_growth_bytes"}.
"""

import json
import sys
from fractions import Fraction

MIB = 1 << 20
ELEM = {"fp16": 2, "bf16": 2, "fp32": 4}


def slope_centi(text):
    whole, _, frac = text.partition(".")
    return int(whole) * 100 + int((frac + "00")[:2])


def line_price(line, pixels):
    centi = slope_centi(line["slope"])
    return -(-(centi * pixels) // 100) + line["base_mib"] * MIB


def family_of(coef, name):
    wanted = name.lower()
    for family, entry in sorted(coef["registry"].items()):
        if family.lower() == wanted or any(m.lower() == wanted for m in entry["models"]):
            return family
    raise KeyError("unknown vae or model %r" % name)


def os_specific(coef, backend, allocator):
    return any(
        o["conv_backend"] == backend and (o["allocator"] is None or o["allocator"] == allocator)
        for o in coef["os_specific"]
    )


def legacy_price(coef, family, op, tile, backend, dtype, pixels, batch):
    legacy = coef.get("legacy")
    if legacy is None or dtype not in legacy["elem_bytes"]:
        return None
    elem = legacy["elem_bytes"][dtype]
    ks = legacy["k"].get(backend) or legacy["k"][legacy["fallback_backend"]]
    k = ks[op]
    if tile == 0:
        work = pixels * elem * k
    else:
        raw = Fraction(tile * tile * batch * elem * k) * Fraction(legacy["tile_factor"])
        work = -(-raw.numerator // raw.denominator)
    extra = legacy["fp32_extra_mib"].get(family, 0) if dtype == "fp32" else 0
    return work + extra * MIB


def price(coef, q):
    family = family_of(coef, q["vae"])
    run, loaded = q["dtype"], q.get("loaded_dtype") or q["dtype"]
    key_os = q["os"] if os_specific(coef, q["conv_backend"], q["allocator"]) else "any"
    # A tile as large as both sides of the image does nothing: untiled.
    tile = 0 if q["tile"] >= q["width"] and q["tile"] >= q["height"] else q["tile"]
    key = (family, q["op"], tile, q["conv_backend"], q["allocator"], key_os, run)
    pixels = q["width"] * q["height"] * q["batch"]
    growth = 0
    if ELEM[run] > ELEM[loaded]:
        params = coef["registry"][family]["params"]
        if params is None:
            raise KeyError("no weight count for %s" % family)
        growth = params * (ELEM[run] - ELEM[loaded])
    lines = {
        (l["vae"], l["op"], l["tile"], l["conv_backend"], l["allocator"], l["os"], l["dtype"]): l
        for l in coef["lines"]
    }
    # The key's own line; for an OS-specific key, the same platform's line
    # measured without an OS too, whichever is higher (a lower bound for
    # every OS; the own line wins a tie).
    measured = []
    if key in lines:
        line = lines[key]
        measured.append((line_price(line, pixels), "carried-line" if line["kind"] == "carried" else "fitted-line"))
    any_key = key[:5] + ("any",) + key[6:]
    if key_os != "any" and any_key in lines:
        measured.append((line_price(lines[any_key], pixels), "any-os-line"))
    if measured:
        best = measured[0]
        for m in measured[1:]:
            if m[0] > best[0]:
                best = m
        return {"bytes": best[0] + growth, "rule": best[1], "weight_growth_bytes": growth}
    same = [
        line_price(l, pixels)
        for k, l in lines.items()
        if (k[0], k[1], k[2], k[6]) == (family, q["op"], tile, run)
    ]
    legacy = legacy_price(coef, family, q["op"], tile, q["conv_backend"], run, pixels, q["batch"])
    if not same and legacy is None:
        raise KeyError("no line and no legacy value for %r" % (key,))
    if same and (legacy is None or max(same) + growth >= legacy):
        return {"bytes": max(same) + growth, "rule": "unmeasured-rule", "weight_growth_bytes": growth}
    return {"bytes": legacy, "rule": "legacy-floor", "weight_growth_bytes": growth}


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        coef = json.load(f)
    if coef.get("format") != "vramfit-coefficients" or coef.get("version") != 2:
        sys.exit("not a vramfit-coefficients version 2 file")
    queries = json.load(sys.stdin)
    json.dump([price(coef, q) for q in queries], sys.stdout)


if __name__ == "__main__":
    main()
