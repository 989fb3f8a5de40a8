"""Smallest repairs for a syntax error: insert or delete one token (then two) on the error's lines.

A missing ``:`` ``)`` ``]`` ``}`` quote or comma, or a stray token, is a one-token repair; re-masking
whole lines (``actions.fix_syntax``) would rewrite code the fix does not need. Every candidate touches
only the lines of the error and is kept only when the parser accepts it (Python: the document compiles,
or its first error moved past those lines; other grammars: fewer tree-sitter errors and none on the
edited line). The candidates that parse are ranked by the parser's own hint (Python's ``expected ':'``,
a tree-sitter MISSING node) and, when the backend can score text (``score_text``), by the model's
pseudo-log-likelihood of the edited line with each of its tokens masked in turn.

A candidate is judged without parsing the whole document again (hundreds of candidates, each a parse of a 5 MB
document, took 4 minutes on the engine thread): Python compiles the code around the error (``_PythonJudge``), other
grammars reparse the document's tree incrementally (``_TreeJudge``). Such a reparse still costs in proportion to the
document (tree-sitter steps over each top-level node: 110-150 ms a candidate at 5 MB, and an inserted opener whose
error runs to the end of the file a parse of the rest, 0.6-3 s), so the tree judge judges the likeliest candidates
first (those tree-sitter's MISSING node names, then closers, the others, openers last) and stops when ``_SECONDS``
have passed (a reparse running then is halted), keeping what it found: the code action list waits for it. A
search that ends sooner (a document under about 100 KB, on a loaded 2-core machine) finds what the whole search
finds, in the same order. Python's candidates cost what compiling the code around the error costs, whatever the
document's size (a method: under a millisecond; a 75 KB dict literal at the top level, ``html.entities``: 8 ms, and
its two-token round's 2,306 candidates 19 s), so its judge is bounded the same way, from when its few compiles of
the document's parts are done: the candidates Python's message names (``expected ':'``) or a MISSING node marks
first, then closers, the others, openers; a child process compiling a large region is killed when the time is spent.
"""

from __future__ import annotations

import bisect
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import pyparse
from .backends.base import Backend
from .languages import LanguageSpec, error_spans
from .languages import parse as _parse_anew
from .validate import parse
from .lines import to_lf
from .requests import Completion, HoleFill, HoleKind, TextTooLong

INSERTS = (":", ")", "]", "}", ",", "(", "[", "{", '"', "'", ".", "=", ";")
_LINE_ENDS = (",", ":", ";")   # inserted at the end of the code line above a tree-sitter error (``line_above``)
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d*)?|\"[^\"\n]*\"|'[^'\n]*'|\*\*|//|==|!=|<=|>=|->|:=|&&|\|\||::|=>"
                    r"|[^\s\w]")
_HINTS = {"expected ':'": ":", "was never closed": ")", "forgot a comma": ",", "unmatched ')'": ")",
          "unmatched ']'": "]", "unmatched '}'": "}", "unterminated string": '"', "expected '('": "("}
_MAX_RANKED = 8       # candidates scored by the model
_HINT_BONUS = 3.0     # nats: the parser named this token
_SECOND_EDIT = 4.0    # nats: a two-token repair must be that much likelier than a one-token one
# nats, among the repairs the model scores: a pseudo-log-likelihood sums over the line's tokens, so a repair that
# inserts a token pays for it and one that deletes a token does not (``OFlag:O_RDWR`` scored likelier as
# ``OFlagO_RDWR`` than as ``OFlag::O_RDWR``); and deleting a word the user wrote loses it where inserting
# punctuation keeps everything (``for _ parent := range``: ``for _, parent``, not ``for _ :=``). Chosen on the
# fix cases of the held-out function sets (benchmarks/README.md, 2026-12-04)
_INSERTED = 1.5       # added to a repair that only inserts
_WORD_LOST = 30.0     # taken from one that deletes or replaces a word (letters, digits, ``_``) or a string: another
                      # repair that keeps them is chosen when one parses (a string of emoji is many byte tokens the
                      # model finds unlikely: deleting ``"é😀"`` scored 13 nats above the missing comma after it)
