"""One measurement on a real GPU, in the child process: build the VAE from
its configuration with random weights (nothing is downloaded), load it and
the input onto the device, release the allocator's cache, take the
baseline, run the op once, and report the deltas of PyTorch's peak
reserved and allocated memory and of the driver's used memory.

The same functions (`build`, `make_input`, `run_op`, `expected_shape`) run
the CPU smoke check (`harness/smoke.py`), so the path a GPU run takes is
the path CI exercises: `from_config` on the diffusers class the config
names, `decode(z).sample` on latents of `latent_channels` (`z_dim`) at an
eighth of the image (FLUX.2's 2×2 patching happens in its pipeline, not its
VAE; the Qwen-Image VAE takes a frame axis), `encode(x).latent_dist.mode()`,
and tiling as `_tile` says. Checked against diffusers 0.42.1 on the CPU.
"""

#: The classes whose tensors carry a frame axis (batch, channels, frames, h, w).
VIDEO_CLASSES = ("AutoencoderKLQwenImage", "AutoencoderKLQwenImage21", "AutoencoderKLWan", "AutoencoderKLLTXVideo", "AutoencoderKLLTX2Video",
                 "AutoencoderKLHunyuanVideo", "AutoencoderKLHunyuanVideo15", "AutoencoderKLCogVideoX", "AutoencoderKLMochi",
                 "AutoencoderKLCosmos", "AutoencoderKLMagvit", "AutoencoderKLHunyuanImageRefiner", "AutoencoderKLMiniMaxH3")


def _torch_dtype(torch, name):
    return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]


def facts():
    import platform

    import diffusers
    import torch

    props = torch.cuda.get_device_properties(0)
    driver = ""
    try:  # the NVIDIA driver's own version, where NVML is installed
        import pynvml

        pynvml.nvmlInit()
        driver = pynvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else driver
    except Exception:  # no NVML (ROCm, or the package missing): the runtime's version below
        driver = ""
    return {
        "device": props.name,
        "driver_version": str(driver or torch.version.cuda or torch.version.hip or ""),
        "torch": torch.__version__,
        "diffusers": diffusers.__version__,
        "conv_backend": "miopen" if torch.version.hip else "cudnn",
        "os": {"Linux": "linux", "Windows": "windows", "Darwin": "macos"}.get(platform.system(), ""),
    }


def _tile(vae, tile):
    """Tiles of `tile` pixels. The image VAEs (`AutoencoderKL`,
    `AutoencoderKLFlux2`, `AutoencoderKLHunyuanImage`) read
    `tile_sample_min_size` and the latent tile derived from it; the video-style ones
    (`AutoencoderKLQwenImage`, Wan's family) take the tile's height and
    width in `enable_tiling`, with a stride of three quarters of it (their
    default overlap ratio)."""
    import inspect

    params = inspect.signature(vae.enable_tiling).parameters
    if "tile_sample_min_height" in params:
        # A stride of whole latent pixels: 8 px for the 8x VAEs, 32 for a DC-AE.
        step = int(getattr(vae, "spatial_compression_ratio", None) or 8)
        stride = tile * 3 // 4 // step * step
        vae.enable_tiling(tile_sample_min_height=tile, tile_sample_min_width=tile,
                          tile_sample_stride_height=stride, tile_sample_stride_width=stride)
        return
    vae.enable_tiling()
    vae.tile_sample_min_size = tile
    # The latent tile is the pixel tile over the class's own compression:
    # an eighth for AutoencoderKL, a 32nd for HunyuanImage 2.1's VAE.
    ratio = getattr(vae.config, "spatial_compression_ratio", None) or 8
    vae.tile_latent_min_size = tile // int(ratio)


def build(doc, dtype, device, tile=0):
    """The VAE of a family's document, random weights, on `device` in `dtype`."""
    import diffusers
    import torch

    config = dict(doc["config"])
    name = config.pop("_class_name")
    cls = getattr(diffusers, name, None)
    if cls is None:
        raise RuntimeError("diffusers %s has no class %s (config of %s)" % (diffusers.__version__, name, doc["family"]))
    if device == "meta":
        # Shapes and storages without data: built on the meta device directly.
        with torch.device("meta"):
            vae = cls.from_config(config)
        # A buffer cloned from a module-level CPU tensor (Cosmos's wavelets)
        # is not a factory call and lands on the CPU: move it too.
        vae = vae.to(device="meta", dtype=_torch_dtype(torch, dtype)).eval()
    else:
        vae = cls.from_config(config).to(device=device, dtype=_torch_dtype(torch, dtype)).eval()
    _keep_in_fp32(vae, torch)
    if tile:
        _tile(vae, tile)
    return vae


