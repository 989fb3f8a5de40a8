"""Engine jobs on behalf of documents: each request goes with the current fill options and a key naming its
document; the engine's newest-per-key rule supersedes older ones; an edit cancels what was computed for the
old text; $/cancelRequest stops the model within a step; stale results are dropped. The engine holds the
only registry of running jobs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from engine import Cancelled, Completion, Draft, EngineChanged, NotReady, Request

from .documents import Document

if TYPE_CHECKING:
    from .server import DiffusionServer

log = logging.getLogger(__name__)


def document_key(uri: str, purpose: str = "") -> str:
    """The engine key of a document's jobs: its URI, and ``URI#purpose`` for jobs that run beside them."""
    return f"{uri}#{purpose}" if purpose else uri


class JobRunner:
    def __init__(self, server: DiffusionServer):
        self.server = server

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
        job = engine.submit(request, on_draft)
        self.server.adapter.fill_started()   # the adapter process waits while a fill runs
        self.server.workspace_lines.fill_started()   # ... and counting the workspace's lines
        try:
            completion = await asyncio.wrap_future(job.future)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():  # $/cancelRequest, or the client went away
                job.cancel()
                raise
            log.debug("job for %s superseded while queued", request.key)
            return None
        except Cancelled as exc:  # superseded or cancelled while denoising
            log.debug("job for %s stopped: %s", request.key, exc)
            return None
        except (NotReady, EngineChanged) as exc:
            log.info("no completion: %s", exc)
            return None
        finally:
            self.server.adapter.fill_finished()
            self.server.workspace_lines.fill_finished()
        if documents.moved_on(doc.uri, generation, version):  # edited, closed or reopened meanwhile
            log.debug("dropping a completion for %s v%s: the document moved on", doc.uri, version)
            return None
        return completion
