"""Lines code often has, as fills for the rest of a line being typed, after the document's own (``doclines``).

``return nil, err``, ``self.assertEqual(``, ``import numpy as np``, ``}).catch(...)``: many lines are written the
same way in thousands of files. The embedded model seldom writes them exactly, but like the document's lines
it can tell which of them fits: the lines of the training corpus found in at least three files
(``engine/data/common_lines/<language>.tsv.gz``, built by ``python -m engine.training.common_lines``) that
start with the code typed on the cursor's line are sent as more plan options, the most frequent first, each
with its share of the files among the lines with that start (its prior, ``HoleFill.common``). The engine
ranks them and the document's lines by the model's first-forward score plus ``PRIOR_WEIGHT`` times that log
share, and engine/confidence.py estimates the chosen one with features of its own.

A table is read once per process (as a model that scores options loads, ``preload``) as the lines in order,
their file counts in that order, and each line's rank by count; a lookup is a binary search for the typed start
and a partial sort of the ranks in that range. A table that cannot be read is logged and left out: the
document's lines and the model's fills go on without it.
"""

from __future__ import annotations

import bisect
import functools
import gzip
import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)
DATA = Path(__file__).resolve().parent / "data" / "common_lines"
MOST = 32           # common lines per hole, the most frequent first (after the document's own lines)


@dataclass(frozen=True)
class Table:
    """One language's common lines: ``lines`` in code point order, ``files[i]`` the training files that have
    ``lines[i]``, ``rank[i]`` its place by file count (0: the most frequent; a tie keeps the lines' order) and
    ``index[r]`` the position of the line ranked ``r``."""

    lines: list[str]
    files: np.ndarray
    rank: np.ndarray
    index: np.ndarray

    @classmethod
    def of(cls, lines: list[str], files: np.ndarray) -> Table:
        """The table of ``lines`` (in code point order) and their file counts."""
        # rank by count, most files first; a tie keeps the lines' order
        order = np.argsort(-files, kind="stable")
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        return cls(lines, files, rank, order)

    def starting_with(self, start: str, most: int = MOST) -> list[tuple[str, float]]:
        """The ``most`` most frequent lines that start with ``start`` and have more code than it, each with the
        log of its share of the files among all the lines that start so."""
        lo = bisect.bisect_left(self.lines, start)
        hi = bisect.bisect_left(self.lines, start + "\U0010ffff", lo)
        if lo >= hi:
            return []
        ranks = self.rank[lo:hi]
        if len(ranks) > most + 1:
            ranks = np.partition(ranks, most)[:most + 1]   # one more: the typed line itself may be among them
        total = float(self.files[lo:hi].sum())
        out = []
        for r in np.sort(ranks).tolist():
            i = int(self.index[r])
            line = self.lines[i]
            if len(line) > len(start.rstrip()):
                out.append((line, math.log(float(self.files[i]) / total)))
                if len(out) >= most:
                    break
        return out


SAME_TABLE = {"typescriptreact": "typescript"}


def preload() -> None:
    """Read every language's table (about 0.2 s and 40 MB for the five), so that no request waits for one."""
    for path in sorted(DATA.glob("*.tsv.gz")):
        _table(path.name.removesuffix(".tsv.gz"))


def table(language: str) -> Table | None:
    """The table of a language (``LanguageSpec.name``), or None when none was built for it."""
    return _table(SAME_TABLE.get(language, language))


@functools.cache
def _table(name: str) -> Table | None:
    path = DATA / f"{name}.tsv.gz"
    if not path.exists():
        return None
    try:
        return read_table(path)
    except (OSError, EOFError, ValueError) as exc:   # a damaged install: no common lines for this language
        log.warning("common lines for %s not used: %s: %s", name, path, exc)
        return None


def read_table(path: Path) -> Table:
    """A table file: ``files<TAB>line`` rows sorted by line (``engine.training.common_lines``)."""
    lines: list[str] = []
    files: list[int] = []
    with gzip.open(path, "rt", encoding="utf-8", newline="\n") as f:
        for row in f:
            count, _, line = row.rstrip("\n").partition("\t")
            lines.append(line)
            files.append(int(count))
    return Table.of(lines, np.array(files, dtype=np.int64))
