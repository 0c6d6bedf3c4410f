"""vramfit's measurement harness: VAE decode/encode memory on a real GPU,
one fresh process per point, written as vramfit's measurement CSV.

    python3 -m harness --plan PLAN.toml --out points.csv            # a GPU
    python3 -m harness --plan PLAN.toml --out points.csv --dry-run  # the grid
    python3 -m harness --device fake --plan PLAN.toml --out x.csv   # no GPU
    python3 -m harness trace --all                                  # shapes, no GPU
    python3 -m harness trace --config vae/config.json --family NAME # a new VAE
    python3 -m harness gaps crossval.json --out gaps.toml           # where crossval missed

The orchestration (this package's modules but `measure`) is standard
library only; `measure` imports torch and diffusers in the child process,
and `trace` in the process that traces (on PyTorch's meta device).
"""

__version__ = "0.1.0"
