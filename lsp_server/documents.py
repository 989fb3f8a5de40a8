"""Open documents and the only conversions between LSP positions (utf-16/8/32) and str offsets.

Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` exactly as LSP defines them (not ``str.splitlines``,
which also splits at form feeds and U+2028).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from lsprotocol import types

_EOL = re.compile(r"\r\n?|\n")  # the same breaks as \r\n|\r|\n, found 2-3x faster
_BREAK_CHAR = re.compile(r"[\r\n]")
UTF8, UTF16, UTF32 = types.PositionEncodingKind.Utf8, types.PositionEncodingKind.Utf16, types.PositionEncodingKind.Utf32
# codec and bytes per unit; surrogatepass: a lone surrogate is one UTF-16 unit and three UTF-8 bytes,
# as _units counts it
_CODECS: dict[str, tuple[str, int]] = {UTF8: ("utf-8", 1), UTF16: ("utf-16-le", 2)}
_BLOCK = 1024  # characters between checkpoints on a long line: a conversion counts at most this many


_HIGH, _LOW = re.compile("[\ud800-\udbff]"), re.compile("[\udc00-\udfff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _joined(text: str) -> str:
    """``text`` with each high surrogate followed by a low one made the astral character they are in UTF-16."""
    if not _PAIR.search(text):
        return text
    return _PAIR.sub(lambda m: m.group().encode("utf-16-le", "surrogatepass").decode("utf-16-le"), text)


def _halves(ch: str) -> tuple[str, str]:
    """An astral character's two UTF-16 code units, each a lone surrogate."""
    cp = ord(ch) - 0x10000
    return chr(0xD800 + (cp >> 10)), chr(0xDC00 + (cp & 0x3FF))


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


def _count(text: str, encoding: str) -> int:
    """Code units of ``text`` in ``encoding`` (UTF-8 or UTF-16), counted by the codec in C."""
    codec, width = _CODECS[encoding]
    return len(text.encode(codec, "surrogatepass")) // width


def _walk(text: str, offset: int, end: int, left: int, encoding: str) -> int:
    """The offset ``left`` units after ``offset``, stopping at ``end`` or before a character that would
    overshoot (half a surrogate pair, part of a UTF-8 sequence: the character's start)."""
    while offset < end and left > 0:
        n = _units(text[offset], encoding)
        if n > left:
            break
        left -= n
        offset += 1
    return offset


class _LineUnits:
    """One long line's code units in one encoding, counted once per text: the units before every
    ``_BLOCK``-th character, so a conversion scans at most one block (none when every character is one unit)."""

    def __init__(self, text: str, start: int, end: int, encoding: str):
        self.start, self.end, self.encoding = start, end, encoding
        self.marks: list[int] | None = None  # None: one unit per character
        if _count(text[start:end], encoding) != end - start:
            marks, total = [0], 0
            for s in range(start, end, _BLOCK):
                total += _count(text[s:min(s + _BLOCK, end)], encoding)
                marks.append(total)
            self.marks = marks

    def offset(self, text: str, units: int) -> int:
        if self.marks is None:
            return self.start + min(units, self.end - self.start)
        block = bisect.bisect_right(self.marks, units) - 1
        if block >= len(self.marks) - 1:
            return self.end
        begin = lo = self.start + block * _BLOCK
        hi, left = min(lo + _BLOCK, self.end), units - self.marks[block]
        while lo < hi:  # the last offset whose units from the block's start are <= left (never inside a character)
            mid = (lo + hi + 1) // 2
            if _count(text[begin:mid], self.encoding) <= left:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def units(self, text: str, offset: int) -> int:
        if self.marks is None:
            return offset - self.start
        block = (offset - self.start) // _BLOCK
        begin = self.start + block * _BLOCK
        return self.marks[block] + _count(text[begin:offset], self.encoding)


