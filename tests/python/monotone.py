#!/usr/bin/env python3
"""The monotone property on the Python package: random requests over every
registered family, platform and dtype, each grown in one input (width,
height, batch, frames, spatial tile, temporal tile); no price may fall.

Usage: monotone.py COEFFICIENTS_JSON SEED CASES [own]. With `own`, each
request takes the price its own rules alone give (the answer's
`lifted.own_bytes`: no monotone composition): the mistake the property
must catch. Prints one JSON object:
{"compared": N, "inversions": [the first few, each naming both requests]}.
"""

import json
import random
import sys

import vramfit_vae as vramfit

path, seed, cases = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
own_only = sys.argv[4:] == ["own"]
c = vramfit.load(path)
rng = random.Random(seed)
names = sorted(c.registry)
lines = sorted(c.lines, key=lambda k: k.sort_key())
TILES = [8, 248, 256, 264, 448, 504, 512, 520, 576, 760, 768, 1016, 1024, 2048]


def side():
    r = rng.random()
    if r < 0.55:
        return rng.randrange(8, 4096)
    if r < 0.75:
        return rng.randrange(1, 64)
    if r < 0.95:
        return rng.randrange(4096, 70000)
    return rng.randrange(70000, 1 << 32)


def request():
    family = rng.choice(names)
    q = {"op": rng.choice(["decode", "encode"]), "dtype": rng.choice(["fp16", "bf16", "fp32"]),
         "backend": rng.choice(["cudnn", "miopen", "mps"]),
         "allocator": rng.choice(["native", "cudaMallocAsync", "expandable_segments"]),
         "os": rng.choice(["linux", "windows", "macos"])}
    if lines and rng.random() < 0.5:
        k = rng.choice(lines)
        family = k.vae
        q.update(op=k.op, dtype=k.dtype, backend=k.conv_backend, allocator=k.allocator)
        if k.os != "any":
            q["os"] = k.os
    video = c.registry[family].get("video") is not None
    w, h = side(), side()
    r = rng.random()
    tile = (0 if r < 0.15 else rng.choice(TILES) if r < 0.45 else rng.randrange(1, 1024) * 8 if r < 0.75
            else max(8, (max(w, h) - 1) // 8 * 8) if r < 0.95 else rng.randrange(1, (1 << 32) // 8) * 8)
    tile = min(tile, (1 << 32) - 8)
    q.update(model=family, width=w, height=h, batch=rng.randrange(1, 65), tile=tile)
    if video:
        q["frames"] = clip_at_least(family, q["op"], rng.randrange(1, 2001))
        r = rng.random()
        q["temporal_tile"] = (None if r < 0.2 else 0 if r < 0.4 else max(1, q["frames"] - rng.randrange(0, 5))
                              if r < 0.7 else rng.randrange(1, 2000))
    return q


def clip_at_least(family, op, frames):
    """The shortest clip of at least `frames` frames the family's VAE runs for `op`: any other count is refused
    (the registry's `clips`, `temporal` and `decodes_single_frame`), so the generator draws only these."""
    v = c.registry[family]["video"]
    step, offset, first = (v["clips"][0], v["clips"][1], 1) if v.get("clips") else (v["temporal"], 1, 0)
    if frames <= 1 and (op != "decode" or v.get("decodes_single_frame", True)):
        return 1
    start = step * first + offset
    return start if frames <= start else offset + -(-(frames - offset) // step) * step


def grown(q):
    g = dict(q)
    what = rng.choice(["width", "height", "batch", "frames", "tile", "temporal_tile"])
    step = rng.randrange(1, 17) if rng.random() < 0.6 else rng.randrange(17, 1 << 20)
    if what in ("width", "height"):
        g[what] += step
    elif what == "batch":
        g["batch"] = min(64, g["batch"] + step % 64)
    elif what == "frames" and "frames" in g:
        g["frames"] = clip_at_least(g["model"], g["op"], min(2000, g["frames"] + step % 2000))
    elif what == "tile" and g["tile"]:
        g["tile"] = 0 if rng.random() < 0.2 else min((1 << 32) - 8, g["tile"] + 8 * step)
    elif what == "temporal_tile" and g.get("temporal_tile"):
        g["temporal_tile"] = 0 if rng.random() < 0.2 else g["temporal_tile"] + step % 4000
    return g


def price(q):
    kw = dict(q)
    model, op, w, h = kw.pop("model"), kw.pop("op"), kw.pop("width"), kw.pop("height")
    try:
        if own_only:
            # The query's own rule, as the answer names it where a smaller request set the price.
            r = c.reserve(model, op, w, h, env={}, warm=True, **kw)
            return r.lifted["own_bytes"] if r.lifted else r.bytes
        return c.reserve(model, op, w, h, env={}, **kw).bytes
    except ValueError:
        return None


compared, inversions = 0, []
for _ in range(cases):
    small = request()
    large = grown(small)
    a, b = price(small), price(large)
    if a is None or b is None:
        continue
    compared += 1
    if b < a:
        inversions.append({"smaller": small, "smaller_bytes": a, "larger": large, "larger_bytes": b})
json.dump({"compared": compared, "inversion_count": len(inversions), "inversions": inversions[:5]}, sys.stdout)
