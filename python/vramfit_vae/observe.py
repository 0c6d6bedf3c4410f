"""What a host's own VAE op took, checked against vramfit's answer and kept as a measurement row.

    observer = vramfit_vae.Observer("vae-observed.csv")      # once, where the host starts
    need = vramfit_vae.reserve("sdxl", "decode", 1024, 1024, dtype="fp16")
    with observer(need):                                      # the one line around the op
        image = vae.decode(latents)

On CUDA and ROCm the op's own peak is read the way vramfit's harness reads it (the allocator's cache
released, the peak statistics reset, the reserved and allocated peaks and the driver's used memory read
around the op). The row (the CSV ``vramfit ingest`` reads, written by the runtime) is appended to the
file under an exclusive lock, so several processes may share one file; the file is bounded. An op that
took more than was reserved gets one line in the ``vramfit_vae`` log. Without a CUDA or ROCm device
(CPU, MPS) the op runs untouched and one notice says nothing is recorded. The op's result is never
touched, and torch is never imported: the host's own, already imported, is read.
"""

import datetime
import logging
import os
import sys
import threading
import time

from ._native import (
    ALLOC_VARS,
    HIP_ALLOC_VAR,
    RUNTIME_VERSION,
    allocator_of_conf,
    append_observation,
    check_observation_path,
    observation,
)

__all__ = ["Observer"]

log = logging.getLogger("vramfit_vae")

#: The file's default bound: about 20 000 rows.
MAX_BYTES = 16 << 20

_seen = set()  # (family, op) kinds this process has run: the first of a kind is `fresh`
_process = threading.Lock()
_noticed = []
_serial = [0]


def _nonce():
    """Unique among this host's rows: the time, the process and a counter, as hex (nothing about the user)."""
    with _process:
        _serial[0] += 1
        n = _serial[0]
    return "%x%05x%04x" % (time.time_ns() & 0xFFFFFFFFFFFF, os.getpid() & 0xFFFFF, n & 0xFFFF)


def append(path, row, max_bytes):
    """Appends one row (the header first into an empty file) under an exclusive lock, through the runtime's
    writer: ``"written"``, ``"full"`` (it would pass ``max_bytes``), ``"refused"`` (the path is a link, not a
    regular file, or not an observation file: left exactly as it is) or ``"error"``, with its words. A row torn by
    a writer that died mid-write is the only thing ever cut, and only in a file of this format."""
    return append_observation(path, row, max_bytes)


def _facts(cuda):
    """The platform as torch and the driver report it; ``cuda.facts()`` where the device gives its own (the
    harness's simulated one)."""
    own = getattr(cuda, "facts", None)
    if callable(own):
        facts = dict(own())
    elif "torch" not in sys.modules:
        # A torch.cuda-like device of the host's own, with no torch to ask: its name only.
        facts = {"device": str(getattr(cuda, "get_device_name", lambda: "")()), "conv_backend": "cudnn"}
    else:
        from .hosts import platform_of

        torch = sys.modules["torch"]
        backend = platform_of()
        rocm = backend == "miopen"
        cudnn = torch.backends.cudnn
        library = cudnn.version() if cudnn.is_available() else None
        facts = {
            "device": cuda.get_device_name(),
            "torch": str(torch.__version__),
            "accelerator": ("HIP %s" % torch.version.hip) if rocm else ("CUDA %s" % torch.version.cuda),
            "conv_library": "" if library is None else ("%s %s" % ("MIOpen" if rocm else "cuDNN", library)),
            "conv_backend": backend,
        }
    diffusers = sys.modules.get("diffusers")
    facts.setdefault("diffusers", str(getattr(diffusers, "__version__", "")))
    hip = facts.get("conv_backend") == "miopen"
    names = ((HIP_ALLOC_VAR,) if hip else ()) + tuple(ALLOC_VARS)
    conf = next((os.environ[n] for n in names if os.environ.get(n)), "")
    facts.setdefault("allocator_conf", conf)
    facts.setdefault("allocator", allocator_of_conf(conf) or "native")
    facts.setdefault("os", sys.platform)
    return facts


