"""The real path on the CPU: `python3 -m harness.smoke` builds every shipped
family's VAE from its configuration with random weights through the same
functions a GPU run uses (`measure.build`, `make_input`, `run_op`), decodes
and encodes a small image untiled and tiled, and checks each output's shape.
It measures nothing and writes no rows: a CPU has no device memory to
read, and vramfit's store is for measurements.

Each config is also loaded against its class's `__init__`: a key the class
does not take, or a required one the config lacks, fails here rather than
on a GPU whose minutes are counted.
"""

import argparse
import inspect
import sys
import time

from . import configs, preflight

#: Image side and tile side of the check, pixels: large enough that a tile
#: is smaller than the image on every axis, small enough to run in seconds.
SIDE = 128
TILE = 64


def config_keys_problems(doc, cls):
    """Keys of the config `cls` does not take, and required ones it lacks."""
    config = dict(doc["config"])
    config.pop("_class_name")
    params = inspect.signature(cls.__init__).parameters
    taken = {n for n, p in params.items() if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    required = {n for n in taken if params[n].default is inspect.Parameter.empty}
    problems = ["unknown key '%s'" % k for k in sorted(set(config) - taken)]
    problems += ["missing key '%s'" % k for k in sorted(required - set(config))]
    return problems


def check_family(family, dtype="fp32", say=print):
    """Runs every op of one family on the CPU; returns a list of failures."""
    from . import measure

    import diffusers

    doc = configs.load(family)
    cls = getattr(diffusers, doc["config"]["_class_name"], None)
    if cls is None:
        return ["%s: diffusers %s has no class %s" % (family, diffusers.__version__, doc["config"]["_class_name"])]
    failures = ["%s: config: %s" % (family, p) for p in config_keys_problems(doc, cls)]
    if failures:
        return failures
    if measure.is_video_model(doc):
        return check_video_family(doc, say)
    # A VAE that compresses more than 8x (a DC-AE's 32x) is checked on an
    # image and a tile of as many latent pixels as the 8x ones.
    scale = max(1, measure.spatial_compression(doc) // 8)
    side, tile_side = SIDE * scale, TILE * scale
    # The ops the class cannot run tiled (the document's `untiled`) are checked untiled only, as they are traced.
    untiled = configs.untiled_ops(doc)
    for tile in (0, tile_side):
        ops = [op for op in ("decode", "encode") if not (tile and op in untiled)]
        if not ops:
            say("skip  %-11s tiled: the class runs neither op tiled (%s)" % (family, doc["untiled"]["why"][:60]))
            continue
        vae = measure.build(doc, dtype, "cpu", tile)
        if tile and not getattr(vae, "use_tiling", False):
            failures.append("%s: enable_tiling left use_tiling off" % family)
        for op in ops:
            started = time.monotonic()
            x = measure.make_input(doc, op, dtype, side, side, 1, "cpu")
            try:
                out = measure.run_op(vae, op, x)
            except Exception as e:  # any failure of a diffusers call is the finding
                failures.append("%s %s tile %d: %s: %s" % (family, op, tile, type(e).__name__, e))
                continue
            want = measure.expected_shape(doc, op, side, side, 1)
            if list(out.shape) != want:
                failures.append("%s %s tile %d: output %s, expected %s" % (family, op, tile, list(out.shape), want))
                continue
            say("ok    %-11s %-6s tile %-3d %s  %.1f s" % (family, op, tile, list(out.shape), time.monotonic() - started))
    return failures


def check_video_family(doc, say=print):
    """A video family on the meta device: both ops through the real
    forward at the smallest traced clip (a CPU run of a 3-D VAE with random
    weights takes minutes; the trace takes a second and checks the shapes)."""
    from . import trace

    failures = []
    frames = trace.clip_frames(doc, (9,))[0]
    side = 4 * measure_spatial(doc)
    for op in ("decode", "encode"):
        started = time.monotonic()
        try:
            traced, _, _ = trace.trace_one(doc, op, "fp32", 0, side, side, frames)
        except Exception as e:  # any failure of a diffusers call is the finding
            failures.append("%s %s (meta): %s: %s" % (doc["family"], op, type(e).__name__, e))
            continue
        say("ok    %-11s %-6s meta %dx%d×%d  %d bytes traced  %.1f s"
            % (doc["family"], op, side, side, frames, traced, time.monotonic() - started))
    return failures


def check_child_group(say=print):
    """A GPU child's whole path on the CPU: one group (an image decode, the
    same tiled, an encode, then a video family's clip untiled and with its
    host's tiles) through `child.main`, with torch's CUDA memory counters
    stood in for (they read nothing on a CPU) and the device moved to the
    CPU. Checks that every point answers, in order, with the tiles it ran
    and how many ops ran before it; the figures mean nothing."""
    import io
    import json

    import torch

    from . import child, measure

    names = ("synchronize", "empty_cache", "reset_peak_memory_stats", "memory_reserved", "memory_allocated",
             "max_memory_reserved", "max_memory_allocated", "mem_get_info")
    saved_cuda = {n: getattr(torch.cuda, n) for n in names}
    saved = {n: getattr(measure, n) for n in ("build", "make_input", "facts")}
    stand_ins = {"memory_reserved": lambda: 0, "memory_allocated": lambda: 0, "max_memory_reserved": lambda: 1,
                 "max_memory_allocated": lambda: 1, "mem_get_info": lambda: (1, 2)}
    for n in names:
        setattr(torch.cuda, n, stand_ins.get(n, lambda *a: None))
    measure.build = lambda doc, dtype, device, tile=0: saved["build"](doc, "fp32", "cpu", tile)
    measure.make_input = lambda doc, op, dtype, w, h, b, device, frames=1: saved["make_input"](
        doc, op, "fp32", w, h, b, "cpu", frames)
    measure.facts = lambda: {"device": "cpu stand-in", "conv_backend": "cudnn"}
    cases = [("sd15", "decode", 0, False, 1), ("sd15", "decode", TILE, False, 1), ("sd15", "encode", 0, False, 1),
             ("wan21", "decode", 0, False, 5), ("wan21", "decode", 0, True, 5)]
    points = [dict(family=f, op=op, tile=t, dtype="fp32", width=SIDE, height=SIDE, batch=1, allocator="native",
                   run=1, frames=n, host_tiles=host, context="fresh", key="p%d" % i)
              for i, (f, op, t, host, n) in enumerate(cases)]
    out, stdin, stdout = io.StringIO(), sys.stdin, sys.stdout
    try:
        sys.stdin, sys.stdout = io.StringIO(json.dumps({"device": "cuda", "points": points})), out
        child.main()
    except Exception as e:  # any failure on the child's path is the finding
        return ["the child's group path: %s: %s" % (type(e).__name__, e)]
    finally:
        sys.stdin, sys.stdout = stdin, stdout
        for n, f in saved_cuda.items():
            setattr(torch.cuda, n, f)
        for n, f in saved.items():
            setattr(measure, n, f)
    answers = [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]
    failures = []
    if [a.get("key") for a in answers] != [p["key"] for p in points]:
        failures.append("the child's group path answered %s" % [a.get("key") for a in answers])
    elif [a["earlier"] for a in answers] != list(range(len(points))):
        failures.append("the child's group path counted earlier ops %s" % [a["earlier"] for a in answers])
    elif [a["tile"] for a in answers][:2] != [0, TILE] or answers[4]["tile"] <= 0:
        failures.append("the child's group path ran tiles %s" % [a["tile"] for a in answers])
    else:
        say("ok    the child's group path: %d points in one process, tiles %s"
            % (len(answers), [a["tile"] for a in answers]))
    return failures


def check_meta_check(say=print):
    """The meta check catches a walk that fails: LTX-2's class tiling at
    832x480 (its last tile one latent row) must fail, at 1024x576 pass."""
    from . import metacheck
    from . import plan as plan_mod

    text = ('runs = 1\n[[grid]]\nfamilies = ["ltx2"]\nops = ["host-tiled-decode"]\ndtypes = ["bf16"]\n'
            'sizes = ["832x480", "1024x576"]\nframes = [9]\nprocess = "grid"\n')
    plan = plan_mod.parse(text, "<meta check>")
    failed = metacheck.check_plan(plan, say=lambda _line: None)
    keys = [f.split(":")[0] for f in failed]
    if keys != ["ltx2-decode-thost-bf16-832x480x9-b1-native-r1"]:
        return ["the meta check: expected only LTX-2's 832x480 tiled decode to fail, got %s" % (failed or "none")]
    say("ok    the meta check fails LTX-2's tiled 832x480 and passes 1024x576")
    return []


def measure_spatial(doc):
    from . import measure

    return measure.spatial_compression(doc)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m harness.smoke", description=__doc__.split("\n\n")[0])
    p.add_argument("families", nargs="*", help="families to check (default: every shipped config)")
    a = p.parse_args(argv)
    missing = preflight.missing_modules(("torch", "diffusers"))
    if missing:
        print("error: %s" % preflight.install_hint(missing), file=sys.stderr)
        return 2
    import diffusers
    import torch

    diffusers.utils.logging.set_verbosity_error()
    torch.manual_seed(0)
    families = a.families or configs.families()
    from . import trace

    failures = ["the trace's counter: %s" % p for p in trace.selftest()]
    for family in families:
        try:
            failures += check_family(family)
        except ValueError as e:
            print("error: %s" % e, file=sys.stderr)
            return 2
    if not a.families:
        failures += check_child_group()
        failures += check_meta_check()
    for f in failures:
        print("FAIL  %s" % f)
    print("%d families, %d failures" % (len(families), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
