"""Open documents and the only conversions between LSP positions (utf-16/8/32) and str offsets.

Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` exactly as LSP defines them (not ``str.splitlines``,
which also splits at form feeds and U+2028).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from lsprotocol import types

_EOL = re.compile(r"\r\n|\r|\n")
UTF8, UTF16, UTF32 = types.PositionEncodingKind.Utf8, types.PositionEncodingKind.Utf16, types.PositionEncodingKind.Utf32


class PositionError(ValueError):
    """A position that does not exist in the document."""


def _starts_line(text: str, s: int) -> bool:
    """Is offset ``s`` (> 0) just after an LSP line break (``\n``, ``\r\n``, or a lone ``\r``)?"""
    before = text[s - 1]
    return before == "\n" or (before == "\r" and text[s:s + 1] != "\n")


def _units(ch: str, encoding: str) -> int:
    cp = ord(ch)
    if encoding == UTF8:
        return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
    if encoding == UTF16:
        return 2 if cp >= 0x10000 else 1
    return 1


@dataclass
class Document:
    uri: str
    language_id: str
    version: int
    text: str
    out_of_sync: bool = False  # a change could not be applied: no edits until a full-text change
    _starts: list[int] | None = field(default=None, repr=False)

    def line_starts(self) -> list[int]:
        if self._starts is None:
            self._starts = [0] + [m.end() for m in _EOL.finditer(self.text)]
        return self._starts

    def _line_end(self, line: int) -> int:
        """Offset of the end of ``line``'s content (before its line break)."""
        starts = self.line_starts()
        if line + 1 < len(starts):
            end = starts[line + 1]
            return end - (2 if self.text[end - 2:end] == "\r\n" else 1)
        return len(self.text)

    def offset_at(self, position: types.Position, encoding: str = UTF16) -> int:
        """The str offset of ``position``; a character past the line's end means the end (LSP rule)."""
        starts = self.line_starts()
        if position.line < 0 or position.character < 0:
            raise PositionError(f"negative position {position.line}:{position.character}")
        if position.line >= len(starts):
            raise PositionError(f"line {position.line} is past the end of the document ({len(starts)} lines)")
        offset, end, left = starts[position.line], self._line_end(position.line), position.character
        while offset < end and left > 0:
            n = _units(self.text[offset], encoding)
            if n > left:  # inside a character (half a surrogate pair, part of a UTF-8 sequence)
                break
            left -= n
            offset += 1
        return offset

    def position_at(self, offset: int, encoding: str = UTF16) -> types.Position:
        offset = max(0, min(offset, len(self.text)))
        starts = self.line_starts()
        line = bisect.bisect_right(starts, offset) - 1
        start = starts[line]
        if encoding == UTF32:
            return types.Position(line, offset - start)
        return types.Position(line, sum(_units(ch, encoding) for ch in self.text[start:offset]))

    def range_at(self, start: int, end: int, encoding: str = UTF16) -> types.Range:
        return types.Range(self.position_at(start, encoding), self.position_at(end, encoding))

    def apply(self, change: types.TextDocumentContentChangeEvent, encoding: str = UTF16) -> None:
        if isinstance(change, types.TextDocumentContentChangePartial):
            lo = self.offset_at(change.range.start, encoding)
            hi = self.offset_at(change.range.end, encoding)
            if hi < lo:
                raise PositionError("change range ends before it starts")
            self.text = self.text[:lo] + change.text + self.text[hi:]
            if self._starts is not None:
                self._starts = self._shifted_starts(lo, hi, len(change.text))
        else:
            self.text = change.text
            self._starts = None

    def _shifted_starts(self, lo: int, hi: int, inserted: int) -> list[int]:
        """Line starts after ``[lo, hi)`` became ``inserted`` chars, without rescanning the document:
        starts before ``lo`` stay, the edited span is rescanned, the rest shift (a 5 MB file stays fast)."""
        old, text, delta = self.line_starts(), self.text, inserted - (hi - lo)
        head = old[:bisect.bisect_left(old, lo)] or [0]
        middle = [s for s in range(max(lo, 1), min(lo + inserted + 1, len(text)) + 1) if _starts_line(text, s)]
        tail = [s + delta for s in old[bisect.bisect_left(old, hi + 2):]]
        return head + middle + tail


class DocumentStore:
    def __init__(self) -> None:
        self._docs: dict[str, Document] = {}

    def open(self, item: types.TextDocumentItem) -> Document:
        doc = Document(item.uri, item.language_id, item.version, item.text)
        self._docs[item.uri] = doc
        return doc

    def change(self, params: types.DidChangeTextDocumentParams, encoding: str) -> Document | None:
        doc = self._docs.get(params.text_document.uri)
        if doc is None:
            return None
        text, starts = doc.text, doc._starts
        try:
            for change in params.content_changes:
                doc.apply(change, encoding)
                if not isinstance(change, types.TextDocumentContentChangePartial):
                    doc.out_of_sync = False
        except PositionError:
            doc.text, doc._starts, doc.out_of_sync = text, starts, True
            raise
        finally:
            doc.version = params.text_document.version
        return doc

    def close(self, uri: str) -> None:
        self._docs.pop(uri, None)

    def get(self, uri: str) -> Document | None:
        return self._docs.get(uri)
