"""Lines the document already has, as fills for the rest of a line the user is typing.

Code repeats itself: the same call, assert, return or assignment appears again a few lines on. A weak model
seldom writes such a line exactly, but it can tell which of the document's lines fits the hole: each line
near the cursor that starts with the code typed on the cursor's line goes to the backend as a plan option
(``FillPlan.options``) and is scored on the fill's first forward (the probability of each of its tokens with
every slot still masked); the best one that validates joins the model's own fills as one more fill
(``HoleFill.copied``), and engine/confidence.py estimates it and ranks it against them. The lines of the
workspace's other files (``engine.worklines``) and the lines code often has (``engine.commonlines``) follow the
document's, each with a prior.

Only a line with code typed before the cursor, and nothing after it but the closing brackets and quotes an
editor puts there when the opener is typed (``f(|)``: a candidate must end with them), gets options. On the
development holes (benchmarks/README.md, "Lines the document already has") they turned 4 right fills offered
of 1,900 typed holes into 149; on whole lines (nothing typed) they doubled the right picks without a bar but
not the right fills offered at the bar (37 either way), so an empty line is left to the model. Inside an
editor's closers, development exact match went from 2.5% to 19.4% (725 holes, "Inside an editor's closing
brackets").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from . import commonlines, worklines
from .commonlines import Table
from .context import Hole
from .requests import HoleKind

MOST = 64          # candidates per hole, the nearest lines first
SPAN = 4000        # lines read on each side of the cursor: a huge file costs what an 8,000-line one does
LONGEST = 200      # characters: a longer line never fits a one-line hole's slots
CLOSERS = ")]}\"'`"  # after the cursor, only these (what editors insert as an opener is typed): still the line's rest


DOCUMENT, WORKSPACE, COMMON = "document", "workspace", "common"   # where a candidate line comes from


class LineOptions(NamedTuple):
    """A hole's candidate lines (``FillPlan.options``), where each comes from (``DOCUMENT``, ``WORKSPACE`` or
    ``COMMON``) and, for each, None for a line of the document or a workspace or common line's prior (the log
    of its share of the files among the lines of its table with its start)."""

    texts: tuple[str, ...]
    priors: tuple[float | None, ...]
    sources: tuple[str, ...]


NONE = LineOptions((), (), ())


def line_options(text: str, hole: Hole, rest_of_line: str, language: str | None = None,
                 workspace: Table | None = None) -> LineOptions:
    """The texts a fill of ``hole`` could take from the document's other lines, nearest line first, then from
    the lines of the ``workspace``'s other files (``engine.worklines``), then (with a ``language``) from the
    lines code often has (``engine.commonlines``), the most widespread first in both; each ends
    with a line break (the end of the line is scored too) and is the line's remainder from where the fill
    starts (a regenerated word fragment, ``hole.heal``, included), for a line whose code starts with the code
    typed on the cursor's line. Empty unless the hole is the rest of a line with code before the cursor and
    nothing after it but closing brackets and quotes (``CLOSERS``, as editors insert them when the opener is
    typed): then a candidate line must end with them, and its remainder stops before them (no line break)."""
    tail = rest_of_line.strip()
    if hole.kind is not HoleKind.INLINE or hole.end != hole.start + len(hole.heal) or tail.strip(CLOSERS):
        return NONE
    line_start = text.rfind("\n", 0, hole.start) + 1
    typed = text[line_start:hole.end]
    key = typed.lstrip(" \t")
    if not key.strip():
        return NONE
    indent = typed[:len(typed) - len(key)]
    kept = hole.start - line_start      # the line's characters that stay before the fill (a healed fragment
                                        # may begin in the indentation: then the fill rewrites some of it)

    def remainder(code: str) -> str | None:
        if tail:   # the line's end is already there (an editor's closers): the fill goes up to it
            if not code.endswith(tail):
                return None
            rest = (indent + code[:len(code) - len(tail)])[kept:]
            return rest if rest[len(hole.heal):].strip() else None
        rest = (indent + code)[kept:]
        return rest + "\n" if rest[len(hole.heal):].strip() else None

    out: dict[str, tuple[float | None, str]] = {}
    line_end = text.find("\n", hole.end)
    for line in _nearby(text, line_start, len(text) if line_end < 0 else line_end):
        code = line.strip()
        if len(code) > LONGEST or not code.startswith(key) or len(code) <= len(key.rstrip()):
            continue
        rest = remainder(code)
        if rest is not None:
            out.setdefault(rest, (None, DOCUMENT))
            if len(out) >= MOST:
                break
    for source, table, most in ((WORKSPACE, workspace, worklines.MOST),
                                (COMMON, commonlines.table(language) if language else None, commonlines.MOST)):
        if table is None:
            continue
        for code, prior in table.starting_with(key, most):
            rest = remainder(code)
            if rest is not None:
                out.setdefault(rest, (prior, source))
    return LineOptions(tuple(out), tuple(p for p, _ in out.values()), tuple(s for _, s in out.values()))


def _nearby(text: str, lo: int, hi: int) -> Iterator[str]:
    """The lines around the cursor's line ``text[lo:hi]`` (not it), nearest first, the line above before the line
    below at the same distance, at most ``SPAN`` on each side; a line's ``\\r`` is kept (callers strip)."""
    up, down = lo, hi   # up: the start of the nearest line above not yet given; down: the end of the one below
    for _ in range(SPAN):
        if up <= 0 and down >= len(text):
            return
        if up > 0:
            start = text.rfind("\n", 0, up - 1) + 1
            yield text[start:up - 1]
            up = start
        if down < len(text):
            end = text.find("\n", down + 1)
            end = len(text) if end < 0 else end
            yield text[down + 1:end]
            down = end
