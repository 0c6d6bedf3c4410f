#!/usr/bin/env python3
"""A second, independent implementation of the fit of docs/DESIGN.md, "The exact fit".

Reads measurements/vae.json and fits/policy.toml with the standard library
only, groups the included points into lines, and finds each envelope by
brute force over every candidate line the LP optimum can be (through two
points, through the origin and one point, or flat through one point),
keeping the feasible one with the least total over-reservation (ties: the
steeper one). Exact Fractions throughout; no hull code is shared with the
Rust implementation. A video family's point sits at its working set (one
spatial tile x the frames one step decodes x batch) with its demand less
the clip copies (docs/DESIGN.md, "Video"), restated here from the policy.
A fresh-process point is fitted on its own demand: its demand less its
platform's declared first use, never below its allocated or reserved delta
(docs/fit.md, "Demand per context"), the term looked up here by its own
reading of the rule (own platform, else the largest of another OS, else the
largest of another allocator of the backend).
Prints {key: [slope, base_mib]} as JSON.

Usage: vramfit_refit.py ROOT
"""

import json
import sys
import tomllib
from fractions import Fraction
from pathlib import Path

MIB = 1 << 20


def ceil(fr):
    return -((-fr.numerator) // fr.denominator)


def number(v):
    return Fraction(str(v))


def optimum(points):
    xs = [x for x, _ in points]
    candidates = []
    for i, (x1, y1) in enumerate(points):
        candidates.append((Fraction(y1, x1), Fraction(0)))
        candidates.append((Fraction(0), Fraction(y1)))
        for x2, y2 in points[i + 1:]:
            if x1 != x2:
                a = Fraction(y2 - y1, x2 - x1)
                candidates.append((a, y1 - a * x1))
    best = None
    for a, b in candidates:
        if a < 0 or b < 0 or any(a * x + b < y for x, y in points):
            continue
        total = a * sum(xs) + b * len(points) - sum(y for _, y in points)
        if best is None or total < best[0] or (total == best[0] and a > best[1]):
            best = (total, a, b)
    return best[1], best[2]


ELEM = {"fp16": 2, "bf16": 2, "fp32": 4}


def video_point(p, facts, copies):
    """(key tile segment, x, y) of a video point."""
    tt = p.get("temporal_tile") or 0
    frames = p.get("frames", 1)
    if facts["walk"] == "causal":
        tt, span = 0, facts["frames"]
    else:
        span = tt if tt else frames
    span = max(min(span, frames), 1)
    t = p["tile"]
    w, h = (p["width"], p["height"]) if t == 0 else (min(t, p["width"]), min(t, p["height"]))
    x = w * h * span * p["batch"]
    clip = ceil(copies * 3 * ELEM[p["dtype"]] * p["width"] * p["height"] * frames * p["batch"])
    return "%df" % tt, x, max(p["demand_bytes"] - clip, 0)


def first_use_mib(p, terms):
    """The first-use MiB a fresh point's answer adds (0 for any other point)."""
    if p.get("context") != "fresh":
        return 0
    tiers = []
    for t in terms:
        if t["conv_backend"] != p["conv_backend"]:
            continue
        if t["allocator"] != p["allocator"]:
            tiers.append((2, -t["mib"]))
        elif t["os"] == "any" or (t["os"] == p["os"] and p["os"] != "any"):
            tiers.append((0, -t["mib"]))
        else:
            tiers.append((1, -t["mib"]))
    return -min(tiers)[1] if tiers else 0


def own_demand(p, terms):
    term = first_use_mib(p, terms) * MIB
    if term == 0:
        return p["demand_bytes"]
    return max(p["demand_bytes"] - term, p.get("allocated_bytes") or 0, p.get("reserved_bytes") or 0, 0)


def main():
    root = Path(sys.argv[1])
    points = json.loads((root / "measurements/vae.json").read_text())["points"]
    policy = tomllib.loads((root / "fits/policy.toml").read_text())
    margin = number(policy.get("margin", "0.05"))
    min_sizes = policy.get("min_sizes", 3)
    excluded = {e["id"] for e in policy.get("exclude", [])}
    videos = {f: e["video"] for f, e in policy.get("vae", {}).items() if "video" in e}
    terms = policy.get("first_use", [])

    def carried_tiles(c):
        v = videos.get(c["vae"])
        if v is None:
            return c.get("tile", 0)
        default = v["frames"] if v["walk"] == "tiles" else 0
        return "%df" % (0 if v["walk"] == "causal" else c.get("temporal_tile", default))

    carried = {
        (c["vae"], c["op"], carried_tiles(c), c["conv_backend"], c["allocator"], c["os"], c["dtype"])
        for c in policy.get("carry", [])
    }
    specific = [(o["conv_backend"], o.get("allocator", "*")) for o in policy.get("os_specific", [])]
    copies = {op: number(v) for op, v in policy.get("video", {}).get("clip_copies", {}).items()}
    lines = {}
    for p in points:
        if p["id"] in excluded:
            continue
        per_os = any(b == p["conv_backend"] and a in ("*", p["allocator"]) for b, a in specific)
        os_ = p["os"] if per_os else "any"
        p = dict(p, demand_bytes=own_demand(p, terms))
        if p["vae"] in videos:
            tiles, x, y = video_point(p, videos[p["vae"]], copies.get(p["op"], Fraction(0)))
        else:
            tiles, x, y = p["tile"], p["pixels"], p["demand_bytes"]
        key = (p["vae"], p["op"], tiles, p["conv_backend"], p["allocator"], os_, p["dtype"])
        lines.setdefault(key, []).append((x, y))
    out = {}
    for key, pts in sorted(lines.items()):
        if key in carried or len({x for x, _ in pts}) < min_sizes:
            continue
        a, b = optimum(pts)
        slope_centi = ceil(a * (1 + margin) * 100)
        out["/".join(str(k) for k in key)] = ["%d.%02d" % divmod(slope_centi, 100), ceil(b * (1 + margin) / MIB)]
    json.dump(out, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
