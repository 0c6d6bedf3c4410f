"""Two AutoencoderKL configs that differ only in width and depth, traced on
the meta device and registered with `vramfit family add` in a copy of the
shipped root, must price in the ratio of their traces (docs/traced.md, "A
new VAE on day one"). Run by CI's torch job:

    python3 -m harness.family_check ./target/release/vramfit

Exit 0 when both are priced by the traced rule through the same
calibration and `price − base` of the two is in their traced bytes' ratio
(to the byte: each is ⌈slope × traced⌉ under one slope); 1 otherwise.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from . import trace

#: diffusers' AutoencoderKL with SD's layout, two widths and two depths.
CONFIGS = {
    "narrowvae": {"block_out_channels": [64, 128, 256, 256], "layers_per_block": 1},
    "widevae": {"block_out_channels": [128, 256, 512, 512], "layers_per_block": 2},
}


def config(changes):
    c = {
        "_class_name": "AutoencoderKL",
        "in_channels": 3,
        "out_channels": 3,
        "latent_channels": 4,
        "down_block_types": ["DownEncoderBlock2D"] * 4,
        "up_block_types": ["UpDecoderBlock2D"] * 4,
        "act_fn": "silu",
        "norm_num_groups": 32,
        "sample_size": 512,
    }
    c.update(changes)
    return c


def run(cmd, **kw):
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if out.returncode != 0:
        raise SystemExit("%s: exit %d\n%s%s" % (" ".join(cmd), out.returncode, out.stdout, out.stderr))
    return out.stdout


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        raise SystemExit("usage: python3 -m harness.family_check PATH/TO/vramfit")
    vramfit = os.path.abspath(argv[0])
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "root")
        for part in ("fits", "measurements"):
            shutil.copytree(os.path.join(repo, part), os.path.join(root, part))
        answers = {}
        for name, changes in CONFIGS.items():
            path = os.path.join(tmp, name + ".json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(config(changes), f)
            out_dir = os.path.join(tmp, "traced-" + name)
            os.makedirs(out_dir)
            # The check prices an fp16 decode: its grid is what that needs.
            run([sys.executable, "-m", "harness", "trace", "--config", path, "--family", name, "--out-dir", out_dir,
                 "--op", "decode", "--dtype", "fp16", "--quiet"], cwd=repo)
            run([vramfit, "--root", root, "family", "add", name, "--traces", os.path.join(out_dir, name + ".csv")])
            answers[name] = json.loads(run([vramfit, "--root", root, "--format", "json", "reserve", name, "decode",
                                            "1024x1024", "--dtype", "fp16", "--backend", "cudnn", "--allocator",
                                            "native", "--os", "linux"]))
    narrow, wide = answers["narrowvae"], answers["widevae"]
    problems = []
    for name, a in answers.items():
        if a["rule"] != "traced":
            problems.append("%s: priced by the %s, not the traced rule" % (name, a["rule"]))
    if narrow["traced"]["calibration"] != wide["traced"]["calibration"]:
        problems.append("two calibrations: %s, %s" % (narrow["traced"]["calibration"], wide["traced"]["calibration"]))
    base = narrow["traced"]["base_mib"] * 1048576
    tn, tw = narrow["traced"]["traced_bytes"], wide["traced"]["traced_bytes"]
    # The op's own price: the answer adds the platform's first use on top
    # (docs/fit.md, "Demand per context"), the same bytes for both.
    pn, pw = narrow["op_bytes"] - base, wide["op_bytes"] - base
    if narrow["bytes"] - narrow["op_bytes"] != wide["bytes"] - wide["op_bytes"]:
        problems.append("two first uses: %d and %d B" % (narrow["bytes"] - narrow["op_bytes"],
                                                          wide["bytes"] - wide["op_bytes"]))
    centi = round(float(narrow["traced"]["slope"]) * 100)
    for name, t, p in (("narrowvae", tn, pn), ("widevae", tw, pw)):
        if p != -(-centi * t // 100):
            problems.append("%s: price − base %d is not ⌈%d × %d / 100⌉" % (name, p, centi, t))
    print("narrow: traced %d B, priced %d B; wide: traced %d B, priced %d B; traced ratio %.6f, (price − base) ratio "
          "%.6f" % (tn, narrow["bytes"], tw, wide["bytes"], tw / tn, pw / pn))
    if abs(pw / pn - tw / tn) > 1e-6:
        problems.append("the prices' ratio %.9f is not the traces' %.9f" % (pw / pn, tw / tn))
    for p in problems:
        print("FAIL " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
