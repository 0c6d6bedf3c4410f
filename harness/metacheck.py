"""`python3 -m harness --plan PLAN --check-meta`: every point of a plan run
on PyTorch's meta device before a GPU's minutes are spent on it.

Each point's VAE is built as the GPU child builds it (`measure.build`, the
same tiling through `measure.configure_tiling`), its op runs on tensors
without data and its output shape is checked. A class's walk that fails at
some size (LTX-2's tiled decode on a canvas whose last tile is one latent
row: reflect padding wider than the tile) fails here in seconds; on a GPU
it would end its child and lose the rest of the group. Nothing is measured
and nothing is written. Needs torch and diffusers (CI's torch job has
them).
"""

import sys

from . import configs


def check_point(vae, doc, point):
    """None when `point` runs and returns the shape it should; else why not."""
    from . import measure

    try:
        measure.configure_tiling(vae, doc, point.tile, point.host_tiles)
        x = measure.make_input(doc, point.op, point.dtype, point.width, point.height, point.batch, "meta",
                               frames=point.frames)
        out = measure.run_op(vae, point.op, x)
    except Exception as e:  # any failure of the class's own code is the finding
        return "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
    want = measure.expected_shape(doc, point.op, point.width, point.height, point.batch, frames=point.frames)
    if list(out.shape) != want:
        return "output %s, expected %s" % (list(out.shape), want)
    return None


def check_plan(plan, say=print):
    """Runs every point of `plan` on the meta device, group by group in the
    order a child runs them, one VAE per family and dtype within a group
    (as the child keeps one, its tiling switched point by point); returns
    the failures as `key: why`."""
    from . import measure

    failures = []
    for group in plan.groups:
        vaes = {}
        for point in group:
            doc = configs.load(point.family)
            vae = vaes.get((point.family, point.dtype))
            if vae is None:
                vaes.clear()
                vae = vaes.setdefault((point.family, point.dtype), measure.build(doc, point.dtype, "meta", 0))
            why = check_point(vae, doc, point)
            if why:
                failures.append("%s: %s" % (point.key(), why))
                say("fail  %s: %s" % (point.key(), why))
            else:
                say("ok    %s" % point.key())
    return failures


def main(plan, name, quiet=False):
    from . import preflight

    missing = preflight.missing_modules(("torch", "diffusers"))
    if missing:
        print("error: %s" % preflight.install_hint(missing, needs="--check-meta"), file=sys.stderr)
        return 2
    import diffusers

    diffusers.utils.logging.set_verbosity_error()
    say = (lambda _line: None) if quiet else print
    failures = check_plan(plan, say)
    n = sum(len(g) for g in plan.groups)
    if failures:
        print("%s: %d of %d points fail on the meta device:" % (name, len(failures), n), file=sys.stderr)
        for f in failures:
            print("  %s" % f, file=sys.stderr)
        return 1
    print("%s: all %d points run on the meta device and return the shapes they should" % (name, n))
    return 0