class Observer:
    """Observes the host's VAE ops: ``with observer(reservation):`` around each. ``path`` is the CSV the rows go
    to (None: check the answers only, write nothing), ``max_bytes`` its bound, ``logger`` where an
    under-reserved op is said (``vramfit_vae``), ``device`` a ``torch.cuda``-like module (the host's
    ``torch.cuda`` when not given), ``release`` whether the allocator's cache is released before the op (the
    harness's way: the op's reserved peak is then its own)."""

    def __init__(self, path=None, *, max_bytes=MAX_BYTES, logger=None, device=None, release=True):
        self.path = None if path is None else os.fspath(path)
        if self.path is not None:
            # Misuse is refused here, when the host sets the observer up, never around an op: a link, a FIFO or
            # device, a file that is not an observation file.
            check_observation_path(self.path)
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
            raise ValueError("max_bytes: expected a positive int of bytes, got %r" % (max_bytes,))
        self.max_bytes = int(max_bytes)
        self.log = logger or log
        self.device = device
        self.release = release
        self._pending = threading.local()
        self._counts = {"covered": 0, "under": 0, "rows": 0, "dropped": 0, "unobserved": 0, "out_of_memory": 0}
        self._lock = threading.Lock()
        self._full = False

    @property
    def counts(self):
        """Covered and under-reserved ops, rows written, rows dropped at the bound, ops not observed (no device)
        and ops that ran out of memory."""
        with self._lock:
            return dict(self._counts)

    def expect(self, reservation):
        """The answer each ``with observer:`` in this thread runs under until the next (what a drop-in's
        ``observe=`` sets)."""
        self._pending.reservation = reservation
        return reservation

    def __call__(self, reservation=None, *, context=None, batch=None):
        """The op's context manager: ``reservation`` (else the one a drop-in set), ``context="generation"`` when
        the host says the op runs inside a whole generation, ``batch`` the items it runs at once when that is not
        the reservation's (ComfyUI prices one item and decodes several)."""
        if reservation is None:
            # The last drop-in answer in this thread, kept until the next: ComfyUI decodes one estimate's batches
            # in several chunks, each its own op.
            reservation = getattr(self._pending, "reservation", None)
        if reservation is None:
            raise ValueError("observe: no reservation: pass the answer, or give the drop-in observe=this observer")
        if context not in (None, "generation"):
            raise ValueError("context %r: expected None (fresh or warm, by the process's ops) or 'generation'"
                             % (context,))
        if batch is not None:
            reservation = reservation.with_batch(batch)
        return _Op(self, reservation, context)

    def __enter__(self):
        self._pending.op = self()
        return self._pending.op.__enter__()

    def __exit__(self, kind, value, trace):
        op, self._pending.op = self._pending.op, None
        return op.__exit__(kind, value, trace)

    def _count(self, what):
        with self._lock:
            self._counts[what] += 1

    def _record(self, reservation, peaks, facts, context):
        if not any(peaks):
            # Nothing the device saw (the op ran in memory already held): covered, and no row (ingest refuses a
            # zero demand).
            self._count("covered")
            return
        row, demand, under = observation(reservation, *peaks, facts=facts, context=context, nonce=_nonce(),
                                         date=datetime.date.today().isoformat(),
                                         observed_by="vramfit-vae %s" % RUNTIME_VERSION)
        self._count("under" if under else "covered")
        if under:
            self.log.warning(under)
        if self.path is None:
            return
        # The host's op is done and its result stands: a file that cannot be written, or was replaced since the
        # observer was set up by something it did not write, costs the row only.
        status, why = append(self.path, row, self.max_bytes)
        if status == "full":
            # The file by its name alone: a log line holds no path (the runtime's words name it so too).
            why = "observe: %s would pass its bound of %d B" % (os.path.basename(self.path), self.max_bytes)
        if status == "written":
            self._count("rows")
            return
        self._count("dropped")
        with self._lock:
            first, self._full = not self._full, True
        if first:
            self.log.warning("vramfit: %s: no more rows are written (%s)" % (why, reservation.key))


class _Op:
    def __init__(self, observer, reservation, context):
        self.observer, self.reservation, self.context = observer, reservation, context
        self.cuda = None

    def __enter__(self):
        o = self.observer
        cuda = o.device
        if cuda is None:
            torch = sys.modules.get("torch")
            cuda = getattr(torch, "cuda", None)
        if cuda is None or not cuda.is_available():
            o._count("unobserved")
            if not _noticed:
                _noticed.append(True)
                o.log.warning("vramfit_vae.observe: no CUDA or ROCm device to read (torch.cuda is not available):"
                              " nothing is recorded, and the ops run as they would without it")
            return self.reservation
        self.cuda = cuda
        cuda.synchronize()
        if o.release:
            cuda.empty_cache()
        cuda.reset_peak_memory_stats()
        self.before = (cuda.memory_reserved(), cuda.memory_allocated(), cuda.mem_get_info())
        return self.reservation

    def __exit__(self, kind, value, trace):
        cuda = self.cuda
        if cuda is None:
            return False
        line = self.reservation.line
        key = (line.vae, line.op)
        with _process:
            context = self.context or ("warm" if key in _seen else "fresh")
            _seen.add(key)
        if kind is not None:
            if "OutOfMemory" in kind.__name__:
                self.observer._count("out_of_memory")
                self.observer.log.warning("vramfit: %s ran out of memory with %d B reserved"
                                          % (self.reservation.key, self.reservation.bytes))
            return False
        cuda.synchronize()
        free, _ = cuda.mem_get_info()
        reserved0, allocated0, (free0, _) = self.before
        peaks = (max(cuda.max_memory_reserved() - reserved0, 0), max(cuda.max_memory_allocated() - allocated0, 0),
                 max(free0 - free, 0))
        self.observer._record(self.reservation, peaks, _facts(cuda), context)
        return False
