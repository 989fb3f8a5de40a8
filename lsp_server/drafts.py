"""The one draft stream: a request's developing text while the model denoises, as ``diffusion/draft``
notifications (when the client opted in) and ``$/progress`` reports (when there is a progress token),
throttled on the engine thread; the final draft is always sent and equals the answer (a request that ends
without one clears the drafts it sent with an empty final draft). Inline requests stream one hole at the
cursor; code actions stream every hole they fill."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from engine import Draft

if TYPE_CHECKING:
    from .server import DiffusionServer

log = logging.getLogger(__name__)
DRAFT = "diffusion/draft"
_ids = itertools.count(1)
_CREATE_TIMEOUT = 2.0  # seconds a client may take to accept a progress token
_MESSAGE_CHARS = 80


def range_json(r: types.Range) -> dict[str, Any]:
    return {"start": {"line": r.start.line, "character": r.start.character},
            "end": {"line": r.end.line, "character": r.end.character}}


def hole_json(range_: dict[str, Any] | None, text: str, pieces: Any, confidences: Any,
              estimate: float | None = None) -> dict[str, Any]:
    """One hole of a draft; ``estimate`` (final drafts only): the fill's estimated P(exactly right)."""
    out = {"range": range_, "text": text,
           "tokens": [{"text": p, "confidence": round(float(c), 3)} for p, c in zip(pieces, confidences)]}
    return out if estimate is None else {**out, "fillConfidence": estimate}


Place = Callable[[Sequence[tuple[int, int]]], "list[dict[str, Any]] | None"]


