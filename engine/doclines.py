"""Lines the document already has, as fills for the rest of a line the user is typing.

Code repeats itself: the same call, assert, return or assignment appears again a few lines on. A weak model
seldom writes such a line exactly, but it can tell which of the document's lines fits the hole: each line
near the cursor that starts with the code typed on the cursor's line goes to the backend as a plan option
(``FillPlan.options``) and is scored on the fill's first forward (the probability of each of its tokens with
every slot still masked); the best one that validates joins the model's own fills as one more fill
(``HoleFill.copied``), and engine/confidence.py estimates it and ranks it against them. The lines of the
workspace's other files (``engine.worklines``) and the lines code often has (``engine.commonlines``) follow the
document's, each with a prior.

A line with code typed before the cursor, and nothing after it but the closing brackets and quotes an
editor puts there when the opener is typed (``f(|)``: a candidate must end with them), gets those options. On
the development holes (benchmarks/README.md, "Lines the document already has") they turned 4 right fills
offered of 1,900 typed holes into 149; inside an editor's closers, development exact match went from 2.5% to
19.4% (725 holes, "Inside an editor's closing brackets"). On an empty line the same lines did not help (37 right
fills offered at the bar either way); what does is its neighbours (``neighbour_options``): the lines seen right
after the code line above it or right before the code line below it, elsewhere in the document and in the
workspace's files. On the 1,900 whole-line development holes the engine's pick was right for 21 holes without
them and 333 with them (benchmarks/README.md, "An empty line's neighbours"). Which of them is the copy is decided
by a rank fitted on those holes (``neighbour_rank``: seen beside both, seen after the line above in this
document, its names near the cursor, a name the document lacks, its length, and the model's score): right line
first for 386 held-out holes against 335 ("Ranking an empty line's neighbours"). Parallel code counts as a sighting
too (``_analogies``): beside ``def iinfo(dtyp):``, the line after ``def finfo(dtyp):``; after ``if right is not
None:``, ``walk(right, visit)`` from ``walk(left, visit)`` after ``if left is not None:`` (the one changed name
changed back; or two names, each changed back): 389 -> 421 right fills offered on the 1,900 whole-line development
holes with one name, 465 -> 472 with two ("Parallel code"). Where a changed name differs in one of its words alone
(``clear_local_storage`` beside ``clear_session_storage``), that word changes in the line's other names too
(``localStorage`` -> ``sessionStorage``; ``_renamed``). A typed line gets those of its neighbours' lines that
start with the typed code first (``line_options``' ``pairs``): the engine's pick on the 1,900 typed development
holes, no bar, was right for 282 holes without them and 514 with them (cross-validated).
A word being typed inside an editor's closers (``f(err|)``) gets the text that follows the word where the document
has it (``word_options``: ``or.message`` from ``print(error.message)``), after those lines: on the 143 mid-word
development holes, 38 -> 49 right fills offered, 61 -> 88 offered (benchmarks/README.md, "A word being typed").
A line typed to its middle that no other line starts as (``x = self._pa|``) gets, last, the rest of each line nearby
that has an ending of the typed code at a word start (``tail_options``: ``used.set()`` from ``self._paused.set()``):
on the 1,603 development holes cut as the new-user trial cuts its lines, 569 -> 601 right fills offered
(benchmarks/README.md, "A line typed to its middle").
"""

from __future__ import annotations

import bisect
import collections
import math
import re
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from . import commonlines, worklines
from .commonlines import Table
from .context import Hole
from .context import indent_unit as _indent_unit
from .requests import HoleKind

MOST = 64          # candidates per hole, the nearest lines first
SPAN = 4000        # lines read on each side of the cursor: a huge file costs what an 8,000-line one does
LONGEST = 200      # characters: a longer line never fits a one-line hole's slots
CLOSERS = ")]}\"'`"  # after the cursor, only these (what editors insert as an opener is typed): still the line's rest
LINE_ENDS = CLOSERS + ",;"   # and these: the line's own end (``f(a, b|);``), kept while the middle of a line is retyped
BLOCK_ENDS = LINE_ENDS + ":{"   # and a block's opener at its header's end (``if len(it|):``, ``if (a|) {``)


def ends_line(tail: str) -> bool:
    """Is ``tail`` (the text after the cursor on its line, stripped) only the line's end: an editor's closers, the
    line's own ``;`` or ``,``, or a block's ``:`` or ``{`` after them (spaces between them allowed)? Then the line
    options apply (``line_options``, ``tail_options``): a candidate ends with it and stops before it."""
    return not tail.replace(" ", "").replace("\t", "").strip(BLOCK_ENDS)


def _line_rest(hole: Hole, rest_of_line: str) -> tuple[str, bool] | None:
    """For ``line_options`` and ``tail_options``: None unless ``hole`` is the rest of a line up to its end
    (``ends_line``); else that end (stripped) and whether a space comes before it after the cursor (an option then
    ends without one: ``f( a| )``, ``x| {``)."""
    tail = rest_of_line.strip()
    if hole.kind is not HoleKind.INLINE or hole.end != hole.start + len(hole.heal) or not ends_line(tail):
        return None
    return tail, bool(tail) and rest_of_line[:1] in (" ", "\t")


NEIGHBOURS_MOST = 16  # lines seen beside the neighbours per hole (``neighbour_options``, a typed line's ``pairs``)


DOCUMENT, WORKSPACE, COMMON = "document", "workspace", "common"   # where a candidate line comes from
NEIGHBOUR, BETWEEN = "neighbour", "between"   # seen after the line above or before the line below; seen beside both
WORD = "word"   # the rest of a word the cursor ends, or of the code after it, where the word appears (``word_options``)
PARAMETER = "parameter"   # a constructor's line that stores one of its parameters (``engine.paramlines``)
TAIL = "tail"   # the rest of a line that has the end of the typed code in it (``tail_options``)


