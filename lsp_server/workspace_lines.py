"""The workspace's lines for typed-line fills and an empty line's neighbours (``engine.worklines``), kept by the
server.

Once the model is ready, with ``documentLines`` and ``workspaceLines`` on, the server counts the lines of every
workspace folder's source files (the grammar languages' and C, C++, Java, Ruby, Perl and Lua's, each language's apart:
``languages.lines_name``; ``engine.adapt.files.iter_workspace_files``: what git would track, else the
``.gitignore``'d walk; the adapter's caps of 200 KB per file and 30 MB in all, for all the folders together), one
folder after the other, on a thread of its own, at the lowest CPU priority, waiting between files while a fill runs
(counting holds the interpreter's lock, which the engine thread needs: on a 30 MB folder, counting through fills
made a first request take up to 1 s, and counting beside the model's load made it ready in 5.0 s instead of 3.4),
and registers each folder's ``Workspace`` under its real path once counted; each inline request then names the
workspace of the innermost folder that holds its document (a document outside every folder: the first folder's;
``InfillRequest.workspace``); a file counts in that folder only (a folder's count leaves the folders nested in it
out, and is made again when one is added inside it or removed). Folders added or removed
(``workspace/didChangeWorkspaceFolders``) are counted or forgotten on the same thread. A saved document is counted
again with its saved text (and its folder's tables rebuilt) on the same thread, so the engine never waits for it; a
file the listing would not take (gitignored, vendored: ``engine.adapt.files.listed``) is not counted when saved or
changed either, nor one that would take the folders past the 30 MB. With a client that registers file watchers
dynamically, the server asks it to watch the source files (``workspace/didChangeWatchedFiles``): a file created,
changed or deleted outside the editor (a checkout, a pull, a generator) is read again from disk, or forgotten, on
the same thread; without one, such files count again at the next start. ``diffusion/stats`` reports the state
(``workspaceLines``: ``folders`` counted, ``files``, ``seconds``, ``error``).
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import threading
import time
from collections.abc import Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from engine import EngineState, worklines
from engine.adapt.files import MAX_FILE_BYTES, MAX_TOTAL_BYTES, listed, read_text
from engine.languages import language_for_path, source_glob

from .adapting import path_of

if TYPE_CHECKING:
    from .server import DiffusionServer

log = logging.getLogger(__name__)
_SESSIONS = itertools.count(1)   # a number per session: its folders' names in the process-wide registry


class WorkspaceLines:
    def __init__(self, server: DiffusionServer) -> None:
        self.server = server
        self.roots: list[str] = []         # the workspace folders (initialize, then didChangeWorkspaceFolders), real
        self.state = "off"                 # off | indexing | ready | failed
        self.files = 0
        self.seconds: float | None = None
        self.error: str | None = None
        self._counted: dict[str, worklines.Workspace] = {}   # root -> its workspace, once counted (registered)
        self._failed: dict[str, str] = {}                     # root -> why it could not be counted
        self._excluded: dict[str, frozenset[str]] = {}        # root -> the nested folders left out of its count
        # ("file", path): count it again as ``_pending[path]`` says when taken; ("add", root) / ("remove", root): a
        # folder; ("watched", events): a didChangeWatchedFiles notification's events, resolved on the thread
        self._queue: queue.Queue[tuple | None] = queue.Queue()
        # path -> (root, language, text): its last save or change not counted yet (a file saved again meanwhile is
        # counted once, with its last text); text None: read it from disk (a missing or unreadable file is
        # forgotten); language "": forget it
        self._pending: dict[str, tuple[str, str, str | None]] = {}
        self._pending_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.watch = False                 # the client registers file watchers dynamically (initialize)
        self._fills = 0
        self._quiet = threading.Event()    # set while no fill runs: counting waits for it (it holds the GIL)
        self._quiet.set()
        # the registry (engine.worklines) is one per process, and over --tcp several sessions can count the same
        # folder: each registers its own under a name of its own, so one client leaving (or removing the folder)
        # never takes another's lines away
        self._prefix = f"session-{next(_SESSIONS)}:"

    def _name(self, root: str) -> str:
        return self._prefix + root

    def wanted(self) -> bool:
        fill = self.server.settings.fill
        return bool(self.roots) and fill.document_lines and fill.workspace_lines

    def start(self) -> None:
        """Index the workspace folders on a thread of their own, once the model is ready (counting beside the load
        slowed it), once: a later call (a settings change that turns the lines on, a first folder added) starts
        it if it has not started."""
        engine = getattr(self.server, "engine", None)
        if self._thread is not None or not self.wanted() or engine is None or engine.state is not EngineState.READY:
            return
        self.state = "indexing"
        for root in self.roots:
            self._queue.put(("add", root))
        self._thread = threading.Thread(target=self._run, name="workspace-lines", daemon=True)
        self._thread.start()
        if self.watch:
            watcher = types.FileSystemWatcher(glob_pattern=source_glob())
            registration = types.Registration(
                id="diffusion-lsp-workspace-lines", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=[watcher]))
            self.server.client_register_capability(types.RegistrationParams(registrations=[registration]))

    def key(self, uri: str = "") -> str | None:
        """The workspace an inline request for the document at ``uri`` names: the counted folder that holds it
        (the innermost), else the first counted folder (a document outside every folder is still written for
        this project); None while none is counted or the lines are off."""
        if not self.server.settings.fill.workspace_lines or not self._counted:
            return None
        path = path_of(uri) if uri else None
        if path:
            holder = _holder(os.path.realpath(path), list(self._counted))
            if holder is not None:
                return self._name(holder)
        return next((self._name(root) for root in self.roots if root in self._counted), None)

    def path(self, uri: str) -> str | None:
        """The path the document at ``uri`` has among its workspace's counted files (its real path), for the names
        its package's other files define (``engine.worklines.Workspace.defined``); None for another scheme."""
        path = path_of(uri)
        return os.path.realpath(path) if path else None

    def folders_changed(self, added: Sequence[types.WorkspaceFolder], removed: Sequence[types.WorkspaceFolder]
                        ) -> None:
        """``workspace/didChangeWorkspaceFolders``: an added folder is counted, a removed one forgotten."""
        for folder in removed:
            path = path_of(folder.uri)
            root = os.path.realpath(path) if path else None
            if root in self.roots:
                self.roots.remove(root)
                if self._thread is not None:
                    self._queue.put(("remove", root))
        for folder in added:
            path = path_of(folder.uri)
            root = os.path.realpath(path) if path else None
            if root and root not in self.roots:
                self.roots.append(root)
                if self._thread is not None:
                    self.state = "indexing"
                    self._queue.put(("add", root))
        self.start()   # the first folder of a server started without one (else: once the model is ready)

    def saved(self, uri: str, text: str) -> None:
        """A document was saved with ``text``: count it again (a source file under a folder only), by the listing's
        rules: one over ``MAX_FILE_BYTES`` (generated or data, more often than code) is not counted, or no longer."""
        found = self._source(uri)
        if found is not None:
            large = len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES
            self._file(*found, "" if large else language_for_path(found[1]), None if large else text)

    def files_changed(self, changes: Sequence[types.FileEvent]) -> None:
        """Files created, changed or deleted outside the editor (``workspace/didChangeWatchedFiles``): read again
        from disk on the thread, or forgotten. The whole notification is queued as one item and its events are
        resolved (URI, real path, folder, language) on the thread: resolving them here, on the event loop, took
        about 35 us an event (``realpath``'s ``lstat`` per path component), so a checkout's 20,000 events held
        every request (a completion, a cancel, the next didChange) for 0.7 s and more."""
        if changes and self.state in ("indexing", "ready") and self.roots:
            self._queue.put(("watched", list(changes)))

    def _watched(self, changes: Sequence[types.FileEvent]) -> list[tuple]:
        """On the thread: a notification's events as queue items, a file once (with its last event) however often
        it is named; those that name no source file under a folder are dropped."""
        items = []
        for change in changes:
            found = self._source(change.uri)
            if found is not None:
                deleted = change.type == types.FileChangeType.Deleted
                if self._pend(*found, "" if deleted else language_for_path(found[1]), None):
                    items.append(("file", found[1]))
        return items

    def _file(self, root: str, path: str, language: str, text: str | None) -> None:
        """Count a file again (or forget it) on the thread. The queue held every save's text until the thread took
        it, and counting waits while fills run: typing with auto-save kept a text per keystroke (a 200 KB file: 200
        KB each) and counted each in turn. Now a file waits once, with its last save or change."""
        if self._pend(root, path, language, text):
            self._queue.put(("file", path))

    def _pend(self, root: str, path: str, language: str, text: str | None) -> bool:
        """Record a file's last save or change; True when it needs a queue item (none holds its place yet)."""
        with self._pending_lock:
            queued = path in self._pending
            self._pending[path] = (root, language, text)
        return not queued

    def _take(self, item: tuple) -> tuple:
        """A queued item as counted: a file's with its last save or change."""
        if item[0] != "file":
            return item
        with self._pending_lock:
            root, language, text = self._pending.pop(item[1])
        return "file", root, item[1], language, text

    def _source(self, uri: str) -> tuple[str, str] | None:
        """The folder and real path of a source file under one of the folders at ``uri`` while the lines are
        counted (the innermost folder); else None (off, or every count failed: nothing would take it off the
        queue)."""
        path = path_of(uri)
        if self.state not in ("indexing", "ready") or not path or not self.roots:
            return None
        path = os.path.realpath(path)
        root = _holder(path, self.roots)
        if root is None or language_for_path(path) == "plaintext":
            return None
        return root, path

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
        for root in list(self._counted):
            worklines.unregister(self._name(root))

    def stats(self) -> dict[str, Any]:
        return {"state": self.state, "files": self.files, "seconds": self.seconds, "error": self.error,
                "folders": len(self._counted)}

    def _run(self) -> None:
        try:   # the lowest priority for this thread only (Linux: a thread id is a process id to setpriority)
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except (AttributeError, OSError):
            pass
        while True:
            item = self._queue.get()
            if item is None:
                return
            changed = [item]
            while not self._queue.empty():   # saves that came together: one rebuild per workspace
                more = self._queue.get()
                if more is None:
                    return
                changed.append(more)
            self._quiet.wait()
            changed = [resolved for item in changed
                       for resolved in (self._watched(item[1]) if item[0] == "watched" else [item])]
            changed = [self._take(item) for item in changed]   # the last text of a file saved while it waited
            taken = self._taken(changed)
            touched: set[str] = set()
            for op, root, *rest in changed:
                if op == "add":
                    self._nesting_changed()   # a folder that holds this one gives its files up first (the cap)
                    self._count(root)
                elif op == "remove":
                    self._forget(root)
                elif root in self._counted:
                    path, language, text = rest
                    if language and path not in taken:
                        language = ""   # gitignored or vendored: the listing does not take it, nor a save
                    if text is None and language:
                        text = read_text(path)   # the listing's rules: a regular UTF-8 file, not too large
                    workspace = self._counted[root]
                    if text is not None and language and self._over_cap(workspace, path, text):
                        text = None   # the folders' counted lines hold the bytes counted at most: not this one
                    if text is None or not language:
                        workspace.remove(path)
                    else:
                        workspace.update(path, language, text)
                    touched.add(root)
            for root in touched & set(self._counted):
                self._counted[root].refresh()
            self._settle()

    @staticmethod
    def _taken(changed: list[tuple]) -> set[str]:
        """The paths of the files saved or changed in ``changed`` that the folder's listing would take (one check
        per folder: a checkout changes many files at once)."""
        wanted: dict[str, dict[str, str]] = {}   # root -> relative '/'-separated path -> path
        for op, root, *rest in changed:
            if op == "file" and rest[1]:
                wanted.setdefault(root, {})[PurePath(os.path.relpath(rest[0], root)).as_posix()] = rest[0]
        return {paths[rel] for root, paths in wanted.items() for rel in listed(root, paths, plain=True)}

    def _over_cap(self, workspace: worklines.Workspace, path: str, text: str) -> bool:
        """Whether counting ``text`` for ``path`` (instead of what ``workspace`` counts for it) would take the
        bytes of every folder past ``MAX_TOTAL_BYTES``: the cap holds for files created, changed or saved after the
        count as it does for the count (a checkout bringing a large branch in)."""
        counted = sum(w.bytes for w in self._counted.values()) - workspace.size(path)
        return counted + len(text.encode("utf-8", "surrogatepass")) > MAX_TOTAL_BYTES

    def _nested(self, root: str) -> frozenset[str]:
        """The other folders inside ``root``: their files are theirs (each file counted once, toward the cap once)."""
        return frozenset(other for other in list(self.roots) if other != root and _holder(other, [root]))

    def _nesting_changed(self) -> None:
        """Count again each counted folder whose nested folders changed (one added inside it, or removed): a file
        is counted in the innermost folder that holds it, as its saves and changes are."""
        for root in list(self._counted):
            if self._excluded.get(root, frozenset()) != self._nested(root):
                self._count(root, again=True)

    def _count(self, root: str, again: bool = False) -> None:
        """Count one folder's files and register them (a folder no longer listed, or counted already unless
        ``again``: nothing). Files in the folders nested in it are left to them: a folder inside another was
        counted in both, twice toward the cap."""
        if root not in self.roots or (root in self._counted and not again):
            return
        t0 = time.monotonic()
        left = MAX_TOTAL_BYTES - sum(w.bytes for r, w in self._counted.items() if r != root)   # one cap for all
        nested = self._nested(root)
        try:
            if left <= 0:
                raise ValueError(f"the other folders hold the {MAX_TOTAL_BYTES:,} bytes counted at most")
            workspace = worklines.scan(root, pause=self._quiet.wait, max_total_bytes=left, exclude=nested)
        except Exception as exc:  # noqa: BLE001 - a thread of its own: the fills go on without the lines, the state says why
            self._failed[root] = f"{type(exc).__name__}: {exc}"
            log.warning("workspace lines of %s not used: %s", root, exc)
            if self._counted.pop(root, None) is not None:   # counted again, and could not be: no longer counted
                self._excluded.pop(root, None)
                worklines.unregister(self._name(root))
            return
        if root not in self.roots:   # removed while it was counted
            return
        self._failed.pop(root, None)
        self._counted[root] = workspace
        self._excluded[root] = nested
        worklines.register(self._name(root), workspace)
        self.seconds = round((self.seconds or 0.0) + time.monotonic() - t0, 2)
        log.info("workspace lines: %d files of %s counted in %.1f s", workspace.files, root, time.monotonic() - t0)

    def _forget(self, root: str) -> None:
        """Forget a removed folder; the folders that failed are tried again (the cap may have room now)."""
        self._failed.pop(root, None)
        self._excluded.pop(root, None)
        counted = self._counted.pop(root, None) is not None
        if counted:
            worklines.unregister(self._name(root))
        self._nesting_changed()   # a folder that held this one counts its files now
        if counted:
            for other in list(self._failed):
                self._count(other)

    def _settle(self) -> None:
        """The state once the queue is done: ready when a folder is counted, failed when every one failed."""
        self.files = sum(w.files for w in self._counted.values())
        self.error = "; ".join(f"{root}: {why}" if len(self.roots) > 1 else why
                               for root, why in self._failed.items()) or None
        if self._queue.empty():
            self.state = "ready" if self._counted or not self._failed else "failed"


def _holder(path: str, roots: Sequence[str]) -> str | None:
    """The innermost of ``roots`` that holds ``path`` (itself or under it), or None."""
    inside = [root for root in roots if path == root or path.startswith(root.rstrip(os.sep) + os.sep)]
    return max(inside, key=len) if inside else None


