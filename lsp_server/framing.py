"""LSP base-protocol framing without I/O: bytes in, message bodies and framing errors out, and after any
error the stream is read again from the next ``Content-Length`` header, so no framing error is for good.

A header block is ``Name: value`` lines ending in an empty line (``\\r\\n\\r\\n``); ``Content-Length`` must be
a non-negative decimal no larger than the limit. Resynchronising looks for the next ``Content-Length:``:
JSON never holds that text followed by digits and a raw line break (strings escape their line breaks),
so a body being skipped cannot be mistaken for a header block that parses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

HEADER_LIMIT = 8192  # a header block without its end within this many bytes is garbage
_MARK = re.compile(rb"content-length:", re.IGNORECASE)
_MARKS = (b"Content-Length:", b"content-length:")  # where resynchronising may start (as LSP writes it, or lower case)
_KEEP = len(b"content-length:") - 1  # bytes kept when dropping garbage: a header split across reads
_HEADER_LINE = re.compile(rb"([A-Za-z0-9-]+):[ \t]*(.*?)[ \t]*")
_MAX_DIGITS = 18  # more digits than this is above any limit (and int() refuses 4,300+ digits)


@dataclass(frozen=True)
class FramingError:
    """Bytes that are not a framed message: why, and how many were dropped at once."""

    reason: str
    dropped: int


def _content_length(block: bytes, limit: int) -> tuple[int | None, str]:
    """The Content-Length of a header block, or None and what is wrong with the block."""
    length = None
    for line in block.split(b"\r\n"):
        match = _HEADER_LINE.fullmatch(line)
        if match is None:
            return None, f"not a header line: {line[:60]!r}"
        if match.group(1).lower() == b"content-length":
            value = match.group(2)
            if not value.isdigit():
                return None, f"Content-Length is not a non-negative integer: {value[:60]!r}"
            if len(value) > _MAX_DIGITS or int(value) > limit:
                size = value.decode() if len(value) <= 30 else f"a {len(value)}-digit number of"
                return None, f"a message of {size} bytes is larger than the limit of {limit} bytes (--max-message-size)"
            length = int(value)
    if length is None:
        return None, "no Content-Length header"
    return length, ""


def _last_mark(buf: bytearray, start: int, end: int) -> int:
    """Where the last ``Content-Length:`` in ``buf[start:end]`` starts, or -1. Restarting at the last one before
    a block's end (not the first) makes every byte examined a bounded number of times: linear in the stream."""
    return max(buf.rfind(mark, start, end) for mark in _MARKS)


class Framer:
    """Splits a byte stream into message bodies; ``feed`` bytes, then take items with ``next`` until None."""

    def __init__(self, limit: int):
        self.limit = limit
        self._buf = bytearray()
        self._length: int | None = None  # the body being read, once its header block was accepted
        self._lost = False  # dropping bytes since the last error: one error per run of garbage

    def feed(self, data: bytes) -> None:
        self._buf += data

    def next(self) -> bytes | FramingError | None:
        """The next body or framing error, or None until more bytes arrive."""
        buf = self._buf
        while True:
            if self._length is not None:
                if len(buf) < self._length:
                    return None
                body = bytes(buf[:self._length])
                del buf[:self._length]
                self._length = None
                return body
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) <= HEADER_LIMIT:
                    return None
                mark = _last_mark(buf, max(1, len(buf) - HEADER_LIMIT), len(buf))  # a header still arriving
                error = self._drop(mark if mark > 0 else len(buf) - _KEEP,
                                   f"no header block ends within {HEADER_LIMIT} bytes")
            else:
                length, problem = _content_length(bytes(buf[:end]), self.limit) if end <= HEADER_LIMIT else (
                    None, f"a header block longer than {HEADER_LIMIT} bytes")
                if length is not None:
                    del buf[:end + 4]
                    self._length, self._lost = length, False
                    continue
                mark = _last_mark(buf, 1, end)  # garbage before a header: start again at the header
                error = self._drop(mark if mark > 0 else end + 4, problem)
            if error is not None:
                return error

    def reject(self, body: bytes) -> None:
        """``body`` was not a message, and the caller said so: drop what follows up to the next header block
        without another error, reading again from the first header inside ``body`` (a Content-Length too
        long swallows the start of the next message)."""
        self._lost = True
        mark = _MARK.search(body, 1)
        if mark is not None:
            self._buf[:0] = body[mark.start():]

    def _drop(self, n: int, reason: str) -> FramingError | None:
        del self._buf[:n]
        if self._lost:
            return None
        self._lost = True
        return FramingError(reason, n)
