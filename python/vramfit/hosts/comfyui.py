"""ComfyUI's ``VAE.memory_used_decode`` / ``memory_used_encode`` conventions, priced by vramfit.

ComfyUI asks with the shape it is about to run and the VAE's dtype, and
divides free memory by the answer to size its batch, so the answer is per
batch item:

- a decode's shape is the latents': ``[B, C, h, w]`` for an image (8× the
  last two dimensions), ``[B, C, T, h, w]`` for a video, whose ``T`` latent
  frames decode to ``(T − 1) × temporal + 1`` frames at the family's spatial
  and temporal compression (the registry's ``video`` facts);
- an encode's shape is the pixels' after ComfyUI moves the channels
  forward: ``[B, C, H, W]``, or ``[B, C, F, H, W]`` for a video;
- ComfyUI decodes untiled and, when it tiles, moves each tile to the host
  (``host="comfyui"``).

The platform is the host's as in :mod:`vramfit.hosts.invokeai`, and every
part of it can be given by keyword. The answer adds the platform's first use
once, as every default answer does; ComfyUI divides free memory by it, so a
fresh process sizes its first batch with that term in each item (cautious by
at most the term per item); ``warm=True`` leaves it out once the process has
decoded. A refusal raises ``ValueError`` with the CLI's words.
"""

from .. import bundled
from . import query_of, shape_of

__all__ = ["memory_used_decode", "memory_used_encode"]

#: The latent-to-pixel scale of an image family in ComfyUI's latent formats.
IMAGE_SCALE = 8


def _video_facts(family, coefficients):
    c = coefficients if coefficients is not None else bundled()
    return c.registry[c.family(family)].get("video")


def memory_used_decode(family, shape, dtype, **platform):
    """Bytes one batch item of this decode reserves."""
    dims = shape_of(shape)
    if len(dims) == 5:
        facts = _video_facts(family, platform.get("coefficients"))
        if facts is None:
            raise ValueError("a 5-D latent shape %s is a video's, and %s is not a video VAE" % (dims, family))
        frames = (dims[2] - 1) * facts["temporal"] + 1
        width, height = dims[4] * facts["spatial"], dims[3] * facts["spatial"]
        return query_of(family, "decode", width, height, frames=frames, dtype=dtype, host="comfyui",
                        **platform).bytes
    if len(dims) != 4:
        raise ValueError("shape %s: expected [B, C, h, w] or [B, C, T, h, w]" % (dims,))
    return query_of(family, "decode", dims[3] * IMAGE_SCALE, dims[2] * IMAGE_SCALE, dtype=dtype, host="comfyui",
                    **platform).bytes


def memory_used_encode(family, shape, dtype, **platform):
    """Bytes one batch item of this encode reserves."""
    dims = shape_of(shape)
    if len(dims) == 5:
        return query_of(family, "encode", dims[4], dims[3], frames=dims[2], dtype=dtype, host="comfyui",
                        **platform).bytes
    if len(dims) != 4:
        raise ValueError("shape %s: expected [B, C, H, W] or [B, C, F, H, W]" % (dims,))
    return query_of(family, "encode", dims[3], dims[2], dtype=dtype, host="comfyui", **platform).bytes
