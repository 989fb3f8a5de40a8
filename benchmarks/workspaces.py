"""A held-out hole's workspace, for measuring workspace lines (``engine.worklines``) without an editor.

A development or code-lines hole comes from a held-out file of one package of the code corpus (its task id is
``language:corpus id:line``); the package's other files, training and held-out alike, are what its workspace
would hold in an editor. ``CorpusWorkspaces`` builds that workspace (``engine.worklines.Workspace``, the hole's
own file left out: its lines are the document's, and the right line is among them) for one package at a time,
registers it under ``bench:<package>`` and names it for the engine. Tasks are filled grouped by package
(``grouped``), so each package is read once. Reading a package seeks to its records through an index of the
corpus's JSONL files (byte offsets per file id, ``workspace-index.json`` beside the manifest, rebuilt when a
JSONL file changes). Where the corpus keeps its unpacked packages (``raw/<ecosystem>/<package>/src/``), a folder of
corpus ids is that folder on disk (``disk``), as an editor's would be: the invented-names rule reads a Rust package's
``Cargo.toml`` and the Go files the corpus left out (generated, over 300 KB) there.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

from benchmarks.tasks import Task

INDEX = "workspace-index.json"


def file_id(task: Task) -> str:
    """The corpus id of the file a task's hole is in (``python:pypi:click/core.py:120``: ``pypi:click/core.py``)."""
    return task.task_id.split(":", 1)[1].rsplit(":", 1)[0]


Files = Iterable[tuple[str, str, str]]   # (key, language, text)


class _OnePackage:
    """One package's workspace registered at a time (``bench:<package>``), the hole's own file left out of it: the
    file left out for the hole before goes back in (``with_package``). Subclasses say which package a task is in and
    read its files."""

    def __init__(self) -> None:
        self._loaded: str | None = None
        self._left_out: str | None = None
        self._workspace = None

    def disk(self, folder: str) -> str | None:
        return None

    def with_package(self, package: str, fid: str, files: Callable[[], Files], again: Callable[[str], Files]
                     ) -> str:
        """Register ``package``'s workspace (``files()``: all of its files, read once per package) without the file
        ``fid`` (``again(key)``: the file left out before, read again to put it back) and return its key."""
        from engine import worklines

        if package != self._loaded:
            if self._loaded is not None:
                worklines.unregister(f"bench:{self._loaded}")
            self._workspace = worklines.Workspace(disk=self.disk)
            worklines.scan("", self._workspace, files())
            self._loaded, self._left_out = package, None
            worklines.register(f"bench:{package}", self._workspace)
        if fid != self._left_out:
            ws = self._workspace
            if self._left_out is not None:
                for key, language, text in again(self._left_out):
                    ws.update(key, language, text)
            ws.remove(fid)
            ws.refresh()
            self._left_out = fid
        return f"bench:{package}"


