#!/usr/bin/env python3
"""Hostile input for the Python package (issue 61, docs/python.md "What a call raises").

Every numeric argument of reserve(), plan(), budget(), Reservation.with_batch() and each host drop-in at the
edges of 32 and 64 bits, and arguments whose own code raises (``__str__``, ``__index__``, ``__bool__``, a
mapping's ``items()``, a tensor's ``shape``, a VAE's ``parameters()``): a call returns, or raises ValueError
or TypeError, never anything else (no PanicException, no RuntimeError from the caller's object leaking
through). Prints a JSON object: the calls made, and each other exception as "call: Type: message".
"""

import json
import sys
import types

import vramfit_vae as vramfit
from vramfit_vae import _native
from vramfit_vae.hosts import comfyui, invokeai

EDGES = [0, 1, 2, 2**31 - 1, 2**31, 2**31 + 1] + list(range(2**32 - 7, 2**32 + 2)) + [2**63, 2**64 - 1, 2**64, -1]

calls = [0]
broken = []


class Raises(Exception):
    """An exception class no caller would expect from vramfit."""


class Hostile:
    """An argument whose every conversion raises a foreign exception."""

    def __str__(self):
        raise Raises("__str__")

    def __repr__(self):
        raise Raises("__repr__")

    def __index__(self):
        raise Raises("__index__")

    def __int__(self):
        raise Raises("__int__")

    def __bool__(self):
        raise Raises("__bool__")

    def __fspath__(self):
        raise Raises("__fspath__")

    def __iter__(self):
        raise Raises("__iter__")

    def items(self):
        raise Raises("items")


class StrInt(int):
    """An int whose str() raises."""

    def __str__(self):
        raise Raises("int __str__")

    __repr__ = __str__


class Param:
    def __init__(self, dtype="float16"):
        self.dtype = dtype


class Vae:
    def __init__(self, dtype="float16", **attrs):
        self._dtype = dtype
        self.config = types.SimpleNamespace(z_dim=16)
        for k, v in attrs.items():
            setattr(self, k, v)

    def parameters(self):
        return iter([Param(self._dtype)])


class BadVae(Vae):
    def parameters(self):
        raise Raises("parameters")


class BadShape:
    @property
    def shape(self):
        raise Raises("shape")


def call(name, f, *args, **kw):
    calls[0] += 1
    try:
        f(*args, **kw)
    except (ValueError, TypeError):
        pass
    except BaseException as e:  # noqa: BLE001 - any other exception is the finding
        broken.append("%s: %s: %s" % (name, type(e).__name__, str(e)[:200]))


base = dict(dtype="fp16", os="linux", env={})
video = dict(dtype="bf16", os="linux", env={}, frames=17)
need = vramfit.reserve("sdxl", "decode", 1024, 1024, **base)
for e in EDGES:
    for model, kw in (("sdxl", base), ("wan21", video), ("ltx2", video)):
        call("reserve width", vramfit.reserve, model, "decode", e, 512, **kw)
        call("reserve height", vramfit.reserve, model, "decode", 512, e, **kw)
        call("reserve both", vramfit.reserve, model, "decode", e, e, **kw)
        for k in ("batch", "tile", "frames", "temporal_tile"):
            call("reserve " + k, vramfit.reserve, model, "encode", 512, 512, **dict(kw, **{k: e}))
            call("reserve %s on 8x2**32" % k, vramfit.reserve, model, "decode", 8, 2**32, **dict(kw, **{k: e}))
            call("plan " + k, vramfit.plan, model, "decode", 8, 2**32, free=24 << 30, **dict(kw, **{k: e}))
        call("plan free", vramfit.plan, model, "decode", 1024, 1024, **dict(kw, free=e))
        call("plan cap", vramfit.plan, model, "decode", 1024, 1024, **dict(kw, free=e, cap=e))
    call("budget", vramfit.budget, free=e, share=e, cap=e)
    call("with_batch", need.with_batch, e)
    call("comfyui decode", comfyui.memory_used_decode, "sdxl", (1, 4, e, e), "float16")
    call("comfyui decode video", comfyui.memory_used_decode, "wan21", (1, 16, e, e, e), "bfloat16")
    call("comfyui encode", comfyui.memory_used_encode, "flux1", (e, 3, 1024, e), "bfloat16")
    call("invokeai sd", invokeai.estimate_vae_working_memory_sd15_sdxl, "decode", (e, 4, 128, e), Vae(), e, False)
    call("invokeai sd tile", invokeai.estimate_vae_working_memory_sd15_sdxl, "decode", (1, 4, 128, 128),
         Vae(tile_sample_min_size=e), 0, False)
    call("invokeai flux", invokeai.estimate_vae_working_memory_flux, "encode", (1, 3, e, 1024), Vae())
    call("invokeai wan", invokeai.estimate_vae_working_memory_wan, "decode", Vae(), e, e, e, tile_size=e)
    call("invokeai ltx2", invokeai.estimate_vae_working_memory_ltx2, "decode", Vae(), 512, 512, e, tile_size=e,
         temporal_tile=e)
    call("invokeai minimax", invokeai.estimate_vae_working_memory_minimax_h3, "decode",
         Vae(tile_sample_min_height=e), 256, 256, e)

