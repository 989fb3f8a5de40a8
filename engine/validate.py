"""Is a fill acceptable? The one home of every validation: tidy a fill's seams, re-parse the context window
with it and compare with the original, Python's own verdict, a fix's check, and the choice per hole of a
multi-hole fill that keeps the file parsing."""

from __future__ import annotations

import difflib
import functools
import re
import textwrap
import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

from . import pyparse
from .context import BARE_END, COMMENT_STARTS, HABIT_CHARS, Window, semicolons
from .languages import LanguageSpec, document_tree, error_count, error_spans, grammar, has_grammar
from .languages import parse as _parse_anew
from .model_text import invents_replacement
from .requests import Hole, HoleFill, HoleKind
from .returns import returns_check


_RECENT = threading.local()
_KEEP = 8   # trees: a candidate's checks share its filled window's, and every candidate the window's own


def parse(spec: LanguageSpec, source: str | bytes, tick: Callable[[], None] | None = None) -> Any:
    """``languages.parse``, remembering this thread's last few trees: a cursor fill's checks (the re-parse, the
    comment, closer and bracket checks) each read the window with the fill and the window as the user has it,
    and these are the same texts for every check and, the user's, for every candidate. Trees are never edited
    in place (``document_parses`` edits a copy). A source over 64 KiB is ``languages.document_tree``'s: a whole
    document the code action's survey parsed is not parsed again. ``tick``: ``languages.parse``'s (a job's
    cancellation)."""
    recent: dict[tuple[str, str | bytes], Any] = _RECENT.__dict__.setdefault("trees", {})
    key = (spec.name, source)
    tree = recent.pop(key, None)
    if tree is None:
        tree = document_tree(spec, source, tick)
        if len(recent) >= _KEEP:
            del recent[next(iter(recent))]
    recent[key] = tree
    return tree


def tidy(fill: str, hole: Hole, rest_of_line: str, other: bool = False) -> str | None:
    """Apply the hole's stop rule and seam rules to a raw fill; ``None`` if it cannot be used. ``other``: the other
    reading of a fill that ends with the rest of its line where that starts with a closer (cut as the model's repeat
    of it where the fill's brackets do not pair, else kept as the fill's own): kept, or cut."""
    if hole.heal:
        if not fill.startswith(hole.heal):
            return None
    if hole.stop_at_newline:
        cut = fill.find("\n", len(hole.heal))
        if cut >= 0:
            fill = fill[:cut + 1] if hole.keep_newline else fill[:cut].rstrip("\r")
        elif hole.keep_newline:  # a whole line inserted before code must end its own line
            fill = fill.rstrip(" \t") + "\n"
        if hole.keep_newline:  # the typed indentation the hole regenerates was the code's: it goes back before it
            fill += hole.heal

    if hole.kind is HoleKind.INLINE:
        spaced = fill
        fill = fill.rstrip()
        tail = rest_of_line.strip()
        # never repeat the text after the cursor; but a fill whose brackets pair among themselves ends with its own
        # closer, not the user's: ``chunk(|)`` filled with ``dict(zip(a, b))`` (cut to ``dict(zip(a, b)``, the
        # user's ``)`` would close the ``zip``, and ``chunk(`` would stay open)
        if tail and fill.endswith(tail) and not (tail[0] in _CLOSERS and _pairs_its_brackets(fill) != other):
            spaced = fill[: len(fill) - len(tail)]
            fill = spaced.rstrip()
        if _word(fill[-1:]) and _word(rest_of_line[:1]):
            # the fill would run into the word after the cursor and change it (``b = |a`` filled with ``not a``
            # is ``not`` once the repeated ``a`` goes: ``nota``): keep the model's space, else no fill
            if len(spaced) == len(fill):
                return None
            fill += " "
    elif hole.kind is HoleKind.BLOCK:
        # Before a blank rest of the line, the line's own break ends the block: the fill's trailing breaks (and
        # indentation after them) would be blank lines in a client that inserts the text as sent (Emacs, Helix).
        fill = fill.rstrip() if not rest_of_line.strip() else fill.rstrip(" \t")
    return fill


_CLOSERS = ")]}"
_OPENERS = "([{"
_PAIRS = {"(": ")", "[": "]", "{": "}"}


def _pairs_its_brackets(code: str) -> bool:
    """Does every closing bracket of ``code`` close an opening one of ``code``, and every opening one get closed
    (brackets in quotes not counted)?"""
    depth = 0
    chars, in_quote = _outside_quotes(code)
    for _, ch in chars:
        if ch in _OPENERS:
            depth += 1
        elif ch in _CLOSERS:
            depth -= 1
            if depth < 0:
                return False
    return depth == 0 and not in_quote


def _outside_quotes(code: str) -> tuple[list[tuple[int, str]], bool]:
    """The characters of ``code`` outside its quotes (``'``, ``"``, `````), with their offsets (the quotes
    themselves left out), and whether ``code`` ends inside one."""
    out, quote, escaped = [], "", False
    for i, ch in enumerate(code):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "'\"`":
            quote = ch
        else:
            out.append((i, ch))
    return out, bool(quote)


_LINE_COMMENT = {":": "#"}   # a line comment's marker by ``block_opener`` (``//`` for the braces languages)


_SEMICOLON_LANGUAGES = ("javascript", "typescript", "typescriptreact", "rust")   # statements end with ``;``
_CONTINUES = re.compile(r"[.?)\]}:,=+\-*/%&|^<>!]")   # a code line starting so goes on with the line above
_NO_END = re.compile(r"(?:(?:export|pub|async|default)\s+)*(?:if|for|while|else|switch|catch|do|try|function|class|"
                     r"fn|impl|match|loop|struct|enum|trait|mod|unsafe|where|interface|type|namespace)\b|[@#<]")


def statement_end(spec: LanguageSpec, prefix: str, suffix: str, fill: str) -> str | None:
    """At a line's end (``prefix`` ends with the line's text before the fill, ``suffix``'s first line is blank):
    ``fill`` with the ``;`` the document's statements end with where the fill leaves a whole statement without it
    (``const now = Dat`` + ``e.now()`` -> ``e.now();``; Rust's statements always), or, in JavaScript and TypeScript,
    without the one the document's statements do not have (``const parts: string[] = []``; ``context.semicolons``:
    a document that shows neither habit keeps the fill as written). None otherwise: another language, a fill of
    more than one line, a line whose brackets or quotes are not closed, with a comment, that heads a block or is a
    decorator or attribute, after a code line that does not end a statement (``,``, ``(``, an operator), before one
    that goes on with it (``.then(``, ``?``, ``+``, a closer) or, in Rust, before a ``}`` (the block's value, whose
    ``;`` would make it ``()``)."""
    if spec.name not in _SEMICOLON_LANGUAGES or "\n" in fill.rstrip("\n"):
        return None
    body = fill.rstrip()
    tail = fill[len(body):]
    line_start = prefix.rfind("\n") + 1
    line = prefix[line_start:] + body
    code = line.strip()
    rest, _, after = suffix.partition("\n")
    if not code or _NO_END.match(code) or rest.strip() or not _pairs_its_brackets(line) \
            or any(line.startswith(("//", "/*"), i) for i, _ in _outside_quotes(line)[0]):
        return None
    # the nearest code lines above and below (comments are not code), within ``_REPEAT_LOOK`` lines
    above = next((c for c in (ln.strip() for ln in reversed(prefix[:line_start].rsplit("\n", _REPEAT_LOOK)))
                  if c and not c.startswith(COMMENT_STARTS)), "")
    below = next((c for c in (ln.strip() for ln in after.split("\n", _REPEAT_LOOK)[:_REPEAT_LOOK])
                  if c and not c.startswith(COMMENT_STARTS)), "")
    if above and not (above.endswith((";", "{", "}")) or BARE_END.search(above) and not _NO_END.match(above)) \
            or _CONTINUES.match(below) and not below.startswith("}") or spec.name == "rust" and below.startswith("}"):
        return None
    lo = max(0, line_start - HABIT_CHARS)   # (only what ``semicolons`` reads, not the whole window)
    style = ";" if spec.name == "rust" else semicolons(prefix[lo:] + suffix[:HABIT_CHARS], line_start - lo)
    if body.endswith(";"):
        return body[:-1] + tail if style == "" and BARE_END.search(body[:-1]) else None
    return body + ";" + tail if style and BARE_END.search(body) else None


def without_surplus_closers(spec: LanguageSpec, line_before: str, fill: str) -> str | None:
    """``fill`` without the closing brackets at its end that close nothing its line opened (``line_before``: the
    line's text before the fill), where those are the line's only unmatched brackets and another closer of that run
    at the end closes what the line opened: the model closed one bracket too many (``return retry({ error: err`` +
    `` as Error }))``). A ``;`` or ``,`` after them stays. None otherwise: no such closer, a fill of more than one
    line, another unmatched bracket, a run that closes nothing at all (``X );``: no call of its own to close).
    Brackets in quotes count for nothing; a comment on the line (Python's ``#``, else ``//``) gives None."""
    if "\n" in fill.rstrip("\n"):
        return None
    body = fill.rstrip()
    end = len(body.rstrip(";,"))
    run = end
    while run > 0 and body[run - 1] in _CLOSERS:
        run -= 1
    if run == end:
        return None
    line = line_before + body[:end]
    comment = _LINE_COMMENT.get(spec.block_opener, "//")
    stack: list[str] = []     # the closers the line's open brackets wait for
    surplus: set[int] = set()   # offsets in ``fill`` of the closers that close nothing
    chars, in_quote = _outside_quotes(line)
    for i, ch in chars:
        if line.startswith(comment, i):
            return None   # a comment: what it holds is no code to count
        if ch in _OPENERS:
            stack.append(_PAIRS[ch])
        elif ch in _CLOSERS:
            if stack and stack[-1] == ch:
                stack.pop()
            elif i < len(line_before):
                return None   # the user's own line has an unmatched closer: a statement that started above
            else:
                surplus.add(i - len(line_before))
    if in_quote or not surplus or any(i < run for i in surplus) or len(surplus) == end - run:
        return None   # (a fill whose closers all close nothing had no call of its own to close: ``X );``)
    kept = "".join(ch for i, ch in enumerate(fill[:end]) if i not in surplus)
    return kept + fill[end:]


