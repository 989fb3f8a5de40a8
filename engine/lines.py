"""The one line-ending rule: the model reads and writes LF; a fill goes back with the document's line end
(CRLF when the text it was cut from uses it), token spans moved to match. A lone CR (old Mac line ends) ends a
line as LSP, the editor and Python have it: the engine reads it as LF, one character for one (``lf_view``), and a
CR-only document's fills go back with CR (``cr_only``, ``to_cr``)."""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import replace

from .requests import Completion, HoleFill

Spans = tuple[tuple[int, int], ...]
_SAMPLE = 4096  # characters looked at to decide a document's line end


def uses_crlf(*texts: str) -> bool:
    return any("\r\n" in text for text in texts)


def eol_of(text: str) -> str:
    """``"\\r\\n"`` when ``text`` (its first few thousand characters) uses CRLF, else ``"\\n"``."""
    return "\r\n" if uses_crlf(text[:_SAMPLE]) else "\n"


_LONE_CR = re.compile(r"\r(?!\n)")


def lf_view(text: str) -> str:
    """``text`` with each lone ``\\r`` as ``\\n``: the same offsets, and lines where LSP has them (``\\r\\n`` stays)."""
    if "\r" not in text:
        return text
    if "\n" not in text:
        return text.replace("\r", "\n")
    return text if text.count("\r") == text.count("\r\n") else _LONE_CR.sub("\n", text)  # CRLF alone: as it is


def cr_only(text: str) -> bool:
    """Does ``text`` (its first few thousand characters) end its lines with lone ``\\r`` only?"""
    sample = text[:_SAMPLE]
    return "\r" in sample and "\n" not in sample


def to_lf(text: str) -> str:
    return text.replace("\r\n", "\n")


def with_eol(text: str, spans: Spans, eol: str) -> tuple[str, Spans]:
    """``text`` with every line break as ``eol`` (a stray ``\\r`` dropped) and ``spans`` moved to match."""
    if "\r" not in text and eol == "\n":
        return text, spans
    out, where, n = [], [], 0  # where[k]: the new index of old index k
    for ch in text:
        where.append(n)
        piece = "" if ch == "\r" else eol if ch == "\n" else ch
        out.append(piece)
        n += len(piece)
    where.append(n)
    last = len(text)  # spans may reach past a text that was stripped after tokenizing
    return "".join(out), tuple((where[min(s, last)], where[min(e, last)]) for s, e in spans)


class LfText:
    """A document's text with each ``\\r\\n`` read as ``\\n`` (``lf``: what the model and every check of a cursor
    fill see, so a CRLF document gets its LF twin's window, options and fill), and the offsets mapped both ways.
    A lone ``\\r`` is left as it is (``lf_view`` reads it as LF first)."""

    def __init__(self, text: str):
        self.lf = text.replace("\r\n", "\n")
        pairs = [m.start() for m in re.finditer("\r\n", text)]       # where each CRLF's \r is, in ``text``
        self._cr = pairs
        self._lf_breaks = [at - i for i, at in enumerate(pairs)]      # where its \n is, in ``lf``

    def to_lf(self, offset: int) -> int:
        """The ``lf`` offset of a document offset; one between a CRLF's ``\\r`` and ``\\n`` is its line's end."""
        return offset - bisect_left(self._cr, offset)

    def to_doc(self, offset: int) -> int:
        """The document offset of an ``lf`` offset: before a line's ``\\r\\n`` at its end, after it at the next
        line's start (never between the two)."""
        return offset + bisect_left(self._lf_breaks, offset)

    def fill_back(self, fill: HoleFill, eol: str) -> HoleFill:
        """A fill computed on ``lf``: its range in the document, its line breaks ``eol``, token spans moved."""
        text, spans = with_eol(fill.text, fill.token_spans, eol)
        return replace(fill, start=self.to_doc(fill.start), end=self.to_doc(fill.end), text=text, token_spans=spans)

    def completion_back(self, completion: Completion, eol: str) -> Completion:
        def back(fill: HoleFill) -> HoleFill:
            return self.fill_back(fill, eol)
        return replace(completion, fills=tuple(map(back, completion.fills)),
                       considered=tuple(map(back, completion.considered)),
                       alternatives=tuple(map(back, completion.alternatives)),
                       fallbacks=tuple(tuple(map(back, forms)) for forms in completion.fallbacks))


def to_cr(completion: Completion) -> Completion:
    """A completion computed on a CR-only document's ``lf_view``, its fills with the document's CR line ends."""
    def cr(fill: HoleFill) -> HoleFill:
        text, spans = with_eol(fill.text, fill.token_spans, "\r")
        return replace(fill, text=text, token_spans=spans)
    return replace(completion, fills=tuple(map(cr, completion.fills)), considered=tuple(map(cr, completion.considered)),
                   alternatives=tuple(map(cr, completion.alternatives)),
                   fallbacks=tuple(tuple(map(cr, forms)) for forms in completion.fallbacks))
