"""The plan file (TOML): grids of families × ops × dtypes × sizes × batch ×
allocator (× clip lengths for a video family), each point run `runs` times.

    runs = 2                       # rows per point (run 1, run 2, …)

    [[grid]]
    families = ["sdxl", "flux1", "cogview4"]
    ops = ["decode", "encode", "tiled-decode"]
    tiles = [512]                  # the tile edges of "tiled-decode" / "tiled-encode"
    dtypes = ["fp16", "bf16", "fp32"]
    sizes = ["512x512", "1024x1024"]
    batches = [1]                  # default [1]
    allocators = ["native", "expandable_segments", "cudaMallocAsync"]
    contexts = ["fresh", "warm"]   # default ["fresh"]; "warm": the op again, in the same process
    frames = [9, 25]               # a video family's clip lengths (default [1])
    process = "point"              # "point" (default): a fresh process per point;
                                   # "grid": one process per dtype, allocator and run

`ops` may also name "host-tiled-decode" / "host-tiled-encode": a video
family tiled as its host runs it (`enable_tiling()` with the class's own
tiles, framewise where the config's `host_tiling` says).

Each child process runs a group of points in order and measures each: the
first op of a process is its first use (`context` fresh); an op after an
earlier run in the same process is `warm`. With `contexts = ["fresh",
"warm"]` a point's process runs it twice and writes both; with `process =
"grid"` the grid's points of one dtype, allocator and run share a process,
family after family (the first op fresh, every later one warm, its note
naming how many ops ran before it), which saves the 15–28 s a child spends
importing torch and initialising the device.

A plan may hold several `[[grid]]` tables; a point two grids share is run once.
"""

from dataclasses import dataclass

from . import allocators, configs, measure

try:
    import tomllib as _toml
except ImportError:  # Python 3.9 and 3.10
    try:
        import tomli as _toml
    except ImportError:
        _toml = None

OPS = ("decode", "encode", "tiled-decode", "tiled-encode", "host-tiled-decode", "host-tiled-encode")
DTYPES = ("fp16", "bf16", "fp32")
CONTEXTS = ("fresh", "warm")
PROCESSES = ("point", "grid")
GRID_KEYS = ("families", "ops", "tiles", "dtypes", "sizes", "batches", "allocators", "contexts", "frames", "process")

#: Seconds one child took on the H200 (2026-12-04, 54 children of
#: harness/plans/h200/: mean 19.7, median 19.3, 15.1–28.2): importing torch
#: and diffusers, building the VAE, one op. What a plan's estimate counts
#: per child.
CHILD_SECONDS = 19.7
#: Seconds a further measurement in the same child is counted at: an image
#: op (the H200's 2048² SDXL decode ran in under 2 s of its child's 19) and
#: a video clip's (an assumption until a GPU times one: up to 25 frames of
#: 832×480).
MORE_IMAGE_SECONDS = 2
MORE_VIDEO_SECONDS = 5


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
    frames: int = 1
    host_tiles: bool = False  # a video family's own tiles (enable_tiling())
    context: str = "fresh"  # fresh: the first op of its process; warm: after one

    def key(self):
        """The point's name, the same for every device (the id adds the device)."""
        tile = "-thost" if self.host_tiles else ("-t%d" % self.tile if self.tile else "")
        clip = "x%d" % self.frames if self.frames > 1 else ""
        warm = "-warm" if self.context == "warm" else ""
        return "%s-%s%s-%s-%dx%d%s-b%d-%s%s-r%d" % (
            self.family, self.op, tile, self.dtype, self.width, self.height, clip, self.batch, self.allocator, warm,
            self.run)

    def video(self):
        return self.frames > 1 or self.host_tiles


@dataclass
class Plan:
    runs: int
    #: Each child's points, in the order it runs them.
    groups: list

    @property
    def points(self):
        return sorted(p for g in self.groups for p in g)

    def seconds(self):
        """The estimate: CHILD_SECONDS a child, and each further measurement
        in a child at MORE_IMAGE_SECONDS or MORE_VIDEO_SECONDS."""
        total = 0.0
        for g in self.groups:
            total += CHILD_SECONDS
            total += sum(MORE_VIDEO_SECONDS if p.video() else MORE_IMAGE_SECONDS for p in g[1:])
        return total


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


