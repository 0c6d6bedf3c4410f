"""InvokeAI's estimator signatures (``invokeai/backend/util/vae_working_memory.py``), priced by vramfit.

Each function takes the arguments InvokeAI's does, in its conventions, and
returns what ``vramfit reserve`` answers for the same query, in bytes:

- ``image_tensor`` is the latents for a decode (the image is 8× their last
  two dimensions, InvokeAI's ``LATENT_SCALE_FACTOR``) and the pixels for an
  encode, of exactly the rank and channels each call site passes
  (:data:`CALL_SITES`); its first dimension is the batch;
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

A query vramfit refuses raises ``ValueError`` with the CLI's words; an
argument InvokeAI's own types exclude (an ``operation`` other than exactly
``"decode"`` or ``"encode"``, a tensor of another rank or channel count, a
VAE without ``parameters()``, a malformed ``config.z_dim``) raises
``ValueError`` or ``TypeError`` with words.
"""

from . import boundary, config_int, dtype_of, operation_of, query_of, shape_of

__all__ = [
    "LATENT_SCALE_FACTOR",
    "CALL_SITES",
    "estimate_vae_working_memory_sd15_sdxl",
    "estimate_vae_working_memory_flux",
    "estimate_vae_working_memory_flux2",
    "estimate_vae_working_memory_qwen_image",
    "estimate_vae_working_memory_sd3",
    "estimate_vae_working_memory_cogview4",
    "estimate_vae_working_memory_anima",
    "estimate_vae_working_memory_wan",
    "estimate_vae_working_memory_ltx2",
    "estimate_vae_working_memory_minimax_h3",
]

#: InvokeAI's ``invokeai.app.invocations.constants.LATENT_SCALE_FACTOR``.
LATENT_SCALE_FACTOR = 8

#: Where each estimator is called in InvokeAI 6.14.2 (``invokeai/app/invocations/``) and the tensor each call
#: passes: decodes pass the node's latents as loaded, ``[B, C, h, w]`` at 1/8 of the image (Qwen-Image's and
#: Anima's may be 5-D with one frame, ``[B, C, 1, h, w]``); encodes pass the image as
#: ``image_resized_to_grid_as_tensor`` makes it, ``[1, 3, H, W]`` (a 3-D image is given its batch axis first).
#: FLUX.2's latents are the VAE's own 32 channels at 1/8 (flux2_vae_decode.py:47-57: "(B, 32, H, W)"), not the
#: transformer's packed 128 at 1/16. Channels per estimator (decode latents; encodes take 3):
CALL_SITES = {
    "estimate_vae_working_memory_sd15_sdxl": dict(
        channels=4, ranks=(4,), sites="latents_to_image.py:59-65, image_to_latents.py:79-85"),
    "estimate_vae_working_memory_flux": dict(
        channels=16, ranks=(4,), sites="flux_vae_decode.py:48-50, flux_vae_encode.py:46-48, "
        "z_image_latents_to_image.py:58, z_image_image_to_latents.py:52, anima_latents_to_image.py:135-139"),
    "estimate_vae_working_memory_flux2": dict(
        channels=32, ranks=(4,), sites="flux2_vae_decode.py:56-58, flux2_vae_encode.py:56-61"),
    "estimate_vae_working_memory_qwen_image": dict(
        channels=16, ranks=(4, 5), sites="qwen_image_latents_to_image.py:69-74, qwen_image_image_to_latents.py:73-78"),
    "estimate_vae_working_memory_sd3": dict(
        channels=16, ranks=(4,), sites="sd3_latents_to_image.py:50-52, sd3_image_to_latents.py:39-41"),
    "estimate_vae_working_memory_cogview4": dict(
        channels=16, ranks=(4,), sites="cogview4_latents_to_image.py:48-50, cogview4_image_to_latents.py:43-45"),
    "estimate_vae_working_memory_anima": dict(
        channels=16, ranks=(4, 5), sites="anima_latents_to_image.py:121-133, anima_image_to_latents.py:66-71"),
}


def _image(function, operation, image_tensor):
    """(width, height, batch) of the image an InvokeAI image estimator is asked about, from exactly the tensors
    its call sites pass (:data:`CALL_SITES`)."""
    site = CALL_SITES[function]
    shape = shape_of(image_tensor)
    if len(shape) not in site["ranks"]:
        raise ValueError("%s: image_tensor of shape %s; InvokeAI passes %s (%s)" % (
            function, shape, " or ".join("%d-D" % r for r in site["ranks"]), site["sites"]))
    channels = site["channels"] if operation == "decode" else 3
    what = "latents" if operation == "decode" else "pixels"
    if shape[1] != channels:
        raise ValueError("%s: %s of shape %s have %d channels; this VAE's %s have %d (%s)" % (
            function, what, shape, shape[1], what, channels, site["sites"]))
    if len(shape) == 5 and shape[2] != 1:
        raise ValueError("%s: image_tensor of shape %s has %d frames; the image estimators take one frame"
                         % (function, shape, shape[2]))
    scale = LATENT_SCALE_FACTOR if operation == "decode" else 1
    return scale * shape[-1], scale * shape[-2], shape[0]


