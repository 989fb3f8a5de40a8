"""A code action's stub line among code (``// TODO``, ``todo!()``, ``panic("not implemented")`` on a line of its own
between statements of its block) filled as the cursor fill at that line: the cursor path's lengths
(8 and 24 slots, stopped at the line end), its candidates from the document's and common lines, its checks and its
calibrated confidence (``engine/infill.py``), instead of the multi-hole canvas's 48 statement slots.

On the development set's one-line holes (``benchmarks.onehole``: 400 held-out corpus lines, five languages) the canvas
filled a stub line exactly right 0 times (64 offered, 49 junk; a cursor fill at the same place: 37 of 139) and in Go,
JavaScript and TypeScript nearly never offered one; filled so, 30 of 113. A stub that is its block's whole body (an
``else:`` branch of one line, a function's ``// TODO``) is the line there too: 37 of 135, the cursor's 37
(benchmarks/results/onehole-dev.json); on the actions' development set's stubbed functions (multi-line bodies) the
offered fills' lines that are the original's rose from 0% (the canvas) to 14%.

"Complete body" is written the same way, line after line (``fill_body``): each line the cursor fill at the body's next
line, in the document with the lines before it written, until a line is withheld (its calibrated confidence), is a stub,
comments or a line already written, or returns (Rust: a line without ``;`` is the block's value), at most
``MAX_BODY_LINES``; a body that stopped before it returns where its function declares a value (a Go function with
results, a Rust one with a return type: ``returns.unfinished``) keeps its stub after the lines written, so the function
compiles as it did and shows what is left. On the actions' development set (158 stubbed functions) the canvas offered 14
bodies, mean token similarity to the original 0.067, none of their lines the original's; line by line 25, 0.209 and 10%
(benchmarks/results/actions-dev.json). A line that opens a block of statements (``if x:``, ``for (...) {``) is written
with its block's lines one level deeper (until one returns, one is not written, or ``MAX_BLOCK_LINES``), the block
closed, and the body goes on after it: on two development sets (458 functions) bodies offered 75 -> 79, mean
similarity 0.150 -> 0.162 (benchmarks/README.md). "Fill holes" on a function's stub body (the only hole) writes the
body so too (``stub_body``): on the same sets its fills' similarity 0.121 -> 0.158, 75 -> 80 offered. A function's stub
on its header's line (``def f(x): ...``, ``fn f() { todo!() }``) too (``header_stub``): on the first set's 127
functions whose header's line ends before the body (``benchmarks.actions --header-stubs``) offered 13 -> 19, mean
similarity 0.071 -> 0.251."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import NamedTuple

import tree_sitter

from .backends.base import Backend, Control
from .config import FillOptions
from .holes import Source, function_types, is_docstring, is_stub_text, statements
from .languages import LanguageSpec, opens_block, spec_for
from .multifill import repeats_beside
from .returns import unfinished
from .requests import Completion, FillRequest, Hole, HoleFill, HoleKind, InfillRequest
from .validate import degenerate, writes_no_code

MAX_LINE_HOLES = 4   # "Fill N holes" of this many stub lines at most is filled line by line (one cursor fill each)


class LineView(NamedTuple):
    """A stub hole as the cursor fill sees it: the document with the stub emptied to one line of its indentation,
    the cursor after that indentation, and whether the stub is its block's whole body."""
    hole: Hole
    emptied: str
    offset: int
    whole: bool
    function: bool   # the whole body of a function: "Fill holes" writes it as "Complete body" does


def line_view(src: Source, hole: Hole) -> LineView | None:
    """``hole`` as a ``LineView`` when it is a stub of whole lines (``// TODO``, ``# TODO`` + ``pass``) that is
    statements of a block: among its code or the block's whole body; else None. The text after the cursor is
    ``text[hole.end:]``, the same characters."""
    text = src.text
    if hole.inline or hole.lead or hole.tail or hole.context and "\n" in hole.context.rstrip("\n"):
        return None
    line_start = text.rfind("\n", 0, hole.start) + 1
    line_end = text.find("\n", hole.end)
    line_end = len(text) if line_end < 0 else line_end
    stub = text[hole.start:hole.end]
    if line_start != hole.start or text[hole.end:line_end].strip() or not stub.strip() \
            or hole.indent.strip() or any(not line.startswith(hole.indent) for line in stub.split("\n")):
        return None
    kind = in_block(src, hole.start + len(hole.indent), hole.end)
    if kind is None:
        return None
    return LineView(hole, text[:hole.start] + hole.indent + text[hole.end:], hole.start + len(hole.indent),
                    kind != AMONG, kind == FUNCTION)


