"""PyTorch's GPU memory allocators, replayed on a traced stream of
allocations and frees: what `torch.cuda.max_memory_allocated()` and
`max_memory_reserved()` would read over one op, from the order of its
tensors' births and deaths alone.

A trace (`harness/trace.py`) sees every storage an op creates and the
moment the last tensor on it dies; what it cannot see is what the
allocator does with that stream. The caching allocator rounds each
request, packs small ones into 2 MiB segments, splits and coalesces
blocks, and keeps freed segments cached: when one decoder stage frees
blocks too small for the next, larger stage, it reserves new segments
while the old ones sit idle. That is deterministic given the stream, and
this module replays it.

The rules are those of `c10/cuda/CUDACachingAllocator.cpp` (the
`Native` namespace), read at pytorch/pytorch@001074d2 (the functions
named below have had these rules since torch 2.1; the pin, 2.11.0, is
what `harness/preflight.py` names). Each rule names its function; each
is held by a hand-computed stream in `selftest()` (run by
`python3 -m harness.allocator`, which the Rust tests call).

- `round_size`: a request below 512 B takes 512; else it is rounded up to
  a multiple of 512, or, where `roundup_power2_divisions` applies, to the
  next of that many divisions of its power-of-two interval.
- `get_pool`: 1 MiB and less is the small pool, larger the large pool.
- `get_allocation_size`: a new segment for a small request is 2 MiB; for a
  request under 10 MiB, 20 MiB; else the request rounded up to 2 MiB.
- `get_free_block`: best fit, the smallest cached block of the pool (same
  stream) at least the request, lowest address first among equals; a
  block of `max_split_size` or more serves only a request of at least
  `max_split_size` and less than 20 MiB short of it.
- `should_split`: the rest of a small block is split off when it is 512 B
  or more; of a large block when it is more than 1 MiB and the request is
  under `max_split_size` (with `expandable_segments`, 512 B or more).
- `free_block` / `try_merge_blocks`: a freed block merges with free
  neighbours of its segment.
- `expandable_segments` (`ExpandableSegment`, `try_allocate_expandable_block`):
  one segment per pool that grows at its end in pages of 2 MiB (small
  pool) or 20 MiB (large pool); a free block at the segment's end counts
  the unmapped space after it when best fit compares, so a request that
  no free block holds extends the end instead of opening a new segment.
- No segment is released during an op: a fresh process that fits its
  GPU never reaches `release_cached_blocks`.

`cudaMallocAsync` hands every request to the CUDA driver's stream-ordered
pool (`c10/cuda/CUDAMallocAsyncAllocator.cpp`: no rounding, no pools of
PyTorch's own); the driver's pool is not documented, so it is declared
here as what it is observed to behave like: one growing address space
per stream with 2 MiB pages, best fit and coalescing, requests rounded to
512 B (`ASYNC`). ROCm's HIP allocator is the same code hipified, without
expandable segments (`ExpandableSegment` is compiled out under
`USE_ROCM`), so `miopen/native` replays the native rules.

Workspaces. A convolution allocates its workspace through the same
allocator after its output and frees it when the kernel is done; no
tensor holds it, so the trace marks each convolution with its geometry
and the platform's declared workspace model (`WORKSPACES`) turns the
mark into an allocation and a free. See docs/traced.md, "What the
allocator adds".
"""

import bisect
import json
import sys

KiB = 1024
MiB = 1024 * KiB

MIN_BLOCK = 512            # kMinBlockSize
SMALL_SIZE = 1 * MiB       # kSmallSize
SMALL_BUFFER = 2 * MiB     # kSmallBuffer
LARGE_BUFFER = 20 * MiB    # kLargeBuffer
MIN_LARGE_ALLOC = 10 * MiB  # kMinLargeAlloc
ROUND_LARGE = 2 * MiB      # kRoundLarge
UNLIMITED = 1 << 64        # max_split_size unset: SIZE_MAX


