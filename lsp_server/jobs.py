"""Engine jobs on behalf of documents: each request goes with the current fill options and a key naming its
document; the engine's newest-per-key rule supersedes older ones; an edit cancels what was computed for the
old text; $/cancelRequest stops the model within a step; stale results are dropped. The engine holds the
only registry of running jobs.

Identical requests share one job: a request equal to one whose job has not finished (the same key, document
generation and version, offsets and fill options: a client asking for ghost text and a completion item at one
keystroke) awaits that job's result instead of superseding it. Each request formats its own answer and may
be cancelled on its own: the job is cancelled only when no request waits for it any more. A job computes drafts
only when a request asked for them (the backends build them at each step); a request that wants drafts from a job
computing none starts it again with them, and the requests waiting move to the new job (the model steps already
taken are lost, none run twice to the end)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from engine import Cancelled, Completion, Draft, EngineChanged, NotReady, Request

from .documents import Document

if TYPE_CHECKING:
    from engine.worker import Job

    from .server import DiffusionServer

log = logging.getLogger(__name__)


def document_key(uri: str, purpose: str = "") -> str:
    """The engine key of a document's jobs: its URI, and ``URI#purpose`` for jobs that run beside them."""
    return f"{uri}#{purpose}" if purpose else uri


@dataclass(eq=False)
class _Shared:
    """One engine job and the requests waiting for it."""

    request: Request
    generation: int
    version: int
    job: Job | None = None
    result: asyncio.Future[Completion] | None = None   # the job's future on the loop, awaited shielded
    drafting: bool = False   # the job computes drafts (its hook is ``on_draft``)
    waiters: int = 0
    drafts: tuple[Callable[[Draft], None], ...] = ()   # the waiters' draft streams (read on the engine thread)

    def joinable(self, request: Request, generation: int, version: int) -> bool:
        job = self.job
        return (job is not None and not job.cancelled.is_set() and not job.future.done()
                and (self.generation, self.version) == (generation, version) and self.request == request)

    def on_draft(self, draft: Draft) -> None:
        for forward in self.drafts:
            forward(draft)


@dataclass
class JobRunner:
    server: DiffusionServer
    _shared: dict[str, list[_Shared]] = field(default_factory=dict)   # by request key: jobs not finished

    def cancel_document(self, uri: str) -> None:
        if self.server.engine is not None:
            self.server.engine.cancel_keys(lambda key: key == uri or key.startswith(uri + "#"))

    async def run(self, doc: Document, request: Request,
                  on_draft: Callable[[Draft], None] | None = None) -> Completion | None:
        """The completion for ``doc`` as it is now, or None if the model is not ready, the job was
        superseded or cancelled, the document changed meanwhile, or the remote engine turned out to serve another
        model (it is loaded again before the next job; the status tells the user). Engine errors propagate."""
        engine = self.server.engine
        documents = self.server.documents
        generation, version = doc.generation, doc.version
        if engine is None or documents.moved_on(doc.uri, generation, version):
            return None
        request = replace(request, key=request.key or doc.uri, options=self.server.settings.fill)
        key = request.key or doc.uri
        shared = next((s for s in self._shared.get(key, ()) if s.joinable(request, generation, version)), None)
        if shared is None:
            shared = _Shared(request, generation, version)
            self._start(key, shared, on_draft is not None)
        elif on_draft is not None and not shared.drafting:   # its job makes no drafts: again, with them
            log.debug("request for %s v%s wants drafts: the job of an identical one starts again", key, version)
            self._start(key, shared, True)
        else:
            log.debug("request for %s v%s joins the job of an identical one", key, version)
        shared.waiters += 1
        if on_draft is not None:
            shared.drafts += (on_draft,)
        self.server.adapter.fill_started()   # the adapter process waits while a fill runs
        self.server.workspace_lines.fill_started()   # ... and counting the workspace's lines
        try:
            while True:
                job, result = shared.job, shared.result
                assert job is not None and result is not None
                try:
                    completion = await asyncio.shield(result)
                    break
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if task is not None and task.cancelling():  # $/cancelRequest, or the client went away
                        if shared.waiters == 1 and shared.job is not None:   # the last request waiting: it stops
                            shared.job.cancel()
                        raise
                    if shared.job is not job:   # started again (drafts wanted): its new job answers
                        continue
                    log.debug("job for %s superseded while queued", key)
                    return None
                except Cancelled as exc:  # superseded or cancelled while denoising
                    if shared.job is not job:
                        continue
                    log.debug("job for %s stopped: %s", key, exc)
                    return None
        except (NotReady, EngineChanged) as exc:
            log.info("no completion: %s", exc)
            return None
        finally:
            shared.waiters -= 1
            if on_draft is not None:
                shared.drafts = tuple(d for d in shared.drafts if d is not on_draft)
            self.server.adapter.fill_finished()
            self.server.workspace_lines.fill_finished()
        if documents.moved_on(doc.uri, generation, version):  # edited, closed or reopened meanwhile
            log.debug("dropping a completion for %s v%s: the document moved on", doc.uri, version)
            return None
        return completion

    def _start(self, key: str, shared: _Shared, drafts: bool) -> None:
        """A new engine job for ``shared``'s request (``drafts``: with a draft hook), listed for identical
        requests to join until it ends. One already running for it is superseded by the engine's newest-per-key
        rule; the requests awaiting it move to the new one."""
        engine = self.server.engine
        assert engine is not None
        shared.job = job = engine.submit(shared.request, shared.on_draft if drafts else None)
        shared.drafting = drafts
        shared.result = asyncio.wrap_future(job.future)
        shared.result.add_done_callback(_retrieve)
        listed = self._shared.setdefault(key, [])
        if shared not in listed:
            listed.append(shared)

        def forget(_: concurrent.futures.Future[Completion]) -> None:
            listed = self._shared.get(key, [])
            if shared.job is job and shared in listed:   # not when the job was started again
                listed.remove(shared)
            if not listed:
                self._shared.pop(key, None)
        loop = asyncio.get_running_loop()

        def done(f: concurrent.futures.Future[Completion]) -> None:   # on the engine thread, or here
            try:
                loop.call_soon_threadsafe(forget, f)
            except RuntimeError:   # the loop has closed (the server is exiting)
                pass
        job.future.add_done_callback(done)


def _retrieve(result: asyncio.Future[Completion]) -> None:
    """A job's outcome nobody awaited (its last request was cancelled) is not logged as never retrieved."""
    if not result.cancelled():
        result.exception()