class CorpusWorkspaces(_OnePackage):
    def __init__(self, corpus: str | Path) -> None:
        super().__init__()
        self.corpus = Path(corpus)
        manifest = self.corpus / "manifest.jsonl"
        if not manifest.is_file():
            raise FileNotFoundError(f"{corpus}: no manifest.jsonl (not a code corpus: scripts/build_corpus.sh)")
        self.package: dict[str, str] = {}
        self.members: dict[str, list[str]] = defaultdict(list)
        with manifest.open(encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                self.package[r["id"]] = package = f"{r['ecosystem']}:{r['package']}"
                self.members[package].append(r["id"])
        self.offsets = self._index()

    def _index(self) -> dict[str, tuple[str, int]]:
        files = sorted((self.corpus / "files").glob("*/*.jsonl"))
        stamp = {str(p.relative_to(self.corpus)): [p.stat().st_size, p.stat().st_mtime_ns] for p in files}
        path = self.corpus / INDEX
        if path.is_file():
            saved = json.loads(path.read_text(encoding="utf-8"))
            if saved.get("stamp") == stamp:
                return {k: (v[0], v[1]) for k, v in saved["offsets"].items()}
        offsets: dict[str, tuple[str, int]] = {}
        for p in files:
            rel = str(p.relative_to(self.corpus))
            with p.open("rb") as f:
                at = 0
                for line in f:
                    head = line[:2000]
                    end = head.find(b'", "text": ')
                    if end > 0:
                        offsets[json.loads(head[:end + 1] + b"}")["id"]] = (rel, at)
                    at += len(line)
        path.write_text(json.dumps({"stamp": stamp, "offsets": offsets}), encoding="utf-8")
        return offsets

    def _read(self, ids: list[str]):
        handles: dict[str, object] = {}
        try:
            for i in sorted(ids, key=lambda i: self.offsets.get(i, ("", 0))):
                if i not in self.offsets:
                    continue
                rel, at = self.offsets[i]
                f = handles.get(rel) or handles.setdefault(rel, (self.corpus / rel).open("rb"))
                f.seek(at)
                r = json.loads(f.readline())
                yield i, r["text"], Path(rel).stem
        finally:
            for f in handles.values():
                f.close()

    def key(self, task: Task) -> str | None:
        """Register the workspace of ``task``'s package without its file and return its key (None: the file is
        not in the corpus)."""
        fid = file_id(task)
        package = self.package.get(fid)
        if package is None:
            return None
        return self.with_package(package, fid, lambda: self._files(self.members[package]),
                                 lambda key: self._files([key]))

    def _files(self, ids: list[str]) -> Files:
        return ((i, lang, text) for i, text, lang in self._read(ids))

    def disk(self, folder: str) -> str | None:
        """Where a folder of the corpus ids (``debian:librust-rmp-dev/usr/share/...``) is unpacked on disk, when the
        corpus keeps its packages (``raw/<ecosystem>/<package>/src/``): what an editor's workspace holds beside the
        files the corpus kept (a package's ``Cargo.toml``, the Go files it left out as generated or too large)."""
        ecosystem, _, rest = folder.partition(":")
        package, _, inner = rest.partition("/")
        if not ecosystem or not package or ".." in inner.split("/"):
            return None
        found = self.corpus / "raw" / ecosystem / package / "src" / inner
        return str(found) if found.is_dir() else None

    def path(self, task: Task) -> str:
        """The key the hole's file has among its workspace's files (its corpus id): its directory is its package's."""
        return file_id(task)

    def grouped(self, tasks: list[Task]) -> list[Task]:
        """``tasks`` ordered by package, then file (stable): each package is read once, each file left out once."""
        order = {p: n for n, p in enumerate(dict.fromkeys(self.package.get(file_id(t), "") for t in tasks))}
        return sorted(tasks, key=lambda t: (order[self.package.get(file_id(t), "")], file_id(t)))


class FolderWorkspace:
    """One folder as every task's workspace (``engine.worklines.scan``), like the server's: for measuring what
    the workspace's lines cost in-process beside a server that has the folder as its root."""

    def __init__(self, root: str | Path) -> None:
        from engine import worklines

        self.name = f"bench-folder:{Path(root).resolve()}"
        worklines.register(self.name, worklines.scan(root))

    def key(self, task: Task) -> str:
        return self.name

    def path(self, task: Task) -> str | None:
        return None   # a task's document is no file of the folder


class PackageWorkspaces(_OnePackage):
    """The workspaces of ``benchmarks.other_lines``' holes (languages filled as plain text: C, Java, Ruby, Perl,
    Lua): a hole's workspace is the other files of its Debian package that ``other_lines`` reads (``SOURCES``), as
    an editor opened on that package's folder would count them (``engine.adapt.files``: at most ``MAX_FILE_BYTES``
    a file), the hole's own file left out (its lines are the document's). A task id is
    ``language:package/path:line``; files are keyed ``package/path``, one package read at a time (``grouped``)."""

    def __init__(self) -> None:
        super().__init__()
        self._files: dict[str, tuple[str, str]] = {}   # the loaded package's key -> (language, text)

    @staticmethod
    def package(task: Task) -> str:
        return file_id(task).split("/", 1)[0]

    def _files_of(self, package: str) -> dict[str, tuple[str, str]]:
        from benchmarks.other_lines import SOURCES, source_files
        from engine.adapt.files import MAX_FILE_BYTES

        return {name: (source.language, text) for source in SOURCES if source.package == package
                for name, text in source_files(source)
                if len(text.encode("utf-8", "surrogatepass")) <= MAX_FILE_BYTES}

    def key(self, task: Task) -> str | None:
        """Register the workspace of ``task``'s package without its file and return its key (None: the package's
        files are not installed)."""
        package, fid = self.package(task), file_id(task)
        if package != self._loaded:
            files = self._files_of(package)
            if not files:
                return None
            self._files = files
        return self.with_package(package, fid, lambda: self._of(self._files),
                                 lambda key: self._of({key: self._files[key]} if key in self._files else {}))

    @staticmethod
    def _of(files: dict[str, tuple[str, str]]) -> Files:
        return ((key, language, text) for key, (language, text) in files.items())

    def path(self, task: Task) -> str:
        return file_id(task)

    def grouped(self, tasks: list[Task]) -> list[Task]:
        """``tasks`` ordered by package, then file (stable)."""
        order = {p: n for n, p in enumerate(dict.fromkeys(self.package(t) for t in tasks))}
        return sorted(tasks, key=lambda t: (order[self.package(t)], file_id(t)))
