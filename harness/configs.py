"""The VAE configurations of the real models, shipped with the package.

Each `configs/FAMILY.json` holds the model repository's `vae/config.json`
(under `config`), where it was read (`source`), and the vramfit family and
model name the points are written under. Weights are never downloaded: a
VAE is built from its configuration with random weights, which allocate
and compute exactly as the trained ones do.
"""

import json
import os

_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")


def families():
    """Every shipped family name, sorted."""
    return sorted(f[: -len(".json")] for f in os.listdir(_DIR) if f.endswith(".json"))


def load(family):
    """The shipped document of one family; a ValueError names the known ones."""
    path = os.path.join(_DIR, family + ".json")
    if not os.path.exists(path):
        raise ValueError("unknown family '%s' (known: %s)" % (family, ", ".join(families())))
    with open(path, encoding="utf-8") as f:
        return json.load(f)
