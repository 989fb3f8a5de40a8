"""The hole and its surroundings: which kind of hole the cursor asks for, and prefix/suffix windows
cut at syntax boundaries within a token budget. Works in str offsets; tree-sitter rows stay in here."""

from __future__ import annotations

import collections
import re
from collections.abc import Callable
from dataclasses import dataclass

from .languages import LanguageSpec, parse
from .requests import Hole, HoleKind

_WORD_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"


def _word_tail(before: str) -> str:
    """The typed word fragment at the end of ``before`` (a letter or ``_``, then letters, digits, ``_``: ASCII) with
    the spaces and tabs right before it, or "": found with ``str.rstrip``, in linear time (a regular expression
    anchored at the line's end is searched from every position: quadratic in a long run of word characters, and a
    2 MB minified line held the engine for minutes)."""
    rest = before.rstrip(_WORD_CHARS)
    word = before[len(rest):]
    letters = word.lstrip("0123456789")   # a fragment starts with a letter or _: after any digits
    if not letters:
        return ""
    if len(letters) < len(word):
        return letters
    return rest[len(rest.rstrip(" \t")):] + word
_CHARS_PER_TOKEN = 6  # generous: a raw window this many chars per budget token always covers the budget


@dataclass(frozen=True)
class Window:
    prefix: str
    suffix: str
    start: int                   # str offset of prefix[0]
    end: int                     # str offset just after suffix[-1]


def _line_bounds(text: str, offset: int) -> tuple[int, int]:
    lo = text.rfind("\n", 0, offset) + 1
    hi = text.find("\n", offset)
    return lo, (len(text) if hi < 0 else hi)


def _previous_code_line(text: str, line_start: int) -> str:
    pos = line_start - 1
    while pos > 0:
        lo = text.rfind("\n", 0, pos) + 1
        line = text[lo:pos].rstrip("\r")
        if line.strip():
            return line
        pos = lo - 1
    return ""


_PY_HEADER = re.compile(
    r"^\s*(?:async\s+)?(?:def|class|if|elif|else|for|while|with|try|except|finally|match|case)\b|^\s*\)")


def _opens_block(spec: LanguageSpec, text: str, line_start: int, before: str) -> bool:
    """Does the code right before the cursor (this line, else the previous code line) open a body?"""
    if not spec.block_opener:
        return False
    head = before if before.strip() else _previous_code_line(text, line_start)
    if spec.block_opener == ":":
        head = re.sub(r"\s+#[^'\"]*$", "", head).rstrip()
        # A ':' ending a compound statement header (or a multi-line signature's ')...:'), not a slice or dict.
        return head.endswith(":") and bool(_PY_HEADER.match(head))
    return head.rstrip().endswith(spec.block_opener)


def decide_hole(spec: LanguageSpec, text: str, offset: int, end: int | None = None,
                kind: HoleKind | None = None) -> Hole:
    """The hole for a cursor at ``offset`` (or the selection ``[offset, end)``)."""
    if end is not None and end > offset:
        return Hole(offset, end, kind or HoleKind.SPAN)
    lo, hi = _line_bounds(text, offset)
    before, after = text[lo:offset], text[offset:hi].rstrip("\r")
    if kind is None:
        if after.strip():
            kind = HoleKind.LINE if not before.strip() else HoleKind.INLINE
        elif _opens_block(spec, text, lo, before):
            kind = HoleKind.BLOCK
        else:
            kind = HoleKind.LINE if not before.strip() else HoleKind.INLINE
    # Heal: regenerate the typed indentation or word fragment so the fill starts on a token boundary.
    heal = ""
    if kind in (HoleKind.LINE, HoleKind.BLOCK) and not before.strip():
        heal = before
    elif kind in (HoleKind.INLINE, HoleKind.LINE, HoleKind.BLOCK) and not after.strip():
        heal = _word_tail(before)
    start = offset - len(heal)
    if kind is HoleKind.LINE:
        # Inserted before code on this line: a whole line, newline included. On an empty line: no newline.
        return Hole(start, offset, kind, heal, stop_at_newline=True, keep_newline=bool(after.strip()))
    if kind is HoleKind.INLINE:
        return Hole(start, offset, kind, heal, stop_at_newline=True)
    return Hole(start, offset, kind, heal)


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _next_code_line(text: str, offset: int) -> str:
    pos = text.find("\n", offset)
    while 0 <= pos < len(text) - 1:
        end = text.find("\n", pos + 1)
        line = text[pos + 1: len(text) if end < 0 else end].rstrip("\r")
        if line.strip():
            return line
        pos = end
    return ""


