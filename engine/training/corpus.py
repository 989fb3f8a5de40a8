"""The training corpus: the Python standard library of the running interpreter, deduplicated and split."""

from __future__ import annotations

import hashlib
import sysconfig
from dataclasses import dataclass
from pathlib import Path

# Directories whose files are data tables or deliberately broken code, not code to learn from.
_SKIP_PARTS = {"site-packages", "dist-packages", "encodings", "__pycache__", "idlelib", "turtledemo"}
_SKIP_NAME_HINTS = ("badsyntax", "bad_coding", "bad_getattr", "tokenizedata")
_MAX_BYTES = 300_000
_HOLDOUT_PER_MILLE = 25  # 2.5% of files, chosen by path hash, never trained on


@dataclass(frozen=True)
class SourceFile:
    path: str  # relative to the stdlib root, '/'-separated
    text: str


@dataclass(frozen=True)
class Corpus:
    root: str
    train: tuple[SourceFile, ...]
    valid: tuple[SourceFile, ...]
    duplicates_dropped: int


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def is_test_file(rel: str) -> bool:
    parts = rel.split("/")
    return any(p in ("test", "tests") or p.startswith("test_") for p in parts[:-1]) or parts[-1].startswith("test")


def _is_holdout(rel: str) -> bool:
    digest = hashlib.sha256(rel.encode()).digest()
    return int.from_bytes(digest[:4], "big") % 1000 < _HOLDOUT_PER_MILLE


def load_corpus(root: Path | None = None) -> Corpus:
    """Every readable ``*.py`` under the stdlib, exact duplicates (after whitespace strip) dropped."""
    root = root or stdlib_root()
    seen: set[str] = set()
    train: list[SourceFile] = []
    valid: list[SourceFile] = []
    dropped = 0
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if set(path.relative_to(root).parts) & _SKIP_PARTS or any(h in rel for h in _SKIP_NAME_HINTS):
            continue
        try:
            if path.stat().st_size > _MAX_BYTES:
                continue
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if len(text.strip()) < 64:
            continue
        key = hashlib.sha256(text.strip().encode()).hexdigest()
        if key in seen:
            dropped += 1
            continue
        seen.add(key)
        (valid if _is_holdout(rel) else train).append(SourceFile(rel, text))
    return Corpus(str(root), tuple(train), tuple(valid), dropped)