_WORD = re.compile(r"\w")
_LEADING = 8.0        # taken from a ``,`` ``;`` or ``:`` inserted before a line's code (``  ,age: 2``): in none of
                      # the development sets' fixes was that the place, and the line above's end is now searched
_MAX_CANDIDATES = 20_000  # a round with more (a line of ~1,400 tokens, or ~110 for two-token edits) is not searched
# seconds a judge may spend on a fix's candidates, both rounds (the code action list waits for them). On a loaded
# 2-core machine a tree-sitter candidate costs 1-2 ms in a 100 KB document (an opener up to 20 ms), 12 ms at 500 KB
# (an opener 0.1 s), 110-150 ms at 5 MB (an opener 0.6-3 s); a 100 KB document's whole one-token round took 3 s. A
# Python candidate costs a compile of the statements around the error: 0.1-70 ms, whatever the document's size.
_SECONDS = 2.0
_OPENERS = "([{"
_CLOSERS = ")]}"
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
    return _error_lines(text, spans, python_error(text) if spec.name == "python" else None)


def line_above(text: str, spans: tuple[tuple[int, int], ...]) -> tuple[int, int] | None:
    """The code line before the first error span's first line (blank and comment lines skipped), where a
    tree-sitter error may begin: a comma, ``:`` or ``;`` missing at a line's end is an error tree-sitter finds on
    the next line (``case 1`` before ``return x``, ``name: 'x'`` before ``age: 2``). Only those tokens at the end
    of its code (``_code_end``: before a trailing comment) are tried there: a closer on that line
    (``console.log()`` above its arguments, ``fn f() {}`` above the body) would end what the lines below
    continue."""
    if not spans:
        return None
    above = line_bounds(text, spans[0][0])[0] - 1
    while above > 0:
        lo, hi = line_bounds(text, above)
        if _code_end(text, lo, hi) > lo:
            return lo, hi
        above = lo - 1
    return None


def _code_end(text: str, lo: int, hi: int) -> int:
    """Where the code of the line ``text[lo:hi]`` ends: before a trailing ``//`` or ``/*`` comment and the spaces
    before it (``a: 1  // one``: after ``1``). Strings are tokens of their own, so a ``//`` in one is no comment."""
    end = lo
    for m in _TOKEN.finditer(text, lo, hi):
        if m.group() == "//" or m.group() == "/" and text.startswith("/*", m.start()):
            break
        end = m.end()
    return end


def _error_lines(text: str, spans: tuple[tuple[int, int], ...], error: tuple[int, str] | None
                 ) -> list[tuple[int, int]]:
    lines: list[tuple[int, int]] = []
    if spans:
        s, e = spans[0]
        at = s
        while at <= e:
            lines.append(line_bounds(text, at))
            at = text.find("\n", at) + 1
            if at == 0:
                break
    if error is not None:
        found = _offset_of_line(text, error[0])
        if found is not None:
            at = found
            lines.append(line_bounds(text, at))
            if at > 0:
                lines.append(line_bounds(text, at - 1))
    return sorted(set(lines))


def python_error(text: str, check: Callable[[int], None] | None = None) -> tuple[int, str] | None:
    """Python's first syntax error in ``text``: (1-based line, message), or ``None`` when it compiles. ``check``:
    the job's cancellation, polled while a child process compiles a large text (``pyparse.check_syntax``)."""
    try:
        pyparse.check_syntax(text, "<repair>", check)
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


def accepted(spec: LanguageSpec, text: str, repair: Repair, before: tuple[int, str] | None,
             baseline: int) -> bool:
    """Does the repaired document parse (or fail only later than the repaired line)? The whole document parsed
    again: the verdict ``find_repairs``'s judges reach without that (tests compare them)."""
    fixed = apply(text, repair)
    if spec.name == "python":
        error = python_error(fixed)
        if error is None:
            return True
        line = text.count("\n", 0, repair.start) + 1
        return before is not None and error[0] > max(line, before[0]) + 1
    tree = _parse_anew(spec, fixed.encode("utf-8", "surrogatepass"))
    if tree is None:
        return False
    errors = error_spans(tree, nested=False)
    lo, hi = line_bounds(fixed, repair.start)
    blo, bhi = len(fixed[:lo].encode("utf-8", "surrogatepass")), len(fixed[:hi].encode("utf-8", "surrogatepass"))
    return len(errors) < baseline and not any(s <= bhi and e >= blo for s, e in errors)


