"""`python3 -m harness gaps CROSSVAL.json [--out PLAN.toml]`: the plan that
measures what leave-one-size-out `vramfit crossval` asks for.

Each under-reserved held-out point of `vramfit crossval --format json`
says where its size sat among the sizes its refit kept (`position`,
docs/evidence.md). A miss `between` two kept sizes lies above the line
through its neighbours: sizes inside that stretch tighten the line there.
A miss `past` the largest kept size was an extrapolation: sizes beyond
it make it an interior point. A miss `below` the smallest asks for
smaller sizes.
This turns each miss into square sizes (the line sees pixels only; sides
are multiples of 64, or of 8 in a narrow stretch) plus the missed size itself, so the GPU's own curve
shows whole, and writes one `[[grid]]` per family, op, dtype, allocator
and tile, run in one process (the first op fresh, the rest warm).

What the harness cannot measure is listed in the plan's header instead of
guessed: a video line (its size is a working set of tiles and frames), a
backend other than cuDNN (the harness runs CUDA), a family with no config.
"""

import argparse
import json
import math
import os
import sys

from . import configs
from . import plan as plan_mod

#: A proposed side is rounded to this (every VAE here divides 64).
SIDE_STEP = 64


def _side(pixels):
    """The square side, a multiple of 8, closest to `pixels`."""
    return max(8, int(round(math.sqrt(pixels) / 8.0)) * 8)


def _step(side):
    return max(SIDE_STEP, int(round(side / float(SIDE_STEP))) * SIDE_STEP)


def sides_for(position, held_pixels):
    """The square sides a miss at `held_pixels` asks for, sorted: the held
    size itself and the kept sizes either side of it included, so one GPU's
    own curve spans the stretch."""
    held = _side(held_pixels)
    kind = position.get("kind")
    wanted = set()
    if kind == "between":
        lo, hi = position["below"], position["above"]
        a, b = math.sqrt(lo), math.sqrt(hi)
        for f in (0.25, 0.5, 0.75):
            # A multiple of 64 where one fits inside, else of 8 (a narrow stretch).
            for s in (_step(a + f * (b - a)), _side((a + f * (b - a)) ** 2)):
                if lo < s * s < hi:
                    wanted.add(s)
                    break
        wanted.update((_side(lo), _side(hi)))
    elif kind == "past":
        wanted.update(_step(held * f) for f in (1.125, 1.25))
        wanted.add(_side(position["largest"]))
    elif kind == "below":
        wanted.update(_step(held * f) for f in (0.75, 0.875) if held * f >= SIDE_STEP)
        wanted.add(_side(position["smallest"]))
    wanted.add(held)
    return sorted(wanted)


def _family_for(vae):
    """The harness config that measures line family `vae`: the one named
    so, else the first by name whose `vae` is it (sd: sd15)."""
    names = configs.families()
    if vae in names:
        return vae
    for name in names:
        doc = configs.load(name)
        if doc.get("vae") == vae and doc.get("confirmed", True):
            return name
    return None


def plan_from(crossval):
    """(plan text, what was left out) from crossval's JSON."""
    if crossval.get("by") not in ("size", "source"):
        raise ValueError("gaps reads `vramfit crossval --by size` (or --by source) JSON, not --by %s"
                         % crossval.get("by"))
    grids = {}
    left = []
    for line in crossval.get("lines", []):
        key = "%s/%s/%s/%s/%s/%s/%s" % (line["vae"], line["op"], _tile_text(line), line["conv_backend"],
                                        line["allocator"], line["os"], line["dtype"])
        for p in line.get("points", []):
            if p.get("covered", True):
                continue
            position = p.get("position")
            why = _unmeasurable(line, position)
            if why is None and position is None:
                why = "no position in the JSON (an older vramfit)"
            if why:
                left.append("%s (%s): %s" % (p["id"], key, why))
                continue
            family = _family_for(line["vae"])
            if family is None:
                left.append("%s (%s): no harness config for family %s" % (p["id"], key, line["vae"]))
                continue
            g = (family, line["op"], line["dtype"], line["allocator"], line["tile"])
            sizes, reasons = grids.setdefault(g, (set(), []))
            sides = sides_for(position, p["pixels"])
            sizes.update(sides)
            reasons.append("%s, %s under, %s: %s" % (p["id"], _pct(p), _where(position),
                                                    ", ".join("%d²" % s for s in sides)))
    return _render(grids, left), left