# Arguments whose own code raises, in every place an argument is read.
h = Hostile()
for k in ("dtype", "loaded_dtype", "backend", "allocator", "os", "host", "warm", "fp32", "env", "coefficients",
          "batch", "tile", "frames", "temporal_tile"):
    call("reserve %s=hostile" % k, vramfit.reserve, "sdxl", "decode", 1024, 1024, **dict(base, **{k: h}))
    call("plan %s=hostile" % k, vramfit.plan, "sdxl", "decode", 1024, 1024, free=1 << 34, **dict(base, **{k: h}))
for k in ("free", "share", "cap"):
    call("budget %s=hostile" % k, vramfit.budget, **{k: h})
call("reserve model=hostile", vramfit.reserve, h, "decode", 1024, 1024, **base)
call("reserve op=hostile", vramfit.reserve, "sdxl", h, 1024, 1024, **base)
call("reserve width=hostile", vramfit.reserve, "sdxl", "decode", h, 1024, **base)
call("reserve width=StrInt", vramfit.reserve, "sdxl", "decode", StrInt(1024), 1024, **base)
call("reserve env items", vramfit.reserve, "sdxl", "decode", 1024, 1024, dtype="fp16", env=h)
call("reserve env values", vramfit.reserve, "sdxl", "decode", 1024, 1024, dtype="fp16", env={"A": h})
call("load hostile", vramfit.load, h)
call("family hostile", vramfit.bundled().family, h)
call("with_batch hostile", need.with_batch, h)
call("with_batch StrInt", need.with_batch, StrInt(2))
# Keywords of the wrong kind.
for k, v in (("host", 5), ("host", b"diffusers"), ("warm", "yes"), ("warm", 1), ("fp32", "no"), ("dtype", 16),
             ("os", 3.5), ("allocator", ["native"]), ("env", ["A=1"]), ("coefficients", 7), ("backend", None),
             ("tile", 512.0), ("frames", "17"), ("batch", True), ("temporal_tile", [16])):
    call("reserve %s=%r" % (k, v), vramfit.reserve, "wan21", "decode", 512, 512, **dict(video, **{k: v}))
# The drop-ins with hostile objects where a host's objects go.
call("comfyui shape", comfyui.memory_used_decode, "sdxl", BadShape(), "float16")
call("comfyui dims", comfyui.memory_used_decode, "sdxl", (1, 4, h, 128), "float16")
call("comfyui family", comfyui.memory_used_decode, h, (1, 4, 128, 128), "float16")
call("comfyui dtype", comfyui.memory_used_decode, "sdxl", (1, 4, 128, 128), h)
call("invokeai vae", invokeai.estimate_vae_working_memory_flux, "decode", (1, 16, 128, 128), BadVae())
call("invokeai param dtype", invokeai.estimate_vae_working_memory_flux, "decode", (1, 16, 128, 128), Vae(dtype=h))
call("invokeai tensor", invokeai.estimate_vae_working_memory_flux, "decode", BadShape(), Vae())
call("invokeai config", invokeai.estimate_vae_working_memory_wan, "decode", Vae(config=h), 512, 512, 17)
call("invokeai z_dim", invokeai.estimate_vae_working_memory_wan, "decode",
     Vae(config=types.SimpleNamespace(z_dim=h)), 512, 512, 17)
call("invokeai use_tiling", invokeai.estimate_vae_working_memory_minimax_h3, "decode", Vae(use_tiling=h), 256, 256,
     17)
call("invokeai device", invokeai.estimate_vae_working_memory_flux2, "decode", (1, 32, 128, 128), Vae(), device=h)
# The boundary itself: a panic and a foreign exception inside a native call.
for kind in ("panic", "foreign"):
    try:
        _native._boundary_check(kind)
        broken.append("boundary %s: returned" % kind)
    except vramfit.Refusal as e:
        if kind != "panic" or e.code != "internal":
            broken.append("boundary %s: Refusal %s" % (kind, e.code))
    except TypeError as e:
        if kind != "foreign" or not isinstance(e.__cause__, RuntimeError):
            broken.append("boundary %s: TypeError without its cause" % kind)
    except BaseException as e:  # noqa: BLE001
        broken.append("boundary %s: %s" % (kind, type(e).__name__))

json.dump({"calls": calls[0], "broken": broken}, sys.stdout)
