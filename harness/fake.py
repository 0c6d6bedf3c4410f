"""A simulated device, so the orchestration (grid, child processes,
environment, CSV, resume, the out-of-memory path) runs end to end without
torch. Its memory model is driven by the VAE's configuration: activations
scale with the image's pixels, the widest stage's channels and the dtype;
each allocator keeps a different reserve, read from the child's environment
exactly as PyTorch reads it. The figures are deterministic and plausible,
never measurements: rows say `device = fake` and vramfit refuses nothing
about them, so never ingest them into a real store.
"""

import hashlib

from . import allocators

#: The fake card's memory, bytes.
CAPACITY = 24 << 30
#: The tile a video family's own tiling runs on the fake card, px.
HOST_TILE = 256
#: What the fake card's first op of a process adds on the driver side (the
#: CUDA libraries' kernels a real card loads with the first convolution).
FIRST_USE = 166 << 20
MIB = 1 << 20
ELEM = {"fp16": 2, "bf16": 2, "fp32": 4}


def _channels(config):
    if "block_out_channels" in config:
        layers = config.get("layers_per_block", 2)
        # A per-stage list (LTX's): its largest.
        return list(config["block_out_channels"]), max(layers) if isinstance(layers, list) else layers
    base = config.get("base_dim", 96)
    return [base * m for m in config.get("dim_mult", [1, 2, 4, 4])], config.get("num_res_blocks", 2)


def weights(config):
    """A weight count from the configuration: two 3×3 convolutions per
    residual layer at each stage's width, encoder and decoder."""
    chans, layers = _channels(config)
    return sum(2 * 2 * layers * 9 * c * c for c in chans)


def _round_up(n, step):
    return -(-n // step) * step


def measure(config, op, tile, dtype, width, height, batch, env, run, key, frames=1, first=True):
    """The deltas (reserved, allocated, driver) of one run, or raises
    MemoryError: `first` is the first op of its process (its driver delta
    holds the first use), `frames` a clip's length (its activations span
    every frame)."""
    elem = ELEM[dtype]
    chans, layers = _channels(config)
    side_w, side_h = (min(width, tile), min(height, tile)) if tile else (width, height)
    pixels = side_w * side_h * batch * frames
    # The full-resolution stage holds its input, output and a norm buffer;
    # an encode keeps less of the decoder-side width.
    widest = chans[0] * (3 if op == "decode" else 2)
    activations = pixels * widest * elem * (layers + 1) // 2
    output = width * height * batch * frames * 3 * elem
    allocated = activations + output
    allocator = allocators.detected(env)
    if allocator == "native":
        reserved = _round_up(allocated * 5 // 4, 2 * MIB)
    elif allocator == "expandable_segments":
        reserved = _round_up(allocated, 2 * MIB) + 2 * MIB
    else:  # cudaMallocAsync: the pool holds what was asked, at its granularity
        reserved = _round_up(allocated, 32 * MIB)
    # The driver also sees the conv workspace; runs differ by a little.
    jitter = int(hashlib.sha256(key.encode()).hexdigest(), 16) % MIB
    driver = reserved + 64 * MIB + jitter * (run - 1) + (FIRST_USE if first else 0)
    base = weights(config) * elem + width * height * batch * 3 * elem
    if base + driver > CAPACITY:
        raise MemoryError(
            "fake device: %d MiB asked beyond %d MiB" % ((base + driver) // MIB, CAPACITY // MIB))
    return reserved, allocated, driver


def facts():
    """What a real child reads off torch and the driver."""
    return {"device": "fake", "driver_version": "", "torch": "", "diffusers": "", "conv_backend": "cudnn"}


class Cuda:
    """The fake card as a ``torch.cuda``-like module, for ``vramfit_vae.Observer(device=...)``: what a host's
    op on it takes comes from :func:`measure` (``run``), the peaks and the driver's used memory move as a
    caching allocator's would, and ``facts()`` says the device is ``fake`` (so ``ingest`` refuses the rows
    without ``--allow-simulated``). ``extra`` bytes make an op take more than the memory model says (an
    under-reservation on purpose)."""

    def __init__(self, env=None):
        self.env = dict(env or {})
        self.reserved = self.allocated = self.peak_reserved = self.peak_allocated = 0
        self.used = 1 << 30  # the host's weights, on the driver's side
        self.first = True

    def is_available(self):
        return True

    def synchronize(self):
        pass

    def empty_cache(self):
        self.used -= self.reserved - self.allocated
        self.reserved = self.allocated

    def reset_peak_memory_stats(self):
        self.peak_reserved, self.peak_allocated = self.reserved, self.allocated

    def memory_reserved(self):
        return self.reserved

    def memory_allocated(self):
        return self.allocated

    def max_memory_reserved(self):
        return self.peak_reserved

    def max_memory_allocated(self):
        return self.peak_allocated

    def mem_get_info(self):
        return CAPACITY - self.used, CAPACITY

    def get_device_name(self):
        return "fake"

    def facts(self):
        return {"device": "fake", "torch": "", "accelerator": "", "conv_library": "", "conv_backend": "cudnn"}

    def run(self, config, op, dtype, width, height, batch=1, tile=0, frames=1, extra=0):
        """One op on the fake card: its activations come and go, its reserve stays cached (as PyTorch's
        caching allocator keeps it). Returns a deterministic stand-in for the op's output."""
        key = "%s-%s-%s-%dx%dx%d" % (op, dtype, tile, width, height, batch)
        reserved, allocated, driver = measure(config, op, tile, dtype, width, height, batch, self.env, 1, key,
                                              frames=frames, first=self.first)
        self.first = False
        self.peak_allocated = max(self.peak_allocated, self.allocated + allocated + extra)
        grown = reserved + extra
        self.peak_reserved = max(self.peak_reserved, self.reserved + grown)
        self.reserved += grown
        self.used += max(driver + extra, grown)
        return (op, width, height, batch, frames)