def _tile(tile_size, vae, zero_is_default=True):
    """A tile edge from InvokeAI's ``tile_size``: None untiled, 0 the VAE's own tile."""
    if tile_size is None:
        return 0
    if isinstance(tile_size, bool) or not isinstance(tile_size, int):
        raise TypeError("tile_size: expected None or an integer, got %s %r" % (type(tile_size).__name__, tile_size))
    if tile_size < 0:
        raise ValueError("tile_size %d: expected None, 0 (the VAE's own tile) or a tile edge in pixels" % tile_size)
    if tile_size == 0 and zero_is_default:
        default = getattr(vae, "tile_sample_min_size", None)
        if isinstance(default, bool) or not isinstance(default, int) or default <= 0:
            raise ValueError("tile_size 0 asks for the VAE's own tile, and it has no positive integer "
                             "tile_sample_min_size")
        return default
    return tile_size


def _priced(function, family, operation, image_tensor, vae, *, tile=0, host="diffusers", fp32=None, **kw):
    operation = operation_of(operation)
    width, height, batch = _image(function, operation, image_tensor)
    loaded = dtype_of(vae)
    if fp32 is not None and not isinstance(fp32, bool):
        raise TypeError("fp32: expected True or False, got %r" % (fp32,))
    run = "fp32" if fp32 else loaded
    return query_of(family, operation, width, height, batch=batch, tile=tile, host=host, dtype=run,
                    loaded_dtype=loaded, **kw).bytes


@boundary
def estimate_vae_working_memory_sd15_sdxl(operation, image_tensor, vae, tile_size, fp32, **platform):
    """SD 1.x / SDXL (family ``sd``); ``fp32`` runs the VAE in fp32 whatever its weights."""
    return _priced("estimate_vae_working_memory_sd15_sdxl", "sd", operation, image_tensor, vae,
                   tile=_tile(tile_size, vae), fp32=fp32, **platform)


@boundary
def estimate_vae_working_memory_flux(operation, image_tensor, vae, **platform):
    """FLUX.1 (family ``flux1``), untiled as InvokeAI calls it; also Z-Image's decodes and encodes, which InvokeAI
    runs through FLUX.1's VAE."""
    return _priced("estimate_vae_working_memory_flux", "flux1", operation, image_tensor, vae, host="invokeai-flux",
                   **platform)


@boundary
def estimate_vae_working_memory_flux2(operation, image_tensor, vae, tile_size=None, device=None, **platform):
    """FLUX.2 (family ``flux2``); ``device`` picks the backend as InvokeAI's does (a ROCm build's ``cuda`` is
    MIOpen)."""
    return _priced("estimate_vae_working_memory_flux2", "flux2", operation, image_tensor, vae,
                   tile=_tile(tile_size, vae), device=device, **platform)


@boundary
def estimate_vae_working_memory_qwen_image(operation, image_tensor, vae, tile_size=None, **platform):
    """Qwen-Image (family ``qwen_image``): ``tile_size`` is already resolved (None or 0: untiled)."""
    return _priced("estimate_vae_working_memory_qwen_image", "qwen_image", operation, image_tensor, vae,
                   tile=_tile(tile_size, vae, zero_is_default=False), **platform)


@boundary
def estimate_vae_working_memory_sd3(operation, image_tensor, vae, **platform):
    """SD3 / SD3.5 (family ``sd3``)."""
    return _priced("estimate_vae_working_memory_sd3", "sd3", operation, image_tensor, vae, **platform)


@boundary
def estimate_vae_working_memory_cogview4(operation, image_tensor, vae, **platform):
    """CogView4 (family ``cogview4``)."""
    return _priced("estimate_vae_working_memory_cogview4", "cogview4", operation, image_tensor, vae, **platform)


@boundary
def estimate_vae_working_memory_anima(operation, image_tensor, vae, tile_size, **platform):
    """Anima's single images through the Wan 2.1 VAE (family ``wan21``, one frame)."""
    return _priced("estimate_vae_working_memory_anima", "wan21", operation, image_tensor, vae,
                   tile=_tile(tile_size, vae, zero_is_default=False), **platform)


