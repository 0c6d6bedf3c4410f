"""A host-style loop of VAE ops through the drop-ins, an Observer around each, on the harness's simulated
device (tests/observe.rs runs it, several processes at once). Its one argument is JSON:

  out        the observation file (None: check only)
  ops        how many ops
  spike      the op index that takes `extra` bytes more than the memory model says (an under-reservation)
  extra      those bytes
  max_bytes  the file's bound
  cpu        no device: torch absent, or with "torch-cpu" a torch whose torch.cuda is not available (a CPU or
             MPS machine); observe must be a no-op
  observe    False: the same loop without an Observer (its outputs must be the same)

It prints {"counts": ..., "outputs": [...]} on stdout; the log goes to stderr.
"""

import json
import logging
import os
import sys

sys.path.insert(0, os.environ["VRAMFIT_REPO"])

from harness import configs, fake  # noqa: E402

import vramfit_vae  # noqa: E402
from vramfit_vae.hosts import comfyui, invokeai  # noqa: E402


class Weights:
    dtype = "torch.float16"


class Vae:
    """What InvokeAI's estimator reads of the VAE: its parameters' dtype."""

    def parameters(self):
        return iter([Weights()])


def op(cuda, sdxl, kind, side, extra):
    """The host's op: on the fake card, or on the CPU a deterministic computation."""
    if cuda is None:
        return sum((i * side) % 7 for i in range(side)), kind
    return list(cuda.run(sdxl, kind, "fp16", side, side, extra=extra))


def main():
    args = json.loads(sys.argv[1])
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s", stream=sys.stderr)
    cuda = None if args.get("cpu") else fake.Cuda()
    if args.get("cpu") == "torch-cpu":
        import types

        torch = types.ModuleType("torch")
        torch.cuda = types.SimpleNamespace(is_available=lambda: False)
        sys.modules["torch"] = torch
    observer = None
    if args.get("observe", True):
        observer = vramfit_vae.Observer(args.get("out"), max_bytes=args.get("max_bytes", 16 << 20), device=cuda)
    sdxl = configs.load("sdxl")["config"]
    outputs = []
    for i in range(args["ops"]):
        side = (512, 768, 1024)[i % 3]
        extra = args.get("extra", 0) if i == args.get("spike", -1) else 0
        kw = {} if observer is None else {"observe": observer}
        if i % 2 == 0:
            # ComfyUI prices one item of [B, 4, h, w] latents (comfy/sd.py VAE.decode).
            comfyui.memory_used_decode("sdxl", [1, 4, side // 8, side // 8], "torch.float16", **kw)
            kind = "decode"
        else:
            # InvokeAI prices an SDXL encode of [1, 3, H, W] pixels.
            invokeai.estimate_vae_working_memory_sd15_sdxl("encode", [1, 3, side, side], Vae(), None, False, **kw)
            kind = "encode"
        if observer is None:
            outputs.append(op(cuda, sdxl, kind, side, extra))
        else:
            with observer:
                outputs.append(op(cuda, sdxl, kind, side, extra))
    print(json.dumps({"counts": observer.counts if observer else None, "outputs": outputs}))


if __name__ == "__main__":
    main()
