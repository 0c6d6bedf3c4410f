"""Type stubs of the native module: vramfit's runtime crate, compiled (crates/vramfit-python)."""

import os
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

_Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
_Coefficients = Union["Coefficients", _Path, None]
#: A dtype name (``fp16``, ``bf16``, ``fp32``, PyTorch's ``float16``…) or a ``torch.dtype``.
_Dtype = Any

VERSION: int
RUNTIME_VERSION: str
#: The allocator variables in the order PyTorch reads them; a ROCm build reads ``HIP_ALLOC_VAR`` first.
ALLOC_VARS: Tuple[str, ...]
HIP_ALLOC_VAR: str
#: The header line of an observation file (``vramfit_vae.Observer``), newline-terminated.
OBSERVATION_HEADER: str

class Refusal(ValueError):
    """vramfit's refusal: the CLI's words, and the runtime's stable code."""

    code: str

class LineKey:
    """The seven fields that name a line, and a video family's temporal tile."""

    @property
    def vae(self) -> str: ...
    @property
    def op(self) -> str: ...
    @property
    def tile(self) -> int: ...
    @property
    def conv_backend(self) -> str: ...
    @property
    def allocator(self) -> str: ...
    @property
    def os(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def temporal_tile(self) -> Optional[int]: ...
    def tiles_text(self) -> str: ...
    def sort_key(self) -> Tuple[Any, ...]: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def __lt__(self, other: "LineKey") -> bool: ...
    def __le__(self, other: "LineKey") -> bool: ...
    def __gt__(self, other: "LineKey") -> bool: ...
    def __ge__(self, other: "LineKey") -> bool: ...
    def __hash__(self) -> int: ...

class Detected:
    """A value and where it came from (``flag``, an environment variable, ``host``, …)."""

    @property
    def value(self) -> str: ...
    @property
    def source(self) -> str: ...
    def to_dict(self) -> Dict[str, str]: ...

class Reservation:
    """The answer to one query; ``to_dict()`` is ``vramfit reserve --format json``, key for key."""

    def with_batch(self, batch: int) -> "Reservation":
        """The same question for ``batch`` items, priced as this one was."""
        ...
    @property
    def bytes(self) -> int: ...
    @property
    def key(self) -> str: ...
    @property
    def line(self) -> LineKey: ...
    @property
    def priced_by(self) -> Optional[LineKey]: ...
    @property
    def run_dtype(self) -> Detected: ...
    @property
    def allocator(self) -> Detected: ...
    @property
    def os(self) -> Detected: ...
    @property
    def size_range(self) -> Optional[Tuple[int, int]]: ...
    # Every other key of to_dict(): mib, rule, slope, base_mib, pixels, line_bytes, weight_growth_bytes,
    # legacy_bytes, extrapolated, measured_on, loaded_dtype, tile_asked, tiled, attention, video, traced,
    # follows_trace, lifted, op_bytes, first_use, warnings, coefficients.
    mib: int
    rule: str
    slope: Optional[str]
    base_mib: Optional[int]
    pixels: int
    line_bytes: Optional[int]
    weight_growth_bytes: int
    legacy_bytes: Optional[int]
    extrapolated: bool
    measured_on: List[str]
    loaded_dtype: str
    tile_asked: Optional[int]
    tiled: Optional[Dict[str, Any]]
    attention: Optional[Dict[str, Any]]
    video: Optional[Dict[str, Any]]
    traced: Optional[Dict[str, Any]]
    follows_trace: Optional[Dict[str, Any]]
    lifted: Optional[Dict[str, Any]]
    op_bytes: int
    first_use: Optional[Dict[str, Any]]
    warnings: List[str]
    coefficients: str
    def to_dict(self) -> Dict[str, Any]: ...

class Budget:
    """``min(cap, floor(share × free))``, and which bound set it (``share``, ``cap``, ``cap-unknown-free``)."""

    @property
    def bytes(self) -> int: ...
    @property
    def bound(self) -> str: ...
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...

class Coefficients:
    """A coefficients file, loaded and indexed (:func:`load`, :func:`bundled`)."""

    @property
    def source(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def registry(self) -> Dict[str, Dict[str, Any]]: ...
    @property
    def lines(self) -> List[LineKey]: ...
    def family(self, name: str) -> str: ...
    def reserve(
        self,
        model: str,
        op: str,
        width: int,
        height: int,
        *,
        dtype: _Dtype = None,
        loaded_dtype: _Dtype = None,
        batch: int = 1,
        tile: int = 0,
        backend: str = "cudnn",
        allocator: str = "auto",
        os: str = "auto",
        fp32: Optional[bool] = None,
        env: Optional[Mapping[str, str]] = None,
        host: Optional[str] = None,
        frames: int = 1,
        temporal_tile: Optional[int] = None,
        warm: bool = False,
    ) -> Reservation: ...

def reserve(
    model: str,
    op: str,
    width: int,
    height: int,
    *,
    dtype: _Dtype = None,
    loaded_dtype: _Dtype = None,
    batch: int = 1,
    tile: int = 0,
    backend: str = "cudnn",
    allocator: str = "auto",
    os: str = "auto",
    fp32: Optional[bool] = None,
    coefficients: _Coefficients = None,
    env: Optional[Mapping[str, str]] = None,
    host: Optional[str] = None,
    frames: int = 1,
    temporal_tile: Optional[int] = None,
    warm: bool = False,
) -> Reservation: ...
def plan(
    model: str,
    op: str,
    width: int,
    height: int,
    *,
    free: Optional[int] = None,
    share: Union[int, float, str] = 1,
    cap: Optional[int] = None,
    dtype: _Dtype = None,
    loaded_dtype: _Dtype = None,
    batch: int = 1,
    tile: int = 0,
    backend: str = "cudnn",
    allocator: str = "auto",
    os: str = "auto",
    fp32: Optional[bool] = None,
    coefficients: _Coefficients = None,
    env: Optional[Mapping[str, str]] = None,
    host: Optional[str] = None,
    frames: int = 1,
    temporal_tile: Optional[int] = None,
    warm: bool = False,
) -> Dict[str, Any]: ...
def budget(free: Optional[int] = None, share: Union[int, float, str] = 1, cap: Optional[int] = None) -> Budget: ...
def load(path: _Path) -> Coefficients: ...
def bundled() -> Coefficients: ...
def allocator_of_conf(conf: str) -> Optional[str]: ...
def refusal_codes() -> List[str]: ...
def coefficients_of(given: _Coefficients = None) -> Coefficients: ...
def observation(
    reservation: Reservation,
    reserved: int,
    allocated: int,
    driver: int,
    facts: Dict[str, str],
    context: str,
    nonce: str,
    date: str,
    observed_by: str,
) -> Tuple[str, int, Optional[str]]:
    """An observed op as (the CSV row, its demand in bytes, the log line when it was under-reserved)."""
    ...
