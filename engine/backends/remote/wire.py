"""The team server's wire format, version 1: JSON for plans, results, drafts and capabilities (no torch here).

``POST /v1/fill`` takes ``{"version", "id", "plan", "drafts"}`` and answers newline-delimited JSON events:
``{"event": "start", "replica", "digest"}`` (the process serving it, what it serves), one ``{"event": "step",
"step"}`` per denoising step (with ``texts``, ``confidences`` and ``pieces`` when drafts were asked for), then
``{"event": "result", "result"}`` or ``{"event": "error", "kind", "message"}``. ``GET /v1/info`` answers the
capabilities, the tokenizer, the calibration, the decoding and their ``digest``; ``POST /v1/score`` ``{"prefix",
"middle", "suffix"}`` -> ``{"score", "digest"}`` (a middle over the model's positions: HTTP 422 ``{"error"}``);
``POST /v1/tokenize`` ``{"text"}`` -> ``{"count", "digest"}``;
``POST /v1/cancel`` ``{"id"}``; ``GET /v1/stats``.
A request with another ``version`` is refused (HTTP 400) rather than misread, and so is a plan the model cannot run
(no hole, a threshold that is not a finite number >= 0, a canvas over the model's positions: ``Denoiser.check_plan``);
a body over ``MAX_BODY`` bytes is refused unread (HTTP 413).

``digest`` (``info_digest``) names what a server serves: everything of ``/v1/info`` a client reads once and keeps
(model, capabilities, positions, tokenizer, calibration, decoding). A client sends the digest it connected to with
each fill, score and tokenize request; a server serving another refuses it with HTTP 409 ``{"error", "digest",
"model"}`` (the client reads ``/v1/info`` again), and a client also checks the digest of a stream's first event and
of an answer. The field is optional within version 1, so clients and servers from before it work together as they
did: a server that sends no digest is not checked, and a request without one is served.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from ..base import Candidate, FillPlan, FillResult, HoleSpec, Piece

VERSION = 1
MAX_BODY = 64 << 20  # bytes of a request's body (HTTP 413 above): the language server's largest message by default
                     # (a ``score`` from a client before ``score_window`` sent a repair's whole document)
MAX_OPTIONS = 256   # plan.options a fill may carry (the engine sends at most doclines.MOST + worklines.MOST
                    # + commonlines.MOST)
CAPABILITIES = ("name", "default_steps", "max_positions", "searches_lengths", "takes_instruction", "scores_text",
                "scores_options")


class WireError(ValueError):
    """A message that does not follow this format."""


def info_digest(info: dict[str, Any]) -> str:
    """The digest of what a ``/v1/info`` states (all of it but ``digest`` and ``batches``, which no client keeps):
    16 hex digits of the SHA-256 of its canonical JSON. The same for every replica serving the same model."""
    kept = {k: v for k, v in info.items() if k not in ("digest", "batches")}
    canonical = json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _hole_json(hole: HoleSpec) -> dict[str, Any]:
    return {"max_tokens": hole.max_tokens, "stop_at_newline": hole.stop_at_newline,
            "keep_newline": hole.keep_newline, "init": hole.init}


def plan_json(plan: FillPlan) -> dict[str, Any]:
    pieces = [{"text": p} if isinstance(p, str) else {"hole": _hole_json(p)} for p in plan.pieces]
    return {"pieces": pieces, "steps": plan.steps, "threshold": plan.threshold, "instruction": plan.instruction,
            "options": list(plan.options)}


def _expect(value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise WireError(f"{what} must be {getattr(kind, '__name__', kind)}, got {type(value).__name__}")
    return value


def plan_from_json(data: Any) -> FillPlan:
    _expect(data, dict, "plan")
    pieces: list[Piece] = []
    for piece in _expect(data.get("pieces"), list, "plan.pieces"):
        _expect(piece, dict, "a piece")
        if "text" in piece:
            pieces.append(_expect(piece["text"], str, "a piece's text"))
            continue
        hole = _expect(piece.get("hole"), dict, "a piece's hole")
        max_tokens = _expect(hole.get("max_tokens"), int, "hole.max_tokens")
        if not 1 <= max_tokens <= 1 << 16:
            raise WireError(f"hole.max_tokens out of range: {max_tokens}")
        init = hole.get("init")
        pieces.append(HoleSpec(max_tokens, bool(hole.get("stop_at_newline", False)),
                               bool(hole.get("keep_newline", False)),
                               None if init is None else _expect(init, str, "hole.init")))
    if not any(isinstance(p, HoleSpec) for p in pieces):
        raise WireError("plan.pieces has no hole: a fill needs at least one")
    steps = _expect(data.get("steps"), int, "plan.steps")
    if not 1 <= steps <= 4096:
        raise WireError(f"plan.steps out of range: {steps}")
    threshold = _expect(data.get("threshold", 0.0), (int, float), "plan.threshold")
    if isinstance(threshold, int) and abs(threshold) < 1 << 64:
        threshold = float(threshold)
    if not (isinstance(threshold, float) and math.isfinite(threshold) and threshold >= 0):
        raise WireError(f"plan.threshold must be a finite number >= 0, not {threshold!r}")
    instruction = data.get("instruction")
    options = tuple(_expect(o, str, "an option") for o in _expect(data.get("options", []), list, "plan.options"))
    if len(options) > MAX_OPTIONS:
        raise WireError(f"plan.options: {len(options)} texts, at most {MAX_OPTIONS}")
    return FillPlan(tuple(pieces), steps, threshold,
                    None if instruction is None else _expect(instruction, str, "plan.instruction"), options)


def _candidate_json(c: Candidate) -> dict[str, Any]:
    return {"texts": list(c.texts), "confidences": [list(x) for x in c.confidences],
            "token_spans": [[list(s) for s in spans] for spans in c.token_spans], "score": c.score}


def _candidate(c: Any) -> Candidate:
    return Candidate(tuple(str(t) for t in c["texts"]),
                     tuple(tuple(float(x) for x in conf) for conf in c["confidences"]),
                     tuple(tuple((int(a), int(b)) for a, b in spans) for spans in c["token_spans"]),
                     float(c["score"]))


def result_json(result: FillResult) -> dict[str, Any]:
    return {"candidates": [_candidate_json(c) for c in result.candidates],
            "steps": result.steps, "forwards": result.forwards, "tokens": result.tokens,
            "options": [None if o is None else _candidate_json(o) for o in result.options]}


def result_from_json(data: Any) -> FillResult:
    try:
        candidates = tuple(_candidate(c) for c in data["candidates"])
        options = tuple(None if o is None else _candidate(o) for o in data.get("options") or ())
        return FillResult(candidates, int(data["steps"]), int(data["forwards"]), int(data["tokens"]), options)
    except (KeyError, TypeError, ValueError) as exc:
        raise WireError(f"malformed result: {exc!r}") from None


def step_event(step: int, texts: Any = None, confidences: Any = None, pieces: Any = None) -> dict[str, Any]:
    event: dict[str, Any] = {"event": "step", "step": step}
    if texts is not None:
        event.update(texts=list(texts), confidences=[list(c) for c in confidences or ()],
                     pieces=[list(p) for p in pieces or ()])
    return event