def indent_options(spec: LanguageSpec, text: str, hole: Hole, default: str | None = None) -> tuple[str, ...]:
    """Indentations the first line of a fill may be given instead of the model's own: the user's typed
    indentation (always), or at column 0 the levels around the hole: for an indentation-sensitive language
    the body of an opener, the next code line's, the previous line's, dedents; for a braces language (where
    they are only tried for a fill indented with what the file does not use, ``foreign_indent``) the body of an
    opener, else the previous code line's level, then the next code line's. After an opener on its line (a
    body's hole), the body's level, also only for a fill indented with what the file does not use."""
    if hole.heal and not hole.heal.strip():
        return (hole.heal,)
    if hole.heal or hole.kind not in (HoleKind.LINE, HoleKind.BLOCK) or not spec.block_opener:
        return ()
    line_start = text.rfind("\n", 0, hole.start) + 1
    if line_start != hole.start:
        if hole.kind is HoleKind.BLOCK:   # after the opener on its line: the body's level (``foreign_indent`` only)
            line = text[line_start:hole.start]
            return (_indent(line) + _level(text, line_start, spec.name, default),)
        return ()
    prev = _previous_code_line(text, line_start)
    nxt = _next_code_line(text, hole.end - 1) if hole.end > 0 else ""
    p = _indent(prev)
    unit = _level(text, line_start, spec.name, default)   # one level: the document's (a tab, 2 or 4 spaces...)
    options = [p + unit] if prev and _opens_block(spec, text, line_start, "") else []
    if spec.block_opener != ":":
        return tuple(dict.fromkeys(options + [p] + ([_indent(nxt)] if nxt else [])))
    if nxt:
        options.append(_indent(nxt))
    options.append(p)
    while p.endswith((unit, "\t")):  # dedents, nearest first
        p = p[:-len(unit)] if p.endswith(unit) else p[:-1]
        options.append(p)
    return tuple(dict.fromkeys(options))


def _level(text: str, at: int, language: str, default: str | None = None) -> str:
    """One level of indentation for the levels around a column-0 hole: ``indent_unit``, but where every indented
    code line near ``at`` is at one depth of spaces (``def f():`` bodies two spaces deep: no step seen, so
    ``indent_unit`` says four spaces) that depth; with no indented code line, ``default`` where given (the
    workspace's unit), else the language's usual one."""
    return _level_of(code_indents(text, at, language), language, default)


def _level_of(indents: list[str], language: str | None, default: str | None = None) -> str:
    """``_level`` from the code lines' indentation (``code_indents``)."""
    unit = _unit(indents, language, default)
    widths = {len(indent) for indent in indents if indent and "\t" not in indent}
    return " " * widths.pop() if unit != "\t" and len(widths) == 1 else unit


def file_unit(text: str, language: str, span: int = 8000) -> str | None:
    """One level of indentation in a file (``_level`` at its start: its code lines in the first ``span``
    characters), or None when none of them is indented: what a workspace's files say to a document that says
    nothing. (8,000 characters: torch's 2,285 files get the unit 20,000 give for all but 4, in half the time: 0.26 s
    for 46 MB, against 1.7 s for the lines and pairs a workspace counts.)"""
    indents = code_indents(text, 0, language, span)
    return _level_of(indents, language) if any(indents) else None


def foreign_indent(fill: str, indents: tuple[str, ...]) -> bool:
    """Is the fill's first line indented with spaces where the levels around the hole (``indents``) are tabs,
    or the reverse? Then only its re-indented variants are offered: the model (trained mostly on
    space-indented code) writes ``            b = b`` at column 0 of a tab-indented body."""
    lead = _indent(fill.lstrip("\r\n"))
    levels = "".join(indents)
    if not lead or not levels:
        return False
    style = "\t" if "\t" in levels and " " not in levels else " " if " " in levels and "\t" not in levels else ""
    return bool(style) and any(c != style for c in lead)


def code_indents(text: str, at: int, language: str | None = None, span: int = 20_000) -> list[str]:
    """The indentation of each code line within ``span`` characters of ``at``, in order (no indentation for a line
    at the first column). Comment lines are no code (a block comment's `` * `` lines step by one space), nor are
    the lines inside a block comment that opens a line (a licence's ``/*`` header, its lines indented three
    spaces) or, in Python, inside a string that opens a line with three quotes (a docstring's text)."""
    closing = ""   # what ends the block comment or docstring the lines are in
    out: list[str] = []
    lo, hi = max(0, at - span), at + span
    lines = text[lo:hi].split("\n")   # the first and last only when whole
    for line in lines[1 if lo else 0:len(lines) - 1 if hi < len(text) else len(lines)]:
        code = line.strip()
        if closing:
            if closing in code:
                closing = ""
            continue
        if code.startswith("/*") and language != "python":
            closing = "" if "*/" in code[2:] else "*/"
            continue
        if language == "python":
            quote = '"""' if code.count('"""') % 2 else "'''" if code.count("'''") % 2 else ""
            if quote:   # a string of lines opens here: its lines are text (this one is code where code starts it)
                closing = quote
                if code.lstrip("rRbBuUfF").startswith(quote):
                    continue
        if not code or code.startswith(("*", "//", "#")):
            continue
        out.append(line[:len(line) - len(line.lstrip(" \t"))])
    return out


