"""ComfyUI's ``VAE.memory_used_decode`` / ``memory_used_encode`` conventions, priced by vramfit.

ComfyUI asks with the shape it is about to run and the VAE's dtype, and
divides free memory by the answer to size its batch, so the answer is per
batch item. What each VAE type is handed depends on that type, as
``comfy/sd.py`` sets it up (docs/hosts.md, "ComfyUI's VAE types", names the
lines):

- an image VAE (``latent_dim`` 2) is asked with 4-D latents
  ``[B, C, h, w]`` for a decode (``VAE.decode`` drops a 5-D input to its
  first frame before it asks, sd.py:838-841) and 4-D pixels
  ``[B, 3, H, W]`` for an encode (sd.py:906-918);
- a 3-D VAE (``latent_dim`` 3: Wan, LTX, HunyuanVideo, Mochi, and the
  Qwen-Image VAE, which ComfyUI loads as its Wan 2.1 VAE) is asked with 5-D
  latents ``[B, C, T, h, w]`` for a decode, whose ``T`` latent frames decode
  to ``(T − 1) × temporal + 1`` frames, and 5-D pixels ``[1, 3, F, H, W]``
  for an encode (a batch of ``F`` images is encoded as one ``F``-frame clip,
  sd.py:912-918);
- ``C`` is the type's latent channel count and ``h``, ``w`` the image over
  its spatial ratio: FLUX.2's latents are 128 channels at 1/16, not 1/8.

A shape of another rank, another channel count, or a Qwen-Image clip of more
than one frame is refused with ``ValueError``: ComfyUI never asks a VAE of
that type with it, so pricing it would price something else. ComfyUI decodes
untiled and, when it tiles, moves each tile to the host (``host="comfyui"``).

The platform is the host's as in :mod:`vramfit_vae.hosts.invokeai`, and every
part of it can be given by keyword. The answer adds the platform's first use
once, as every default answer does; ``warm=True`` leaves it out once the
process has decoded.
"""

from . import boundary, query_of, shape_of

__all__ = ["memory_used_decode", "memory_used_encode", "VAE_TYPES"]

#: Where each fact below was read: ``comfy/sd.py`` ``VAE.__init__`` and ``VAE.decode`` / ``VAE.encode``, and
#: ``comfy/latent_formats.py``. The stored upstream snapshot (Comfy-Org/ComfyUI@a125cd84) predates FLUX.2, so
#: the lines are those of hiddenswitch/ComfyUI@2e667071, a packaging fork that tracks it.
SOURCE = "ComfyUI comfy/sd.py (hiddenswitch/ComfyUI@2e667071, tracking Comfy-Org/ComfyUI)"

#: vramfit family -> how ComfyUI's VAE type for it is asked: ``latent_dim`` (2: image, 3: clip), latent
#: ``channels``, ``spatial`` ratio, ``temporal`` ratio (3-D only), ``single_frame`` (a 3-D type vramfit prices as
#: images only; the family that prices its clips, where one does), and the ``sd.py`` lines that set them.
VAE_TYPES = {
    "sd": dict(latent_dim=2, channels=4, spatial=8, lines="sd.py:336-342,431-456 (KL default, SD1.x/SDXL, z_channels 4)"),
    "flux1": dict(latent_dim=2, channels=16, spatial=8, lines="sd.py:336-342,431-456 (KL branch, z_channels 16)"),
    "sd3": dict(latent_dim=2, channels=16, spatial=8, lines="sd.py:336-342,431-456 (KL branch, z_channels 16)"),
    "cogview4": dict(latent_dim=2, channels=16, spatial=8, lines="sd.py:336-342,431-456 (KL branch, z_channels 16)"),
    "flux2": dict(latent_dim=2, channels=128, spatial=16,
                  lines="sd.py:336-342,443-449 (KL branch with bn.running_mean: downscale x2, channels x4, decode x4.0); "
                        "latent_formats.py Flux2 (128 channels)"),
    "qwen_image": dict(latent_dim=3, channels=16, spatial=8, temporal=4, single_frame="wan21",
                       lines="sd.py:567-581 (Qwen-Image's VAE has Wan 2.1's keys: loaded as the Wan 2.1 VAE)"),
    "wan21": dict(latent_dim=3, channels=16, spatial=8, temporal=4, lines="sd.py:567-581 (Wan 2.1 VAE)"),
    "wan22": dict(latent_dim=3, channels=48, spatial=16, temporal=4, lines="sd.py:555-566 (Wan 2.2 VAE)"),
    "ltx2": dict(latent_dim=3, channels=128, spatial=32, temporal=8,
                 lines="sd.py:486-509 (lightricks ltxv, version 2: encoder.down_blocks.1.conv.conv.bias)"),
    # One ComfyUI type serves LTX-Video 0.9.x and LTX-2 alike (version 0: 512-channel conv1, 1: 1024), asked
    # with the same 128-channel latents at 1/32 and 1/8 of the frames.
    "ltxv": dict(latent_dim=3, channels=128, spatial=32, temporal=8,
                 lines="sd.py:486-509 (lightricks ltxv, versions 0 and 1: LTX-Video 0.9.x)"),
    "hunyuanvideo": dict(latent_dim=3, channels=16, spatial=8, temporal=4,
                         lines="sd.py:525-540 (decoder.conv_in.conv: HunyuanVideo, time_compress 4)"),
    "mochi": dict(latent_dim=3, channels=12, spatial=8, temporal=6, lines="sd.py:471-485 (genmo mochi vae)"),
    "hunyuanvideo15": dict(latent_dim=3, channels=32, spatial=16, temporal=4,
                           lines="sd.py:508-524 (decoder.conv_in.conv with 32 channels: HunyuanVideo 1.5)"),
    "hunyuanimage": dict(latent_dim=2, channels=64, spatial=32,
                         lines="sd.py:401-413 (decoder.conv_in with 64 channels: HunyuanImage 2.1, ffactor_spatial 32)"),
    "hunyuanimage_refiner": dict(latent_dim=3, channels=32, spatial=16, temporal=4, single_frame=True,
                                 lines="sd.py:414-429 (decoder.conv_in.conv with 32 channels and not_video: HunyuanImage "
                                       "2.1's refiner)"),
    "cosmos1": dict(latent_dim=3, channels=16, spatial=8, temporal=8,
                    lines="sd.py:541-551 (decoder.unpatcher3d.wavelets: Cosmos 1.0, 8x8x8)"),
}


