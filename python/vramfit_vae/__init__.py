"""How much VRAM will this VAE decode or encode need? vramfit's answer, in Python.

The distribution is ``vramfit-vae`` and the import ``vramfit_vae`` (the name
``vramfit`` on the package index belongs to an unrelated project); code
written against the old checkout-only package keeps its spelling with
``import vramfit_vae as vramfit``.

    import vramfit_vae as vramfit
    need = vramfit.reserve("sdxl", "decode", 1024, 1024, dtype="fp16")
    budget = vramfit.budget(free=free_bytes, share="0.9")
    if need.bytes > budget.bytes: ...   # free memory first, or tile

Every function here is vramfit's runtime crate, compiled into the native
module ``_native``: the same pricer, planner and coefficients loader the
``vramfit`` command runs, so an answer is the CLI's answer byte for byte
(``Reservation.to_dict()`` is ``vramfit reserve --format json``; ``plan()``
is ``vramfit plan --format json``). The coefficients compiled in are a copy
of vramfit's ``fits/vae.json``; ``coefficients=`` takes another file's path
or a :class:`Coefficients` from :func:`load`.

Every figure is an integer, never a float. A refusal is a :class:`Refusal`,
a ``ValueError`` with the CLI's own words (which name the flag: ``--dtype``
is the ``dtype=`` argument here) and the runtime's stable ``code``
(:data:`REFUSAL_CODES`); an argument of the wrong kind is a ``ValueError``
naming it, and a ``coefficients=`` that is no path a ``TypeError``.

:mod:`vramfit_vae.hosts` translates InvokeAI's and ComfyUI's estimator calls
onto this API; :class:`Observer` checks each answer against what the host's
op really took and keeps it as a measurement row (docs/hosts.md, "Observe").
"""

from typing import Tuple

from ._native import (
    ALLOC_VARS,
    HIP_ALLOC_VAR,
    RUNTIME_VERSION,
    VERSION,
    Budget,
    Coefficients,
    Detected,
    LineKey,
    Refusal,
    Reservation,
    allocator_of_conf,
    budget,
    bundled,
    coefficients_of as _coefficients_of,
    load,
    plan,
    refusal_codes,
    reserve,
)
from .observe import Observer

__all__ = [
    "Budget",
    "Coefficients",
    "Detected",
    "LineKey",
    "Observer",
    "REFUSAL_CODES",
    "Refusal",
    "Reservation",
    "allocator_of_conf",
    "budget",
    "bundled",
    "load",
    "plan",
    "reserve",
]

#: The package's version: the runtime crate it was built from.
__version__ = RUNTIME_VERSION

#: The coefficients file format version this package prices.
FORMAT = VERSION

#: Every ``Refusal.code``: ``refused`` (the query cannot be priced as asked), ``too-large`` (past 64 bits of
#: bytes), ``budget`` (a budget the plan cannot be given), ``file`` (the coefficients file), ``overflow``, ``internal``
#: (a bug in vramfit: a panic caught at the boundary).
REFUSAL_CODES: Tuple[str, ...] = tuple(refusal_codes())
