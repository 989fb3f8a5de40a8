"""Which files of a workspace the adapter learns from and which it holds out.

Files in the server's languages (by extension, ``engine.languages``), what git would track (``git ls-files``
in a git work tree; otherwise every ``.gitignore`` on the way down, matched with ``pathspec``), UTF-8 text
under a size cap per file and in all. A file is held out by a hash of its path relative to the workspace,
so the split is the same on every run and never depends on the file's content.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import subprocess
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..languages import PLAIN, has_grammar, language_for_path, spec_for

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 200_000        # a larger file is generated or data more often than code
MAX_TOTAL_BYTES = 30_000_000    # the whole selection
MAX_GITIGNORE_BYTES = 1_000_000  # a .gitignore's patterns, at most
MAX_WALKED = 200_000            # files listed (by git or the walk), at most: a home directory is not a project
HELD_OUT_PERCENT = 12           # files whose path hash falls below this share are held out
_SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache"}


@dataclass(frozen=True)
class SourceFile:
    path: str       # relative to the workspace, '/'-separated
    language: str   # LSP language id
    text: str


def held_out(path: str, percent: int = HELD_OUT_PERCENT) -> bool:
    """Whether the file at workspace-relative ``path`` belongs to the held-out slice."""
    digest = hashlib.sha256(PurePosixPath(path).as_posix().encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:4], "big") % 100 < percent


def _git(root: Path, *args: str, **kwargs: Any) -> subprocess.CompletedProcess:
    """``git args`` run in ``root``, to read it only: with ``core.fsmonitor`` off, since a workspace's own
    ``.git/config`` (an unpacked archive, a shared folder) can name a program there that git would run for
    ``ls-files`` and ``check-ignore``, as the user, as soon as the folder is opened. Without the editor's
    ``GIT_DIR``, ``GIT_WORK_TREE`` and the like (an editor started from a git hook or a ``git`` alias has them),
    which would list another repository than the folder's."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION}
    return subprocess.run(["git", "-c", "core.fsmonitor=false", "-C", str(root), *args], capture_output=True,
                          env=env, **kwargs)


_GIT_LOCATION = {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
                 "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM"}


def _git_files(root: Path, pause: Callable[[], object] | None = None, most: int = MAX_WALKED) -> list[str] | None:
    """Tracked and untracked-but-not-ignored files, the first ``most`` by path (as the walk stops, a home directory
    or a monorepo under git), when ``root`` is inside a git work tree; else None. None too when git would block
    reading an exclude file (``_blocking_excludes``): the walk lists them then."""
    try:
        inside = _git(root, "rev-parse", "--is-inside-work-tree", "--git-path", "info/exclude", text=True, timeout=30)
        lines = inside.stdout.splitlines()
        if inside.returncode != 0 or not lines or lines[0].strip() != "true":
            return None
        if (blocking := _blocking_excludes(root, lines[1:2], pause, most)) is not None:
            log.warning("%s is not a regular file, git would wait on it: the folder's files are listed by walking it",
                        blocking)
            return None
        listed = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    if listed.returncode != 0:
        return None
    return [p for p in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if p][:most]   # git sorts them


