"""One measurement on a real GPU, in the child process: build the VAE from
its configuration with random weights (nothing is downloaded), load it and
the input onto the device, take the baseline, run the op once, and report
the deltas of PyTorch's peak reserved and allocated memory and of the
driver's used memory.

Read against diffusers' sources (`autoencoder_kl.py`,
`autoencoder_kl_flux2.py`, `autoencoder_kl_qwenimage.py`; the package pins
0.36.0): the three classes are built with `from_config`; `decode(z).sample`
takes latents of `latent_channels` (`z_dim`) at an eighth of the image (the
FLUX.2 patching happens in its pipeline, not its VAE; Qwen-Image's VAE takes
a frame axis); `encode(x).latent_dist`; tiling as `_tile` says.
"""


def _torch_dtype(torch, name):
    return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]


def facts():
    import platform

    import diffusers
    import torch

    props = torch.cuda.get_device_properties(0)
    driver = ""
    try:
        driver = torch.cuda.driver_version() if hasattr(torch.cuda, "driver_version") else ""
    except Exception:  # not every build exposes it
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
    `AutoencoderKLFlux2`) read `tile_sample_min_size` and the latent tile
    derived from it (an eighth: four blocks, three downsamples); the
    video-style ones (`AutoencoderKLQwenImage`, Wan's family) take the tile's
    height and width in `enable_tiling`."""
    import inspect

    params = inspect.signature(vae.enable_tiling).parameters
    if "tile_sample_min_height" in params:
        vae.enable_tiling(tile_sample_min_height=tile, tile_sample_min_width=tile)
        return
    vae.enable_tiling()
    vae.tile_sample_min_size = tile
    vae.tile_latent_min_size = tile // 8


def measure(doc, op, tile, dtype, width, height, batch):
    """(reserved, allocated, driver) deltas in bytes; raises MemoryError on OOM."""
    import diffusers
    import torch

    config = dict(doc["config"])
    cls = getattr(diffusers, config.pop("_class_name"))
    dt = _torch_dtype(torch, dtype)
    vae = cls.from_config(config).to(device="cuda", dtype=dt).eval()
    if tile:
        _tile(vae, tile)
    channels = config.get("latent_channels", config.get("z_dim", 4))
    video = cls.__name__ == "AutoencoderKLQwenImage"  # frames on a third axis
    if op == "decode":
        shape = [batch, channels, height // 8, width // 8]
    else:
        shape = [batch, 3, height, width]
    if video:
        shape.insert(2, 1)
    x = torch.randn(shape, device="cuda", dtype=dt)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    reserved0 = torch.cuda.memory_reserved()
    allocated0 = torch.cuda.memory_allocated()
    free0, total = torch.cuda.mem_get_info()
    try:
        with torch.no_grad():
            out = vae.decode(x).sample if op == "decode" else vae.encode(x).latent_dist.mode()
        torch.cuda.synchronize()
    except torch.cuda.OutOfMemoryError as e:
        raise MemoryError(str(e)) from None
    free1, _ = torch.cuda.mem_get_info()
    del out
    reserved = torch.cuda.max_memory_reserved() - reserved0
    allocated = torch.cuda.max_memory_allocated() - allocated0
    driver = (total - free1) - (total - free0)
    return max(reserved, 0), max(allocated, 0), max(driver, 0)
