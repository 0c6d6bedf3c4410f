"""What a real run needs, checked once in the parent before the first
child: the modules, a CUDA (or ROCm) device, and an allocator setting the
installed torch understands. One message names everything missing, so a
user fixes it in one go instead of reading a child's traceback."""

import importlib.util

#: The diffusers version CI's smoke run tested (`harness/pyproject.toml` pins it).
DIFFUSERS_TESTED = "0.42.1"

#: The torch version the shipped traces are made with and CI installs
#: (`.ci/run` reads both pins from here): another version is another input
#: of the traces (harness/inputs.py).
TORCH_TRACED = "2.11.0"


def missing_modules(names):
    """The names among `names` that cannot be imported here."""
    return [n for n in names if importlib.util.find_spec(n) is None]


def install_hint(missing, needs="the real device"):
    parts = []
    if "torch" in missing:
        parts.append("torch (install the build for your GPU first: https://pytorch.org/get-started/)")
    if "diffusers" in missing:
        parts.append("diffusers (pip install diffusers==%s, or pip install ./harness)" % DIFFUSERS_TESTED)
    if needs != "the real device":
        return "%s needs %s (no GPU: any build of torch, the CPU one included)" % (needs, " and ".join(parts))
    return "%s needs %s; `--device fake` runs without them" % (needs, " and ".join(parts))


def check(allocators_used):
    """Problems with running on the GPU here, as one list of sentences."""
    missing = missing_modules(("torch", "diffusers"))
    if missing:
        return [install_hint(missing)]
    import torch

    problems = []
    if not torch.cuda.is_available():
        problems.append("torch %s sees no CUDA or ROCm device (CUDA_VISIBLE_DEVICES=%s)"
                        % (torch.__version__, _visible()))
    if "cudaMallocAsync" in allocators_used and torch.version.hip:
        problems.append("the plan asks for cudaMallocAsync, which a ROCm build of torch does not have")
    return problems


def _visible():
    import os

    return os.environ.get("CUDA_VISIBLE_DEVICES", "unset")