def hinted(spec: LanguageSpec, text: str, repair: Repair, error: tuple[int, str] | None, tree: Any = None) -> bool:
    """Did the parser name this repair: Python's message names the token inserted or deleted, or a
    tree-sitter MISSING node sits where it is inserted (``tree``: the document's, when already parsed)."""
    token = repair.new or text[repair.start:repair.end]
    if error is not None and any(k in error[1] and v == token.strip() for k, v in _HINTS.items()):
        return True
    if not repair.new:
        return False
    tree = tree if tree is not None else parse(spec, text)
    if tree is None:
        return False
    at = len(text[:repair.start].encode("utf-8", "surrogatepass"))
    stack = [tree.root_node] if tree.root_node.has_error else []
    while stack:
        node = stack.pop()
        if node.is_missing and node.type == repair.new and abs(node.start_byte - at) <= 1:
            return True
        stack.extend(c for c in node.children if c.has_error or c.is_missing)
    return False


_CHECK_EVERY = 16   # candidates judged between two cancellation checks


def find_repairs(spec: LanguageSpec, text: str, spans: tuple[tuple[int, int], ...],
                 check: Callable[[int], None] | None = None) -> list[Repair]:
    """The one-token repairs that parse; when there are none, the two-token ones (unranked). ``check(0)`` is
    called between candidates and while the document is parsed or compiled (the job's cancellation: raises
    ``Cancelled``, and a child process compiling for the job is killed). The document is parsed (and compiled, for
    Python) a fixed number of times, whatever the number of candidates."""
    before = python_error(text, check) if spec.name == "python" else None
    lines = _error_lines(text, spans, before)
    above = line_above(text, spans) if spec.name != "python" else None
    ends = [] if above is None or above in lines else \
        [Repair(at, at, t, 1) for at in (_code_end(text, *above),) for t in _LINE_ENDS]
    if not lines:
        return []
    tree = parse(spec, text, tick=(lambda: check(0)) if check is not None else None)   # halted when cancelled
    judge: _PythonJudge | _TreeJudge | None
    if spec.name == "python":
        judge = _PythonJudge(text, lines, before, tree, check)
        judge.work = _Work(_SECONDS, check)   # from here: the region's fixed compiles are done
    else:
        judge = _TreeJudge(spec, text, tree, _Work(_SECONDS, check)) if tree is not None else None
    if judge is None:
        return []
    judged = 0
    for two in (False, True):
        tried = list(dict.fromkeys(candidates(text, lines, two) + ([] if two else ends)))
        if len(tried) > _MAX_CANDIDATES:  # a long line (minified code): too many candidates to judge
            log.info("repair: %d %s-token candidates on the error's lines, more than %d: not searched",
                     len(tried), "two" if two else "one", _MAX_CANDIDATES)
            return []
        found, clean, spent = [], [], False
        order = judge.order(tried)
        try:
            for n, i in enumerate(order):
                if check is not None and n % _CHECK_EVERY == 0:
                    check(0)
                if judge.work is not None:
                    judge.work.tick()
                verdict = judge.verdict(tried[i])
                judged += 1
                if verdict is not None:
                    found.append(i)
                    if verdict == _CLEAN:
                        clean.append(i)
        except _Spent:
            spent = True
            log.info("repair: the search's %.1f s were spent after %d candidates, %d of this %s-token round's %d, "
                     "in a document of %d characters; repairs found: %d; the rest not judged",
                     _SECONDS, judged, n, "two" if two else "one", len(tried), len(text), len(found))
        # a repair after which the whole document parses beats one that only moves the error further down; the
        # candidates' own order (ranking's ties), whatever order they were judged in
        kept = [tried[i] for i in sorted(clean or found)]
        if kept:
            return [Repair(r.start, r.end, r.new, r.edits, hinted(spec, text, r, before, tree)) for r in kept]
        if spent:
            return []
    return []