_BLOCKS = frozenset({"block", "statement_block", "statement_list"})   # a body's statements (Python, Go, Rust; JS/TS)


AMONG, WHOLE, FUNCTION = "among code", "whole body", "a function's whole body"


def in_block(src: Source, start: int, end: int) -> str | None:
    """``AMONG`` or ``WHOLE`` when the stub ``text[start:end]`` is a statement of a block (among its other code, or
    its whole body: the block's other statements are a docstring at most; ``FUNCTION`` for a function's block),
    after comment lines of its own (``# TODO`` + ``pass``); else None."""
    text = src.text
    if src.tree is None or end <= start:
        return None
    last = text.rfind("\n", start, end) + 1 or start      # the stub's last line: its statement
    last += len(text[last:end]) - len(text[last:end].lstrip())
    for a, b in _lines(text, start, last):               # the lines before it: comments alone
        note = src.tree.root_node.descendant_for_byte_range(src.to_byte(a), src.to_byte(b - 1) + 1)
        if note is None or "comment" not in note.type or src.span(note)[0] > a or src.comment_span(note)[1] < b:
            return None
    node: tree_sitter.Node | None = src.tree.root_node.descendant_for_byte_range(src.to_byte(last),
                                                                                 src.to_byte(end - 1) + 1)
    if node is not None and "comment" in node.type and node.next_named_sibling is not None \
            and node.next_named_sibling.type in _BLOCKS:   # Python's comment above a block's first statement is the
        block = node.next_named_sibling                   # block's parent's
        return _whole(src, block) if all(is_docstring(s) for s in statements(block)) else AMONG
    # up to the statement that is the stub and nothing else: its parent is the block
    while node is not None and node.parent is not None and node.parent.type not in _BLOCKS:
        lo, hi = src.span(node.parent)
        if (text[lo:last] + text[end:hi]).strip():
            return None   # inside an expression or a statement that has more (a stub that is not a statement)
        node = node.parent
    if node is None or node.parent is None:
        return None
    return AMONG if any(s.id != node.id and not is_docstring(s) for s in statements(node.parent)) \
        else _whole(src, node.parent)


def _whole(src: Source, block: tree_sitter.Node) -> str:
    """``FUNCTION`` for a function's block, else ``WHOLE``."""
    owner = block.parent
    if owner is not None and block.type == "statement_list" and owner.type == "block":   # Go's statements' block
        owner = owner.parent
    return FUNCTION if owner is not None and owner.type in function_types(src.spec) else WHOLE


