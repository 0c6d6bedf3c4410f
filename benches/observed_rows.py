#!/usr/bin/env python3
"""N observation rows, as a host's Observer writes them, for the scale figures of `ingest` and
`report --observed` (benches/README.md, "Issue 61").

    python3 benches/observed_rows.py N OUT.csv [seed]

Every row is the runtime's own observation row (the header and the columns of
``vramfit_runtime::observe::COLUMNS``, read from the installed ``vramfit_vae``'s ``OBSERVATION_HEADER`` when it
imports, else the copy below), over SD's and FLUX.1's decode and encode at sizes 256-4096 px a side, fp16 and
bf16, with demands near what the shipped lines price. Deterministic for a seed. For speed work only: the figures
are made up.
"""

import random
import sys

COLUMNS = (
    "id,source,device,torch,conv_backend,allocator,os,vae,model,op,tile,loaded_dtype,run_dtype,width,height,batch,"
    "frames,temporal_tile,run,runs,aggregate,context,reserved_bytes,allocated_bytes,driver_bytes,note,"
    "driver_version,diffusers,accelerator,conv_library,allocator_conf,reservation_bytes,reservation_key,"
    "reservation_rule,coefficients,measured_on"
)


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 61)
    try:
        from vramfit_vae._native import OBSERVATION_HEADER as header
    except ImportError:
        header = COLUMNS + "\n"
    kinds = [("sd", "fp16", 4510.8, 49), ("sd", "bf16", 4530.0, 60), ("flux1", "bf16", 2255.4, 217),
             ("flux1", "fp16", 2217.6, 204)]
    with open(out, "w", encoding="utf-8", newline="") as f:
        f.write(header)
        for i in range(n):
            vae, dtype, slope, base_mib = kinds[i % len(kinds)]
            op = "decode" if i % 3 else "encode"
            w, h = 256 + 64 * rng.randrange(0, 61), 256 + 64 * rng.randrange(0, 61)
            reservation = int(slope * w * h) + (base_mib << 20)
            reserved = int(reservation * rng.uniform(0.6, 1.02))
            allocated = int(reserved * rng.uniform(0.5, 0.9))
            context = "warm" if i % 5 else "fresh"
            key = "%s/%s/0/cudnn/native/any/%s" % (vae, op, dtype)
            f.write(",".join(_cell(c) for c in [
                "o-nvidia-geforce-rtx-4090/%s-%s-%s-%dx%d-b1-cudnn-native-%s-%012x" % (vae, op, dtype, w, h, context, i),
                "vramfit-vae 0.1.0 observe on NVIDIA GeForce RTX 4090, 2026-12-07", "NVIDIA GeForce RTX 4090",
                "2.11.0", "cudnn", "native", "linux", vae, vae, op, "0", dtype, dtype, str(w), str(h), "1", "1", "",
                "1", "1", "single", context, str(reserved), str(allocated), str(reserved + (64 << 20)),
                "observed in a host by vramfit-vae 0.1.0 around its own op",
                "575.51", "0.42.1", "CUDA 12.8", "cuDNN 91900", "", str(reservation), key, "fitted line",
                "bundled fits/vae.json of vramfit 0.1.0", "2026-12-07",
            ]) + "\n")


def _cell(text):
    """A CSV cell as the runtime writes one: quoted where it holds a comma or a quote."""
    return '"%s"' % text.replace('"', '""') if ("," in text or '"' in text) else text


if __name__ == "__main__":
    main()
