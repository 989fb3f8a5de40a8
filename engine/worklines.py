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
thread: a lookup (``table``) never builds, it reads the last tables built. A language's tables are keyed by its
grammar's name, or for a language the engine fills as plain text (C, Java, Ruby, Perl, Lua) by its own id (C++ in C's)
(``languages.lines_name``): on ``benchmarks.other_lines``' 1,263 development holes, each package's other files as the
workspace, right fills offered 157 -> 310 (empty lines) and 268 -> 409 (typed lines; benchmarks/README.md, "Workspace
lines in languages without a grammar"). The server keeps one per workspace folder (``register``, under the folder's
path, scanned with ``engine.adapt.files.workspace_files``: git's files or the ``.gitignore``'d walk, within the
adapter's caps) and names it in each request (``InfillRequest.workspace``).

A ``Workspace`` also keeps each Go file's top-level names (``engine.names.package_defines``: its functions, types,
variables and constants, found by a scan of its lines as it is counted) by directory and ``package`` clause:
``defined`` gives the names the other files of a document's package define, which the invented-names rule
(``engine.names``) does not count as invented (the request names the document's path: ``InfillRequest.path``). On
the Go standard library's 35 MB: 73,000 names, 11 MB, 0.75 s of scanning. The Go files of the document's folder it
does not count (over 200 KB: generated code, tables) are scanned on disk when asked (``_uncounted_go``: at most
``UNCOUNTED_READ`` bytes of new files per request, each kept until it changes). Each Rust file's module-level items and
glob imports are kept too (``engine.rustmods.scan``), and ``defined`` gives a Rust document the names its glob imports
bring in from those files (``rustmods.glob_names``).

A ``Workspace`` also counts each file's distinct pairs of neighbouring code lines (``steps_of``: a line, the next
code line, the step of indentation between them), for an empty line's options (``doclines.neighbour_options``):
``neighbours`` gives the lines seen right after a line and right before another, by the number of files. A file
keeps its pairs as sorted integer keys (two line ids and the step), and ``refresh`` builds each language's
distinct keys with their file counts, sorted both ways, with its lines' table: on the Go standard library's 30 MB
the pairs cost about 130 MB and 1.3 s of counting, a lookup 0.03 to 7 ms. For a typed line, ``neighbours`` keeps
only the lines that start with the typed code (``start``): each line id's place among the language's lines in code
point order (``_Pairs.places``, built with the tables, 1.8 MB there) makes that a range test, 0.02 to 5 ms.
"""

from __future__ import annotations

import bisect
import collections
import heapq
import logging
import os
import threading
from collections.abc import Callable, Iterable
from typing import NamedTuple

import numpy as np

from . import names, rustmods
from .commonlines import Table
from .context import file_unit

log = logging.getLogger(__name__)
MIN_FILES = 1                  # a line in at least this many of the workspace's files (1: any line)
SHORTEST, LONGEST = 2, 200     # characters of a stripped line, as for the common lines
MOST = 32                      # workspace lines per hole, the most widespread first
NEIGHBOURS_MOST = 16           # lines after the line above (and before the line below) per empty-line hole
# languages whose lines share a table: TSX's and TypeScript's; C++'s and C's (a C++ project's headers are often
# ``.h``, which counts as C)
SAME_TABLE = {"typescriptreact": "typescript", "javascriptreact": "javascript", "cpp": "c"}


def lines_of(text: str) -> frozenset[str]:
    """A file's distinct lines, stripped (CRLF and indentation alike), ``SHORTEST`` to ``LONGEST`` characters."""
    return frozenset(s for s in (line.strip() for line in text.split("\n")) if SHORTEST <= len(s) <= LONGEST)


def steps_of(text: str) -> frozenset[tuple[str, str, int]]:
    """A file's distinct neighbour pairs: each code line (stripped, at most ``LONGEST`` characters: a lone ``}``
    too) with the next code line after it (blank lines skipped) and the step of indentation between them (-1:
    the second is less indented, 0: as much, 1: more)."""
    out: set[tuple[str, str, int]] = set()
    last: tuple[str, int] | None = None
    for line in text.split("\n"):
        code = line.strip()
        if not code:
            continue
        width = indent_width(line)
        if last is not None and len(code) <= LONGEST and len(last[0]) <= LONGEST:
            out.add((last[0], code, (width > last[1]) - (width < last[1])))
        last = (code, width)
    return frozenset(out)


