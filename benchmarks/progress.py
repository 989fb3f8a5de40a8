"""A dependency-free progress bar on stderr: redrawn in place on a terminal, a line per 10% otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def progress(items: Iterable[T], total: int, label: str, stream=None) -> Iterator[T]:
    stream = stream or sys.stderr
    tty = stream.isatty()
    start, last_decile = time.monotonic(), -1
    for done, item in enumerate(items, 1):
        yield item
        elapsed = time.monotonic() - start
        eta = elapsed / done * (total - done) if done else 0.0
        frac = done / total if total else 1.0
        if tty:
            bar = "#" * int(30 * frac)
            stream.write(f"\r{label} [{bar:<30}] {done}/{total} {elapsed:5.0f}s eta {eta:4.0f}s")
            if done == total:
                stream.write("\n")
            stream.flush()
        elif int(frac * 10) > last_decile:
            last_decile = int(frac * 10)
            stream.write(f"{label}: {done}/{total} in {elapsed:.0f}s\n")
            stream.flush()
