#!/usr/bin/env python3
"""Runs host-style calls through vramfit's drop-ins and vramfit.plan, for the agreement tests.

Reads a JSON list on stdin. Each item is either
  {"call": "invokeai.NAME" or "comfyui.NAME", "args": [...], "kwargs": {...}, "torch_hip": null or "6.2"}
where an argument {"tensor": [dims]} becomes a tensor-like object of that
shape, {"vae": {"dtype": NAME, "element_size": N, "attrs": {...}, "config": {...},
"no_params": true}} a VAE-like object (with "no_params", one whose
parameters() is empty), {"device": TYPE} a device-like object, {"none": true}
None and {"object": true} a bare object(); "torch_hip"
puts a stand-in torch module in sys.modules whose version.hip is that value
(absent: no torch at all); or
  {"plan": {keyword arguments of vramfit.plan}, "args": [model, op, width, height]}, or
  {"reserve": {keyword arguments of vramfit.reserve}, "args": [model, op, width, height]}.
Prints a JSON list: {"ok": the result}, {"error": the ValueError's message}, or
{"error": message, "raised": "TypeError"} for a TypeError; any other exception
is {"raised": its type name, "error": message}, which the tests refuse.
"""

import json
import sys
import types

import vramfit_vae as vramfit
from vramfit_vae.hosts import comfyui, invokeai


class Tensor:
    def __init__(self, dims):
        self.shape = tuple(dims)

    def dim(self):
        return len(self.shape)


class Param:
    def __init__(self, dtype, size):
        if dtype is not None:
            self.dtype = dtype
        self._size = size

    def element_size(self):
        return self._size


class Vae:
    def __init__(self, spec):
        self._param = Param(spec.get("dtype"), spec.get("element_size", 2))
        for k, v in spec.get("attrs", {}).items():
            setattr(self, k, v)
        self.config = types.SimpleNamespace(**spec.get("config", {}))
        self._empty = spec.get("no_params", False)

    def parameters(self):
        return iter([] if self._empty else [self._param])


def build(arg):
    if isinstance(arg, dict) and "tensor" in arg:
        return Tensor(arg["tensor"])
    if isinstance(arg, dict) and "vae" in arg:
        return Vae(arg["vae"])
    if isinstance(arg, dict) and "device" in arg:
        return types.SimpleNamespace(type=arg["device"])
    if isinstance(arg, dict) and arg.get("none"):
        return None
    if isinstance(arg, dict) and arg.get("object"):
        return object()
    return arg


out = []
for item in json.load(sys.stdin):
    # No torch unless the call names one: a stand-in whose version.hip is given.
    sys.modules["torch"] = None
    if "torch_hip" in item:
        sys.modules["torch"] = types.SimpleNamespace(version=types.SimpleNamespace(hip=item["torch_hip"]))
    try:
        if "plan" in item:
            result = vramfit.plan(*item["args"], **item["plan"])
        elif "reserve" in item:
            result = vramfit.reserve(*item["args"], **item["reserve"]).bytes
        else:
            module, name = item["call"].split(".")
            fn = getattr({"invokeai": invokeai, "comfyui": comfyui}[module], name)
            result = fn(*[build(a) for a in item["args"]], **{k: build(v) for k, v in item.get("kwargs", {}).items()})
        out.append({"ok": result})
    except ValueError as e:
        out.append({"error": str(e)})
    except TypeError as e:
        out.append({"error": str(e), "raised": "TypeError"})
    except Exception as e:  # noqa: BLE001 (reported, and refused by the tests)
        out.append({"error": str(e), "raised": type(e).__name__})
json.dump(out, sys.stdout, ensure_ascii=False)