_CLEAN, _MOVED = "clean", "moved"   # verdicts: the repaired document parses; its first error is past the repair
_OK, _REJECT, _UNSURE = "ok", "reject", "unsure"   # what a region alone says of a repair
_EOF_ERRORS = ("never closed", "unterminated triple-quoted", "unexpected EOF", "expected an indented block")
_CONTINUES = re.compile(r"(?:else|elif|except|finally|case)\b|[)\]}]")   # a line that cannot start a statement
_WRAP = "if 1:\n"   # before a region that starts indented: Python compiles it as a block
_TRIES = 3          # column-0 lines tried as the start of the code around the error


@dataclass(frozen=True)
class _Region:
    """``head + text[lo:hi]`` compiles as the document does there: Python reads ``text[lo]`` in a clean state (no
    open bracket or string, at a line's start), so an error that ``head + text[lo:hi]`` reports before its last
    code line, and not one that depends on what follows (an unclosed bracket or string, a missing block), is the
    document's too."""

    lo: int
    hi: int
    head: str
    first: int   # 1-based line of text[lo]
    last: int    # 1-based line of the region's last code line
    end: int     # 0-based line of text[hi] (the number of lines when hi is the document's end)


class _PythonJudge:
    """Python's verdict on a repair, by compiling the code around the error instead of the whole document. The
    top-level statements around the error (``top``: from a line at the first column, the code before which compiles
    by itself, to the next such line after the error's) are compiled with the repair; the code before them compiles
    alone (checked once) and the code after them is compiled once: a repaired top region that compiles makes the
    document compile, or fail where the code after it fails. Most candidates are rejected before that by the
    statements at the error's indentation (``inner``: a method in a long class). A repair that leaves a bracket,
    string or block open past the top region is rejected (the whole document may have closed it further down:
    no repair of the error's lines)."""

    def __init__(self, text: str, lines: list[tuple[int, int]], before: tuple[int, str] | None, tree: Any,
                 check: Callable[[int], None] | None = None):
        self.text, self.before, self.tree, self.check = text, before, tree, check
        self.work: _Work | None = None   # the search's time, for the candidates (``find_repairs`` starts it)
        self.bytes = _Bytes(text)
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        first = self._line(min(lo for lo, _ in lines)) - 1
        last = self._line(max(hi for _, hi in lines)) - 1
        self.top = self._top(first, last)
        if check is not None:
            check(0)
        self.inner = self._inner(first, last, self.top)
        rest = text[self.top.hi:]
        error = python_error(rest, check) if rest.strip() else None
        # the line of the first error in the code after the top region: the document's, once the repaired top
        # region compiles (Python reads that code in a clean state); 0 where Python cannot judge it (nested too deep)
        self.after = None if error is None else self.top.end + error[0] if error[1] else 0

    # -- lines ----------------------------------------------------------------------------
    def _line(self, offset: int) -> int:
        """The 1-based line of ``offset``."""
        return bisect.bisect_right(self.starts, offset)

    def _indent(self, i: int) -> int | None:
        """Line ``i``'s (0-based) indentation; None for a blank or comment line."""
        text, starts = self.text, self.starts
        line = text[starts[i]:starts[i + 1] if i + 1 < len(starts) else len(text)]
        code = line.lstrip(" \t")
        return None if not code.strip() or code.startswith("#") else len(line) - len(code)

    def _starts_statement(self, i: int) -> bool:
        """Can line ``i`` (code) start a statement: not ``else:``, not a closing bracket, not in a string as
        tree-sitter read the document?"""
        at = self.starts[i]
        at += len(self.text[at:at + 400]) - len(self.text[at:at + 400].lstrip(" \t"))
        if _CONTINUES.match(self.text, at):
            return False
        if self.tree is None:
            return True
        byte = len(self.text[:at].encode("utf-8", "surrogatepass"))
        node = self.tree.root_node.descendant_for_byte_range(byte, byte + 1)
        while node is not None:
            if node.type in ("string", "string_content", "comment") and node.start_byte < byte:
                return False
            node = node.parent
        return True

    def _region(self, start: int, end: int, head: str) -> _Region:
        """The region of 0-based lines ``[start, end)``."""
        starts, text = self.starts, self.text
        last = next((i + 1 for i in range(end - 1, start - 1, -1) if self._indent(i) is not None), start + 1)
        return _Region(starts[start], starts[end] if end < len(starts) else len(text), head, start + 1, last, end)

    def _end(self, last: int, depth: int, bound: int) -> int:
        """The first line after ``last`` (0-based) before ``bound`` whose code is indented ``depth`` or less and
        can start a statement (``bound`` when none is)."""
        for k in range(last + 1, bound):
            d = self._indent(k)
            if d is not None and d <= depth and self._starts_statement(k):
                return k
        return bound

    def _top(self, first: int, last: int) -> _Region:
        """From the nearest line at or before ``first`` at the first column before which the document compiles by
        itself (the document's start after ``_TRIES`` lines that were not) to the first line at the first column
        after ``last``."""
        start, tries = 0, 0
        for i in range(first, 0, -1):
            if self._indent(i) != 0 or not self._starts_statement(i):
                continue
            if python_error(self.text[:self.starts[i]], self.check) is None:
                start = i
                break
            tries += 1
            if tries == _TRIES:
                break
        return self._region(start, self._end(last, 0, len(self.starts)), "")

    def _inner(self, first: int, last: int, top: _Region) -> _Region | None:
        """From the nearest line at or before ``first`` that starts a statement indented no deeper than the error's
        lines, to the first line after ``last`` indented as little; None where that is the top region."""
        depths = [d for i in range(first, last + 1) if (d := self._indent(i)) is not None and self._starts_statement(i)]
        if not depths:
            return None
        floor = min(depths)
        start = depth = None
        for i in range(first, top.first - 1, -1):
            d = self._indent(i)
            if d is not None and d <= floor and self._starts_statement(i):
                start, depth = i, d
                break
        if start is None or not depth:
            return None
        text, starts = self.text, self.starts
        lead = text[starts[start]:starts[start] + depth]
        if python_error(text[top.lo:starts[start]] + lead + "pass\n", self.check) is not None:
            return None   # Python does not start a statement there (a bracket or string is open)
        return self._region(start, self._end(last, depth, top.end), _WRAP)

    # -- verdicts -------------------------------------------------------------------------
    def _alone(self, region: _Region, repair: Repair, threshold: int | None) -> str:
        text = self.text
        check = self.check if self.work is None else self.work.poll   # a region's child compile halted when spent
        error = python_error(region.head + text[region.lo:repair.start] + repair.new + text[repair.end:region.hi],
                             check)
        if error is None:
            return _OK
        line = region.first + error[0] - 1 - region.head.count("\n")
        if not error[1] or line < region.first or line >= region.last \
                or any(m in error[1] for m in _EOF_ERRORS):
            return _UNSURE   # may depend on the code after the region
        return _MOVED if threshold is not None and line > threshold else _REJECT

    def order(self, tried: list[Repair]) -> list[int]:
        """The indexes of ``tried``, likeliest first (``_likeliest``): those Python's message names (``hinted``'s
        test: ``expected ':'``) or where tree-sitter put a MISSING node of their token come first."""
        error = self.before
        named = {v for k, v in _HINTS.items() if error is not None and k in error[1]}

        def hint(r: Repair) -> bool:
            return (r.new or self.text[r.start:r.end]).strip() in named
        return _likeliest(tried, self.tree, self.bytes, hint)

    def verdict(self, repair: Repair) -> str | None:
        """``_CLEAN``: the repaired document compiles; ``_MOVED``: its first error is past the repaired line and
        the user's error's line; None: rejected."""
        line = self._line(repair.start)
        threshold = max(line, self.before[0]) + 1 if self.before is not None else None
        if self.inner is not None and self._alone(self.inner, repair, threshold) == _REJECT:
            return None
        alone = self._alone(self.top, repair, threshold)
        if alone == _MOVED:
            return _MOVED
        if alone != _OK:
            return None
        if self.after is None:
            return _CLEAN
        return _MOVED if threshold is not None and self.after > threshold else None