def _word(ch: str) -> bool:
    """Is ``ch`` a character of a name or number (``$`` too: JavaScript's)?"""
    return bool(ch) and (ch.isalnum() or ch in "_$")


_PYTHON_CHECK_LIMIT = 200_000  # characters; beyond this only the tree-sitter window check runs


_TOO_DEEP = (-1, "nested deeper than Python's parser can judge")


def _first_error(document: str) -> tuple[int, str] | None:
    """Python's first syntax error (line, message), the compiler's included (``'return' outside function``,
    ``'break' outside loop``: they parse), None when the document compiles, ``_TOO_DEEP`` when
    the parser gives up on the nesting (thousands of open brackets: RecursionError, MemoryError, or
    CPython 3.11's SystemError "AST constructor recursion depth mismatch")."""
    try:
        pyparse.compile_code(document)
        return None
    except (SyntaxError, ValueError) as exc:
        return getattr(exc, "lineno", None) or 0, getattr(exc, "msg", str(exc))
    except (RecursionError, MemoryError, SystemError):
        return _TOO_DEEP


PARSES = "parses"                  # python_check verdicts: the whole filled document parses,
KEEPS_ERROR = "keeps-error"        # or fails with exactly the error the user's document already had


_DEFINITION = re.compile(r"[ \t]*(?:async[ \t]+)?(?:def|class)\b")
_WRAP = "if 1:\n"   # before a region that starts indented: Python compiles it as a block


def python_region(text: str, start: int, end: int) -> tuple[int, int, str] | None:
    """Where the user's document does not compile, the code around ``text[start:end]`` that Python can judge
    alone: ``(lo, hi, head)``, ``head + text[lo:hi]`` compiles by itself (``head``: ``_WRAP`` when
    ``text[lo]`` is indented). The region is a whole ``def`` or ``class`` (the lines from its header to the
    first code line after the hole at its indentation or less) or a run of top-level code (from a line at the
    first column to the next one after the hole), the outermost of these around the hole that compiles: the
    user's error is outside it (another function, 50 lines away), so a fill that stops it compiling made an
    error of its own (``continue`` outside a loop, ``return`` outside a function, an indentation error, an
    unclosed bracket), which Python, stopping at the user's error, does not report. None when the hole's own
    function (or top-level statement) holds the error."""
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    first = text.count("\n", 0, start)
    last = first + text.count("\n", start, end)

    def indent(i: int) -> int | None:
        """Line ``i``'s indentation; None for a blank or comment line."""
        line = text[starts[i]:starts[i + 1] if i + 1 < len(starts) else len(text)]
        code = line.lstrip(" \t")
        return None if not code.strip() or code.startswith("#") else len(line) - len(code)

    typed = text[starts[first]:start]
    floor = len(typed) - len(typed.lstrip(" \t")) if typed.strip() else 1 << 30
    found = None
    for i in range(first - 1, -1, -1):
        depth = indent(i)
        if depth is None or depth >= floor:
            continue
        floor = depth
        if depth and not _DEFINITION.match(text, starts[i]):
            continue
        below = next((k for k in range(last + 1, len(starts)) if (d := indent(k)) is not None and d <= depth),
                     None)
        lo, hi = starts[i], len(text) if below is None else starts[below]
        head = _WRAP if depth else ""
        if _region_error(head + text[lo:hi], head) is not None:
            break   # the user's error (or code this cut does not make whole: a line of a string at column 0)
        found = lo, hi, head
        if not depth:
            break
    return found


def _region_error(source: str, head: str) -> tuple[int, str] | None:
    """``_first_error`` of a region; a nested function's ``nonlocal`` may name its outer function's variable,
    which a region cut from the outer function lacks."""
    error = _first_error(source)
    return None if error is not None and head and "nonlocal" in error[1] else error


Verdict = Callable[[str], str]  # a fill -> PARSES, KEEPS_ERROR, or "" (rejected)


def python_check(spec: LanguageSpec, text: str, start: int, end: int) -> Verdict | None:
    """For a small Python document, a check of fills by Python's own parser: the filled document must
    parse (``PARSES``), or fail with exactly the error the user's document already had, moved by the
    fill's lines (``KEEPS_ERROR``: Python stops at the first error, so code after it is unchecked);
    ``""`` rejects. ``None`` for other languages and large documents (the tree-sitter window check
    still runs). Not where the user's error is on the hole's line and the fill keeps it there: the fill left the
    line the user is typing as broken as they had it."""
    if spec.name != "python" or len(text) > _PYTHON_CHECK_LIMIT:
        return None
    original = _first_error(text)
    if original == _TOO_DEEP:
        return None  # Python cannot judge this document: the tree-sitter window check decides
    fill_line = text.count("\n", 0, start) + 1
    removed = text.count("\n", start, end)
    region = None if original is None else python_region(text, start, end)

    def accepts(fill: str) -> str:
        error = _first_error(text[:start] + fill + text[end:])
        if error is None:
            return PARSES
        if error == _TOO_DEEP:
            return KEEPS_ERROR  # not judged by Python: the window check decides
        if original is None:
            return ""
        if region is not None:   # the user's error is elsewhere: the code around the hole compiles alone
            lo, hi, head = region
            return "" if _region_error(head + text[lo:start] + fill + text[end:hi], head) else PARSES
        line, message = original
        moved = line if line < fill_line else line + fill.count("\n") - removed
        last = fill_line + fill.count("\n")
        if error != (moved, message):
            # The fill closed the user's error at the hole (a half-typed line, an empty body) and Python stops at
            # another of theirs further down: the fill's if the code around it does not compile alone.
            filled = text[:start] + fill + text[end:]
            past = error[0] > last + 1 and python_region(filled, start, start + len(fill)) is not None
            return PARSES if past else ""
        # An indentation error on the fill's lines or the line after it is the hole's to fix: the code
        # below is indented under a block opener that is missing (or the hole is a block's empty body).
        if "indent" in message and fill_line <= moved <= last + 1:
            return ""
        # The user's error is on the line they are typing (``np.r_[a, cl`` with its bracket open, ``from m imp``,
        # ``print("Button cli`` with its string open) and stays there: the fill leaves the line as broken as the
        # user had it (``np.r_[a, cls.level,``), which is not what the line needed.
        return "" if fill_line <= line <= fill_line + removed and fill_line <= moved <= last else KEEPS_ERROR
    return accepts


_DOCUMENT_CHECK_LIMIT = 300_000   # characters; a larger document keeps the window's verdict


class DocumentCheck(Protocol):
    """``document_parses``' verdict on a fill: ``check(fill)`` for one the window rejected, ``check(fill,
    confirm=True)`` for one it accepted; ``check.finishes_line(fill)`` for one on a line the user left broken."""

    def __call__(self, fill: str, confirm: bool = False) -> bool: ...

    def finishes_line(self, fill: str) -> bool: ...


def document_parses(spec: LanguageSpec, text: str, start: int, end: int) -> DocumentCheck | None:
    """For a fill the window check rejected because the window itself has errors (it is cut from the document:
    a ``case`` whose ``switch`` is above it, an ``else`` without its ``if``, and tree-sitter's recovery may
    cover the cursor's line with one of them), or because its cut left out what the fill needs (a method's class,
    the closer of a block the fill opens): does the whole document with the fill in ``text[start:end]``
    parse with no ERROR/MISSING node but those the user's document already has away from the hole (at the same
    place, moved by the fill's length), and none touching the fill? The user's document is parsed once, when
    first asked; each filled one is reparsed from its tree (tree-sitter's incremental parse: a few
    milliseconds where a whole parse of a 300 KB file takes about 60). None without a grammar or for a document
    over ``_DOCUMENT_CHECK_LIMIT`` characters.

    ``confirm=True``: for a fill the window accepted although it has errors of its own (its cut). The fill can
    absorb or move them, so that the window's count stays while the document, which had none there, gets one
    (``Err(e) => { .. };`` inside a ``match``, an object literal opened and never closed): the filled document may
    have no more ERROR/MISSING nodes than the user's and none touching the fill (the user's own may move: a
    half-typed line's MISSING closer after a fill that does not close it; ``finishes_line`` judges that).

    ``finishes_line(fill)``: where the user's document has an error that starts on the hole's line or at the first
    code after it (a half-typed line: ``raise ValueError("no such`` with its string open, ``let ret = sel``
    without its ``;``, a word typed where the rest of the line is missing: ``assert_eq!(format!("{}", doc|);``),
    the filled document may have none starting on the fill's lines or at the code after them: a fill that leaves
    the line as broken as the user had it is not what the line needed (``raise ValueError("no such, name)``,
    ``let ret = self.source``). True where the user's line has no error of its own (an error that a line above
    opened and that runs over it, a call over several lines, is not the line's to close; nor is the closer of a
    block the user has not closed yet, missing at the document's end), and where all that follows the hole on its
    line is closers an editor put there (``let total = compute(|)``: the ``;`` goes after them, beyond any fill;
    ``before_closers``). Nor may a string the user opened on the
    line before the cursor run past the fill's line where an error follows (a string can span lines in Rust or a
    template, so the error it causes is reported far below), nor a bracket they opened there stay open at the
    line's end while the next code line is no continuation of it (``_left_open``). Nor, where the user's document
    parses up to the hole's line, may an error start in the deeper lines after the fill's line or on their closer's
    line, nor that closer close what a shallower line opened: the line heads them and did not open what they need
    (``_heads_broken_lines``)."""
    if not has_grammar(spec) or len(text) > _DOCUMENT_CHECK_LIMIT:
        return None
    return _DocumentParses(spec, text, start, end)


