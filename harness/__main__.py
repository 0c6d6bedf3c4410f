"""`python3 -m harness`: see the package's docstring and the vramfit README."""

import argparse
import sys

from . import plan as plan_mod
from . import preflight
from .run import run_plan


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["trace"]:
        from . import trace

        return trace.main(argv[1:])
    if argv[:1] == ["observe"]:
        from . import observe

        return observe.main(argv[1:])
    if argv[:1] == ["gaps"]:
        from . import gaps

        return gaps.main(argv[1:])
    p = argparse.ArgumentParser(prog="python3 -m harness", description="Measure VAE memory into vramfit's CSV.")
    p.add_argument("--plan", required=True, help="the plan (TOML)")
    p.add_argument("--out", help="the CSV to append to (required unless --dry-run)")
    p.add_argument("--device", choices=["cuda", "fake"], default="cuda",
                   help="cuda: the GPU (torch, diffusers); fake: a simulated device, for tests")
    p.add_argument("--oom-log", help="where out-of-memory points go (default: OUT.oom.jsonl)")
    p.add_argument("--dry-run", action="store_true", help="print the grid and its point count, run nothing")
    p.add_argument("--timeout", type=int, default=600, help="seconds one run may take")
    p.add_argument("--check-meta", action="store_true",
                   help="run every point on PyTorch's meta device (needs torch and diffusers, no GPU): "
                        "each op must run and return its shape; writes nothing")
    p.add_argument("-q", "--quiet", action="store_true", help="with --check-meta: only the verdict")
    a = p.parse_args(argv)
    try:
        plan = plan_mod.load(a.plan)
    except plan_mod.PlanError as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    if a.check_meta:
        from . import metacheck

        return metacheck.main(plan, a.plan, a.quiet)
    if a.dry_run:
        for point in plan.points:
            print(point.key())
        families = sorted({pt.family for pt in plan.points})
        print("%d child processes, about %.0f s on one GPU (%.1f s a child, as the H200's averaged; %d s more per "
              "further image measurement in a child, %d s per video one)"
              % (len(plan.groups), plan.seconds(), plan_mod.CHILD_SECONDS, plan_mod.MORE_IMAGE_SECONDS,
                 plan_mod.MORE_VIDEO_SECONDS))
        print("%d runs (%d points × %d runs), families: %s"
              % (len(plan.points), len(plan.points) // plan.runs, plan.runs, ", ".join(families)))
        return 0
    if not a.out:
        print("error: --out is required (or --dry-run)", file=sys.stderr)
        return 2
    oom_log = a.oom_log or a.out + ".oom.jsonl"
    if a.device == "cuda":
        problems = preflight.check({pt.allocator for pt in plan.points})
        if problems:
            print("error: %s" % "; ".join(problems), file=sys.stderr)
            return 2
    try:
        written, oom, skipped = run_plan(plan, a.out, oom_log, a.device, timeout=a.timeout)
    except (ValueError, RuntimeError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    print("%s: %d written, %d out of memory (%s), %d already done" % (a.out, written, oom, oom_log, skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