def _lines(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The non-blank lines of ``text[start:end]`` as their stripped ranges."""
    out, at = [], start
    for line in text[start:end].split("\n"):
        core = line.strip()
        if core:
            a = at + line.index(core)
            out.append((a, a + len(core)))
        at += len(line) + 1
    return out


def line_holes(request: FillRequest) -> list[LineView] | None:
    """Each hole's cursor view when every hole of ``request`` is a stub of whole lines of a block (and there are
    at most ``MAX_LINE_HOLES``); None when the request is for the canvas (a body, an expression hole)."""
    if request.body or not 0 < len(request.holes) <= MAX_LINE_HOLES \
            or any(h.inline or h.lead or h.tail for h in request.holes):   # ``line_view``'s no, before any parse
        return None
    src = Source(spec_for(request.language), request.text)   # parsed once for every hole
    out = []
    for hole in sorted(request.holes, key=lambda h: h.start):
        view = line_view(src, hole)
        if view is None:
            return None
        out.append(view)
    return out


def fill_lines(backend: Backend, options: FillOptions, request: FillRequest, control: Control,
               holes: list[LineView]) -> Completion:
    """Each stub line filled as the cursor fill at that line (the other holes stand as they are), mapped back to
    the hole's range. A fill that writes back the stub, comments alone or a stutter is left out; a line whose fills
    the cursor's confidence withheld counts as ``unsure``."""
    from .infill import complete, offset_steps

    spec, text = spec_for(request.language), request.text
    fills: list[HoleFill] = []
    steps = forwards = tokens = rejected = unsure = 0
    elapsed = 0.0
    for hole, emptied, offset, whole, _ in holes:
        # one line, as at an empty line among code (after an opener too: the stub stood for a line of code)
        cursor = InfillRequest(emptied, offset, request.language, kind=HoleKind.LINE, steps=request.steps,
                               key=request.key, options=options, workspace=request.workspace, path=request.path)
        c = complete(backend, options, cursor, _placed(offset_steps(control, steps), hole, offset))
        steps, forwards, tokens, elapsed = steps + c.steps, forwards + c.forwards, tokens + c.tokens, \
            elapsed + c.elapsed_ms
        rejected += c.rejected
        fill = _back(text, emptied, hole, c.fills[0]) if c.fills and not _indents(c.fills[0], offset) else None
        if fill is not None and not _usable(spec, text, hole, fill.text, whole):
            fill, rejected = None, rejected + 1
        if fill is not None:
            fills.append(fill)
        elif not c.fills and c.considered:
            unsure += 1   # valid fills the calibrated confidence withheld
    return Completion(tuple(fills), HoleKind.BLOCK, steps, forwards, tokens, round(elapsed, 2),
                      options.validate, rejected, backend.name, unsure=unsure)


def _back(text: str, emptied: str, hole: Hole, fill: HoleFill) -> HoleFill | None:
    """The cursor fill ``fill`` of ``emptied`` as the hole's edit of ``text``: ``text[hole.start:hole.end]`` becomes
    the filled line (its indentation included); None for a fill that reaches outside the line."""
    head, rest = hole.start, len(text) - hole.end   # ``emptied`` ends with the same ``rest`` characters
    if fill.start < head or fill.end > len(emptied) - rest:
        return None
    line = emptied[head:fill.start] + fill.text + emptied[fill.end:len(emptied) - rest]
    if "\n" in line:
        return None
    shift = fill.start - head
    return replace(fill, start=hole.start, end=hole.end, text=line,
                   token_spans=tuple((s + shift, e + shift) for s, e in fill.token_spans))


def _indents(fill: HoleFill, offset: int) -> bool:
    """Does a fill at ``offset``, after its line's indentation, begin with more of it (``          f(a)`` where the
    body's lines are two spaces in)? Such a line is deeper than its place: never the line (a braces language parses
    it, so no check refused it)."""
    return fill.start == offset and fill.text[:1] in (" ", "\t")


_IMPORT = re.compile(r"(?:import|from\s+[\w.]+\s+import|use)\s")   # Python's imports, Rust's ``use``


def _usable(spec: LanguageSpec, text: str, hole: Hole, line: str, whole: bool) -> bool:
    """Not a stub again (``holes.is_stub_text``: ``pass`` for ``# TODO`` + ``pass``, a ``todo!()``), code (not
    comments alone), no stutter: the checks an action's canvas fill has (``multifill._usable``) other than its
    token-confidence bar, which the cursor's calibrated one replaces. And a block's ``whole`` body is no import
    alone: the function would do nothing but import (on the actions' development set, 6 of the 38 one-line fills of
    a stubbed body were ``import pytest``, ``from pathlib import Path``..., none right)."""
    written = line.strip()
    if not written or is_stub_text(spec, written) or writes_no_code(spec, line):
        return False
    if degenerate(line, text) is not None:
        return False
    if whole and _IMPORT.match(written):
        return False
    return not repeats_beside(text, hole, line)


def _placed(control: Control, hole: Hole, offset: int) -> Control:
    """``control`` with a draft's spans (offsets of the emptied text) as offsets of the document: the stub's
    range for the cursor's."""
    draft = control.draft
    if draft is None:
        return control
    shift = hole.end - offset

    def place(step, texts, confidences, pieces=None, **where):
        if "spans" in where:
            where["spans"] = tuple((s if s <= offset else s + shift, e + shift if e >= offset else e)
                                   for s, e in where["spans"])
        draft(step, texts, confidences, pieces, **where)
    return Control(control.check, place)


