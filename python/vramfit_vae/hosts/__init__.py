"""Drop-ins with the hosts' own calling conventions (docs/hosts.md).

:mod:`vramfit_vae.hosts.invokeai` has InvokeAI's ``estimate_vae_working_memory_*``
signatures, :mod:`vramfit_vae.hosts.comfyui` ComfyUI's ``memory_used_decode`` /
``memory_used_encode``. Each translates the host's arguments (a latent or
pixel tensor's ``.shape``, the VAE's parameters' dtype, the host's tile
sentinels) into one :func:`vramfit_vae.reserve` query and returns its bytes, so
a host swaps its estimator without rewriting the call site.

The conventions are the hosts' own, read from their code (the tables in
docs/hosts.md name file, line and commit), and a drop-in takes exactly the
arguments its host passes: anything the host's own types exclude (an
operation other than ``"decode"`` or ``"encode"``, a tensor of the wrong rank
or channel count for the family, a VAE without the attributes read, a
malformed config value, a bool where a size goes) raises ``ValueError`` or
``TypeError`` with words. It is never priced as something else.

Standard library only: tensors and VAEs are duck-typed (``.shape``,
``parameters()``, ``.dtype``, ``element_size()``, ``tile_sample_min_size``,
``config``), and torch is consulted only to tell a ROCm build from a CUDA one
when no ``backend`` is given.
"""

import functools
import importlib
import sys

from .. import reserve as _reserve

__all__ = ["platform_of", "dtype_of", "query_of", "shape_of", "operation_of"]


def boundary(function):
    """What every drop-in promises (docs/python.md, "What a call raises"): it returns, or raises ``ValueError``
    or ``TypeError``. A host's object whose own code raises something else while it is read (a tensor's
    ``shape``, a VAE's ``parameters()``, an ``__index__`` or ``__repr__``) becomes a ``TypeError`` naming the
    call, the original chained as its cause; what is not an ``Exception`` (``KeyboardInterrupt``) passes."""

    @functools.wraps(function)
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except (ValueError, TypeError):
            raise
        except Exception as e:
            raise TypeError("%s: an argument's own code raised %s: %s" % (function.__name__, type(e).__name__,
                                                                           _said(e))) from e

    return call


def _said(e):
    """An exception's words, even when its own ``__str__`` raises."""
    try:
        return str(e)[:200]
    except Exception:  # noqa: BLE001 - the words are only for the message
        return "(its message cannot be printed)"


def _torch():
    """The torch module the host runs, if it can be imported (None otherwise)."""
    found = sys.modules.get("torch")
    if found is not None:
        return found
    try:
        return importlib.import_module("torch")
    except ImportError:
        return None


@boundary
def platform_of(device=None):
    """The conv backend a host's VAE runs on, as the host sees it: the device's type where one is given
    (``mps``, ``xpu``, ``cpu``); for CUDA devices (and none given) ``miopen`` when torch is a ROCm build
    (``torch.version.hip`` set), else ``cudnn``."""
    kind = getattr(device, "type", device)
    if kind in ("mps", "xpu", "cpu"):
        return kind
    if kind is not None and kind != "cuda":
        raise ValueError("device %r: expected a torch.device (or its type) of cuda, mps, xpu or cpu" % (device,))
    torch = _torch()
    hip = getattr(getattr(torch, "version", None), "hip", None) if torch is not None else None
    return "miopen" if hip else "cudnn"


@boundary
def operation_of(operation):
    """The host's operation word, exactly ``"decode"`` or ``"encode"``: the hosts compare with ``==``, so any other
    spelling (``"Decode"``, ``" decode"``) would silently take their encode branch; here it is refused."""
    if not isinstance(operation, str):
        raise TypeError("operation: expected the string 'decode' or 'encode', got %s" % type(operation).__name__)
    if operation not in ("decode", "encode"):
        raise ValueError("operation %r: expected exactly 'decode' or 'encode'" % (operation,))
    return operation


