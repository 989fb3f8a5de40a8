"""The rewrite and fix-syntax requests, served on the engine thread: a span re-noised (or re-masked) and
denoised with both sides fixed, answered as minimal line edits in str offsets."""

from __future__ import annotations

import difflib
import logging
import re
import time
from collections.abc import Sequence
from dataclasses import replace

from . import lengths
from .backends.base import Backend, Control, FillPlan, HoleSpec
from .config import FillOptions
from .context import window
from .infill import complete, offset_steps
from .languages import spec_for
from .lines import eol_of, with_eol
from .model_text import given_back, model_text
from .repair import smallest_fix
from .requests import Completion, EngineError, FixRequest, HoleFill, HoleKind, InfillRequest, RewriteRequest
from .validate import degenerate, errors_in, fixes_error

_LINES = re.compile(r"[^\n]*\n|[^\n]+$")
log = logging.getLogger(__name__)


def rewrite(backend: Backend, config: FillOptions, request: RewriteRequest, control: Control) -> Completion:
    """The selection re-noised and denoised (the doubtful tokens first); fills are the changed lines."""
    if not 0 <= request.start < request.end <= len(request.text):
        raise EngineError(f"nothing to rewrite in {request.start}..{request.end}")
    infill = InfillRequest(request.text, request.start, request.language, end=request.end, kind=HoleKind.SPAN,
                           steps=request.steps, rewrite=True, instruction=request.instruction, key=request.key)
    completion = complete(backend, config, infill, control)
    if not completion.fills:
        return completion
    fill = keep_line_end(request.text[request.start:request.end], completion.fills[0])
    edits = minimal_edits(request.text, fill)
    stutter = next((why for e in edits if (why := degenerate(e.text, request.text)) is not None), None)
    if stutter is not None:   # the model's stutter (validate.degenerate), as in "Fill holes": no rewrite
        log.info("rewrite: not offered: %s", stutter)
        return replace(completion, fills=(), rejected=completion.rejected + 1, unsure=1)
    return replace(completion, fills=edits)


def keep_line_end(original: str, fill: HoleFill) -> HoleFill:
    """A rewrite ends a line where the selection did: whole lines selected keep their last line break (a text
    without it would join the next line, or delete it when it is blank), and a selection within a line gets no
    line break after it (it would split the line)."""
    text = fill.text
    if original.endswith("\n") and not text.endswith("\n"):
        return replace(fill, text=text.rstrip(" \t") + ("\r\n" if original.endswith("\r\n") else "\n"))
    if original.endswith("\n") or not text.endswith("\n"):
        return fill
    text = text.rstrip("\r\n")
    kept = [(c, (s, min(e, len(text)))) for c, (s, e) in zip(fill.confidences, fill.token_spans) if s < len(text)]
    return replace(fill, text=text, confidences=tuple(c for c, _ in kept), token_spans=tuple(s for _, s in kept))


def minimal_edits(text: str, fill: HoleFill) -> tuple[HoleFill, ...]:
    """``fill`` as one edit per run of changed lines (unchanged lines are not touched). The model wrote its text
    from what it read, where a lone surrogate is U+FFFD: a line it gave back as it read it is unchanged, and a
    changed run gets the lone surrogates the model read as U+FFFD back (``model_text.given_back``)."""
    old, new = model_text(text[fill.start:fill.end]), fill.text
    a, b = _LINES.findall(old), _LINES.findall(new)
    oa, ob = _starts(a), _starts(b)
    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        lo, hi = ob[j1], ob[j2]
        confs, spans = [], []
        for c, (s, e) in zip(fill.confidences, fill.token_spans):
            if e > lo and s < hi:
                confs.append(c)
                spans.append((max(s, lo) - lo, min(e, hi) - lo))
        start, end = fill.start + oa[i1], fill.start + oa[i2]
        edits.append(HoleFill(start, end, given_back(text[start:end], new[lo:hi]), tuple(confs), tuple(spans)))
    return tuple(edits)


def _starts(lines: Sequence[str]) -> list[int]:
    out = [0]
    for line in lines:
        out.append(out[-1] + len(line))
    return out


def fix_syntax(backend: Backend, config: FillOptions, request: FixRequest, control: Control) -> Completion:
    """The smallest repair at the error that parses (engine/repair.py); failing that, per span: first
    re-noise the text as written (the doubtful tokens), then mask it whole; the first
    fill that removes the error without adding one wins."""
    t0 = time.perf_counter()
    spec, text = spec_for(request.language), request.text
    for start, end in request.spans:
        if not 0 <= start <= end <= len(text):
            raise EngineError(f"span {start}..{end} is outside the document")
    fitting = _fitting_spans(backend, config, text, request.spans)  # a span too big for the model is skipped
    # one or two tokens (repair.py); the search stops when the job is cancelled
    small = smallest_fix(backend, spec, text, tuple(fitting), t0, control.check) if fitting else None
    if small is not None:
        return small
    steps = forwards = tokens = rejected = 0
    budget = lengths.step_budget(request.steps, config, backend)  # per attempt
    eol = eol_of(text)
    for (start, end), (slots, budgets) in fitting.items():
        original = text[start:end]
        win = window(spec, text, start, end, backend.count_tokens, *budgets)
        baseline = errors_in(spec, win.prefix + original + win.suffix)
        if not baseline:
            continue
        for init in (original, None):  # (a CRLF document is read as LF before it gets here: engine/serve.py)
            plan = FillPlan((win.prefix, HoleSpec(slots, init=init or None), win.suffix),
                            steps=budget, threshold=config.threshold)
            result = backend.fill(plan, offset_steps(control, steps))
            steps, forwards, tokens = steps + result.steps, forwards + result.forwards, tokens + result.tokens
            for candidate in result.candidates:
                fill, spans = with_eol(candidate.texts[0].rstrip(), candidate.token_spans[0], eol)
                if fill.strip() and fill != original and fixes_error(spec, win.prefix, fill, win.suffix, baseline):
                    edit = HoleFill(start, end, fill, candidate.confidences[0], spans)
                    return Completion(minimal_edits(text, edit), HoleKind.SPAN, steps, forwards, tokens,
                                      _ms(t0), True, rejected, backend.name)
                rejected += 1
    return Completion((), HoleKind.SPAN, steps, forwards, tokens, _ms(t0), True, rejected, backend.name)


def _fitting_spans(backend: Backend, config: FillOptions, text: str, spans: tuple[tuple[int, int], ...]
                   ) -> dict[tuple[int, int], tuple[int, tuple[int, int]]]:
    """The spans a fix can re-mask within the model's positions, each with its slots and context budgets."""
    out = {}
    for start, end in spans:
        slots = lengths.fix_slots(backend.count_tokens(text[start:end]))
        budgets = _fix_context(backend, config, slots)
        if budgets is not None:
            out[(start, end)] = (slots, budgets)
    return out


def _fix_context(backend: Backend, config: FillOptions, slots: int) -> tuple[int, int] | None:
    """The prefix and suffix budgets beside a fix of ``slots`` tokens; None (the span is skipped, with a
    log line) when the span alone is too big for the model's positions."""
    try:
        return lengths.context_tokens(backend, config, slots)
    except EngineError as exc:
        log.info("fix: span skipped: %s", exc)
        return None


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 2)