class DraftStream:
    """Forwards a request's drafts at most every ``draftIntervalMs``; ``finish`` sends the final holes.

    ``action`` is None for an inline request (its notification carries one hole's fields) and the action
    name for a code action (its notification also lists every hole). ``ranges`` are where the holes' text
    goes, unless a draft says where (``Draft.spans``, str offsets) and ``place`` turns that into ranges (on
    the loop; None when the document has moved on, and the draft is dropped)."""

    def __init__(self, server: DiffusionServer, uri: str, version: int, ranges: list[dict[str, Any]],
                 action: str | None = None, token: types.ProgressToken | None = None, title: str = "diffusion",
                 place: Place | None = None):
        self.server, self.loop = server, asyncio.get_running_loop()
        self.uri, self.version, self.ranges, self.action, self.place = uri, version, ranges, action, place
        self.id = f"action-{next(_ids)}" if action else str(next(_ids))
        self.interval = server.settings.server.draft_interval_ms / 1000
        self.token, self.title = token, title
        self._last = 0.0
        self._began = False
        self._sent = False  # a draft notification went out: the client paints it until a final one
        self._step = 0      # the last step notified: a final draft never goes back a step
        self._over = False  # finished or closed: a draft still on its way to the loop is dropped
        self.task = asyncio.current_task()  # the request's: the progress's cancel button cancels it
        opened = server.documents.get(uri)
        self.generation = opened.generation if opened is not None else 0

    @classmethod
    async def for_action(cls, server: DiffusionServer, uri: str, version: int, action: str, title: str,
                         ranges: list[dict[str, Any]]) -> DraftStream | None:
        """A stream when the client wants drafts or shows progress (a server-created token, begun at once
        with a cancel button), else None."""
        token: str | None = None
        if server.status.client_supports_progress:
            token = f"diffusion-lsp/action/{next(_ids)}"
            try:
                await asyncio.wait_for(server.work_done_progress.create_async(token), _CREATE_TIMEOUT)
            except Exception as exc:  # noqa: BLE001 (the client refused the token or never answered: drafts only)
                log.debug("progress token %s not created: %r", token, exc)
                token = None
        if token is None and not server.settings.server.drafts:
            return None
        stream = cls(server, uri, version, ranges, action, token, title)
        if token is not None:
            stream._begin("")
        return stream

    def wanted(self) -> bool:
        return self.server.settings.server.drafts or self.token is not None

    def _cancel_with_progress(self, task: asyncio.Task[Any] | None) -> None:
        """The client's cancel button (window/workDoneProgress/cancel) cancels the request's task."""
        cancelled = self.server.work_done_progress.tokens.get(self.token) if self.token is not None else None
        if task is not None and cancelled is not None:
            cancelled.add_done_callback(
                lambda f: f.cancelled() and self._began and self.loop.call_soon_threadsafe(task.cancel))

    def on_draft(self, draft: Draft) -> None:
        """Engine thread: throttle, then hop to the loop."""
        now = time.monotonic()
        if now - self._last < self.interval:
            return
        self._last = now
        self.loop.call_soon_threadsafe(self._emit_draft, draft)

    def _emit_draft(self, draft: Draft) -> None:
        ranges = self.ranges
        if draft.spans and self.place is not None:
            placed = self.place(draft.spans)
            if placed is None:
                return
            ranges = placed
        pieces = draft.pieces or ((),) * len(draft.texts)
        holes = [hole_json(r, text, ps, confs)
                 for r, text, ps, confs in zip(ranges, draft.texts, pieces, draft.confidences)]
        about: dict[str, Any] = {"attempt": draft.attempt} if draft.spans else {}
        if draft.slots:
            about["slots"] = draft.slots
        self._emit(draft.step, holes, False, draft.kind.value if draft.kind else None, about)

    def finish(self, step: int, holes: list[dict[str, Any]], kind: str | None = None) -> None:
        self._emit(step, holes, True, kind)
        self._over = True

    def close(self) -> None:
        """The request failed, was cancelled or dropped: drafts sent are cleared by an empty final draft (no
        holes), and a progress begun is ended."""
        if not self._over and self._sent:
            self._notify(self._step, [], True)
        self._over = True
        if self._began:
            self._end(None)

    def _emit(self, step: int, holes: list[dict[str, Any]], done: bool, kind: str | None = None,
              about: dict[str, Any] | None = None) -> None:
        if self._over:
            return  # a draft the engine sent before it saw the cancel: the progress has ended
        if not done and self.server.documents.moved_on(self.uri, self.generation, self.version):
            return  # a draft of text the client no longer has (edited, or reopened at the same version)
        if self.server.settings.server.drafts or (done and self._sent):  # drafts turned off meanwhile: the
            self._notify(step, holes, done, kind, about)                 # final one still clears those sent
        if self.token is not None:
            line = next((h["text"].strip().splitlines()[0] for h in holes if h["text"].strip()), "")
            self._progress(step, line[:_MESSAGE_CHARS], done)

    def _notify(self, step: int, holes: list[dict[str, Any]], done: bool, kind: str | None = None,
                about: dict[str, Any] | None = None) -> None:
        first = holes[0] if holes else {"range": self.ranges[0] if self.ranges else None, "text": "", "tokens": []}
        step = max(step, self._step)
        params = {"uri": self.uri, "version": self.version, "id": self.id, "step": step, "done": done,
                  "range": first["range"], "text": first["text"], "tokens": first["tokens"]}
        if "fillConfidence" in first:
            params["fillConfidence"] = first["fillConfidence"]
        if kind is not None:
            params["kind"] = kind
        params.update(about or {})
        if self.action is not None:
            params.update(action=self.action, holes=holes)
        self.server.protocol.notify(DRAFT, params)
        self._sent, self._step = True, step

    def _progress(self, step: int, line: str, done: bool) -> None:
        assert self.token is not None
        if not self._began:
            if self.action is not None:  # an action's progress began when it opened, and has ended
                return
            self._begin(line)  # an inline request's (client-created) token begins with its first draft
        if done:
            self._end(line)
        else:
            self.server.work_done_progress.report(self.token, types.WorkDoneProgressReport(
                message=f"step {step}: {line}"))

    def _begin(self, message: str) -> None:
        assert self.token is not None
        self._began = True
        self.server.work_done_progress.begin(self.token, types.WorkDoneProgressBegin(
            title=self.title, message=message or None, cancellable=True))
        self._cancel_with_progress(self.task)  # begin filed the token's cancel future (a client's token too)

    def _end(self, message: str | None) -> None:
        assert self.token is not None
        self._began = False
        self.server.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self.server.work_done_progress.tokens.pop(self.token, None)  # ended: its cancel future is kept no more
