"""Lines the workspace's other files have, as fills for the rest of a line being typed (``doclines``).

A project repeats itself across files more than code in general does: its own imports, its error handling, its
helpers called the same way (``return nil, fmt.Errorf(...)``, ``from .models import User``). A line of the
workspace's files (``MIN_FILES``: one is enough; on the typed development holes, lines of at least one other
file of the package put the right line first for 246 holes, lines of at least two for 230) that starts with
the code typed on the cursor's line is sent as a plan option after the document's own lines and before the
lines code often has (``engine.commonlines``), the most widespread first, each with its share of the files
among the workspace lines with that start (its prior, ``HoleFill.workspace``); the engine ranks it by the
model's first-forward score plus 1.5 x that prior - 1.5, like a common line (``infill.copy_rank``).

A ``Workspace`` counts each file's distinct stripped lines once; files are added, changed and removed one at a
time (``update``, ``remove``), and ``refresh`` rebuilds the tables of the languages that changed, off the engine
thread: a lookup (``table``) never builds, it reads the last tables built. The server keeps one per workspace
folder (``register``, under the folder's path, scanned with ``engine.adapt.files.workspace_files``: git's files
or the ``.gitignore``'d walk, within the adapter's caps) and names it in each request
(``InfillRequest.workspace``).
"""

from __future__ import annotations

import bisect
import collections
import logging
import os
import threading
from collections.abc import Callable, Iterable

import numpy as np

from .commonlines import Table

log = logging.getLogger(__name__)
MIN_FILES = 1                  # a line in at least this many of the workspace's files (1: any line)
SHORTEST, LONGEST = 2, 200     # characters of a stripped line, as for the common lines
MOST = 32                      # workspace lines per hole, the most widespread first
SAME_TABLE = {"typescriptreact": "typescript", "javascriptreact": "javascript"}


def lines_of(text: str) -> frozenset[str]:
    """A file's distinct lines, stripped (CRLF and indentation alike), ``SHORTEST`` to ``LONGEST`` characters."""
    return frozenset(s for s in (line.strip() for line in text.split("\n")) if SHORTEST <= len(s) <= LONGEST)


def table_of(counts: dict[str, int], min_files: int = MIN_FILES, ordered: list[str] | None = None) -> Table | None:
    """The table (``commonlines.Table``) of the lines counted in at least ``min_files`` files; None if none is.
    ``ordered``: the counted lines already in code point order (else they are sorted here)."""
    lines = ordered if ordered is not None else sorted(counts)
    kept = list(lines) if min_files <= 1 else [line for line in lines if counts[line] >= min_files]
    if not kept:
        return None
    files = np.fromiter((counts[line] for line in kept), dtype=np.int64, count=len(kept))
    return Table.of(kept, files)


class Workspace:
    """The lines of one workspace's files, counted once per file, per language (``SAME_TABLE`` merges TSX with
    TypeScript). Thread-safe: the server updates it from its indexing thread while the engine looks up. Each
    language's counted lines are kept in code point order as files change after its first table (an insertion
    or removal per line that appears or goes), so a refresh after a save does not sort them again."""

    def __init__(self, min_files: int = MIN_FILES) -> None:
        self.min_files = min_files
        self._lock = threading.Lock()
        self._files: dict[str, tuple[str, frozenset[str]]] = {}     # path -> (table language, its lines)
        self._counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self._ordered: dict[str, list[str]] = {}    # a language's counted lines, sorted (once it has a table)
        self._tables: dict[str, Table | None] = {}
        self._stale: set[str] = set()

    def update(self, path: str, language: str, text: str) -> None:
        """Count (again) the file at ``path`` (any key unique per file) with its current ``text``."""
        name = SAME_TABLE.get(language, language)
        lines = lines_of(text)
        with self._lock:
            old = self._files.get(path)
            if old is not None and old == (name, lines):
                return
            self._drop(path)
            self._files[path] = (name, lines)
            counts, ordered = self._counts[name], self._ordered.get(name)
            if ordered is not None:
                for line in lines:
                    if not counts[line]:
                        bisect.insort(ordered, line)
            counts.update(lines)
            self._stale.add(name)

    def remove(self, path: str) -> None:
        """Stop counting the file at ``path`` (deleted, or no longer a source file)."""
        with self._lock:
            self._drop(path)

    def _drop(self, path: str) -> None:
        old = self._files.pop(path, None)
        if old is None:
            return
        name, lines = old
        counts, ordered = self._counts[name], self._ordered.get(name)
        counts.subtract(lines)
        for line in lines:
            if counts[line] <= 0:
                del counts[line]
                if ordered is not None:
                    del ordered[bisect.bisect_left(ordered, line)]
        self._stale.add(name)

    def refresh(self) -> None:
        """Rebuild the tables of the languages whose files changed since the last refresh."""
        for name in self._take_stale():
            with self._lock:
                counts = self._counts[name]
                if name not in self._ordered:
                    self._ordered[name] = sorted(counts)
                table = table_of(counts, self.min_files, self._ordered[name])
            self._tables[name] = table

    def _take_stale(self) -> set[str]:
        with self._lock:
            stale, self._stale = self._stale, set()
        return stale

    def table(self, language: str) -> Table | None:
        """The last table built for a language (``LanguageSpec.name``), or None."""
        return self._tables.get(SAME_TABLE.get(language, language))

    @property
    def files(self) -> int:
        return len(self._files)


_WORKSPACES: dict[str, Workspace] = {}
_REGISTRY_LOCK = threading.Lock()


def register(key: str, workspace: Workspace) -> None:
    """Make ``workspace`` the one requests name by ``key`` (``InfillRequest.workspace``)."""
    with _REGISTRY_LOCK:
        _WORKSPACES[key] = workspace


def unregister(key: str) -> None:
    with _REGISTRY_LOCK:
        _WORKSPACES.pop(key, None)


def lookup(key: str | None) -> Workspace | None:
    """The workspace registered under ``key``; None for None or an unknown key."""
    return _WORKSPACES.get(key) if key else None


def scan(root: str | os.PathLike[str], workspace: Workspace | None = None,
         files: Iterable[tuple[str, str, str]] | None = None,
         pause: Callable[[], object] | None = None) -> Workspace:
    """Count the source files of the folder ``root`` (``engine.adapt.files.workspace_files``: what git would
    track, in the server's languages, within the adapter's caps) into ``workspace`` (a new one by default),
    keyed by their absolute paths, and build its tables. ``files`` ((path, language, text) triples) replaces
    the listing. ``pause``: called before each file is counted and before the tables are built (the server's
    waits while a fill runs: counting holds the interpreter's lock, which the engine thread needs too)."""
    from .adapt.files import iter_workspace_files

    workspace = workspace or Workspace()
    if files is None:
        base = os.path.realpath(root)
        files = ((os.path.join(base, f.path), f.language, f.text) for f in iter_workspace_files(base, pause=pause))
    for path, language, text in files:
        if pause is not None:
            pause()
        workspace.update(path, language, text)
    if pause is not None:
        pause()
    workspace.refresh()
    return workspace