class _Spent(Exception):
    """The search's time is spent (raised from a reparse, which it halts, or before a candidate)."""


class _Work:
    """The search's time: ``seconds`` by ``clock`` from now. ``tick`` is called before each candidate and at each of
    tree-sitter's progress reports in its reparse (about every 100 parse operations); it asks the job's ``check``
    (a long reparse is cancelled as it runs) and raises ``_Spent`` once the time is past."""

    def __init__(self, seconds: float, check: Callable[[int], None] | None = None,
                 clock: Callable[[], float] = time.perf_counter):
        self.check, self.clock, self.ticks = check, clock, 0
        self.deadline = clock() + seconds

    def tick(self) -> None:
        self.ticks += 1
        if self.check is not None:
            self.check(0)
        if self.clock() > self.deadline:
            raise _Spent

    def poll(self, _step: int) -> None:
        """``tick`` as a job's check (``pyparse``'s, polled while a child process compiles: it is killed when the
        time is spent)."""
        self.tick()


class _Bytes:
    """UTF-8 byte offsets of ``text``'s str offsets (tree-sitter's), each line's start encoded once."""

    def __init__(self, text: str):
        self.text = text
        self.lines: dict[int, tuple[int, int, int, int]] = {}   # line start -> its row, end, start byte, end byte

    def line(self, offset: int) -> tuple[int, int, int, int, int]:
        """The line of ``offset``: its start, row, end (str), start and end byte."""
        lo, hi = line_bounds(self.text, offset)
        if lo not in self.lines:
            blo = len(self.text[:lo].encode("utf-8", "surrogatepass"))
            self.lines[lo] = (self.text.count("\n", 0, lo), hi, blo,
                              blo + len(self.text[lo:hi].encode("utf-8", "surrogatepass")))
        row, hi, blo, bhi = self.lines[lo]
        return lo, row, hi, blo, bhi

    def byte(self, offset: int) -> int:
        lo, _, _, blo, _ = self.line(offset)
        return blo + len(self.text[lo:offset].encode("utf-8", "surrogatepass"))