def _point(data: bytes) -> tuple[int, int]:
    """The (row, byte column) at the end of ``data``."""
    return data.count(b"\n"), len(data) - (data.rfind(b"\n") + 1)


class _UserDocument(NamedTuple):
    """The user's document as ``document_parses`` reads it: its UTF-8, the hole's byte range and end points, its
    tree and the tree's errors."""
    data: bytes
    lo: int
    hi: int
    start_point: tuple[int, int]
    end_point: tuple[int, int]
    tree: Any
    errors: list[tuple[int, int]]


class _DocumentParses:
    """``document_parses``' check: the user's document parsed when first asked, each filled one reparsed from
    its tree (the last one kept: a fill the document check judged is judged by ``finishes_line`` next)."""

    def __init__(self, spec: LanguageSpec, text: str, start: int, end: int) -> None:
        self.spec, self.text, self.start, self.end = spec, text, start, end
        self._last: tuple[str, tuple[Any, bytes, int, int] | None] | None = None

    @functools.cached_property
    def user(self) -> _UserDocument | None:
        """The user's document parsed (when first asked: only for a hole whose window rejects a fill); None without
        a tree."""
        head = self.text[:self.start].encode("utf-8", "surrogatepass")
        middle = self.text[self.start:self.end].encode("utf-8", "surrogatepass")
        data = head + middle + self.text[self.end:].encode("utf-8", "surrogatepass")
        tree = parse(self.spec, data)
        return None if tree is None else _UserDocument(data, len(head), len(head) + len(middle), _point(head),
                                                       _point(head + middle), tree, error_spans(tree))

    @functools.cached_property
    def line_broken(self) -> bool:
        """Does an error of the user's start on the hole's line (or at the first code after it)?"""
        user = self.user
        return user is not None and _on_the_line(user.errors, user.data, user.lo, user.hi)

    def _filled(self, fill: str) -> tuple[Any, bytes, int, int] | None:
        """The filled document's tree, its bytes, and the fill's byte range; None without a tree."""
        if self._last is not None and self._last[0] == fill:
            return self._last[1]
        user = self.user
        filled = None
        if user is not None:
            head = user.data[:user.lo]
            added = fill.encode("utf-8", "surrogatepass")
            edited = user.tree.copy()
            edited.edit(start_byte=user.lo, old_end_byte=user.hi, new_end_byte=user.lo + len(added),
                        start_point=user.start_point, old_end_point=user.end_point,
                        new_end_point=_point(head + added))
            data = head + added + user.data[user.hi:]
            tree = _parse_anew(self.spec, data, edited)
            filled = None if tree is None else (tree, data, user.lo, user.lo + len(added))
        self._last = (fill, filled)
        return filled

    def __call__(self, fill: str, confirm: bool = False) -> bool:
        filled = self._filled(fill)
        user = self.user
        if filled is None or user is None:
            return True
        tree, _, lo, hi = filled
        before = user.errors
        if confirm:
            spans = error_spans(tree)
            return len(spans) <= len(before) and not any(s < max(hi, lo + 1) and e > lo or s == hi < e
                                                          for s, e in spans)
        old_hi = user.hi
        shift = hi - old_hi
        kept = {(s, e) if e <= lo else (s + shift, e + shift) for s, e in before
                if e <= lo and s < lo or s >= old_hi and e > old_hi}
        return all((s, e) in kept and not (s < max(hi, lo + 1) and e > lo) for s, e in error_spans(tree))

    @functools.cached_property
    def clean_before(self) -> bool:
        """Does the user's document parse up to the hole's line (no error of theirs starts before it)?"""
        user = self.user
        return user is not None and not any(s < user.data.rfind(b"\n", 0, user.lo) + 1 for s, _ in user.errors)

    @functools.cached_property
    def before_closers(self) -> bool:
        """Is all that follows the hole on its line the closers an editor puts after the cursor as the line is typed
        (``let total = compute(|)``, ``printf(|)``): the closer of each bracket and quote the line opens before the
        hole and leaves open, innermost first, and nothing else? The line's end, its ``;``, is not written yet, and
        comes after them, where no fill reaches. (``os.Exit(exi|))`` is not: one ``(`` is open, two follow.)"""
        user = self.user
        if user is None:
            return False
        start = user.data.rfind(b"\n", 0, user.lo) + 1
        end = user.data.find(b"\n", user.hi)
        rest = user.data[user.hi:len(user.data) if end < 0 else end].decode("utf-8", "replace").strip()
        return bool(rest) and rest == editor_closers(user.data[start:user.lo].decode("utf-8", "replace"))

    def finishes_line(self, fill: str) -> bool:
        filled = self._filled(fill)
        if filled is None:
            return True
        tree, data, lo, hi = filled
        spans = error_spans(tree)
        return not (self.line_broken and not self.before_closers and _on_the_line(spans, data, lo, hi)) \
            and not _left_open(tree, data, lo, hi, spans) \
            and not (self.clean_before and _heads_broken_lines(tree, data, hi, spans))


_SPACE = re.compile(rb"\s*")


def editor_closers(code: str, quotes: str = "\"'`") -> str | None:
    """What an editor that closes brackets and ``quotes`` as they are typed has put after the cursor while ``code``
    was typed: the closer of each bracket or quote still open, innermost first ("" when none is); None when the
    code closes a bracket it did not open. (``benchmarks.tasks.closers`` builds its holes with it.)"""
    stack: list[str] = []
    escaped = False
    for ch in code:
        if stack and stack[-1] in quotes:   # inside a string: only its own quote closes it
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == stack[-1]:
                stack.pop()
            continue
        if ch in _PAIRS or ch in quotes:
            stack.append(ch)
        elif ch in _CLOSERS:
            if not stack or _PAIRS.get(stack[-1]) != ch:
                return None
            stack.pop()
    return "".join(_PAIRS.get(c, c) for c in reversed(stack))


def _on_the_line(spans: Sequence[tuple[int, int]], data: bytes, lo: int, hi: int) -> bool:
    """Does an error of ``spans`` start on the lines of ``data[lo:hi]`` or at the first code after it (an
    error a missing ``;`` leaves starts at the next line's first token)? Not one at the document's end: the closer
    a block the user has not closed yet is missing there (typing the last line of a function they are writing)."""
    first = data.rfind(b"\n", 0, lo) + 1
    last = data.find(b"\n", hi)
    last = len(data) if last < 0 else last
    space = _SPACE.match(data, hi)
    after = space.end() if space else hi
    return any((first <= s <= last or s == after) and s < len(data) for s, _ in spans)


_STRINGS = frozenset({"string", "string_literal", "template_string", "interpreted_string_literal",
                      "raw_string_literal"})   # the string nodes of the grammars (Python, JS/TS, Go, Rust)
_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})
_TEXT = _STRINGS | _COMMENTS | {"char_literal", "rune_literal"}   # no brackets of the code's in these
_OPENER_OF = dict(zip(_CLOSERS, _OPENERS))
_CLOSER_BYTES = tuple(c.encode() for c in _CLOSERS)
_OPENER_BYTES = tuple(c.encode() for c in _OPENERS)
_INDENT = re.compile(rb"[ \t]*")


def _depth(data: bytes, line_start: int) -> int:
    """The indentation width (characters) of the line of ``data`` that starts at ``line_start``."""
    match = _INDENT.match(data, line_start)   # [ \t]* matches everywhere, if only the empty string
    return 0 if match is None else match.end() - line_start


def _left_open(tree: Any, data: bytes, lo: int, hi: int, spans: Sequence[tuple[int, int]]) -> bool:
    """In a document with errors, does the fill leave open a string or a bracket the user opened on its first line
    before it?

    - A string that runs past the fill's last line with an error from its start to the end of the line it ends on
      (``println!("** vis`` + ``itor.visit_document(document);`` runs to the next line's quote, where the code after
      it breaks). A string over several lines without an error there is the code's own (a template, a raw string),
      whatever errors the document has elsewhere.
    - A bracket still open at the end of the fill's line (``c.worldWitness1(scr`` + ``atchBuffer,``) while the next
      code line is no continuation of it: not indented deeper than the line, not starting with a closer. Code goes
      on inside a bracket on deeper lines (``foo(a,`` above ``    b)``) or closes it first (``});``). A bracket the
      line closes that a line above opened is not the line's.

    Not on the document's last line, nor on one continued by a backslash."""
    first = data.rfind(b"\n", 0, lo) + 1
    end = data.find(b"\n", hi)
    if not spans or end < 0 or data[first:end].rstrip(b" \t\r").endswith(b"\\"):
        return False
    leaves: list[tuple[int, str]] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.end_byte <= first or node.start_byte >= end:
            continue
        if node.type in _STRINGS and first <= node.start_byte < lo and node.end_byte > end:
            closed = data.find(b"\n", node.end_byte)   # the end of the line the string ends on
            closed = len(data) if closed < 0 else closed
            if any(s <= closed and e >= node.start_byte for s, e in spans):
                return True
        if node.type in _TEXT:
            continue
        if node.child_count:
            stack.extend(node.children)
        elif node.start_byte >= first and node.end_byte > node.start_byte:   # not a zero-width MISSING one
            leaves.append((node.start_byte, node.type))
    opened: list[tuple[int, str]] = []
    for at, kind in sorted(leaves):
        if kind in _OPENER_OF.values():
            opened.append((at, kind))
        elif kind in _OPENER_OF:
            if not opened or opened[-1][1] != _OPENER_OF[kind]:
                return False   # it closes what a line above opened
            opened.pop()
    if not any(at < lo for at, _ in opened):
        return False
    after = end
    while True:   # the next code: past blank lines and comments
        space = _SPACE.match(data, after)
        after = space.end() if space else after
        if after >= len(data):
            return False
        node = tree.root_node.descendant_for_byte_range(after, after + 1)
        if node is None or node.type not in _COMMENTS:
            break
        after = max(node.end_byte, after + 1)
    start = data.rfind(b"\n", 0, after) + 1
    return after - start <= _depth(data, first) and data[after:after + 1] not in _CLOSER_BYTES


