"""Several holes filled jointly on one canvas: the layout within the model's window, the shapes a raw
fill may take (cut at a line end, re-indented), and the choice per hole that keeps the file parsing."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import lengths
from .backends.base import Backend, Candidate, Control, FillPlan, HoleSpec, Piece
from .config import FillOptions
from .context import Window, window
from .languages import LanguageSpec, has_grammar, spec_for
from .lines import eol_of, with_eol
from .model_text import invents_replacement
from .requests import Completion, EngineError, FillRequest, Hole, HoleFill, HoleKind
from .validate import choose, degenerate, repeats_neighbour, writes_no_code

# An action's form is offered only when its tokens' geometric mean probability reaches this (the model's own token
# confidences; a backend that gives none: no verdict). On the code actions' development set (158 held-out functions,
# none of the reported set's: benchmarks/action_functions.py --dev) every non-degenerate fill below it was a lone
# literal (`"ascii"`, `{8}`), `return None`/`True`/`self` or a stutter, none of them close to the function's body;
# benchmarks/results/actions-dev.json. ``FillOptions.min_confidence = 0`` (offer every valid fill) turns it off.
MIN_GEOMETRIC_MEAN = 0.3


@dataclass(frozen=True)
class Option:
    """One way to use a hole's raw fill."""

    text: str
    confidences: tuple[float, ...]
    token_spans: tuple[tuple[int, int], ...]


def fill_blanks(backend: Backend, config: FillOptions, request: FillRequest, control: Control) -> Completion:
    """One denoising job over every blank; a fill that would break the parse is cut shorter or dropped."""
    t0 = time.perf_counter()
    text, spec = request.text, spec_for(request.language)
    blanks = sorted(request.holes, key=lambda b: b.start)
    _check(text, blanks)
    sizes = lengths.blank_slots(blanks, request.body, config, backend)
    pieces, win = _canvas(spec, text, blanks, sizes, request.callers, backend.count_tokens, config,
                          lengths.canvas_cap(backend))
    plan = FillPlan(pieces, steps=lengths.step_budget(request.steps, config, backend), threshold=config.threshold)
    result = backend.fill(plan, control)
    eol = eol_of(text)
    bar = 0.0 if config.min_confidence == 0 else MIN_GEOMETRIC_MEAN
    best: list[Option | None] = [None] * len(blanks)
    shorter: list[list[Option]] = [[] for _ in blanks]   # per hole, the chosen fill's forms after the chosen one
    rejected = 0
    gated = [False] * len(blanks)   # per hole: a form the model wrote was withheld by the quality gate
    for candidate in result.candidates:
        # a fill that writes back the text it replaces (``pass`` for ``pass``) changes nothing: it is no fill; one
        # with U+FFFD the document lacks (the model's bytes that are no UTF-8, or a lone surrogate it read as U+FFFD)
        # writes a character the user never wrote; one that writes a line twice, or the code line beside it again,
        # is a stutter of the model, as in a cursor fill (validate.repeats_neighbour), and so is one with a name or a
        # run of tokens repeated over and over (validate.degenerate: `lock_lock_lock_lock`); a statement hole's fill of
        # comments alone writes no code (validate.writes_no_code); one whose tokens the model was unsure of
        # (MIN_GEOMETRIC_MEAN) is not offered: its shorter forms remain
        plausible = [[o for o in shape(b, candidate, i, eol)
                      if _hole_fill(b, o).text != text[b.start:b.end] and not invents_replacement(o.text, text)
                      and not repeats_beside(text, b, _hole_fill(b, o).text)] for i, b in enumerate(blanks)]
        options = [[o for o in opts if _usable(spec, text, b, o, bar)] for b, opts in zip(blanks, plausible)]
        gated = [g or len(o) < len(p) for g, o, p in zip(gated, options, plausible)]
        picks, bad = choose(spec, text, win, blanks, [[o.text for o in opts] for opts in options], config.validate)
        chosen = [None if k is None else opts[k] for opts, k in zip(options, picks)]
        rejected += bad
        if sum(c is not None for c in chosen) > sum(c is not None for c in best):
            best = chosen
            shorter = [[] if k is None else opts[k + 1:] for opts, k in zip(options, picks)]
        if all(c is not None for c in best):
            break
    held = [(b, o, rest) for b, o, rest in zip(blanks, best, shorter) if o is not None]
    unsure = sum(1 for o, g in zip(best, gated) if o is None and g)
    fills = tuple(_hole_fill(b, o) for b, o, _ in held)
    # the window's check passed the longest form that adds no tree-sitter error there; the whole document's
    # (serve.keep_parsing: Python's compiler, the comments, the returns) may still refuse it: it then falls back to
    # the shorter forms, in order (each already clear of a repeated line and of U+FFFD), before the hole keeps its text
    fallbacks = tuple(tuple(_hole_fill(b, o) for o in rest) for b, _, rest in held)
    checked = config.validate and has_grammar(spec)
    return Completion(fills, HoleKind.BLOCK, result.steps, result.forwards, result.tokens,
                      round((time.perf_counter() - t0) * 1000, 2), checked, rejected, backend.name,
                      fallbacks=fallbacks, unsure=unsure)