def _likeliest(tried: list[Repair], tree: Any, bytes_: _Bytes, hint: Callable[[Repair], bool] | None = None
               ) -> list[int]:
    """The indexes of ``tried``, likeliest first: an insertion where tree-sitter put a MISSING node of that token
    (``hinted``'s test) or one ``hint`` names, then the other candidates that insert a closer, then those that insert
    no opener, then those that do (an unclosed opener's error runs to the end of the file: for tree-sitter its
    reparse is the rest's parse). Within each, the candidates' own order."""
    missing: set[tuple[str, int]] = set()
    stack = [tree.root_node] if tree is not None and tree.root_node.has_error else []
    while stack:
        node = stack.pop()
        if node.is_missing:
            missing.add((node.type, node.start_byte))
        stack.extend(c for c in node.children if c.has_error or c.is_missing)
    types = {t for t, _ in missing}

    def rank(i: int) -> int:
        r = tried[i]
        if r.new in types:
            at = bytes_.byte(r.start)
            if any((r.new, b) in missing for b in (at - 1, at, at + 1)):
                return 0
        if hint is not None and hint(r):
            return 0
        if any(c in r.new for c in _OPENERS):
            return 3
        return 1 if any(c in r.new for c in _CLOSERS) else 2
    return sorted(range(len(tried)), key=rank)




