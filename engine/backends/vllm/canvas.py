"""Seed canvases for vLLM's DiffusionGemma: one request per hole length, holes free and the text after them pinned.

A row is ``[hole 1 slots | pinned text | hole 2 slots | ... | pinned suffix window]``, exactly as wide as
the request's ``diffusion_canvas_length`` (no dead slots: every row is its own request). The prefix is the
prompt, not on the canvas. Free slots start from noise (uniform ids, seeded) or, for a rewrite, from the old
code; pinned positions hold their seed token on every step (``vllm/utils/diffusion.py`` validates them,
``_compiled_sample_step`` re-imposes them). The hole lengths tried are the local DiffusionGemma backend's.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..canvas_text import Segment, row_lengths

SEED = 0                                    # the noise of a fill's free slots: the same request, the same canvas


@dataclass(frozen=True)
class Row:
    """One request's canvas."""

    seed: tuple[int, ...]               # diffusion_seed_canvas: one id per canvas position
    pinned: tuple[int, ...]             # diffusion_pinned: positions held at their seed id
    holes: tuple[tuple[int, int], ...]  # per hole: [start, end) of its slots
    lengths: tuple[int, ...]            # per hole: its length

    @property
    def width(self) -> int:
        return len(self.seed)


class CanvasTooSmall(ValueError):
    """No row of the plan fits the served canvas."""


def layout(segments: list[Segment], canvas_length: int, vocab_size: int) -> list[Row]:
    """The rows that fit ``canvas_length`` (a row too wide is left out; CanvasTooSmall when none fits). The
    trailing fixed piece is the suffix window: as much of it as the row leaves room for."""
    last_fixed = len(segments) - 1 if segments and segments[-1].spec is None else None
    between = sum(len(s.ids) for i, s in enumerate(segments) if s.spec is None and i != last_fixed)
    noise = random.Random(SEED)
    rows: list[Row] = []
    for lengths in row_lengths(segments):
        used = sum(lengths) + between
        if used > canvas_length:
            continue
        window = canvas_length - used
        seed: list[int] = []
        pinned: list[int] = []
        holes: list[tuple[int, int]] = []
        k = 0
        for i, seg in enumerate(segments):
            if seg.spec is None:
                ids = seg.ids[:window] if i == last_fixed else seg.ids
                pinned.extend(range(len(seed), len(seed) + len(ids)))
                seed.extend(ids)
                continue
            n = lengths[k]
            init = list(seg.init[:n])
            init += [noise.randrange(vocab_size) for _ in range(n - len(init))]
            holes.append((len(seed), len(seed) + n))
            seed.extend(init)
            k += 1
        rows.append(Row(tuple(seed), tuple(pinned), tuple(holes), lengths))
    if not rows:
        smallest = min(sum(r) for r in row_lengths(segments)) + between
        raise CanvasTooSmall(f"the holes and the text between them take {smallest} tokens, more than the served "
                             f"canvas of {canvas_length}")
    return rows
