"""DiffusionGemma canvases: holes and pinned text laid out as batch rows, one per hole length; fills read back.

A row is ``[hole 1 slots | pinned text | hole 2 slots | ... | pinned suffix window | dead slots]``.
The prefix is not on the canvas: it lives in the encoder's KV cache. Rows differ only in their hole
lengths; the shorter rows end in dead slots that the decoder attention mask hides.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch

from ..base import Candidate, HoleSpec

LENGTH_FRACTIONS = (1.0, 0.5, 0.25, 0.125)  # hole lengths tried, as fractions of max_tokens, one row each
REWRITE_FRACTIONS = (1.0, 1.25, 0.75)       # of the selection's own length when rewriting
MIN_SUFFIX_TOKENS = 8                       # the suffix window never shrinks below this
NO_SCORE = -1e9                             # a candidate with no token to score (finite: results go to JSON)


@dataclass(frozen=True)
class Segment:
    """One piece of a plan, tokenized: fixed ``ids`` (pinned) or a hole (``spec``, ``init`` ids for a rewrite)."""

    ids: tuple[int, ...] = ()
    spec: HoleSpec | None = None
    init: tuple[int, ...] = ()


@dataclass
class CanvasBatch:
    start: torch.Tensor     # (B, C) long: first canvas; free slots hold -1 where noise goes
    pinned: torch.Tensor    # (B, C) bool: fixed tokens and dead slots (re-imposed after every step)
    live: torch.Tensor      # (B, C) bool: slots the decoder may attend to (not dead)
    holes: list[list[tuple[int, int]]]  # per row, per hole: [start, end) of its slots
    lengths: list[tuple[int, ...]]      # per row, per hole: its length

    @property
    def rows(self) -> int:
        return self.start.shape[0]


def hole_lengths(spec: HoleSpec, init_len: int) -> list[int]:
    """Candidate slot counts for one hole, largest first-tried order kept, without duplicates."""
    if init_len:
        cap = max(spec.max_tokens, init_len)
        raw = [min(cap, max(1, round(init_len * f))) for f in REWRITE_FRACTIONS]
    else:
        raw = [max(1, math.ceil(spec.max_tokens * f)) for f in LENGTH_FRACTIONS]
    return list(dict.fromkeys(raw))


def row_lengths(segments: list[Segment]) -> list[tuple[int, ...]]:
    """Row r gives every hole its r-th candidate length (its last one when it has fewer)."""
    per_hole = [hole_lengths(s.spec, len(s.init)) for s in segments if s.spec is not None]
    if not per_hole:
        return []
    n = max(len(c) for c in per_hole)
    rows = [tuple(c[min(r, len(c) - 1)] for c in per_hole) for r in range(n)]
    return list(dict.fromkeys(rows))


def layout(segments: list[Segment], canvas_length: int, pad_id: int) -> CanvasBatch:
    """Lay the holes and pinned pieces out as rows; the trailing fixed piece is cut to the canvas budget."""
    rows = row_lengths(segments)
    last_fixed = len(segments) - 1 if segments and segments[-1].spec is None else None
    fixed_before_tail = sum(len(s.ids) for i, s in enumerate(segments) if s.spec is None and i != last_fixed)
    longest = max(sum(r) for r in rows) + fixed_before_tail
    window = 0
    if last_fixed is not None:
        window = min(len(segments[last_fixed].ids), max(canvas_length - longest, MIN_SUFFIX_TOKENS))
    C = longest + window
    B = len(rows)
    start = torch.full((B, C), pad_id, dtype=torch.long)
    pinned = torch.ones((B, C), dtype=torch.bool)
    live = torch.zeros((B, C), dtype=torch.bool)
    holes: list[list[tuple[int, int]]] = []
    for b, lengths in enumerate(rows):
        pos, k, spans = 0, 0, []
        for i, seg in enumerate(segments):
            if seg.spec is None:
                ids = seg.ids[:window] if i == last_fixed else seg.ids
                start[b, pos:pos + len(ids)] = torch.tensor(ids, dtype=torch.long)
                pos += len(ids)
                continue
            n = lengths[k]
            init = list(seg.init[:n]) + [-1] * (n - min(n, len(seg.init)))
            start[b, pos:pos + n] = torch.tensor(init, dtype=torch.long)
            pinned[b, pos:pos + n] = False
            spans.append((pos, pos + n))
            pos, k = pos + n, k + 1
        live[b, :pos] = True
        holes.append(spans)
    return CanvasBatch(start, pinned, live, holes, rows)


class FillReader:
    """A row's denoised hole tokens as text, per-token confidences and spans, with the stop rules applied."""

    def __init__(self, tokenizer, terminators: torch.Tensor):
        self.tokenizer = tokenizer
        self.terminators = terminators.tolist()  # per id: EOS, pad, other special ids, ids outside the tokenizer

    def read(self, ids: list[int], logp: list[float], spec: HoleSpec):
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

    def is_terminator(self, token: int) -> bool:
        return token >= len(self.terminators) or self.terminators[token]

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


def candidates(batch: CanvasBatch, ids: torch.Tensor, logp: torch.Tensor, specs: list[HoleSpec],
               reader: FillReader) -> list[Candidate]:
    """One candidate per row, best mean log-probability first; rows that read the same keep their best."""
    ids_l, logp_l = ids.tolist(), logp.tolist()
    out: dict[tuple[str, ...], Candidate] = {}
    for b, spans in enumerate(batch.holes):
        reads = [reader.read(ids_l[b][lo:hi], logp_l[b][lo:hi], spec) for (lo, hi), spec in zip(spans, specs)]
        texts, confs, tspans, scores = (tuple(r[i] for r in reads) for i in range(4))
        scored = [x for sc in scores for x in sc]
        score = sum(scored) / len(scored) if scored else NO_SCORE
        cand = Candidate(texts, confs, tspans, score)
        if cand.texts not in out or out[cand.texts].score < score:
            out[cand.texts] = cand
    return sorted(out.values(), key=lambda c: c.score, reverse=True)