@functools.lru_cache(maxsize=64)
def _dedent(width: int) -> re.Pattern[bytes]:
    """A line's start with code after at most ``width`` characters of indentation."""
    return re.compile(rb"^[ \t]{0,%d}(?=[^\s])" % width, re.M)


def _heads_broken_lines(tree: Any, data: bytes, hi: int, spans: Sequence[tuple[int, int]]) -> bool:
    """Does the fill's line head lines it leaves broken? They are the code lines after it indented deeper than it,
    and the first code line that is not, where it starts with a closer (``}``, ``})``, ``} else {``; a next
    statement's errors may be its own). A line the user is writing above a body (``func (d *DFA) get(pre`` +
    ``cedence)``, ``new AMO`` + ``scillator();`` above an object's fields) that does not open what its deeper lines
    need leaves an error in them or on their closer; or, where an outer block is open, its closer at the line's
    depth closes that block instead (``return null;`` where ``if (a) {`` stood: tree-sitter pairs the ``}`` with the
    function's ``{`` and reports the error at the document's end). The user's document parses up to the line
    (``clean_before``), so these are the line's. An error at the document's end is not counted by itself (the closer
    of a block the user has not closed yet). A line indented deeper than the code line above it, where that line
    opens no bracket at its end, continues it or sits in a block whose header is missing (``ctx.lineTo(-size, size);``
    under ``ctx[opName]();``, where ``if (stroke) {`` stood): the lines it heads are those deeper than the line
    above. And the first line after it that is shallower than it may not start with a closer whose opener is on a
    line shallower than that closer's (``_dedent_closes_from_above``): a line at the depth of a block's body, below
    that block's own header's place, leaves the block's closer closing an outer one."""
    if data[hi - 1:hi] == b"\n":
        hi -= 1   # a whole line's fill ends with its line break: its line is the one it writes
    first = data.rfind(b"\n", 0, hi) + 1
    end = data.find(b"\n", hi)
    if end < 0 or not spans:
        return False
    own = width = _depth(data, first)
    above = _code_line_above(tree, data, first)
    if above is not None and above[0] < width and not above[1].endswith(_OPENER_BYTES):
        width = above[0]   # the line continues the one above (or sits in a block whose header is missing)
    return _headed_lines_broken(tree, data, end, width, spans) or _dedent_closes_from_above(tree, data, end, own)


def _headed_lines_broken(tree: Any, data: bytes, end: int, width: int, spans: Sequence[tuple[int, int]]) -> bool:
    """Has an error of ``spans`` started in the code lines after ``end`` indented deeper than ``width``, or on the
    first line that is not where it starts with a closer, or is that closer, at ``width``, paired from above?"""
    dedent = _dedent(width).search(data, end + 1)
    if dedent is None or not data[end + 1:dedent.start()].strip():
        return False   # no line after it is deeper (the first code after it is judged by ``_on_the_line``)
    at = dedent.end()
    if data[at:at + 1] not in _CLOSER_BYTES:
        return any(end < s < dedent.start() for s, _ in spans)   # the next statement: its errors may be its own
    stop = data.find(b"\n", at)
    stop = len(data) if stop < 0 else stop
    return any(end < s < stop and s < len(data) for s, _ in spans) \
        or at - dedent.start() == width and _closes_from_above(tree, data, at, width)


def _dedent_closes_from_above(tree: Any, data: bytes, end: int, depth: int) -> bool:
    """Is the first code line after ``end`` indented less than ``depth`` a closer that tree-sitter pairs with an
    opener on a line shallower than the closer's own (``    },`` closing ``  blockExplorers: {`` two lines up, under
    ``      decimals: 18,`` written where ``    default: {`` stood: the block the line should open is missing)?"""
    dedent = _dedent(depth - 1).search(data, end + 1) if depth else None
    if dedent is None:
        return False
    at = dedent.end()
    return data[at:at + 1] in _CLOSER_BYTES and _closes_from_above(tree, data, at, at - dedent.start())


def _code_line_above(tree: Any, data: bytes, first: int) -> tuple[int, bytes] | None:
    """The depth and the code of the nearest line above the line at ``first`` that has code (not blank, not a
    comment), without a comment at its end (``if (a) { // why``). None at the document's start."""
    end = first - 1
    while end > 0:
        start = data.rfind(b"\n", 0, end) + 1
        at = start + _depth(data, start)
        code = data[at:end].rstrip()
        node = tree.root_node.descendant_for_byte_range(at, at + 1) if code else None
        if code and (node is None or node.type not in _COMMENTS):
            last = tree.root_node.descendant_for_byte_range(at + len(code) - 1, at + len(code))
            if last is not None and last.type in _COMMENTS and last.start_byte > at:
                code = data[at:last.start_byte].rstrip()
            return at - start, code
        end = start - 1
    return None


def _closes_from_above(tree: Any, data: bytes, at: int, width: int) -> bool:
    """Is the closer at ``at`` paired with an opener on a line indented less than ``width``, its own line's depth?"""
    node = tree.root_node.descendant_for_byte_range(at, at + 1)
    parent = None if node is None else node.parent
    if parent is None or parent.type == "ERROR":
        return False
    opener = next((c.start_byte for c in parent.children
                   if len(c.type) == 1 and c.type in _OPENERS and c.start_byte < at), parent.start_byte)
    return _depth(data, data.rfind(b"\n", 0, opener) + 1) < width


def baseline_errors(spec: LanguageSpec, window: Window, original_middle: str) -> int | None:
    """Errors in the window as the user has it; ``None`` when the language has no grammar."""
    tree = parse(spec, window.prefix + original_middle + window.suffix)
    return None if tree is None else error_count(tree)


def errors_in(spec: LanguageSpec, source: str) -> int:
    """ERROR and MISSING nodes when ``source`` is parsed (0 without a grammar)."""
    return error_count(parse(spec, source))


def parses(spec: LanguageSpec, window: Window, fill: str, baseline: int | None) -> bool:
    """No new ERROR/MISSING nodes in the window with the fill (compared with the baseline), and none
    touching the fill itself: a fill must not carry an error the document already had elsewhere. An error
    that starts where the fill ends, over the code after it, is the fill's too: ``if (|) {`` (already an error,
    the condition is missing) filled with ``x > 0)`` leaves the user's own ``)`` as the one error, one for one.
    (Where that code was broken before the fill, or the window is cut from what the fill needs, the whole
    document's check, ``document_parses``, decides: ``infill._first_valid``.)"""
    if baseline is None:
        return True
    tree = parse(spec, window.prefix + fill + window.suffix)
    if tree is None:
        return True
    spans = error_spans(tree)
    lo = len(window.prefix.encode("utf-8", "surrogatepass"))
    hi = lo + len(fill.encode("utf-8", "surrogatepass"))
    return len(spans) <= baseline and not any(start < max(hi, lo + 1) and end > lo or start == hi < end
                                              for start, end in spans)


def fixes_error(spec: LanguageSpec, prefix: str, fill: str, suffix: str, baseline: int) -> bool:
    """A syntax fix: fewer errors than ``baseline``, and none left inside (or at the edges of) the fill."""
    tree = parse(spec, prefix + fill + suffix)
    if tree is None or error_count(tree) >= baseline:
        return False
    lo = len(prefix.encode("utf-8", "surrogatepass"))
    hi = lo + len(fill.encode("utf-8", "surrogatepass"))
    return not any(s < hi and e > lo or s == e and lo <= s <= hi for s, e in error_spans(tree, nested=False))


def choose(spec: LanguageSpec, text: str, win: Window, blanks: Sequence[Hole], options: Sequence[Sequence[str]],
           validate: bool) -> tuple[list[int | None], int]:
    """For a multi-hole fill: per hole, in order, the index of the longest option (``options[i]``, longest
    first) that adds no parse error (``None``: the hole keeps its text); and how many were rejected."""
    if not validate or not has_grammar(spec):
        return [0 if opts else None for opts in options], 0
    chosen: list[int | None] = [None] * len(blanks)

    def errors(trial: list[int | None]) -> int:
        return errors_in(spec, _assemble(text, win, blanks, [None if k is None else options[i][k]
                                                            for i, k in enumerate(trial)]))
    baseline = errors(chosen)
    rejected = 0
    for i, opts in enumerate(options):
        for k in range(len(opts)):
            trial = chosen[:i] + [k] + chosen[i + 1:]
            if errors(trial) <= baseline:
                chosen = trial
                break
            rejected += 1
    return chosen, rejected


def _assemble(text: str, win: Window, blanks: Sequence[Hole], chosen: Sequence[str | None]) -> str:
    parts, pos = [win.prefix], blanks[0].start
    for b, option in zip(blanks, chosen):
        parts.append(text[pos:b.start])
        parts.append(b.lead + option + b.tail if option is not None else text[b.start:b.end])
        pos = b.end
    parts.append(win.suffix)
    return "".join(parts)