BARE_END = re.compile(r"[\w$)\]'\"`]$")   # a statement's end without ``;``
COMMENT_STARTS = ("//", "/*", "*")   # a braces language's comment line (``*``: inside a ``/* */`` block)
HABIT_CHARS = 4000   # characters read each side of the line by ``semicolons``


def semicolons(text: str, line_start: int) -> str | None:
    """``;`` when more of the 40 code lines above the line starting at ``line_start`` and the 40 below it end with
    it than end a statement without it (with a name, a literal, ``)`` or ``]``: ``BARE_END``); ``""`` when fewer
    do; None when as many (no line of either kind: a habit not shown)."""
    above = [line.strip() for line in text[max(0, line_start - HABIT_CHARS):line_start].split("\n")
             if line.strip()][-40:]
    below = [line.strip() for line in text[line_start:line_start + HABIT_CHARS].split("\n")[1:] if line.strip()][:40]
    code = [line for line in above + below if not line.startswith(COMMENT_STARTS)]
    ended = sum(line.endswith(";") for line in code)
    bare = sum(bool(BARE_END.search(line)) for line in code)
    return ";" if ended > bare else "" if ended < bare else None


# One level of indentation where a document has no indented code line and no workspace says otherwise: each
# language's formatter's (black, gofmt, rustfmt, prettier)
DEFAULT_INDENT = {"python": "    ", "go": "\t", "rust": "    ", "javascript": "  ", "typescript": "  ",
                  "typescriptreact": "  "}


def indent_unit(text: str, at: int, language: str | None = None, default: str | None = None) -> str:
    """One level of indentation in the document: a tab when most indented code lines near ``at`` are indented
    with tabs, else the commonest step between two code lines' space indentations there (``code_indents``: no
    comment counts). Lines at the first column do not count for tabs (most of a Go file's lines, gofmt's tabs
    notwithstanding). With no indented code line: ``default`` where given, else the language's usual one
    (``DEFAULT_INDENT``: a tab in Go, gofmt's; two spaces in JavaScript and TypeScript), else 4 spaces. With indented
    lines at one depth only (no step): 4 spaces (a continuation line's hanging indent is rarer than a block's)."""
    return _unit(code_indents(text, at, language), language, default)


def _unit(indents: list[str], language: str | None, default: str | None = None) -> str:
    """``indent_unit`` from the code lines' indentation (``code_indents``)."""
    indented = sum(1 for indent in indents if indent)
    tabs = sum(1 for indent in indents if indent.startswith("\t"))
    if not indented:
        return default if default is not None else DEFAULT_INDENT.get(language or "", "    ")
    if tabs * 2 > indented:
        return "\t"
    widths = [len(indent) if "\t" not in indent else None for indent in indents]
    steps = collections.Counter(abs(a - b) for a, b in zip(widths, widths[1:]) if a is not None and b is not None
                                and a != b)
    return " " * max(steps, key=lambda n: (steps[n], -n)) if steps else "    "


def reindent(fill: str, indent: str) -> tuple[str, list[tuple[int, int, int]]]:
    """``fill`` with its first line at ``indent`` and the following lines moved by the same amount.
    Returns the text and the replaced regions ``(old_start, old_len, new_len)`` for mapping offsets."""
    old = _indent(fill)
    if old == indent:
        return fill, []
    out, edits, pos = [], [], 0
    for line in fill.splitlines(keepends=True):
        if pos == 0 or (line.startswith(old) and line.strip()):
            out.append(indent + line[len(old):])
            edits.append((pos, len(old), len(indent)))
        else:
            out.append(line)
        pos += len(line)
    return "".join(out), edits


