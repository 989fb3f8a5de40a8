"""Engine jobs on behalf of documents: the newest per document wins, an edit cancels what was
computed for the old text, $/cancelRequest stops the model within a step, stale results are dropped."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from engine import Cancelled, Completion, EngineError, InfillRequest, NotReady

from .documents import Document
from .progress import DraftStream

if TYPE_CHECKING:
    from .server import DiffusionServer

log = logging.getLogger(__name__)


class JobRunner:
    def __init__(self, server: DiffusionServer):
        self.server = server
        self._running: dict[str, object] = {}  # key -> engine Job
        server.add_change_listener(self.cancel_document)

    def cancel_document(self, uri: str) -> None:
        for key in [k for k in self._running if k == uri or k.startswith(uri + "#")]:
            self._running.pop(key).cancel()

    async def run(self, doc: Document, request: InfillRequest, stream: DraftStream | None = None) -> Completion | None:
        """The completion for ``doc`` as it is now, or None if the model is not ready, the job was
        superseded or cancelled, or the document changed meanwhile. Engine errors propagate."""
        engine = self.server.engine
        if engine is None or doc.out_of_sync:
            return None
        version, key = doc.version, request.key or doc.uri
        job = engine.submit(request, stream.on_draft if stream else None)
        self._running[key] = job
        try:
            completion = await asyncio.wrap_future(job.future)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():  # $/cancelRequest, or the client went away
                job.cancel()
                raise
            log.debug("job for %s superseded while queued", key)
            return None
        except Cancelled as exc:  # superseded or cancelled while denoising
            log.debug("job for %s stopped: %s", key, exc)
            return None
        except NotReady as exc:
            log.info("no completion: %s", exc)
            return None
        finally:
            if self._running.get(key) is job:
                del self._running[key]
        current = self.server.documents.get(doc.uri)
        if current is None or current.version != version or current.out_of_sync:
            log.debug("dropping a completion for %s v%s: the document moved on", doc.uri, version)
            return None
        return completion