def round_size(size, divisions=0):
    """`round_size`: the bytes a request of `size` takes."""
    if size < MIN_BLOCK:
        return MIN_BLOCK
    if divisions > 1 and size > MIN_BLOCK * divisions:
        return roundup_power2_next_division(size, divisions)
    return -(-size // MIN_BLOCK) * MIN_BLOCK


def roundup_power2_next_division(size, divisions):
    """`roundup_power2_next_division`: `size` rounded up to the next of
    `divisions` equal steps between the powers of two around it."""
    if size & (size - 1) == 0:
        return size
    floor = 1 << (size.bit_length() - 1)
    step = floor >> (divisions.bit_length() - 1)
    if step == 0:
        return floor << 1
    down = size & ~(step - 1)
    return size if down == size else down + step


def allocation_size(size):
    """`get_allocation_size`: the segment a request that no cached block holds opens."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


class _Block:
    __slots__ = ("addr", "size", "free", "prev", "next", "pool")

    def __init__(self, addr, size, pool):
        self.addr, self.size, self.pool = addr, size, pool
        self.free, self.prev, self.next = True, None, None


class _Pool:
    """Free blocks ordered as `BlockComparatorSize` orders them: size, then
    address; with expandable segments, the pool's one segment's last block
    and its mapped bytes."""

    def __init__(self, small, base):
        self.small = small
        self.keys = []    # (size, addr)
        self.blocks = {}  # (size, addr) -> block
        self.tail = None
        self.mapped = 0
        self.base = base

    def insert(self, b):
        key = (b.size, b.addr)
        bisect.insort(self.keys, key)
        self.blocks[key] = b

    def remove(self, b):
        key = (b.size, b.addr)
        del self.keys[bisect.bisect_left(self.keys, key)]
        del self.blocks[key]


class Native:
    """The native caching allocator (`DeviceCachingAllocator`), one stream.

    `max_split_size`, `roundup_power2_divisions` and `expandable_segments`
    are the `PYTORCH_CUDA_ALLOC_CONF` settings of the same names
    (`max_split_size` in bytes). `one_pool` and `pages` declare the
    cudaMallocAsync model (`ASYNC`)."""

    def __init__(self, max_split_size=UNLIMITED, roundup_power2_divisions=0, expandable_segments=False,
                 one_pool=False, pages=(SMALL_BUFFER, LARGE_BUFFER)):
        self.max_split = max_split_size
        self.divisions = roundup_power2_divisions
        self.expandable = expandable_segments
        self.one_pool = one_pool
        self.pages = pages
        self.small, self.large = _Pool(True, 1 << 60), _Pool(False, 2 << 60)
        self.allocated = self.reserved = 0
        self.peak_allocated = self.peak_reserved = 0
        self.next_addr = 0

    def _pool(self, size):
        return self.large if self.one_pool or size > SMALL_SIZE else self.small

    def malloc(self, nbytes):
        """Serves a request of `nbytes`; returns the block."""
        size = round_size(nbytes, self.divisions)
        pool = self._pool(size)
        block = self._free_block(pool, size)
        if block is None:
            block = self._new_memory(pool, size)
        else:
            pool.remove(block)
        if self._should_split(pool, block, size):
            rest = _Block(block.addr + size, block.size - size, pool)
            rest.prev, rest.next = block, block.next
            if block.next:
                block.next.prev = rest
            block.next = rest
            block.size = size
            if pool.tail is block:
                pool.tail = rest
            pool.insert(rest)
        block.free = False
        self.allocated += block.size
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        return block

    def _free_block(self, pool, size):
        """`get_free_block`."""
        i = bisect.bisect_left(pool.keys, (size, -1))
        if i == len(pool.keys):
            return None
        block = pool.blocks[pool.keys[i]]
        if self.expandable:
            # A block at the segment's end reaches as far as the segment can
            # grow: a fit that reaches less is preferred.
            reach = lambda b: (1 << 62) if b is pool.tail else b.size
            j = i + 1
            while j < len(pool.keys) and reach(pool.blocks[pool.keys[j]]) < reach(block):
                block = pool.blocks[pool.keys[j]]
                j += 1
        if size < self.max_split <= block.size:
            return None
        if size >= self.max_split and block.size >= size + LARGE_BUFFER:
            return None
        return block

    def _new_memory(self, pool, size):
        if not self.expandable:
            # alloc_block: a segment of get_allocation_size's bytes.
            grant = allocation_size(size)
            block = _Block(self.next_addr, grant, pool)
            self.next_addr += grant + LARGE_BUFFER  # segments never touch
            self._reserve(grant)
            return block
        # try_allocate_expandable_block: the pool's one segment grows at its
        # end in whole pages, taking in a free block already at the end.
        page = self.pages[0] if pool.small else self.pages[1]
        tail = pool.tail
        if tail is not None and tail.free:
            pool.remove(tail)
            block = tail
        else:
            block = _Block(pool.base + pool.mapped, 0, pool)
            block.prev = tail
            if tail is not None:
                tail.next = block
        grow = -(-(size - block.size) // page) * page
        self._reserve(grow)
        pool.mapped += grow
        block.size += grow
        pool.tail = block
        return block

    def _reserve(self, nbytes):
        self.reserved += nbytes
        self.peak_reserved = max(self.peak_reserved, self.reserved)

    def _should_split(self, pool, block, size):
        """`should_split`."""
        rest = block.size - size
        if pool.small or self.expandable:
            return rest >= MIN_BLOCK
        return size < self.max_split and rest > SMALL_SIZE

    def free(self, block):
        """`free_block` and `try_merge_blocks`: the block back to its pool,
        merged with the free neighbours of its segment."""
        pool = block.pool
        self.allocated -= block.size
        block.free = True
        before, after = block.prev, block.next
        if before is not None and before.free:
            pool.remove(before)
            block.addr, block.size, block.prev = before.addr, before.size + block.size, before.prev
            if before.prev:
                before.prev.next = block
        if after is not None and after.free:
            pool.remove(after)
            block.size, block.next = block.size + after.size, after.next
            if after.next:
                after.next.prev = block
            if pool.tail is after:
                pool.tail = block
        pool.insert(block)


#: The cudaMallocAsync model (declared; see the module's words): one pool,
#: one address space growing in 2 MiB pages, requests rounded to 512 B.
ASYNC = {"one_pool": True, "expandable_segments": True, "pages": (2 * MiB, 2 * MiB)}

#: The allocator settings vramfit's `allocator` column names, as models.
ALLOCATORS = {
    "native": {},
    "expandable_segments": {"expandable_segments": True},
    "cudaMallocAsync": ASYNC,
}

#: The platforms a traced row is replayed on: (conv backend, allocator),
#: the platforms the measured points stand on.
PLATFORMS = (("cudnn", "native"), ("cudnn", "expandable_segments"), ("cudnn", "cudaMallocAsync"), ("miopen", "native"))


def workspace(backend, dtype, mark):
    """The bytes a convolution's workspace takes on `backend` in `dtype`
    (declared: docs/traced.md, "What the allocator adds"). `mark` is the
    trace's `(input bytes, output bytes, im2col bytes, spatial dims)`."""
    inp, out, col, dims = mark
    if backend == "cudnn":
        # Half precision runs on tensor cores in NHWC: an NCHW input and
        # output pass through a workspace of their size. fp32 (implicit
        # GEMM) needs none.
        return inp + out if dtype != "fp32" else 0
    # MIOpen's 2-D convolutions: its GEMM solvers unfold half the input
    # patches at once (im2col / 2) beside a copy of the input and two of
    # the output. Its 3-D convolutions (naive and direct solvers): none.
    return col // 2 + inp + 2 * out if dims == 2 else 0


def replay(events, backend, allocator, dtype, **settings):
    """(allocated peak, reserved peak) of `events` on one platform, from an
    empty cache. Events: `("a", key, bytes)` an allocation, `("f", key)` its
    free, `("c", input, output, im2col, dims)` a convolution (after its
    output's allocation): its workspace, allocated and freed."""
    model = Native(**dict(ALLOCATORS[allocator], **settings))
    live = {}
    for e in events:
        kind = e[0]
        if kind == "a":
            if e[2] > 0:
                live[e[1]] = model.malloc(e[2])
        elif kind == "f":
            block = live.pop(e[1], None)
            if block is not None:
                model.free(block)
        else:
            ws = workspace(backend, dtype, e[1:5])
            if ws > 0:
                model.free(model.malloc(ws))
    return model.peak_allocated, model.peak_reserved


def simulated_words(events, dtype):
    """The row's `simulated` column: each platform's `backend/allocator=ALLOCATED:RESERVED`."""
    return ";".join("%s/%s=%d:%d" % ((b, a) + replay(events, b, a, dtype)) for (b, a) in PLATFORMS)


def _run(model, steps):
    """Replays `steps` (`("a", name, bytes)`, `("f", name)`) on `model`;
    returns (allocated now, reserved now, allocated peak, reserved peak)."""
    live = {}
    for step in steps:
        if step[0] == "a":
            live[step[1]] = model.malloc(step[2])
        else:
            model.free(live.pop(step[1]))
    return model.allocated, model.reserved, model.peak_allocated, model.peak_reserved


def selftest():
    """Each rule on a stream whose answer is computed by hand; a failure
    names the rule. Returns the problems (none: every rule holds)."""
    problems = []

    def check(name, got, want):
        if got != want:
            problems.append("%s: got %s, expected %s" % (name, got, want))

    # round_size and roundup_power2_next_division.
    check("round_size: under 512 B takes 512", round_size(1), 512)
    check("round_size: 513 B to a multiple of 512", round_size(513), 1024)
    check("round_size: 4 divisions of [1 GiB, 2 GiB): 1200 MiB to 1280 MiB", round_size(1200 * MiB, 4), 1280 * MiB)
    check("round_size: a power of two stays", round_size(2048 * MiB, 4), 2048 * MiB)
    check("round_size: divisions apply only above 512 B x divisions", round_size(1500, 4), 1536)
    # get_allocation_size.
    check("allocation size: 1 MiB is small, a 2 MiB segment", allocation_size(1 * MiB), 2 * MiB)
    check("allocation size: over 1 MiB and under 10 MiB, a 20 MiB segment", allocation_size(1 * MiB + 512), 20 * MiB)
    check("allocation size: 10 MiB and up, rounded to 2 MiB", allocation_size(10 * MiB + 1), 12 * MiB)
    # Small pool: two requests packed in one 2 MiB segment.
    check("small pool: two 1000 B requests share a 2 MiB segment",
          _run(Native(), [("a", "x", 1000), ("a", "y", 1000)]), (1024 + 1024, 2 * MiB, 2048, 2 * MiB))
    # A 20 MiB segment split twice; the rest of a large block is split only past 1 MiB.
    check("large pool: 5 MiB twice from one 20 MiB segment",
          _run(Native(), [("a", "x", 5 * MiB), ("a", "y", 5 * MiB)]), (10 * MiB, 20 * MiB, 10 * MiB, 20 * MiB))
    check("should_split: 19.5 MiB in a 20 MiB segment keeps the half MiB (allocated counts the block)",
          _run(Native(), [("a", "x", 19 * MiB + 512 * KiB)]), (20 * MiB, 20 * MiB, 20 * MiB, 20 * MiB))
    # Fragmentation: a freed block too small for the next, larger request.
    check("fragmentation: 100 MiB freed cannot hold 150 MiB",
          _run(Native(), [("a", "a", 100 * MiB), ("a", "b", 100 * MiB), ("f", "a"), ("a", "c", 150 * MiB)]),
          (250 * MiB, 350 * MiB, 250 * MiB, 350 * MiB))
    # Coalescing: two freed neighbours and the segment's rest become one block.
    check("try_merge_blocks: 4 + 4 + 12 MiB merge and hold 13 MiB",
          _run(Native(), [("a", "x", 4 * MiB), ("a", "y", 4 * MiB), ("f", "x"), ("f", "y"), ("a", "z", 13 * MiB)]),
          (13 * MiB, 20 * MiB, 13 * MiB, 20 * MiB))
    check("no merge across segments: two 12 MiB segments freed do not hold 20 MiB",
          _run(Native(), [("a", "x", 12 * MiB), ("a", "y", 12 * MiB), ("f", "x"), ("f", "y"), ("a", "z", 20 * MiB)]),
          (20 * MiB, 44 * MiB, 24 * MiB, 44 * MiB))
    # Best fit: the smallest cached block that holds the request.
    check("get_free_block: best fit takes the 12 MiB block for 11 MiB, unsplit",
          _run(Native(), [("a", "p", 30 * MiB), ("a", "q", 12 * MiB), ("f", "p"), ("f", "q"), ("a", "r", 11 * MiB)]),
          (12 * MiB, 42 * MiB, 42 * MiB, 42 * MiB))
    # max_split_size.
    check("max_split_size: a 30 MiB block does not serve 12 MiB under a 20 MiB limit",
          _run(Native(max_split_size=20 * MiB), [("a", "p", 30 * MiB), ("f", "p"), ("a", "r", 12 * MiB)]),
          (12 * MiB, 42 * MiB, 30 * MiB, 42 * MiB))
    check("max_split_size: an oversize block serves only within 20 MiB of its size",
          _run(Native(max_split_size=20 * MiB), [("a", "p", 60 * MiB), ("f", "p"), ("a", "r", 30 * MiB)]),
          (30 * MiB, 90 * MiB, 60 * MiB, 90 * MiB))
    check("max_split_size: without the limit the 60 MiB block is split for 30 MiB",
          _run(Native(), [("a", "p", 60 * MiB), ("f", "p"), ("a", "r", 30 * MiB)]),
          (30 * MiB, 60 * MiB, 60 * MiB, 60 * MiB))
    check("roundup_power2_divisions: 1200 MiB takes 1280 MiB",
          _run(Native(roundup_power2_divisions=4), [("a", "x", 1200 * MiB)]), (1280 * MiB, 1280 * MiB, 1280 * MiB, 1280 * MiB))
    # expandable_segments: one segment grows in 20 MiB pages at its end.
    check("expandable_segments: 30 MiB then 15 MiB grow one segment to 60 MiB",
          _run(Native(expandable_segments=True), [("a", "x", 30 * MiB), ("a", "y", 15 * MiB)]),
          (45 * MiB, 60 * MiB, 45 * MiB, 60 * MiB))
    check("native, the same requests: a 30 MiB and a 16 MiB segment",
          _run(Native(), [("a", "x", 30 * MiB), ("a", "y", 15 * MiB)]), (46 * MiB, 46 * MiB, 46 * MiB, 46 * MiB))
    check("expandable_segments: 100 MiB freed and the end grown hold 150 MiB",
          _run(Native(expandable_segments=True), [("a", "a", 100 * MiB), ("a", "b", 100 * MiB), ("f", "b"), ("a", "c", 150 * MiB)]),
          (250 * MiB, 260 * MiB, 250 * MiB, 260 * MiB))
    check("expandable_segments: a fit inside is preferred to the growing end",
          _run(Native(expandable_segments=True), [("a", "a", 40 * MiB), ("a", "b", 40 * MiB), ("a", "c", 30 * MiB),
                                                  ("f", "a"), ("a", "d", 30 * MiB)]),
          (100 * MiB, 120 * MiB, 110 * MiB, 120 * MiB))
    # The declared cudaMallocAsync model: one pool, 2 MiB pages.
    check("cudaMallocAsync model: 1000 B then 3 MiB in 2 MiB pages",
          _run(Native(**ASYNC), [("a", "x", 1000), ("a", "y", 3 * MiB)]), (1024 + 3 * MiB, 4 * MiB, 1024 + 3 * MiB, 4 * MiB))
    return problems


if __name__ == "__main__":
    found = selftest()
    for line in found:
        print("allocator: %s" % line, file=sys.stderr)
    if not found:
        print("allocator: every rule holds on its hand-computed stream")
    sys.exit(1 if found else 0)