MAX_BODY_LINES = 8   # "Complete body" line by line: at most this many lines


class BodyPlace(NamedTuple):
    """Where a function's body goes, as the lines written so far see it: the document is ``pre``, the body's lines
    (each ``indent`` + its code, each followed by a line break), then ``post``; the edit replaces
    ``text[hole.start:hole.end]`` with ``lead`` + the lines + ``tail``."""
    hole: Hole
    pre: str
    post: str
    indent: str


def body_place(request: FillRequest) -> BodyPlace | None:
    """The body hole of a "Complete body" request as a ``BodyPlace``: a stub of whole lines (its lines replaced),
    the place after a body's last statement, or an empty body moved to its own lines (``lead`` a line break)."""
    if not request.body or len(request.holes) != 1:
        return None
    hole, text = request.holes[0], request.text
    if hole.inline or hole.context or hole.indent.strip():
        return None
    rest = text[hole.end:]
    if not hole.lead:
        line_end = rest.find("\n")
        if text.rfind("\n", 0, hole.start) + 1 != hole.start or rest[:line_end if line_end >= 0 else None].strip():
            return None
        return BodyPlace(hole, text[:hole.start], rest, hole.indent)
    if hole.lead != "\n" or hole.tail.strip():
        return None
    return _moved(hole, text)


def _moved(hole: Hole, text: str) -> BodyPlace:
    """A body on its header's line (``lead`` a line break) moved to its own lines: the cursor's line ends where the
    hole did (a line break follows it there, or the body's closer after ``tail``)."""
    rest = text[hole.end:]
    return BodyPlace(hole, text[:hole.start] + hole.lead,
                     hole.tail + rest if hole.tail or rest.startswith("\n") else "\n" + rest, hole.indent)


def header_stub(request: FillRequest) -> BodyPlace | None:
    """"Fill holes" on a function's stub body on its header's line (``def f(x): ...``, ``fn f() { todo!() }``), the
    only hole: the body is written where "Complete body" writes an empty body, moved to its own lines, line by
    line; a branch's (``if x: pass``) or a class's stays on the canvas."""
    if request.body or len(request.holes) != 1:
        return None
    hole, text = request.holes[0], request.text
    stub = text[hole.start:hole.end]
    if hole.lead != "\n" or hole.inline or hole.context or hole.tail.strip() or hole.indent.strip() \
            or not stub.strip():
        return None
    src = Source(spec_for(request.language), text)
    at = src.to_byte(hole.start + len(stub) - len(stub.lstrip()))
    node = None if src.tree is None else src.tree.root_node.descendant_for_byte_range(at, at + 1)
    while node is not None and node.type not in _BLOCKS:
        node = node.parent
    return _moved(hole, text) if node is not None and _whole(src, node) == FUNCTION else None


def stub_body(view: LineView) -> BodyPlace:
    """A function's stub body (``pass``, ``// TODO``) as the place "Complete body" writes: "Fill holes" on it writes
    the body line by line, as "Complete body" does, not one line."""
    hole, text = view.hole, view.emptied   # ``emptied`` keeps the text before and after the stub
    return BodyPlace(hole, text[:hole.start], text[view.offset:], hole.indent)


_ENDS = re.compile(r"(?:return|raise|throw|panic!|unreachable!|os\.Exit)\b")
_EMPTY_RETURN = re.compile(r"return\s*;?")   # a body's first line that returns nothing: the body does nothing
# a function's header: its name and parameters (none nested in brackets), up to its body's ``{`` or ``:``
_HEADER = re.compile(r"([A-Za-z_$][\w$]*)[ \t]*(?:<[^<>()\n]*>)?[ \t]*\(([^()]*)\)[^()\n]*[{:][ \t\r]*(?:#[^\n]*)?$",
                     re.M)
_GO_RECEIVER = re.compile(r"func[ \t]*\([ \t]*([A-Za-z_]\w*)[ \t]+[^()]*\)[ \t]*$")
_SELF_CALL = re.compile(r"(?:return\s+)?(?:await\s+)?(?:([A-Za-z_$][\w$]*)\s*(?:\.|::)\s*)?([A-Za-z_$][\w$]*)"
                        r"\s*\(([^()]*)\)\s*;?")
