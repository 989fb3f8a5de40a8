"""The backend contract: every capability the engine reads from a backend, and the plan and result types
a fill passes through (fill the holes of a canvas plan, with cancel and draft hooks per step)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class HoleSpec:
    """One hole on the canvas."""

    max_tokens: int                   # slots on the canvas (the largest length tried)
    stop_at_newline: bool = False     # a fill ends at its first newline (kept when keep_newline)
    keep_newline: bool = False
    init: str | None = None           # rewrite: start from this text instead of masks / noise


Piece = str | HoleSpec


@dataclass(frozen=True)
class FillPlan:
    """Fixed text and holes in document order. The first and last pieces are the (trimmed) prefix and suffix."""

    pieces: tuple[Piece, ...]
    steps: int                        # step budget (>= 1: the engine resolves "0 steps" in lengths.step_budget)
    threshold: float                  # accept rule parameter (confidence for masked, entropy bound for gemma)
    instruction: str | None = None
    options: tuple[str, ...] = ()     # texts for the first hole, each scored on the fill's first forward
                                      # (``Backend.scores_options``; others ignore them): engine/doclines.py

    @property
    def holes(self) -> tuple[HoleSpec, ...]:
        return tuple(p for p in self.pieces if isinstance(p, HoleSpec))


@dataclass(frozen=True)
class Candidate:
    """One full assignment of the plan's holes."""

    texts: tuple[str, ...]                          # one per hole, pad/EOS trimmed, stop rules applied
    confidences: tuple[tuple[float, ...], ...]      # per hole, per kept token
    token_spans: tuple[tuple[tuple[int, int], ...], ...]
    score: float                                    # mean log-probability of kept tokens (higher is better)


@dataclass(frozen=True)
class FillResult:
    candidates: tuple[Candidate, ...]   # best first
    steps: int
    forwards: int
    tokens: int
    options: tuple[Candidate | None, ...] = ()  # per ``FillPlan.options``: the text as a candidate for the first
                                                # hole, its confidences the probabilities the first forward (every
                                                # slot masked) gave its tokens; None when it does not fit the slots


@dataclass
class Control:
    """Hooks the denoising loop calls: ``check(step)`` between steps (raises Cancelled) and
    ``draft(step, texts, confidences, pieces=None)`` after each step (``pieces``: per hole, each slot's text)."""

    check: Callable[[int], None]
    draft: Callable[..., None] | None = None


class Backend(Protocol):
    """A loaded model. The engine reads nothing else from it (no ``getattr``)."""

    name: str                  # shown in completions and logs
    default_steps: int         # the step budget of a request that sets none (``steps: 0``)
    max_positions: int         # the largest canvas (prefix + holes + suffix) in tokens
    searches_lengths: bool     # tries several hole lengths itself (rows of one batch): the engine need not
    takes_instruction: bool    # reads ``FillPlan.instruction`` (a rewrite's instruction); others never see one
    scores_text: bool          # ``score_text`` works (syntax repairs are ranked by it; else by the parser alone)
    scores_options: bool       # a fill scores its plan's ``options`` (FillResult.options); else they are ignored
    model_dir: Path | None     # the checkpoint it was loaded from: its ``confidence.json`` calibrates fills
    adapts: bool               # ``load_weights`` works (workspace adaptation, engine/adapt)

    def count_tokens(self, text: str) -> int: ...

    def fill(self, plan: FillPlan, control: Control) -> FillResult: ...

    def score_text(self, prefix: str, middle: str, suffix: str) -> float:
        """The model's log-likelihood of ``middle`` between ``prefix`` and ``suffix`` (``scores_text``); the
        context is cut to fit ``max_positions``, and a ``middle`` that cannot fit raises ``TextTooLong``."""
        ...

    def load_weights(self, path: Path | None) -> None:
        """Replace the weights with adapted ones saved at ``path``: a full set, or a LoRA adapter
        (``adapter.safetensors``, engine/adapt/lora.py) merged into the base weights (None: the checkpoint's own
        again)."""
        ...

    def stats(self) -> dict[str, object]: ...

    def close(self) -> None: ...
