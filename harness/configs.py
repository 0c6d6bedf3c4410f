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


def from_file(path, family=None, vae=None, source=None):
    """A config given on the command line: a harness document (with
    `config`), or a diffusers `config.json` itself, which then needs the
    family name to write its rows under."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError("%s: cannot read a JSON config: %s" % (path, e)) from None
    if not isinstance(doc, dict):
        raise ValueError("%s: expected a JSON object" % path)
    if "config" not in doc:
        if "_class_name" not in doc:
            raise ValueError("%s: not a diffusers config (no _class_name) nor a harness document (no config)" % path)
        doc = {"config": doc}
    doc = dict(doc)
    if family:
        doc["family"] = family
    if not doc.get("family"):
        raise ValueError("%s: name the family (--family NAME)" % path)
    if not all(c.isalnum() or c in "_-." for c in doc["family"]):
        raise ValueError("family '%s': letters, digits, '_', '-' and '.' only" % doc["family"])
    doc["vae"] = vae or doc.get("vae") or doc["family"]
    doc["source"] = source or doc.get("source") or os.path.basename(path)
    return doc


def one_frame_max(doc, op):
    """The largest one-frame run (pixels) a video family's class can do for `op` (the document's `one_frame_max`,
    which says why), or None: every one-frame size of the grid."""
    return ((doc.get("one_frame_max") or {}).get("pixels") or {}).get(op)


def untiled_ops(doc):
    """The ops a family's class cannot run tiled (the document's `untiled`, which says why): traced, smoke-checked
    and measured untiled only."""
    return set((doc.get("untiled") or {}).get("ops", ()))