@dataclass
class Document:
    uri: str
    language_id: str
    version: int
    text: str
    out_of_sync: bool = False  # a change could not be applied: no edits until a full-text change
    generation: int = 0        # which didOpen this is: a reopen, even at the same version, is a new one
    _starts: list[int] | None = field(default=None, repr=False)
    _long: dict[tuple[int, str], _LineUnits] = field(default_factory=dict, repr=False)  # for this text only

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

    def _line_units(self, line: int, start: int, end: int, reach: int, encoding: str) -> _LineUnits | None:
        """The unit table of a line longer than one block, for a column ``reach`` characters or units into
        it (made on first use, kept until the text changes)."""
        if end - start <= _BLOCK or reach <= _BLOCK or encoding == UTF32:
            return None  # a short line, or a column near its start: counting there is cheap
        table = self._long.get((line, encoding))
        if table is None:
            table = self._long[(line, encoding)] = _LineUnits(self.text, start, end, encoding)
        return table

    def offset_at(self, position: types.Position, encoding: str = UTF16) -> int:
        """The str offset of ``position``; a character past the line's end means the end (LSP rule)."""
        starts = self.line_starts()
        if position.line < 0 or position.character < 0:
            raise PositionError(f"negative position {position.line}:{position.character}")
        if position.line >= len(starts):
            raise PositionError(f"line {position.line} is past the end of the document ({len(starts)} lines)")
        start, end = starts[position.line], self._line_end(position.line)
        if encoding == UTF32:
            return start + min(position.character, end - start)
        table = self._line_units(position.line, start, end, position.character, encoding)
        if table is not None:
            return table.offset(self.text, position.character)
        return _walk(self.text, start, end, position.character, encoding)

    def position_at(self, offset: int, encoding: str = UTF16) -> types.Position:
        offset = max(0, min(offset, len(self.text)))
        starts = self.line_starts()
        line = bisect.bisect_right(starts, offset) - 1
        start = starts[line]
        if encoding == UTF32:
            return types.Position(line, offset - start)
        table = self._line_units(line, start, self._line_end(line), offset - start, encoding)
        if table is not None:
            return types.Position(line, table.units(self.text, offset))
        return types.Position(line, _count(self.text[start:offset], encoding))

    def range_at(self, start: int, end: int, encoding: str = UTF16) -> types.Range:
        return types.Range(self.position_at(start, encoding), self.position_at(end, encoding))

    def _inside_pair(self, position: types.Position, offset: int, encoding: str) -> bool:
        """Does a UTF-16 ``position`` (at str ``offset``) fall between the two halves of an astral character?"""
        return (encoding == UTF16 and offset < len(self.text) and ord(self.text[offset]) > 0xFFFF
                and position.character > self.position_at(offset, encoding).character)

    def apply(self, change: types.TextDocumentContentChangeEvent, encoding: str = UTF16) -> None:
        """Apply one change as the client did: in UTF-16 an end between the halves of an astral character
        splits it (the client keeps the half outside the range, a lone surrogate), and surrogate halves that
        meet are one character again, as they are in the client's text (and in the same text sent whole)."""
        if isinstance(change, types.TextDocumentContentChangePartial):
            lo = self.offset_at(change.range.start, encoding)
            hi = self.offset_at(change.range.end, encoding)
            split_lo = self._inside_pair(change.range.start, lo, encoding)
            split_hi = self._inside_pair(change.range.end, hi, encoding)
            if hi < lo or (hi == lo and split_lo and not split_hi):
                raise PositionError("change range ends before it starts")
            new = change.text
            if split_lo:
                new = _halves(self.text[lo])[0] + new
            if split_hi:
                new, hi = new + _halves(self.text[hi])[1], hi + 1
            if lo > 0 and _HIGH.match(self.text, lo - 1):  # halves that may meet at the edges of the edit
                lo, new = lo - 1, self.text[lo - 1] + new
            if _LOW.match(self.text, hi):
                hi, new = hi + 1, new + self.text[hi]
            new = _joined(new)
            text = self.text[:lo] + new + self.text[hi:]
            starts = None if self._starts is None else self._shifted_starts(text, lo, hi, len(new))
            self.restore(text, starts)
        else:
            self.restore(_joined(change.text), None)

    def apply_all(self, changes: Sequence[types.TextDocumentContentChangeEvent], encoding: str = UTF16) -> None:
        """Apply one notification's changes in turn. Several edits (a replace-all, a multi-cursor edit) are each
        applied to the few lines they touch, by ``apply`` on those lines alone, and the text is joined once: each
        applied to the whole text copied it and shifted every line start, so 5,000 changes in one didChange of a 10
        MB file held the event loop (every request, cancels included) for 36 s."""
        if sum(isinstance(c, types.TextDocumentContentChangePartial) for c in changes) < 2:
            for change in changes:
                self.apply(change, encoding)
            return
        pieces = self._pieces()   # each line with its break; the last: what follows the last break
        for change in changes:
            if not isinstance(change, types.TextDocumentContentChangePartial):
                self.restore(_joined(change.text), None)
                pieces = self._pieces()
                continue
            start, end = change.range.start, change.range.end
            for position in (start, end):   # as offset_at refuses them, for the whole text
                if position.line < 0 or position.character < 0:
                    raise PositionError(f"negative position {position.line}:{position.character}")
                if position.line >= len(pieces):
                    raise PositionError(f"line {position.line} is past the end of the document ({len(pieces)} "
                                        "lines)")
            # the lines of the range and one on each side: halves of an astral character or a \r\n that meet at
            # the edges of the edit are within them
            first = max(min(start.line, end.line) - 1, 0)
            last = min(max(start.line, end.line) + 1, len(pieces) - 1)
            lines = Document(self.uri, self.language_id, self.version, "".join(pieces[first:last + 1]))
            lines.apply(types.TextDocumentContentChangePartial(types.Range(
                types.Position(start.line - first, start.character), types.Position(end.line - first, end.character)),
                change.text), encoding)
            edited = lines._pieces()
            if last < len(pieces) - 1:   # the lines end with a break the edit did not reach: nothing follows it
                edited.pop()
            pieces[first:last + 1] = edited
        self.restore("".join(pieces), [0, *itertools.accumulate(map(len, pieces[:-1]))])

    def _pieces(self) -> list[str]:
        """The text's lines, each with its break; the last one, what follows the last break (maybe nothing)."""
        starts, text = self.line_starts(), self.text
        return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)])]

    def restore(self, text: str, starts: list[int] | None) -> None:
        """Set the text (and its line starts, when known); unit tables of the old text are dropped."""
        self.text, self._starts = text, starts
        self._long.clear()

    def _shifted_starts(self, text: str, lo: int, hi: int, inserted: int) -> list[int]:
        """Line starts after ``[lo, hi)`` became ``inserted`` chars, without rescanning the document:
        starts before ``lo`` stay, the edited span is rescanned, the rest shift (a 5 MB file stays fast)."""
        old, delta = self.line_starts(), inserted - (hi - lo)
        head = old[:bisect.bisect_left(old, lo)] or [0]
        first, last = max(lo, 1), min(lo + inserted + 1, len(text))  # the starts that may have changed
        middle = [m.end() for m in _BREAK_CHAR.finditer(text, first - 1, last)
                  if _starts_line(text, m.end())] if first <= last else []
        tail = [s + delta for s in old[bisect.bisect_left(old, hi + 2):]]
        return head + middle + tail


