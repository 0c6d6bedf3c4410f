"""The plan file (TOML): grids of families × ops × dtypes × sizes × batch ×
allocator, each point run `runs` times, each run in a fresh process.

    runs = 2                       # rows per point (run 1, run 2, …)

    [[grid]]
    families = ["sdxl", "flux1", "cogview4"]
    ops = ["decode", "encode", "tiled-decode"]
    tiles = [512]                  # the tile edges of "tiled-decode" / "tiled-encode"
    dtypes = ["fp16", "bf16", "fp32"]
    sizes = ["512x512", "1024x1024"]
    batches = [1]                  # default [1]
    allocators = ["native", "expandable_segments", "cudaMallocAsync"]

A plan may hold several `[[grid]]` tables; a point two grids share is run once.
"""

from dataclasses import dataclass

from . import allocators, configs

try:
    import tomllib as _toml
except ImportError:  # Python 3.9 and 3.10
    try:
        import tomli as _toml
    except ImportError:
        _toml = None

OPS = ("decode", "encode", "tiled-decode", "tiled-encode")
DTYPES = ("fp16", "bf16", "fp32")
GRID_KEYS = ("families", "ops", "tiles", "dtypes", "sizes", "batches", "allocators")


class PlanError(ValueError):
    """A plan that cannot be run; the message names the file and the key."""


@dataclass(frozen=True, order=True)
class Point:
    family: str
    op: str  # decode | encode
    tile: int  # 0: untiled
    dtype: str
    width: int
    height: int
    batch: int
    allocator: str
    run: int

    def key(self):
        """The point's name, the same for every device (the id adds the device)."""
        tile = "-t%d" % self.tile if self.tile else ""
        return "%s-%s%s-%s-%dx%d-b%d-%s-r%d" % (
            self.family, self.op, tile, self.dtype, self.width, self.height, self.batch, self.allocator, self.run)


@dataclass
class Plan:
    runs: int
    points: list


def _size(text, where):
    try:
        w, h = str(text).lower().split("x")
        w, h = int(w), int(h)
    except ValueError:
        raise PlanError("%s: '%s' is not WIDTHxHEIGHT" % (where, text)) from None
    if w <= 0 or h <= 0 or w % 8 or h % 8:
        raise PlanError("%s: '%s': sides must be positive multiples of 8" % (where, text))
    return w, h


def _list(grid, key, where, default=None):
    value = grid.get(key, default)
    if value is None:
        raise PlanError("%s: missing '%s'" % (where, key))
    if not isinstance(value, list) or not value:
        raise PlanError("%s: '%s' must be a non-empty list" % (where, key))
    return value


def parse(text, name):
    """The plan in `text` (file `name`), expanded and sorted."""
    if _toml is None:
        raise PlanError("%s: reading TOML needs Python 3.11 or the tomli package" % name)
    try:
        doc = _toml.loads(text)
    except Exception as e:  # the TOML library's own error type
        raise PlanError("%s: not valid TOML: %s" % (name, e)) from None
    unknown = sorted(set(doc) - {"runs", "grid"})
    if unknown:
        raise PlanError("%s: unknown key '%s' (known: runs, grid)" % (name, unknown[0]))
    runs = doc.get("runs", 2)
    if not isinstance(runs, int) or isinstance(runs, bool) or runs < 1:
        raise PlanError("%s: runs: a positive integer" % name)
    grids = doc.get("grid")
    if not isinstance(grids, list) or not grids:
        raise PlanError("%s: no [[grid]] table" % name)
    points = set()
    for i, grid in enumerate(grids):
        where = "%s: [[grid]] #%d" % (name, i + 1)
        bad = sorted(set(grid) - set(GRID_KEYS))
        if bad:
            raise PlanError("%s: unknown key '%s' (known: %s)" % (where, bad[0], ", ".join(GRID_KEYS)))
        families = _list(grid, "families", where)
        for f in families:
            try:
                configs.load(f)
            except ValueError as e:
                raise PlanError("%s: families: %s" % (where, e)) from None
        ops = _list(grid, "ops", where)
        for op in ops:
            if op not in OPS:
                raise PlanError("%s: ops: unknown op '%s' (known: %s)" % (where, op, ", ".join(OPS)))
        tiled = any(op.startswith("tiled-") for op in ops)
        tiles = _list(grid, "tiles", where, default=[] if not tiled else None) if tiled else grid.get("tiles", [])
        for t in tiles:
            if not isinstance(t, int) or t <= 0 or t % 8:
                raise PlanError("%s: tiles: %r is not a positive multiple of 8" % (where, t))
        dtypes = _list(grid, "dtypes", where)
        for d in dtypes:
            if d not in DTYPES:
                raise PlanError("%s: dtypes: unknown dtype '%s' (known: %s)" % (where, d, ", ".join(DTYPES)))
        sizes = [_size(s, where + ": sizes") for s in _list(grid, "sizes", where)]
        batches = _list(grid, "batches", where, default=[1])
        for b in batches:
            if not isinstance(b, int) or isinstance(b, bool) or b < 1:
                raise PlanError("%s: batches: %r is not a positive integer" % (where, b))
        allocs = _list(grid, "allocators", where, default=["native"])
        for a in allocs:
            if a not in allocators.CONF:
                raise PlanError("%s: allocators: unknown allocator '%s' (known: %s)"
                                % (where, a, ", ".join(allocators.CONF)))
        for f in families:
            for op in ops:
                base_op = op.replace("tiled-", "")
                for tile in (tiles if op.startswith("tiled-") else [0]):
                    for d in dtypes:
                        for (w, h) in sizes:
                            for b in batches:
                                for a in allocs:
                                    for r in range(1, runs + 1):
                                        points.add(Point(f, base_op, tile, d, w, h, b, a, r))
    return Plan(runs=runs, points=sorted(points))


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise PlanError("%s: cannot read: %s" % (path, e)) from None
    return parse(text, str(path))
