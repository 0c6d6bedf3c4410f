"""Drop-ins with the hosts' own calling conventions (docs/hosts.md).

:mod:`vramfit.hosts.invokeai` has InvokeAI's ``estimate_vae_working_memory_*``
signatures, :mod:`vramfit.hosts.comfyui` ComfyUI's ``memory_used_decode`` /
``memory_used_encode``. Each translates the host's arguments (a latent or
pixel tensor's ``.shape``, the VAE's parameters' dtype, the host's tile
sentinels) into one :func:`vramfit.reserve` query and returns its bytes, so
a host swaps its estimator without rewriting the call site.

Standard library only: tensors and VAEs are duck-typed (``.shape``,
``.dim()``, ``parameters()``, ``.dtype``, ``element_size()``,
``tile_sample_min_size``, ``config``), and torch is consulted only to tell a
ROCm build from a CUDA one when no ``backend`` is given.
"""

import importlib
import sys

from .. import reserve as _reserve

__all__ = ["platform_of", "dtype_of", "query_of"]


def _torch():
    """The torch module the host runs, if it can be imported (None otherwise)."""
    found = sys.modules.get("torch")
    if found is not None:
        return found
    try:
        return importlib.import_module("torch")
    except ImportError:
        return None


def platform_of(device=None):
    """The conv backend a host's VAE runs on, as the host sees it: the device's type where one is given
    (``mps``, ``xpu``, ``cpu``); for CUDA devices (and none given) ``miopen`` when torch is a ROCm build
    (``torch.version.hip`` set), else ``cudnn``."""
    kind = getattr(device, "type", device)
    if kind in ("mps", "xpu", "cpu"):
        return kind
    torch = _torch()
    hip = getattr(getattr(torch, "version", None), "hip", None) if torch is not None else None
    return "miopen" if hip else "cudnn"


def dtype_of(vae):
    """The dtype a VAE's weights are in: its first parameter's ``dtype`` (a ``torch.dtype`` or its name);
    without one, its element size (4 bytes: ``fp32``; 2: ``fp16``, which cannot tell ``bf16`` apart)."""
    param = next(iter(vae.parameters()))
    dtype = getattr(param, "dtype", None)
    if dtype is not None:
        return dtype
    size = param.element_size()
    if size == 4:
        return "fp32"
    if size == 2:
        return "fp16"
    raise ValueError("the VAE's parameters have %d-byte elements: give dtype= (fp16, bf16 or fp32)" % size)


def shape_of(tensor):
    """A tensor's shape as a tuple of ints (a ``torch.Size``, a list or a tuple)."""
    shape = getattr(tensor, "shape", tensor)
    return tuple(int(d) for d in shape)


def query_of(model, op, width, height, *, backend=None, device=None, allocator="auto", os="auto", env=None,
             coefficients=None, **query):
    """:func:`vramfit.reserve` for a host's call: the platform from the environment unless given."""
    return _reserve(model, op, width, height, backend=backend or platform_of(device), allocator=allocator, os=os,
                    env=env, coefficients=coefficients, **query)
