"""The workspace's lines for typed-line fills (``engine.worklines``), kept by the server.

Once initialized, with ``documentLines`` and ``workspaceLines`` on, the server counts the lines of the first
workspace folder's source files (``engine.adapt.files.workspace_files``: what git would track, else the
``.gitignore``'d walk; the adapter's caps of 200 KB per file and 30 MB in all) on a thread of its own, at the
lowest CPU priority, and registers them under the folder's path; each inline request then names that
workspace (``InfillRequest.workspace``). A saved document is counted again with its saved text (and its
table rebuilt) on the same thread, so the engine never waits for it; files changed outside the editor are
counted again at the next start. ``diffusion/stats`` reports the state (``workspaceLines``).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from typing import TYPE_CHECKING, Any

from engine import worklines
from engine.languages import language_for_path

from .adapting import path_of

if TYPE_CHECKING:
    from .server import DiffusionServer

log = logging.getLogger(__name__)


class WorkspaceLines:
    def __init__(self, server: DiffusionServer) -> None:
        self.server = server
        self.root: str | None = None       # the workspace folder (initialize), resolved
        self.state = "off"                 # off | indexing | ready | failed
        self.files = 0
        self.seconds: float | None = None
        self.error: str | None = None
        self._workspace: worklines.Workspace | None = None
        self._queue: queue.Queue[tuple[str, str, str] | None] = queue.Queue()
        self._thread: threading.Thread | None = None

    def wanted(self) -> bool:
        fill = self.server.settings.fill
        return bool(self.root) and fill.document_lines and fill.workspace_lines

    def start(self) -> None:
        """Index the workspace folder on its own thread, once (a later call, e.g. after a settings change that
        turns the lines on, starts it if it has not started)."""
        if self._thread is not None or not self.wanted():
            return
        self.state = "indexing"
        self._thread = threading.Thread(target=self._run, name="workspace-lines", daemon=True)
        self._thread.start()

    def key(self) -> str | None:
        """The workspace an inline request names: the folder's, once it is counted (any document: one outside
        the folder is still written for this project)."""
        return self.root if self.state == "ready" and self.server.settings.fill.workspace_lines else None

    def saved(self, uri: str, text: str) -> None:
        """A document was saved with ``text``: count it again (a source file under the folder only)."""
        path = path_of(uri)
        if self.state not in ("indexing", "ready") or not path or not self.root:
            return   # not counting (off, or the count failed: nothing would take the text off the queue)
        path = os.path.realpath(path)
        if not path.startswith(self.root.rstrip(os.sep) + os.sep):
            return
        language = language_for_path(path)
        if language != "plaintext":
            self._queue.put((path, language, text))

    def close(self) -> None:
        self._queue.put(None)
        if self.root:
            worklines.unregister(self.root)

    def stats(self) -> dict[str, Any]:
        return {"state": self.state, "files": self.files, "seconds": self.seconds, "error": self.error}

    def _run(self) -> None:
        try:   # the lowest priority for this thread only (Linux: a thread id is a process id to setpriority)
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except (AttributeError, OSError):
            pass
        assert self.root is not None
        t0 = time.monotonic()
        try:
            workspace = worklines.scan(self.root)
        except Exception as exc:  # noqa: BLE001 - a thread of its own: the fills go on without the lines, the state says why
            self.state, self.error = "failed", f"{type(exc).__name__}: {exc}"
            log.warning("workspace lines not used: %s", exc)
            return
        self._workspace, self.files = workspace, workspace.files
        self.seconds = round(time.monotonic() - t0, 2)
        worklines.register(self.root, workspace)
        self.state = "ready"
        log.info("workspace lines: %d files of %s counted in %.1f s", self.files, self.root, self.seconds)
        while True:
            item = self._queue.get()
            if item is None:
                return
            changed = [item]
            while not self._queue.empty():   # saves that came together: one rebuild
                more = self._queue.get()
                if more is None:
                    return
                changed.append(more)
            for path, language, text in changed:
                workspace.update(path, language, text)
            workspace.refresh()
            self.files = workspace.files