def edits_keep_parsing(spec: LanguageSpec, text: str, fills: Sequence[HoleFill], fixing: bool = False,
                       tick: Callable[[], None] | None = None) -> bool:
    """A code action's edits, checked like an inline fill but on the whole edited document: for Python (under
    the size limit) its own compiler, which must accept the document, or stop at the user's own error (moved by
    the edits) or, for a fix, past every edit; then, unless Python accepts it outright, the whole document's
    tree-sitter errors must not grow (for a fix: must shrink); in Go and Rust, each edit's returns must fit the
    function around it (engine/returns.py). The edited document's tree is the user's reparsed incrementally
    (``_reparsed``: at 5 MB about 0.1 s where a whole parse takes 1.2-1.5 s), the user's tree the one the action's
    survey made (``languages.document_tree``), and only the nodes at the edits are walked for comments. ``tick``:
    called while the documents are parsed and their trees walked (the job's cancellation)."""
    if any(invents_replacement(f.text, text) for f in fills):
        return False  # the model's bytes that were no UTF-8, or a lone surrogate it read as U+FFFD: a character
        #              the user never wrote (a changed line's lone surrogates are given back: actions.minimal_edits)
    edited, spans = _edited(text, fills)
    old_tree = parse(spec, text, tick)
    if old_tree is not None:
        data, placed = edited.encode("utf-8", "surrogatepass"), _placed(text, fills)
        new_tree = _reparsed(spec, old_tree, text, data, placed, tick)
        if _comments_out_code(spec, text, data, placed, tick, old_tree, new_tree):
            return False
    if tick is not None:   # between the steps that each walk or parse the whole document
        tick()
    if spec.name == "python" and len(edited) <= _PYTHON_CHECK_LIMIT:
        error = _first_error(edited)
        if error is None:
            return True
        original = _first_error(text)
        if original is None:
            return False
        moved = _moved_line(original[0], text, fills)
        same = moved is not None and (moved, original[1]) == error
        past = fixing and all(error[0] > last + 1 for _, last in spans)
        if not (same or past) or _breaks_region(text, fills):
            return False
    if old_tree is None or new_tree is None:
        return True
    before, after = error_count(old_tree), error_count(new_tree)
    if spec.name == "python":  # Python stopped at the user's error: an opener without its body is one more
        before, after = before + _empty_blocks(old_tree, tick), after + _empty_blocks(new_tree, tick)
    if after > before or fixing and after == before:
        return False
    # as in the window check: no error touching an edit, unless one touched what it replaced already
    old_errors, new_errors = error_spans(old_tree, nested=False), error_spans(new_tree, nested=False)
    for _, lo, hi, new_lo, new_hi in placed:   # every edit moves the ones after it, a skipped one too
        if any(s <= hi and e >= lo for s, e in old_errors):
            continue
        if any(s <= new_hi and e >= new_lo for s, e in new_errors):
            return False
    for f in fills:
        fits = returns_check(spec, text, f.start, f.end)
        if fits is not None and not fits(f.text):
            return False
    return True


Placed = tuple[HoleFill, int, int, int, int]   # an edit, its byte range in the document and in the edited one


def _placed(text: str, fills: Sequence[HoleFill]) -> list[Placed]:
    """The edits in document order, each with its byte range in ``text`` and in the edited document (moved by the
    growth of every edit before it). ``text`` is encoded once in all, piece by piece."""
    out: list[Placed] = []
    byte = shift = at = 0
    for f in sorted(fills, key=lambda f: f.start):
        lo = byte + len(text[at:f.start].encode("utf-8", "surrogatepass"))
        hi = lo + len(text[f.start:f.end].encode("utf-8", "surrogatepass"))
        new_hi = lo + shift + len(f.text.encode("utf-8", "surrogatepass"))
        out.append((f, lo, hi, lo + shift, new_hi))
        shift = new_hi - hi
        byte, at = hi, f.end
    return out


def _reparsed(spec: LanguageSpec, old_tree: Any, text: str, data: bytes, placed: Sequence[Placed],
              tick: Callable[[], None] | None = None) -> Any:
    """The tree of ``text`` edited (``data``, its UTF-8), reparsed incrementally: a copy of the user's
    ``old_tree`` edited by each edit in document order (``Tree.edit``, at the edit's place in the document the
    edits before it made), then ``parser.parse(data, that tree)``. Tree-sitter reuses the subtrees the edits left
    alone and gives the tree a whole parse gives: the verdict is the same (tests compare them), in a fraction of
    the time (at 5 MB about 0.1 s, a whole parse 1.2-1.5 s)."""
    tree = old_tree.copy()
    for f, lo, hi, new_lo, new_hi in placed:
        # the document before this edit is ``data`` up to here: the edits before it are made
        start = (data.count(b"\n", 0, new_lo), new_lo - (data.rfind(b"\n", 0, new_lo) + 1))
        old = text[f.start:f.end].encode("utf-8", "surrogatepass")
        tree.edit(start_byte=new_lo, old_end_byte=new_lo + hi - lo, new_end_byte=new_hi, start_point=start,
                  old_end_point=_advanced(start, old), new_end_point=_advanced(start, data[new_lo:new_hi]))
    return _parse_anew(spec, data, tree, tick)


def _advanced(point: tuple[int, int], data: bytes) -> tuple[int, int]:
    """The (row, byte column) after ``data`` written from ``point``."""
    rows = data.count(b"\n")
    return (point[0] + rows, len(data) - data.rfind(b"\n") - 1) if rows else (point[0], point[1] + len(data))


def _breaks_region(text: str, fills: Sequence[HoleFill]) -> bool:
    """Python stopped at the user's error: does an edit stop the code around it compiling by itself
    (``python_region``), with the other edits inside that code?"""
    for f in fills:
        region = python_region(text, f.start, f.end)
        if region is None:
            continue
        lo, hi, head = region
        inside = [g for g in fills if lo <= g.start and g.end <= hi]
        if any(g.start < hi and g.end > lo for g in fills if g not in inside):
            continue   # an edit runs over the region's edge: not judged here
        edited, _ = _edited(text[lo:hi], [HoleFill(g.start - lo, g.end - lo, g.text) for g in inside])
        if _region_error(head + edited, head) is not None:
            return True
    return False


_TICK_NODES = 4096   # nodes walked between two ticks


# The nodes a Python ``block`` can be under (tree-sitter-python's grammar.js: a block is a compound statement's
# ``_suite``, or a ``match`` statement's body; compound statements are statements of the module or of a block, a
# decorated definition's definition, an ``if``'s, a loop's or a ``try``'s clauses), and any node holding an error
# (an ERROR node may hold anything).
_BLOCK_HOLDERS = frozenset({
    "module", "block", "decorated_definition", "function_definition", "class_definition", "if_statement",
    "elif_clause", "else_clause", "for_statement", "while_statement", "try_statement", "except_clause",
    "except_group_clause", "finally_clause", "with_statement", "match_statement", "case_clause"})


def _empty_blocks(tree: Any, tick: Callable[[], None] | None = None) -> int:
    """Python blocks without a statement (``def f():`` with nothing under it): tree-sitter takes them, Python does
    not. Only the nodes a block can be under are opened (``_BLOCK_HOLDERS``, and those holding an error): a
    statement's expressions, most of a tree's nodes, are not walked (at 5 MB, 42,000 nodes of 860,000: 0.06 s where
    the whole walk took 0.26-0.9 s, twice for each edit a code action checks). ``tick``: called every ``_TICK_NODES``
    nodes looked at."""
    count, stack, walked = 0, [tree.root_node], 0
    while stack:
        for node in stack.pop().children:
            walked += 1
            if tick is not None and walked % _TICK_NODES == 0:
                tick()
            if node.type in _BLOCK_HOLDERS or node.has_error:
                if node.type == "block" and node.named_child_count == 0:
                    count += 1
                stack.append(node)
    return count


def reopens_closer(spec: LanguageSpec, prefix: str, fill: str, suffix: str) -> bool:
    """Does a cursor fill close the bracket that the code after the cursor closes, leaving the user's closer as
    text? ``${|}`` in a template filled with ``base}.{base}.{`` parses (the user's ``}`` is the template's text
    now, after a ``{`` of the fill's), and so would any fill that ends a string or comment the user's closer
    then falls in. The first character after the cursor on its line, where it is a closing bracket of the
    user's code, must still be one with the fill."""
    rest = suffix.split("\n", 1)[0]
    at = len(rest) - len(rest.lstrip(" \t"))
    if rest[at:at + 1] not in tuple(_CLOSERS):
        return False
    closer = rest[at]

    def token_at(source: str, offset: int) -> str | None:
        tree = parse(spec, source)
        if tree is None:
            return None
        byte = len(source[:offset].encode("utf-8", "surrogatepass"))
        node = tree.root_node.descendant_for_byte_range(byte, byte + 1)
        return None if node is None else node.type

    if token_at(prefix + suffix, len(prefix) + at) != closer:
        return False   # not a bracket of the user's code (in a string, a comment): nothing to keep
    return token_at(prefix + fill + suffix, len(prefix) + len(fill) + at) != closer


def repeats_neighbour(prefix: str, fill: str, suffix: str, after_next: bool = True, kept: str | None = None) -> bool:
    """Does a fill make a line of code a copy of the code line next to it? ``self.status = status`` twice, a line
    inserted before the same line, a fill that repeats its own line, a loop or impl header copied into its own
    body, an ``if``'s body that is the line after the ``if`` (``return width`` before the function's ``return
    width``). A line the fill writes in (its first and last lines with the user's code beside the cursor, the lines
    between) may not repeat the nearest code line above or below it, at any indentation: in real code a line equals
    its neighbouring code line at another indentation about 3 times in 100,000 (a ``try:`` in a ``try:``, a ``for
    {`` in a ``for {``), while a real server on third-party files (click, rich, chalk, body-parser, query-core, log)
    offered such fills at 6 of 40 trial spots, none right. Lines without a letter or digit (``}``, ``)``) may
    repeat, and rows of data at the same indentation (``_data_row``: literals and a comma, ``0,``, ``None,``), but
    not a lone name (``state,`` twice in a destructuring, ``stringReplaceAll,`` twice in an import: an error; in real
    code 0.3% of such rows repeat), an entry with its key or an expression and a comma.

    Nor may a line the fill writes repeat the code line after next (``j.m.Lock()``, ``x := 1``, ``j.m.Lock()``
    again where ``Unlock`` belongs; ``row.index = rowIndex;`` two lines below for ``row.depth = depth;``): on the
    development holes (extra-dev, whole and typed lines, holes 1-400) 13 offered fills did, one of them right
    (``self.start += 1;`` twice in a lexer); on holes 401-900, 35, five of them right. In real code 0.06% to 0.3%
    of lines equal the code line after next. Lines that may repeat it: those the rule above lets repeat,
    comments, decorators and attributes (``@overload``, ``#[inline]``), and lines of keywords and literals alone
    (``return``, ``pass``, ``else:``, ``return None``: a tenth of the real repeats). ``after_next`` off: the
    nearest code line only (a rewrite, whose lines include the user's own, unchanged).

    ``kept``: the text a rewrite's ``fill`` replaces. The lines of it the fill gives back as they were (as
    ``actions.minimal_edits`` keeps them) are the user's, not the fill's: two equal lines the user wrote side by side
    (``self.advance()`` twice, ``next(reader)`` twice) refused every rewrite that kept them."""
    code = _code_lines(prefix, fill, suffix, kept)
    for (a, wa), (b, wb) in zip(code, code[1:]):
        same = a.strip()
        if not (wa or wb) or same != b.strip() or not any(ch.isalnum() for ch in same):
            continue
        if a == b and _data_row(same):
            continue   # a row of data, at the same indentation
        return True
    # the code line after next: ``x = foo(a)``, ``y = 1``, then the fill's ``x = foo(a)`` again
    for (a, wa), (b, wb) in zip(code, code[2:] if after_next else []):
        same = a.strip()
        if not (wa or wb) or same != b.strip() or not any(ch.isalnum() for ch in same) \
                or _data_row(same) or same.startswith(_NOTE_LEADS) \
                or set(_WORD.findall(same)) <= _PLAIN_WORDS:
            continue
        return True
    return False


