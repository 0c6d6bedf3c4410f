"""The allocator settings a plan names, as the environment of a child.

PyTorch reads `PYTORCH_ALLOC_CONF` (2.9 and later), else
`PYTORCH_CUDA_ALLOC_CONF`; a ROCm build reads `PYTORCH_HIP_ALLOC_CONF`
first. A child gets the same value in all three, so whichever its torch
reads, it runs the allocator the plan asked for; any value inherited from
the parent is replaced.
"""

VARIABLES = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF")

#: The setting's name (vramfit's `allocator` column) and the conf string.
CONF = {
    "native": "backend:native,expandable_segments:False",
    "expandable_segments": "expandable_segments:True",
    "cudaMallocAsync": "backend:cudaMallocAsync",
}


def child_env(base, allocator):
    """`base` (a mapping) with the allocator variables set for `allocator`."""
    if allocator not in CONF:
        raise ValueError("unknown allocator '%s' (known: %s)" % (allocator, ", ".join(CONF)))
    env = {k: v for k, v in base.items() if k not in VARIABLES}
    for var in VARIABLES:
        env[var] = CONF[allocator]
    return env


def detected(env, rocm=False):
    """The allocator PyTorch would run under `env`, read as PyTorch reads
    it (what the fake device does, so the plumbing is tested end to end)."""
    order = (["PYTORCH_HIP_ALLOC_CONF"] if rocm else []) + ["PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"]
    for var in order:
        value = env.get(var, "").strip()
        if not value:
            continue
        parts = dict(p.split(":", 1) for p in value.split(",") if ":" in p)
        parts = {k.strip(): v.strip().lower() for k, v in parts.items()}
        if parts.get("backend") == "cudamallocasync":
            return "cudaMallocAsync"
        if parts.get("expandable_segments") == "true":
            return "expandable_segments"
        return "native"
    return "native"
