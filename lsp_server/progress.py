"""What the server tells the user while it works: model status ($/progress, diffusion/status, one
message on failure) and the draft stream of a denoising request (diffusion/draft)."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import TYPE_CHECKING

from lsprotocol import types

from engine import Draft, EngineState

if TYPE_CHECKING:
    from .server import DiffusionServer

log = logging.getLogger(__name__)
STATUS = "diffusion/status"
DRAFT = "diffusion/draft"


class StatusReporter:
    """Model state for the client; engine callbacks arrive on the engine thread and hop to the loop."""

    def __init__(self, server: DiffusionServer):
        self.server = server
        self.client_supports_progress = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self._token: str | None = None
        self._reported_error: str | None = None

    def loading(self, model: str) -> None:
        self._send(STATUS, {"state": "loading", "model": model, "message": f"loading {model}"})
        if self.client_supports_progress and self._token is None:
            token = self._token = f"diffusion-lsp/load/{uuid.uuid4().hex[:8]}"

            def begin(*_):
                if self._token == token:
                    self.server.work_done_progress.begin(token, types.WorkDoneProgressBegin(
                        title="diffusion-lsp", message=f"loading model {model}", cancellable=False))
            self.server.work_done_progress.create(token, begin)

    def engine_state_changed(self, state: EngineState, error: str | None) -> None:
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._on_state, state, error)

    def _on_state(self, state: EngineState, error: str | None) -> None:
        model = self.server.settings.model
        if state is EngineState.READY:
            self._end_progress("model ready")
            self._reported_error = None
            # instructions: whether "Rewrite selection" may ask for an instruction (a backend announces
            # ``follows_instructions``; none of today's does, so clients offer no instruction prompt)
            engine = getattr(self.server, "engine", None)
            follows = bool(getattr(getattr(engine, "backend", None), "follows_instructions", False))
            self._send(STATUS, {"state": "ready", "model": model, "message": f"{model} ready",
                                "instructions": follows})
        elif state is EngineState.FAILED:
            self._end_progress("model failed to load")
            self._send(STATUS, {"state": "error", "model": model, "message": error or "load failed"})
            if error != self._reported_error:  # once per distinct failure, not per request
                self._reported_error = error
                self.server.window_show_message(types.ShowMessageParams(
                    types.MessageType.Error,
                    f"diffusion-lsp: the model could not be loaded: {error}. Completions are off until the "
                    f"'model' setting points to a valid checkpoint."))

    def _end_progress(self, message: str) -> None:
        if self._token is not None:
            token, self._token = self._token, None
            try:
                self.server.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
            except Exception as exc:  # the client may not have created the token
                log.debug("progress end failed: %s", exc)

    def _send(self, method: str, params: dict) -> None:
        self.server.protocol.notify(method, params)


class DraftStream:
    """Forwards a request's drafts to the client at most every ``interval`` seconds, final one always."""

    def __init__(self, server: DiffusionServer, loop: asyncio.AbstractEventLoop, uri: str, version: int,
                 request_id: str, interval_ms: int, progress_token: types.ProgressToken | None = None):
        self.server, self.loop, self.uri, self.version, self.id = server, loop, uri, version, request_id
        self.interval = interval_ms / 1000
        self.token = progress_token
        self.range: dict | None = None
        self._last = 0.0
        self._began = False

    def on_draft(self, draft: Draft) -> None:
        """Engine thread: throttle, then hop to the loop."""
        now = time.monotonic()
        if now - self._last < self.interval:
            return
        self._last = now
        self.loop.call_soon_threadsafe(self._emit, draft.step, draft.texts[0] if draft.texts else "",
                                       draft.confidences[0] if draft.confidences else (), False,
                                       draft.pieces[0] if draft.pieces else ())

    def finish(self, step: int, text: str, confidences: tuple[float, ...], tokens: tuple[str, ...] = (),
               estimate: float | None = None) -> None:
        self._emit(step, text, confidences, True, tokens, estimate)

    def _emit(self, step: int, text: str, confidences, done: bool, tokens: tuple[str, ...] = (),
              estimate: float | None = None) -> None:
        if self.server.settings.drafts:
            pieces = tokens or _split_draft(text, len(confidences))
            self.server.protocol.notify(DRAFT, {
                "uri": self.uri, "version": self.version, "id": self.id, "step": step, "done": done,
                "range": self.range, "text": text,
                "tokens": [{"text": p, "confidence": round(float(c), 3)} for p, c in zip(pieces, confidences)],
                **({"fillConfidence": estimate} if done and estimate is not None else {}),
            })
        if self.token is not None:
            self._progress(step, text, done)

    def _progress(self, step: int, text: str, done: bool) -> None:
        first_line = text.splitlines()[0] if text else ""
        if not self._began:
            self._began = True
            self.server.work_done_progress.begin(self.token, types.WorkDoneProgressBegin(
                title="diffusion", message=first_line, cancellable=True))
        if done:
            self.server.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=first_line))
        else:
            self.server.work_done_progress.report(self.token, types.WorkDoneProgressReport(
                message=f"step {step}: {first_line}"))


def _split_draft(text: str, n: int) -> list[str]:
    """Best-effort per-token pieces of a draft (mask glyphs are one token each)."""
    return list(text) if len(text) == n else [text] + [""] * max(0, n - 1)
