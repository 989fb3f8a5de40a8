"""Is a fill acceptable? Re-parse the context window with it, compare with the original, tidy the seams."""

from __future__ import annotations

import ast

from .context import Hole, Window
from .languages import LanguageSpec, error_count, error_spans, parse
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


_PYTHON_CHECK_LIMIT = 200_000  # characters; beyond this only the tree-sitter window check runs


def _first_error(document: str) -> tuple[int, str] | None:
    try:
        ast.parse(document)
        return None
    except (SyntaxError, ValueError) as exc:
        return getattr(exc, "lineno", None) or 0, getattr(exc, "msg", str(exc))
    except RecursionError:
        return None


PARSES = "parses"                  # python_check verdicts: the whole filled document parses,
KEEPS_ERROR = "keeps-error"        # or fails with exactly the error the user's document already had


def python_check(spec: LanguageSpec, text: str, start: int, end: int):
    """For a small Python document, a check of fills by Python's own parser: the filled document must
    parse (``PARSES``), or fail with exactly the error the user's document already had, moved by the
    fill's lines (``KEEPS_ERROR``: Python stops at the first error, so code after it is unchecked);
    ``""`` rejects. ``None`` for other languages and large documents (the tree-sitter window check
    still runs)."""
    if spec.name != "python" or len(text) > _PYTHON_CHECK_LIMIT:
        return None
    original = _first_error(text)
    fill_line = text.count("\n", 0, start) + 1
    removed = text.count("\n", start, end)

    def accepts(fill: str) -> str:
        error = _first_error(text[:start] + fill + text[end:])
        if error is None:
            return PARSES
        if original is None:
            return ""
        line, message = original
        moved = line if line < fill_line else line + fill.count("\n") - removed
        if error != (moved, message):
            return ""
        # An indentation error on the fill's lines or the line after it is the hole's to fix: the code
        # below is indented under a block opener that is missing (or the hole is a block's empty body).
        last = fill_line + fill.count("\n")
        return "" if "indent" in message and fill_line <= moved <= last + 1 else KEEPS_ERROR
    return accepts


def baseline_errors(spec: LanguageSpec, window: Window, original_middle: str) -> int | None:
    """Errors in the window as the user has it; ``None`` when the language has no grammar."""
    tree = parse(spec, window.prefix + original_middle + window.suffix)
    return None if tree is None else error_count(tree)


def parses(spec: LanguageSpec, window: Window, fill: str, baseline: int | None) -> bool:
    """No new ERROR/MISSING nodes in the window with the fill (compared with the baseline), and none
    touching the fill itself: a fill must not carry an error the document already had elsewhere."""
    if baseline is None:
        return True
    spans = error_spans(parse(spec, window.prefix + fill + window.suffix))
    if len(spans) > baseline:
        return False
    lo = len(window.prefix.encode("utf-8", "surrogatepass"))
    hi = lo + len(fill.encode("utf-8", "surrogatepass"))
    return not any(start < max(hi, lo + 1) and end > lo for start, end in spans)