def _tile_text(line):
    """The key's tile as vramfit prints it (`512`, `16f`, `512x16f`)."""
    tile, frames = line["tile"], line.get("temporal_tile")
    if not frames:
        return str(tile)
    return "%sx%df" % (tile, frames) if tile else "%df" % frames


def _unmeasurable(line, position):
    if line.get("temporal_tile") or (position or {}).get("unit") == "working-set":
        return "a video line: its size is a working set; choose frames and tiles by hand (docs/harness.md)"
    if line["conv_backend"] != "cudnn":
        return "measured on %s; the harness runs CUDA (cuDNN) only" % line["conv_backend"]
    return None


def _pct(p):
    return "%.1f %%" % (100.0 * p["under_bytes"] / max(1, p["demand_bytes"]))


def _where(position):
    kind = position["kind"]
    if kind == "between":
        return "between %d and %d px" % (position["below"], position["above"])
    if kind == "past":
        return "past %d px" % position["largest"]
    if kind == "below":
        return "below %d px" % position["smallest"]
    return "at %d px" % position.get("size", 0)


def _render(grids, left):
    out = ["# Made by `python3 -m harness gaps` from `vramfit crossval --format json`:",
           "# the sizes each under-reserved held-out point asks for (docs/harness.md)."]
    for why in left:
        out.append("# Not measurable here: %s" % why)
    out.append("runs = 1")
    for (family, op, dtype, allocator, tile), (sizes, reasons) in sorted(grids.items()):
        out.append("")
        for r in reasons:
            out.append("# %s" % r)
        out.append("[[grid]]")
        out.append('families = ["%s"]' % family)
        out.append('ops = ["%s"]' % (op if tile == 0 else "tiled-" + op))
        if tile:
            out.append("tiles = [%d]" % tile)
        out.append('dtypes = ["%s"]' % dtype)
        out.append("sizes = [%s]" % ", ".join('"%dx%d"' % (s, s) for s in sorted(sizes)))
        out.append('allocators = ["%s"]' % allocator)
        out.append('process = "grid"')
    return "\n".join(out) + "\n"


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m harness gaps",
                                description="A plan measuring what crossval's misses ask for.")
    p.add_argument("crossval", help="`vramfit crossval --format json` output (- for standard input)")
    p.add_argument("--out", help="where to write the plan (default: standard output)")
    a = p.parse_args(argv)
    try:
        text = sys.stdin.read() if a.crossval == "-" else open(a.crossval, encoding="utf-8").read()
        doc = json.loads(text)
        plan_text, left = plan_from(doc)
        if "[[grid]]" in plan_text:
            plan_mod.parse(plan_text, a.out or "<gaps>")  # what is written must load
    except (OSError, ValueError, KeyError, plan_mod.PlanError) as e:
        print("error: %s: %s" % (a.crossval, e), file=sys.stderr)
        return 2
    n = plan_text.count("[[grid]]")
    if n == 0:
        print("no miss the harness can measure (%d left out): no plan written" % len(left), file=sys.stderr)
        for why in left:
            print("  %s" % why, file=sys.stderr)
        return 0
    if a.out:
        tmp = a.out + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(plan_text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, a.out)
    else:
        sys.stdout.write(plan_text)
    print("%d grid(s) for the misses; %d miss(es) not measurable here" % (n, len(left)), file=sys.stderr)
    return 0