def restyle(fill: str, indent: str) -> tuple[str, list[tuple[int, int, int]]]:
    """``reindent`` for a fill indented with what the file does not use (``foreign_indent``): its first line at
    ``indent``, and each following line that was at least as deep at ``indent`` plus its own extra levels in the
    file's unit (a tab where ``indent`` is tabs, else four spaces; the fill's levels: its smallest step, a tab
    counting four), so no line mixes the two. A body written after the opener's line break (``{|`` filled with
    ``\n        return 1;``) is restyled from its first line that has code."""
    lines = fill.splitlines(keepends=True)
    first = next((i for i, line in enumerate(lines) if line.strip()), 0)
    old = _indent(lines[first]) if lines else ""
    unit = "\t" if "\t" in indent or not indent and " " in old else "    "
    extras = [_width(_indent(line)[len(old):]) for line in lines[first + 1:] if line.startswith(old) and line.strip()]
    step = min((e for e in extras if e), default=4)
    out, edits, pos = [], [], 0
    for i, line in enumerate(lines):
        if i == first or (i > first and line.startswith(old) and line.strip()):
            lead = _indent(line)
            levels, rest = divmod(_width(lead[len(old):]), step)
            new = indent + unit * levels + " " * rest
            out.append(new + line[len(lead):])
            edits.append((pos, len(lead), len(new)))
        else:
            out.append(line)
        pos += len(line)
    return "".join(out), edits


def _width(lead: str) -> int:
    return lead.count(" ") + 4 * lead.count("\t")


def _boundary_rows(spec: LanguageSpec, snippet: str) -> set[int] | None:
    """Rows of ``snippet`` where a statement-level node starts (depth <= 3), for clean cuts."""
    tree = parse(spec, snippet)
    if tree is None:
        return None
    rows: set[int] = set()
    stack = [(tree.root_node, 0)]
    while stack:
        node, depth = stack.pop()
        if node.is_named and node.type != "ERROR":
            rows.add(node.start_point[0])
            rows.add(node.end_point[0] + 1)
        if depth < 3:
            stack.extend((c, depth + 1) for c in node.children)
    return rows


def window(spec: LanguageSpec, text: str, start: int, end: int, count_tokens: Callable[[str], int],
           prefix_tokens: int, suffix_tokens: int) -> Window:
    """The largest prefix before ``start`` and suffix after ``end`` within the budgets, cut at line
    starts, preferring lines where a syntax node starts (or ends, for the suffix)."""
    raw_lo = max(0, start - prefix_tokens * _CHARS_PER_TOKEN)
    if raw_lo > 0:
        newline = text.find("\n", raw_lo, start)
        raw_lo = newline + 1 if newline >= 0 else raw_lo
    raw_hi = min(len(text), end + suffix_tokens * _CHARS_PER_TOKEN)
    prefix = _trim_prefix(spec, text[raw_lo:start], count_tokens, prefix_tokens, raw_lo == 0)
    suffix = _trim_suffix(spec, text[end:raw_hi], count_tokens, suffix_tokens, raw_hi == len(text))
    return Window(prefix, suffix, start - len(prefix), end + len(suffix))


def _line_starts(s: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", s) if m.end() < len(s)]


def _trim_prefix(spec, prefix: str, count_tokens, budget: int, whole: bool) -> str:
    if count_tokens(prefix) <= budget:
        return prefix
    starts = _line_starts(prefix)
    # Smallest cut index whose remainder fits (token counts decrease as the cut moves right).
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if count_tokens(prefix[starts[mid]:]) <= budget:
            hi = mid
        else:
            lo = mid + 1
    if count_tokens(prefix[starts[lo]:]) > budget:  # one very long line: cut mid-line by tokens
        return _tail_by_tokens(prefix, count_tokens, budget)
    rows = _boundary_rows(spec, prefix)
    if rows:
        for i in range(lo, min(len(starts), lo + 12)):  # the first syntax boundary at or after the cut
            if i in rows:
                return prefix[starts[i]:]
    return prefix[starts[lo]:]


def _trim_suffix(spec, suffix: str, count_tokens, budget: int, whole: bool) -> str:
    if count_tokens(suffix) <= budget:
        return suffix
    ends = [m.end() for m in re.finditer("\n", suffix)]
    lo, hi = 0, len(ends)
    while lo < hi:  # the largest number of whole lines that fits
        mid = (lo + hi + 1) // 2
        if count_tokens(suffix[:ends[mid - 1]]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        return _head_by_tokens(suffix, count_tokens, budget)
    rows = _boundary_rows(spec, suffix[:ends[lo - 1]])
    if rows:
        for n in range(lo, max(0, lo - 12), -1):  # end at a row where a node ends / the next starts
            if n in rows:
                return suffix[:ends[n - 1]]
    return suffix[:ends[lo - 1]]


def _tail_by_tokens(s: str, count_tokens, budget: int) -> str:
    lo, hi = 0, len(s)
    while lo < hi:
        mid = (lo + hi) // 2
        if count_tokens(s[mid:]) <= budget:
            hi = mid
        else:
            lo = mid + 1
    return s[lo:]


def _head_by_tokens(s: str, count_tokens, budget: int) -> str:
    lo, hi = 0, len(s)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_tokens(s[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return s[:lo]
