"""Smallest repairs for a syntax error: insert or delete one token (then two) on the error's lines.

A missing ``:`` ``)`` ``]`` ``}`` quote or comma, or a stray token, is a one-token repair; re-masking
whole lines (``actions.fix_syntax``) would rewrite code the fix does not need. Every candidate touches
only the lines of the error and is kept only when the parser accepts it (Python: the document compiles,
or its first error moved past those lines; other grammars: fewer tree-sitter errors and none on the
edited line). The candidates that parse are ranked by the parser's own hint (Python's ``expected ':'``,
a tree-sitter MISSING node) and, when the backend can score text (``score_text``), by the model's
pseudo-log-likelihood of the edited line with each of its tokens masked in turn.
"""

from __future__ import annotations

import logging
import re
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import tree_sitter

from . import pyparse
from .backends.base import Backend
from .languages import LanguageSpec, error_spans, parse
from .lines import to_lf
from .requests import Completion, HoleFill, HoleKind, TextTooLong

INSERTS = (":", ")", "]", "}", ",", "(", "[", "{", '"', "'", ".", "=", ";")
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d*)?|\"[^\"\n]*\"|'[^'\n]*'|\*\*|//|==|!=|<=|>=|->|:=|&&|\|\||::|=>"
                    r"|[^\s\w]")
_HINTS = {"expected ':'": ":", "was never closed": ")", "forgot a comma": ",", "unmatched ')'": ")",
          "unmatched ']'": "]", "unmatched '}'": "}", "unterminated string": '"', "expected '('": "("}
_MAX_RANKED = 8       # candidates scored by the model
_HINT_BONUS = 3.0     # nats: the parser named this token
_SECOND_EDIT = 4.0    # nats: a two-token repair must be that much likelier than a one-token one
_MAX_CANDIDATES = 20_000  # a round with more (a line of ~1,400 tokens, or ~110 for two-token edits) is not searched
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Repair:
    """Replace ``text[start:end]`` (str offsets) with ``new``: one or two token edits on one line."""

    start: int
    end: int
    new: str
    edits: int
    hinted: bool = False


def line_bounds(text: str, offset: int) -> tuple[int, int]:
    """``[start, end)`` of the line holding ``offset``, without its line break."""
    lo = text.rfind("\n", 0, offset) + 1
    hi = text.find("\n", offset)
    hi = len(text) if hi < 0 else hi
    return lo, hi - 1 if hi > lo and text[hi - 1] == "\r" else hi


def error_lines(spec: LanguageSpec, text: str, spans: tuple[tuple[int, int], ...]) -> list[tuple[int, int]]:
    """The lines a repair may touch: those of the first error span, and Python's error line and the one before."""
    lines: list[tuple[int, int]] = []
    if spans:
        s, e = spans[0]
        at = s
        while at <= e:
            lines.append(line_bounds(text, at))
            at = text.find("\n", at) + 1
            if at == 0:
                break
    error = python_error(text) if spec.name == "python" else None
    if error is not None:
        found = _offset_of_line(text, error[0])
        if found is not None:
            at = found
            lines.append(line_bounds(text, at))
            if at > 0:
                lines.append(line_bounds(text, at - 1))
    return sorted(set(lines))


