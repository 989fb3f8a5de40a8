"""How likely a fill is exactly right: features the engine already has, a fitted logistic model, abstention.

The features come from the fills of one hole (one per length tried): the mean and the weakest
log-confidence of the fill's tokens (and the second weakest, the first token's, the share below one
half), its length in tokens and characters, whether another length wrote the same text, how many lengths
gave a valid fill, whether it repeats a line of the document or the line above, whether it uses a name
the document defines nowhere (``engine.names``), the hole kind and the language (one indicator per
language but Python: the calibration is per language), and for a line taken from the document
(``engine.doclines``: its confidences are first-forward probabilities, not the denoiser's) an indicator and
its mean log-probability, and for a line of the workspace's files (``engine.worklines``) or a line code often
has (``engine.commonlines``) one more indicator and its prior. (How far away the copied line is, and on which
side, got weights near 0 on the development holes and changed no pick: not used.) The weights are fitted on
held-out development sets of every language (``python -m benchmarks.calibrate``, never on HumanEval) and stored as
``confidence.json`` next to the model; a weight the file does not name is 0, so a calibration fitted on
fewer features still loads; a model without that file gets no estimate (``None``) and nothing is withheld.

A language the engine has no grammar for (plain text: C, Java, Ruby, ...) has no indicator of its own and no parse
to refuse a fill, and the fitted model overrates its fills there (it reads them as Python's). The file's
``plain_text`` entry corrects that: the estimate's log-odds scaled and shifted, fitted on development holes of such
languages (``benchmarks.calibrate_plain``), applied where the fill's ``plain_text`` feature is 1, and shifted once
more per regime (``PLAIN_SHIFTS``): where the request's workspace counts files of its language (``plain_workspace``:
their lines were there to fill it, ``engine.worklines``), where the hole is the rest of a typed line
(``kind_inline``), and where both (``plain_workspace_inline``). The regimes differ: on the same holes, filled alone as
whole lines, the fitted model overrated the fills (right 17%, estimated 33%); with the package's files as the
workspace it rated them about right, and typed lines came between.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .backends.base import Backend
from .config import FillOptions
from .languages import PLAIN, LanguageSpec
from .names import invented_names
from .requests import HoleFill, HoleKind, ModelLoadError

CALIBRATION_FILE = "confidence.json"
# the features a plain-text fill's corrected log-odds are shifted by (``Calibration.plain_shifts``)
PLAIN_SHIFTS = ("plain_workspace", "kind_inline", "plain_workspace_inline")
LANGUAGES = ("python", "javascript", "typescript", "go", "rust")   # python is the base: no indicator
FEATURES = ("mean_log", "min_log", "second_log", "first_log", "low_share", "log_tokens", "log_chars", "agree",
            "alone", "valid_lengths", "repeats_line", "repeats_above", "invented", "kind_inline", "kind_block",
            *(f"lang_{name}" for name in LANGUAGES[1:]), "copied", "copied_mean_log", "common", "common_prior",
            "workspace", "workspace_prior", "neighbour", "neighbour_prior", "between")
SIGNALS = ("pll_mean", "renoise_same", "renoise_mean_log")   # model_signals: measured, not computed per fill


@dataclass(frozen=True)
class Calibration:
    """A logistic model over ``FEATURES``: P(right) = sigmoid(bias + sum(weight * feature))."""

    weights: dict[str, float]
    bias: float
    min_confidence: float = 0.0    # the default bar chosen on the development set
    very_high: float = 1.0         # a fill with an invented name survives alone only at or above this
    fitted_on: str = ""
    # a plain-text language's log-odds as ``scale * z + shift`` (None: left as they are); what they were fitted on
    plain_text: tuple[float, float] | None = None
    plain_fitted_on: str = ""
    plain_shifts: tuple[tuple[str, float], ...] = ()   # (feature, shift): added where that feature is 1

    def log_odds(self, features: dict[str, float]) -> float:
        """The fitted model's log-odds, before the plain-text correction."""
        return self.bias + sum(w * features.get(name, 0.0) for name, w in self.weights.items())

    def probability(self, features: dict[str, float]) -> float:
        z = self.log_odds(features)
        if self.plain_text is not None and features.get("plain_text"):
            scale, shift = self.plain_text
            z = scale * z + shift + sum(v * features.get(name, 0.0) for name, v in self.plain_shifts)
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def to_json(self) -> dict:
        out = {"weights": self.weights, "bias": self.bias, "min_confidence": self.min_confidence,
               "very_high": self.very_high, "fitted_on": self.fitted_on, "features": list(FEATURES)}
        if self.plain_text is not None:
            out["plain_text"] = {"scale": self.plain_text[0], "shift": self.plain_text[1],
                                 "shifts": dict(self.plain_shifts), "fitted_on": self.plain_fitted_on}
        return out


