"""The InvokeAI estimators declared in fits/policy.toml (`[[host_estimator]]`
and the Wan `[[video.estimate]]`s) against InvokeAI's released module: a grid
of image and Wan calls is ingested as points into a copy of the shipped
root, `vramfit crossval --against invokeai` prices each by the declared
formulas, and InvokeAI's own `estimate_vae_working_memory_*` prices the same
call; so is every shipped measured point InvokeAI has an estimator for (all
but LTX-2's, whose estimator came after this release). Run by CI's torch job, with invokeai installed --no-deps:

    python3 -m harness.invokeai_check ./target/release/vramfit

The one stand-in: whether SDPA materialises its score matrix, which InvokeAI
asks the device at run time, is answered as the policy declares it
(`score_on`: MIOpen and MPS materialise, CUDA does not), and a ROCm build is
a `torch.version.hip` set for the MIOpen calls. Exit 0 when every call
agrees to the byte; 1 with the calls that differ.
"""

import contextlib
import io
import itertools
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile

import torch

import invokeai.backend.util.attention as attention
import invokeai.backend.util.vae_working_memory as wm

#: InvokeAI's version these declarations restate.
VERSION = "6.14.2"

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
IMAGE_FAMILIES = ["sd", "flux1", "flux2", "qwen_image", "sd3", "cogview4"]
BACKENDS = ["cudnn", "miopen", "mps"]
#: (width, height, tile)
SIZES = [(1024, 1024, 0), (1536, 1024, 0), (2048, 2048, 512), (1280, 720, 256)]
#: (width, height, frames, tile) of the Wan calls.
CLIPS = [(832, 480, 1, 0), (832, 480, 81, 0), (1280, 720, 49, 256)]


class Vae:
    """What InvokeAI's estimators read of a VAE: its parameters, its tile and its config."""

    def __init__(self, dtype, tile=0, z_dim=16):
        self._p = torch.empty(1, dtype=dtype, device="meta")
        self.tile_sample_min_size = tile
        self.config = type("Config", (), {"z_dim": z_dim, "scale_factor_temporal": 4})()

    def parameters(self):
        return iter([self._p])


def grid():
    """Every call of the grid: (id, vae, op, dtype, backend, width, height, frames, batch, tile)."""
    for fam, op, dtype, backend, (w, h, tile), batch in itertools.product(
        IMAGE_FAMILIES, ["decode", "encode"], DTYPES, BACKENDS, SIZES, [1, 2]
    ):
        yield ("ic-%s-%s-%s-%s-%dx%d-t%d-b%d" % (fam, op, dtype, backend, w, h, tile, batch),
               fam, op, dtype, backend, w, h, 1, batch, tile)
    for fam, op, dtype, (w, h, frames, tile) in itertools.product(
        ["wan21", "wan22"], ["decode", "encode"], ["fp16", "bf16"], CLIPS
    ):
        yield ("ic-%s-%s-%s-%dx%dx%d-t%d" % (fam, op, dtype, w, h, frames, tile),
               fam, op, dtype, "cudnn", w, h, frames, 1, tile)


def invokeai(vae, op, dtype, backend, w, h, frames, batch, tile):
    """What InvokeAI's released module returns for this call."""
    dt = DTYPES[dtype]
    torch.version.hip = "6.2" if backend == "miopen" else None
    attention._torch_sdpa_materializes_score_matrix = lambda device_type, *a: backend in ("miopen", "mps")
    if vae in ("wan21", "wan22"):
        v = Vae(dt, z_dim=16 if vae == "wan21" else 48)
        return wm.estimate_vae_working_memory_wan(op, v, h, w, frames, tile or None)
    scale = 8 if op == "decode" else 1
    channels = {"sd": 4, "flux2": 32}.get(vae, 16) if op == "decode" else 3
    dims = (batch, channels, h // scale, w // scale)
    if vae == "qwen_image":
        dims = (batch, channels, 1, h // scale, w // scale)
    image = torch.empty(dims, device="meta")
    v = Vae(dt, tile)
    with contextlib.redirect_stdout(io.StringIO()):  # three of them print their answer
        if vae == "sd":
            return wm.estimate_vae_working_memory_sd15_sdxl(op, image, v, tile or None, dtype == "fp32")
        if vae == "flux1":
            return wm.estimate_vae_working_memory_flux(op, image, v)
        if vae == "flux2":
            device = torch.device("mps" if backend == "mps" else "cuda")
            return wm.estimate_vae_working_memory_flux2(op, image, v, tile or None, device)
        if vae == "qwen_image":
            return wm.estimate_vae_working_memory_qwen_image(op, image, v, tile or None)
        if vae == "sd3":
            return wm.estimate_vae_working_memory_sd3(op, image, v)
        return wm.estimate_vae_working_memory_cogview4(op, image, v)


def run(cmd, **kw):
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if out.returncode not in (0, 1):
        raise SystemExit("%s: exit %d\n%s%s" % (" ".join(cmd), out.returncode, out.stdout, out.stderr))
    return out.stdout


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    logging.disable(logging.INFO)  # InvokeAI announces each score matrix it reserves
    if len(argv) != 1:
        raise SystemExit("usage: python3 -m harness.invokeai_check PATH/TO/vramfit")
    vramfit = os.path.abspath(argv[0])
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    calls = list(grid())
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "root")
        for part in ("fits", "measurements"):
            shutil.copytree(os.path.join(repo, part), os.path.join(root, part))
        csv = os.path.join(tmp, "grid.csv")
        with open(csv, "w") as f:
            f.write("id,source,conv_backend,allocator,os,vae,op,tile,run_dtype,width,height,frames,batch,"
                    "reserved_bytes\n")
            for (pid, vae, op, dtype, backend, w, h, frames, batch, tile) in calls:
                f.write("%s,invokeai check,%s,native,linux,%s,%s,%d,%s,%d,%d,%d,%d,%d\n"
                        % (pid, backend, vae, op, tile, dtype, w, h, frames, batch, 1 << 30))
        run([vramfit, "--root", root, "ingest", csv])
        report = json.loads(run([vramfit, "--root", root, "--format", "json", "crossval", "--against", "invokeai"]))
    declared = {p["id"]: p["host_bytes"] for p in report["points"]}
    if VERSION not in report["versions"]:
        raise SystemExit("the policy restates InvokeAI %s, not %s" % (report["versions"], VERSION))
    # The shipped measured points too, each as InvokeAI would be called for it
    # (LTX-2's estimator is not in this release: its points are left out).
    for p in report["points"]:
        vae, op, tile, backend, _allocator, _os, dtype = p["line"].split("/")
        if p["id"].startswith("ic-") or vae == "ltx2":
            continue
        tile = int(tile.rstrip("f") or 0)
        calls.append((p["id"], vae, op, dtype, backend, p["width"], p["height"], p["frames"], p["batch"], tile))
    bad = []
    for (pid, *call) in calls:
        real = invokeai(*call)
        if declared.get(pid) != real:
            bad.append("%s: declared %s, InvokeAI %s answers %d" % (pid, declared.get(pid), VERSION, real))
    shipped = sum(1 for c in calls if not c[0].startswith("ic-"))
    print("%d calls (%d of them the shipped measured points): %d agree with InvokeAI %s's estimators to the byte"
          % (len(calls), shipped, len(calls) - len(bad), VERSION))
    for b in bad[:40]:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
