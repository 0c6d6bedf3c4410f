"""One measurement on a real GPU, in the child process: build the VAE from
its configuration with random weights (nothing is downloaded), load it and
the input onto the device, take the baseline, run the op once, and report
the deltas of PyTorch's peak reserved and allocated memory and of the
driver's used memory.

Read against diffusers 0.36.0 (the version the package pins):
`AutoencoderKL`, `AutoencoderKLFlux2` and `AutoencoderKLQwenImage` are built
with `from_config`; `decode(z).sample` and `encode(x).latent_dist`; tiling
through `enable_tiling()` with `tile_sample_min_size` (and the latent tile
derived from it) set on the model.
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


def measure(doc, op, tile, dtype, width, height, batch):
    """(reserved, allocated, driver) deltas in bytes; raises MemoryError on OOM."""
    import diffusers
    import torch

    config = dict(doc["config"])
    cls = getattr(diffusers, config.pop("_class_name"))
    dt = _torch_dtype(torch, dtype)
    vae = cls.from_config(config).to(device="cuda", dtype=dt).eval()
    if tile:
        vae.enable_tiling()
        vae.tile_sample_min_size = tile
        if hasattr(vae, "tile_latent_min_size"):
            vae.tile_latent_min_size = tile // 8
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
