"""How likely a fill is exactly right: features the engine already has, a fitted logistic model, abstention.

The features come from the fills of one hole (one per length tried): the mean and the weakest
log-confidence of the fill's tokens, its length, whether another length wrote the same text, whether
it repeats a line of the document, whether it uses a name the document defines nowhere
(``engine.names``), the hole kind and the language. The weights are fitted on held-out development
sets (``python -m benchmarks.calibrate``, never on HumanEval) and stored as ``confidence.json`` next to
the model; a model without that file gets no estimate (``None``) and nothing is withheld.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .config import FillOptions
from .languages import LanguageSpec
from .names import invented_names
from .requests import HoleFill, HoleKind

CALIBRATION_FILE = "confidence.json"
FEATURES = ("mean_log", "min_log", "log_tokens", "agree", "alone", "repeats_line", "invented",
            "kind_inline", "kind_block", "python")


@dataclass(frozen=True)
class Calibration:
    """A logistic model over ``FEATURES``: P(right) = sigmoid(bias + sum(weight * feature))."""

    weights: dict[str, float]
    bias: float
    min_confidence: float = 0.0    # the default bar chosen on the development set
    very_high: float = 1.0         # a fill with an invented name survives alone only at or above this
    fitted_on: str = ""

    def probability(self, features: dict[str, float]) -> float:
        z = self.bias + sum(w * features.get(name, 0.0) for name, w in self.weights.items())
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def to_json(self) -> dict:
        return {"weights": self.weights, "bias": self.bias, "min_confidence": self.min_confidence,
                "very_high": self.very_high, "fitted_on": self.fitted_on, "features": list(FEATURES)}


@functools.cache
def load_calibration(model_dir: Path) -> Calibration | None:
    """The calibration stored beside a model, or ``None`` when it has none."""
    path = Path(model_dir) / CALIBRATION_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return Calibration({k: float(v) for k, v in data["weights"].items()}, float(data["bias"]),
                       float(data.get("min_confidence", 0.0)), float(data.get("very_high", 1.0)),
                       str(data.get("fitted_on", "")))


def features(fill: HoleFill, others: Sequence[HoleFill], text: str, spec: LanguageSpec,
             kind: HoleKind) -> dict[str, float]:
    """The features of ``fill`` (one of the valid fills of a hole in ``text``; ``others`` the rest)."""
    logs = [math.log(max(c, 1e-9)) for c in fill.confidences] or [math.log(1e-9)]
    body = fill.text.strip()
    lines = {line.strip() for line in text.splitlines()} - {""}
    return {
        "mean_log": sum(logs) / len(logs),
        "min_log": min(logs),
        "log_tokens": math.log1p(len(fill.confidences)),
        "agree": float(any(o.text.strip() == body for o in others)),
        "alone": float(not others),
        "repeats_line": float(body in lines),
        "invented": float(bool(invented_names(spec, text, fill.start, fill.text, fill.end))),
        "kind_inline": float(kind is HoleKind.INLINE),
        "kind_block": float(kind in (HoleKind.BLOCK, HoleKind.SPAN)),
        "python": float(spec.name == "python"),
    }


def assess(fills: Sequence[HoleFill], text: str, spec: LanguageSpec, kind: HoleKind,
           calibration: Calibration | None) -> list[tuple[HoleFill, dict[str, float]]]:
    """Each valid fill of one hole with its estimate (``HoleFill.confidence``) and features."""
    out = []
    for i, fill in enumerate(fills):
        feats = features(fill, [f for j, f in enumerate(fills) if j != i], text, spec, kind)
        p = calibration.probability(feats) if calibration else None
        out.append((replace(fill, confidence=None if p is None else round(p, 4)), feats))
    return out


def _rank(names_rule: bool):
    """Sort key: fills without invented names first, then the highest mean log-confidence. (Ranking the
    lengths by the estimate instead lost pass@1 on the development set's fills: the estimate is fitted
    to say whether a fill is right, not which of two is better; it decides only whether to offer.)"""
    def key(item):
        _, feats = item
        return (names_rule and feats["invented"] > 0, -feats["mean_log"])
    return key


def choose(assessed: Sequence[tuple[HoleFill, dict[str, float]]], calibration: Calibration | None,
           min_confidence: float | None = None, names_rule: bool = True) -> HoleFill | None:
    """The fill to offer, or ``None`` to abstain.

    Fills without invented names rank first (``names_rule``), then by their mean log-confidence. A fill
    with an invented name is offered only when its estimate reaches the calibration's ``very_high``; any
    fill only when it reaches ``min_confidence`` (``None``: the calibration's default; no calibration: no
    bar).
    """
    if not assessed:
        return None

    fill, feats = min(assessed, key=_rank(names_rule))
    if calibration is None or fill.confidence is None:
        return None if names_rule and feats["invented"] > 0 else fill
    bar = calibration.min_confidence if min_confidence is None else min_confidence
    if names_rule and feats["invented"] > 0 and fill.confidence < calibration.very_high:
        return None
    return fill if fill.confidence >= bar else None


def offer(fills: Sequence[HoleFill], text: str, spec: LanguageSpec, kind: HoleKind,
          options: FillOptions, model_dir: Path | None) -> tuple[HoleFill | None, tuple[HoleFill, ...]]:
    """The fill to offer for one hole (``None``: withheld) and every valid fill with its estimate.
    Cursor holes (the rest of a line, a line, a body after an opener) are withheld below the bar; a
    selection (a rewrite: the user asked for it) always gets its best fill. ``model_dir``: where the
    backend's checkpoint (and its calibration) lives; None: no calibration."""
    calibration = load_calibration(model_dir) if model_dir is not None else None
    assessed = assess(fills, text, spec, kind, calibration)
    considered = tuple(f for f, _ in assessed)
    if kind is not HoleKind.SPAN:
        return choose(assessed, calibration, options.min_confidence, options.names_rule), considered
    return (min(assessed, key=_rank(options.names_rule))[0] if assessed else None), considered