def indent_width(line: str) -> int:
    """A line's indentation in columns (a tab counts 4)."""
    code = line.lstrip(" \t")
    return len(line[:len(line) - len(code)].expandtabs(4))


RUN = 16_384   # lines sorted in one call (``sorted_lines``)


def sorted_lines(lines: Iterable[str]) -> list[str]:
    """``sorted(lines)`` without holding the interpreter's lock for long: runs of ``RUN`` lines are sorted apart
    and merged by ``heapq.merge`` (Python code, between whose steps other threads run). One ``sorted`` over a
    folder's lines is one C call: on 30 MB of site-packages (441,000 distinct Python lines) it held the lock for
    0.7 to 1.0 s on a loaded 2-core machine, and every LSP request waited for it (a ``diffusion/stats`` round trip
    took 942 ms); in runs, the longest hold was 50 to 70 ms, for 10 to 25 % more CPU time."""
    items = list(lines)
    if len(items) <= RUN:
        return sorted(items)
    return list(heapq.merge(*(sorted(items[i:i + RUN]) for i in range(0, len(items), RUN))))


def table_of(counts: dict[str, int], min_files: int = MIN_FILES, ordered: list[str] | None = None) -> Table | None:
    """The table (``commonlines.Table``) of the lines counted in at least ``min_files`` files; None if none is.
    ``ordered``: the counted lines already in code point order (else they are sorted here)."""
    lines = ordered if ordered is not None else sorted_lines(counts)
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

    def __init__(self, min_files: int = MIN_FILES, disk: Callable[[str], str | None] | None = None) -> None:
        self.min_files = min_files
        # where a folder of the keyed paths is on disk (None: nowhere): the server keys files by their real paths;
        # a benchmark's corpus ids name their package's unpacked folder (``benchmarks/workspaces.py``)
        self.disk = disk or _on_disk
        self._lock = threading.Lock()
        self._files: dict[str, tuple[str, frozenset[str]]] = {}     # path -> (table language, its lines)
        self._counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self._ordered: dict[str, list[str]] = {}    # a language's counted lines, sorted (once it has a table)
        # neighbour pairs (``steps_of``): each code line has an id (``_ids``, ``_strings``; the ids of lines no file
        # pairs any more are forgotten by ``refresh`` once the ids doubled, ``_compact``), a file keeps its pairs as
        # sorted int64 keys (``_key``), and ``refresh`` builds per language the sorted distinct keys with their file
        # counts, by the line before (``_pairs[name][0]``) and the line after ([1]), and where each line id sits
        # among the language's lines in code point order (a typed start's lines), with the ids they were built with
        self._steps: dict[str, np.ndarray] = {}
        self._ids: dict[str, int] = {}
        self._strings: list[str] = []
        self._live = 0                              # the ids in use after the last ``_compact``
        self._pairs: dict[str, _Pairs] = {}
        self._tables: dict[str, Table | None] = {}
        self._stale: set[str] = set()
        # the top-level names of each file of a package (``names.package_defines``: Go's functions, types...), by
        # (directory, package), then path: a fill may read them without the document defining them
        self._packages: dict[tuple[str, str], dict[str, frozenset[str]]] = {}
        self._package_of: dict[str, tuple[str, str]] = {}   # path -> its (directory, package)
        self._rust: dict[str, rustmods.Items] = {}   # a Rust file's module-level names and globs (``rustmods.scan``)
        # path -> (table language, one level of its indentation: ``context.file_unit``) for a file that indents code,
        # how many files of each language indent so, and the unit most of them use (``indent_unit`` reads it without
        # the lock: a request never waits for a table being built)
        self._units: dict[str, tuple[str, str]] = {}
        self._unit_counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self._unit_of: dict[str, str] = {}
        self._sizes: dict[str, int] = {}            # path -> bytes of the text counted (UTF-8)
        self._bytes = 0                             # their sum

    def update(self, path: str, language: str, text: str) -> None:
        """Count (again) the file at ``path`` (any key unique per file) with its current ``text``."""
        name = SAME_TABLE.get(language, language)
        lines = lines_of(text)
        pairs = steps_of(text)
        defines = names.package_defines(language, text)
        items = rustmods.scan(text) if language == "rust" else None
        unit = file_unit(text, language)
        with self._lock:
            self._drop_names(path)
            self._drop_unit(path)
            if unit is not None:
                self._units[path] = (name, unit)
                self._count_unit(name, unit, 1)
            if defines is not None:
                where = (os.path.dirname(path), defines[0])
                self._package_of[path] = where
                self._packages.setdefault(where, {})[path] = defines[1]
            if items is not None:
                self._rust[path] = items
            old = self._files.get(path)
            steps = self._keys(pairs)
            if old is not None and old == (name, lines) and np.array_equal(self._steps.get(path, _NO_KEYS), steps):
                return
            self._drop(path)
            self._files[path] = (name, lines)
            self._steps[path] = steps
            self._sizes[path] = size = len(text.encode("utf-8", "surrogatepass"))
            self._bytes += size
            counts, ordered = self._counts[name], self._ordered.get(name)
            if ordered is not None:
                for line in lines:
                    if not counts[line]:
                        bisect.insort(ordered, line)
            counts.update(lines)
            self._stale.add(name)

    def _keys(self, pairs: frozenset[tuple[str, str, int]]) -> np.ndarray:
        """A file's pairs as sorted keys: the first line's id, the second's, the step (``_key``)."""
        ids = self._ids
        for a, b, _ in sorted(pairs):   # ids in a fixed order: a tie between lines goes to the first counted
            for line in (a, b):
                if line not in ids:
                    ids[line] = len(self._strings)
                    self._strings.append(line)
        return distinct(np.fromiter((_key(ids[a], ids[b], d) for a, b, d in pairs), dtype=np.int64,
                                    count=len(pairs)))

    def remove(self, path: str) -> None:
        """Stop counting the file at ``path`` (deleted, or no longer a source file)."""
        with self._lock:
            self._drop(path)
            self._drop_names(path)
            self._drop_unit(path)

    def _drop_unit(self, path: str) -> None:
        old = self._units.pop(path, None)
        if old is not None:
            self._count_unit(*old, -1)

    def _count_unit(self, name: str, unit: str, n: int) -> None:
        """One file more (``n`` 1) or less (-1) of language ``name`` indenting with ``unit`` (lock held)."""
        counts = self._unit_counts[name]
        counts[unit] += n
        if counts[unit] <= 0:
            del counts[unit]
        if counts:   # the most files; a tie: a tab, then the narrower
            self._unit_of[name] = max(counts, key=lambda u: (counts[u], u == "\t", -len(u)))
        else:
            self._unit_of.pop(name, None)

    def indent_unit(self, language: str) -> str | None:
        """One level of indentation in most of the workspace's files of a language that indent code (a tie: a tab,
        then the narrower), or None when none does: for a document with no indented code line yet (a new file's
        first body in a project indented two spaces, or with tabs)."""
        return self._unit_of.get(SAME_TABLE.get(language, language))

    def _drop_names(self, path: str) -> None:
        self._rust.pop(path, None)
        where = self._package_of.pop(path, None)
        if where is not None:
            files = self._packages[where]
            files.pop(path, None)
            if not files:
                del self._packages[where]

    def defined(self, language: str, path: str | None, text: str) -> frozenset[str]:
        """The names the document at ``path`` (as its files are keyed) with ``text`` reads from other files without
        defining them. Go: what the other files of its package define at their top level (``names.package_defines``):
        the counted files of the same directory with the same ``package`` clause, and that directory's Go files on
        disk the workspace did not count (over ``engine.adapt.files.MAX_FILE_BYTES``: generated code, tables;
        ``_uncounted_go``). Rust: the names its glob imports bring in from the counted files
        (``rustmods.glob_names``). Empty for another language or without a path."""
        if path is None:
            return frozenset()
        if language == "rust":
            return rustmods.glob_names(path, text, self._rust.get,
                                       lambda package: rustmods.library_names(package, self.disk(package)))
        package = names.package_of(language, text)
        if package is None:
            return frozenset()
        folder = os.path.dirname(path)
        with self._lock:
            files = self._packages.get((folder, package)) or {}
            found = frozenset().union(*(found for other, found in files.items() if other != path))
        own = os.path.basename(path)
        uncounted = _uncounted_go(self.disk(folder), package,
                                  lambda name: name == own or os.path.join(folder, name) in self._files)
        return found | uncounted if uncounted else found

    def _drop(self, path: str) -> None:
        old = self._files.pop(path, None)
        if old is None:
            return
        name, lines = old
        self._steps.pop(path, None)
        self._bytes -= self._sizes.pop(path, 0)
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
        with self._lock:
            if len(self._strings) > max(2 * self._live, _COMPACT_FROM):
                self._compact()
        for name in self._take_stale():
            with self._lock:
                counts = self._counts[name]
                if name not in self._ordered:
                    self._ordered[name] = sorted_lines(counts)
                table = table_of(counts, self.min_files, self._ordered[name])
                keys = [self._steps[path] for path, (lang, _) in self._files.items() if lang == name]
                ids, strings = self._ids, self._strings
                known = len(strings)    # every id in ``keys`` is below this
            self._tables[name] = table
            lines = table.lines if table is not None else []
            self._pairs[name] = _Pairs(*_pair_tables(keys), lines, _places(lines, ids, known), ids, strings)

    def _compact(self) -> None:
        """Forget the ids of the lines no counted file pairs any more (lock held). A line typed and saved gets an
        id at each save where it reads differently, and ids were never forgotten: the tables grew with every save of
        a day's editing (and each refresh's ``_places`` with them). The ids kept keep their order (a tie goes to
        the first counted); every language's pairs are rebuilt, and a lookup meanwhile reads the last ones built
        with the ids they were built with."""
        every = np.concatenate(list(self._steps.values())) if self._steps else _NO_KEYS
        mask = (1 << _ID_BITS) - 1
        used = distinct(np.concatenate((every >> (_ID_BITS + 2), (every >> 2) & mask)))
        new = np.full(len(self._strings), -1, dtype=np.int64)
        new[used] = np.arange(len(used))
        self._strings = [self._strings[i] for i in used.tolist()]
        self._ids = {line: i for i, line in enumerate(self._strings)}
        for path, keys in self._steps.items():   # the order of a file's keys holds: the ids keep theirs
            self._steps[path] = (new[keys >> (_ID_BITS + 2)] << (_ID_BITS + 2)) | (new[(keys >> 2) & mask] << 2) \
                | (keys & 3)
        self._live = len(used)
        self._stale.update(self._pairs)

    def _take_stale(self) -> set[str]:
        with self._lock:
            stale, self._stale = self._stale, set()
        return stale

    def table(self, language: str) -> Table | None:
        """The last table built for a language (``LanguageSpec.name``), or None."""
        return self._tables.get(SAME_TABLE.get(language, language))

    def neighbours(self, language: str, above: str | None, below: str | None, most: int = NEIGHBOURS_MOST,
                   start: str = "") -> tuple[list[tuple[str, int, int]], list[tuple[str, int, int]]]:
        """The code lines that came right after the code line ``above`` (stripped) in the workspace's files, and
        those that came right before ``below``: each ``(line, indentation step from its neighbour, files)``, the
        most files first (a tie: the first counted), at most ``most`` of each, then at most ``most`` more of each that
        were seen beside both; with ``start``, only the lines that start with it and have more code than it (the
        code typed on a line). Read from the last tables built (``refresh``), as ``table`` is."""
        name = SAME_TABLE.get(language, language)
        tables = self._pairs.get(name)
        if tables is None:
            return [], []
        ids = [tables.ids.get(line) if line else None for line in (above, below)]
        # each side's pairs: the other lines' ids, the steps, the files
        sides = [_side(table, line) for table, line in zip((tables.forward, tables.backward), ids)]
        if start:   # the lines in code point order from ``start`` up to the last that starts with it
            lo = bisect.bisect_left(tables.lines, start)
            hi = bisect.bisect_left(tables.lines, start + "\U0010ffff", lo)
            same = tables.ids.get(start, -1)   # the typed code itself is no candidate (lines are stripped: no
            kept = []                         # other line that starts with it is as short)
            for side in sides:
                place = tables.places[side[0]]
                keep = (place >= lo) & (place < hi) & (side[0] != same)
                kept.append(tuple(a[keep] for a in side))
            sides = kept
        out: list[list[tuple[str, int, int]]] = []
        for k, (lines, steps, files) in enumerate(sides):
            top = np.argsort(-files, kind="stable")[:most] if len(files) > most else np.arange(len(files))
            other = sides[1 - k][0]
            if len(other) and len(files) > most:   # lines seen beside both neighbours: kept beyond ``most``
                both = np.flatnonzero(np.isin(lines, other))
                both = both[np.argsort(-files[both], kind="stable")][:most]
                top = np.concatenate([top, np.setdiff1d(both, top, assume_unique=True)])
            out.append([(tables.strings[int(lines[i])], int(steps[i]), int(files[i])) for i in top])
        return out[0], out[1]

    @property
    def files(self) -> int:
        return len(self._files)

    @property
    def bytes(self) -> int:
        """The bytes of the files counted (UTF-8), for a cap over several workspaces."""
        return self._bytes

    def size(self, path: str) -> int:
        """The bytes of the file at ``path`` as counted (UTF-8), 0 when it is not counted."""
        return self._sizes.get(path, 0)


