"""The code actions as engine requests: each carries its own ``run`` (called on the engine thread by
``Engine.submit``) and answers a ``Completion`` whose fills are the minimal edits, in str offsets."""

from __future__ import annotations

import difflib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .backends.base import Backend, Control, FillPlan, HoleSpec
from .config import EngineConfig
from .context import window
from .holes import Blank, error_ranges, parse
from .infill import complete, offset_steps
from .languages import LanguageSpec, error_count, spec_for
from .multifill import fill_blanks
from .repair import smallest_fix
from .requests import Completion, EngineError, HoleFill, HoleKind, InfillRequest

_LINES = re.compile(r"[^\n]*\n|[^\n]+$")


@dataclass(frozen=True)
class FillRequest:
    """Fill ``blanks`` of ``text`` jointly, in one canvas ("Fill N holes", "Complete body")."""

    text: str
    language: str
    blanks: tuple[Blank, ...]
    callers: tuple[tuple[int, int], ...] = ()  # lines calling the function, extra context after the suffix
    slots: int | None = None                   # per hole; None: by hole kind
    steps: int | None = None
    key: str | None = None

    def run(self, backend: Backend, config: EngineConfig, control: Control) -> Completion:
        return fill_blanks(backend, config, control, self.text, self.language, self.blanks, self.callers,
                           self.slots, self.steps)


@dataclass(frozen=True)
class RewriteRequest:
    """Re-noise ``text[start:end]`` and denoise it with both sides fixed; fills are the changed lines."""

    text: str
    language: str
    start: int
    end: int
    instruction: str | None = None
    steps: int | None = None
    key: str | None = None

    def run(self, backend: Backend, config: EngineConfig, control: Control) -> Completion:
        if not 0 <= self.start < self.end <= len(self.text):
            raise EngineError(f"nothing to rewrite in {self.start}..{self.end}")
        request = InfillRequest(self.text, self.start, self.language, end=self.end, kind=HoleKind.SPAN,
                                steps=self.steps, rewrite=True, instruction=self.instruction, key=self.key)
        completion = complete(backend, config, request, control)
        if not completion.fills:
            return completion
        return replace(completion, fills=minimal_edits(self.text, completion.fills[0]))


@dataclass(frozen=True)
class FixRequest:
    """Re-mask the spans around a syntax error, smallest first, until a fill parses; fills are the changed lines."""

    text: str
    language: str
    spans: tuple[tuple[int, int], ...]
    steps: int | None = None
    key: str | None = None

    def run(self, backend: Backend, config: EngineConfig, control: Control) -> Completion:
        return fix_syntax(backend, config, control, self)


def minimal_edits(text: str, fill: HoleFill) -> tuple[HoleFill, ...]:
    """``fill`` as one edit per run of changed lines (unchanged lines are not touched)."""
    old, new = text[fill.start:fill.end], fill.text
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
        edits.append(HoleFill(fill.start + oa[i1], fill.start + oa[i2], new[lo:hi], tuple(confs), tuple(spans)))
    return tuple(edits)


def _starts(lines: Sequence[str]) -> list[int]:
    out = [0]
    for line in lines:
        out.append(out[-1] + len(line))
    return out


def fix_syntax(backend: Backend, config: EngineConfig, control: Control, request: FixRequest) -> Completion:
    """The smallest repair at the error that parses (engine/repair.py); failing that, per span: first re-noise the text as written (the doubtful tokens), then mask it whole; the first
    fill that removes the error without adding one wins."""
    t0 = time.perf_counter()
    spec, text = spec_for(request.language), request.text
    small = smallest_fix(backend, spec, text, request.spans, t0)  # one or two tokens at the error (repair.py)
    if small is not None:
        return small
    steps = forwards = tokens = rejected = 0
    budget = request.steps or config.steps
    for start, end in request.spans:
        if not 0 <= start <= end <= len(text):
            raise EngineError(f"span {start}..{end} is outside the document")
        win = window(spec, text, start, end, backend.count_tokens, config.prefix_tokens, config.suffix_tokens)
        original = text[start:end]
        baseline = _errors(spec, win.prefix + original + win.suffix)
        if not baseline:
            continue
        slots = max(8, backend.count_tokens(original) * 5 // 4 + 4)
        for init in (original, None):
            plan = FillPlan((win.prefix, HoleSpec(slots, init=init), win.suffix), steps=budget,
                            threshold=config.threshold)
            result = backend.fill(plan, offset_steps(control, steps))
            steps, forwards, tokens = steps + result.steps, forwards + result.forwards, tokens + result.tokens
            for candidate in result.candidates:
                fill = candidate.texts[0].rstrip()
                if "\r\n" in original:
                    fill = fill.replace("\r\n", "\n").replace("\n", "\r\n")
                if fill.strip() and fill != original and _fixes(spec, win.prefix, fill, win.suffix, baseline):
                    edit = HoleFill(start, end, fill, candidate.confidences[0], candidate.token_spans[0])
                    return Completion(minimal_edits(text, edit), HoleKind.SPAN, steps, forwards, tokens,
                                      _ms(t0), True, rejected, backend.name)
                rejected += 1
    return Completion((), HoleKind.SPAN, steps, forwards, tokens, _ms(t0), True, rejected, backend.name)


def _errors(spec: LanguageSpec, source: str) -> int:
    tree = parse(spec, source.encode("utf-8", "surrogatepass"))
    return 0 if tree is None else error_count(tree)


def _fixes(spec: LanguageSpec, prefix: str, fill: str, suffix: str, baseline: int) -> bool:
    """Fewer errors than before, and none left inside the fill."""
    data = (prefix + fill + suffix).encode("utf-8", "surrogatepass")
    tree = parse(spec, data)
    if tree is None or error_count(tree) >= baseline:
        return False
    lo = len(prefix.encode("utf-8", "surrogatepass"))
    hi = lo + len(fill.encode("utf-8", "surrogatepass"))
    return not any(s < hi and e > lo or s == e and lo <= s <= hi for s, e in error_ranges(tree))


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 2)
