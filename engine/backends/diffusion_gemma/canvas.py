"""DiffusionGemma canvases: holes and pinned text laid out as batch rows, one per hole length; fills read back.

A row is ``[hole 1 slots | pinned text | hole 2 slots | ... | pinned suffix window | dead slots]``.
The prefix is not on the canvas: it lives in the encoder's KV cache. Rows differ only in their hole
lengths; the shorter rows end in dead slots that the decoder attention mask hides.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..base import Candidate, HoleSpec
from ..canvas_text import Segment, TokenReader, best_first, row_lengths

MIN_SUFFIX_TOKENS = 8                       # the suffix window never shrinks below this


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


class FillReader(TokenReader):
    """A row's hole tokens read back (``canvas_text.TokenReader``), terminators from the batch's table."""

    def __init__(self, tokenizer, terminators: torch.Tensor):
        super().__init__(tokenizer)
        self.terminators = terminators.tolist()  # per id: EOS, pad, other special ids, ids outside the tokenizer

    def is_terminator(self, token: int) -> bool:
        return token >= len(self.terminators) or self.terminators[token]


def candidates(batch: CanvasBatch, ids: torch.Tensor, logp: torch.Tensor, specs: list[HoleSpec],
               reader: FillReader) -> list[Candidate]:
    """One candidate per row, best mean log-probability first; rows that read the same keep their best."""
    ids_l, logp_l = ids.tolist(), logp.tolist()
    return best_first([reader.read(ids_l[b][lo:hi], logp_l[b][lo:hi], spec) for (lo, hi), spec in zip(spans, specs)]
                      for b, spans in enumerate(batch.holes))