class LineOptions(NamedTuple):
    """A hole's candidate lines (``FillPlan.options``), where each comes from (``DOCUMENT``, ``WORKSPACE`` or
    ``COMMON``) and, for each, None for a line of the document or a workspace or common line's prior (the log
    of its share of the files among the lines of its table with its start). An empty line's options
    (``neighbour_options``) also carry each line's ``ranks``: the part of its rank that needs no model
    (``neighbour_rank``; ``infill.copy_rank`` adds the model's score); other options have none."""

    texts: tuple[str, ...]
    priors: tuple[float | None, ...]
    sources: tuple[str, ...]
    ranks: tuple[float, ...] = ()


NONE = LineOptions((), (), ())


def joined(first: LineOptions, then: LineOptions) -> LineOptions:
    """``first``'s options, then those of ``then`` that ``first`` lacks (one kind of ranks only: an empty line's
    options have them, a typed line's do not, so options with ranks are joined only to options with ranks)."""
    if not then.texts:
        return first
    if not first.texts:
        return then
    assert bool(first.ranks) == bool(then.ranks)
    seen = set(first.texts)
    extra = [k for k, text in enumerate(then.texts) if text not in seen]
    return LineOptions(first.texts + tuple(then.texts[k] for k in extra),
                       first.priors + tuple(then.priors[k] for k in extra),
                       first.sources + tuple(then.sources[k] for k in extra),
                       first.ranks + tuple(then.ranks[k] for k in extra) if first.ranks else ())


def line_options(text: str, hole: Hole, rest_of_line: str, language: str | None = None,
                 workspace: Table | None = None,
                 pairs: tuple[str, worklines.Workspace | None] | None = None,
                 stored: Sequence[str] = ()) -> LineOptions:
    """The texts a fill of ``hole`` could take from the document's other lines, nearest line first, then from
    the lines of the ``workspace``'s other files (``engine.worklines``), then (with a ``language``) from the
    lines code often has (``engine.commonlines``), the most widespread first in both; each ends
    with a line break (the end of the line is scored too) and is the line's remainder from where the fill
    starts (a regenerated word fragment, ``hole.heal``, included), for a line whose code starts with the code
    typed on the cursor's line. Empty unless the hole is the rest of a line with code before the cursor and
    nothing after it but closing brackets and quotes (``CLOSERS``, as editors insert them when the opener is
    typed) and the line's own ``;`` or ``,``, or a block's ``:`` or ``{`` (``ends_line``: a word retyped in the
    middle of ``f(a, b);`` or of ``if len(items):``): then a candidate line must end with them, and its remainder
    stops before them (no line break; before a space the cursor already has, no trailing space). (Before the
    line's own ``;`` and ``,`` counted, the 647 development holes typed in the middle of a line, ``--typed
    --mid-line``, had none of these options, nor ``tail_options``, in JavaScript, TypeScript and Rust, whose lines
    end so: 2 of 151 Rust holes right, 13 of 141 JavaScript; with them 62 and 81, and 110 -> 276 in all. A block's
    header edited in its middle, ``--header``: 2 -> 302 of 632; benchmarks/README.md, "A line's own end after the
    cursor".)

    With ``pairs`` (a language and its workspace, or None for the document alone), the lines seen right after the
    code line above the cursor's line or right before the code line below it (as for ``neighbour_options``) that
    start with the typed code come first, at most ``NEIGHBOURS_MOST``: those seen beside both neighbours, then the
    most often seen, each with its share of those sightings as its prior (``BETWEEN``, ``NEIGHBOUR``). On the 1,900
    typed development holes the right line was first among the options for 513 holes with them, against 256
    without (benchmarks/README.md, "A typed line's neighbours"). Parallel code counts as a sighting here too
    (``_analogies``; ``walk(r|`` under ``if right is not None:`` gets ``ight, visit)`` from ``walk(left, visit)``
    under ``if left is not None:``): 245 -> 261 right fills offered on the first 800 typed development holes.

    ``stored``: the lines that store a constructor's parameters (``engine.paramlines.stored_lines``), after all the
    others (``PARAMETER``; one that is already an option keeps its source)."""
    rest_end = _line_rest(hole, rest_of_line)
    if rest_end is None:
        return NONE
    tail, spaced = rest_end
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
            if spaced:   # the space before the line's end is already after the cursor
                rest = rest.rstrip()
            return rest if rest[len(hole.heal):].strip() else None
        rest = (indent + code)[kept:]
        return rest + "\n" if rest[len(hole.heal):].strip() else None

    out: dict[str, tuple[float | None, str]] = {}
    line_end = text.find("\n", hole.end)
    line_end = len(text) if line_end < 0 else line_end
    if pairs is not None:   # the lines seen beside the cursor line's neighbours that start as it does come first
        seen, _, _ = _beside(text, line_start, line_end, pairs[0], pairs[1], key, analogies=True)
        longer = len(key.rstrip())
        for code, _, prior, source in _ranked({code: counts for code, counts in seen.items()
                                               if longer < len(code) <= LONGEST and code.startswith(key)}):
            rest = remainder(code)
            if rest is not None:
                out.setdefault(rest, (prior, source))
    for line in _nearby(text, line_start, line_end, key, pairs[0] if pairs is not None else language, hole.start):
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
    for code in stored:
        rest = remainder(code) if code.startswith(key) and len(code) > len(key.rstrip()) else None
        if rest is not None:
            out.setdefault(rest, (None, PARAMETER))
    return LineOptions(tuple(out), tuple(p for p, _ in out.values()), tuple(s for _, s in out.values()))