_RECEIVERS = frozenset({"self", "&self", "&mut self", "mut self", "cls", "this", "Self"})


def calls_itself(before: str, line: str) -> bool:
    """Is ``line``, the first line of the body of the function whose header ``before`` ends with (a docstring may
    follow it), a call of that function with its own parameters (``return pid_exists(pid)`` in ``def
    pid_exists(pid):``, ``return b.Less(i, j)`` in Go's ``func (b bases) Less(i, j int) bool``)? The function would
    call itself before anything else, for ever (a fill of the actions' development set)."""
    call = _SELF_CALL.fullmatch(line.strip())
    headers = list(_HEADER.finditer(before, max(0, len(before) - 2000)))
    if call is None or not headers or call.group(2) != headers[-1].group(1):
        return False
    header = headers[-1]
    after = before[header.end():].strip()
    if after and not after.startswith(('"""', "'''")):
        return False   # not the body's first line
    receiver = _GO_RECEIVER.search(before, before.rfind("\n", 0, header.start()) + 1, header.start())
    if call.group(1) is not None and call.group(1) not in _RECEIVERS \
            and (receiver is None or call.group(1) != receiver.group(1)):
        return False   # another object's method of that name
    params = [p.strip() for p in header.group(2).split(",") if p.strip()]
    names = [re.split(r"[\s:=]", p.lstrip("*&"), maxsplit=1)[0] for p in params if p not in _RECEIVERS]
    return [a.strip() for a in call.group(3).split(",") if a.strip()] == names


MAX_BLOCK_LINES = 4   # lines of a block a body's line opens (``if x:``), at most