def _blocks(path: str | os.PathLike[str]) -> bool:
    """Whether git would wait opening ``path`` as an exclude file: it is there (a link followed: older git follows a
    linked .gitignore) and is no regular file or directory: a FIFO waits for a writer, a device may never end."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _blocking_excludes(root: Path, info_exclude: list[str], pause: Callable[[], object] | None = None,
                       most: int = MAX_WALKED) -> str | None:
    """The first exclude file under ``root`` that git's listing would block on (``_blocks``): the repository's
    ``info/exclude`` (``info_exclude``: its path as git names it, relative to ``root``) or a ``.gitignore`` in a
    directory the listing goes through (the walk's: no ``.gitignore`` excludes it; everything but ``.git``). git reads
    each with a plain open(): a FIFO named .gitignore held ``git ls-files`` until its 120 s timeout. None when there
    is none, or none in the first ``most`` files (a folder larger than the listing takes: git's own traversal is
    faster than this walk, which would then cost more than git's listing)."""
    for rel in info_exclude:
        if _blocks(root / rel.strip()):
            return str(root / rel.strip())
    seen = 0
    for dirpath, _, filenames, _ in _walk(root, pause, skip={".git"}):
        if ".gitignore" in filenames and _blocks(os.path.join(dirpath, ".gitignore")):
            return os.path.join(dirpath, ".gitignore")
        seen += len(filenames)
        if seen >= most:
            return None
    return None


def _ignored(specs: list[tuple[str, Any]], rel: str, is_dir: bool) -> bool:
    """Whether ``specs`` ((directory relative to root, its .gitignore), the outermost first) exclude ``rel``: as
    git decides, the innermost .gitignore with a pattern that matches it (its last such pattern), so a ``!name``
    in a subdirectory takes back what a pattern above excluded."""
    for base, spec in reversed(specs):
        if base and not rel.startswith(base + "/"):
            continue
        sub = rel[len(base) + 1:] if base else rel
        verdict = spec.check_file(sub + "/" if is_dir else sub).include
        if verdict is not None:
            return bool(verdict)
    return False


def _gitignore(directory: Path) -> Any:
    """The patterns of ``directory``'s .gitignore (a UTF-8 byte order mark skipped, as git does; CRLF or LF), or
    None when it has none that can be read: read as a source file is (``_read_bytes``: a FIFO named .gitignore
    must not block the walk, nor a link or a huge one be read)."""
    import pathspec

    data = _read_bytes(directory / ".gitignore", MAX_GITIGNORE_BYTES)
    if data is None:
        return None
    return pathspec.GitIgnoreSpec.from_lines(data.decode("utf-8-sig", "replace").splitlines())


def _walk(root: Path, pause: Callable[[], object] | None = None, skip: Collection[str] = _SKIP_DIRS
          ) -> Iterator[tuple[str, str, list[str], list[tuple[str, Any]]]]:
    """The directories under ``root`` that no ``.gitignore`` on their way down excludes (gitignore semantics: a
    pattern is relative to the directory of the file that holds it) and none of ``skip``, in walk order: (its path,
    its path relative to ``root`` ('' for ``root``), its files, sorted, the .gitignore files that hold for them, as
    ``_ignored`` reads them)."""
    import pathspec

    specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []   # (directory relative to root, its .gitignore)
    for dirpath, dirnames, filenames in os.walk(root):
        if pause is not None:
            pause()
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        specs = [(b, s) for b, s in specs if not rel_dir or rel_dir == b or rel_dir.startswith(b + "/") or not b]
        if ".gitignore" in filenames and (spec := _gitignore(Path(dirpath))) is not None:
            specs.append((rel_dir, spec))
        keep = []
        for d in sorted(dirnames):
            rel = f"{rel_dir}/{d}" if rel_dir else d
            if d not in skip and not _ignored(specs, rel, True):
                keep.append(d)
        dirnames[:] = keep
        yield dirpath, rel_dir, sorted(filenames), specs


def _walk_files(root: Path, most: int = MAX_WALKED, pause: Callable[[], object] | None = None) -> list[str]:
    """Every file under ``root`` that no ``.gitignore`` on its way down excludes (``_walk``), the first ``most`` in
    walk order."""
    out: list[str] = []
    for _, rel_dir, filenames, specs in _walk(root, pause):
        for name in filenames:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if not _ignored(specs, rel, False):
                out.append(rel)
                if len(out) >= most:
                    return out
    return out


def takes(language: str, plain: bool = False) -> bool:
    """Whether a listing takes a file of ``language`` (``languages.language_for_path``): a language with a grammar,
    and with ``plain`` one a workspace counts as plain text too (C, Java, Ruby, Perl, Lua: the server's workspace
    lines). The adapter learns from the grammar languages only: its held-out holes are found by their grammar."""
    return language != PLAIN.name and (plain or has_grammar(spec_for(language)))


def listed(root: str | os.PathLike[str], paths: Iterable[str], plain: bool = False) -> set[str]:
    """Those of ``paths`` ('/'-separated, relative to ``root``) the listing (``iter_workspace_files``) takes by
    their path: a language of the server's, no skipped directory (``node_modules``, ``.venv``...) on the way, and
    not ignored: by git in a git work tree (``git check-ignore``, one call for all: a tracked file is taken whatever
    the patterns say), else by the ``.gitignore`` files on the way down, as the walk reads them. Their size and
    text are for the reader to check. For files saved or changed in the editor (the server's workspace lines).
    ``plain``: as ``takes``."""
    candidates = [rel for rel in dict.fromkeys(paths) if takes(language_for_path(rel), plain)
                  and not any(part in _SKIP_DIRS for part in PurePosixPath(rel).parts[:-1])]
    base = Path(root).resolve()
    if not candidates:
        return set()
    # git reads the .gitignore of each directory on the paths with a plain open(): a FIFO there held it until its
    # timeout (the walk reads none that is not a regular file)
    directories = {PurePosixPath(*parts[:depth]) for parts in (PurePosixPath(rel).parts for rel in candidates)
                   for depth in range(len(parts))}
    if _blocks(base / ".git" / "info" / "exclude") or any(_blocks(base / d / ".gitignore") for d in directories):
        return {rel for rel in candidates if not _walk_ignores(base, rel)}
    try:
        checked = _git(base, "check-ignore", "-z", "--stdin",
                       input="\0".join(candidates).encode("utf-8", "surrogateescape"), timeout=120)
        if checked.returncode in (0, 1):   # 0: some are ignored, 1: none; 128: not a git work tree (or no verdict)
            ignored = set(checked.stdout.decode("utf-8", "surrogateescape").split("\0"))
            return {rel for rel in candidates if rel not in ignored}
    except (OSError, subprocess.SubprocessError):
        pass
    return {rel for rel in candidates if not _walk_ignores(base, rel)}


def _walk_ignores(base: Path, rel: str) -> bool:
    """Whether the walk (``_walk_files``) leaves out ``rel``: a ``.gitignore`` on its way down excludes it or one of
    its directories."""
    parts = PurePosixPath(rel).parts
    specs: list[tuple[str, Any]] = []
    for depth in range(len(parts)):
        here = "/".join(parts[:depth])
        if (spec := _gitignore(base / here)) is not None:
            specs.append((here, spec))
        if _ignored(specs, "/".join(parts[:depth + 1]), is_dir=depth < len(parts) - 1):
            return True
    return False


def workspace_files(root: str | os.PathLike[str], max_file_bytes: int = MAX_FILE_BYTES,
                    max_total_bytes: int = MAX_TOTAL_BYTES, plain: bool = False) -> list[SourceFile]:
    """The workspace's source files in the server's languages (``plain``: as ``takes``), sorted by path, within the
    caps."""
    return list(iter_workspace_files(root, max_file_bytes, max_total_bytes, plain=plain))


def iter_workspace_files(root: str | os.PathLike[str], max_file_bytes: int = MAX_FILE_BYTES,
                         max_total_bytes: int = MAX_TOTAL_BYTES,
                         pause: Callable[[], object] | None = None,
                         exclude: Iterable[str | os.PathLike[str]] = (), plain: bool = False) -> Iterator[SourceFile]:
    """``workspace_files`` one file at a time, each read when asked for; ``pause`` is called before each
    directory the walk lists and each file read (the server's waits while a fill runs). ``exclude``: folders under
    ``root`` whose files are left out, neither read nor counted toward ``max_total_bytes`` (the server's workspace
    folders nested in this one: each counts its own files). ``plain``: as ``takes``. A folder that is not one raises
    ValueError at once."""
    base = Path(root).resolve()
    if not base.is_dir():
        raise ValueError(f"{root}: not a directory")
    inside = (Path(e).resolve() for e in exclude)
    skipped = [e.relative_to(base).as_posix() for e in inside if e != base and e.is_relative_to(base)]
    return _read_files(base, max_file_bytes, max_total_bytes, pause, skipped, plain)


def _read_files(base: Path, max_file_bytes: int, max_total_bytes: int,
                pause: Callable[[], object] | None, skipped: Sequence[str] = (), plain: bool = False
                ) -> Iterator[SourceFile]:
    listed = _git_files(base, pause, MAX_WALKED)
    paths = sorted(listed if listed is not None else _walk_files(base, MAX_WALKED, pause))
    total = 0
    for rel in paths:
        language = language_for_path(rel)
        if not takes(language, plain) or any(part in _SKIP_DIRS for part in PurePosixPath(rel).parts[:-1]):
            continue
        if any(rel.startswith(folder + "/") for folder in skipped):
            continue
        path = os.path.join(base, rel)
        if pause is not None:
            pause()
        try:   # a link, or a path through a linked directory (git lists the index's paths whatever the disk has
            if os.path.realpath(path) != path:   # now): never read out of the folder
                continue
            size = os.stat(path).st_size
        except (OSError, ValueError):
            continue
        if size == 0 or size > max_file_bytes or total + size > max_total_bytes:
            continue
        data = _read_bytes(path, min(max_file_bytes, max_total_bytes - total))   # it may have grown since
        if not data:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        total += len(data)
        yield SourceFile(rel, language, text)


def read_text(path: str | os.PathLike[str], max_bytes: int = MAX_FILE_BYTES) -> str | None:
    """A source file's text as the listing reads it (``_read_bytes``, UTF-8); None when it is no such file."""
    data = _read_bytes(path, max_bytes)
    try:
        return data.decode("utf-8") if data is not None else None
    except UnicodeDecodeError:
        return None


def _read_bytes(path: str | os.PathLike[str], max_bytes: int) -> bytes | None:
    """The bytes of the regular file at ``path``, or None: a link (not followed), a FIFO, a socket or a device (opened
    without waiting for a writer, and checked once open: what was listed may have been replaced since), one that
    cannot be read, or one of more than ``max_bytes`` bytes as it is read (not as it was listed: it may grow)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, max_bytes + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks) if size <= max_bytes else None
    except OSError:
        return None
    finally:
        os.close(fd)
