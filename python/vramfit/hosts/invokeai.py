"""InvokeAI's estimator signatures (``invokeai/backend/util/vae_working_memory.py``), priced by vramfit.

Each function takes the arguments InvokeAI's does, in its conventions, and
returns what ``vramfit reserve`` answers for the same query, in bytes:

- ``image_tensor`` is the latents for a decode (the image is 8× their last
  two dimensions, InvokeAI's ``LATENT_SCALE_FACTOR``) and the pixels for an
  encode; its first dimension is the batch when it has four or more;
- the VAE runs in its parameters' dtype (``fp32=True`` for the SD nodes'
  upcast: run fp32, weights loaded in their own dtype);
- ``tile_size`` None runs untiled, 0 means the VAE's own tile
  (``vae.tile_sample_min_size``), anything else is the tile edge in pixels.
  InvokeAI's tiled decodes are diffusers' (``host="diffusers"``) but for
  FLUX.1, which InvokeAI tiles itself (``invokeai-flux``);
- the platform is the host's: ROCm (``miopen``) when torch is a ROCm build,
  else CUDA (``cudnn``); the allocator from ``PYTORCH_CUDA_ALLOC_CONF`` /
  ``PYTORCH_ALLOC_CONF``; the OS this one. Every one can be given by keyword
  (``backend``, ``allocator``, ``os``, ``env``, ``coefficients``);
- the answer adds the platform's first use once (a fresh process's first
  decode must fit); ``warm=True`` leaves it out for a process that has
  already run the op (docs/fit.md, "First use").

A query vramfit refuses raises ``ValueError`` with the CLI's words.
"""

from . import dtype_of, query_of, shape_of

__all__ = [
    "LATENT_SCALE_FACTOR",
    "estimate_vae_working_memory_sd15_sdxl",
    "estimate_vae_working_memory_flux",
    "estimate_vae_working_memory_flux2",
    "estimate_vae_working_memory_qwen_image",
    "estimate_vae_working_memory_sd3",
    "estimate_vae_working_memory_cogview4",
    "estimate_vae_working_memory_anima",
    "estimate_vae_working_memory_wan",
    "estimate_vae_working_memory_ltx2",
]

#: InvokeAI's ``invokeai.app.invocations.constants.LATENT_SCALE_FACTOR``.
LATENT_SCALE_FACTOR = 8


def _image(operation, image_tensor):
    """(width, height, batch) of the image an InvokeAI image estimator is asked about."""
    shape = shape_of(image_tensor)
    if len(shape) < 2:
        raise ValueError("image_tensor: expected at least 2 dimensions, got shape %s" % (shape,))
    scale = LATENT_SCALE_FACTOR if operation == "decode" else 1
    batch = shape[0] if len(shape) >= 4 else 1
    return scale * shape[-1], scale * shape[-2], batch


def _tile(tile_size, vae, zero_is_default=True):
    """A tile edge from InvokeAI's ``tile_size``: None untiled, 0 the VAE's own tile."""
    if tile_size is None:
        return 0
    if tile_size == 0 and zero_is_default:
        default = getattr(vae, "tile_sample_min_size", None)
        if not isinstance(default, int):
            raise ValueError("tile_size 0 asks for the VAE's own tile, and it has no integer tile_sample_min_size")
        return default
    return tile_size


def _priced(family, operation, image_tensor, vae, *, tile=0, host="diffusers", fp32=None, **kw):
    width, height, batch = _image(operation, image_tensor)
    loaded = dtype_of(vae)
    run = "fp32" if fp32 else loaded
    return query_of(family, operation, width, height, batch=batch, tile=tile, host=host, dtype=run,
                    loaded_dtype=loaded, **kw).bytes


def estimate_vae_working_memory_sd15_sdxl(operation, image_tensor, vae, tile_size, fp32, **platform):
    """SD 1.x / SDXL (family ``sd``); ``fp32`` runs the VAE in fp32 whatever its weights."""
    return _priced("sd", operation, image_tensor, vae, tile=_tile(tile_size, vae), fp32=fp32, **platform)