def _type_of(family, coefficients):
    from .. import _coefficients_of

    if not isinstance(family, str):
        raise TypeError("family: expected a vramfit family or model name, got %s" % type(family).__name__)
    c = _coefficients_of(coefficients)
    resolved = c.family(family)
    facts = VAE_TYPES.get(resolved)
    if facts is None:
        raise ValueError("%s: ComfyUI (%s) loads no VAE type vramfit maps to family '%s'; the drop-in serves %s"
                         % (family, SOURCE, resolved, ", ".join(sorted(VAE_TYPES))))
    return resolved, facts


def _check(shape, facts, family, what, rank, channels):
    if len(shape) != rank:
        raise ValueError("%s %s: ComfyUI asks %s's VAE type (%s) with %d-D %s" % (
            what, shape, family, facts["lines"], rank,
            "[B, C, T, h, w] latents" if rank == 5 and what == "decode shape" else
            "[B, C, h, w] latents" if what == "decode shape" else
            "[1, 3, F, H, W] pixels" if rank == 5 else "[B, 3, H, W] pixels"))
    if shape[1] != channels:
        raise ValueError("%s %s: %d channels, and ComfyUI's VAE type for %s (%s) has %d" % (
            what, shape, shape[1], family, facts["lines"], channels))


def _clip_hint(facts):
    """Where a clip of a single-frame type can be priced: the family of the same architecture, if one is."""
    clip = facts["single_frame"]
    return ": price the clip with family %s (the same architecture)" % clip if isinstance(clip, str) else ""


@boundary
def memory_used_decode(family, shape, dtype, **platform):
    """Bytes one batch item of this decode reserves."""
    resolved, facts = _type_of(family, platform.get("coefficients"))
    dims = shape_of(shape)
    if facts["latent_dim"] == 2:
        _check(dims, facts, resolved, "decode shape", 4, facts["channels"])
        s = facts["spatial"]
        return query_of(family, "decode", dims[3] * s, dims[2] * s, dtype=dtype, host="comfyui", **platform).bytes
    _check(dims, facts, resolved, "decode shape", 5, facts["channels"])
    frames = (dims[2] - 1) * facts["temporal"] + 1
    width, height = dims[4] * facts["spatial"], dims[3] * facts["spatial"]
    if facts.get("single_frame"):
        if dims[2] != 1:
            raise ValueError("decode shape %s: %d latent frames; vramfit prices %s (%s) as single images%s"
                             % (dims, dims[2], resolved, facts["lines"], _clip_hint(facts)))
        return query_of(family, "decode", width, height, dtype=dtype, host="comfyui", **platform).bytes
    return query_of(family, "decode", width, height, frames=frames, dtype=dtype, host="comfyui", **platform).bytes


@boundary
def memory_used_encode(family, shape, dtype, **platform):
    """Bytes one batch item of this encode reserves."""
    resolved, facts = _type_of(family, platform.get("coefficients"))
    dims = shape_of(shape)
    if facts["latent_dim"] == 2:
        _check(dims, facts, resolved, "encode shape", 4, 3)
        return query_of(family, "encode", dims[3], dims[2], dtype=dtype, host="comfyui", **platform).bytes
    _check(dims, facts, resolved, "encode shape", 5, 3)
    if facts.get("single_frame"):
        if dims[2] != 1:
            raise ValueError("encode shape %s: ComfyUI encodes a batch of %d images through %s's VAE as one "
                             "%d-frame clip, and vramfit prices %s as single images%s, or encode one image at a time"
                             % (dims, dims[2], resolved, dims[2], resolved, _clip_hint(facts)))
        return query_of(family, "encode", dims[4], dims[3], dtype=dtype, host="comfyui", **platform).bytes
    return query_of(family, "encode", dims[4], dims[3], frames=dims[2], dtype=dtype, host="comfyui",
                    **platform).bytes
