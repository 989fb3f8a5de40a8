"""The masked-diffusion denoising loop: accepted tokens stay, confident tokens are accepted in parallel.

Each step: one forward over the canvas, logits at the still-masked slots only, then accept every
slot whose top probability clears ``threshold`` (at least one, and at least enough to finish the
slots the fill is still expected to use within the step budget: those before each hole's predicted
end). A hole ends at its first accepted terminator (pad/EOS, or a newline for a
one-line hole): the slots after it are dead and leave the loop. ``order="left_to_right"`` accepts
exactly the leftmost free slot per step: the autoregressive order, for comparison.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from ..utf8 import Utf8Guard

DEFAULT_THRESHOLD = 0.9


@dataclass
class HoleSlots:
    """One hole's slots on the canvas: ``[lo, hi)``; a newline token may end it."""

    lo: int
    hi: int
    newline_ends: bool


@dataclass
class Denoised:
    ids: torch.Tensor          # (T,) final canvas
    confidence: torch.Tensor   # (T,) probability each accepted token had when it was accepted
    ends: list[int]            # per hole, the first dead slot (hole text is ids[lo:end])
    steps: int
    forwards: int


def denoise(
    logits_at: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    ids: torch.Tensor,
    holes: list[HoleSlots],
    terminators: torch.Tensor,
    newline_tokens: torch.Tensor,
    suppressed: torch.Tensor,
    steps: int,
    threshold: float,
    order: str = "confidence",
    check: Callable[[int], None] | None = None,
    on_step: Callable[[int, torch.Tensor, torch.Tensor, list[int], torch.Tensor], None] | None = None,
    free: torch.Tensor | None = None,
    utf8: Utf8Guard | None = None,
) -> Denoised:
    """``ids`` (T,) holds masks in the holes; ``logits_at(ids, positions) -> (N, V)``."""
    loop = denoise_steps(ids, holes, terminators, newline_tokens, suppressed, steps, threshold, order, check,
                         on_step, free, utf8)
    try:
        want = next(loop)
        while True:
            want = loop.send(logits_at(*want))
    except StopIteration as done:
        return done.value