class DocumentStore:
    def __init__(self) -> None:
        self._docs: dict[str, Document] = {}
        self._generations = itertools.count(1)

    def open(self, item: types.TextDocumentItem) -> Document:
        doc = Document(item.uri, item.language_id, item.version, item.text, generation=next(self._generations))
        self._docs[item.uri] = doc
        return doc

    def change(self, params: types.DidChangeTextDocumentParams, encoding: str) -> Document | None:
        doc = self._docs.get(params.text_document.uri)
        if doc is None:
            return None
        if params.text_document.version <= doc.version:
            # versions only increase (LSP): one that does not would make a result computed for an older text at
            # that version look fresh, so the text is a new generation, as after a reopen
            doc.generation = next(self._generations)
        text, starts = doc.text, doc._starts
        try:
            doc.apply_all(params.content_changes, encoding)
            if not all(isinstance(c, types.TextDocumentContentChangePartial) for c in params.content_changes):
                doc.out_of_sync = False
        except PositionError:
            doc.restore(text, starts)
            doc.out_of_sync = True
            raise
        finally:
            doc.version = params.text_document.version
        return doc

    def close(self, uri: str) -> None:
        self._docs.pop(uri, None)

    def get(self, uri: str) -> Document | None:
        return self._docs.get(uri)

    def moved_on(self, uri: str, generation: int, version: int) -> bool:
        """Is the text a result was computed for (``generation``'s ``version`` of ``uri``) gone: edited (even
        back to the same version), closed, reopened (even at the same version), or out of sync?"""
        doc = self._docs.get(uri)
        return doc is None or doc.generation != generation or doc.version != version or doc.out_of_sync
