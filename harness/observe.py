"""`python3 -m harness observe`: the prepared check of `vramfit_vae.Observer` on a real GPU (issue 55).

A random-init VAE from a shipped config, on the GPU, decoded through InvokeAI's drop-in with ``observe=`` at
three sizes, each twice (the first of the process fresh, then warm), the rows appended to ``--out``. Then the
maintainer's walk-through, printed: ``vramfit report --observed``, ``vramfit ingest``. ``--device fake`` runs the
same path on the harness's simulated device (``fake.Cuda``), which is what CI runs; its rows say ``device =
fake`` and ingest refuses them without ``--allow-simulated``.

    python3 -m harness observe --out measurements/raw/observed-GPU-DATE.csv
"""

import argparse
import json
import sys

from . import configs, fake, measure

SIZES = (512, 1024, 1536)


def main(argv):
    p = argparse.ArgumentParser(prog="python3 -m harness observe", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the observation file to append to")
    p.add_argument("--family", default="sdxl", help="a shipped config (harness/configs/); an image family")
    p.add_argument("--dtype", default="fp16", choices=["fp16", "bf16", "fp32"])
    p.add_argument("--device", choices=["cuda", "fake"], default="cuda")
    a = p.parse_args(argv)
    import vramfit_vae
    from vramfit_vae.hosts import invokeai

    doc = configs.load(a.family)
    if measure.is_video_model(doc):
        print("error: %s is a video family; the check decodes images" % a.family, file=sys.stderr)
        return 2
    if a.device == "fake":
        cuda = fake.Cuda()
        vae = None
    else:
        import torch

        cuda = torch.cuda
        if not cuda.is_available():
            print("error: no CUDA or ROCm device (use --device fake to check the path)", file=sys.stderr)
            return 2
        vae = measure.build(doc, a.dtype, "cuda")
    observer = vramfit_vae.Observer(a.out, device=cuda)
    scale = measure.spatial_compression(doc)

    class Params:
        """What the drop-in reads of the VAE: its parameters' dtype."""

        dtype = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}[a.dtype]

        def parameters(self):
            return iter([self])

    for side in SIZES:
        for _ in range(2):
            latents = [1, measure._channels(doc), side // scale, side // scale]
            if doc["vae"] == "flux1":
                invokeai.estimate_vae_working_memory_flux("decode", latents, Params(), observe=observer)
            else:
                invokeai.estimate_vae_working_memory_sd15_sdxl("decode", latents, Params(), None, False,
                                                              observe=observer)
            with observer:
                if vae is None:
                    cuda.run(doc["config"], "decode", a.dtype, side, side)
                else:
                    x = measure.make_input(doc, "decode", a.dtype, side, side, 1, "cuda")
                    measure.run_op(vae, "decode", x)
                    del x
    print(json.dumps(observer.counts))
    print("next: vramfit report --observed %s%s; then vramfit ingest %s, vramfit emit, vramfit verify"
          % (a.out, " --allow-simulated" if a.device == "fake" else "", a.out))
    return 0
