"""`python3 -m harness trace`: the shape of a VAE's demand from its
architecture, with no weights and no GPU.

The VAE is built from its configuration on PyTorch's ``meta`` device, where
tensors have shapes, dtypes and storages but no data, and each op runs the
real diffusers forward along the host's call path (`measure.run_op`,
tiling as `measure._tile` sets it). A `TorchDispatchMode` watches every op:
each output whose storage is new adds the storage's bytes to the live
count, and a storage's bytes leave the count when the last tensor on it is
freed. The peak of the live count over the op is its *traced* bytes: the
activations, workspaces the ops allocate as tensors, and the output.
Weights and the input exist before the op and are not counted, as the
measured deltas do not count them.

Scaled dot-product attention is counted as the fused kernel a GPU runs:
its output only (a math kernel's S × S scores are the policy's declared
attention phase, not the trace's). What a trace cannot see: the caching
allocator's rounding and fragmentation, cuDNN's and MIOpen's workspaces,
and the CUDA libraries' first use; those are what the calibration of a
trace against measured points carries (docs/traced.md).

Rows go to ``measurements/traced/FAMILY.csv``, one per (op, dtype, tile,
size, frames), sorted, with their provenance on every row: torch and
diffusers versions, the config's source and SHA-256, the call. The meta
device computes nothing, so the same versions give the same file
byte for byte on any machine.
"""

import argparse
import csv
import hashlib
import io
import json
import os
import sys
import weakref

from . import allocator, configs, inputs, preflight

#: The traced grid. Image sizes: squares across what hosts run and two
#: common non-square canvases; tiles: untiled and the diffusers host's
#: tiles of 512 px (only where the tile is smaller than the image).
IMAGE_SIZES = ((512, 512), (768, 768), (1024, 1024), (1216, 832), (1536, 1536), (2048, 2048), (2560, 1440))
IMAGE_TILES = (0, 512)
#: Video: two canvases (each side rounded up to the family's spatial
#: compression: LTX-2 takes multiples of 32) at three clip lengths (frames
#: of the form k·t + 1 for the family's temporal compression t, the
#: nearest at or above these), and one frame at every image size and both
#: canvases: a video VAE run on an image (Anima decodes Wan 2.1's VAE on
#: images; LTX-2 encodes a first frame) is its own shape, and the points
#: measured that way lie inside it and calibrate the class (docs/traced.md).
VIDEO_SIZES = ((832, 480), (1280, 720))
VIDEO_FRAMES = (1, 17, 49, 81)
DTYPES = ("bf16", "fp16", "fp32")
OPS = ("decode", "encode")

COLUMNS = ("family", "vae", "op", "dtype", "tile", "temporal_tile", "width", "height", "frames", "batch", "traced_bytes",
           "simulated", "torch", "diffusers", "config_source", "config_sha256", "call", "facts")

#: How each video class's decoder walks time, as the tracer runs it: the
#: registry's `walk` and its frames (`vramfit family add` registers these).
CLASS_WALKS = {
    "AutoencoderKLWan": ("causal", 4),
    "AutoencoderKLCogVideoX": ("causal", 8),
    "AutoencoderKLMochi": ("all", 0),
    "AutoencoderKLHunyuanVideo": ("tiles", 16),
    # HunyuanVideo 1.5 decodes and encodes the whole clip at once; its
    # enable_tiling() tiles only in space (autoencoder_kl_hunyuanvideo15.py).
    "AutoencoderKLHunyuanVideo15": ("all", 0),
    # EasyAnimate's VAE decodes the first latent frame, then one at a time
    # (num_latent_frames_batch_size 1, autoencoder_kl_magvit.py _decode).
    "AutoencoderKLMagvit": ("causal", 4),
    # Cosmos 1.0's tokenizer has no tiled path: the whole clip at once.
    "AutoencoderKLCosmos": ("all", 0),
    "AutoencoderKLLTXVideo": ("tiles", 16),
    "AutoencoderKLLTX2Video": ("tiles", 16),
    # MiniMax-H3 decodes 7 latent frames a chunk (5 plus 2 of overlap: 28 frames) in 256 px tiles by default.
    "AutoencoderKLMiniMaxH3": ("tiles", 28),
}


