"""What the shipped traces are made from, and the record of it.

A trace is a pure function of its inputs: the tracer's source, the shipped
configs, the torch and diffusers versions it runs on, and the grid. Those
inputs, with the SHA-256 of each file they made, are recorded beside the
traces in ``measurements/traced/inputs.json`` by ``python3 -m harness trace
--all``. ``trace --all --check`` then proves the traces current in a second
when nothing they depend on changed (the record's inputs are the current
ones and every trace file is the one recorded), and regenerates them in full
on the meta device (minutes) only when something did. A changed config, a
changed tracer, another torch or diffusers pin, another grid, or a trace
file edited by hand each make the record disagree, and the check names
which.

Standard library only: the check runs without torch until it has to trace.
"""

import hashlib
import json
import os

from . import configs, preflight

#: The harness modules a trace runs (trace imports configs and preflight,
#: and measure for the model build, the op and its tiling).
TRACER_SOURCES = ("__init__.py", "allocator.py", "configs.py", "measure.py", "preflight.py", "trace.py")

#: Where the record lives, beside the traces it describes.
RECORD = "inputs.json"

_HERE = os.path.dirname(os.path.abspath(__file__))


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


def _file_sha(path):
    with open(path, "rb") as f:
        return _sha256(f.read())


def current(grid_words, torch_version=None, diffusers_version=None):
    """The inputs as they are now, the grid as the tracer states it (``trace.grid_words()``): the pinned
    versions unless the ones a trace actually ran on are given."""
    return {
        "tracer": {name: _file_sha(os.path.join(_HERE, name)) for name in TRACER_SOURCES},
        "configs": {name + ".json": _file_sha(os.path.join(_HERE, "configs", name + ".json"))
                    for name in configs.families()},
        "torch": torch_version or preflight.TORCH_TRACED,
        "diffusers": diffusers_version or preflight.DIFFUSERS_TESTED,
        "grid": _sha256(grid_words.encode("utf-8")),
    }


def digest(inputs):
    """One SHA-256 over every input, canonical JSON."""
    return _sha256(json.dumps(inputs, sort_keys=True, separators=(",", ":")).encode("utf-8"))


def outputs(out_dir, families):
    """The SHA-256 of each family's trace file in ``out_dir`` (None where it is missing)."""
    out = {}
    for family in families:
        path = os.path.join(out_dir, family + ".csv")
        out[family + ".csv"] = _file_sha(path) if os.path.exists(path) else None
    return out


def record_text(inputs, out_dir, families):
    """The record's JSON text for traces just written in ``out_dir``."""
    doc = {
        "about": "The inputs the traces in this folder were made from (python3 -m harness trace --all), with the "
                 "SHA-256 of each: trace --all --check regenerates the traces only when one differs.",
        "digest": digest(inputs),
        "inputs": inputs,
        "outputs": outputs(out_dir, families),
    }
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def differences(out_dir, families, now):
    """Why the traces in ``out_dir`` may not be current (``now``: :func:`current`), in words (empty: the record
    proves them current)."""
    path = os.path.join(out_dir, RECORD)
    try:
        with open(path, encoding="utf-8") as f:
            rec = json.load(f)
    except (OSError, ValueError) as e:
        return ["%s: no readable record of the traces' inputs (%s)" % (path, e)]
    if not isinstance(rec, dict) or not isinstance(rec.get("inputs"), dict):
        return ["%s: not a record of the traces' inputs" % path]
    was = rec["inputs"]
    said = []
    for part in ("tracer", "configs"):
        old, new = was.get(part) or {}, now[part]
        for name in sorted(set(old) | set(new)):
            if old.get(name) != new.get(name):
                what = "added" if name not in old else "removed" if name not in new else "changed"
                said.append("%s %s: %s since the traces were made" % (
                    "the tracer's" if part == "tracer" else "config", name, what))
    for part in ("torch", "diffusers"):
        if was.get(part) != now[part]:
            said.append("%s %s, the traces were made with %s" % (part, now[part], was.get(part)))
    if was.get("grid") != now["grid"]:
        said.append("the grid changed since the traces were made")
    if rec.get("digest") != digest(was):
        said.append("%s: its digest is not the digest of its inputs" % path)
    files = outputs(out_dir, families)
    recorded = rec.get("outputs") or {}
    for name in sorted(set(files) | set(recorded)):
        if files.get(name) != recorded.get(name):
            said.append("%s: %s" % (os.path.join(out_dir, name),
                                    "missing" if files.get(name) is None else "not the file the trace made"))
    return said
