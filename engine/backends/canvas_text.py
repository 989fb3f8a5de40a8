"""What the canvas backends (DiffusionGemma in process, DiffusionGemma on vLLM) share and that needs no torch:
the hole lengths each canvas row tries, reading a row's hole tokens back as text with the stop rules, and
ranking the rows' candidates."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from .base import Candidate, FillPlan, HoleSpec

LENGTH_FRACTIONS = (1.0, 0.5, 0.25, 0.125)  # hole lengths tried, as fractions of max_tokens, one row each
REWRITE_FRACTIONS = (1.0, 1.25, 0.75)       # of the selection's own length when rewriting
NO_SCORE = -1e9                             # a candidate with no token to score (finite: results go to JSON)


@dataclass(frozen=True)
class Segment:
    """One piece of a plan, tokenized: fixed ``ids`` or a hole (``spec``, ``init`` ids for a rewrite)."""

    ids: tuple[int, ...] = ()
    spec: HoleSpec | None = None
    init: tuple[int, ...] = ()


def split_plan(plan: FillPlan, encode: Callable[[str], list[int]], bos_id: int | None,
               pad_id: int) -> tuple[list[int], list[Segment]]:
    """The prompt ids (BOS, then the prefix; pad when there is neither: the model needs one token to read) and
    the canvas pieces after it, tokenized."""
    pieces = list(plan.pieces)
    first = pieces[0] if pieces else None
    head = first if isinstance(first, str) else ""
    if isinstance(first, str):
        pieces.pop(0)
    prompt = ([bos_id] if bos_id is not None else []) + encode(head)
    segments = [Segment(spec=p, init=tuple(encode(p.init or ""))) if isinstance(p, HoleSpec)
                else Segment(ids=tuple(encode(p))) for p in pieces]
    return prompt or [pad_id], segments


def hole_lengths(spec: HoleSpec, init_len: int) -> list[int]:
    """Candidate slot counts for one hole, in the order tried, without duplicates."""
    if init_len:
        cap = max(spec.max_tokens, init_len)
        raw = [min(cap, max(1, round(init_len * f))) for f in REWRITE_FRACTIONS]
    else:
        raw = [max(1, math.ceil(spec.max_tokens * f)) for f in LENGTH_FRACTIONS]
    return list(dict.fromkeys(raw))


def row_lengths(segments: Sequence[Segment]) -> list[tuple[int, ...]]:
    """Row r gives every hole its r-th candidate length (its last one when it has fewer)."""
    per_hole = [hole_lengths(s.spec, len(s.init)) for s in segments if s.spec is not None]
    if not per_hole:
        return []
    n = max(len(c) for c in per_hole)
    return list(dict.fromkeys(tuple(c[min(r, len(c) - 1)] for c in per_hole) for r in range(n)))


Read = tuple[str, tuple[float, ...], tuple[tuple[int, int], ...], list[float]]


class TokenReader:
    """A row's denoised hole tokens as text, per-token confidences and spans, with the stop rules applied.
    ``is_terminator`` says which ids end a fill (EOS, pad, ids outside the tokenizer)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def is_terminator(self, token: int) -> bool:
        raise NotImplementedError

    def read(self, ids: list[int], logp: list[float], spec: HoleSpec) -> Read:
        """-> (text, confidences, spans, log-probs to score): cut at the first terminator, then a newline if asked."""
        end = next((j for j, t in enumerate(ids) if self.is_terminator(t)), len(ids))
        scored = list(logp[:end + 1])  # a terminator counts too: it chose the length
        ids, logp = ids[:end], list(logp[:end])
        text, spans = self.spans(ids)
        if spec.stop_at_newline and "\n" in text:
            cut = text.index("\n") + (1 if spec.keep_newline else 0)
            kept = sum(1 for s, _ in spans if s < cut)
            text, spans = text[:cut], [(s, min(e, cut)) for s, e in spans[:kept]]
            scored = logp[:max(kept, 1)]
            logp = logp[:kept]
        return text, tuple(math.exp(x) for x in logp), tuple(spans), scored

    def spans(self, ids: list[int]) -> tuple[str, list[tuple[int, int]]]:
        """Decode ``ids`` and find each token's [start, end) in the text."""
        text = self.decode(ids)
        pieces = [self.decode([t]) for t in ids]
        if "".join(pieces) == text:  # the common case: every token decodes on its own
            ends = list(itertools.accumulate(len(p) for p in pieces))
            return text, [(e - len(p), e) for p, e in zip(pieces, ends)]
        spans, done = [], 0  # a character split across tokens: it belongs to the token that completes it
        for k in range(1, len(ids) + 1):
            head = text if k == len(ids) else self.decode(ids[:k])
            edge = max(done, len(head)) if text.startswith(head) else done
            spans.append((done, edge))
            done = edge
        return text, spans

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


def best_first(rows: Iterable[Sequence[Read]]) -> list[Candidate]:
    """One candidate per row (its holes' reads), best mean log-probability first; rows that read the same keep
    their best."""
    out: dict[tuple[str, ...], Candidate] = {}
    for reads in rows:
        scored = [x for r in reads for x in r[3]]
        score = sum(scored) / len(scored) if scored else NO_SCORE
        cand = Candidate(tuple(r[0] for r in reads), tuple(r[1] for r in reads), tuple(r[2] for r in reads), score)
        if cand.texts not in out or out[cand.texts].score < score:
            out[cand.texts] = cand
    return sorted(out.values(), key=lambda c: c.score, reverse=True)
