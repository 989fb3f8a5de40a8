"""Hands the C allocator's free memory back to the system when the engine goes idle, so a long session's RSS stays flat.

Each job allocates tensors of sizes that change with the document and the cursor (activations,
attention scores, logits: 128 KiB to tens of MiB). glibc serves them from its heap once its dynamic
mmap threshold has risen, and keeps what they leave free: in a 2,000-operation storm
(``benchmarks.storm``) the heap's free part grew 30 -> 68 MiB between operation 200 and 2,000 while
the memory in use grew 8 MiB, and RSS 10.3% (benchmarks/README.md, "The storm"). ``malloc_trim(0)``
returns those free pages (the top of every arena, and whole free pages inside them). It runs on the
engine thread, never while a job waits: after half a second without a job, or, when requests never
pause, between two jobs once RSS has grown 32 MiB since the last trim.

And the cyclic garbage collector's share: ``collection_paused`` (while a model loads, while a large file's
Python tree is made and walked) and, in a process that holds one model for long, ``gc.freeze`` after each load
(``freeze_after_loads``).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import logging
import os
import threading
from collections.abc import Iterator

log = logging.getLogger(__name__)
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _malloc_trim():
    """glibc's ``malloc_trim``, or None on other C libraries (musl, macOS, Windows)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_PAUSES = threading.Lock()
_paused = [0, False]   # callers inside ``collection_paused``, and whether the collector was on when the first came


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """The cyclic garbage collector off meanwhile (on again after the last caller, if it was on). An AST (the names
    check's parse of a large file) is tens of thousands of objects: each thousand made starts a collection, and
    every few parses one of every object of the process (a loaded model has hundreds of thousands), which cost more
    than the parse itself; an AST has no cycles: it is freed as its last reference goes, collector or not. A model
    load (importing torch, building the model) ran 6-7 full collections over what it had made so far."""
    with _PAUSES:
        if not _paused[0]:
            _paused[1] = gc.isenabled()
            gc.disable()
        _paused[0] += 1
    try:
        yield
    finally:
        with _PAUSES:
            _paused[0] -= 1
            if not _paused[0] and _paused[1]:
                gc.enable()


_freezing = [False]   # freeze_after_loads() was called: this process holds one long-lived model


def freeze_after_loads(on: bool = True) -> None:
    """For a process that holds one model for long (the stdio language server, one editor's; the plain team
    server): after each load, the objects alive then go to the collector's permanent generation (``gc.freeze``).
    A loaded model and its libraries are about 360,000 objects that the cyclic collector otherwise walks in every
    full collection: 370-400 ms each on this 2-core machine, a stall in whatever fill is running (the names check's
    parses pause the collector, ``collection_paused``; other work does not). Off by default: a process running several
    engines at once (``--tcp`` sessions, tests, benchmarks) would keep the cyclic garbage of those alive at a
    freeze until the next thaw."""
    _freezing[0] = on


def model_loaded() -> None:
    """After a load: garbage collected, then what lives is frozen (if ``freeze_after_loads``)."""
    if _freezing[0]:
        gc.collect()
        gc.freeze()


def model_unloading() -> None:
    """Before a model is let go (a reload, the engine closed): frozen objects go back to the collector, so the
    old model's cycles are collected."""
    if _freezing[0]:
        gc.unfreeze()


def resident_bytes() -> int | None:
    """This process' resident memory (VmRSS) from /proc/self/statm; None where there is no /proc."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


class HeapTrimmer:
    """When to trim. A trim makes the next job fault its pages in again (about 3,000 page faults, +11%
    CPU for that job), so not after every job: ``quiet()`` after ``delay`` seconds without a job (the
    user paused), and ``busy()`` between jobs only once resident memory has grown ``slack`` bytes past
    where the last trim left it (a stream of requests that never pauses). ``trims`` counts the runs."""

    def __init__(self, delay: float = 0.5, slack: int = 32 << 20) -> None:
        self._trim = _malloc_trim()
        self.delay, self.slack = delay, slack
        self.floor: int | None = None   # RSS right after the last trim
        self.pending = False            # a job ran since the last trim
        self.trims = 0

    @property
    def available(self) -> bool:
        return self._trim is not None

    def wait(self) -> float | None:
        """How long the engine thread may wait for its next task before ``quiet()`` is due (None: forever)."""
        return self.delay if self.pending and self._trim is not None else None

    def job_done(self) -> None:
        self.pending = True

    def quiet(self) -> None:
        """No job for ``delay`` seconds: trim if any job ran since the last trim."""
        if self.pending:
            self._run()

    def busy(self) -> None:
        """Between jobs with no pause: trim only past the slack."""
        rss = resident_bytes()
        if self.pending and rss is not None and (self.floor is None or rss > self.floor + self.slack):
            self._run()

    def _run(self) -> None:
        self.pending = False
        if self._trim is None:
            return
        try:
            self._trim(0)
        except Exception:  # never let housekeeping take the engine thread down
            log.exception("malloc_trim failed")
            return
        self.trims += 1
        self.floor = resident_bytes()
