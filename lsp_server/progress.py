"""The model's status for the user: ``diffusion/status``, ``$/progress`` while it loads, one message when it
fails (drafts of a request are ``drafts.py``'s). A status names its ``state`` and ``model`` in fields of their
own; its ``message`` is a sentence that adds to them (how long the load took, what is off), never a repeat."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import TYPE_CHECKING

from lsprotocol import types

from engine import EngineState

if TYPE_CHECKING:
    from .server import DiffusionServer

log = logging.getLogger(__name__)
STATUS = "diffusion/status"


class StatusReporter:
    """Model state for the client; engine callbacks arrive on the engine thread and hop to the loop."""

    def __init__(self, server: DiffusionServer):
        self.server = server
        self.client_supports_progress = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self._token: str | None = None
        self._begun = False  # the token was accepted by the client and its progress began: only then is it ended
        self._reported_error: str | None = None
        self._unreachable = False   # an outage of a remote engine was reported: told once, until it answers
        self._load_began: float | None = None
        self._ready: dict | None = None        # the last ready status (resent when the adaptation moves on)
        self._notice: str | None = None        # news for the next ready status (a team server's new model)

    def loading(self, model: str) -> None:
        self._load_began = time.monotonic()
        self._unreachable = False
        self._send(STATUS, {"state": "loading", "model": model,
                            "message": "Suggestions start when it has loaded."})
        if self.client_supports_progress and self._token is None:
            token = self._token = f"diffusion-lsp/load/{uuid.uuid4().hex[:8]}"

            def begin(*_):  # called once the client accepted the token (never when it refused it)
                if self._token != token:  # the load ended first: the token is not used
                    self.server.work_done_progress.tokens.pop(token, None)
                    return
                self._begun = True
                self.server.work_done_progress.begin(token, types.WorkDoneProgressBegin(
                    title="diffusion-lsp", message=f"loading model {model}", cancellable=False))
            self.server.work_done_progress.create(token, begin)

    def engine_state_changed(self, state: EngineState, error: str | None) -> None:
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._on_state, state, error)

    def engine_notice(self, message: str) -> None:
        """The engine's news (``Engine.on_notice``: the team server now serves another model), told with the ready
        status that follows it, once."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(setattr, self, "_notice", message)

    def _on_state(self, state: EngineState, error: str | None) -> None:
        model = self.server.settings.load.engine or self.server.settings.load.model
        if state is EngineState.READY:
            self._end_progress("model ready")
            self._reported_error = None
            self._unreachable = False
            message = "Suggestions are on." if self._load_began is None else \
                f"Loaded in {time.monotonic() - self._load_began:.1f} s; suggestions are on."
            notice, self._notice = self._notice, None
            if notice is not None:   # read again after a team server restarted with another model: said once
                message = f"{notice[0].upper()}{notice[1:]}; suggestions are on."
            self._load_began = None  # a remote engine answering again is not a load
            # instructions: whether "Rewrite selection" may ask for an instruction (the backend declares
            # ``takes_instruction``; none of today's does, so clients offer no instruction prompt)
            engine = self.server.engine
            follows = bool(engine is not None and engine.backend is not None and engine.backend.takes_instruction)
            self._ready = {"state": "ready", "model": model, "message": message, "instructions": follows}
            self._send(STATUS, self._with_adapt(self._ready))
            if notice is not None:
                self.server.window_show_message(types.ShowMessageParams(types.MessageType.Info,
                                                                        f"diffusion-lsp: {notice}."))
        elif state is EngineState.UNREACHABLE:
            self._end_progress("engine unreachable")   # (a load that found it down: each request tries again)
            if self._unreachable:   # each request of an outage fails again (in its own words): said once
                return
            self._unreachable = True
            why = (error or "no answer").rstrip(".")
            self._send(STATUS, {"state": "error", "model": model, "message":
                                f"{why}; each new request tries it again."})
            self.server.window_show_message(types.ShowMessageParams(
                types.MessageType.Error, f"diffusion-lsp: {why}. Suggestions resume when it answers."))
        elif state is EngineState.FAILED:
            self._unreachable = False
            self._end_progress("model failed to load")
            why = (error or "unknown error").rstrip(".")
            self._send(STATUS, {"state": "error", "model": model, "message":
                                f"Could not load it: {why}; suggestions are off until a setting fixes it."})
            if error != self._reported_error:  # once per distinct failure, not per request
                self._reported_error = error
                self.server.window_show_message(types.ShowMessageParams(
                    types.MessageType.Error,
                    f"diffusion-lsp: the model could not be loaded: {error}. Completions are off until the "
                    + ("engine answers and a setting changes." if self.server.settings.load.engine else
                       "setting that fixes it changes (model, device, dtype, quantization).")))

    def _with_adapt(self, params: dict) -> dict:
        summary = self.server.adapter.summary()
        return {**params, "adapt": summary} if summary is not None else params

    def adapt_changed(self) -> None:
        """The workspace adaptation moved on (started, adopted, rejected): the ready status again, with it."""
        engine = self.server.engine
        if self._ready is not None and engine is not None and engine.state is EngineState.READY:
            self._send(STATUS, self._with_adapt(self._ready))

    def _end_progress(self, message: str) -> None:
        """End the load's progress if it began; a token the client refused or has not accepted yet is
        dropped (it is never begun then)."""
        if self._token is not None:
            token, self._token, begun, self._begun = self._token, None, self._begun, False
            if not begun:
                return
            try:
                self.server.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
                self.server.work_done_progress.tokens.pop(token, None)
            except Exception as exc:  # noqa: BLE001 (the client may not have created the token)
                log.debug("progress end failed: %s", exc)

    def _send(self, method: str, params: dict) -> None:
        self.server.protocol.notify(method, params)