def _on_disk(folder: str) -> str | None:
    """A folder of a workspace keyed by real paths, as it is on disk (None for a key that is no absolute path)."""
    return folder if os.path.isabs(folder) else None


UNCOUNTED_READ = 8_000_000    # bytes of a Go folder's uncounted files read per request, at most (then cached)
UNCOUNTED_FILE = 16_000_000   # a larger file is not read
UNCOUNTED_FILES = 2_000       # a folder's Go files looked at, at most
_uncounted_lock = threading.Lock()
_uncounted: collections.OrderedDict[str, tuple[tuple[int, int], tuple[str, frozenset[str]] | None]] = \
    collections.OrderedDict()  # a file's path -> ((mtime_ns, size), its package and names), the last 1,024 read
_UNCOUNTED_KEPT = 1024


def _uncounted_go(folder: str | None, package: str, counted: Callable[[str], bool]) -> frozenset[str]:
    """The top-level names the Go files in ``folder`` (on disk) of ``package`` that the workspace does not count
    (``counted``: by file name; the document's own among them) define: the files over the listing's 200 KB per file
    (generated code: ``opGen.go``, ``zz_generated.deepcopy.go``, Unicode tables), gitignored ones, those past its
    30 MB. Each is scanned like a counted one (``names.package_defines``, about 25 ms a MB) and kept until it changes
    (its modification time and size); a request reads ``UNCOUNTED_READ`` bytes of new files at most."""
    if folder is None:
        return frozenset()
    from .adapt.files import read_text

    found: set[str] = set()
    budget, looked = UNCOUNTED_READ, 0
    try:
        entries = os.scandir(folder)
    except (OSError, ValueError):
        return frozenset()
    with entries:
        for entry in entries:
            if not entry.name.endswith(".go") or counted(entry.name):
                continue
            looked += 1
            if looked > UNCOUNTED_FILES:
                break
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            stamp = (st.st_mtime_ns, st.st_size)
            with _uncounted_lock:
                known = _uncounted.get(entry.path)
                if known is not None:
                    _uncounted.move_to_end(entry.path)
            if known is None or known[0] != stamp:
                if st.st_size > UNCOUNTED_FILE or st.st_size > budget:
                    continue
                budget -= st.st_size
                text = read_text(entry.path, UNCOUNTED_FILE)
                known = (stamp, names.package_defines("go", text) if text is not None else None)
                with _uncounted_lock:
                    _uncounted[entry.path] = known
                    while len(_uncounted) > _UNCOUNTED_KEPT:
                        _uncounted.popitem(last=False)
            if known[1] is not None and known[1][0] == package:
                found |= known[1][1]
    return frozenset(found)