def denoise_steps(
    ids: torch.Tensor,
    holes: list[HoleSlots],
    terminators: torch.Tensor,
    newline_tokens: torch.Tensor,
    suppressed: torch.Tensor,
    steps: int,
    threshold: float,
    order: str = "confidence",
    check: Callable[[int], None] | None = None,
    on_step: Callable[[int, torch.Tensor, torch.Tensor, list[int], torch.Tensor], None] | None = None,
    free: torch.Tensor | None = None,
    utf8: Utf8Guard | None = None,
) -> Generator[tuple[torch.Tensor, torch.Tensor], torch.Tensor, Denoised]:
    """The loop as a generator: it yields ``(ids, positions)`` before each forward and is sent the logits
    ``(N, V)`` at those positions; it returns the ``Denoised``. ``denoise`` drives one; the masked backend's
    ``fill_many`` drives several in lockstep, one batched forward per step for all of them. With ``utf8`` (a
    byte-level vocabulary's guard, engine/backends/utf8.py) a token that would leave its hole's byte tokens
    no way to valid UTF-8 is not accepted (or, where the slot must be decided, replaced by the likeliest token
    that keeps one)."""
    T = ids.shape[0]
    ids = ids.clone()
    if free is None:
        free = torch.zeros(T, dtype=torch.bool)
        for h in holes:
            free[h.lo:h.hi] = True
    confidence = torch.ones(T)
    confidence[free] = 0.0
    ends = [h.hi for h in holes]
    is_term = torch.zeros(int(max(terminators.max(), newline_tokens.max(), suppressed.max())) + 1, dtype=torch.bool)
    is_newline = is_term.clone()
    is_term[terminators] = True
    is_newline[newline_tokens] = True
    step = forwards = 0
    steps = max(steps, 1)
    while free.any():
        if check is not None:
            check(step)
        positions = free.nonzero().squeeze(1)                       # (N,)
        logits = (yield ids, positions).float()                     # (N, V)
        forwards += 1
        logits[:, suppressed] = -math.inf
        first = torch.isin(positions, torch.tensor([h.lo for h in holes]))
        logits[first.nonzero(), terminators] = -math.inf  # a hole is never empty
        probs = logits.softmax(-1)
        conf, pred = probs.max(-1)                                  # (N,), (N,)
        every = order != "left_to_right" and step >= steps - 1
        if order == "left_to_right":
            accept = torch.zeros_like(conf, dtype=torch.bool)
            accept[0] = True
        elif every:  # the budget is spent: take the argmax everywhere (anytime answer)
            accept = torch.ones_like(conf, dtype=torch.bool)
        else:
            # A terminator may only be accepted at a hole's frontier (its leftmost free slot): pads
            # are confident far right, and accepting them there would eat the hole from the end.
            capped = pred.clamp_max(len(is_term) - 1)
            ends_here = is_term[capped]                                 # (N,) predicted terminators
            eligible = ~ends_here | _frontier(positions, free, holes, ends)
            remaining = steps - step
            live = _live_slots(positions, ends_here, is_newline[capped], holes, ends)
            need = min(int(eligible.sum()), max(1, math.ceil(live / remaining)))
            accept = eligible & (conf >= threshold)
            if int(accept.sum()) < need:
                accept[torch.where(eligible, conf, -1.0).topk(need).indices] = True
        if utf8 is not None:
            utf8.settle(ids, free, holes, ends, positions, logits, probs, pred, conf, accept, every)
        chosen = positions[accept]
        ids[chosen] = pred[accept]
        confidence[chosen] = conf[accept]
        free[chosen] = False
        step += 1
        _end_holes(ids, free, holes, ends, is_term, is_newline)
        if on_step is not None:
            on_step(step, ids, free, ends, confidence)
    return Denoised(ids, confidence, ends, step, forwards)


def _live_slots(positions: torch.Tensor, term: torch.Tensor, newline: torch.Tensor, holes: list[HoleSlots],
                ends: list[int]) -> int:
    """Free slots the fill is still expected to need: in each hole, those before the first free slot
    whose prediction ends the hole (a terminator, or a newline that ends a one-line hole, itself counted).
    The step budget is spread over these, not over every slot: a short line in a roomy hole is then
    decoded about one token per step instead of being rushed to fill pads it will never use."""
    live = 0
    for h, end in zip(holes, ends):
        idx = ((positions >= h.lo) & (positions < end)).nonzero().squeeze(1)
        if not len(idx):
            continue
        stops = (term[idx] | newline[idx]) if h.newline_ends else term[idx]
        first = stops.nonzero()
        if not len(first):
            live += len(idx)
        else:
            k = int(first[0])
            live += k + (0 if term[idx[k]] else 1)
    return live


def _frontier(positions: torch.Tensor, free: torch.Tensor, holes: list[HoleSlots], ends: list[int]) -> torch.Tensor:
    """(N,) True at each hole's leftmost free slot."""
    mark = torch.zeros_like(positions, dtype=torch.bool)
    for h, end in zip(holes, ends):
        idx = free[h.lo:end].nonzero()
        if len(idx):
            mark |= positions == h.lo + int(idx[0])
    return mark


def _end_holes(ids, free, holes: list[HoleSlots], ends: list[int], is_term, is_newline) -> None:
    """A hole ends at its first decided terminator; everything after it is dead."""
    for i, h in enumerate(holes):
        decided = (~free[h.lo:ends[i]]).nonzero().squeeze(1)
        for j in decided.tolist():
            tok = int(ids[h.lo + j])
            if tok < len(is_term) and (is_term[tok] or (h.newline_ends and is_newline[tok])):
                # Slots after the first terminator are dead; free slots before it still get filled.
                end = h.lo + j + (0 if is_term[tok] else 1)
                if end < ends[i]:
                    free[end:ends[i]] = False
                    ends[i] = end
                break
