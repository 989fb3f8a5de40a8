"""What the model reads: text made safe for a tokenizer. A lone surrogate (an editor may hold one; no
tokenizer takes it) becomes U+FFFD, one ``str`` character for one, so every offset stays where it was.
``ModelText`` wraps a backend so every text it is given passes through here: the one place."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from .backends.base import Backend, Control, FillPlan, FillResult, Piece

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # a pair is one str character, so any surrogate is lone
REPLACEMENT = "\ufffd"


def model_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (the same length)."""
    return _LONE_SURROGATE.sub(REPLACEMENT, text)


def _piece(piece: Piece) -> Piece:
    if isinstance(piece, str):
        return model_text(piece)
    return replace(piece, init=model_text(piece.init)) if piece.init else piece


def model_plan(plan: FillPlan) -> FillPlan:
    """``plan`` with its pieces, a rewrite's text, the instruction and the options passed through ``model_text``."""
    instruction = model_text(plan.instruction) if plan.instruction else plan.instruction
    return replace(plan, pieces=tuple(_piece(p) for p in plan.pieces), instruction=instruction,
                   options=tuple(map(model_text, plan.options)))


class ModelText:
    """``backend`` with its text inputs (token counts, plan pieces, a rewrite's text, the instruction, scored text)
    sanitised by ``model_text``; everything else passes through. Weights are swapped on the engine's own backend,
    never through this wrapper (``adapts`` is False here)."""

    adapts = False

    def __init__(self, backend: Backend):
        self.backend = backend
        self.name, self.default_steps = backend.name, backend.default_steps
        self.max_positions, self.searches_lengths = backend.max_positions, backend.searches_lengths
        self.takes_instruction = backend.takes_instruction
        self.scores_text, self.model_dir = backend.scores_text, backend.model_dir
        self.scores_options = backend.scores_options

    def count_tokens(self, text: str) -> int:
        return self.backend.count_tokens(model_text(text))

    def fill(self, plan: FillPlan, control: Control) -> FillResult:
        return self.backend.fill(model_plan(plan), control)

    def score_text(self, prefix: str, middle: str, suffix: str) -> float:
        return self.backend.score_text(model_text(prefix), model_text(middle), model_text(suffix))

    def load_weights(self, path: Path | None) -> None:
        raise NotImplementedError("weights are swapped on the engine's backend (Engine.swap_weights)")

    def stats(self) -> dict[str, object]:
        return self.backend.stats()

    def close(self) -> None:
        self.backend.close()