def estimate_vae_working_memory_flux(operation, image_tensor, vae, **platform):
    """FLUX.1 (family ``flux1``), untiled as InvokeAI calls it."""
    return _priced("flux1", operation, image_tensor, vae, host="invokeai-flux", **platform)


def estimate_vae_working_memory_flux2(operation, image_tensor, vae, tile_size=None, device=None, **platform):
    """FLUX.2 (family ``flux2``); ``device`` picks the backend as InvokeAI's does (a ROCm build's ``cuda`` is
    MIOpen)."""
    return _priced("flux2", operation, image_tensor, vae, tile=_tile(tile_size, vae), device=device, **platform)


def estimate_vae_working_memory_qwen_image(operation, image_tensor, vae, tile_size=None, **platform):
    """Qwen-Image (family ``qwen_image``): a 5-D ``(B, C, F, H, W)`` tensor; ``tile_size`` is already resolved
    (None or 0: untiled)."""
    return _priced("qwen_image", operation, image_tensor, vae, tile=tile_size or 0, **platform)


def estimate_vae_working_memory_sd3(operation, image_tensor, vae, **platform):
    """SD3 / SD3.5 (family ``sd3``)."""
    return _priced("sd3", operation, image_tensor, vae, **platform)


def estimate_vae_working_memory_cogview4(operation, image_tensor, vae, **platform):
    """CogView4 (family ``cogview4``)."""
    return _priced("cogview4", operation, image_tensor, vae, **platform)


def estimate_vae_working_memory_anima(operation, image_tensor, vae, tile_size, **platform):
    """Anima's single images through the Wan 2.1 VAE (family ``wan21``, one frame)."""
    return _priced("wan21", operation, image_tensor, vae, tile=tile_size or 0, **platform)


def _wan_family(vae):
    """Wan 2.2 TI2V-5B's VAE (``z_dim`` 48) or Wan 2.1's (16, also Wan 2.2 A14B's), as InvokeAI tells them."""
    z_dim = getattr(getattr(vae, "config", None), "z_dim", 16)
    try:
        z_dim = int(z_dim)
    except (TypeError, ValueError):
        z_dim = 48
    return "wan22" if z_dim >= 32 else "wan21"


def estimate_vae_working_memory_wan(operation, vae, pixel_height, pixel_width, pixel_frames, tile_size=None,
                                    streaming=False, **platform):
    """A Wan VAE's clip (``wan21`` or ``wan22`` by ``vae.config.z_dim``) in pixel dimensions. ``streaming`` is
    accepted and changes nothing: vramfit's clip term is one copy of the clip, which a streaming decode does
    not exceed (docs/hosts.md)."""
    del streaming
    loaded = dtype_of(vae)
    return query_of(_wan_family(vae), operation, pixel_width, pixel_height, frames=pixel_frames,
                    tile=tile_size or 0, dtype=loaded, loaded_dtype=loaded, **platform).bytes


def estimate_vae_working_memory_ltx2(operation, vae, pixel_height, pixel_width, pixel_frames, tile_size=None,
                                     temporal_tile=None, tiled=False, **platform):
    """LTX-2 (family ``ltx2``). A decode is always tiled in space and time, as InvokeAI runs it: ``tile_size``
    or the VAE's ``tile_sample_min_height`` (512), ``temporal_tile`` or its ``tile_sample_min_num_frames``
    (16); an encode likewise when ``tiled``, else untiled over the whole clip."""
    loaded = dtype_of(vae)
    if operation == "decode" or tiled:
        tile = tile_size or int(getattr(vae, "tile_sample_min_height", 512))
        frames_tile = temporal_tile or int(getattr(vae, "tile_sample_min_num_frames", 16))
    else:
        tile, frames_tile = 0, 0
    return query_of("ltx2", operation, pixel_width, pixel_height, frames=pixel_frames, tile=tile,
                    temporal_tile=frames_tile, dtype=loaded, loaded_dtype=loaded, **platform).bytes
