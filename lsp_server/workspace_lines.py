"""The workspace's lines for typed-line fills (``engine.worklines``), kept by the server.

Once the model is ready, with ``documentLines`` and ``workspaceLines`` on, the server counts the lines of the
first workspace folder's source files (``engine.adapt.files.iter_workspace_files``: what git would track, else
the ``.gitignore``'d walk; the adapter's caps of 200 KB per file and 30 MB in all) on a thread of its own, at the
lowest CPU priority, waiting between files while a fill runs (counting holds the interpreter's lock, which the
engine thread needs: on a 30 MB folder, counting through fills made a first request take up to 1 s, and
counting beside the model's load made it ready in 5.0 s instead of 3.4), and registers them under the folder's
path; each inline request then names that
workspace (``InfillRequest.workspace``). A saved document is counted again with its saved text (and its
table rebuilt) on the same thread, so the engine never waits for it. With a client that registers file
watchers dynamically, the server asks it to watch the source files (``workspace/didChangeWatchedFiles``):
a file created, changed or deleted outside the editor (a checkout, a pull, a generator) is read again from
disk, or forgotten, on the same thread; without one, such files count again at the next start.
``diffusion/stats`` reports the state (``workspaceLines``).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from engine import worklines
from engine.adapt.files import MAX_FILE_BYTES
from engine.languages import language_for_path, source_glob

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
        # (path, language, text): count it with this text; text None: read it from disk (a missing or unreadable
        # file is forgotten); language "": forget it
        self._queue: queue.Queue[tuple[str, str, str | None] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self.watch = False                 # the client registers file watchers dynamically (initialize)
        self._fills = 0
        self._quiet = threading.Event()    # set while no fill runs: counting waits for it (it holds the GIL)
        self._quiet.set()

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
        if self.watch:
            watcher = types.FileSystemWatcher(glob_pattern=source_glob())
            registration = types.Registration(
                id="diffusion-lsp-workspace-lines", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=[watcher]))
            self.server.client_register_capability(types.RegistrationParams(registrations=[registration]))

    def key(self) -> str | None:
        """The workspace an inline request names: the folder's, once it is counted (any document: one outside
        the folder is still written for this project)."""
        return self.root if self.state == "ready" and self.server.settings.fill.workspace_lines else None

    def saved(self, uri: str, text: str) -> None:
        """A document was saved with ``text``: count it again (a source file under the folder only)."""
        path = self._source(uri)
        if path is not None:
            self._queue.put((path, language_for_path(path), text))

    def files_changed(self, changes: Sequence[types.FileEvent]) -> None:
        """Files created, changed or deleted outside the editor (``workspace/didChangeWatchedFiles``): read again
        from disk on the thread, or forgotten."""
        for change in changes:
            path = self._source(change.uri)
            if path is not None:
                deleted = change.type == types.FileChangeType.Deleted
                self._queue.put((path, "" if deleted else language_for_path(path), None))

    def _source(self, uri: str) -> str | None:
        """The real path of a source file under the folder at ``uri`` while the lines are counted; else None
        (off, or the count failed: nothing would take it off the queue)."""
        path = path_of(uri)
        if self.state not in ("indexing", "ready") or not path or not self.root:
            return None
        path = os.path.realpath(path)
        if not path.startswith(self.root.rstrip(os.sep) + os.sep) or language_for_path(path) == "plaintext":
            return None
        return path

    def fill_started(self) -> None:
        self._fills += 1
        self._quiet.clear()

    def fill_finished(self) -> None:
        self._fills = max(0, self._fills - 1)
        if not self._fills:
            self._quiet.set()

    def close(self) -> None:
        self._quiet.set()
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
            workspace = worklines.scan(self.root, pause=self._quiet.wait)
        except Exception as exc:  # noqa: BLE001 - a thread of its own: the fills go on without the lines, the state says why
            self.state, self.error = "failed", f"{type(exc).__name__}: {exc}"
            log.warning("workspace lines not used: %s", exc)
            return
        self.files = workspace.files
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
            self._quiet.wait()
            for path, language, text in changed:
                if text is None and language:
                    text = _read(path)
                if text is None or not language:
                    workspace.remove(path)
                else:
                    workspace.update(path, language, text)
            workspace.refresh()
            self.files = workspace.files


def _read(path: str) -> str | None:
    """A source file's text as the workspace listing reads it (a regular file, UTF-8, at most the adapter's
    ``MAX_FILE_BYTES``); None when it is gone or not such a file."""
    try:
        if os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) > MAX_FILE_BYTES:
            return None
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