def jumps_over_code(spec: LanguageSpec, prefix: str, fill: str, suffix: str) -> bool:
    """Does a fill end with a jump (``return``, ``raise``/``throw``, ``break``, ``continue``, Go's ``goto`` and
    ``panic``, Rust's ``panic!``) that the user's next code line follows in the same block, never to run? The next
    code line after the fill's last line (blank lines and comments skipped) at the same indentation makes it dead
    code: ``return undefined`` offered before the function's own ``return sign * ...``. Only a jump the fill writes
    whole on a line of its own (the user typing ``return`` chose it), ended there (no open bracket, no operator
    going on); the lines that may follow one: a closer, ``case``/``default``, ``else``/``except``/``catch``, a label,
    a declaration hoisted above it (a JavaScript ``function``, a Rust item)."""
    jump = _JUMP_LEAD.get(spec.name)
    head = prefix[prefix.rfind("\n") + 1:]
    if jump is None or head.strip() or not fill.strip():
        return False
    line = (head + fill).rstrip("\r\n").split("\n")[-1]
    code = line.strip()
    if not jump.match(code) or code.endswith(_GOES_ON) or \
            sum(code.count(c) for c in "([{") > sum(code.count(c) for c in ")]}"):
        return False
    if fill.endswith("\n"):
        after = suffix
    else:
        cut = suffix.find("\n")
        if suffix[:len(suffix) if cut < 0 else cut].strip():
            return False   # code after the fill on its line
        after = "" if cut < 0 else suffix[cut + 1:]
    indent = line[:len(line) - len(line.lstrip(" \t"))]
    for following in after.split("\n", _REPEAT_LOOK)[:_REPEAT_LOOK]:
        text = following.strip()
        if not text or text.startswith(_NOTE_LEADS[:-1]):
            continue
        return following[:len(following) - len(following.lstrip(" \t"))] == indent and \
            not _MAY_FOLLOW.match(text) and not (_HOISTED.get(spec.name) or _NOTHING).match(text)
    return False


_JUMP_LEAD = {
    "python": re.compile(r"(?:return|raise|continue|break)\b"),
    "go": re.compile(r"(?:return|continue|break|goto)\b|panic\("),
    "rust": re.compile(r"(?:return|continue|break)\b|(?:panic|unreachable)!"),
    "javascript": re.compile(r"(?:return|throw|continue|break)\b"),
}
_JUMP_LEAD["typescript"] = _JUMP_LEAD["tsx"] = _JUMP_LEAD["javascript"]
_GOES_ON = ("\\", ",", "+", "-", "*", "/", "%", "&", "|", "^", "=", "(", ".", "?", ":", "<", ">")
_MAY_FOLLOW = re.compile(r"[)\]}]|(?:case|default|else|elif|except|finally|catch)\b|[A-Za-z_]\w*:(?!:)")
_HOISTED = {
    "javascript": re.compile(r"(?:async\s+)?function\b"),
    "typescript": re.compile(r"(?:async\s+)?function\b|(?:type|interface)\s"),
    "rust": re.compile(r"(?:pub(?:\([^)]*\))?\s+)?(?:fn|struct|enum|impl|use|mod|const|static|type|trait|"
                       r"macro_rules!)\b|#!?\["),
}
_HOISTED["tsx"] = _HOISTED["typescript"]
_NOTHING = re.compile(r"(?!)")


def ends_in_a_loose_comma(spec: LanguageSpec, prefix: str, fill: str, suffix: str) -> bool:
    """Does a fill end its line with a comma that belongs to no brackets, in an expression statement? In Python the
    line is then a tuple that does nothing (``num_channels_latents,``, ``self.index_names,``: the start of an
    unpacking, cut short; tree-sitter reads it as the left side of an assignment on the next line, Python does
    not); in JavaScript it joins the user's next line into one comma expression (``normal,`` before
    ``normals.set(...)``). Parsed in the filled text (the window's tree, already parsed for the fill's checks); a
    declaration's list (``let a = 1,`` over lines), a row of a literal, an argument list or an assignment's tuple
    (``shape = n,``) is no such comma."""
    if spec.name not in _LOOSE_COMMA or not fill.rstrip().endswith(","):
        return False
    tree = parse(spec, prefix + fill + suffix)
    if tree is None:
        return False
    at = len((prefix + fill.rstrip()).encode("utf-8", "surrogatepass")) - 1
    node = tree.root_node.descendant_for_byte_range(at, at + 1)
    if node is None or node.type != ",":
        return False
    node = node.parent
    while node is not None:
        if node.type == "expression_statement":
            return True
        if node.type in ("assignment", "augmented_assignment") and any(
                child.start_byte < at for child in node.children if child.type in ("=", "+=", ":")):
            return False   # the right side's tuple: ``shape = n,`` binds a tuple
        if node.type == "ERROR" or node.type in _STATEMENT_ENDS or any(
                child.type in _PAIRS for child in node.children if child.start_byte < at):
            return False   # in brackets (a literal's row, arguments), or a statement of another kind
        node = node.parent
    return False


def go_value_unused(spec: LanguageSpec, prefix: str, fill: str, suffix: str) -> bool:
    """Does a Go fill write an expression statement that is no call or receive (``"math"``, ``err``, ``x + 1`` on a
    line of its own)? It parses, and Go refuses it ("is not used"): only calls and receives may stand alone."""
    if spec.name != "go" or not fill.strip():
        return False
    tree = parse(spec, prefix + fill + suffix)
    if tree is None:
        return False
    lo = len(prefix.encode("utf-8", "surrogatepass"))
    hi = lo + len(fill.encode("utf-8", "surrogatepass"))
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.end_byte <= lo or node.start_byte >= hi or node.type == "ERROR":
            continue
        if node.type == "expression_statement" and lo <= node.start_byte and node.named_children:
            value = node.named_children[0]
            while value.type == "parenthesized_expression" and value.named_children:
                value = value.named_children[0]
            if value.type != "call_expression" and not (value.type == "unary_expression"
                                                        and (value.text or b"").startswith(b"<-")):
                return True
        stack.extend(node.children)
    return False


_LOOSE_COMMA = frozenset({"python", "javascript", "typescript", "tsx"})
_STATEMENT_ENDS = frozenset({"block", "module", "program", "statement_block", "lexical_declaration",
                             "variable_declaration", "for_statement", "for_in_statement", "import_statement",
                             "import_from_statement", "export_statement", "class_body", "global_statement",
                             "nonlocal_statement", "with_statement", "with_clause", "assert_statement",
                             "print_statement", "delete_statement", "return_statement", "type_alias_statement"})


def _code_lines(prefix: str, fill: str, suffix: str, kept: str | None = None) -> list[tuple[str, bool]]:
    """The non-blank lines around and of a fill (up to ``_REPEAT_LOOK`` each side), each with whether the fill
    writes text in it (a line of ``kept``, the text a rewrite replaces, given back unchanged is not written)."""
    head = prefix[prefix.rfind("\n") + 1:]
    cut = suffix.find("\n")
    tail = suffix if cut < 0 else suffix[:cut]
    parts = fill.split("\n")
    lines = (head + fill + tail).split("\n")
    written = [bool(p.strip()) for p in parts]   # the lines holding text of the fill's own
    if kept is not None:
        same = difflib.SequenceMatcher(None, kept.split("\n"), parts, autojunk=False).get_matching_blocks()
        for block in same:
            for j in range(block.b, block.b + block.size):
                written[j] = False
    if not any(written):
        return []
    before = prefix[:len(prefix) - len(head)].split("\n")[-_REPEAT_LOOK:]
    after = suffix[len(tail) + 1:].split("\n")[:_REPEAT_LOOK] if cut >= 0 else []
    return [(line.rstrip(), False) for line in before if line.strip()] + \
        [(line.rstrip(), w) for line, w in zip(lines, written) if line.strip()] + \
        [(line.rstrip(), False) for line in after if line.strip()]


def _data_row(row: str) -> bool:
    """Is ``row`` (stripped) a row of data: literals and the comma after them (``0,``, ``None,``, ``0x1f, 0x00,``,
    ``[1, -2],``, ``"a",``)? Not a lone name (``state,`` twice in a destructuring or an import), an entry with its
    key (``new_state: state,`` twice: a key given twice) or an expression (``env!("CARGO_PKG_NAME"),`` twice in an
    argument list): the action-safety run found a real server offering those three, each a copy of the row above."""
    if not row.endswith(","):
        return False
    rest = _NUMBER.sub(" ", _STRING.sub(" ", row))
    return all(word in _LITERAL_NAMES for word in _WORD.findall(rest)) and \
        not _NOT_DATA.search(_WORD.sub(" ", rest))


