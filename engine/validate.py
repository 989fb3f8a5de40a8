"""Is a fill acceptable? Re-parse the context window with it, compare with the original, tidy the seams."""

from __future__ import annotations

from .context import Hole, Window
from .languages import LanguageSpec, error_count, parse
from .requests import HoleKind


def tidy(fill: str, hole: Hole, rest_of_line: str) -> str | None:
    """Apply the hole's stop rule and seam rules to a raw fill; ``None`` if it cannot be used."""
    if hole.heal:
        if not fill.startswith(hole.heal):
            return None
    if hole.stop_at_newline:
        cut = fill.find("\n", len(hole.heal))
        if cut >= 0:
            fill = fill[:cut + 1] if hole.keep_newline else fill[:cut].rstrip("\r")
        elif hole.keep_newline:  # a whole line inserted before code must end its own line
            fill = fill.rstrip(" \t") + "\n"

    if hole.kind is HoleKind.INLINE:
        fill = fill.rstrip()
        tail = rest_of_line.strip()
        if tail and fill.endswith(tail):  # never repeat the text after the cursor
            fill = fill[: len(fill) - len(tail)].rstrip()
    elif hole.kind is HoleKind.BLOCK:
        fill = fill.rstrip(" \t")
    return fill


def baseline_errors(spec: LanguageSpec, window: Window, original_middle: str) -> int | None:
    """Errors in the window as the user has it; ``None`` when the language has no grammar."""
    tree = parse(spec, window.prefix + original_middle + window.suffix)
    return None if tree is None else error_count(tree)


def parses(spec: LanguageSpec, window: Window, fill: str, baseline: int | None) -> bool:
    """No new ERROR/MISSING nodes in the window with the fill, compared with the baseline."""
    if baseline is None:
        return True
    return error_count(parse(spec, window.prefix + fill + window.suffix)) <= baseline