def fill_body(backend: Backend, options: FillOptions, request: FillRequest, control: Control,
              place: BodyPlace) -> Completion:
    """A function's body written line by line, each line the cursor fill at the next line of the body (its lengths,
    document lines, checks and calibrated confidence), until a line is withheld, a line returns, or
    ``MAX_BODY_LINES``. A line at the body's level may open a block of statements (``languages.opens_block``:
    checked with an empty block after it); its lines follow one level deeper until one returns, one is withheld or
    ``MAX_BLOCK_LINES``, the block is closed (``}`` in a braces language) and the body goes on at its level. An
    opener whose first line is withheld is taken back and ends the body."""
    from .context import indent_unit
    from .infill import complete, offset_steps

    spec, text = spec_for(request.language), request.text
    hole, pre, post, indent = place
    braces = spec.block_opener == "{"
    closer = [indent + "}"] if braces else []   # the line that ends a block the body opens
    if hole.lead:   # a body moved to its own lines: one level deeper than its header's line, as its indentation is
        header = text[text.rfind("\n", 0, hole.start) + 1:hole.start]
        unit = indent[len(header) - len(header.lstrip(" \t")):]
    else:
        unit = indent_unit(text, hole.start, spec.name)
    inner = indent + unit   # a block's lines
    lines: list[str] = []   # as written, indentation included (a block's closer too)
    confs: list[float] = []
    spans: list[tuple[int, int]] = []
    chance: float | None = 1.0   # the estimated chance that every line is right (None: a backend not calibrated)
    # in a block: where its opener is in ``lines``, ``confs`` and ``spans``, and ``chance`` before it (to take it back)
    opened: tuple[int, int, int, float | None] | None = None
    code = 0   # lines of code written (a block's closer is none)
    steps = forwards = tokens = rejected = unsure = 0
    elapsed = 0.0
    while code < MAX_BODY_LINES:
        at = indent if opened is None else inner
        head = pre + "".join(line + "\n" for line in lines)
        doc = head + at + ("\n" + indent + "}" if opened is not None and braces else "") + post
        offset = len(head) + len(at)
        opens = "" if opened is not None else "\n" + indent + "}" if braces else "\n" + inner + "pass"
        cursor = InfillRequest(doc, offset, request.language, kind=HoleKind.LINE, steps=request.steps,
                               key=request.key, options=options, opens=opens, workspace=request.workspace,
                               path=request.path, ends_block=True)
        c = complete(backend, options, cursor, _shown(offset_steps(control, steps),
                                                      hole.lead + head[len(pre):] + at))
        steps, forwards, tokens, elapsed = steps + c.steps, forwards + c.forwards, tokens + c.tokens, \
            elapsed + c.elapsed_ms
        rejected += c.rejected
        fill = c.fills[0] if c.fills else None
        line = None
        if fill is not None and fill.start >= len(head) and fill.end <= offset and not _indents(fill, offset):
            line = doc[len(head):fill.start] + fill.text
            if "\n" in line or not _usable(spec, text, hole, line, not lines) or \
                    line.strip() in (seen.strip() for seen in lines) or \
                    not lines and (_EMPTY_RETURN.fullmatch(line.strip()) or calls_itself(pre, line)):
                line, rejected = None, rejected + 1
        if line is not None and fill is not None and opened is not None and line.rstrip().endswith(
                spec.block_opener):
            line = None   # a block in the block: left to the user
        if line is None or fill is None:
            if opened is not None and len(lines) > opened[0] + 1:
                lines += closer
                opened = None
                continue   # the block ends here; the body goes on at its level after it
            # the line was withheld by its calibrated confidence (the first: no body at all)
            unsure = int(not c.fills and bool(c.considered))
            break
        if opened is None and spec.block_opener and line.rstrip().endswith(spec.block_opener):
            if not opens_block(spec, line):
                break   # not a block of statements (an object literal, a closure): left to the user
            opened = (len(lines), len(confs), len(spans), chance)
        base = sum(len(seen) + 1 for seen in lines) + len(line) - len(fill.text)
        spans += [(s + base, e + base) for s, e in fill.token_spans]
        confs += fill.confidences
        chance = None if chance is None or fill.confidence is None else chance * fill.confidence
        lines.append(line)
        code += 1
        ends = _ENDS.match(line.strip()) or spec.name == "rust" and not line.rstrip().endswith((";", "{", "}", ","))
        if opened is not None and len(lines) > opened[0] + 1 and (ends or len(lines) - opened[0] > MAX_BLOCK_LINES):
            lines += closer   # the block ends here; the body goes on after it
            opened = None
        elif opened is None and ends:
            break   # the body returns here (a Rust line without `;` is its block's value)
    if opened is not None and len(lines) == opened[0] + 1:   # an opener with no line of its block: taken back
        del lines[opened[0]:], confs[opened[1]:], spans[opened[2]:]
        chance = opened[3]
    elif opened is not None:   # the lines ran out in a block: it is closed
        lines += closer
    kept = 0
    if lines and unfinished(spec, pre + "".join(line + "\n" for line in lines) + post, len(pre)):
        # the body does not return yet (a Go function with results, a Rust one with a value): its stub stays after
        # the lines written, where the rest goes, and the function compiles as it did
        stub = [line.rstrip() if line.startswith(indent) else indent + line.strip()
                for line in text[hole.start:hole.end].split("\n") if line.strip()]
        lines += stub
        kept = len(stub)
    fills: tuple[HoleFill, ...] = ()
    if lines:
        lead = hole.lead
        body = lead + "\n".join(lines) + (hole.tail if hole.lead else "")
        fills = (HoleFill(hole.start, hole.end, body, tuple(confs),
                          tuple((s + len(lead), e + len(lead)) for s, e in spans),
                          None if chance is None else round(chance, 4)),)
    return Completion(fills, HoleKind.BLOCK, steps, forwards, tokens, round(elapsed, 2), options.validate, rejected,
                      backend.name, unsure=unsure, stub_kept=kept if fills else 0)


def _shown(control: Control, done: str) -> Control:
    """``control`` whose drafts show the body so far: ``done`` (the lines written) before the line's draft."""
    draft = control.draft
    if draft is None:
        return control

    def show(step, texts, confidences, pieces=None, **where):
        where.pop("spans", None)   # the line's document's offsets, not the body's
        if "kind" in where:
            where["kind"] = HoleKind.BLOCK
        draft(step, tuple(done + text for text in texts), confidences, None, **where)
    return Control(control.check, show)