WORD_MOST = 32      # a word's candidates per hole (``word_options``), the nearest lines' first
_NAME_CHARS = r"[A-Za-z_$][\w$]*"   # a name in any of the languages (JavaScript's `$` too)
_FRAGMENT = re.compile(_NAME_CHARS + "$")
_WORDISH = re.compile(r"[\w$]")
WORD_NEAREST = 2    # the nearest places' words before a line's own `,` / `;` (``word_options``)
_WORD_REST = re.compile(r"[\w$]+")   # a word's rest after its fragment
_NAME_PATH = re.compile(r"[\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_QUOTES = "\"'`"
_PAIRS = {"(": ")", "[": "]", "{": "}"}


def word_options(text: str, hole: Hole, rest_of_line: str, language: str | None = None) -> LineOptions:
    """The texts a fill could take from where the word the cursor ends appears elsewhere in the document: for a
    cursor right after a word fragment (``err``) with nothing after it on its line but the closers an editor put
    there (``CLOSERS``: ``f(err|)``), each place nearby (``_nearby``, nearest first) where a word starting with the
    fragment begins gives the text after the fragment there up to the closer that ends the bracket (or quote) it is
    in (``or.message`` in ``log(error.message)``), when that closer is the first of the closers after the cursor
    and the text completes the word to a name or a dotted path of names (another place's call, operator or further
    arguments were seldom this one's: on the 143 mid-word development holes, ``benchmarks.tasks.mid_word_closed``,
    these options added 27 offered fills, 11 right; with calls and operators too 29, 11 right; with the word's rest
    alone and the text up to a comma 44, 1 right; benchmarks/README.md).
    Before a line's own ``,`` or ``;`` (``tem|;``), and before closers and then one (``log(err|);``), a word the
    document completes one way is taken (for the latter, on the 1,237 ``--typed --mid-line`` development holes:
    57 fills more offered, 7 exactly right and 34 more the right word with the line's further arguments after it);
    where it completes it several ways or none, the words of the nearest places that start with the fragment,
    whatever follows them there (``WORD_NEAREST``: ``return att|;`` -> ``attachment`` from ``const attachment =
    {``; on the 1,435 mid-line development holes 622 -> 632 right, 11 gained and 1 lost).
    A place in a comment gives nothing (``_in_comment``, by ``language``'s comments: its words are prose; on the 908
    plain-text mid-line development holes 414 -> 416 right, 741 -> 736 offered, none lost; the grammar languages'
    1,435: no right fill changed).
    At most ``WORD_MOST``, each with its source ``WORD``; empty for any other hole. (The whole line's options,
    ``line_options``, need the line typed so far to start another line; a name typed inside a call seldom does.)"""
    tail = rest_of_line.strip()
    own = tail[:1] in (",", ";")   # the line's own `,` / `;` (then closers) after the cursor, not an editor's closers
    ended = not own and tail[-1:] in (",", ";")   # closers, then the line's own `,` / `;` (``f(err|);``)
    if hole.kind is not HoleKind.INLINE or hole.heal or hole.end != hole.start or not tail \
            or (tail[:-1] if ended else tail).strip(LINE_ENDS if own else CLOSERS):
        return NONE
    line_start = text.rfind("\n", 0, hole.start) + 1
    cut = max(line_start, hole.start - LONGEST)   # the pattern searched over a long line is quadratic
    m = _FRAGMENT.search(text, cut, hole.start)
    if m is None or m.end() != hole.start or m.start() == cut > line_start and _WORDISH.match(text[cut - 1]):
        return NONE   # no word fragment, or one longer than a line can be
    fragment = m.group(0)
    at = re.compile(r"(?<![\w$])" + re.escape(fragment))
    line_end = text.find("\n", hole.end)
    out: dict[str, None] = {}
    words: dict[str, None] = {}   # before a line's own `,` / `;`: each place's whole word too, the nearest first
    for line in _nearby(text, line_start, len(text) if line_end < 0 else line_end, fragment, language, hole.start):
        for found in at.finditer(line):
            if _in_comment(line, found.start(), language):   # a comment's words are prose, not the name typed
                continue
            after = line[found.end():].rstrip("\r")
            word = _WORD_REST.match(after)
            if word is None:   # the fragment is a whole word there: not the word being typed
                continue
            words.setdefault(word.group(0), None)
            for rest in _word_rests(after, tail[0]):
                if _NAME_PATH.fullmatch(rest):   # a name, or a dotted path of names: the word completed
                    out.setdefault(rest, None)
        if len(out) >= WORD_MOST and (not (own or ended) or len(words) >= WORD_NEAREST):
            break
    texts = tuple(out)[:WORD_MOST]
    if (own or ended) and len(texts) != 1:   # before a line's own `,` / `;`: a word the document completes one
        texts = tuple(words)[:WORD_NEAREST]   # way, else the words of the nearest places that start so
    return LineOptions(texts, (None,) * len(texts), (WORD,) * len(texts))


TAIL_MOST = 16        # ``tail_options`` per hole
TAIL_LINES = 400     # lines read that have the typed word in them (the nearest first) ...
TAIL_LINE = 4 * LONGEST   # ... each at most this long (a minified file's line is read no further)
_WORD_START = re.compile(r"(?<![\w$])[\w$]")
# a comment's start, per language (``languages.lines_name``): as a line's first non-blank characters, or after a blank
# later in the line (``//`` in a URL's ``http://`` is no comment). Python's and Lua's ``//`` divide, Perl's is "defined
# or": only the languages whose comments start so read it as one. A language of none of these (plain text): ``#`` and
# ``--`` only where a blank or the line's end follows (``#include``, ``--i``)
_SLASHES = (re.compile(r"\s*(?://|/\*|\*(?:\s|/|$))"), re.compile(r"\s(?://|/\*)"))
_HASH = (re.compile(r"\s*#"), re.compile(r"\s#"))
_COMMENT_STARTS = {**dict.fromkeys(("javascript", "typescript", "typescriptreact", "go", "rust", "c", "cpp", "java"),
                                   _SLASHES),
                   **dict.fromkeys(("python", "ruby", "perl"), _HASH),
                   "lua": (re.compile(r"\s*--"), re.compile(r"\s--"))}
_ANY_COMMENT = (re.compile(r"\s*(?://|/\*|\*(?:\s|/|$)|#(?:\s|$)|--(?:\s|$))"), re.compile(r"\s(?://|/\*|#\s|--\s)"))


def _in_comment(line: str, at: int, language: str | None = None) -> bool:
    """Is ``line[at]`` in a comment, as far as its characters tell without a grammar: a comment line (``// ...``,
    `` * ...`` of a block comment, ``# ...``, ``-- ...``, as ``language`` writes them), or after a comment's start
    later in the line?"""
    lead, later = _COMMENT_STARTS.get(language or "", _ANY_COMMENT)
    return lead.match(line) is not None or later.search(line, 0, at) is not None


# Prose a document holds on lines that carry no comment mark (``_in_comment`` reads a line alone): Perl's POD, Ruby's
# ``=begin`` block, a Lua long comment. Its words go on as prose, not as the code typed (Perl's
# ``$self->frontend->mydie("Unknowns dis|`` got ``tribution object.`` from a POD line). Keyed by
# ``languages.lines_name``. Not a Python docstring or a ``/* */`` comment's lines: blanked, they changed no right fill
# on the development holes but lost one, a docstring's example (benchmarks/README.md, "Prose without a comment mark").
_PROSE = {"perl": re.compile(r"(?ms)^=(?!cut\b)[A-Za-z].*?(?:^=cut\b[^\n]*|\Z)"),
          "ruby": re.compile(r"(?ms)^=begin\b.*?(?:^=end\b[^\n]*|\Z)"),
          "lua": re.compile(r"(?s)--\[(=*)\[.*?(?:\]\1\]|\Z)")}
PROSE_MOST = 2_000_000   # characters: a longer document is read as it is
_prose_last: tuple[str, str, str, tuple[tuple[int, int], ...]] | None = None   # (text, language, masked, spans)


def _without_prose(text: str, language: str | None, at: int) -> str:
    """``text`` with the prose of ``_PROSE`` blanked (each character but a line break a space: offsets and lines stay
    where they are), for reading the document's lines as code; ``text`` itself where the cursor ``at`` is in such
    prose (POD being written reads its own kind of lines) or there is none. The last document's result is
    kept: the options of one hole read it several times."""
    global _prose_last
    pattern = _PROSE.get(language or "")
    if pattern is None or len(text) > PROSE_MOST:
        return text
    last = _prose_last
    if last is not None and last[0] is text and last[1] == language:
        masked, spans = last[2], last[3]
    else:
        spans = tuple(m.span() for m in pattern.finditer(text))
        parts, done = [], 0
        for s, e in spans:
            parts += [text[done:s], "\n".join(" " * len(line) for line in text[s:e].split("\n"))]
            done = e
        masked = "".join(parts) + text[done:] if spans else text
        _prose_last = (text, language or "", masked, spans)
    k = bisect.bisect_left(spans, (at,)) - 1   # the last span starting before the cursor
    return text if k >= 0 and at < spans[k][1] else masked


def tail_options(text: str, hole: Hole, rest_of_line: str, language: str | None = None) -> LineOptions:
    """The rests of other lines that have the end of the code typed on the cursor's line in them: for the rest of
    a line (nothing after the cursor but an editor's closers and the line's own end, as ``line_options``) whose
    typed code starts no other line, each ending of the typed code that starts at a word (``x = self._pa`` ->
    ``self._pa``, ``_pa``), longest first, where a line nearby (``_nearby``, nearest first) has it at a word start,
    gives what follows it there up to that line's end (``used.set()`` from ``self._paused.set()``), unless it is in
    a comment there (``_in_comment``, by ``language``'s comments: ``public abstract cla|`` got ``ss must`` from
    `` * ... extends this class must``). At most
    ``TAIL_MOST``, each with its source ``TAIL``; empty for any other hole."""
    rest_end = _line_rest(hole, rest_of_line)
    if rest_end is None:
        return NONE
    tail, spaced = rest_end
    line_start = text.rfind("\n", 0, hole.start) + 1
    key = text[max(line_start, hole.end - LONGEST):hole.end].lstrip(" \t")   # an ending longer than a line: none
    starts = [m.start() for m in _WORD_START.finditer(key) if m.start() > 0]
    if not starts or len(key) - starts[-1] < max(2, len(hole.heal)):
        return NONE
    endings = [key[j:] for j in starts]   # longest first; each holds the last one
    line_end = text.find("\n", hole.end)
    found: list[tuple[int, int, str]] = []
    lines = _nearby(text, line_start, len(text) if line_end < 0 else line_end, endings[-1], language, hole.start)
    for n, line in enumerate(lines):
        if n >= TAIL_LINES:
            break
        line = line.rstrip("\r")
        if len(line) > TAIL_LINE:
            continue
        for k, ending in enumerate(endings):
            at = line.find(ending)
            while at > 0 and _WORDISH.match(line[at - 1]):
                at = line.find(ending, at + 1)
            if at < 0 or _in_comment(line, at, language):   # a comment's words go on as prose, not as the typed code
                continue
            after = line[at + len(ending):].rstrip()
            if tail:
                if not after.endswith(tail):
                    continue
                after = after[:len(after) - len(tail)]
                if spaced:
                    after = after.rstrip()
            if after.strip() and len(after) <= LONGEST:
                found.append((k, n, text[hole.start:hole.end] + after + ("" if tail else "\n")))
                break   # this line's longest ending only
    out: dict[str, None] = {}
    for _, _, option in sorted(found):
        out.setdefault(option, None)
        if len(out) >= TAIL_MOST:
            break
    texts = tuple(out)
    return LineOptions(texts, (None,) * len(texts), (TAIL,) * len(texts))


def _word_rests(after: str, closer: str) -> list[str]:
    """``word_options``' candidate from the text ``after`` a fragment's place: up to ``closer`` where it ends the
    bracket (or quote) the place is in (its own brackets and strings skipped); none when a ``,``, a ``;`` or another
    closer comes first: one argument or element, not a list of them (another call's further arguments were seldom
    this one's)."""
    depth: list[str] = []
    i, n = 0, len(after)
    while i < n:
        ch = after[i]
        if ch in _QUOTES and ch != closer:
            j = after.find(ch, i + 1)
            while j > 0 and after[j - 1] == "\\":
                j = after.find(ch, j + 1)
            if j < 0:
                return []
            i = j + 1
            continue
        if not depth and (ch == closer or ch in ",;)]}"):
            rest = after[:i].rstrip()
            return [rest] if ch == closer and rest.strip() else []
        if ch in _PAIRS:
            depth.append(_PAIRS[ch])
        elif depth and ch == depth[-1]:
            depth.pop()
        i += 1
    return []


def _nearby(text: str, lo: int, hi: int, containing: str = "", language: str | None = None,
            at: int | None = None) -> Iterator[str]:
    """The lines around the cursor's line ``text[lo:hi]`` (not it), nearest first, the line above before the line
    below at the same distance, at most ``SPAN`` on each side; a line's ``\\r`` is kept (callers strip).
    ``containing``: only the lines that contain it (the others are dropped in one pass over each side). With
    ``language``, its prose without a comment mark is blank lines (``_without_prose``; ``at``: the cursor, ``lo`` if
    not given)."""
    if language is not None:
        text = _without_prose(text, language, lo if at is None else at)
    up, down = _lines(text, lo, True, SPAN), _lines(text, hi, False, SPAN)
    if containing:
        ups = [i for i, line in enumerate(up) if containing in line]
        downs = [i for i, line in enumerate(down) if containing in line]
    else:
        ups, downs = list(range(len(up))), list(range(len(down)))
    i = j = 0
    while i < len(ups) or j < len(downs):   # at one distance the line above first
        if j >= len(downs) or (i < len(ups) and ups[i] <= downs[j]):
            yield up[ups[i]]
            i += 1
        else:
            yield down[downs[j]]
            j += 1


_CHUNK = 16_384   # characters split into lines at once by ``_chunks`` (doubling each time)


def _chunks(text: str, at: int, up: bool) -> Iterator[list[str]]:
    """The lines above the line starting at ``at`` (``up``, nearest first) or below the line ending at ``at`` (its
    break, or the end), split in growing chunks: a caller that needs the nearest few reads little of a huge file,
    and each line costs a ``str.split``, not a step of a Python loop."""
    size = _CHUNK
    if up:
        end = at - 1
        while end >= 0:
            lo = text.rfind("\n", 0, max(0, end - size)) + 1
            chunk = text[lo:end].split("\n")
            chunk.reverse()
            yield chunk
            end, size = lo - 1, size * 2
    else:
        start, n = at + 1, len(text)
        while start <= n:
            hi = text.find("\n", min(n, start + size))
            hi = n if hi < 0 else hi
            yield text[start:hi].split("\n")
            start, size = hi + 1, size * 2


def _lines(text: str, at: int, up: bool, most: int) -> list[str]:
    """The first ``most`` lines of ``_chunks``, nearest first."""
    out: list[str] = []
    for chunk in _chunks(text, at, up):
        out += chunk[:most - len(out)]
        if len(out) >= most:
            break
    return out


def empty_line(hole: Hole, rest_of_line: str, line_start: int) -> bool:
    """Is the hole a whole line (``LINE`` or ``BLOCK``) with nothing but indentation before the cursor (its line
    starting at ``line_start``) and no code after it, or code after it that the fill goes before?"""
    return (hole.kind in (HoleKind.LINE, HoleKind.BLOCK) and hole.start == line_start and not hole.heal.strip()
            and hole.end == hole.start + len(hole.heal) and not (rest_of_line.strip() and not hole.keep_newline))


def neighbour_options(text: str, hole: Hole, rest_of_line: str, language: str | None = None,
                      workspace: worklines.Workspace | None = None, before_below: bool = True) -> LineOptions:
    """The lines a fill of an empty line could take from where the same neighbours appear elsewhere: the lines
    that came right after the code line above the cursor's line (its stripped text) and right before the code
    line below it, in the document (within ``SPAN`` lines each side; the pair across the hole itself is not one)
    and in the ``workspace``'s files (``Workspace.neighbours``). A line that has both neighbours somewhere
    (``BETWEEN``) comes first, then the others (``NEIGHBOUR``), the most often seen first; each with its prior,
    the log of its share of all the sightings, and indented as typed, else from the neighbour it was seen with
    (``_placed``: by the columns it moved there in the document, else by its step). Empty unless the hole is a
    whole line (``LINE`` or ``BLOCK``) with nothing but indentation before the cursor and no code after it, or code
    after it that the fill goes before. Without ``before_below``, only the lines seen after the line above (a body's
    line written before its block's end: ``InfillRequest.ends_block``)."""
    line_start = text.rfind("\n", 0, hole.start) + 1
    if not empty_line(hole, rest_of_line, line_start):
        return NONE
    line_end = text.find("\n", hole.end)
    line_end = len(text) if line_end < 0 else line_end
    seen, above, below = _beside(text, line_start, line_end if not rest_of_line.strip() else hole.end - 1,
                                 language, workspace, analogies=True, before_below=before_below)
    if not seen:
        return NONE
    # typed indentation is kept as typed; with no indented code line in the document, the workspace's unit
    unit = "" if hole.heal else _indent_unit(text, line_start, language,
                                             workspace.indent_unit(language) if workspace and language else None)
    near, known = names_around(text, line_start)
    out: dict[str, tuple[float | None, str, float]] = {}
    for code, counts, prior, source in _ranked(seen):
        n_after, n_before, _, _, in_document, analogies, _ = counts
        if below is not None and code == below[0] and not n_after:
            continue
        indent = hole.heal or _placed(above, below, counts, unit)
        rank = neighbour_rank(code, source == BETWEEN, in_document, near, known)
        if analogies == n_after + n_before:   # seen only beside lines one or two names apart from the neighbours
            rank += ANALOGY_OFFSET
        out.setdefault(indent + code + ("\n" if hole.keep_newline else ""), (prior, source, rank))
    return LineOptions(tuple(out), tuple(p for p, _, _ in out.values()), tuple(s for _, s, _ in out.values()),
                       tuple(r for _, _, r in out.values()))


# An empty line's options ranked by a linear score, fitted on the 1,900 whole-line development holes (the right
# line among the options for 468 of them; conditional logit, 5 parts by file, benchmarks/README.md "Ranking an
# empty line's neighbours"): right line first for 386 of them held out, against 335 for the rank before (seen
# beside both neighbours first, then the first-forward score + the prior).
RANK_SCORE = 0.2     # x the first-forward mean log-probability (``infill.copy_rank``); and x each of
RANK_WEIGHTS = (     # ``neighbour_features``:
    2.6,             # seen beside both neighbours
    0.9,             # log(1 + times seen after the line above in this document)
    1.8,             # the share of its names found within NEAR_BEFORE/NEAR_AFTER characters of the line
    -1.0,            # a name the document (within KNOWN_SPAN characters) has nowhere
    0.6)             # log(1 + its characters): a longer line says more, and was right more often
NEAR_BEFORE, NEAR_AFTER, KNOWN_SPAN = 3000, 1500, 20_000
_NAME = re.compile(r"[A-Za-z_]\w*")


def neighbour_features(code: str, between: bool, in_document: int, near: set[str], known: set[str]
                       ) -> tuple[float, ...]:
    """What an empty line's option's rank reads besides the model (``RANK_WEIGHTS``, in order)."""
    names = _NAME.findall(code)
    share = sum(name in near for name in names) / len(names) if names else 0.0
    return (float(between), math.log1p(in_document), share, float(any(name not in known for name in names)),
            math.log1p(len(code)))


def neighbour_rank(code: str, between: bool, in_document: int, near: set[str], known: set[str]) -> float:
    """The part of an empty line's option's rank that needs no model."""
    return sum(w * f for w, f in zip(RANK_WEIGHTS, neighbour_features(code, between, in_document, near, known)))


def names_around(text: str, at: int) -> tuple[set[str], set[str]]:
    """The names (identifiers and keywords alike) near ``at``: from the line start at or before ``NEAR_BEFORE``
    characters before it to ``NEAR_AFTER`` after; and within ``KNOWN_SPAN`` each side."""
    lo = text.rfind("\n", 0, max(0, at - NEAR_BEFORE)) + 1
    near = set(_NAME.findall(text, lo, at + NEAR_AFTER))
    return near, set(_NAME.findall(text, max(0, at - KNOWN_SPAN), at + KNOWN_SPAN))


def _placed(above: tuple[str, int, str] | None, below: tuple[str, int, str] | None, counts: list, unit: str) -> str:
    """An empty line's option's indentation: from the neighbour it was seen beside more often (the line above on a
    tie), by the indentation step it was seen at most often there. If it was seen beside both neighbours, the other
    one is taken instead when its step says more: "as indented" against any other step, or a step that says how far
    against one that does not (less indented than the line above: one block or three may end there; more indented
    than the line below). Where the document has the option beside the neighbour taken, the neighbour's indentation
    is changed by the columns it was changed by there (``widths``: (side, columns) -> times, the most often seen),
    when the neighbour's own indentation allows it; else by the step. ``counts``: the option's ``_beside`` entry."""
    seen_beside, steps, widths = counts[:2], counts[2:4], counts[6]
    side = 0 if seen_beside[0] >= seen_beside[1] and above is not None else 1
    if seen_beside[1 - side]:
        vague = (-1, 1)   # the step of each side that does not say how far
        mine, theirs = steps[side].most_common(1)[0][0], steps[1 - side].most_common(1)[0][0]
        if mine != 0 and theirs == 0 or mine == vague[side] and theirs != vague[1 - side]:
            side = 1 - side
    neighbour = above if side == 0 else below
    assert neighbour is not None
    moved = [(n, delta) for (s, delta), n in widths.items() if s == side]
    if moved:
        found = _moved(neighbour[2], max(moved)[1], unit)
        if found is not None:
            return found
    return _stepped(neighbour[2], steps[side].most_common(1)[0][0], unit)


def _moved(indent: str, columns: int, unit: str) -> str | None:
    """``indent`` changed by ``columns`` (a tab counts 4): cut to the prefix that wide, or ``unit`` added until it
    is; None where no such indentation exists."""
    if columns <= 0:
        want = len(indent.expandtabs(4)) + columns
        for end in range(len(indent) + 1):
            if len(indent[:end].expandtabs(4)) == want:
                return indent[:end]
        return None
    width = len(unit.expandtabs(4))
    if not width or columns % width:
        return None
    return indent + unit * (columns // width)


def _ranked(seen: dict[str, list]) -> Iterator[tuple[str, list, float, str]]:
    """The first ``NEIGHBOURS_MOST`` of ``_beside``'s sightings, those seen beside both neighbours first, then the
    most often seen; each (code, its counts, its prior: the log of its share of the sightings, its source); a line
    over ``LONGEST`` characters keeps its rank and is skipped."""
    total = float(sum(e[0] + e[1] for e in seen.values()))
    ranked = sorted(seen.items(), key=lambda kv: (not (kv[1][0] and kv[1][1]), -(kv[1][0] + kv[1][1])))
    for code, counts in ranked[:NEIGHBOURS_MOST]:
        if len(code) <= LONGEST:
            source = BETWEEN if counts[0] and counts[1] else NEIGHBOUR
            yield code, counts, math.log((counts[0] + counts[1]) / total), source


def _beside(text: str, line_start: int, line_end: int, language: str | None, workspace: worklines.Workspace | None,
            start: str = "", analogies: bool = False, before_below: bool = True
            ) -> tuple[dict[str, list], tuple[str, int, str] | None, tuple[str, int, str] | None]:
    """The lines seen right after the code line above the line ``text[line_start:line_end]`` and right before the
    code line below it, in the document (within ``SPAN`` lines each side, the pairs of each side apart: never the
    one across that line) and in the ``workspace``'s files: code -> [times after the line above, times before the
    line below, {step: times} of each side, times after the line above in the document]; and the line above and
    the line below (stripped, indentation width, indentation), or None. ``start``: the workspace's lines only if
    they start with it (``Workspace.neighbours``). With ``analogies``, also the document's lines beside a line that
    is the line above (or below) with one or two names changed, those names changed back in them (``_analogies``).
    Without ``before_below`` no line is seen before the line below (it is still returned, for the indentation): more
    lines may come between the cursor's line and it ("Complete body", ``InfillRequest.ends_block``)."""
    before, before_lines = _code_runs(text, line_start, up=True)            # nearest first
    after, after_lines = _code_runs(text, line_end, up=False)
    above = (before[0], worklines.indent_width(before_lines[0]), _indentation(before_lines[0])) if before else None
    below = (after[0], worklines.indent_width(after_lines[0]), _indentation(after_lines[0])) if after else None
    seen: dict[str, list] = {}   # code -> [after-above count, before-below count, {step: count} of each side,
                                 # after-above count in the document, analogies, {(side, columns moved): count}]
    if above is None and below is None:
        return seen, above, below

    def add(code: str, side: int, n: int, step: int = 0, moved: int | None = None, in_document: int = 0,
            analogy: int = 0) -> None:
        """A sighting: its step, else the columns ``moved`` (the document's sightings), whose sign is the step."""
        entry = seen.setdefault(code, [0, 0, collections.Counter(), collections.Counter(), 0, 0,
                                       collections.Counter()])
        entry[side] += n
        entry[2 + side][step if moved is None else (moved > 0) - (moved < 0)] += n
        entry[4] += in_document
        entry[5] += analogy
        if moved is not None:
            entry[6][side, moved] += n

    first, last = above and above[0], below and below[0] if before_below else None
    for codes, lines in ((before[::-1], before_lines[::-1]), (after, after_lines)):   # the pairs of each side
        # apart (never the one across the hole); only the pairs with a neighbour in them need their indentation
        pairs = sorted({i for i, code in enumerate(codes[:-1]) if code == first}
                       | {i - 1 for i, code in enumerate(codes) if i and code == last})
        for i in pairs:
            a, b = codes[i], codes[i + 1]
            moved = worklines.indent_width(lines[i + 1]) - worklines.indent_width(lines[i])
            if a == first:
                add(b, 0, 1, moved=moved, in_document=1)
            if b == last:
                add(a, 1, 1, moved=-moved)
    if workspace is not None and language:
        follows, precedes = workspace.neighbours(language, above and above[0], last, start=start)
        for side, found in ((0, follows), (1, precedes)):
            for code, step, n in found:
                add(code, side, n, step=step)
    if analogies:
        for codes, lines in ((before[:ANALOGY_SPAN][::-1], before_lines[:ANALOGY_SPAN][::-1]),
                             (after[:ANALOGY_SPAN], after_lines[:ANALOGY_SPAN])):
            for code, side, moved in _analogies(codes, lines, first, last):
                add(code, side, 1, moved=moved, analogy=1)
    return seen, above, below


ANALOGY_SPAN = 1000     # code lines read on each side of the cursor for ``_analogies``
ANALOGY_OFFSET = -1.0   # added to the rank of an empty line's option seen only by analogy (``neighbour_rank``'s
                        # scale): on the 1,900 whole-line development holes 421 right fills offered at -1, 417 at 0,
                        # 419 at -2 (389 without analogies; benchmarks/README.md, "Parallel code")
_ANALOGY_NAME = re.compile(r"(?<![\w$])" + _NAME_CHARS)
_ANALOGY_WORD = re.compile(_NAME_CHARS)


def _one_name_apart(line: str) -> list[tuple[str, str, str]]:
    """``line`` around each of its names (at most 24): (the text before the name, the name, the text after it)."""
    names = list(_ANALOGY_NAME.finditer(line))
    if len(names) > 24:
        return []
    return [(line[:m.start()], m.group(), line[m.end():]) for m in names]


def _analogies(codes: Sequence[str], lines: Sequence[str], first: str | None, last: str | None
               ) -> Iterator[tuple[str, int, int]]:
    """Parallel code: where a line of ``codes`` (one side of the cursor, top to bottom) is ``first`` (the code line
    above the cursor, at most ``LONGEST`` characters) with one name changed, the line after it with that name changed
    to ``first``'s (``def finfo(d):`` then ``t = f(d)``, beside ``def iinfo(d):``); and where one is ``last`` (the
    code line below) with one name changed, the line before it likewise. Else, two names changed, each wherever it
    stands, with the text between the names the same (``q = self.q_proj(x)`` then ``q = q.view(n)``, beside ``k =
    self.k_proj(x)``: ``k = k.view(n)``; ``_two_names``). Each (code, side: 0 after the line above / 1 before the line
    below, the columns its indentation is from that line's)."""
    for neighbour, side in ((first, 0), (last, 1)):
        if not neighbour or len(neighbour) > LONGEST:   # (a 2 MB line: its prefixes and suffixes are not copied)
            continue
        around = _one_name_apart(neighbour)
        # one name changed keeps the text before it or the text after it: the first or the last character, unless
        # the neighbour is a name alone (two names changed: read only where one of them is kept too)
        head, tail = ("", "") if _ANALOGY_WORD.fullmatch(neighbour) else (neighbour[0], neighbour[-1])
        shape: tuple[tuple[str, ...], list[str]] | None = None
        for i, code in enumerate(codes):
            j = i + 1 if side == 0 else i - 1
            if not 0 <= j < len(codes) or head and code[0] != head and code[-1] != tail or code == neighbour:
                continue
            for before, new, after in around:
                if code.startswith(before) and code.endswith(after) and len(code) > len(before) + len(after):
                    old = code[len(before):len(code) - len(after)]
                    if old != new and _ANALOGY_WORD.fullmatch(old):
                        other = _renamed(codes[j], {old: new})
                        break
            else:
                if shape is None:
                    shape = _shape(neighbour)
                renames = _two_names(shape, code)
                if renames is None:
                    continue
                other = _renamed(codes[j], renames)
            if other == neighbour:
                continue
            yield other, side, worklines.indent_width(lines[j]) - worklines.indent_width(lines[i])


def _shape(line: str) -> tuple[tuple[str, ...], list[str]]:
    """``line`` as the text between its names and its names."""
    names = _ANALOGY_NAME.findall(line)
    return tuple(_ANALOGY_NAME.split(line)), names


def _two_names(shape: tuple[tuple[str, ...], list[str]], code: str) -> dict[str, str] | None:
    """Where ``code`` is the line of ``shape`` with one or two of its names changed, each wherever it stands (``q =
    self.q_proj(q)`` and ``k = self.k_proj(k)``): each changed name of ``code`` -> the line's; else None."""
    between, names = shape
    if not 2 <= len(names) <= 24:   # (one name: ``_one_name_apart`` has it)
        return None
    theirs = _ANALOGY_NAME.findall(code)   # (split only a line with as many names)
    if len(theirs) != len(names) or tuple(_ANALOGY_NAME.split(code)) != between:
        return None
    renames: dict[str, str] = {}
    for mine, other in zip(names, theirs):
        if renames.setdefault(other, mine) != mine:
            return None
    renames = {k: v for k, v in renames.items() if k != v}
    if not renames or len(renames) > 2 or len(set(renames.values())) != len(renames):
        return None
    return renames


def _renamed(line: str, renames: dict[str, str]) -> str:
    """``line`` with each name of ``renames`` changed wherever it stands as a whole name; and where a name changed in
    one of its words alone (``clear_local_storage`` -> ``clear_session_storage``), that word changed in the line's
    other names too, in their case (``localStorage`` -> ``sessionStorage``, ``LOCAL_KEY`` -> ``SESSION_KEY``), and
    in a Rust number's type (``7.0f32`` -> ``7.0f64`` beside ``from_f32`` -> ``from_f64``)."""
    words = _word_renames(renames)

    def rename(m: re.Match[str]) -> str:
        name = m.group()
        if name in renames or not words:
            return renames.get(name, name)
        return _WORD.sub(lambda w: _cased(words[w.group().lower()], w.group()) if w.group().lower() in words
                         else w.group(), name)

    line = _ANALOGY_NAME.sub(rename, line)
    return _LITERAL_TYPE.sub(rename, line) if words else line


_LITERAL_TYPE = re.compile(r"(?<=[0-9])[iuf](?:8|16|32|64|128|size)\b")   # a Rust number's type: 1u8, 7.0f32
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")   # a name's words: snake_case, camelCase, HTTPServer, x2


def _word_renames(renames: dict[str, str]) -> dict[str, str]:
    """For each name of ``renames`` with as many words as its new name, all the same but one (case aside): that word
    -> the new one, in lower case (``clear_local_storage`` -> ``clear_session_storage``: ``local`` -> ``session``). A
    word that two names change differently is left alone."""
    words: dict[str, str] = {}
    clashes: set[str] = set()
    for old, new in renames.items():
        a, b = [w.lower() for w in _WORD.findall(old)], [w.lower() for w in _WORD.findall(new)]
        if len(a) != len(b) or len(a) < 2:
            continue
        apart = [i for i in range(len(a)) if a[i] != b[i]]
        if len(apart) != 1:
            continue
        was, now = a[apart[0]], b[apart[0]]
        if words.setdefault(was, now) != now:
            clashes.add(was)
    return {k: v for k, v in words.items() if k not in clashes}


def _cased(word: str, like: str) -> str:
    """``word`` (lower case) in ``like``'s case: ``LOCAL``, ``Local`` or ``local``."""
    if len(like) > 1 and like.isupper():
        return word.upper()
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def _code_lines(text: str, at: int, up: bool) -> list[tuple[str, int, str]]:
    """The code lines above the line starting at ``at`` (``up``, nearest first) or below the line ending at
    ``at``, at most ``SPAN``: each (stripped, indentation width, indentation)."""
    codes, lines = _code_runs(text, at, up)
    return [(code, worklines.indent_width(line), _indentation(line)) for code, line in zip(codes, lines)]


def _code_runs(text: str, at: int, up: bool) -> tuple[list[str], list[str]]:
    """``_code_lines``' lines as two lists: each stripped, and as it is."""
    lines: list[str] = []
    for chunk in _chunks(text, at, up):
        kept = [line for line in chunk if line.strip()]
        lines += kept[:SPAN - len(lines)]
        if len(lines) >= SPAN:
            break
    codes = [line.strip() for line in lines]
    return codes, lines


def _indentation(line: str) -> str:
    return line[:len(line) - len(line.lstrip(" \t"))]


def _stepped(indent: str, step: int, unit: str) -> str:
    """``indent`` one ``unit`` deeper (``step`` 1), as it is (0) or one level shallower (-1)."""
    if step > 0:
        return indent + unit
    if step < 0:
        return indent[:-len(unit)] if indent.endswith(unit) else indent[:-1] if indent.endswith("\t") else ""
    return indent