def _keep_in_fp32(vae, torch):
    """The weights a class pins to float32 whatever the dtype (`_keep_in_fp32_modules`, matched by name as
    diffusers' `from_pretrained(torch_dtype=…)` loads them): a host loads MiniMax-H3's encoder and norms in float32,
    and its encode runs the clip in float32 (autoencoder_kl_minimax_h3.py:533-543, :873)."""
    keep = getattr(type(vae), "_keep_in_fp32_modules", None) or ()
    for name, tensor in list(vae.named_parameters()) + list(vae.named_buffers()):
        if any(m in name for m in keep) and tensor.is_floating_point():
            tensor.data = tensor.data.to(torch.float32)


def _channels(doc):
    config = doc["config"]
    return config.get("latent_channels", config.get("z_dim", 4))


def _video(doc):
    return doc["config"]["_class_name"] in VIDEO_CLASSES


def spatial_compression(doc):
    """Output pixels per latent pixel along a side: the document's `spatial`;
    else an AutoencoderKL-style config's, one halving per block after the
    first (2^(len(block_out_channels) − 1)); else 8."""
    if "spatial" in doc:
        return doc["spatial"]
    blocks = doc["config"].get("block_out_channels")
    if isinstance(blocks, list) and blocks:
        return 2 ** (len(blocks) - 1)
    return 8


def temporal_compression(doc):
    """Output frames per latent frame (1: an image VAE)."""
    return doc.get("temporal", 1)


def is_video_model(doc):
    """Whether the family decodes clips (a frame axis that compresses time)."""
    return temporal_compression(doc) > 1