#: Wan's VAEs by ``config.z_dim``, as InvokeAI tells them apart (vae_working_memory.py:308-315): 16 is Wan 2.1's
#: VAE (also Wan 2.2 A14B's), 48 Wan 2.2 TI2V-5B's. Any other value (or a malformed one) is refused.
WAN_Z_DIM = {16: "wan21", 48: "wan22"}


def _pixels(value, what):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s: expected an integer, got %s %r" % (what, type(value).__name__, value))
    if value <= 0:
        raise ValueError("%s: expected a positive integer, got %d" % (what, value))
    return value


@boundary
def estimate_vae_working_memory_wan(operation, vae, pixel_height, pixel_width, pixel_frames, tile_size=None,
                                    streaming=False, **platform):
    """A Wan VAE's clip (``wan21`` or ``wan22`` by ``vae.config.z_dim``) in pixel dimensions. ``streaming`` is
    accepted and changes nothing: vramfit's clip term is one copy of the clip, which a streaming decode does
    not exceed (docs/hosts.md)."""
    operation = operation_of(operation)
    if not isinstance(streaming, bool):
        raise TypeError("streaming: expected True or False, got %r" % (streaming,))
    family = WAN_Z_DIM[config_int(vae, "z_dim", allowed=tuple(WAN_Z_DIM))]
    loaded = dtype_of(vae)
    return query_of(family, operation, _pixels(pixel_width, "pixel_width"), _pixels(pixel_height, "pixel_height"),
                    frames=_pixels(pixel_frames, "pixel_frames"),
                    tile=_tile(tile_size, vae, zero_is_default=False), dtype=loaded, loaded_dtype=loaded,
                    **platform).bytes


@boundary
def estimate_vae_working_memory_ltx2(operation, vae, pixel_height, pixel_width, pixel_frames, tile_size=None,
                                     temporal_tile=None, tiled=False, **platform):
    """LTX-2 (family ``ltx2``). A decode is always tiled in space and time, as InvokeAI runs it: ``tile_size``
    or the VAE's ``tile_sample_min_height`` (512), ``temporal_tile`` or its ``tile_sample_min_num_frames``
    (16); an encode likewise when ``tiled``, else untiled over the whole clip."""
    operation = operation_of(operation)
    if not isinstance(tiled, bool):
        raise TypeError("tiled: expected True or False, got %r" % (tiled,))
    loaded = dtype_of(vae)
    if operation == "decode" or tiled:
        tile = _tile(tile_size, vae, zero_is_default=False) or config_int(vae, "tile_sample_min_height", 512)
        frames_tile = (_tile(temporal_tile, vae, zero_is_default=False)
                       or config_int(vae, "tile_sample_min_num_frames", 16))
    else:
        tile, frames_tile = 0, 0
    return query_of("ltx2", operation, _pixels(pixel_width, "pixel_width"), _pixels(pixel_height, "pixel_height"),
                    frames=_pixels(pixel_frames, "pixel_frames"), tile=tile, temporal_tile=frames_tile,
                    dtype=loaded, loaded_dtype=loaded, **platform).bytes


@boundary
def estimate_vae_working_memory_minimax_h3(operation, vae, pixel_height, pixel_width, pixel_frames, **platform):
    """MiniMax-H3 (family ``minimax_h3``), in pixel dimensions as InvokeAI 7.0 asks it
    (``minimax_h3_latents_to_video.py:75-84`` @6a8e8f33: ``(T − 2) // 5 × 17 + 5`` frames from ``T`` latent
    frames, 16× in space). The class tiles in space by default and InvokeAI never turns it off: the tile is
    ``vae.tile_sample_min_height`` (256) while ``vae.use_tiling`` holds, else none; the temporal walk is the
    family's (chunks of 28 frames). The dtype is the decoder's, ``vae.post_quant_conv``'s where the VAE has one:
    the first parameter is the encoder's, which the class pins to float32 whatever the load dtype."""
    operation = operation_of(operation)
    tiled = getattr(vae, "use_tiling", True)
    if not isinstance(tiled, bool):
        raise TypeError("vae.use_tiling: expected True or False, got %r" % (tiled,))
    tile = config_int(vae, "tile_sample_min_height", 256) if tiled else 0
    decoder = getattr(vae, "post_quant_conv", None)
    loaded = dtype_of(decoder if callable(getattr(decoder, "parameters", None)) else vae)
    return query_of("minimax_h3", operation, _pixels(pixel_width, "pixel_width"),
                    _pixels(pixel_height, "pixel_height"), frames=_pixels(pixel_frames, "pixel_frames"), tile=tile,
                    dtype=loaded, loaded_dtype=loaded, **platform).bytes
