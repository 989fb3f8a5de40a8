"""The context ``score_text`` reads, cut from a whole document without tokenizing all of it (no torch here).

A masked scorer reads at most ``SCORE_PREFIX`` tokens before the text it scores and ``SCORE_SUFFIX`` after it, but
its callers pass what stands before and after in the whole document (a fix-syntax repair is scored in its document):
tokenizing a 5 MB prefix took 14 s of a 30 s score on this machine (under a team server's model lock, where every
other editor's fill waited for it). ``tail`` and ``head`` encode only a window of the text that holds the tokens
wanted, cut where no token crosses: just after a line break whose next character is not whitespace (with a
byte-level BPE the line break ends a pre-token there, and the next one starts a new word; WordPiece splits on
whitespace), so the window's tokens are the whole text's, bit for bit. A text with no such place near enough is
encoded whole, as before."""

from __future__ import annotations

import re
from collections.abc import Callable

SCORE_PREFIX, SCORE_SUFFIX = 96, 32   # a masked scorer's context in tokens (less when the text leaves less room)
_FIRST_WINDOW = 2048                  # characters tried first; four times as many each time it holds too few
_CUT = re.compile(r"\n(?=\S)")        # a place no token crosses: after it, a line that starts with a word
_MARGIN = 8                           # tokens more than wanted: a tokenizer that marks a text's first word (a
                                      # prefix space) changes only the window's first token, which is not used

Encode = Callable[[str], list[int]]


def tail(text: str, tokens: int, encode: Encode) -> tuple[str, list[int]]:
    """The end of ``text`` that holds at least its last ``tokens`` tokens (all of it when no cut leaves enough),
    with its token ids: the whole text's last ids are this window's."""
    size = max(_FIRST_WINDOW, 16 * tokens)
    while size < len(text):
        found = _CUT.search(text, len(text) - size)
        if found is not None:
            window = text[found.end():]
            ids = encode(window)
            if len(ids) >= tokens + _MARGIN:
                return window, ids
        size *= 4
    return text, encode(text)


def head(text: str, tokens: int, encode: Encode) -> tuple[str, list[int]]:
    """The start of ``text`` that holds at least its first ``tokens`` tokens (all of it when no cut leaves enough),
    with its token ids: the whole text's first ids are this window's."""
    size = max(_FIRST_WINDOW, 16 * tokens)
    while size < len(text):
        end = _last_cut(text, size)
        if end:
            window = text[:end]
            ids = encode(window)
            if len(ids) >= tokens + _MARGIN:
                return window, ids
        size *= 4
    return text, encode(text)


def _last_cut(text: str, before: int) -> int:
    """The last cut at or before ``before`` (the index just after its line break), or 0."""
    at = before
    while (i := text.rfind("\n", 0, at)) >= 0:
        if i + 1 < len(text) and not text[i + 1].isspace():
            return i + 1
        at = i
    return 0