_NO_KEYS = np.zeros(0, dtype=np.int64)
_COMPACT_FROM = 4096   # line ids: below this many, none is forgotten
_ID_BITS = 30   # line ids below 2**30: a key is (first id, second id, step + 1) in 62 bits


def distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of integers, by a sort: numpy 2.4's ``np.unique`` without counts takes a hash path,
    40 to 100 times slower on these keys and ids (639,000 keys of 30 MB of site-packages: 513 ms of CPU against 6 ms;
    their 1.3 million line ids: 483 ms against 13) and holding the interpreter's lock throughout: a folder's first
    refresh (``_compact``) held every LSP request for 0.3 to 0.5 s."""
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def _key(first: int, second: int, step: int) -> int:
    return (first << (_ID_BITS + 2)) | (second << 2) | (step + 1)


def _pair_tables(keys: list[np.ndarray]) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The distinct keys of a language's files with the number of files that have each, sorted by the first line
    (then the second), and the same keys turned around (the second line first, the step negated)."""
    every = np.concatenate(keys) if keys else _NO_KEYS
    forward, files = np.unique(every, return_counts=True)
    mask = (1 << _ID_BITS) - 1
    first, second, step = forward >> (_ID_BITS + 2), (forward >> 2) & mask, forward & 3
    backward = (second << (_ID_BITS + 2)) | (first << 2) | (2 - step)
    order = np.argsort(backward, kind="stable")
    return (forward, files), (backward[order], files[order])