class _TreeJudge:
    """Tree-sitter's verdict on a repair (fewer errors than the document has, none on the repaired line): the
    document's tree edited and reparsed incrementally, not parsed anew. ``work``: the search's time (``_Spent`` is
    raised, the reparse halted, when it is past); None: no bound."""

    def __init__(self, spec: LanguageSpec, text: str, tree: Any, work: _Work | None = None):
        self.spec, self.text, self.tree, self.work = spec, text, tree, work
        self.data = text.encode("utf-8", "surrogatepass")
        self.baseline = len(error_spans(tree, nested=False))
        self.bytes = _Bytes(text)

    def order(self, tried: list[Repair]) -> list[int]:
        """The indexes of ``tried``, likeliest first (``_likeliest``)."""
        return _likeliest(tried, self.tree, self.bytes)

    def verdict(self, repair: Repair) -> str | None:
        lo, row, _, blo, bhi = self.bytes.line(repair.start)
        text = self.text
        start = blo + len(text[lo:repair.start].encode("utf-8", "surrogatepass"))
        end = start + len(text[repair.start:repair.end].encode("utf-8", "surrogatepass"))
        new = repair.new.encode("utf-8", "surrogatepass")
        edited = self.tree.copy()
        edited.edit(start_byte=start, old_end_byte=end, new_end_byte=start + len(new),
                    start_point=(row, start - blo), old_end_point=(row, end - blo),
                    new_end_point=(row, start - blo + len(new)))
        tree = _parse_anew(self.spec, self.data[:start] + new + self.data[end:], edited,
                           self.work.tick if self.work is not None else None)
        if tree is None:
            return None
        errors = error_spans(tree, nested=False)
        bhi += len(new) - (end - start)
        return _CLEAN if len(errors) < self.baseline and not any(s <= bhi and e >= blo for s, e in errors) else None


def rank(text: str, repairs: list[Repair], score=None, check: Callable[[int], None] | None = None) -> list[Repair]:
    """Best first: the parser's hint, then (with ``score(prefix, line, suffix)``, the model's log-likelihood
    of the edited lines) the model's preference, an insertion favoured and a word's or string's deletion held back;
    without a model, the repair nearest the line's end. ``check(0)`` (the job's cancellation) is called before each
    score (a forward of the model over the lines' context)."""
    def prior(r: Repair) -> float:
        lo, hi = line_bounds(text, r.start)
        hint = _HINT_BONUS if r.hinted else 0.0
        return hint - _SECOND_EDIT * (r.edits - 1) + 0.01 * (r.start - lo) / max(1, hi - lo)

    def kept(r: Repair) -> float:
        """What the repair keeps of the user's text and how code is written, in nats (it does not decide which
        repairs are scored)."""
        leading = r.start == r.end and r.new in ",;:" and not text[line_bounds(text, r.start)[0]:r.start].strip()
        gone = text[r.start:r.end]
        lost = _WORD.search(gone) or (len(gone) >= 2 and gone[0] in "\"'`" and gone[-1] == gone[0])
        return (_INSERTED if r.start == r.end else 0.0) - (_WORD_LOST if lost else 0.0) - (_LEADING if leading else 0.0)

    ordered = sorted(repairs, key=prior, reverse=True)
    if score is None:
        return ordered
    head = ordered[:_MAX_RANKED]
    # every candidate is scored on the same lines (those of all the head's edits, each as that candidate leaves
    # them): a line's score is a sum over its tokens, so a comma at the end of a long line scored against one at the
    # start of a short line (``name: 'x'`` above ``age: 2,``) would lose for the length of its line
    lo = min(line_bounds(text, r.start)[0] for r in head)
    hi = max(line_bounds(text, r.end)[1] for r in head)
    scored = []
    for r in head:
        if check is not None:
            check(0)
        fixed = apply(text, r)
        end = hi + len(r.new) - (r.end - r.start)
        try:
            scored.append((score(to_lf(fixed[:lo]), to_lf(fixed[lo:end]), to_lf(fixed[end:])) + prior(r) + kept(r), r))
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
    best = rank(text, repairs, score, check)[0]
    forwards = min(len(repairs), _MAX_RANKED) if score is not None else 0
    return Completion((HoleFill(best.start, best.end, best.new),), HoleKind.SPAN, 0, forwards, 0,
                      round((time.perf_counter() - t0) * 1000, 2), True, len(repairs) - 1, backend.name)
