"""What each code action would change at a cursor or selection: the holes to fill, the body of the
function at the cursor (with its callers), the spans around a syntax error. Pure and thread-safe:
the server runs ``survey`` off its event loop to title the actions it offers."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import tree_sitter

from .holes import (Source, enclosing, found_hole, function_types, header_blank, is_docstring, is_stub, is_todo,
                    scoped_blanks, statement_blank, statements)
from .languages import error_spans as tree_errors
from .languages import spec_for
from .lines import lf_view
from .requests import Hole

_DEFINES = re.compile(r"\b(def|function|fn|func)\s*$")
_lock = threading.Lock()
_last: Source | None = None
_last_text: str | None = None   # the text ``_last`` was made from
_MAX_CALLERS = 3
_STUB_LINES = 12  # a syntax error span larger than this falls back to the cursor's lines


@dataclass(frozen=True)
class Survey:
    scope: tuple[int, int]                    # where the holes were looked for
    blanks: tuple[Hole, ...]                 # "Fill N holes"
    body: Hole | None = None                 # "Complete body": the function at the cursor
    function: str = ""                        # its name
    callers: tuple[tuple[int, int], ...] = () # lines that call it (outside it), as extra context
    errors: tuple[tuple[int, int], ...] = ()  # "Fix syntax error": spans to re-mask, smallest first


def survey(text: str, language: str, start: int, end: int) -> Survey:
    """Everything the actions need about ``[start, end)`` of ``text`` (``start == end``: a cursor).
    The last document parsed is kept: an editor asks again on every cursor move."""
    global _last, _last_text
    with _lock:
        src = _last
        if src is None or _last_text is not text or src.spec.name != spec_for(language).name:
            # a lone CR ends a line, as in the engine's requests (engine/lines.py; the offsets are the same)
            src, _last_text = Source(spec_for(language), lf_view(text)), text
            _last = src
        return _survey(src, start, end)


def _survey(src: Source, start: int, end: int) -> Survey:
    if src.tree is None:
        return Survey((start, end), ())
    scope, blanks = scoped_blanks(src, start, end)
    found = body_blank(src, start)
    body: Hole | None = None
    name, callers = "", ()  # type: tuple[str, tuple[tuple[int, int], ...]]
    if found is not None:
        body, fn = found
        name = function_name(fn)
        callers = caller_lines(src, name, src.span(fn))
    return Survey(scope, tuple(blanks), body, name, callers, tuple(error_spans(src, start, end)))


def function_name(fn: tree_sitter.Node) -> str:
    node = fn.child_by_field_name("name")
    if node is None and fn.parent is not None and fn.parent.type in ("variable_declarator", "pair", "assignment"):
        node = fn.parent.child_by_field_name("name") or fn.parent.child_by_field_name("key") \
            or fn.parent.child_by_field_name("left")
    return (node.text or b"").decode("utf-8", "replace") if node is not None else "function"


def body_blank(src: Source, offset: int) -> tuple[Hole, tree_sitter.Node] | None:
    """The body of the innermost function at ``offset``: its stubs replaced, else continued after its
    last statement (a docstring is kept)."""
    for fn in enclosing(src, offset, function_types(src.spec)):
        body = fn.child_by_field_name("body")
        if body is not None and body.type not in ("block", "statement_block"):
            continue  # an arrow function's expression body
        blank = _body(src, fn, body)
        if blank is not None:
            return blank, fn
    return None


def _body(src: Source, fn: tree_sitter.Node, body: tree_sitter.Node | None) -> Hole | None:
    braces = src.spec.block_opener == "{"
    stmts = statements(body) if body is not None else []
    kept = stmts[:1] if stmts and is_docstring(stmts[0]) else []
    rest = stmts[len(kept):]
    if rest and all(is_stub(src, s) for s in rest):
        return statement_blank(src, _todos_above(src, src.span(rest[0])[0]), src.span(rest[-1])[1], "body")
    if rest or kept:
        last = (rest or kept)[-1]
        first_line = src.line_start(src.span(last)[0])
        if src.text[first_line:src.span(last)[0]].strip():
            return None  # a body on the header's line (`{ return 1; }`): nothing sensible to continue
        after = _past_comments(src, src.span(last)[1])
        return found_hole(after, after, "body", indent=src.indent_at(src.span(last)[0]), lead=src.eol)
    if braces:
        if body is None or body.child_count < 2:
            return None
        notes = [c for c in body.named_children if "comment" in c.type]
        if notes and not src.text[src.line_start(src.span(notes[0])[0]):src.span(notes[0])[0]].strip():
            end = src.comment_span(notes[-1])[1]
            start = src.span(notes[0])[0]
            # a body of TODO markers only: they are its stub, replaced as "Fill holes" replaces them
            if all(is_todo(src.text[slice(*src.comment_span(n))]) for n in notes) \
                    and _todos_above(src, src.span(notes[-1])[0]) == start:
                return statement_blank(src, start, end, "body")
            after = end  # a body of comments only: they stay (they say what to write), the code goes after them
            return found_hole(after, after, "body", indent=src.indent_at(src.span(notes[-1])[0]), lead=src.eol)
        lo, hi = src.span(body)
        return header_blank(src, lo + 1, hi - 1, "body")
    colon = next((c for c in fn.children if c.type == ":"), None)
    if colon is None:
        return None
    after = src.span(colon)[1]
    return header_blank(src, after, after, "body")


def _todos_above(src: Source, start: int) -> int:
    """Where the TODO marker comments (``// TODO: implement``, ``# FIXME``), each alone on its line, right above the
    line of ``start`` begin: the stub they mark is replaced with them, as "Fill holes" replaces them; ``start`` if
    there are none."""
    while src.tree is not None:
        lo = src.line_start(start)
        if lo == 0 or src.text[lo:start].strip():
            return start
        above = src.line_start(lo - 1)
        line = src.text[above:lo - 1].rstrip("\r")
        code = line.lstrip(" \t")
        at = src.to_byte(above + len(line) - len(code))
        node = src.tree.root_node.descendant_for_byte_range(at, at + 1)
        while node is not None and "comment" not in node.type and node.start_byte == at:
            node = node.parent   # Rust's ``//`` is a node of its own inside the comment's
        if not is_todo(code) or node is None or "comment" not in node.type or node.start_byte != at:
            return start
        start = above + len(line) - len(code)
    return start


def _past_comments(src: Source, offset: int) -> int:
    """The end of the comments after ``offset`` on its line (``y = x  # note``: after the note, so the comment stays
    on the line it is about); ``offset`` when code or nothing follows."""
    end, at = src.line_end(offset), offset
    while src.tree is not None:
        gap = src.text[at:end]
        start = at + len(gap) - len(gap.lstrip(" \t"))
        if start >= end:
            return at if at > offset else offset
        b = src.to_byte(start)
        node: tree_sitter.Node | None = src.tree.root_node.descendant_for_byte_range(b, b + 1)
        while node is not None and not node.type.endswith("comment"):
            node = node.parent
        if node is None or src.span(node)[0] != start or src.comment_span(node)[1] > end:
            return offset  # code, or a comment that goes on over the next lines
        at = src.comment_span(node)[1]
    return offset


def caller_lines(src: Source, name: str, inside: tuple[int, int]) -> tuple[tuple[int, int], ...]:
    """Lines outside the function that call it (the first few), each with its line break."""
    if not name or name == "function":
        return ()
    found = []
    for m in re.finditer(rf"(?<![\w$]){re.escape(name)}\s*\(", src.text):
        if inside[0] <= m.start() < inside[1]:
            continue
        lo = src.line_start(m.start())
        if _DEFINES.search(src.text[lo:m.start()]):
            continue
        hi = src.text.find("\n", m.start())
        line = (lo, len(src.text) if hi < 0 else hi + 1)
        if line not in found:
            found.append(line)
        if len(found) == _MAX_CALLERS:
            break
    return tuple(found)


def _statement_like(node: tree_sitter.Node) -> bool:
    return node.is_named and node.type.endswith(("statement", "definition", "declaration", "_item", "clause"))


def error_spans(src: Source, start: int, end: int) -> list[tuple[int, int]]:
    """For the first syntax error on the lines of ``[start, end]``: its whole lines, then the lines of
    the smallest statement around it (each at most a few lines), as ``[line start, line end)``."""
    if src.tree is None:
        return []
    lo, hi = src.line_start(start), src.line_end(end)
    near_lo, near_hi = src.line_start(max(0, lo - 1)), src.line_end(min(len(src.text), hi + 1))  # a line either side
    for b0, b1 in tree_errors(src.tree, nested=False):
        s, e = src.to_str(b0), src.to_str(b1)
        if e < near_lo or s > near_hi:
            continue
        first = (src.line_start(s), src.line_end(max(s, e - 1)))
        if src.text.count("\n", *first) >= _STUB_LINES:
            first = (lo, hi)
        spans = [first]
        node = src.tree.root_node.descendant_for_byte_range(b0, b1)
        while node is not None and not _statement_like(node):
            node = node.parent
        if node is not None:
            ns, ne = src.span(node)
            around = (min(first[0], src.line_start(ns)), max(first[1], src.line_end(max(ns, ne - 1))))
            if around != first and src.text.count("\n", *around) < _STUB_LINES:
                spans.append(around)
        return spans
    return []
