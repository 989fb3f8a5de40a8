"""The draft stream of a code action: every hole's developing text as ``diffusion/draft`` (for clients
that opt in) and ``$/progress`` (for clients that show progress), throttled, the final text last."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from typing import TYPE_CHECKING

from lsprotocol import types

from engine import Draft

from .documents import Document
from .progress import DRAFT

if TYPE_CHECKING:
    from .server import DiffusionServer

log = logging.getLogger(__name__)
_ids = itertools.count(1)
_CREATE_TIMEOUT = 2.0  # seconds a client may take to accept a progress token


def range_json(r: types.Range) -> dict:
    return {"start": {"line": r.start.line, "character": r.start.character},
            "end": {"line": r.end.line, "character": r.end.character}}


def hole_json(range_: dict, text: str, pieces, confidences) -> dict:
    return {"range": range_, "text": text,
            "tokens": [{"text": p, "confidence": round(float(c), 3)} for p, c in zip(pieces, confidences)]}


class ActionStream:
    """Forwards an action's drafts at most every ``interval``; ``finish`` sends the final holes."""

    def __init__(self, server: DiffusionServer, doc: Document, action: str, ranges: list[dict],
                 progress_token: types.ProgressToken | None):
        self.server, self.loop = server, asyncio.get_running_loop()
        self.uri, self.version, self.action, self.ranges = doc.uri, doc.version, action, ranges
        self.id = f"action-{next(_ids)}"
        self.interval = server.settings.draft_interval_ms / 1000
        self.token = progress_token
        self._last = 0.0
        self._began = False

    @classmethod
    async def open(cls, server: DiffusionServer, doc: Document, action: str, title: str,
                   ranges: list[dict]) -> ActionStream | None:
        """A stream when the client wants drafts or shows progress (a server-created token), else None."""
        token = None
        if server.status.client_supports_progress:
            token = f"diffusion-lsp/action/{next(_ids)}"
            try:
                await asyncio.wait_for(server.work_done_progress.create_async(token), _CREATE_TIMEOUT)
            except Exception as exc:  # the client refused the token or never answered: drafts only
                log.debug("progress token %s not created: %r", token, exc)
                token = None
        if token is None and not server.settings.drafts:
            return None
        stream = cls(server, doc, action, ranges, token)
        if token is not None:
            stream._began = True
            server.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=True))
            stream._cancel_with_progress(asyncio.current_task())
        return stream

    def _cancel_with_progress(self, task: asyncio.Task | None) -> None:
        """The client's cancel button (window/workDoneProgress/cancel) cancels the request's task."""
        cancelled = self.server.work_done_progress.tokens.get(self.token)
        if task is not None and cancelled is not None:
            cancelled.add_done_callback(
                lambda f: f.cancelled() and self._began and self.loop.call_soon_threadsafe(task.cancel))

    def on_draft(self, draft: Draft) -> None:
        """Engine thread: throttle, then hop to the loop."""
        now = time.monotonic()
        if now - self._last < self.interval:
            return
        self._last = now
        holes = [hole_json(r, text, pieces, confs)
                 for r, text, pieces, confs in zip(self.ranges, draft.texts, draft.pieces or [()] * len(draft.texts),
                                                   draft.confidences)]
        self.loop.call_soon_threadsafe(self._emit, draft.step, holes, False)

    def finish(self, step: int, holes: list[dict]) -> None:
        self._emit(step, holes, True)

    def close(self) -> None:
        """End the progress without a final draft (the action failed or was cancelled)."""
        if self._began:
            self._end(None)

    def _end(self, message: str | None) -> None:
        self._began = False
        self.server.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self.server.work_done_progress.tokens.pop(self.token, None)

    def _emit(self, step: int, holes: list[dict], done: bool) -> None:
        if self.server.settings.drafts:
            first = holes[0] if holes else {"range": None, "text": "", "tokens": []}
            self.server.protocol.notify(DRAFT, {
                "uri": self.uri, "version": self.version, "id": self.id, "action": self.action,
                "step": step, "done": done, "range": first["range"], "text": first["text"],
                "tokens": first["tokens"], "holes": holes})
        if self._began:
            line = next((h["text"].strip().splitlines()[0] for h in holes if h["text"].strip()), "")
            if done:
                self._end(line[:80])
            else:
                self.server.work_done_progress.report(self.token, types.WorkDoneProgressReport(
                    message=f"step {step}: {line[:80]}"))