_STRING = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'")
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:0[xXoObB][0-9a-fA-F_]+|\d[\d_]*(?:\.\d*)?(?:[eE][-+]?\d+)?)\w*")
_NOT_DATA = re.compile(r"[^\s\[\](){},]")


_LITERAL_NAMES = frozenset({"None", "True", "False", "true", "false", "null", "nil", "undefined", "NULL", "nullptr",
                            "NaN", "Infinity"})
# lines that may repeat the code line after next: comments, decorators and attributes (``@overload``,
# ``#[inline]``), and lines of keywords and literals alone (``return``, ``pass``, ``else:``, ``return None``)
_NOTE_LEADS = ("#", "//", "/*", "*", "@")
_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_PLAIN_WORDS = _LITERAL_NAMES | {"return", "pass", "break", "continue", "else", "try", "finally", "default",
                                 "do", "yield", "raise", "throw", "end", "loop"}
_REPEAT_LOOK = 40   # lines each side searched for the nearest code line (a run of blank lines or more: no neighbour)


def regroups_brackets(spec: LanguageSpec, prefix: str, fill: str, suffix: str) -> bool:
    """Does a cursor fill close a bracket the user opened before the cursor and closed after it, and open
    another that the user's closer then closes? ``if (xs.length) {|`` ... ``}`` filled with ``xs}\n\nops = {``
    parses: the if's body is ``{xs}`` and the user's ``}`` closes an object now; ``foo(|)`` filled with
    ``a), bar(b``. Every bracket pair around the cursor in the user's code (both brackets real tokens) must
    still pair the same two brackets with the fill. Only where the user's code around the cursor parses
    without errors."""
    before = parse(spec, prefix + suffix)
    if before is None or before.root_node.has_error:
        return False   # the user's code is mid-edit (``t.Logf(|`` unclosed): its brackets pair by the parser's
        #                recovery, not the user's, and a fill that closes them is what the user is typing
    at = len(prefix.encode("utf-8", "surrogatepass"))
    pairs = _pairs_around(before, at)
    if not pairs:
        return False
    after = parse(spec, prefix + fill + suffix)
    if after is None:
        return False
    shift = len(fill.encode("utf-8", "surrogatepass"))
    for opener, closer in pairs:
        token = after.root_node.descendant_for_byte_range(opener, opener + 1)
        both = None if token is None or token.parent is None else _brackets(token.parent)
        if both is None or both[0].start_byte != opener or both[1].start_byte != closer + shift:
            return True
    return False


def _brackets(node: Any) -> tuple[Any, Any] | None:
    """A node's opening bracket (its first child that is one: ``v[i]``'s ``[``) and closing one (its last child,
    the matching bracket), both real tokens; None for an ERROR node or a node without."""
    if node.type == "ERROR" or node.child_count < 2:
        return None
    first = next((c for c in node.children if c.type in _PAIRS), None)
    last = node.children[-1]
    if first is None or last.type != _PAIRS[first.type] or first.is_missing or last.is_missing:
        return None
    return first, last


def _pairs_around(tree: Any, at: int) -> list[tuple[int, int]]:
    """The (opener, closer) start bytes of the bracketed nodes whose opener ends at or before ``at`` and whose
    closer starts at or after it."""
    out = []
    node = tree.root_node.descendant_for_byte_range(at, at)
    while node is not None:
        both = _brackets(node)
        if both is not None and both[0].end_byte <= at <= both[1].start_byte:
            out.append((both[0].start_byte, both[1].start_byte))
        node = node.parent
    return out


def comments_out_rest(spec: LanguageSpec, prefix: str, fill: str, suffix: str) -> bool:
    """Does a cursor fill start a comment that runs over the code after it (``return |+ a`` filled with ``1  # one``
    leaves ``return 1  # one + a``, which parses)? Judged on the window; the code after the cursor may run into a
    comment only where it was one already."""
    if not any(m in fill for m in ("#", "//", "/*", "--")) or not suffix.split("\n", 1)[0].strip():
        return False
    text, edited = prefix + suffix, prefix + fill + suffix
    new_tree = parse(spec, edited)
    if new_tree is None:
        return False
    at = len(prefix)
    return _comments_out_code(spec, text, edited.encode("utf-8", "surrogatepass"),
                              _placed(text, [HoleFill(at, at, fill)]), None, None, new_tree)


def _comments_out_code(spec: LanguageSpec, text: str, data: bytes, placed: Sequence[Placed],
                       tick: Callable[[], None] | None, old_tree: Any, new_tree: Any) -> bool:
    """Does a comment that an edit starts run on over code after the edit (``return __ + a`` filled with ``#``
    leaves ``return # + a``, which parses)? Text after the edit that was a comment already may be run into.
    ``data``: the edited document's UTF-8, ``new_tree`` its tree; ``old_tree``: ``text``'s (None: parsed when
    needed). ``tick``: ``parse``'s."""
    for _, _lo, hi, new_lo, new_hi in placed:
        for _, e in _comments_starting(new_tree, new_lo, new_hi):
            if not new_hi < e:
                continue
            run = data[new_hi:e]
            gap = len(run) - len(run.lstrip())
            if gap == len(run):
                continue  # only spaces after the edit
            if old_tree is None:
                old_tree = parse(spec, text, tick)
            if old_tree is not None:  # the same text in the user's document: was it a comment there?
                b = hi + gap
                inside = old_tree.root_node.descendant_for_byte_range(b, b + 1)
                while inside is not None and not inside.type.endswith("comment"):
                    inside = inside.parent
                if inside is not None:
                    continue
            return True
    return False


def _comments_starting(tree: Any, lo: int, hi: int) -> list[tuple[int, int]]:
    """The byte ranges of the comments (the outermost: a Rust doc comment's line comment) that start in ``[lo,
    hi)``. Only the nodes over that range are visited (a walk of the whole tree took 1.3-2 s at 5 MB): in each, the
    first child ending after ``lo`` is found by bisection (a document's top level has tens of thousands), then
    those after it that start before ``hi``."""
    found: list[tuple[int, int]] = []
    stack = [tree.root_node] if hi > lo else []
    while stack:
        node = stack.pop()
        if node.type.endswith("comment"):
            if node.start_byte >= lo:
                found.append((node.start_byte, node.end_byte))
            continue
        first, last = 0, node.child_count
        while first < last:
            middle = (first + last) // 2
            if node.child(middle).end_byte > lo:
                last = middle
            else:
                first = middle + 1
        for i in range(first, node.child_count):
            child = node.child(i)
            if child.start_byte >= hi:
                break
            stack.append(child)
    return found


def _edited(text: str, fills: Sequence[HoleFill]) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with ``fills`` applied, and each fill's first and last line in it (1-based)."""
    out, spans, pos, shift = [], [], 0, 0
    for f in sorted(fills, key=lambda f: f.start):
        first = text.count("\n", 0, f.start) + 1 + shift
        spans.append((first, first + f.text.count("\n")))
        shift += f.text.count("\n") - text.count("\n", f.start, f.end)
        out += [text[pos:f.start], f.text]
        pos = f.end
    out.append(text[pos:])
    return "".join(out), spans


def _moved_line(line: int, text: str, fills: Sequence[HoleFill]) -> int | None:
    """Where the original ``line`` (1-based) is after the fills; None when a fill replaced it."""
    moved = line
    for f in fills:
        first = text.count("\n", 0, f.start) + 1
        last = first + text.count("\n", f.start, f.end)
        if first <= line <= last:
            return None
        if last < line:
            moved += f.text.count("\n") - (last - first)
    return moved


# A model's stutter: the denoiser, unsure of a long name, writes the same piece again and again
# (``locket.lock_lock_lock_lock_lock_lock``, ``abc_abc_abc_abc``, ``hookhookhook``, ``max___``, ``y, y, y, y, y``,
# ``the the the the``), which real code rarely does: on the corpus's held-out files 198 of 531,610 lines (data rows
# ``any, any, any, any``, ``"\x00\x00..."``, ``"foofoofoo"``), and 8 of 6,085 whole function bodies with the rest of
# their file as the document (``k, k, k, k`` in a shape, ``DEADBEEFDEADBEEF...``, ``obj___all__``)
_WORD_TOKEN = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*|[0-9][A-Za-z0-9_.]*|\\\w+|%\w+|\S")   # `\x00`, `%v`: no name
_STUTTER_PIECE = re.compile(r"([A-Za-z]{2,})(?:_*\1){2}", re.IGNORECASE)   # a piece 3 times in a row
_UNDERSCORES = re.compile(r"[A-Za-z0-9]_{3,}|_{3,}[A-Za-z0-9]")     # `___` in a name: `max___`, `a___b`
_TOKEN_REPEATS = 4        # an n-gram of tokens this many times in a row
_TOKEN_NGRAM = 4          # up to this many tokens
_PLAIN_VALUES = frozenset({"None", "True", "False", "true", "false", "null", "nil", "undefined", "self", "this",
                           "Self", "_"})


def degenerate(fill: str, document: str = "") -> str | None:
    """Why ``fill`` is the model's stutter rather than code, or ``None``. A name with one piece three times in a row
    (``lock_lock_lock``, ``hookhookhook``; a piece of two letters at least, not one letter repeated: ``XXXXXX``,
    ``aaaa`` stay) or with a run of three underscores or more (``max___``; ``__init__``, ``_x``, ``__`` stay); the
    same run of one to four tokens, a name among them, four times in a row (``y, y, y, y``, ``the the the the``;
    ``0, 0, 0, 0`` and ``None, None, None, None`` stay: no name). What the user's ``document`` already has (the
    name, or the run twice) is not the model's invention."""
    for m in _WORD_TOKEN.finditer(fill):
        word = m.group()
        if not (word[0].isalpha() or word[0] in "_$"):
            continue
        piece = next((p.group(1) for p in _STUTTER_PIECE.finditer(word) if len(set(p.group(1).lower())) > 1), None)
        if piece is not None and word not in document:
            return f"{word!r} repeats {piece!r}"
        if _UNDERSCORES.search(word) and word not in document:
            return f"{word!r} has a run of underscores"
    tokens = [(m.group(), m.start(), m.end()) for m in _WORD_TOKEN.finditer(fill)]
    words = [t for t, _, _ in tokens]
    for n in range(1, _TOKEN_NGRAM + 1):
        for i in range(len(words) - n * _TOKEN_REPEATS + 1):
            gram = words[i:i + n]
            if not any(_is_name(t) for t in gram):
                continue
            if all(words[i + k * n:i + (k + 1) * n] == gram for k in range(1, _TOKEN_REPEATS)):
                twice = fill[tokens[i][1]:tokens[i + 2 * n - 1][2]]
                if twice not in document:
                    return f"{' '.join(gram)!r} {_TOKEN_REPEATS} times in a row"
    return None


