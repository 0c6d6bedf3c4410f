"""How much VRAM will this VAE decode or encode need? vramfit's answer, in Python.

The coefficients come from ``fits/vae.json``, fitted and audited by the
vramfit command-line tool; a copy ships inside this package. This module
prices a query exactly as ``vramfit reserve --format json`` does (a CI test
compares the two on thousands of queries), with the standard library only,
on Python 3.9 and later. It is one folder: an app may vendor it (this file, the
generated ``_generated.py`` and the bundled ``vae.json``) and pass its own
coefficients file.

    import vramfit
    need = vramfit.reserve("sdxl", "decode", 1024, 1024, dtype="fp16")
    budget = vramfit.budget(free=free_bytes, share="0.9")
    if need.bytes > budget.bytes: ...   # free memory first, or tile

Every figure is an integer or an exact fraction, never a float. Errors are
``ValueError``s with the CLI's own messages (which name the flag: ``--dtype``
is the ``dtype=`` argument here, ``--loaded-dtype`` is ``loaded_dtype=``).

The JSON Schemas of the coefficients file and of the answer are
``schemas/coefficients.json`` and ``schemas/reserve.json`` in the vramfit
repository (``vramfit schema coefficients`` prints the first); this module
validates only what it reads.
"""

import json
import os as _os
import re
import sys
from dataclasses import dataclass, field
from dataclasses import replace as _replace
from fractions import Fraction
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

__all__ = [
    "Budget",
    "Coefficients",
    "Detected",
    "LineKey",
    "Reservation",
    "budget",
    "bundled",
    "load",
    "plan",
    "reserve",
]

__version__ = "0.1.0"

from . import _generated as _g
from ._generated import FORMAT, MAX_PIXELS, MIB, TILE_STEP, VERSION



class _TooLarge(ValueError):
    """A figure past what 64 bits of bytes hold: the request is too large to price (a request containing one is
    too large itself)."""
_U64 = (1 << 64) - 1
_U64_MAX = _U64

# The closed vocabularies (canonical spelling first, with PyTorch's names as
# aliases), the rule labels and the words of every refusal are vramfit's own
# tables, generated into `_generated.py`.
_OPS, _DTYPES, _BACKENDS, _OSES, _ALLOCATORS = _g.OPS, _g.DTYPES, _g.BACKENDS, _g.OSES, _g.ALLOCATORS
_ELEM = _g.ELEM_BYTES
_RULE_TEXT = _g.RULE_TEXT


def _say(_template, **values):
    """The words of the template ``_template`` (a name in ``_generated.WORDS``) filled in, as vramfit says them."""
    return _g.WORDS[_template].format(**values)

# The allocator variables in the order PyTorch reads them; a ROCm build
# reads PYTORCH_HIP_ALLOC_CONF first.
ALLOC_VARS = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")
HIP_ALLOC_VAR = "PYTORCH_HIP_ALLOC_CONF"



def _rank(table):
    return {name: i for i, (name, _) in enumerate(table)}


_ORDER = {
    "op": _rank(_OPS),
    "conv_backend": _rank(_BACKENDS),
    "allocator": {a: i for i, a in enumerate(_ALLOCATORS)},
    "os": _rank(_OSES),
    "dtype": _rank(_DTYPES),
}


# Rust's `char::is_whitespace` (Unicode White_Space): what `trim` strips there. Python's `str.strip` also strips
# U+001C..U+001F, which Rust keeps, so a name padded with them would be read differently.
_WHITE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
         "\u2028\u2029\u202f\u205f\u3000"


def _trim(text):
    """``text`` trimmed as vramfit (Rust's ``str::trim``) trims it."""
    return text.strip(_WHITE)


def _fold(text):
    """ASCII lower case, as vramfit compares names (``eq_ignore_ascii_case``): a non-ASCII letter that Python
    would lower to an ASCII one (the Kelvin sign to ``k``) stays itself."""
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


def _spelling(what, table, given):
    """The canonical spelling of ``given`` (``torch.float16`` objects too)."""
    text = _trim(str(given))
    for canon, aliases in table:
        if _fold(text) == _fold(canon) or any(_fold(text) == _fold(a) for a in aliases):
            return canon
    accepted = ", ".join(c for c, _ in table)
    raise ValueError(_say("UNKNOWN_SPELLING", what=what, given=text, accepted=accepted))


def allocator_of_conf(conf):
    """The allocator a ``PYTORCH_*_ALLOC_CONF`` value chooses, read as PyTorch
    reads it: ``backend:cudaMallocAsync`` wins; else an explicit
    ``expandable_segments:True/False``; else None (``max_split_size_mb`` and
    the like choose no allocator)."""
    backend_async = False
    expandable = None
    for part in conf.split(","):
        if ":" not in part:
            continue
        k, v = part.split(":", 1)
        k, v = _trim(k), _fold(_trim(v))
        if k == "backend" and v == "cudamallocasync":
            backend_async = True
        elif k == "expandable_segments" and v == "true":
            expandable = True
        elif k == "expandable_segments" and v == "false":
            expandable = False
    if backend_async:
        return "cudaMallocAsync"
    if expandable is None:
        return None
    return "expandable_segments" if expandable else "native"


def _allocator(given):
    text = "".join(c for c in str(given) if c not in _WHITE)
    for a in _ALLOCATORS:
        if _fold(text) == _fold(a):
            return a
    if _fold(text) == "expandable-segments":
        return "expandable_segments"
    if _fold(text) == "backend:native":
        return "native"
    found = allocator_of_conf(text)
    if found is None:
        raise ValueError(
            _say("UNKNOWN_SPELLING", what="allocator", given=_trim(str(given)), accepted=_g.ALLOCATORS_ACCEPTED)
        )
    return found


@dataclass(frozen=True)
class LineKey:
    """The seven fields that name a line, and a video family's temporal tile."""

    vae: str
    op: str
    tile: int
    conv_backend: str
    allocator: str
    os: str
    dtype: str
    #: A video line's temporal tile in frames (0: none); None for an image family.
    temporal_tile: Optional[int] = None

    def tiles_text(self):
        """``512`` for an image line, ``16f`` for a video line (``512x16f`` with a spatial tile)."""
        if self.temporal_tile is None:
            return "%d" % self.tile
        if self.tile == 0:
            return "%df" % self.temporal_tile
        return "%dx%df" % (self.tile, self.temporal_tile)

    def __str__(self):
        return "%s/%s/%s/%s/%s/%s/%s" % (
            self.vae, self.op, self.tiles_text(), self.conv_backend, self.allocator, self.os, self.dtype)

    def sort_key(self):
        """vramfit's order of keys (family by code point, then each vocabulary in its own order)."""
        o = _ORDER
        tt = (0, 0) if self.temporal_tile is None else (1, self.temporal_tile)
        return (self.vae, o["op"][self.op], self.tile, tt, o["conv_backend"][self.conv_backend],
                o["allocator"][self.allocator], o["os"][self.os], o["dtype"][self.dtype])

    def to_dict(self):
        d = {"vae": self.vae, "op": self.op, "tile": self.tile}
        if self.temporal_tile is not None:
            d["temporal_tile"] = self.temporal_tile
        d.update({"conv_backend": self.conv_backend, "allocator": self.allocator, "os": self.os,
                  "dtype": self.dtype})
        return d


@dataclass(frozen=True)
class Detected:
    """A value and where it came from (``flag``, an environment variable, ``host``, …)."""

    value: str
    source: str

    def to_dict(self):
        return {"value": self.value, "from": self.source}