def _frames(grid, where, docs):
    frames = _list(grid, "frames", where, default=[1])
    for f in frames:
        if not isinstance(f, int) or isinstance(f, bool) or f < 1:
            raise PlanError("%s: frames: %r is not a positive integer" % (where, f))
    for family, doc in docs.items():
        t = doc.get("temporal", 1)
        for f in frames:
            if f > 1 and t == 1:
                raise PlanError("%s: frames: %s is an image VAE (frames 1 only)" % (where, family))
            above = measure.clip_frames_at_least(doc, f)
            if f == above:
                continue
            grammar = doc.get("frame_grammar")
            if grammar:
                raise PlanError("%s: frames: %s takes %d x n + %d frames; %d is not (%d is)"
                                % (where, family, grammar["pixel"][0], grammar["pixel"][1], f, above))
            raise PlanError("%s: frames: %s decodes k x %d + 1 frames; %d is not (%d or %d is)"
                            % (where, family, t, f, above - t, above))
    return frames


def _grid_points(grid, where, runs):
    """The groups of one grid, each a child's points in order."""
    bad = sorted(set(grid) - set(GRID_KEYS))
    if bad:
        raise PlanError("%s: unknown key '%s' (known: %s)" % (where, bad[0], ", ".join(GRID_KEYS)))
    families = _list(grid, "families", where)
    docs = {}
    for f in families:
        try:
            docs[f] = configs.load(f)
        except ValueError as e:
            raise PlanError("%s: families: %s" % (where, e)) from None
    ops = _list(grid, "ops", where)
    for op in ops:
        if op not in OPS:
            raise PlanError("%s: ops: unknown op '%s' (known: %s)" % (where, op, ", ".join(OPS)))
        if op.startswith("host-tiled-"):
            for f, doc in docs.items():
                if doc.get("temporal", 1) == 1:
                    raise PlanError("%s: ops: %s is for a video family's own tiles; %s is an image VAE "
                                    "(tiled-decode with tiles)" % (where, op, f))
    tiled = any(op.startswith("tiled-") for op in ops)
    tiles = _list(grid, "tiles", where) if tiled else grid.get("tiles", [])
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
    contexts = _list(grid, "contexts", where, default=["fresh"])
    if sorted(set(contexts)) not in (["fresh"], ["fresh", "warm"]) or len(contexts) != len(set(contexts)):
        raise PlanError("%s: contexts: [\"fresh\"] or [\"fresh\", \"warm\"] (a warm run needs the fresh one "
                        "before it in its process)" % where)
    frames = _frames(grid, where, docs)
    process = grid.get("process", "point")
    if process not in PROCESSES:
        raise PlanError("%s: process: '%s' (known: %s)" % (where, process, ", ".join(PROCESSES)))
    if process == "grid" and contexts != ["fresh"]:
        raise PlanError("%s: contexts: a grid run in one process is fresh once and warm after; leave contexts out"
                        % where)
    groups = []
    shared = {}  # process = "grid": one child per (dtype, allocator, run)
    for f in families:
        image = docs[f].get("temporal", 1) == 1
        for d in dtypes:
            for a in allocs:
                for r in range(1, runs + 1):
                    grid_group = shared.setdefault((d, a, r), [])
                    for op in ops:
                        base_op = op.replace("host-tiled-", "").replace("tiled-", "")
                        host = op.startswith("host-tiled-")
                        for tile in (tiles if op.startswith("tiled-") else [0]):
                            for (w, h) in sizes:
                                for b in batches:
                                    for n in (frames if not image else [1]):
                                        point = Point(f, base_op, tile, d, w, h, b, a, r, n, host)
                                        if process == "grid":
                                            ctx = "fresh" if not grid_group else "warm"
                                            grid_group.append(Point(**dict(point.__dict__, context=ctx)))
                                        else:
                                            groups.append([Point(**dict(point.__dict__, context=c)) for c in contexts])
    groups.extend(g for _, g in sorted(shared.items()) if g)
    return groups


def parse(text, name):
    """The plan in `text` (file `name`), expanded into its children's groups."""
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
    groups = []
    seen = set()
    for i, grid in enumerate(grids):
        for g in _grid_points(grid, "%s: [[grid]] #%d" % (name, i + 1), runs):
            # A point two grids share is run once: a group whose points
            # another group already runs is dropped (the first grid's
            # process order stands).
            if any(p in seen for p in g):
                continue
            seen.update(g)
            groups.append(g)
    groups.sort(key=lambda g: g[0])
    return Plan(runs=runs, groups=groups)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise PlanError("%s: cannot read: %s" % (path, e)) from None
    return parse(text, str(path))