def _is_name(token: str) -> bool:
    return (token[0].isalpha() or token[0] in "_$") and token not in _PLAIN_VALUES


_EMPTY_COMMENT = re.compile(r"(?:#+|//[/!]*|/\*+\s*\*+/)")


def empty_comment(fill: str) -> bool:
    """Is every line ``fill`` writes a comment marker with nothing after it (``///``, ``#``, ``//``)? Such a line says
    nothing and runs nothing: never a fill (the embedded model wrote ``///`` in a Rust function's body)."""
    lines = [line.strip() for line in fill.split("\n") if line.strip()]
    return bool(lines) and all(_EMPTY_COMMENT.fullmatch(line) for line in lines)


_COMMENT_LINE = {":": re.compile(r"#"), "{": re.compile("|".join(map(re.escape, COMMENT_STARTS)))}
# the same for the languages filled as plain text that a grammar checks (``languages.check_spec``), by its name
_PLAIN_COMMENT_LINE = {"c": _COMMENT_LINE["{"], "cpp": _COMMENT_LINE["{"], "java": _COMMENT_LINE["{"],
                       "ruby": re.compile(r"#|=begin"), "perl": re.compile(r"#"), "lua": re.compile(r"--")}


def comment_only(spec: LanguageSpec, prefix: str, fill: str, suffix: str, check: LanguageSpec | None = None) -> bool:
    """Does ``fill`` (what the cursor's line gets: no code typed before it on the line) write a comment and nothing
    else, where neither the nearest line above the cursor's line nor the nearest below it is a comment? The
    embedded model's comments are the document's comments again or words of its own: on the development sets' holes
    not one of the 202 comment-only fills the engine considered was the line that was there (whole lines, typed
    lines and their ends, benchmarks/README.md). Inside a comment's lines (a line above or below is one) a comment is
    what the user writes: kept. ``check``: a plain-text language's check grammar (``languages.check_spec``), which
    reads the fill and the comment markers then."""
    marker = _COMMENT_LINE.get(spec.block_opener) if check is None else _PLAIN_COMMENT_LINE.get(check.name)
    if marker is None or not marker.match(fill.lstrip()) or prefix[prefix.rfind("\n") + 1:].strip():
        return False
    above = [line.strip() for line in prefix.split("\n")[:-1] if line.strip()]
    below = [line.strip() for line in suffix.split("\n")[1:] if line.strip()]
    if above and marker.match(above[-1]) or below and marker.match(below[0]):
        return False
    return writes_no_code(spec if check is None else check, fill)


# (Rust is not here: a ``mod tests`` block's ``use`` is indented and needed again, a module's imports are its own)
_IMPORT = {"python": re.compile(r"^(?:import|from[ \t]+\S+[ \t]+import)[ \t][^\n]*", re.M)}


def imported_again(spec: LanguageSpec, text: str, start: int) -> Callable[[str], bool] | None:
    """For a fill at ``start`` of ``text`` on an indented line (a function's body): a check that passes a fill unless
    its line is an import the document already has at its top level (``import numpy as np`` in a function of a module
    that imports it above): that import does nothing. On the development sets' holes (whole lines, typed ones, the
    stdlib's) 17 such fills were considered and none was the line that was there (the other indented imports: 2 of
    47). The document's imports are read only for a fill that is an indented import (a whole-text scan, 19 ms in a
    5.5 MB file, not done for every request). None for a language with no such imports."""
    pattern = _IMPORT.get(spec.name)
    if pattern is None:
        return None
    head = text[text.rfind("\n", 0, start) + 1:start]   # the line's indentation, and what is typed after it

    @functools.cache
    def top() -> frozenset[str]:
        return frozenset(m.group(0).rstrip() for m in pattern.finditer(text))

    def passes(fill: str) -> bool:
        line = head + fill
        code = line.strip()
        return "\n" in line.strip("\n") or not line[:1].isspace() or not pattern.fullmatch(code) or code not in top()
    return passes


_SELF_ASSIGN = re.compile(r"[ \t]*([A-Za-z_$][\w$]*(?:\.[A-Za-z_$#][\w$]*)*)[ \t]+=[ \t]+\1[ \t]*;?[ \t]*")


def assigns_itself(text: str, start: int) -> Callable[[str], bool]:
    """For a fill at ``start`` of ``text``: a check that passes a fill unless its line assigns a name (or an
    attribute path) to itself, ``out = out``, ``self.name = self.name``: a statement that does nothing (pylint's
    self-assigning-variable, ESLint's no-self-assign). A declaration that shadows (Rust's ``let x = x;``, Go's ``v :=
    v``) is not one. On the development sets' whole lines and the stdlib's, 53 such fills were considered, 20 were the
    engine's pick, none was right, and no hole's line is one. Not inside a call's or a list's lines (the code line
    above ends with ``(`` or ``,``), where ``x = x`` may be a keyword argument; and only with spaces around ``=``, as
    an assignment is written (a keyword argument is ``x=x``)."""
    line_start = text.rfind("\n", 0, start) + 1
    head = text[line_start:start]
    above = line_start   # the end of the code before the line (no copy of the text before it)
    while above > 0 and text[above - 1].isspace():
        above -= 1
    inside = text[above - 1:above] in ("(", ",")

    def passes(fill: str) -> bool:
        line = (head + fill).split("\n", 1)[0].rstrip("\r")
        return inside or _SELF_ASSIGN.fullmatch(line) is None
    return passes


PLAIN_CHECK_LIMIT = 150_000   # characters: a larger plain-text document's fills are not checked (a parse each)


def plain_syntax_check(check: LanguageSpec | None, text: str, start: int, end: int,
                       finish: bool = True) -> Callable[[str], bool] | None:
    """For a fill replacing ``text[start:end]`` in a language filled as plain text, with ``check`` its grammar to check
    with (``languages.check_spec``: C, C++, Java, Ruby, Lua, Perl): a check that passes a fill unless the document
    with it has more syntax errors than the user's, or one on or right after the fill's own text (the rule
    ``parses`` keeps for the languages with a grammar), or (with ``finish``: not a rewrite) the fill leaves the line
    as broken as the user had it (``_DocumentParses.finishes_line``: ``msg = "Specified pre|`` -> ``set;``, the
    string still open; ``clock_start = clo|`` -> ``ck_time_start(void)``, no ``;``; not where all that follows the
    cursor on its line is an editor's closers, ``printf(|)``, whose ``;`` no fill reaches). The document is parsed
    once, each filled one reparsed from its tree (``_DocumentParses``). No verdict (the fill passes) where an error
    of the user's that starts above the hole's line runs over it (C's recovery from an ``#if 0`` it cannot pair can
    cover the whole file), nor where an error over the fill also covers one of the user's errors away from the line:
    the grammar's recovery from theirs spread once the text changed (Java's, from a broken line 300 lines above),
    which no fill can mend. Otherwise an error of theirs elsewhere stays theirs, and the fill is judged. None
    without a ``check``, and for a document over ``PLAIN_CHECK_LIMIT`` (its first parse: 35 ms for Java's 227 KB
    ``Collections.java`` on this project's 2-core machine; under 1 ms for each fill after it)."""
    if check is None or len(text) > PLAIN_CHECK_LIMIT:
        return None
    document = _DocumentParses(check, text, start, end)

    @functools.cache
    def away() -> tuple[tuple[int, int], ...] | None:
        """The user's errors that start before the hole's line or after it (past the first code after it); None
        where one that starts above runs over the line: no verdict."""
        user = document.user
        if user is None:
            return None
        first = user.data.rfind(b"\n", 0, user.lo) + 1
        if any(s < first < e for s, e in user.errors):
            return None
        return tuple((s, e) for s, e in user.errors if not _on_the_line([(s, e)], user.data, user.lo, user.hi))

    def passes(fill: str) -> bool:
        elsewhere = away()
        if elsewhere is None:
            return True
        filled = document._filled(fill)
        user = document.user
        if filled is None or user is None:
            return True
        tree, _, lo, hi = filled
        shift = hi - user.hi
        moved = [(s, e) if s < user.lo else (s + shift, e + shift) for s, e in elsewhere]
        # an error of the filled document over the fill that also covers one of the user's away from it: the
        # grammar's recovery from theirs spread, not the fill's fault
        if any(s < max(hi, lo + 1) and e > lo and any(s < me and e > ms or s == ms for ms, me in moved)
               for s, e in error_spans(tree)):
            return True
        return document(fill, confirm=True) and (not finish or document.finishes_line(fill))

    return passes


def writes_no_code(spec: LanguageSpec, fill: str) -> bool:
    """Is ``fill`` comments alone (``#`` lines, ``// TODO:``)? A hole's fill that is writes nothing the code runs: no
    fill. A language without a grammar, or a fill its parser cannot read: no verdict (False). (A plain-text
    language's check grammar, ``languages.check_spec``, reads it too.)"""
    if not fill.strip() or grammar(spec.name) is None:
        return not fill.strip()
    tree = _parse_anew(spec, textwrap.dedent(fill))
    if tree is None:
        return False
    root = tree.root_node
    return not root.has_error and all(c.type in _COMMENTS for c in root.named_children)