#: The classes that are not read off the convolutions: architectures whose
#: demand no calibrated class describes (docs/traced.md, "A class nobody
#: measured").
CLASSES = {
    "AutoencoderDC": "dc-ae",
    "AutoencoderTiny": "tiny",
    # A Haar-wavelet patcher and unpatcher around causal 3-D blocks.
    "AutoencoderKLCosmos": "wavelet",
    # A 36-layer ViT decoder over the latent tokens behind a causal 3-D encoder.
    "AutoencoderKLMiniMaxH3": "vit",
}


def grid_words():
    """The grid's constants in words: an input of the traces (harness/inputs.py); the walk is this module's source."""
    return json.dumps({
        "image_sizes": IMAGE_SIZES, "image_tiles": IMAGE_TILES, "video_sizes": VIDEO_SIZES,
        "video_frames": VIDEO_FRAMES, "dtypes": DTYPES, "ops": OPS,
    }, sort_keys=True)


def config_digest(doc):
    """The SHA-256 of the config as shipped, keys sorted: what a row was traced from."""
    text = json.dumps(doc["config"], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class LiveBytes:
    """Counts the bytes of storages created while it is entered, as a
    TorchDispatchMode (built lazily, so importing this module needs no torch)."""

    def __new__(cls, known_storages=()):
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_leaves
        import torch

        class _Mode(TorchDispatchMode):
            def __init__(self, known):
                super().__init__()
                # Storages alive before the op (weights, the input): never counted.
                self.known = set(known)
                self.storages = {}  # key -> [bytes, tensors on it]
                self.live = 0
                self.peak = 0
                # The allocator's view of the op, in order: ("a", key, bytes)
                # a storage born, ("f", key) its last tensor gone, ("c", input,
                # output, im2col) a convolution whose workspace no tensor holds.
                self.events = []

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                for t in tree_leaves(out):
                    if isinstance(t, torch.Tensor):
                        self._track(t)
                if func in CONVOLUTIONS(torch):
                    self.events.append(conv_mark(args, out))
                return out

            def _track(self, t):
                storage = t.untyped_storage()
                key = storage._cdata
                if key in self.known:
                    return
                entry = self.storages.get(key)
                if entry is None:
                    entry = self.storages[key] = [storage.nbytes(), 0]
                    self.events.append(("a", key, entry[0]))
                    self.live += entry[0]
                    self.peak = max(self.peak, self.live)
                entry[1] += 1
                weakref.finalize(t, self._release, key)

            def _release(self, key):
                entry = self.storages.get(key)
                if entry is None:
                    return
                entry[1] -= 1
                if entry[1] == 0:
                    self.events.append(("f", key))
                    self.live -= entry[0]
                    del self.storages[key]

        return _Mode(known_storages)


def CONVOLUTIONS(torch):
    """The aten ops that run a convolution kernel (cuDNN's or MIOpen's)."""
    aten = torch.ops.aten
    return (aten.convolution.default, aten._convolution.default)


def conv_mark(args, out):
    """A convolution's geometry as the allocator models read it: the bytes
    of its input and output, and of its im2col matrix (the input patches
    one output position reads, for every output position)."""
    x, w = args[0], args[1]
    groups = args[8] if len(args) > 8 else 1
    size = x.element_size()
    spatial = 1
    for d in out.shape[2:]:
        spatial *= int(d)
    kernel = 1
    for d in w.shape[2:]:
        kernel *= int(d)
    col = int(x.shape[0]) * (int(x.shape[1]) // max(1, int(groups))) * kernel * spatial * size
    return ("c", x.numel() * size, out.numel() * size, col, len(w.shape) - 2)


def _fused_sdpa(query, key, value, *args, **kwargs):
    """The fused kernel's footprint: its output, `query`'s shape with `value`'s last axis."""
    import torch

    shape = tuple(query.shape[:-1]) + (value.shape[-1],)
    return torch.empty(shape, dtype=query.dtype, device=query.device)


def storages_of(*things):
    """The storage keys of tensors and of modules' parameters and buffers."""
    import torch

    keys = set()
    for thing in things:
        tensors = [thing] if isinstance(thing, torch.Tensor) else list(thing.parameters()) + list(thing.buffers())
        keys.update(t.untyped_storage()._cdata for t in tensors)
    return keys


def trace_one(doc, op, dtype, tile, width, height, frames, batch=1):
    """The traced peak bytes of one op on the meta device, and the temporal
    tile the call really walked (0: the clip at once, or a causal walk)."""
    import gc

    import torch
    import torch.nn.functional as F

    from . import measure

    video = measure.is_video_model(doc)
    vae = measure.build(doc, dtype, "meta", 0 if video else tile)
    if video and tile and tile == (doc.get("host_tiling") or {}).get("tile"):
        host_tiling(vae, doc, tile)
    elif video and tile:
        # A measured point's own tile (Qwen-Image's 512 px): the class's
        # enable_tiling() at that tile, as the GPU run set it.
        measure.configure_tiling(vae, doc, tile, False)
    elif video and getattr(vae, "use_tiling", False):
        # A class that tiles by default (MiniMax-H3) runs untiled only when told to.
        vae.disable_tiling()
    walked = measure.temporal_tile(vae, op, frames) if video else 0
    x = measure.make_input(doc, op, dtype, width, height, batch, "meta", frames=frames)
    mode = LiveBytes(storages_of(vae, x))
    real_sdpa = F.scaled_dot_product_attention
    F.scaled_dot_product_attention = _fused_sdpa
    try:
        with mode:
            out = measure.run_op(vae, op, x)
            want = measure.expected_shape(doc, op, width, height, batch, frames=frames)
            if list(out.shape) != want:
                raise RuntimeError("%s %s: output %s, expected %s" % (doc["family"], op, list(out.shape), want))
            del out
            gc.collect()
    finally:
        F.scaled_dot_product_attention = real_sdpa
    return mode.peak, walked, mode.events


def facts_of(doc):
    """The architecture's facts, `key=value;…`, read from the config and the
    model built on the meta device: what `vramfit family add` registers."""
    import torch

    from . import measure

    vae = measure.build(doc, "fp32", "meta", 0)
    conv3d = any(isinstance(m, torch.nn.Conv3d) for m in vae.modules())
    config = doc["config"]
    facts = [
        ("class", CLASSES.get(config["_class_name"]) or ("causal-3d" if conv3d else "kl-2d")),
        ("latent_channels", config.get("latent_channels", config.get("z_dim", 4))),
        ("spatial", measure.spatial_compression(doc)),
        ("params", sum(p.numel() for p in vae.parameters())),
    ]
    attention = mid_block_attention(vae)
    if attention:
        facts.append(("attention", "%dx%d" % attention))
    if measure.is_video_model(doc):
        facts.append(("temporal", measure.temporal_compression(doc)))
        walk = CLASS_WALKS.get(config["_class_name"])
        if walk:
            facts.extend([("walk", walk[0]), ("walk_frames", walk[1])])
        host = doc.get("host_tiling") or {}
        facts.append(("tile", host.get("tile", 0)))
    return ";".join("%s=%s" % kv for kv in facts)


def mid_block_attention(vae):
    """(heads, head size) of the decoder mid-block's first attention, where
    it has one: diffusers' `Attention` (heads, to_q) or a single-head block
    with a fused qkv projection (Wan's)."""
    mid = getattr(getattr(vae, "decoder", None), "mid_block", None)
    if mid is None:
        return None
    for m in mid.modules():
        if hasattr(m, "heads") and hasattr(m, "to_q"):
            return int(m.heads), int(m.to_q.out_features) // int(m.heads)
        if hasattr(m, "to_qkv") and hasattr(m.to_qkv, "out_channels"):
            return 1, int(m.to_qkv.out_channels) // 3
    return None


def host_tiling(vae, doc, tile):
    """A video VAE tiled as its host runs it (`measure.configure_tiling`,
    what a GPU run does): `enable_tiling()` with the class's own tiles (what
    the policy's video facts quote), in time too where the document says
    the host tiles frames."""
    from . import measure

    got = measure.configure_tiling(vae, doc, 0, True)
    if got != tile or vae.tile_sample_min_height != tile:
        raise RuntimeError("%s: enable_tiling() gives %dx%d px tiles, the document says %d"
                           % (doc["family"], vae.tile_sample_min_width, vae.tile_sample_min_height, tile))


def selftest():
    """The counter on graphs whose peak is known, exactly: a failure names
    what it miscounted. Run by `python3 -m harness.smoke` (CI's torch job)."""
    import torch
    import torch.nn.functional as F

    problems = []

    def peak_of(step, *known):
        mode = LiveBytes(storages_of(*known))
        real_sdpa = F.scaled_dot_product_attention
        F.scaled_dot_product_attention = _fused_sdpa
        try:
            with mode:
                step()
        finally:
            F.scaled_dot_product_attention = real_sdpa
        return mode.peak, mode.live

    x = torch.empty(1024, dtype=torch.float32, device="meta")  # 4 KiB, alive before: not counted

    def chain():
        a = x * 2           # +4 KiB
        b = a.view(32, 32)  # a view: no new storage
        c = b + 1           # +4 KiB (peak 8 KiB)
        del a, b
        d = c * 3           # a's storage is gone: 8 KiB again, not 12
        del c
        return d

    cases = [
        ("a chain with a view and a free", chain, 8192, 0),
        ("an in-place op", lambda: x.mul_(2), 0, 0),
        ("a view of a weight", lambda: x.view(2, 512), 0, 0),
    ]
    q = torch.empty(1, 1, 4096, 64, dtype=torch.float16, device="meta")
    cases.append(("fused attention: its output only, not 4096² scores",
                  lambda: F.scaled_dot_product_attention(q, q, q), 4096 * 64 * 2, 0))
    for name, step, want_peak, want_live in cases:
        peak, live = peak_of(step, x, q)
        if (peak, live) != (want_peak, want_live):
            problems.append("%s: peak %d, live after %d; expected %d and %d" % (name, peak, live, want_peak, want_live))
    return problems


def clip_frames(doc, wanted):
    """The clip lengths a video family takes: k·t + 1 (or its `frame_grammar`'s) at or above each wanted length."""
    from . import measure

    return sorted({measure.clip_frames_at_least(doc, f) for f in wanted})


def tiling_words(doc, tile):
    """How a traced call was tiled, in the row's `call`."""
    from . import measure

    if not tile:
        return ""
    if not measure.is_video_model(doc):
        return " after enable_tiling(), tile_sample_min_size %d" % tile
    frames = (doc.get("host_tiling") or {}).get("frames", 0)
    return " after enable_tiling() (class tiles %d px%s)" % (tile, ", framewise %d frames" % frames if frames else "")


def grid(doc, ops=OPS, dtypes=DTYPES):
    """Every (op, dtype, tile, width, height, frames) a family is traced at."""
    from . import measure

    rows = []
    video = measure.is_video_model(doc)
    s = measure.spatial_compression(doc)
    rounded = lambda sizes: sorted({(-(-w // s) * s, -(-h // s) * s) for (w, h) in sizes}, key=lambda wh: (wh[0] * wh[1], wh[0]))
    clip_sizes = rounded(VIDEO_SIZES) if video else IMAGE_SIZES
    frame_sizes = rounded(IMAGE_SIZES + VIDEO_SIZES) if video else IMAGE_SIZES
    frames_list = clip_frames(doc, VIDEO_FRAMES) if video else (1,)
    host = doc.get("host_tiling")
    tiles = ((0, host["tile"]) if host else (0,)) if video else IMAGE_TILES
    # An op the class cannot run tiled (the document says why) is traced untiled only.
    untiled = configs.untiled_ops(doc)
    for op in ops:
        for dtype in dtypes:
            for tile in tiles:
                if tile and op in untiled:
                    continue
                # A one-frame run the class cannot do (the document says why) is not traced.
                most = configs.one_frame_max(doc, op) if video else None
                for f in frames_list:
                    for (w, h) in frame_sizes if f == 1 else clip_sizes:
                        if tile and tile >= w and tile >= h:
                            continue  # a tile covering the image runs untiled
                        if f == 1 and most is not None and w * h > most:
                            continue
                        rows.append((op, dtype, tile, w, h, f))
    return rows


def call_words(doc, op, tile):
    """The diffusers call a row traced, with its tiling."""
    from . import measure

    decode = "decode(z, timestep).sample" if doc["config"].get("timestep_conditioning") else "decode(z).sample"
    encode = "encode(x).%s" % (measure.ENCODED.get(doc["config"]["_class_name"]) or "latent_dist.mode()")
    return "%s.%s%s" % (doc["config"]["_class_name"], decode if op == "decode" else encode, tiling_words(doc, tile))


def trace_family(doc, say=None, ops=OPS, dtypes=DTYPES):
    """The CSV rows of one family's grid, sorted."""
    import diffusers
    import torch

    from . import measure

    digest = config_digest(doc)
    facts = facts_of(doc)
    rows = []
    for (op, dtype, tile, w, h, f) in grid(doc, ops, dtypes):
        traced, walked, events = trace_one(doc, op, dtype, tile, w, h, f)
        call = call_words(doc, op, tile)
        rows.append({
            "family": doc["family"], "vae": doc["vae"], "op": op, "dtype": dtype, "tile": tile,
            "temporal_tile": walked,
            "width": w, "height": h, "frames": f, "batch": 1, "traced_bytes": traced,
            "simulated": allocator.simulated_words(events, dtype),
            "torch": torch.__version__.split("+")[0], "diffusers": diffusers.__version__,
            "config_source": doc["source"], "config_sha256": digest, "call": call, "facts": facts,
        })
        if say:
            say("%-12s %-6s %-4s tile %-4d %5dx%-5d f %-3d %12d" % (doc["family"], op, dtype, tile, w, h, f, traced))
    rows.sort(key=lambda r: (r["op"], r["dtype"], r["tile"], r["width"] * r["height"], r["width"], r["frames"]))
    return rows


#: The columns of `points.csv`: one traced configuration of a measured point.
POINT_COLUMNS = ("family", "vae", "op", "dtype", "tile", "temporal_tile", "width", "height", "frames", "batch",
                 "traced_bytes", "simulated", "torch", "diffusers", "config_sha256", "call")


def config_of_point(point, docs):
    """The shipped config a measured point ran: its `model` as a config's
    family or model name, else the one config of its vramfit family."""
    model = point.get("model") or ""
    for doc in docs:
        if model in (doc["family"], doc.get("model")):
            return doc
    of_vae = [d for d in docs if d["vae"] == point["vae"]]
    return of_vae[0] if len(of_vae) == 1 else None


def point_configs(store, docs):
    """The distinct traced configurations of a store's points, with the ids
    of the points each stands for, and the points no trace can stand for
    (no shipped config, or a tiling the tracer does not run), with why."""
    from . import measure

    configs_, untraced = {}, []
    for point in store["points"]:
        doc = config_of_point(point, docs)
        if doc is None:
            untraced.append((point["id"], "no shipped config is model '%s'" % point.get("model")))
            continue
        video = measure.is_video_model(doc)
        host = (doc.get("host_tiling") or {}).get("tile", 0)
        tile = int(point["tile"])
        if video and tile and tile != host and doc.get("untraced"):
            # The document says why its host's tiled walk is not the class's.
            untraced.append((point["id"], doc["untraced"]))
            continue
        key = (doc["family"], point["op"], point["dtype"], tile, int(point["width"]), int(point["height"]),
               int(point.get("frames") or 1), int(point.get("batch") or 1))
        configs_.setdefault(key, []).append(point["id"])
    return configs_, untraced


def trace_point(doc, key):
    """One measured point's configuration, traced: (traced bytes, temporal
    tile walked, events). A video point at its class's own tile walks the
    host's tiling; any other tile is `measure._tile`'s, as the GPU run's."""
    _, op, dtype, tile, w, h, frames, batch = key
    return trace_one(doc, op, dtype, tile, w, h, frames, batch)


def points_csv(store, docs, say=None, cache=None):
    """The rows of `points.csv`, sorted: each distinct configuration of a
    measured point, traced and replayed on every platform."""
    import diffusers
    import torch

    configs_, _ = point_configs(store, docs)
    by_family = {d["family"]: d for d in docs}
    rows = []
    for key in sorted(configs_):
        doc = by_family[key[0]]
        traced, walked, events = cache(doc, key) if cache else trace_point(doc, key)
        family, op, dtype, tile, w, h, frames, batch = key
        rows.append({
            "family": family, "vae": doc["vae"], "op": op, "dtype": dtype, "tile": tile, "temporal_tile": walked,
            "width": w, "height": h, "frames": frames, "batch": batch, "traced_bytes": traced,
            "simulated": allocator.simulated_words(events, dtype),
            "torch": torch.__version__.split("+")[0], "diffusers": diffusers.__version__,
            "config_sha256": config_digest(doc), "call": call_words(doc, op, tile),
        })
        if say:
            say("%-12s %-6s %-4s tile %-4d %5dx%-5d f %-3d b %d %12d" % (family, op, dtype, tile, w, h, frames, batch, traced))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=POINT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _family_csv(job):
    doc, say, ops, dtypes = job
    import diffusers

    diffusers.utils.logging.set_verbosity_error()
    return to_csv(trace_family(doc, say, ops, dtypes))


def to_csv(rows):
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def write_atomically(path, text):
    """The whole file or the old one: written beside, then renamed over."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m harness trace", description=__doc__.split("\n\n")[0])
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--all", action="store_true", help="every shipped config (harness/configs/)")
    which.add_argument("--config", help="a diffusers VAE config.json, or a harness config document")
    which.add_argument("--points", action="store_true",
                       help="every measured point's own configuration (measurements/vae.json) -> OUT_DIR/points/points.csv, "
                            "replayed through the allocator models: what docs/traced.md's validation reads")
    p.add_argument("--family", help="the family name to write the rows under (with --config)")
    p.add_argument("--vae", help="the vramfit family the rows price (with --config; default: --family)")
    p.add_argument("--source", help="where the config was read (with --config; default: its path)")
    p.add_argument("--out-dir", default=os.path.join("measurements", "traced"), help="where FAMILY.csv goes")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 when a shipped file differs from what the trace gives (with --all: "
                        "proved by the record of the traces' inputs when none changed, else traced in full)")
    p.add_argument("--full", action="store_true",
                   help="with --check: trace in full even when the record proves the traces current")
    p.add_argument("--op", action="append", choices=OPS,
                   help="with --config: trace this op only (repeatable; default: %s)" % ", ".join(OPS))
    p.add_argument("--dtype", action="append", choices=DTYPES,
                   help="with --config: trace this dtype only (repeatable; default: %s)" % ", ".join(DTYPES))
    p.add_argument("-j", "--jobs", type=int, help="families traced at once (default: one per core)")
    p.add_argument("-q", "--quiet", action="store_true")
    a = p.parse_args(argv)
    if a.points:
        return points_main(a)
    if a.all and (a.op or a.dtype):
        # The shipped traces are the whole grid: a part of it would not be them.
        p.error("--op and --dtype go with --config: --all traces the whole grid")
    ops = tuple(o for o in OPS if o in a.op) if a.op else OPS
    dtypes = tuple(d for d in DTYPES if d in a.dtype) if a.dtype else DTYPES
    try:
        docs = [configs.load(f) for f in configs.families()] if a.all else [configs.from_file(a.config, a.family, a.vae, a.source)]
    except ValueError as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    changed = []
    if a.all and a.check:
        # The record proves the traces current when nothing they depend on
        # changed; only then is the meta-device trace skipped.
        changed = inputs.differences(a.out_dir, [d["family"] for d in docs], inputs.current(grid_words()))
        if not changed and not a.full:
            if not a.quiet:
                print("traces up to date: %s records every input unchanged (trace --all --check --full traces "
                      "them again)" % os.path.join(a.out_dir, inputs.RECORD))
            return 0
        for line in changed:
            print("changed: %s" % line, file=sys.stderr)
    missing = preflight.missing_modules(("torch", "diffusers"))
    if missing:
        print("error: %s" % preflight.install_hint(missing, "tracing"), file=sys.stderr)
        return 2
    import diffusers

    diffusers.utils.logging.set_verbosity_error()
    say = None if a.quiet else (lambda line: print(line, file=sys.stderr))
    stale = []
    if not a.check:
        os.makedirs(a.out_dir, exist_ok=True)
    # One family per worker: a trace is one core's work, and the rows of a
    # family do not depend on which worker traced them.
    jobs = max(1, min(a.jobs or os.cpu_count() or 1, len(docs)))
    if jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            texts = pool.map(_family_csv, [(doc, None, ops, dtypes) for doc in docs])
    else:
        texts = [_family_csv((doc, say, ops, dtypes)) for doc in docs]
    for doc, text in zip(docs, texts):
        path = os.path.join(a.out_dir, doc["family"] + ".csv")
        if a.check:
            old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
            if old != text:
                stale.append(path)
            continue
        write_atomically(path, text)
        print("%s: %d rows" % (path, text.count("\n") - 1))
    if a.all and not a.check:
        import torch

        ran = inputs.current(grid_words(), torch.__version__.split("+")[0], diffusers.__version__)
        record = os.path.join(a.out_dir, inputs.RECORD)
        write_atomically(record, inputs.record_text(ran, a.out_dir, [d["family"] for d in docs]))
        print("%s: the traces' inputs recorded" % record)
    for path in stale:
        print("stale: %s differs from its trace (run python3 -m harness trace --all)" % path)
    if a.check and changed and not stale:
        print("stale: %s: the traces are what the tracer makes, but the record of their inputs is not current "
              "(run python3 -m harness trace --all)" % os.path.join(a.out_dir, inputs.RECORD))
        return 1
    return 1 if stale else 0


def points_main(a):
    """`trace --points`: the measured points' configurations, traced."""
    missing = preflight.missing_modules(("torch", "diffusers"))
    if missing:
        print("error: %s" % preflight.install_hint(missing, "tracing"), file=sys.stderr)
        return 2
    import diffusers

    diffusers.utils.logging.set_verbosity_error()
    docs = [configs.load(f) for f in configs.families()]
    store_path = os.path.join(os.path.dirname(os.path.normpath(a.out_dir)), "vae.json")
    try:
        with open(store_path, encoding="utf-8") as f:
            store = json.load(f)
    except (OSError, ValueError) as e:
        print("error: %s: %s" % (store_path, e), file=sys.stderr)
        return 2
    _, untraced = point_configs(store, docs)
    for pid, why in untraced:
        print("untraced: %s: %s" % (pid, why), file=sys.stderr)
    text = points_csv(store, docs, None if a.quiet else (lambda line: print(line, file=sys.stderr)))
    path = os.path.join(a.out_dir, "points", "points.csv")
    if a.check:
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old != text:
            print("stale: %s differs from its trace (run python3 -m harness trace --points)" % path)
            return 1
        return 0
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomically(path, text)
    print("%s: %d rows" % (path, text.count("\n") - 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