def python_error(text: str) -> tuple[int, str] | None:
    """Python's first syntax error in ``text``: (1-based line, message), or ``None`` when it compiles."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pyparse.compile_ast(text, "<repair>")
    except SyntaxError as e:
        return (e.lineno or 1, e.msg or "")
    except (ValueError, MemoryError, RecursionError):
        return (1, "")
    return None


def _offset_of_line(text: str, lineno: int) -> int | None:
    at = 0
    for _ in range(lineno - 1):
        at = text.find("\n", at) + 1
        if at == 0:
            return None
    return at


def candidates(text: str, lines: list[tuple[int, int]], two: bool = False) -> list[Repair]:
    """One-token edits (``two``: two-token edits) of each line: an insertion at every token boundary,
    a deletion of every token; two-token edits are a pair of insertions at one boundary and a token
    replaced by an inserted one."""
    out: list[Repair] = []
    for lo, hi in lines:
        line = text[lo:hi]
        tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(line)]
        bounds = sorted({b for s, e in tokens for b in (s, e)} | {len(line)})
        if not two:
            out += [Repair(lo + b, lo + b, t, 1) for b in bounds for t in INSERTS]
            out += [Repair(lo + s, lo + e, "", 1) for s, e in tokens]
        else:
            out += [Repair(lo + b, lo + b, a + c, 2) for b in bounds for a in INSERTS for c in INSERTS]
            out += [Repair(lo + s, lo + e, t, 2) for s, e in tokens for t in INSERTS if line[s:e] != t]
    return out


def apply(text: str, repair: Repair) -> str:
    return text[:repair.start] + repair.new + text[repair.end:]


def _point(data: bytes, at: int) -> tuple[int, int]:
    """The (row, byte column) of byte ``at`` in ``data``."""
    row = data.count(b"\n", 0, at)
    return row, at - (data.rfind(b"\n", 0, at) + 1)


def accepted(spec: LanguageSpec, text: str, repair: Repair, before: tuple[int, str] | None,
             baseline: int, tree: tree_sitter.Tree | None = None) -> bool:
    """Does the repaired document parse (or fail only later than the repaired line)? ``tree``: the document's
    own, from which the repaired one is reparsed incrementally (a whole parse of a 1.5 MB file takes 0.6 s, and a
    repair is searched among dozens of candidates)."""
    fixed = apply(text, repair)
    if spec.name == "python":
        error = python_error(fixed)
        if error is None:
            return True
        line = text.count("\n", 0, repair.start) + 1
        return before is not None and error[0] > max(line, before[0]) + 1
    data = fixed.encode("utf-8", "surrogatepass")
    if tree is not None:
        head = len(text[:repair.start].encode("utf-8", "surrogatepass"))
        old_end = head + len(text[repair.start:repair.end].encode("utf-8", "surrogatepass"))
        new_end = head + len(repair.new.encode("utf-8", "surrogatepass"))
        start_point = _point(data, head)
        old_end_point = (start_point[0], start_point[1] + old_end - head)  # a repair never spans a line break
        edited = tree.copy()
        edited.edit(start_byte=head, old_end_byte=old_end, new_end_byte=new_end, start_point=start_point,
                    old_end_point=old_end_point, new_end_point=_point(data, new_end))
        tree = parse(spec, data, edited)
    else:
        tree = parse(spec, data)
    if tree is None:
        return False
    errors = error_spans(tree, nested=False)
    lo, hi = line_bounds(fixed, repair.start)
    blo, bhi = len(fixed[:lo].encode("utf-8", "surrogatepass")), len(fixed[:hi].encode("utf-8", "surrogatepass"))
    return len(errors) < baseline and not any(s <= bhi and e >= blo for s, e in errors)


def hinted(spec: LanguageSpec, text: str, repair: Repair, error: tuple[int, str] | None) -> bool:
    """Did the parser name this repair: Python's message names the token inserted or deleted, or a
    tree-sitter MISSING node sits where it is inserted."""
    token = repair.new or text[repair.start:repair.end]
    if error is not None and any(k in error[1] and v == token.strip() for k, v in _HINTS.items()):
        return True
    tree = parse(spec, text.encode("utf-8", "surrogatepass"))
    if tree is None or not repair.new:
        return False
    at = len(text[:repair.start].encode("utf-8", "surrogatepass"))
    stack = [tree.root_node] if tree.root_node.has_error else []
    while stack:
        node = stack.pop()
        if node.is_missing and node.type == repair.new and abs(node.start_byte - at) <= 1:
            return True
        stack.extend(c for c in node.children if c.has_error or c.is_missing)
    return False


def find_repairs(spec: LanguageSpec, text: str, spans: tuple[tuple[int, int], ...],
                 check: Callable[[int], None] | None = None) -> list[Repair]:
    """The one-token repairs that parse; when there are none, the two-token ones (unranked). ``check`` is
    called between candidates (``Control.check``: raises ``Cancelled`` once the job is cancelled)."""
    lines = error_lines(spec, text, spans)
    if not lines:
        return []
    before = python_error(text) if spec.name == "python" else None
    tree = parse(spec, text.encode("utf-8", "surrogatepass"))
    baseline = len(error_spans(tree, nested=False)) if tree is not None else 0

    def parses(repair: Repair) -> bool:
        if check is not None:
            check(0)
        return accepted(spec, text, repair, before, baseline, tree)
    for two in (False, True):
        tried = list(dict.fromkeys(candidates(text, lines, two)))
        if len(tried) > _MAX_CANDIDATES:  # a long line (minified code): each candidate is a parse of the document
            log.info("repair: %d %s-token candidates on the error's lines, more than %d: not searched",
                     len(tried), "two" if two else "one", _MAX_CANDIDATES)
            return []
        found = [r for r in tried if parses(r)]
        # a repair after which the whole document parses beats one that only moves the error further down
        clean = [r for r in found if spec.name != "python" or python_error(apply(text, r)) is None]
        if clean or found:
            return [Repair(r.start, r.end, r.new, r.edits, hinted(spec, text, r, before)) for r in clean or found]
    return []


def rank(text: str, repairs: list[Repair], score=None) -> list[Repair]:
    """Best first: the parser's hint, then (with ``score(prefix, line, suffix)``, the model's log-likelihood
    of the edited line) the model's preference; without a model, the repair nearest the line's end."""
    def prior(r: Repair) -> float:
        lo, hi = line_bounds(text, r.start)
        hint = _HINT_BONUS if r.hinted else 0.0
        return hint - _SECOND_EDIT * (r.edits - 1) + 0.01 * (r.start - lo) / max(1, hi - lo)

    ordered = sorted(repairs, key=prior, reverse=True)
    if score is None:
        return ordered
    head = ordered[:_MAX_RANKED]
    scored = []
    for r in head:
        fixed = apply(text, r)
        lo, hi = line_bounds(fixed, r.start)
        try:
            scored.append((score(to_lf(fixed[:lo]), fixed[lo:hi], to_lf(fixed[hi:])) + prior(r), r))
        except TextTooLong:  # a line longer than the model's positions: the parser's order stands
            return ordered
    scored.sort(key=lambda x: x[0], reverse=True)
    return [r for _, r in scored] + ordered[_MAX_RANKED:]


def smallest_fix(backend: Backend, spec: LanguageSpec, text: str, spans: tuple[tuple[int, int], ...],
                 t0: float, check: Callable[[int], None] | None = None) -> Completion | None:
    """The best-ranked smallest repair as a one-edit completion, or ``None`` when no small repair parses."""
    repairs = find_repairs(spec, text, spans, check)
    if not repairs:
        return None
    score = backend.score_text if backend.scores_text else None
    best = rank(text, repairs, score)[0]
    forwards = min(len(repairs), _MAX_RANKED) if score is not None else 0
    return Completion((HoleFill(best.start, best.end, best.new),), HoleKind.SPAN, 0, forwards, 0,
                      round((time.perf_counter() - t0) * 1000, 2), True, len(repairs) - 1, backend.name)