def _check(text: str, blanks: list[Hole]) -> None:
    if not blanks:
        raise EngineError("no holes to fill")
    pos = 0
    for b in blanks:
        if not pos <= b.start <= b.end <= len(text):
            raise EngineError(f"hole {b.start}..{b.end} is outside the document or overlaps another")
        pos = b.end


def _canvas(spec: LanguageSpec, text: str, blanks: list[Hole], sizes: list[int],
            callers: Sequence[tuple[int, int]], count: Callable[[str], int], config: FillOptions,
            cap: int) -> tuple[tuple[Piece, ...], Window]:
    """``prefix [context lead] HOLE tail middle ... HOLE tail suffix [callers]`` within ``cap`` tokens."""
    budget = cap - sum(sizes)
    if budget < 32:
        raise EngineError(f"{len(blanks)} holes do not fit the model's window; select fewer")
    pre, suf = min(config.prefix_tokens, budget * 2 // 5), min(config.suffix_tokens, budget // 5)
    per_middle = max(16, (budget - pre - suf) // max(1, len(blanks) - 1))
    win = window(spec, text, blanks[0].start, blanks[-1].end, count, pre, suf)
    pieces: list[Piece] = []
    current = win.prefix + blanks[0].context + blanks[0].lead
    for i, (b, size) in enumerate(zip(blanks, sizes)):
        pieces += [current, HoleSpec(size, stop_at_newline=b.stop_at_newline)]
        if i + 1 < len(blanks):
            nxt = blanks[i + 1]
            current = b.tail + _middle(spec, text, b.end, nxt.start, count, per_middle) + nxt.context + nxt.lead
        else:
            current = b.tail + win.suffix + _callers(text, callers, win)
    pieces.append(current)
    # (a CRLF document is read as LF before it gets here, so the budgets count what the model sees: engine/serve.py)
    used = sum(count(p) for p in pieces if isinstance(p, str)) + sum(sizes)
    if used > cap:
        raise EngineError(f"{len(blanks)} holes and their context do not fit the model's window; select fewer")
    return tuple(pieces), win


def _middle(spec: LanguageSpec, text: str, a: int, b: int, count: Callable[[str], int], budget: int) -> str:
    """The code between two holes, its middle left out when it is over ``budget`` tokens."""
    middle = text[a:b]
    if count(middle) <= budget:
        return middle
    head = window(spec, text, a, a, count, 0, budget // 2).suffix
    tail = window(spec, text, b, b, count, budget // 2, 0).prefix
    return head + tail if a + len(head) <= b - len(tail) else middle


def _callers(text: str, callers: Sequence[tuple[int, int]], win: Window) -> str:
    """Caller lines not already on the canvas, after the suffix."""
    lines = [text[lo:hi] for lo, hi in callers if hi <= win.start or lo >= win.end]
    if not lines:
        return ""
    sep = "" if not win.suffix or win.suffix.endswith("\n") else "\n"
    return sep + "".join(line if line.endswith("\n") else line + "\n" for line in lines)


_REPEAT_CONTEXT = 16_000   # characters each side of a hole read for the code lines beside it


def repeats_beside(text: str, blank: Hole, fill: str) -> bool:
    """Does ``fill`` write a code line beside the hole again (``validate.repeats_neighbour``)?"""
    return repeats_neighbour(text[max(0, blank.start - _REPEAT_CONTEXT):blank.start], fill,
                             text[blank.end:blank.end + _REPEAT_CONTEXT])


def _usable(spec: LanguageSpec, text: str, blank: Hole, option: Option, bar: float) -> bool:
    """A form that is no stutter (``validate.degenerate``), writes code where a statement goes, and whose tokens'
    geometric mean probability reaches ``bar``."""
    if degenerate(option.text, text) is not None or (not blank.inline and writes_no_code(spec, option.text)):
        return False
    return geometric_mean(option.confidences) >= bar


def geometric_mean(confidences: Sequence[float]) -> float:
    """The tokens' geometric mean probability (1.0 for none: no verdict)."""
    if not confidences:
        return 1.0
    return math.exp(sum(math.log(max(c, 1e-9)) for c in confidences) / len(confidences))


def _width(ws: str) -> int:
    return len(ws.expandtabs(4))


def _leading(line: str) -> str:
    return line[:len(line) - len(line.lstrip(" \t"))]


def shape(blank: Hole, candidate: Candidate, i: int, eol: str) -> list[Option]:
    """The usable forms of hole ``i``'s raw fill, longest first: one trimmed line for an expression;
    for statements, re-indented to the hole and cut at each line end before any line that leaves it."""
    raw, confs, spans = candidate.texts[i], candidate.confidences[i], candidate.token_spans[i]
    if blank.inline:
        head = raw.split("\n", 1)[0]
        lo, hi = len(head) - len(head.lstrip()), len(head.rstrip())
        return [_option(raw, lo, hi, "", confs, spans, eol)] if hi > lo else []
    lines = raw.split("\n")
    pos, first = 0, 0
    context = blank.context.strip()
    while first < len(lines) and (not lines[first].strip() or (context and lines[first].strip() == context)):
        pos += len(lines[first]) + 1  # leading blank lines, and a repeat of the TODO line, are dropped
        first += 1
    if first == len(lines):
        return []
    body = pos + len(_leading(lines[first]))
    width, cuts = _width(blank.indent), []
    for j in range(first, len(lines)):
        if j > first and lines[j].strip() and _width(_leading(lines[j])) < width:
            break  # the fill would leave the hole's block
        if j > first + 1 and not lines[j].strip() and not lines[j - 1].strip():
            break  # two blank lines end a body
        pos += len(lines[j])
        cuts.append(pos)
        pos += 1
    options, seen = [], set()
    for cut in reversed(cuts):
        option = _option(raw, body, cut, blank.indent, confs, spans, eol)
        if option.text.strip() and option.text not in seen:
            seen.add(option.text)
            options.append(option)
    return options


def _option(raw: str, lo: int, hi: int, indent: str, confs, spans, eol: str) -> Option:
    """``indent + raw[lo:hi]`` (right-stripped, line breaks as ``eol``) with the confidences of the tokens kept."""
    text = indent + raw[lo:hi].rstrip()
    shift = len(indent) - lo
    kept_c, kept_s = [], []
    for c, (s, e) in zip(confs, spans):
        if e > lo and s < hi:
            kept_c.append(c)
            kept_s.append((min(max(s, lo) + shift, len(text)), min(min(e, hi) + shift, len(text))))
    return _with_eol(Option(text, tuple(kept_c), tuple(kept_s)), eol)


def _with_eol(option: Option, eol: str) -> Option:
    text, spans = with_eol(option.text, option.token_spans, eol)
    return Option(text, option.confidences, spans)


def _hole_fill(blank: Hole, option: Option) -> HoleFill:
    shift = len(blank.lead)
    return HoleFill(blank.start, blank.end, blank.lead + option.text + blank.tail, option.confidences,
                    tuple((s + shift, e + shift) for s, e in option.token_spans))