@dataclass(frozen=True)
class _Line:
    slope_centi: int
    base_mib: int
    carried: bool
    size_range: Optional[Tuple[int, int]]
    #: Points made on a simulated device (0 in every file of real measurements).
    simulated_points: int = 0
    #: The devices the line's points were measured on.
    devices: Tuple[str, ...] = ()

    def at(self, pixels):
        per_pixel = -(-(self.slope_centi * pixels) // 100)
        b = per_pixel + self.base_mib * MIB
        if b > _U64:
            raise _TooLarge("arithmetic overflow: a size or demand is beyond what vramfit can price exactly")
        return b


@dataclass(frozen=True)
class Reservation:
    """The answer to one query, field for field what ``vramfit reserve --format json`` prints."""

    #: The reservation, bytes.
    bytes: int
    #: The reservation in MiB, rounded up.
    mib: int
    #: Which rule priced it: fitted-line, carried-line, any-os-line, unmeasured-rule, legacy-floor.
    rule: str
    #: The query's key (resolved family, run dtype, detected allocator and OS).
    line: LineKey
    #: The line whose formula set the price, if any.
    priced_by: Optional[LineKey]
    #: That line's slope, bytes per pixel, two decimals.
    slope: Optional[str]
    #: That line's base, MiB.
    base_mib: Optional[int]
    #: ``width × height × batch``.
    pixels: int
    #: The line's price before cast growth, bytes.
    line_bytes: Optional[int]
    #: Weight growth of a cast (loaded narrower than run), bytes.
    weight_growth_bytes: int
    #: The legacy estimate, where it was consulted.
    legacy_bytes: Optional[int]
    #: Whether the size lies outside the pricing line's measured range.
    extrapolated: bool
    #: The pricing line's measured size range, pixels.
    size_range: Optional[Tuple[int, int]]
    #: The devices the pricing line's points were measured on (empty: no line priced it).
    measured_on: List[str]
    run_dtype: Detected
    loaded_dtype: str
    allocator: Detected
    os: Detected
    #: The tile asked for when a tile covering the whole image priced untiled.
    tile_asked: Optional[int]
    #: A tile priced from an untiled line: ``host`` (value, from), ``copies``,
    #: ``copies_source``, ``tile_pixels``, ``tile_bytes``, ``copies_bytes``.
    tiled: Optional[dict]
    #: On a math-kernel platform (ROCm, MPS), the attention phase: ``bytes_per_score``,
    #: ``source``, ``sequence``, ``heads``, ``score_bytes``, ``held_bytes``, ``phase_bytes``,
    #: ``line_phase_bytes``, ``line_rule``, ``wrong_output``; the price is the larger phase.
    attention: Optional[dict]
    #: A video family's terms: ``frames``, ``tile``, ``temporal_tile``, ``walk``,
    #: ``temporal_compression``, ``working_frames``, ``working_set``, ``clip_copies``,
    #: ``clip_bytes``, ``estimate`` (``host``, ``bytes``, ``source``; or None).
    video: Optional[dict]
    #: The traced rule's terms where it was consulted (``at``, ``unit``, ``traced_bytes``, ``bytes``,
    #: ``extrapolated``, ``shape``, ``shape_slope``, ``shape_base``, ``size_range``, ``calibration``, ``slope``,
    #: ``base_mib``, ``families``, ``points``, ``margin``); None where it was not (docs/traced.md).
    traced: Optional[dict]
    #: A measured line past its largest measured size where its family's trace grows faster: ``shape``,
    #: ``measured_to``, ``line_bytes_at_end``, ``traced_at_end``, ``traced_at``, ``bytes`` (the line bytes); None
    #: elsewhere (docs/traced.md, "Past the measured range").
    follows_trace: Optional[dict]
    #: What a user should read (extrapolation, unmeasured keys, …).
    warnings: List[str]
    #: Which coefficients priced it.
    coefficients: str
    #: Rule ``monotone-floor``: the smaller request whose higher price this one takes (``width``, ``height``,
    #: ``frames``, ``tile``, ``temporal_tile``, ``rule``, ``priced_by``, ``bytes``, ``extrapolated``, ``own_rule``,
    #: ``own_bytes``); None when the query's own rule set the price.
    lifted: Optional[dict] = None
    #: What the rules priced the op itself at, bytes: ``bytes`` less the first-use term where it is included.
    op_bytes: int = 0
    #: The platform's first use (docs/fit.md, "First use"): ``declared_for``, ``matched`` (``own``, ``other-os``,
    #: ``other-allocator``), ``mib``, ``bytes``, ``included`` (False: ``warm=True``), ``source``; None where none
    #: is declared for the backend.
    first_use: Optional[dict] = None

    @property
    def key(self):
        """The query's line key as text, ``vae/op/tile/backend/allocator/os/dtype``."""
        return str(self.line)

    def to_dict(self):
        """The answer as ``vramfit reserve --format json`` prints it (same keys, same order)."""
        return {
            "bytes": self.bytes,
            "mib": self.mib,
            "rule": self.rule,
            "line": self.line.to_dict(),
            "priced_by": self.priced_by.to_dict() if self.priced_by else None,
            "slope": self.slope,
            "base_mib": self.base_mib,
            "pixels": self.pixels,
            "line_bytes": self.line_bytes,
            "weight_growth_bytes": self.weight_growth_bytes,
            "legacy_bytes": self.legacy_bytes,
            "extrapolated": self.extrapolated,
            "size_range": list(self.size_range) if self.size_range else None,
            "measured_on": list(self.measured_on),
            "run_dtype": self.run_dtype.to_dict(),
            "loaded_dtype": self.loaded_dtype,
            "allocator": self.allocator.to_dict(),
            "os": self.os.to_dict(),
            "tile_asked": self.tile_asked,
            "tiled": dict(self.tiled) if self.tiled else None,
            "attention": dict(self.attention) if self.attention else None,
            **({"video": dict(self.video)} if self.video else {}),
            **({"traced": dict(self.traced)} if self.traced else {}),
            **({"follows_trace": dict(self.follows_trace)} if self.follows_trace else {}),
            **({"lifted": dict(self.lifted)} if self.lifted else {}),
            "op_bytes": self.op_bytes,
            "first_use": dict(self.first_use) if self.first_use else None,
            "warnings": list(self.warnings),
            "coefficients": self.coefficients,
        }


@dataclass(frozen=True)
class Budget:
    """``min(cap, floor(share × free))``, and which bound set it."""

    bytes: int
    #: ``share`` (share × free), ``cap``, or ``cap-unknown-free``.
    bound: str

    def __int__(self):
        return self.bytes


def _key_field(obj, name, where):
    if name not in obj:
        raise ValueError("%s: missing key '%s'" % (where, name))
    return obj[name]


def _slope_centi(text, key):
    s = str(text)
    whole, dot, frac = s.partition(".")
    if not whole.isdigit() or (dot and (not frac.isdigit() or len(frac) > 2)):
        raise ValueError("line %s: slope '%s' is not a decimal with at most two places" % (key, s))
    return int(whole) * 100 + int((frac + "00")[:2])


def _slope_text(centi):
    return "%d.%02d" % (centi // 100, centi % 100)


_SCHEMA = json.loads(_g.COEFFICIENTS_SCHEMA)
_INT_RANGE = {"uint": (0, _U64_MAX), "uint64": (0, _U64_MAX), "uint32": (0, (1 << 32) - 1), "uint8": (0, 255)}
_JSON_TYPE = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _shape_error(value, schema, at):
    """Why ``value`` does not have the shape ``schema`` gives it (vramfit's own schema of the file, generated into
    ``_generated.py``), or None. The subset of JSON Schema that schema uses: $ref, type, const, enum, pattern,
    format ranges of integers, minimum, properties, required, additionalProperties, items, minItems, maxItems,
    anyOf and oneOf."""
    if "$ref" in schema:
        schema = _SCHEMA["$defs"][schema["$ref"].rsplit("/", 1)[1]]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            errors = [_shape_error(value, s, at) for s in schema[key]]
            if all(errors):
                return errors[0]
    types = schema.get("type")
    if types is not None:
        types = types if isinstance(types, list) else [types]
        def fits(ty):
            if ty == "integer":
                return isinstance(value, int) and not isinstance(value, bool)
            if ty == "number":
                return isinstance(value, (int, float)) and not isinstance(value, bool)
            return isinstance(value, _JSON_TYPE[ty])
        if not any(fits(ty) for ty in types):
            return "%s: expected %s, found %s" % (at, " or ".join(types), json.dumps(value)[:40])
    if "const" in schema and value != schema["const"]:
        return "%s: expected %s" % (at, json.dumps(schema["const"]))
    if "enum" in schema and value not in schema["enum"]:
        return "%s: %s is not one of %s" % (at, json.dumps(value)[:40], ", ".join(map(str, schema["enum"])))
    if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
        return "%s: '%s' is not a decimal" % (at, value)
    if isinstance(value, int) and not isinstance(value, bool):
        low, high = _INT_RANGE.get(schema.get("format"), (None, None))
        low = max(low, schema["minimum"]) if low is not None and "minimum" in schema else schema.get("minimum", low)
        if (low is not None and value < low) or (high is not None and value > high):
            return "%s: %d is out of range" % (at, value)
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                return "%s: missing field '%s'" % (at, name)
        # vramfit reads a file in canonical form, so an object with named fields has no other field.
        extra = schema.get("additionalProperties", not props)
        required = schema.get("required", ())
        for name, v in value.items():
            sub = props.get(name, extra)
            # A field vramfit writes only when it has a value is never written as null.
            if sub is False or (v is None and name in props and name not in required):
                return "%s: unknown field '%s'" % (at, name)
            if isinstance(sub, dict):
                e = _shape_error(v, sub, "%s.%s" % (at, name))
                if e:
                    return e
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", len(value)):
            return "%s: %d items" % (at, len(value))
        for i, v in enumerate(value):
            e = _shape_error(v, schema.get("items", {}), "%s[%d]" % (at, i))
            if e:
                return e
    return None


def _check_pricer_facts(data, where):
    """What vramfit's loader checks of a file beyond its shape (``contract::load``'s ``validate``), in its words:
    a file the CLI refuses, the package refuses too."""
    for l in data["lines"]:
        at = "%s: lines[%s]" % (where, Coefficients._key(l, where))
        if l["kind"] not in ("fitted", "carried"):
            raise ValueError("%s: kind: a shipped line is fitted or carried (too-thin keys belong in `insufficient`)"
                             % at)
        if l["base_mib"] * MIB > _g.MAX_BYTES:
            raise ValueError("%s: base_mib: %d is too large" % (at, l["base_mib"]))
        rng = l.get("size_range")
        if rng is not None and (rng[0] == 0 or rng[0] > rng[1]):
            raise ValueError("%s: size_range: [%d, %d] is not a range of positive sizes" % (at, rng[0], rng[1]))
        if l["points"] != len(l["point_ids"]):
            raise ValueError("%s: points: %d but point_ids lists %d" % (at, l["points"], len(l["point_ids"])))
        env = l.get("envelope")
        if l["kind"] == "fitted" and (env is None or rng is None or not all(
                _is_fraction(env[f]) for f in ("slope", "base"))):
            raise ValueError("%s: envelope: a fitted line carries its exact envelope and measured size range" % at)
    keys = {Coefficients._key(l, where) for l in data["lines"]}
    for l in data.get("insufficient", []):
        key = Coefficients._key(l, where)
        if key in keys:
            raise ValueError("%s: insufficient[%s]: the key appears twice" % (where, key))
        keys.add(key)
    if data["unmeasured"]["rule"] != _g.UNMEASURED_RULE:
        raise ValueError("%s: unmeasured.rule: '%s' is not a rule this vramfit implements (%s)"
                         % (where, data["unmeasured"]["rule"], _g.UNMEASURED_RULE))
    if _exact(data["ratio_bound"]) < 1 or _exact(data["margin"]) < 0:
        raise ValueError("%s: margin / ratio_bound: the margin is at least 0 and the ratio bound at least 1" % where)
    seen = set()
    for tile in data.get("tiles", []):
        if tile == 0 or tile in seen:
            raise ValueError("%s: tiles: %d is zero or listed twice" % (where, tile))
        seen.add(tile)
    tiling = data.get("tiling")
    if tiling is not None:
        if tiling["default_host"] not in tiling["hosts"]:
            raise ValueError("%s: tiling.default_host: '%s' is not one of tiling.hosts" % (where, tiling["default_host"]))
        for name, host in sorted(tiling["hosts"].items()):
            if _exact(host["copies"]) < 0:
                raise ValueError("%s: tiling.hosts.%s.copies: a count of copies is at least 0" % (where, name))
    for p in (data.get("attention") or {}).get("platforms", []):
        if _exact(p["bytes_per_score"]) <= 0:
            raise ValueError("%s: attention.platforms[%s].bytes_per_score: more than 0 (0 would silently remove the "
                             "phase)" % (where, p["conv_backend"]))
    names = {}
    for family in sorted(data["registry"]):
        for name in [family] + list(data["registry"][family].get("models", [])):
            if _fold(name) in names:
                raise ValueError("%s: registry: '%s' names both '%s' and '%s'" % (where, name, names[_fold(name)], family))
            names[_fold(name)] = family


def _is_fraction(text):
    """Whether vramfit reads ``text`` as an exact fraction (``"452"``, ``"-13/10"``: integers of 128 bits, a
    denominator not 0), as an envelope is written."""
    parts = [_trim(p) for p in _trim(text).split("/", 1)]
    if not all(re.fullmatch(r"[+-]?[0-9]+", p) and abs(int(p)) < 1 << 127 for p in parts):
        return False
    return len(parts) == 1 or int(parts[1]) != 0


def _edit_distance(a, b):
    """The fewest one-character insertions, deletions, substitutions and swaps of two neighbours from a to b
    (each substring edited once), as the CLI counts them."""
    d = [[i + j if i == 0 or j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j - 1] + (a[i - 1] != b[j - 1]), d[i - 1][j] + 1, d[i][j - 1] + 1)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def _exact(text):
    """A decimal or fraction of the file (``"0.05"``, ``"13/10"``) as an exact Fraction."""
    return Fraction(str(text))


class Coefficients:
    """A coefficients file, indexed for pricing."""

    def __init__(self, data, source):
        where = source
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("%s: not a vramfit coefficients file (missing key 'format' = '%s')" % (where, FORMAT))
        if data.get("version") != VERSION:
            raise ValueError("%s: version %r; this reader reads version %d" % (where, data.get("version"), VERSION))
        problem = _shape_error(data, _SCHEMA, "file")
        if problem:
            raise ValueError("%s: %s" % (where, problem))
        _check_pricer_facts(data, where)
        self.source = source
        self.data = data
        self.lines = {}
        for i, l in enumerate(_key_field(data, "lines", where)):
            key = self._key(l, "%s: lines[%d]" % (where, i))
            if key in self.lines:
                raise ValueError("%s: line %s appears twice" % (where, key))
            rng = l.get("size_range")
            self.lines[key] = _Line(
                slope_centi=_slope_centi(_key_field(l, "slope", "%s: line %s" % (where, key)), key),
                base_mib=int(_key_field(l, "base_mib", "%s: line %s" % (where, key))),
                carried=l.get("kind") == "carried",
                size_range=(int(rng[0]), int(rng[1])) if rng else None,
                simulated_points=int(l.get("simulated_points", 0)),
                devices=tuple(l.get("devices", [])),
            )
        self.ordered = sorted(self.lines.items(), key=lambda kv: kv[0].sort_key())
        # The tiles and temporal tiles with a line of each (family, op): where
        # the monotone composition looks for a measured tile's price.
        self.line_tiles = {}
        self.line_temporal_tiles = {}
        for k in self.lines:
            if k.tile > 0:
                self.line_tiles.setdefault((k.vae, k.op), set()).add(k.tile)
            if k.temporal_tile:
                self.line_temporal_tiles.setdefault((k.vae, k.op), set()).add(k.temporal_tile)
        # A traced image shape's tile ends the traced rule's domain as a line's tile ends a line's: the monotone
        # composition's spatial corners.
        self.traced = data.get("traced")
        self.first_use = data.get("first_use", [])
        self.corner_tiles = {u: set(t) for u, t in self.line_tiles.items()}
        for shape in (self.traced or {}).get("shapes", []):
            if shape["tile"] > 0 and shape.get("temporal_tile") is None:
                self.corner_tiles.setdefault((shape["vae"], shape["op"]), set()).add(shape["tile"])
            if shape.get("temporal_tile"):
                self.line_temporal_tiles.setdefault((shape["vae"], shape["op"]), set()).add(shape["temporal_tile"])
        self.corner_tiles = {u: sorted(t) for u, t in self.corner_tiles.items()}
        self.line_tiles = {u: sorted(t) for u, t in self.line_tiles.items()}
        self.line_temporal_tiles = {u: sorted(t) for u, t in self.line_temporal_tiles.items()}
        self.registry = _key_field(data, "registry", where)
        self.families = sorted(self.registry)
        self.measured_families = {k.vae for k in self.lines}
        self.os_specific = data.get("os_specific", [])
        self.allocator_defaults = data.get("allocator_defaults", [])
        self.default_allocator = data.get("default_allocator", "native")
        self.legacy = data.get("legacy")
        self.tiling = data.get("tiling")
        self.attention = data.get("attention")
        self.video = data.get("video")

    @staticmethod
    def _key(l, where):
        fields = (_key_field(l, f, where) for f in ("vae", "op", "tile", "conv_backend", "allocator", "os", "dtype"))
        return LineKey(*fields, temporal_tile=l.get("temporal_tile"))

    # -- the query's key ----------------------------------------------------

    def family(self, name):
        wanted = _fold(_trim(str(name)))
        for fam in self.families:
            entry = self.registry[fam]
            if _fold(fam) == wanted or any(_fold(m) == wanted for m in entry.get("models", [])):
                return fam
        guess = self._nearest(name)
        if guess is not None:
            raise ValueError(_say("UNKNOWN_MODEL_GUESS", name=name, guess=guess, families=", ".join(self.families)))
        known = ", ".join(
            f if not self.registry[f].get("models") else "%s (%s)" % (f, ", ".join(self.registry[f]["models"]))
            for f in self.families
        )
        raise ValueError(_say("UNKNOWN_MODEL", name=name, known=known))

    def _nearest(self, name):
        """The registered name nearest to ``name`` by edit distance (ASCII case ignored), if a typo away: one edit
        per four characters of the name, at least one; a tie keeps the first (each family, then its models)."""
        asked = _fold(_trim(str(name)))
        best = None
        for fam in self.families:
            for known in [fam] + list(self.registry[fam].get("models", [])):
                d = _edit_distance(asked, _fold(known))
                if best is None or d < best[0]:
                    best = (d, known)
        return best[1] if best is not None and best[0] <= max(1, len(asked) // 4) else None

    def _effective_tile(self, tile, width, height):
        if tile != 0 and tile >= width and tile >= height:
            return 0
        if tile % TILE_STEP != 0:
            raise ValueError(_say("TILE_STEP", tile=tile, step=TILE_STEP, below=tile // TILE_STEP * TILE_STEP,
                                  above=(tile // TILE_STEP + 1) * TILE_STEP))
        return tile

    def _math_platform(self, key):
        if self.attention is None:
            return None
        return next((p for p in self.attention["platforms"] if p["conv_backend"] == key.conv_backend), None)

    def _attention(self, key, width, height, tile, batch, growth, line_rule, line_phase):
        """The attention phase on a math-kernel platform (None elsewhere): ``batch`` matrices (a video run's
        batch times its working set's latent frames) over the image or one ``tile``."""
        platform = self._math_platform(key)
        block = self.registry.get(key.vae, {}).get("attention")
        if platform is None or block is None:
            return None
        w, h = (width, height) if tile == 0 else (min(tile, width), min(tile, height))
        f = block["latent_factor"]
        sequence = (-(-w // f)) * (-(-h // f))
        per_score = Fraction(str(platform["bytes_per_score"]))
        scores_exact = per_score * sequence * sequence * batch * block["heads"]
        scores = -(-scores_exact.numerator // scores_exact.denominator)
        held = self.attention["held_tensors"] * batch * block["heads"] * block["head_dim"] * sequence * _ELEM[key.dtype]
        phase = scores + held + growth
        if max(scores, held, phase) > _U64:
            raise _TooLarge(_say("ATTENTION_TOO_LARGE", width=w, height=h, items=batch))
        limit = platform.get("wrong_output_at")
        return {
            "bytes_per_score": str(platform["bytes_per_score"]),
            "source": platform["source"],
            "sequence": sequence,
            "heads": block["heads"],
            "score_bytes": scores,
            "held_bytes": held,
            "phase_bytes": phase,
            "line_phase_bytes": line_phase,
            "line_rule": line_rule,
            "wrong_output": limit is not None and sequence * sequence >= limit,
        }

    def _tiling_host(self, host):
        t = self.tiling
        if t is None:
            if host is not None:
                raise ValueError(_say("NO_TILING_HOSTS", host=host))
            return None
        name = t["default_host"] if host is None else _trim(str(host))
        if name not in t["hosts"]:
            raise ValueError(_say("UNKNOWN_HOST", host=name, known=", ".join(sorted(t["hosts"]))))
        return name, t["hosts"][name], host is not None

    def _tile_on(self, key, width, height, batch, pixels, host):
        """A tiled query's derived inputs: (host, entry, given, tile pixels, copies bytes), or None."""
        if key.tile == 0:
            return None
        chosen = self._tiling_host(host)
        if chosen is None:
            return None
        name, entry, given = chosen
        t = key.tile
        tile_pixels = min(t, width) * min(t, height) * batch
        copies = Fraction(str(entry["copies"])) * 3 * _ELEM[key.dtype] * pixels
        copies_bytes = -(-copies.numerator // copies.denominator)
        if copies_bytes > _U64:
            raise _TooLarge(_say("COPIES_TOO_LARGE", pixels=pixels))
        return name, entry, given, tile_pixels, copies_bytes

    def _run_dtype(self, family, dtype, loaded, fp32):
        if fp32 is not None:
            if not self.registry.get(family, {}).get("fp32_switch", False):
                raise ValueError(_say("FP32_SWITCH", family=family))
            by_switch = "fp32" if fp32 else "fp16"
            f = "true" if fp32 else "false"
            if dtype is not None and dtype != by_switch:
                raise ValueError(_say("DTYPE_CONTRADICTS_FP32", dtype=dtype, fp32=f, runs=by_switch))
            return Detected(by_switch, "fp32 = %s (SD node rule)" % f)
        if dtype is not None:
            return Detected(dtype, "flag")
        if loaded is not None:
            return Detected(loaded, "the loaded dtype")
        raise ValueError(_say("NO_DTYPE"))

    def _platform_default(self, backend, os_):
        for d in self.allocator_defaults:
            if d.get("conv_backend") == backend and d.get("os") == os_:
                return Detected(d["allocator"], "platform default for %s on %s (policy)" % (backend, os_))
        return Detected(self.default_allocator, "nothing configured: PyTorch's default")

    def detect_allocator(self, backend, os_, env):
        """The allocator PyTorch would run, from its environment variables, else the platform default."""
        order = ([HIP_ALLOC_VAR] if backend == "miopen" else []) + list(ALLOC_VARS)
        for var in order:
            val = env.get(var)
            if val is None or not _trim(val):
                continue
            a = allocator_of_conf(val)
            if a is not None:
                return Detected(a, "%s=%s" % (var, val))
            d = self._platform_default(backend, os_)
            return Detected(d.value, "%s=%s names no allocator; %s" % (var, val, d.source))
        return self._platform_default(backend, os_)

    def _is_os_specific(self, backend, allocator):
        return any(o.get("conv_backend") == backend and o.get("allocator") in (None, allocator)
                   for o in self.os_specific)

    # -- pricing ------------------------------------------------------------

    def _legacy_at(self, key, width, height, batch):
        """The v1 estimate with the tile clamped to the image and never above the untiled figure."""
        l = self.legacy
        if l is None or key.dtype not in l.get("elem_bytes", {}):
            return None
        e = l["elem_bytes"][key.dtype]
        ks = l["k"].get(key.conv_backend) or l["k"].get(l.get("fallback_backend"))
        if ks is None:
            return None
        k = ks[key.op]
        untiled = width * height * batch * e * k
        if key.tile == 0:
            work = untiled
        else:
            area = min(key.tile, width) * min(key.tile, height)
            raw = Fraction(area * batch * e * k) * Fraction(str(l["tile_factor"]))
            work = min(-(-raw.numerator // raw.denominator), untiled)
        extra = l.get("fp32_extra_mib", {}).get(key.vae, 0) if key.dtype == "fp32" else 0
        total = work + extra * MIB
        return total if total <= _U64 else None

    def _growth(self, family, run, loaded):
        if _ELEM[run] <= _ELEM[loaded]:
            return 0
        params = self.registry.get(family, {}).get("params")
        if params is None:
            raise ValueError(_say("NO_WEIGHT_COUNT", loaded=loaded, run=run, family=family))
        return params * (_ELEM[run] - _ELEM[loaded])

    def _measured_line(self, key, pixels):
        candidates = []
        own = self.lines.get(key)
        if own is not None:
            candidates.append(("carried-line" if own.carried else "fitted-line", key, own))
        if key.os != "any":
            any_key = _replace(key, os="any")
            c = self.lines.get(any_key)
            if c is not None:
                candidates.append(("any-os-line", any_key, c))
        best = None
        for rule, k, c in candidates:
            b = self._line_price(k, c, pixels)
            if best is None or b > best[3]:
                best = (rule, k, c, b)
        return best

    def _line_price(self, key, coef, at):
        """What the measured line ``key`` prices at ``at``: its formula, or past its largest measured size the
        formula's price there grown as the family's traced shape for the same key grows, where that is higher
        (docs/traced.md, "Past the measured range")."""
        own = coef.at(at)
        past = self._past_range(key, coef, at)
        return own if past is None else max(own, past["bytes"])

    def _shape_of(self, key, tile):
        """The family's traced shape for ``key``'s op, dtype and temporal tile at spatial tile ``tile`` (None: no
        traced section, or no such shape)."""
        return next((s for s in (self.traced or {}).get("shapes", []) if (s["vae"], s["op"], s["dtype"], s["tile"],
                     s.get("temporal_tile")) == (key.vae, key.op, key.dtype, tile, key.temporal_tile)), None)

    def _past_range(self, key, coef, at):
        """The trace's growth past ``key``'s measured range where it prices above the line's formula (the
        answer's ``follows_trace``), else None."""
        if coef.size_range is None or self.traced is None or at <= coef.size_range[1]:
            return None
        end = coef.size_range[1]
        shape = self._shape_of(key, key.tile)
        if shape is None:
            return None
        slope, base = Fraction(shape["slope"]), Fraction(shape["base"])
        traced_at_end = max(0, _ceil(slope * end + base))
        traced_at = max(0, _ceil(slope * at + base))
        if traced_at_end > _U64 or traced_at > _U64:
            raise _TooLarge(_say("RESERVATION_TOO_LARGE"))
        if traced_at_end == 0:
            return None
        line_at_end = coef.at(end)
        scaled = -(-(line_at_end * traced_at) // traced_at_end)
        if scaled > _U64:
            raise _TooLarge(_say("RESERVATION_TOO_LARGE"))
        if scaled <= coef.at(at):
            return None
        tiles = str(shape["tile"]) if shape.get("temporal_tile") is None else "%df" % shape["temporal_tile"]
        return {
            "shape": "%s/%s/%s/%s" % (shape["vae"], shape["op"], tiles, shape["dtype"]),
            "measured_to": end,
            "line_bytes_at_end": line_at_end,
            "traced_at_end": traced_at_end,
            "traced_at": traced_at,
            "bytes": scaled,
        }

    def _follows_trace(self, rule, priced_by, coef, at, line_bytes, warnings):
        """The trace the pricing line followed past its measured range to set ``line_bytes`` (None where no line
        set them, or its formula did); its warning is added to ``warnings``."""
        if rule in ("traced", "video-estimate", "legacy-floor") or coef is None:
            return None
        past = self._past_range(priced_by, coef, at)
        if past is None or past["bytes"] != line_bytes:
            return None
        unit = "px of working set" if priced_by.temporal_tile is not None else "px"
        warnings.append(
            "%d %s lies past %s's largest measured size (%d %s), where %s's trace grows faster than the line: the "
            "line's %d B there grown as the trace grows (%d → %d traced B) is %d B"
            % (at, unit, priced_by, past["measured_to"], unit, priced_by.vae, past["line_bytes_at_end"],
               past["traced_at_end"], past["traced_at"], past["bytes"]))
        return past

    def _traced_on(self, key, at, tile_on=None):
        """The traced rule for ``key`` at ``at`` (pixels, or a video working set): its terms, or None where the
        family has no shape for the key, no class, or its class no calibration on the platform (docs/traced.md).
        A tile with no shape of its own (``tile_on``: one tile's pixels and the host's output copies) is the untiled
        shape at one tile plus the copies."""
        section = self.traced
        cls = self.registry.get(key.vae, {}).get("class")
        if section is None or cls is None:
            return None

        shape, copies = self._shape_of(key, key.tile), 0
        if shape is None and tile_on is not None and key.tile != 0:
            shape = self._shape_of(key, 0)
            at, copies = tile_on
        if shape is None:
            return None
        traced = max(0, _ceil(Fraction(shape["slope"]) * at + Fraction(shape["base"])))
        if traced > _U64:
            raise _TooLarge(_say("RESERVATION_TOO_LARGE"))

        def of_class(tile):
            return [c for c in section["calibrations"] if c["class"] == cls and c["op"] == key.op and c["tile"] == tile]

        def here(c):
            return c["conv_backend"] == key.conv_backend and c["allocator"] == key.allocator and c["os"] in (key.os, "any")
        tile = key.tile if of_class(key.tile) else 0
        found = [c for c in of_class(tile) if here(c) and c["dtype"] == key.dtype]
        if not found:
            # As the unmeasured rule: this platform's other dtypes, and every platform's calibration in this dtype.
            found = [c for c in of_class(tile) if here(c) or c["dtype"] == key.dtype]
        if not found:
            found = of_class(tile)  # nothing here nor in this dtype: every calibration of the class
        best = None
        for c in found:
            b = -(-(_slope_centi(c["slope"], key) * traced) // 100) + c["base_mib"] * MIB
            if b > _U64:
                raise _TooLarge(_say("RESERVATION_TOO_LARGE"))
            if best is None or b > best[1]:
                best = (c, b)
        if best is None:
            return None
        c, b = best
        b += copies
        if b > _U64:
            raise _TooLarge(_say("RESERVATION_TOO_LARGE"))
        lo, hi = shape["size_range"]
        tiles = str(shape["tile"]) if shape.get("temporal_tile") is None else "%df" % shape["temporal_tile"]
        return {
            "at": at,
            "unit": shape["unit"],
            "traced_bytes": traced,
            "bytes": b,
            "extrapolated": not lo <= at <= hi,
            "shape": "%s/%s/%s/%s" % (shape["vae"], shape["op"], tiles, shape["dtype"]),
            "shape_slope": shape["slope"],
            "shape_base": shape["base"],
            "size_range": [lo, hi],
            "calibration": "/".join(str(c[f]) for f in ("class", "op", "tile", "conv_backend", "allocator", "os",
                                                          "dtype")),
            "slope": c["slope"],
            "base_mib": c["base_mib"],
            "families": list(c["families"]),
            "points": c["points"],
            "tile_copies_bytes": copies,
            "margin": _exact_decimal(Fraction(str(section["margin"]))),
        }

    @staticmethod
    def _traced_warnings(key, traced):
        """What an answer priced by the traced rule says (the CLI's words)."""
        out = ["no line measured for %s on this platform: priced by the traced rule, its trace (%d B at %d %s) scaled "
               "by class %s's calibration on %s (%s B of demand per traced byte + %d MiB, margin %s)"
               % (key, traced["traced_bytes"], traced["at"],
                  "px" if traced["unit"] == "pixels" else "px of working set",
                  traced["calibration"].split("/")[0], ", ".join(traced["families"]), traced["slope"],
                  traced["base_mib"], traced["margin"])]
        if traced["extrapolated"]:
            lo, hi = traced["size_range"]
            out.append("%d lies outside the traced range of %s's shape (%d–%d): the trace is extrapolated"
                       % (traced["at"], key.vae, lo, hi))
        return out

    def _line_warnings(self, key, rule, priced_by, coef):
        """What an answer says about the line behind it (the CLI's order)."""
        out = []
        if rule == "unmeasured-rule" and priced_by is not None and priced_by.dtype != key.dtype:
            out.append(
                "%s, measured in %s on this platform, sets the floor for %s: a run dtype is never priced below "
                "another dtype's measured line of the same VAE (the demand does not follow the element size)"
                % (priced_by, priced_by.dtype, key.dtype))
        if key.vae not in self.measured_families and rule == "traced":
            out.append(
                "nothing has been measured for the %s VAE: this price is its architecture's trace scaled by what was "
                "measured on other families of its class, not a measurement" % key.vae)
        elif key.vae not in self.measured_families:
            out.append(
                "nothing has been measured for the %s VAE (no line for any op, backend or dtype): this is the "
                "previous estimator's guess, not a measurement" % key.vae)
        if coef is not None and coef.simulated_points > 0:
            out.append(
                "%s rests on %d point(s) made on a simulated device (ingested with --allow-simulated): a memory "
                "model's figures, not measurements" % (priced_by or key, coef.simulated_points))
        if rule == "any-os-line":
            out.append("priced by %s, measured without a published OS: that line is a lower bound for every OS"
                       % priced_by)
        return out

    def _temporal_tile(self, family, frames, temporal_tile):
        """The key's temporal tile: None for an image family, else the one asked or the walk's default."""
        facts = self.registry.get(family, {}).get("video")
        if facts is None:
            if frames != 1:
                raise ValueError(_say("IMAGE_FRAMES", frames=frames, family=family))
            if temporal_tile:
                raise ValueError(_say("IMAGE_TEMPORAL_TILE", tt=temporal_tile, family=family))
            return None
        if facts["walk"] == "causal":
            if temporal_tile:
                raise ValueError(_say("CAUSAL_TEMPORAL_TILE", tt=temporal_tile, family=family, frames=facts["frames"]))
            return 0
        if facts["walk"] == "all":
            if temporal_tile:
                raise ValueError(_say("WHOLE_CLIP_TEMPORAL_TILE", tt=temporal_tile, family=family))
            return 0
        t = temporal_tile if temporal_tile is not None else facts["frames"]
        # A temporal tile at least the clip does nothing: the whole clip.
        return 0 if t >= frames else t

    @staticmethod
    def _working_frames(facts, frames, temporal_tile):
        if facts["walk"] == "causal":
            span = max(facts["frames"], 1)
        elif temporal_tile == 0:
            span = frames
        else:
            span = temporal_tile
        return max(min(span, frames), 1)

    @staticmethod
    def _estimate_bytes(e, facts, width, height, frames, batch, tile, temporal_tile, elem, key):
        tiled = tile != 0 or temporal_tile != 0
        if e["when"] == "tiled" and not tiled or e["when"] == "untiled" and tiled:
            return None
        if frames < e["min_clip"] or (e["max_clip"] and frames > e["max_clip"]):
            return None
        counted = {
            "one": 1,
            "clip": frames,
            "latent": (frames - 1) // max(facts["temporal"], 1) + 1,
            "tile": (max(facts["frames"], 1) if facts["walk"] == "causal"
                     else frames if temporal_tile == 0 else temporal_tile),
        }[e["frames"]]
        counted = max(counted, e["min_frames"])
        if e["max_frames"]:
            counted = min(counted, e["max_frames"])
        area = width * height if tile == 0 else min(tile, width) * min(tile, height)
        factor = Fraction(str(e["tile_factor"])) if tile else Fraction(1)
        work = Fraction(str(e["per_element"])) * factor * elem * area * counted * batch
        clip = Fraction(str(e["clip_copies"])) * 3 * elem * width * height * frames * batch
        total = e["base_mib"] * MIB + _ceil(work) + _ceil(clip)
        if total > _U64:
            raise _TooLarge(_say("ESTIMATE_TOO_LARGE", host=e["host"], key=key))
        return total

    def _reserve_video(self, key, facts, width, height, frames, batch, tile, growth):
        """A video key's price: (rule, priced_by, coef, line_bytes, legacy, total, video terms, traced terms)."""
        if frames <= 0:
            raise ValueError(_say("FRAMES_POSITIVE"))
        elem = _ELEM[key.dtype]
        wf = self._working_frames(facts, frames, key.temporal_tile)
        area = width * height if tile == 0 else min(tile, width) * min(tile, height)
        working_set = area * wf * batch
        copies_text = "0" if self.video is None else str(self.video["%s_clip_copies" % key.op])
        clip_bytes = _ceil(Fraction(copies_text) * 3 * elem * width * height * frames * batch)
        if working_set > _U64 or clip_bytes > _U64:
            raise _TooLarge(_say("CLIP_TOO_LARGE", width=width, height=height, frames=frames, batch=batch))
        estimate = None
        measured = self._measured_line(key, working_set)
        legacy = None
        traced = None
        if measured is not None:
            rule, priced_by, coef, line_bytes = measured
            total = line_bytes + clip_bytes
        else:
            best = None
            platform_measured = False
            for k, c in self.ordered:
                if k.vae != key.vae or k.op != key.op or k.tile != 0:
                    continue
                same_platform = (k.conv_backend == key.conv_backend and k.allocator == key.allocator
                                 and k.os in (key.os, "any"))
                if k.dtype == key.dtype or same_platform:
                    platform_measured = platform_measured or (k.dtype == key.dtype and same_platform)
                    b = self._line_price(k, c, working_set)
                    if best is None or b > best[2]:
                        best = (k, c, b)
            priced_by, coef, line_bytes = best if best is not None else (None, None, None)
            line_total = None if best is None else best[2] + clip_bytes
            rule, total = ("unmeasured-rule", line_total) if best is not None else (None, None)
            if not platform_measured:
                # The traced rule raises the guess; a host's estimate floors it in turn.
                traced = self._traced_on(key, working_set)
                if traced is not None and traced["bytes"] + clip_bytes + growth > _U64:
                    raise _TooLarge(_say("RESERVATION_TOO_LARGE"))
                if traced is not None and (total is None or traced["bytes"] + clip_bytes > total):
                    rule, total = "traced", traced["bytes"] + clip_bytes
                    priced_by, coef, line_bytes = None, None, None
            # A platform that measured this family, op and dtype at another temporal tile is measured: its lines
            # price the working set and no host's guess is a floor there.
            for e in [] if platform_measured else (self.video or {}).get("estimates", []):
                if e["vae"] != key.vae or e["op"] != key.op:
                    continue
                b = self._estimate_bytes(e, facts, width, height, frames, batch, tile, key.temporal_tile, elem, key)
                if b is not None and (estimate is None or b > estimate["bytes"]):
                    estimate = {"host": e["host"], "bytes": b, "source": e["source"]}
            if not platform_measured:
                if estimate is not None and (total is None or estimate["bytes"] > total):
                    rule, total = "video-estimate", estimate["bytes"]
            if rule is None:
                legacy = self._legacy_at(_replace(key, tile=0), working_set, 1, 1)
                if legacy is None:
                    raise ValueError(_say("NO_VIDEO_PRICE", key=key))
                rule, total = "legacy-floor", legacy
        if total > _U64:
            raise _TooLarge(_say("RESERVATION_TOO_LARGE"))
        terms = {
            "frames": frames,
            "tile": tile,
            "temporal_tile": key.temporal_tile,
            "walk": facts["walk"],
            "temporal_compression": facts["temporal"],
            "working_frames": wf,
            "working_set": working_set,
            "clip_copies": copies_text,
            "clip_bytes": clip_bytes,
            "estimate": estimate,
        }
        return rule, priced_by, coef, line_bytes, legacy, total, terms, traced

    def reserve(self, model, op, width, height, *, frames=1, tile=0, temporal_tile=None, warm=False, **query):
        """Prices one query; see :func:`reserve`. The query's own rules price it, then the smaller requests it
        contains where a rule's domain ends (docs/DESIGN.md, "Monotone composition"): the highest sets the
        price, so a larger request never reserves less; then the platform's first use is added unless ``warm``."""
        if not isinstance(warm, bool):
            raise ValueError("warm: expected True or False, got %r" % (warm,))
        r = self._composed(model, op, width, height, frames=frames, tile=tile, temporal_tile=temporal_tile, **query)
        return self._with_first_use(r, warm)

    def first_use_for(self, backend, allocator, os):
        """The declared first use a platform takes, and how it matched (``own``, ``other-os``, ``other-allocator``):
        its own term, else the largest borrowed from another OS, then another allocator of its backend; None where
        none is declared for the backend (docs/fit.md, "First use")."""
        tiers = {"own": 0, "other-os": 1, "other-allocator": 2}
        best = None
        for t in self.first_use:
            if t["conv_backend"] != backend:
                continue
            if t["allocator"] != allocator:
                m = "other-allocator"
            elif t["os"] == "any" or (t["os"] == os and os != "any"):
                m = "own"
            else:
                m = "other-os"
            if best is None or tiers[m] < tiers[best[1]] or (m == best[1] and t["mib"] > best[0]["mib"]):
                best = (t, m)
        return best

    def _with_first_use(self, r, warm):
        """``r`` with its platform's first use: added once unless ``warm``, and said where borrowed or unknown."""
        here = "%s/%s/%s" % (r.line.conv_backend, r.allocator.value, r.os.value)
        found = self.first_use_for(r.line.conv_backend, r.allocator.value, r.os.value)
        term = None
        warnings = list(r.warnings)
        if found is not None:
            t, matched = found
            term = {
                "declared_for": "%s/%s/%s" % (t["conv_backend"], t["allocator"], t["os"]),
                "matched": matched,
                "mib": t["mib"],
                "bytes": t["mib"] * MIB,
                "included": not warm,
                "source": t["source"],
            }
        if not warm and term is None:
            warnings.append(_say("FIRST_USE_UNKNOWN", here=here))
        elif not warm and term["matched"] != "own":
            warnings.append(_say("FIRST_USE_BORROWED", here=here, mib=term["mib"], there=term["declared_for"]))
        total = r.bytes + (term["bytes"] if term is not None and term["included"] else 0)
        if total > _U64:
            raise _TooLarge(_say("RESERVATION_TOO_LARGE"))
        return _replace(r, bytes=total, mib=-(-total // MIB), op_bytes=r.bytes, first_use=term, warnings=warnings)

    def _composed(self, model, op, width, height, *, frames=1, tile=0, temporal_tile=None, **query):
        """The op's own price: its rules, then the monotone composition."""
        asked = {"width": width, "height": height, "tile": tile, "frames": frames, "temporal_tile": temporal_tile}
        own = self._ambiguity(model, self._reserve_one(model, op, **asked, **query))
        best = None
        for corner in self._corners(own, asked):
            try:
                r = self._reserve_one(model, op, **corner, **query)
            except _TooLarge as e:
                raise _TooLarge(_say("CONTAINS_TOO_LARGE", width=width, height=height, batch=query.get("batch", 1),
                                     error=e)) from None
            except ValueError:
                continue  # a smaller request no rule can price sets nothing
            if r.bytes > (own if best is None else best[1]).bytes:
                best = (corner, r)
        if best is None:
            return own
        corner, by = best
        lifted = {
            "width": corner["width"],
            "height": corner["height"],
            "frames": corner["frames"],
            "tile": by.video["tile"] if by.video else by.line.tile,
            "temporal_tile": by.video["temporal_tile"] if by.video else None,
            "rule": by.rule,
            "priced_by": by.priced_by.to_dict() if by.priced_by else None,
            "bytes": by.bytes,
            "extrapolated": by.extrapolated,
            "own_rule": own.rule,
            "own_bytes": own.bytes,
        }
        clip = "" if lifted["temporal_tile"] is None else " × %d frames, temporal tile %d" % (
            lifted["frames"], lifted["temporal_tile"])
        warning = ("a smaller request, %dx%d%s at tile %d, is priced higher (%d B, %s) than this one's own %s (%d B): "
                   "a larger request never reserves less, so this one reserves that"
                   % (lifted["width"], lifted["height"], clip, lifted["tile"], by.bytes, _RULE_TEXT[by.rule],
                      _RULE_TEXT[own.rule], own.bytes))
        return _replace(own, bytes=by.bytes, mib=-(-by.bytes // MIB), rule="monotone-floor", lifted=lifted,
                           warnings=list(own.warnings) + [warning])

    def _ambiguity(self, model, r):
        """``r`` with the warning of a name people also use for another VAE first, where ``model`` is one."""
        family = self.family(model)
        asked = _fold(_trim(str(model)))
        for name, words in sorted(self.registry[family].get("ambiguous", {}).items()):
            if _fold(name) == asked:
                warning = _say("AMBIGUOUS_NAME", name=name, family=family, words=words)
                return _replace(r, warnings=[warning] + list(r.warnings))
        return r

    def _corners(self, own, asked):
        """The smaller requests where some rule's domain ends inside the query, in vramfit's order."""
        w, h = asked["width"], asked["height"]
        fam, op = own.line.vae, own.line.op
        out = []
        if own.video is None:
            ends = self.corner_tiles.get((fam, op), [])
            out.extend(dict(asked, tile=t) for t in _spatial_corners(own.line.tile, w, h, ends))
            if own.line.tile != 0:
                out.append(_shrunk_to_tile(asked, own.line.tile))
            return out
        facts = self.registry[fam]["video"]
        frame_corners = {asked["frames"]}
        for e in (self.video or {}).get("estimates", []):
            if e["vae"] == fam and e["op"] == op and 1 <= e["max_clip"] < asked["frames"]:
                frame_corners.add(e["max_clip"])
        measured = self.line_temporal_tiles.get((fam, op), [])
        for frames in sorted(frame_corners):
            at = dict(asked, frames=frames)
            times = [at] + (_temporal_corners(facts, at, measured) if facts["walk"] == "tiles" else [])
            for t in times:
                if own.video["tile"] == 0:
                    out.extend(dict(t, tile=c) for c in _spatial_corners(0, w, h, []))
                else:
                    out.append(_shrunk_to_tile(t, own.video["tile"]))
                out.append(t)
        return [c for c in out if c != asked]

    def _reserve_one(self, model, op, width, height, *, dtype=None, loaded_dtype=None, batch=1, tile=0,
                     backend="cudnn", allocator="auto", os="auto", fp32=None, env=None, host=None, frames=1,
                     temporal_tile=None):
        """One query priced by its own rules (before the monotone composition)."""
        _check_query(width, height, batch, tile, frames, temporal_tile, env)
        op = _spelling("op", _OPS, op)
        backend = _spelling("conv_backend", _BACKENDS, backend)
        run_given = None if dtype is None else _spelling("dtype", _DTYPES, dtype)
        loaded_given = None if loaded_dtype is None else _spelling("dtype", _DTYPES, loaded_dtype)
        alloc_choice = None if _trim(str(allocator)) == "auto" else _allocator(allocator)
        os_choice = None if _trim(str(os)) == "auto" else _spelling("os", _OSES, os)
        env = _os.environ if env is None else env

        tile_priced = self._effective_tile(tile, width, height)
        family = self.family(model)
        key_tt = self._temporal_tile(family, frames, temporal_tile)
        run = self._run_dtype(family, run_given, loaded_given, fp32)
        if os_choice is not None:
            os_d = Detected(os_choice, "flag")
        else:
            this_os = _host_os()
            if this_os is None:
                raise ValueError(_say("NO_OS"))
            os_d = Detected(this_os, "host")
        if alloc_choice is not None:
            alloc_d = Detected(alloc_choice, "flag")
        else:
            alloc_d = self.detect_allocator(backend, os_d.value, env)
        key_os = os_d.value if self._is_os_specific(backend, alloc_d.value) else "any"
        key_tile = tile_priced if key_tt is None else 0  # a video line's spatial tile is in its working set
        key = LineKey(family, op, key_tile, backend, alloc_d.value, key_os, run.value, temporal_tile=key_tt)

        pixels = width * height * batch
        if pixels > MAX_PIXELS:
            raise _TooLarge(_say("TOO_LARGE", width=width, height=height, batch=batch))
        loaded = loaded_given or run.value
        growth = self._growth(family, run.value, loaded)
        if key_tt is not None:
            return _answer_video(self, key, width, height, frames, batch, tile, tile_priced, growth, pixels, run,
                                      loaded, alloc_d, os_d)
        tile_on = self._tile_on(key, width, height, batch, pixels, host)
        measured = self._measured_line(key, pixels)
        derived = False
        traced = None
        if measured is None and tile_on is not None:
            # The derived tile: the platform's untiled line at one tile.
            untiled = self._measured_line(_replace(key, tile=0), tile_on[3])
            if untiled is not None:
                measured = ("derived-tile",) + tuple(untiled[1:])
                derived = True
        legacy = None
        if measured is not None:
            rule, priced_by, coef, line_bytes = measured
        else:
            # Every platform's line of this (vae, op, tile, dtype), and this
            # platform's lines of the same VAE, op and tile in other dtypes
            # (the demand does not follow the element size); ties go to the
            # first key in key order. For a tile, also each such untiled line
            # priced as a derived tile (a measured tile keeps a tie).
            def candidates(tile):
                for k, c in self.ordered:
                    if k.vae != key.vae or k.op != key.op or k.tile != tile:
                        continue
                    same_platform = (k.conv_backend == key.conv_backend and k.allocator == key.allocator
                                     and k.os in (key.os, "any"))
                    if k.dtype == key.dtype or same_platform:
                        yield k, c
            best = None
            for k, c in candidates(key.tile):
                b = self._line_price(k, c, pixels)
                if best is None or b > best[0]:
                    best = (b, b, k, c, False)
            if tile_on is not None:
                for k, c in candidates(0):
                    b = self._line_price(k, c, tile_on[3])
                    if best is None or b + tile_on[4] > best[0]:
                        best = (b + tile_on[4], b, k, c, True)
            # The traced rule raises the guess (or answers where nothing has); the legacy value floors both.
            traced = self._traced_on(key, pixels, None if tile_on is None else tile_on[3:5])
            if traced is not None and traced["bytes"] + growth > _U64:
                raise _TooLarge(_say("RESERVATION_TOO_LARGE"))
            if best is None:
                rule, priced_by, coef, line_bytes, guess = None, None, None, None, None
            else:
                total_b, line_bytes, priced_by, coef, derived = best
                rule, guess = "unmeasured-rule", total_b + growth
            if traced is not None and (guess is None or traced["bytes"] + growth > guess):
                rule, priced_by, coef, line_bytes, derived = "traced", None, None, None, False
                guess = traced["bytes"] + growth
            legacy = self._legacy_at(key, width, height, batch)
            if guess is None and legacy is None:
                raise ValueError(_say("NO_IMAGE_PRICE", key=key, vae=key.vae, op=key.op, tile=key.tile, dtype=key.dtype))
            # Where the policy lifts the legacy floor off traced prices, a query the traced rule prices is not
            # floored, whichever guess is higher (else a price falls where the trace overtakes a borrowed line).
            lifted = traced is not None and (self.traced or {}).get("lifts_legacy_floor") is not None
            if legacy is not None and (guess is None or legacy > guess) and not lifted:
                rule = "legacy-floor"
        copies = tile_on[4] if derived else 0
        if rule == "legacy-floor":
            total = legacy
        elif rule == "traced":
            total = traced["bytes"] + growth
        else:
            total = line_bytes + copies + growth
        if rule in ("unmeasured-rule", "legacy-floor", "traced") and key.tile > 0:
            # A guess for a tile never prices above what a measured line of this platform prices a larger tile (or
            # no tile) of the same image: the lowest such line.
            cap = None
            larger = [t for t in self.line_tiles.get((key.vae, key.op), []) if key.tile < t < max(width, height)]
            for t in larger + [0]:
                m = self._measured_line(_replace(key, tile=t), pixels)
                if m is not None and (cap is None or m[3] < cap[3]):
                    cap = m
            if cap is not None and cap[3] + growth < total:
                rule, priced_by, coef, line_bytes = ("measured-cap",) + tuple(cap[1:])
                derived, total = False, cap[3] + growth
        if total > _U64:
            raise _TooLarge(_say("RESERVATION_TOO_LARGE"))
        tiled = None
        if derived:
            name, entry, given, tile_pixels, copies_bytes = tile_on
            tiled = {
                "host": {"value": name, "from": "flag" if given else "the coefficients' default host"},
                "copies": str(entry["copies"]),
                "copies_source": entry["source"],
                "tile_pixels": tile_pixels,
                "tile_bytes": line_bytes,
                "copies_bytes": copies_bytes,
            }
        at = tiled["tile_pixels"] if tiled else pixels

        size_range = coef.size_range if coef is not None else None
        extrapolated = rule != "legacy-floor" and size_range is not None and not (
            size_range[0] <= at <= size_range[1])
        tile_asked = tile if tile != key.tile else None
        warnings = []
        if tile_asked is not None:
            warnings.append("tile %d covers the whole %dx%d image: tiling does nothing, so it is priced untiled"
                            % (tile, width, height))
        if extrapolated:
            warnings.append("%d px lies outside the measured range of %s (%d–%d px): the line is extrapolated"
                            % (at, priced_by, size_range[0], size_range[1]))
        if rule in ("unmeasured-rule", "legacy-floor"):
            warnings.append("no line measured for %s: priced by the %s" % (key, _RULE_TEXT[rule]))
        if rule == "traced":
            warnings.extend(self._traced_warnings(key, traced))
        warnings.extend(self._line_warnings(key, rule, priced_by, coef))
        attention = self._attention(key, width, height, key.tile, batch, growth, rule, total)
        final_rule, final = self._phase(key, attention, rule, total, warnings)
        follows = self._follows_trace(rule, priced_by, coef, at, line_bytes, warnings)
        return self._reservation(
            final, coef,
            rule=final_rule,
            line=key,
            priced_by=priced_by,
            pixels=pixels,
            line_bytes=line_bytes,
            weight_growth_bytes=growth,
            legacy_bytes=legacy,
            extrapolated=extrapolated,
            size_range=size_range,
            run_dtype=run,
            loaded_dtype=loaded,
            allocator=alloc_d,
            os=os_d,
            tile_asked=tile_asked,
            tiled=tiled,
            attention=attention,
            video=None,
            traced=traced,
            follows_trace=follows,
            warnings=warnings,
        )

    def _phase(self, key, attention, rule, line_phase, warnings):
        """The larger of the line phase and the attention phase (rule, bytes), for the image and the video paths;
        warns where one attention matrix reaches the platform's wrong-output size."""
        if attention is None:
            return rule, line_phase
        if attention["wrong_output"]:
            warnings.append(
                "one attention matrix here has %d² = %d elements, at or past %d where %s's SDPA silently returns "
                "wrong output: tile the decode (plan does)"
                % (attention["sequence"], attention["sequence"] ** 2, self._math_platform(key)["wrong_output_at"],
                   key.conv_backend))
        if attention["phase_bytes"] > line_phase:
            return "attention-phase", attention["phase_bytes"]
        return rule, line_phase

    def _reservation(self, final, coef, **fields):
        """A :class:`Reservation` of ``final`` bytes: the fields that follow from the total and from the line that
        priced it (``coef``, None for an estimate) are filled in here, once, for the image and the video paths."""
        return Reservation(
            bytes=final,
            mib=-(-final // MIB),
            op_bytes=final,
            slope=_slope_text(coef.slope_centi) if coef is not None else None,
            base_mib=coef.base_mib if coef is not None else None,
            measured_on=list(coef.devices) if coef is not None else [],
            coefficients=self.source,
            **fields,
        )


def _ceil(f):
    return -(-f.numerator // f.denominator)


_U32 = (1 << 32) - 1
_I128 = (1 << 127) - 1


def _integer(name, v):
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError("%s: expected an integer, got %r" % (name, v))
    return v


def _check_query(width, height, batch, tile, frames, temporal_tile, env):
    """The CLI's refusals of a query's numbers, in its words (its size parser's, and clap's for the flags), and
    the Python-only ones (a wrong type, an environment value that is not text)."""
    for name, v in (("width", width), ("height", height), ("batch", batch), ("tile", tile), ("frames", frames)):
        _integer(name, v)
    if temporal_tile is not None:
        _integer("temporal_tile", temporal_tile)
    for what, v in (("width", width), ("height", height)):
        if not 0 < v <= _U64:
            raise ValueError("size '%dx%d': %s must be a positive integer (digits only)" % (width, height, what))
    for flag, v in (("--tile <TILE>", tile), ("--temporal-tile <FRAMES>", temporal_tile)):
        if v is not None and not 0 <= v <= _U32:
            raise ValueError("invalid value '%d' for '%s': %d is not in 0..=%d" % (v, flag, v, _U32))
    for flag, v in (("--batch <BATCH>", batch), ("--frames <FRAMES>", frames)):
        if v > _U64:
            raise ValueError("invalid value '%d' for '%s': number too large to fit in target type" % (v, flag))
    if batch < 1:
        raise ValueError(_say("BATCH_POSITIVE"))
    if frames < 0:
        raise ValueError(_say("FRAMES_POSITIVE"))
    if env is not None:
        if not hasattr(env, "items"):
            raise ValueError("env: expected a mapping of environment names to values (like os.environ), got %s"
                            % type(env).__name__)
        for k, v in env.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ValueError("env: %r = %r: the environment holds text names and values" % (k, v))


_MAX_TILE = (1 << 32) - 1


def _tile_below(n):
    """The largest tile edge (a multiple of 8 that a tile field holds) strictly below ``n``, or None."""
    t = min((n - 1) // TILE_STEP * TILE_STEP, _MAX_TILE // TILE_STEP * TILE_STEP)
    return t if t >= TILE_STEP else None


def _spatial_corners(tile, w, h, measured):
    """The tiles below ``tile`` (0: untiled) that still tile the image and end a domain: each measured tile,
    and the largest tile with no line."""
    widest = _tile_below(max(w, h))
    if widest is None:
        return []
    limit = widest if tile == 0 else min(widest, tile - TILE_STEP)
    out = [t for t in measured if 0 < t <= limit]
    if tile == 0 or tile in measured:
        t = limit
        while t >= TILE_STEP and t in measured:
            t -= TILE_STEP
        if t >= TILE_STEP:
            out.append(t)
    return out


def _shrunk_to_tile(q, tile):
    """The request with its image cut to one tile, which then covers it."""
    return dict(q, width=min(q["width"], tile), height=min(q["height"], tile), tile=0)


def _temporal_corners(facts, q, measured):
    """The temporal tiles below a video request's that end a domain, and its clip cut to one temporal tile."""
    frames = q["frames"]
    t = q["temporal_tile"] if q["temporal_tile"] is not None else facts["frames"]
    tt = 0 if t >= frames else t
    shortest_clip = frames - 1
    if shortest_clip > _MAX_TILE:
        return []
    limit = shortest_clip if tt == 0 else min(shortest_clip, tt - 1)
    out = [dict(q, temporal_tile=m) for m in measured if 1 <= m <= limit]
    if tt == 0 or tt in measured:
        t = limit
        while t >= 1 and t in measured:
            t -= 1
        if t >= 1:
            out.append(dict(q, temporal_tile=t))
    if tt != 0:
        out.append(dict(q, frames=tt, temporal_tile=0))
    return out


def _answer_video(self, key, width, height, frames, batch, tile, tile_priced, growth, pixels, run, loaded, alloc_d,
                  os_d):
    """A video query's :class:`Reservation` (see ``Coefficients.reserve``)."""
    facts = self.registry[key.vae]["video"]
    rule, priced_by, coef, line_bytes, legacy, total, terms, traced = self._reserve_video(
        key, facts, width, height, frames, batch, tile_priced, growth)
    final = total + growth
    if final > _U64:
        raise _TooLarge(_say("RESERVATION_TOO_LARGE"))
    # A mid-block attention runs per latent frame of the working set.
    latent = (terms["working_frames"] - 1) // max(facts["temporal"], 1) + 1
    if batch * latent > _U64:
        raise _TooLarge(_say("RESERVATION_TOO_LARGE"))
    attention = self._attention(key, width, height, tile_priced, batch * latent, growth, rule, final)
    size_range = coef.size_range if coef is not None else None
    at = terms["working_set"]
    extrapolated = rule not in ("legacy-floor", "video-estimate") and size_range is not None and not (
        size_range[0] <= at <= size_range[1])
    tile_asked = tile if tile != tile_priced else None
    warnings = []
    if tile_asked is not None:
        warnings.append("tile %d covers the whole %dx%d image: tiling does nothing, so it is priced untiled"
                        % (tile, width, height))
    if extrapolated:
        warnings.append("%d px lies outside the measured range of %s (%d–%d px): the line is extrapolated"
                        % (at, priced_by, size_range[0], size_range[1]))
    if rule == "video-estimate":
        warnings.append("no line measured for %s: priced by %s's published video estimate (its source: `estimate`)"
                        % (key, terms["estimate"]["host"]))
    elif rule in ("unmeasured-rule", "legacy-floor"):
        warnings.append("no line measured for %s: priced by the %s" % (key, _RULE_TEXT[rule]))
    if rule == "traced":
        warnings.extend(self._traced_warnings(key, traced))
    warnings.extend(self._line_warnings(key, rule, priced_by, coef))
    final_rule, final = self._phase(key, attention, rule, final, warnings)
    follows = self._follows_trace(rule, priced_by, coef, at, line_bytes, warnings)
    return self._reservation(
        final, coef,
        rule=final_rule,
        line=key,
        priced_by=priced_by,
        pixels=pixels,
        line_bytes=line_bytes,
        weight_growth_bytes=growth,
        legacy_bytes=legacy,
        extrapolated=extrapolated,
        size_range=size_range,
        run_dtype=run,
        loaded_dtype=loaded,
        allocator=alloc_d,
        os=os_d,
        tile_asked=tile_asked,
        tiled=None,
        attention=attention,
        video=terms,
        traced=traced,
        follows_trace=follows,
        warnings=warnings,
    )


def _host_os():
    if sys.platform.startswith("linux"):
        return "linux"
    if sys.platform in ("win32", "cygwin"):
        return "windows"
    if sys.platform == "darwin":
        return "macos"
    return None


def load(path):
    """Loads a coefficients file (any ``fits/vae.json`` vramfit wrote). A file that cannot be read, is not
    UTF-8 JSON, or is not a coefficients file raises ``ValueError`` naming it; a ``path`` that is not a path
    raises ``TypeError``."""
    if not isinstance(path, (str, bytes)) and not hasattr(path, "__fspath__"):
        raise TypeError("coefficients: expected a path or a Coefficients, got %s" % type(path).__name__)
    try:
        with open(path, "r", encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise ValueError("%s: cannot read the coefficients file: %s" % (path, e.strerror or e)) from None
    except ValueError as e:  # JSON and UTF-8 errors alike
        raise ValueError("%s: not a vramfit coefficients file (not valid UTF-8 JSON: %s)" % (path, e)) from None
    return Coefficients(data, str(path))


def _coefficients_of(coefficients):
    """What ``coefficients=`` names: None for the bundled copy, a :class:`Coefficients`, or a path to load."""
    if coefficients is None:
        return bundled()
    if isinstance(coefficients, Coefficients):
        return coefficients
    return load(coefficients)


_BUNDLED = None


def bundled():
    """The coefficients shipped inside this package (a copy of vramfit's ``fits/vae.json``)."""
    global _BUNDLED
    if _BUNDLED is None:
        here = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "vae.json")
        c = load(here)
        c.source = "bundled fits/vae.json (vramfit %s)" % __version__
        _BUNDLED = c
    return _BUNDLED


def reserve(model, op, width, height, *, dtype=None, loaded_dtype=None, batch=1, tile=0, backend="cudnn",
            allocator="auto", os="auto", fp32=None, coefficients=None, env=None, host=None, frames=1,
            temporal_tile=None, warm=False):
    """What this VAE decode or encode reserves, as ``vramfit reserve`` answers.

    ``model`` is a family (``sd``) or a model name (``sdxl``); ``op`` is
    ``decode`` or ``encode``; ``width`` × ``height`` is the image (decoded,
    or encoded). ``dtype`` is the dtype the VAE runs in (``fp16``, ``bf16``,
    ``fp32``, PyTorch's names, or a ``torch.dtype``); ``loaded_dtype`` the
    dtype its weights are loaded in (a narrower load grows by the cast);
    ``fp32`` is the SD nodes' switch instead of ``dtype``. ``allocator`` is
    ``auto`` (read ``PYTORCH_ALLOC_CONF`` / ``PYTORCH_CUDA_ALLOC_CONF`` /
    ``PYTORCH_HIP_ALLOC_CONF`` from ``env``, default ``os.environ``, as
    PyTorch reads them), a name, or a conf string; ``os`` is ``auto`` (this
    host) or ``linux`` / ``windows`` / ``macos``. ``coefficients`` is a
    :class:`Coefficients` (see :func:`load`) or a path to one; default: the
    bundled copy.
    ``tile`` is a tile edge (a multiple of 8; 0 untiled); a tile with no
    line of its own is priced from its platform's untiled line at one tile
    plus ``host``'s copies of the output (``diffusers`` by default,
    ``invokeai-flux``, ``comfyui``: the coefficients' ``tiling.hosts``).
    ``frames`` is a video VAE's clip length (1 for an image) and
    ``temporal_tile`` its temporal tile in frames (None: the family's own
    walk; 0: every frame at once); a video answer's ``video`` holds the
    working set, the clip copies and any host estimate consulted.
    By default the answer adds the platform's first use once (``first_use``:
    the CUDA libraries' kernels a fresh process's first convolution loads),
    so the first decode of a process fits; ``warm=True`` leaves it out for
    a host that has already run this op in this process (``op_bytes`` is
    the op's own price either way; docs/fit.md, "First use").
    """
    c = _coefficients_of(coefficients)
    return c.reserve(model, op, width, height, dtype=dtype, loaded_dtype=loaded_dtype, batch=batch, tile=tile,
                     backend=backend, allocator=allocator, os=os, fp32=fp32, env=env, host=host, frames=frames,
                     temporal_tile=temporal_tile, warm=warm)


_DECIMAL_ERRORS = {
    "empty": "empty value",
    "negative": "negative value (must be zero or more)",
    "nan": "not a decimal number (expected digits with an optional '.', e.g. 4274.5)",
    "precise": "more than 18 digits after the decimal point",
    "large": "value too large",
}


def _decimal(text):
    """vramfit's exact decimal (``123``, ``0.05``, ``+7.25``; no exponent): a Fraction, or the error's name."""
    t = _trim(text)
    if not t:
        return "empty"
    if t.startswith("-"):
        rest = t[1:]
        if rest and all(c in "0." for c in rest) and "0" in rest:
            t = rest
        elif rest and all(c.isdigit() and c.isascii() or c == "." for c in rest) and any(c.isdigit() for c in rest):
            return "negative"
        else:
            return "nan"
    elif t.startswith("+"):
        t = t[1:]
    whole, _, frac = t.partition(".") if "." in t else (t, "", "")
    ok = lambda d: all(c in "0123456789" for c in d)
    if not ok(whole) or not ok(frac) or (not whole and not frac):
        return "nan"
    if len(frac) > 18:
        return "precise"
    num = int((whole + frac) or "0")
    if num > _I128:
        return "large"
    return Fraction(num, 10 ** len(frac))


def _factor(flag, value):
    """A factor as the CLI reads ``--share`` / ``--transient``: a decimal, or one with an exponent within
    -30..=30, exact. A number is read as the text it prints as."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Fraction)):
        raise ValueError("%s: expected a number, got %r" % (flag.lstrip("-"), value))
    t = _trim(repr(value) if isinstance(value, float) else str(value))
    mantissa, e, exp = t.replace("E", "e").partition("e")
    if not e:
        v = _decimal(t)
        if isinstance(v, str):
            raise ValueError("%s '%s': %s" % (flag, t, _DECIMAL_ERRORS[v]))
        return v
    try:
        n = int(exp)
    except ValueError:
        raise ValueError("%s '%s': the exponent '%s' is not an integer" % (flag, t, exp)) from None
    m = _decimal(mantissa)
    if isinstance(m, str):
        raise ValueError("%s '%s': %s" % (flag, t, _DECIMAL_ERRORS[m]))
    if abs(n) > 30:
        raise ValueError("%s '%s': the exponent %d is outside -30..=30" % (flag, t, n))
    return m * Fraction(10) ** n


def _exact_decimal(f):
    """A Fraction as vramfit writes an exact decimal (``0.5``, ``2``)."""
    for places in range(19):
        m = f * 10 ** places
        if m.denominator == 1:
            digits = str(abs(m.numerator)).rjust(places + 1, "0")
            text = digits if places == 0 else digits[:-places] + "." + digits[-places:]
            return ("-" if m < 0 else "") + text
    return "%d/%d" % (f.numerator, f.denominator)


def _bytes_flag(flag, v):
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError("%s: expected a whole number of bytes, got %r" % (flag.lstrip("-"), v))
    if v < 0:
        raise ValueError("%s '%d': %s" % (flag, v, _DECIMAL_ERRORS["negative"]))
    if v > _I128:
        raise ValueError("%s '%d': %s" % (flag, v, _DECIMAL_ERRORS["large"]))
    if v > _U64:
        raise ValueError("%s '%d': too large" % (flag, v))
    return v


def budget(free=None, share=1, cap=None):
    """``min(cap, floor(share × free))`` bytes, as ``vramfit plan`` computes
    its budget: ``free`` and ``cap`` are bytes (``free=None``: unknown, so
    the cap); ``share`` is a number or a decimal string (``0.5``, ``1e-3``),
    0 < share ≤ 1, taken exactly. Refused as ``vramfit plan`` refuses
    ``--free``, ``--share`` and ``--cap``, in its words."""
    s = _factor("--share", share)
    free = _bytes_flag("--free", free)
    cap = _bytes_flag("--cap", cap)
    if not (0 < s <= 1):
        raise ValueError("--share must be greater than 0 and at most 1 (got %s)" % _exact_decimal(s))
    if free == 0:
        raise ValueError("--free 0: free memory must be more than 0 bytes (or `unknown`)")
    if cap == 0:
        raise ValueError("--cap 0: a cap must be more than 0 bytes")
    if free is None:
        if cap is None:
            raise ValueError("free memory is unknown and there is no --cap: give --free SIZE or --cap SIZE")
        return Budget(cap, "cap-unknown-free")
    shared = (s * free).numerator // (s * free).denominator
    if cap is not None and cap < shared:
        return Budget(cap, "cap")
    return Budget(shared, "share")


def plan(model, op, width, height, *, free=None, share=1, cap=None, batch=1, tile=0, frames=1, temporal_tile=None,
         coefficients=None, **query):
    """Does this work fit, and how should it run? ``vramfit plan``'s answer for a VAE query, as the dict its
    ``--format json`` prints (same keys, same order): ``verdict`` (``full``, ``chunked``, ``tiled`` or ``host``),
    ``group_size``, ``tile``, ``peak_bytes``, ``reasons``, every pricing it rests on (``steps``) and their
    ``warnings``. ``batch`` is the number of items; ``free``, ``share`` and ``cap`` set the budget as
    :func:`budget` does; the rest is :func:`reserve`'s query. Refused as the CLI refuses, in its words."""
    from ._plan import plan_vae

    b = budget(free=free, share=share, cap=cap)
    terms = {"bytes": b.bytes, "from": b.bound, "free": free, "share": _exact_decimal(_factor("--share", share)),
             "cap": cap}
    c = _coefficients_of(coefficients)
    return plan_vae(c, model, op, width, height, terms, batch=batch, tile=tile, temporal_tile=temporal_tile,
                    frames=frames, **query)