class _Pairs(NamedTuple):
    """A language's neighbour pairs (``_pair_tables``), its lines in code point order (the lines table's) and each
    line id's place among them (-1: not among them), built together so that a lookup reads one consistent set."""

    forward: tuple[np.ndarray, np.ndarray]
    backward: tuple[np.ndarray, np.ndarray]
    lines: list[str]
    places: np.ndarray
    ids: dict[str, int]       # the line ids these were built with (``Workspace._compact`` makes new ones)
    strings: list[str]


def _places(lines: list[str], ids: dict[str, int], known: int) -> np.ndarray:
    """Each of the ``known`` line ids' index in ``lines`` (sorted), -1 for a line id not among them."""
    places = np.full(known, -1, dtype=np.int32)
    found = np.fromiter((ids.get(line, -1) for line in lines), dtype=np.int64, count=len(lines))
    ok = (found >= 0) & (found < known)
    places[found[ok]] = np.flatnonzero(ok).astype(np.int32)
    return places


def _side(table: tuple[np.ndarray, np.ndarray], line: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs of ``table`` whose first line has the id ``line``: the other lines' ids, the steps, the files."""
    keys, files = table
    if line is None:
        return _NO_KEYS, _NO_KEYS, _NO_KEYS
    lo = np.searchsorted(keys, line << (_ID_BITS + 2))
    hi = np.searchsorted(keys, (line + 1) << (_ID_BITS + 2))
    found = keys[lo:hi]
    return (found >> 2) & ((1 << _ID_BITS) - 1), (found & 3) - 1, files[lo:hi]


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
         pause: Callable[[], object] | None = None, max_total_bytes: int | None = None,
         exclude: Iterable[str] = ()) -> Workspace:
    """Count the source files of the folder ``root`` (``engine.adapt.files.workspace_files``: what git would track,
    in the server's languages and the plain-text ones it counts, ``plain=True``, within the adapter's caps) into
    ``workspace`` (a new one by default), keyed by their absolute paths, and build its tables. ``files`` ((path,
    language, text) triples) replaces the listing. ``pause``: called before each file is counted and before the
    tables are built (the server's waits while a fill runs: counting holds the interpreter's lock, which the engine
    thread needs too). ``max_total_bytes``: the listing's cap on the bytes read (the adapter's 30 MB by default).
    ``exclude``: folders under ``root`` whose files are not counted (workspace folders nested in it, counted as
    their own)."""
    from .adapt.files import iter_workspace_files

    workspace = workspace or Workspace()
    if files is None:
        base = os.path.realpath(root)
        cap = {} if max_total_bytes is None else {"max_total_bytes": max_total_bytes}
        listing = iter_workspace_files(base, pause=pause, exclude=exclude, plain=True, **cap)
        files = ((os.path.join(base, f.path), f.language, f.text) for f in listing)
    for path, language, text in files:
        if pause is not None:
            pause()
        workspace.update(path, language, text)
    if pause is not None:
        pause()
    workspace.refresh()
    return workspace
