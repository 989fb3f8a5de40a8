"""The one line-ending rule: the model reads and writes LF; a fill goes back with the document's line end
(CRLF when the text it was cut from uses it), token spans moved to match. A lone CR (old Mac line ends) ends a
line as LSP, the editor and Python have it: the engine reads it as LF, one character for one (``lf_view``), and a
CR-only document's fills go back with CR (``cr_only``, ``to_cr``)."""

from __future__ import annotations

import re
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


def to_crlf(fill: HoleFill) -> HoleFill:
    """The fill with CRLF line ends, token spans shifted to match."""
    text, spans = with_eol(fill.text, fill.token_spans, "\r\n")
    return replace(fill, text=text, token_spans=spans)


def to_cr(completion: Completion) -> Completion:
    """A completion computed on a CR-only document's ``lf_view``, its fills with the document's CR line ends."""
    def cr(fill: HoleFill) -> HoleFill:
        text, spans = with_eol(fill.text, fill.token_spans, "\r")
        return replace(fill, text=text, token_spans=spans)
    return replace(completion, fills=tuple(map(cr, completion.fills)), considered=tuple(map(cr, completion.considered)),
                   alternatives=tuple(map(cr, completion.alternatives)))