def latent_frames(doc, frames):
    """A clip of `frames` frames in latent frames: the first alone, then one per `temporal`; or, where the
    document gives a `frame_grammar` (pixel frames p·n + e map to latent frames a·n + b), by it (one frame is one
    latent frame either way)."""
    grammar = doc.get("frame_grammar")
    if grammar and frames > 1:
        (p, e), (a, b) = grammar["pixel"], grammar["latent"]
        if clip_frames_at_least(doc, frames) != frames:
            raise ValueError("%s takes clips of %d·n + %d frames, not %d" % (doc["family"], p, e, frames))
        return a * ((frames - e) // p) + b
    return (frames - 1) // temporal_compression(doc) + 1


def clip_frames_at_least(doc, wanted):
    """The shortest clip the family takes of at least `wanted` frames: one frame; k·t + 1 for its temporal
    compression t; or p·n + e (n ≥ 1) under its `frame_grammar`."""
    if wanted <= 1:
        return 1
    grammar = doc.get("frame_grammar")
    if grammar:
        p, e = grammar["pixel"]
        return p * max(1, -(-(wanted - e) // p)) + e
    t = temporal_compression(doc)
    return ((wanted - 1 + t - 1) // t) * t + 1


def pixel_channels(doc):
    """Channels of the image a VAE encodes and decodes: 3 (RGB) unless the
    document says otherwise (Qwen-Image 2.1's VAE works in RGBA). Read from
    the document, not the config: a config's `in_channels` is not always the
    image's (Mochi's encoder counts its Fourier features)."""
    return doc.get("pixel_channels", 3)


def input_shape(doc, op, width, height, batch, frames=1):
    """The tensor an op takes: latents for a decode, the image or clip for an encode."""
    s = spatial_compression(doc)
    shape = [batch, _channels(doc), height // s, width // s] if op == "decode" else [batch, pixel_channels(doc), height, width]
    if _video(doc):
        shape.insert(2, latent_frames(doc, frames) if op == "decode" else frames)
    return shape


def expected_shape(doc, op, width, height, batch, frames=1):
    """What the op must return: the image or clip for a decode, the latent mode for an encode."""
    s = spatial_compression(doc)
    shape = [batch, pixel_channels(doc), height, width] if op == "decode" else [batch, _channels(doc), height // s, width // s]
    if _video(doc):
        shape.insert(2, frames if op == "decode" else latent_frames(doc, frames))
    return shape


def make_input(doc, op, dtype, width, height, batch, device, frames=1):
    import torch

    shape = input_shape(doc, op, width, height, batch, frames)
    if device == "meta":
        return torch.empty(shape, device=device, dtype=_torch_dtype(torch, dtype))
    return torch.randn(shape, device=device, dtype=_torch_dtype(torch, dtype))


#: Image classes whose decode takes the batch as the frames of one clip (`num_frames`).
FRAMES_AS_BATCH = ("AutoencoderKLTemporalDecoder",)

#: Where an encode's latents are when it returns no posterior (`latent_dist`, AutoencoderKL's).
ENCODED = {"AutoencoderDC": "latent", "AutoencoderTiny": "latents"}


def run_op(vae, op, x):
    """The op as a host runs it: `decode(z).sample` or `encode(x).latent_dist.mode()`."""
    import torch

    with torch.no_grad():
        if op == "encode":
            field = ENCODED.get(type(vae).__name__)
            out = vae.encode(x)
            return getattr(out, field) if field else out.latent_dist.mode()
        if getattr(getattr(vae, "config", None), "timestep_conditioning", False):
            # LTX-Video 0.9.1+'s decoder is conditioned on the decode timestep,
            # one per item, as diffusers' LTXPipeline passes it
            # (`vae.decode(latents, timestep)`; its default decode_timestep 0.0).
            return vae.decode(x, torch.zeros((x.shape[0],), device=x.device, dtype=x.dtype)).sample
        if type(vae).__name__ in FRAMES_AS_BATCH:
            # SVD's temporal decoder mixes the frames of its batch: every item is one frame of one clip
            # (StableVideoDiffusionPipeline.decode_latents passes num_frames = the chunk it decodes).
            return vae.decode(x, num_frames=x.shape[0]).sample
        return vae.decode(x).sample


def configure_tiling(vae, doc, tile, host_tiles):
    """Tiling as a point asks: the host's (a video class's own tiles,
    `enable_tiling()`, framewise where the config's `host_tiling` says),
    `tile` px (`_tile`), or none. Returns the spatial tile the op runs (0:
    untiled); one VAE serves every point of a child's group."""
    if host_tiles:
        vae.enable_tiling()
        if (doc.get("host_tiling") or {}).get("frames"):
            vae.use_framewise_decoding = True
            vae.use_framewise_encoding = True
        return int(getattr(vae, "tile_sample_min_width", 0) or getattr(vae, "tile_sample_min_size", 0))
    if tile:
        _tile(vae, tile)
        return tile
    if getattr(vae, "use_tiling", False):
        vae.disable_tiling()
    return 0


def temporal_tile(vae, op, frames):
    """The frames of the temporal tiles a video VAE walks a clip in: its
    class's framewise switch for the op on (HunyuanVideo's default, or the
    host's tiling) and a clip longer than one tile; else 0 (the clip at
    once, or a causal walk). A GPU row and a traced row record the same."""
    if hasattr(vae, "tokens_chunk_size") and hasattr(vae, "token_overlap"):
        # MiniMax-H3 decodes `tokens_chunk_size + token_overlap` latent frames a chunk (28 frames as released,
        # autoencoder_kl_minimax_h3.py _decode) and encodes `clip_length` (17) a clip: the registry's one walk per
        # family is the decode's chunk, and an encode is keyed by it too (its clips sit inside one chunk's frames).
        size = (vae.tokens_chunk_size + vae.token_overlap) * vae.temporal_compression_ratio
        return size if frames > size else 0
    switch = "use_framewise_decoding" if op == "decode" else "use_framewise_encoding"
    size = getattr(vae, "tile_sample_min_num_frames", 0)
    return size if getattr(vae, switch, False) and size and frames > size else 0


def release():
    """Frees what an earlier VAE of the process left on the device."""
    import gc

    import torch

    gc.collect()
    torch.cuda.empty_cache()


def measure_once(vae, doc, op, dtype, width, height, batch, frames=1):
    """(reserved, allocated, driver) deltas in bytes of one op on a VAE
    already on the device; raises MemoryError on OOM. The baseline is taken
    after the input is made and the allocator's cache is released, so a
    warm op (one after another in the same process) counts only itself."""
    import torch

    x = make_input(doc, op, dtype, width, height, batch, "cuda", frames=frames)
    torch.cuda.synchronize()
    # Whatever loading (or an earlier op) left in the allocator's cache would
    # be reused by the op and hide part of its demand.
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    reserved0 = torch.cuda.memory_reserved()
    allocated0 = torch.cuda.memory_allocated()
    free0, total = torch.cuda.mem_get_info()
    try:
        out = run_op(vae, op, x)
        torch.cuda.synchronize()
    except torch.cuda.OutOfMemoryError as e:
        raise MemoryError(str(e)) from None
    free1, _ = torch.cuda.mem_get_info()
    want = expected_shape(doc, op, width, height, batch, frames=frames)
    if list(out.shape) != want:
        raise RuntimeError("%s %s: output %s, expected %s" % (doc["family"], op, list(out.shape), want))
    del out, x
    reserved = torch.cuda.max_memory_reserved() - reserved0
    allocated = torch.cuda.max_memory_allocated() - allocated0
    driver = (total - free1) - (total - free0)
    return max(reserved, 0), max(allocated, 0), max(driver, 0)


def measure(doc, op, tile, dtype, width, height, batch, frames=1, host_tiles=False):
    """One op in a VAE built for it: (reserved, allocated, driver) deltas."""
    vae = build(doc, dtype, "cuda", 0)
    configure_tiling(vae, doc, tile, host_tiles)
    return measure_once(vae, doc, op, dtype, width, height, batch, frames)