def _whole(value, what):
    """A positive int (an ``int`` or anything with ``__index__``, such as a 0-d integer tensor), never a bool."""
    if isinstance(value, bool) or not isinstance(value, int) and not hasattr(value, "__index__"):
        raise TypeError("%s: expected an integer, got %s %r" % (what, type(value).__name__, value))
    try:
        n = int(value.__index__())
    except (TypeError, ValueError, AttributeError) as e:
        raise TypeError("%s: expected an integer, got %r (%s)" % (what, value, e)) from None
    if n <= 0:
        raise ValueError("%s: expected a positive integer, got %d" % (what, n))
    return n


@boundary
def shape_of(tensor):
    """A tensor's shape as a tuple of positive ints (a tensor, a ``torch.Size``, a list or a tuple)."""
    shape = getattr(tensor, "shape", tensor)
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise TypeError("expected a tensor or a shape, got %s" % type(tensor).__name__)
    return tuple(_whole(d, "shape %s, dimension %d" % (tuple(shape), i)) for i, d in enumerate(shape))


@boundary
def dtype_of(vae):
    """The dtype a VAE's weights are in: its first parameter's ``dtype`` (a ``torch.dtype`` or its name);
    without one, its element size (4 bytes: ``fp32``; 2: ``fp16``, which cannot tell ``bf16`` apart)."""
    parameters = getattr(vae, "parameters", None)
    if not callable(parameters):
        raise TypeError("vae: expected the host's VAE model (a torch.nn.Module with parameters()), got %s"
                        % type(vae).__name__)
    try:
        param = next(iter(parameters()))
    except StopIteration:
        raise ValueError("vae: parameters() is empty, so its dtype is unknown: give dtype= (fp16, bf16 or fp32)") \
            from None
    except TypeError as e:
        raise TypeError("vae: parameters() did not give an iterable of tensors (%s)" % e) from None
    dtype = getattr(param, "dtype", None)
    if dtype is not None:
        return dtype
    element_size = getattr(param, "element_size", None)
    if not callable(element_size):
        raise TypeError("vae: its first parameter has neither dtype nor element_size(): give dtype=")
    size = element_size()
    if size == 4:
        return "fp32"
    if size == 2:
        return "fp16"
    raise ValueError("the VAE's parameters have %r-byte elements: give dtype= (fp16, bf16 or fp32)" % (size,))


@boundary
def config_int(vae, name, default=None, allowed=None):
    """An integer from ``vae.config.<name>`` (or ``vae.<name>`` where the host reads the attribute): ``default``
    where it is absent (None: required), refused with words where it is present and not a positive integer, or not
    one of ``allowed``."""
    config = getattr(vae, "config", None)
    where, value = "vae.config.%s" % name, getattr(config, name, None) if config is not None else None
    if value is None and isinstance(config, dict):
        value = config.get(name)
    if value is None:
        where, value = "vae.%s" % name, getattr(vae, name, None)
    if value is None:
        if default is None:
            raise TypeError("vae.config.%s: missing, and the host reads it to pick the VAE" % name)
        return default
    n = _whole(value, where)
    if allowed is not None and n not in allowed:
        raise ValueError("%s %d: expected one of %s" % (where, n, ", ".join(str(a) for a in allowed)))
    return n


@boundary
def query_of(model, op, width, height, *, backend=None, device=None, allocator="auto", os="auto", env=None,
             coefficients=None, observe=None, **query):
    """:func:`vramfit_vae.reserve` for a host's call: the platform from the environment unless given. With
    ``observe=`` a :class:`vramfit_vae.Observer`, the answer is the one its next ``with observe:`` checks."""
    answer = _reserve(model, op, width, height, backend=backend or platform_of(device), allocator=allocator, os=os,
                      env=env, coefficients=coefficients, **query)
    if observe is not None:
        expect = getattr(observe, "expect", None)
        if not callable(expect):
            raise TypeError("observe: expected a vramfit_vae.Observer, got %s" % type(observe).__name__)
        expect(answer)
    return answer
