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


def invents_replacement(written: str, read: str) -> bool:
    """Does ``written`` (a fill or an edit) hold U+FFFD where ``read`` (the user's text, as the user has it) has
    none? The model's bytes that are no UTF-8 decode as U+FFFD, and the model reads a lone surrogate as U+FFFD:
    written back, neither is a character the user wrote (a U+FFFD the user's text really has may be copied)."""
    return REPLACEMENT in written and REPLACEMENT not in read


def given_back(old: str, new: str) -> str:
    """``new``, the model's text for the user's ``old`` (a rewrite's or a fix's changed lines), with the U+FFFD the
    model read for each lone surrogate of ``old`` back as that surrogate, in order, when ``new`` has as many U+FFFD
    as the model read in ``old``; else ``new`` as it is (the whole-document check refuses a U+FFFD left over)."""
    if not _LONE_SURROGATE.search(old):
        return new
    read = [ch for ch in old if ch == REPLACEMENT or _LONE_SURROGATE.match(ch)]
    if new.count(REPLACEMENT) != len(read):
        return new
    chars = iter(read)
    return "".join(next(chars) if ch == REPLACEMENT else ch for ch in new)


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