@functools.cache
def load_calibration(model_dir: Path) -> Calibration | None:
    """The calibration stored beside a model, or ``None`` when it has none; a file that is not one is a
    ``ModelLoadError`` (the engine reads it as the model loads, so a broken file fails the load, not every fill)."""
    path = Path(model_dir) / CALIBRATION_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        weights = {str(k): float(v) for k, v in data["weights"].items()}
        plain = data.get("plain_text")
        shifts = {} if plain is None else plain.get("shifts", {})
        if not isinstance(shifts, dict):
            raise ValueError("plain_text's shifts are not an object of feature names and numbers")
        return Calibration(weights, float(data["bias"]),
                           float(data.get("min_confidence", 0.0)), float(data.get("very_high", 1.0)),
                           str(data.get("fitted_on", "")),
                           None if plain is None else (float(plain["scale"]), float(plain["shift"])),
                           "" if plain is None else str(plain.get("fitted_on", "")),
                           tuple((str(k), float(v)) for k, v in shifts.items()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        detail = f"no {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
        raise ModelLoadError(f"unreadable calibration {path}: {detail}") from None


def language_of(spec: LanguageSpec) -> str:
    """The calibration's language for a grammar (TSX is TypeScript)."""
    return "typescript" if spec.name == "typescriptreact" else spec.name


def _line_above(text: str, at: int) -> str:
    """The last non-blank line ending before ``at`` (the text before it on its own line counts), stripped;
    found by scanning back, not by copying the prefix (a cursor near the end of a large file)."""
    end = at
    while end > 0:
        lo = text.rfind("\n", 0, end) + 1
        line = text[lo:end].strip()
        if line:
            return line
        end = lo - 1
    return ""


class Document:
    """What the features read of the document a hole's fills go into, each computed once however many fills (and
    how many times each: ``offer`` assesses the competing fills, then the pool of alternatives) ask: the document's
    stripped lines and each fill's invented names (``engine.names`` parses the filled document)."""

    def __init__(self, text: str, spec: LanguageSpec, defined: frozenset[str] = frozenset()):
        self.text, self.spec, self.defined = text, spec, defined   # defined: names the package's other files define
        self._invented: dict[tuple[int, int, str], bool] = {}

    @functools.cached_property
    def lines(self) -> frozenset[str]:
        return frozenset(line.strip() for line in self.text.splitlines()) - {""}

    def invents(self, fill: HoleFill) -> bool:
        key = (fill.start, fill.end, fill.text)
        if key not in self._invented:
            self._invented[key] = bool(invented_names(self.spec, self.text, fill.start, fill.text, fill.end,
                                                             self.defined))
        return self._invented[key]


def features(fill: HoleFill, others: Sequence[HoleFill], text: str, spec: LanguageSpec,
             kind: HoleKind, document: Document | None = None, in_workspace: bool = False) -> dict[str, float]:
    """The features of ``fill`` (one of the valid fills of a hole in ``text``; ``others`` the rest). ``document``:
    ``text``'s ``Document``, kept between the fills of one hole. ``in_workspace``: the request's workspace counts
    files of its language (``Completion.workspace_counted``)."""
    document = document if document is not None else Document(text, spec)
    logs = [math.log(max(c, 1e-9)) for c in fill.confidences] or [math.log(1e-9)]
    ordered = sorted(logs)
    body = fill.text.strip()
    lines = document.lines
    above = _line_above(text, fill.start)
    language = language_of(spec)
    mean_log = sum(logs) / len(logs)
    return {
        "mean_log": mean_log,
        "min_log": ordered[0],
        "second_log": ordered[min(1, len(ordered) - 1)],
        "first_log": logs[0],
        "low_share": sum(c < 0.5 for c in fill.confidences) / max(1, len(fill.confidences)),
        "log_tokens": math.log1p(len(fill.confidences)),
        "log_chars": math.log1p(len(body)),
        "agree": float(any(o.text.strip() == body for o in others)),
        "alone": float(not others),
        "valid_lengths": float(1 + len(others)),
        "repeats_line": float(body in lines),
        "repeats_above": float(bool(body) and body == above),
        "invented": float(document.invents(fill)),
        "kind_inline": float(kind is HoleKind.INLINE),
        "kind_block": float(kind in (HoleKind.BLOCK, HoleKind.SPAN)),
        **{f"lang_{name}": float(language == name) for name in LANGUAGES[1:]},
        "copied": float(fill.copied),
        "copied_mean_log": mean_log if fill.copied else 0.0,
        "common": float(fill.common is not None),
        "common_prior": fill.common or 0.0,
        "workspace": float(fill.workspace is not None),
        "workspace_prior": fill.workspace or 0.0,
        "neighbour": float(fill.neighbour is not None),
        "neighbour_prior": fill.neighbour or 0.0,
        "between": float(fill.between),
        "plain_text": float(spec.name == PLAIN.name),   # not fitted: read by ``Calibration.plain_text``
        "plain_workspace": float(spec.name == PLAIN.name and in_workspace),   # ... and ``plain_shifts``
        "plain_workspace_inline": float(spec.name == PLAIN.name and in_workspace and kind is HoleKind.INLINE),
    }


def assess(fills: Sequence[HoleFill], text: str, spec: LanguageSpec, kind: HoleKind,
           calibration: Calibration | None, document: Document | None = None, in_workspace: bool = False
           ) -> list[tuple[HoleFill, dict[str, float]]]:
    """Each valid fill of one hole with its estimate (``HoleFill.confidence``) and features (``in_workspace``: as
    ``features``)."""
    document = document if document is not None else Document(text, spec)
    out = []
    for i, fill in enumerate(fills):
        feats = features(fill, [f for j, f in enumerate(fills) if j != i], text, spec, kind, document, in_workspace)
        p = calibration.probability(feats) if calibration else None
        out.append((replace(fill, confidence=None if p is None else round(p, 4)), feats))
    return out


def _rank(names_rule: bool, copy_first: bool = False):
    """Sort key: fills without invented names first, then a copied line (the document's or a common one)
    before or after the model's fills (``copy_first``), then the highest mean log-confidence. (Ranking the
    lengths by the estimate instead lost pass@1 on the development set's fills: the estimate is fitted to say
    whether a fill is right, not which of two is better; it decides only whether to offer. A copied line's
    confidences are of another kind, so it is placed by ``copy_first``.)"""
    def key(item):
        fill, feats = item
        return (names_rule and feats["invented"] > 0, fill.copied != copy_first, -feats["mean_log"])
    return key


def copy_first(assessed: Sequence[tuple[HoleFill, dict[str, float]]], names_rule: bool = True) -> bool:
    """Does the copied line (``HoleFill.copied``: the document's or a common one) rank before the model's best
    fill? Yes when it is the only fill, when the model's best invents a name and it does not (``names_rule``),
    or when its estimate is the higher; without estimates (no calibration), yes: on the development holes a
    copied line was right 15 times as often as the model's fill (149 against 6 of 1,900 typed holes, no bar)."""
    copies = [item for item in assessed if item[0].copied]
    model = [item for item in assessed if not item[0].copied]
    if not copies:
        return False
    if not model:
        return True
    copy = min(copies, key=_rank(names_rule, True))
    best = min(model, key=_rank(names_rule))
    if names_rule and (best[1]["invented"] > 0) != (copy[1]["invented"] > 0):
        return best[1]["invented"] > 0
    if copy[0].confidence is not None and best[0].confidence is not None:
        return copy[0].confidence > best[0].confidence
    return True


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

    fill, feats = min(assessed, key=_rank(names_rule, copy_first(assessed, names_rule)))
    if calibration is None or fill.confidence is None:
        return None if names_rule and feats["invented"] > 0 else fill
    bar = calibration.min_confidence if min_confidence is None else min_confidence
    if names_rule and feats["invented"] > 0 and fill.confidence < calibration.very_high:
        return None
    return fill if fill.confidence >= bar else None


def offer(fills: Sequence[HoleFill], text: str, spec: LanguageSpec, kind: HoleKind, options: FillOptions,
          model_dir: Path | None, others: Sequence[HoleFill] = (), defined: frozenset[str] = frozenset(),
          document: Document | None = None, in_workspace: bool = False
          ) -> tuple[HoleFill | None, tuple[HoleFill, ...], tuple[HoleFill, ...]]:
    """The fill to offer for one hole (``None``: withheld), every competing fill with its estimate, and the
    alternatives: the other distinct fills (``others`` included: a length's later candidates) that would be
    offered on their own, best first, at most ``options.max_alternatives - 1``.

    ``fills`` are the fills that compete for the answer (each length's first valid fill). Cursor holes (the
    rest of a line, a line, a body after an opener) are withheld below the bar; a selection (a rewrite:
    the user asked for it) always gets its best fill. ``model_dir``: where the backend's checkpoint (and
    its calibration) lives; None: no calibration. ``defined``: the names the other files of the document's package
    define (``engine.worklines.Workspace.defined``), not invented. ``document``: ``text``'s ``Document`` with those
    ``defined`` names, where the caller has asked it already (its fills' names are read once). ``in_workspace``: the
    request's workspace counts files of its language (a plain-text fill's estimate reads it: ``Calibration``)."""
    calibration = load_calibration(model_dir) if model_dir is not None else None
    document = document if document is not None else Document(text, spec, defined)
    assessed = assess(fills, text, spec, kind, calibration, document, in_workspace)
    considered = tuple(f for f, _ in assessed)
    first = copy_first(assessed, options.names_rule)
    if kind is not HoleKind.SPAN:
        chosen = choose(assessed, calibration, options.min_confidence, options.names_rule)
    else:
        chosen = min(assessed, key=_rank(options.names_rule, first))[0] if assessed else None
    if chosen is None or options.max_alternatives <= 1:
        return chosen, considered, ()
    pool = [item for item in assess([*fills, *others], text, spec, kind, calibration, document, in_workspace)
            if item[0].text != chosen.text or (item[0].start, item[0].end) != (chosen.start, chosen.end)]
    if kind is not HoleKind.SPAN:
        pool = [item for item in pool if choose([item], calibration, options.min_confidence, options.names_rule)]
    pool.sort(key=_rank(options.names_rule, first))
    return chosen, considered, tuple(f for f, _ in pool[:options.max_alternatives - 1])


def model_signals(backend: Backend, spec: LanguageSpec, text: str, fill: HoleFill, steps: int = 4,
                  prefix_tokens: int = 160, suffix_tokens: int = 64) -> dict[str, float]:
    """Signals that cost the model more forwards, measured by ``benchmarks.confidence_set --signals``:
    the fill's pseudo-log-likelihood (``score_text``, per token: ``pll_mean``) and its stability under
    re-noising (the fill as a rewrite's start: its weakest tokens re-masked and denoised again in ``steps``
    steps; ``renoise_same`` is 1 when the same text comes back)."""
    from .backends.base import Control, FillPlan, HoleSpec
    from .context import window

    n = max(1, backend.count_tokens(fill.text))
    out: dict[str, float] = {"pll_mean": 0.0, "renoise_same": 0.0, "renoise_mean_log": math.log(1e-9)}
    if backend.scores_text:
        out["pll_mean"] = backend.score_text(text[:fill.start], fill.text, text[fill.end:]) / n
    win = window(spec, text, fill.start, fill.end, backend.count_tokens, prefix_tokens, suffix_tokens)
    one_line = "\n" not in fill.text.rstrip("\n")
    plan = FillPlan((win.prefix, HoleSpec(n, one_line, one_line, fill.text), win.suffix), steps=steps, threshold=0.0)
    result = backend.fill(plan, Control(lambda step: None))
    again = result.candidates[0]
    out["renoise_same"] = float(_norm(again.texts[0]) == _norm(fill.text))
    logs = [math.log(max(c, 1e-9)) for c in again.confidences[0]]
    if logs:
        out["renoise_mean_log"] = sum(logs) / len(logs)
    return out


def _norm(code: str) -> str:
    return "\n".join(line.rstrip() for line in code.split("\n")).strip("\n")
