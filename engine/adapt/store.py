"""Where adapted weights live: ``$XDG_CACHE_HOME/diffusion-lsp/adapt/<key>/`` (``~/.cache`` without the variable),
the key a hash of the workspace's absolute path and the base model's digest. Nothing is ever written into the
workspace, and nothing leaves the machine.

An entry holds ``adapt.json`` (the record: before/after figures, whether the gate accepted) and, only when it
was accepted, either ``model.safetensors`` (fully fine-tuned weights, loaded over the base model's) or, for a
large model adapted with LoRA (``engine/adapt/lora.py``), ``adapter.safetensors`` and ``adapter.json`` (the
low-rank matrices and their rank, scale and modules, merged into the base weights when loaded).

One adapter at a time adapts an entry: it holds ``<key>.lock`` beside the entry (``hold``: an ``flock``, which the
kernel releases when the process ends, however it ends, so a crashed adapter never leaves a lock behind; the file
goes with its holder). Another (a second editor's server on the same workspace) waits for it, then takes the entry
it published.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:   # Windows: no lock (two adapters there may both run)
    fcntl = None  # type: ignore[assignment]

RECORD = "adapt.json"
WEIGHTS = "model.safetensors"
ADAPTER = "adapter.safetensors"
ADAPTER_CONFIG = "adapter.json"
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")
_digests: dict[tuple[str, float, int], str] = {}


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "diffusion-lsp" / "adapt"


def _file_digest(path: Path, h: Any) -> None:
    size = path.stat().st_size
    h.update(f"{path.name}\0{size}\0".encode())
    with path.open("rb") as f:
        if size <= 256 << 20:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        else:  # a large checkpoint: its first and last 16 MiB and its size stand for it
            h.update(f.read(16 << 20))
            f.seek(size - (16 << 20))
            h.update(f.read(16 << 20))


def model_digest(model_dir: str | os.PathLike[str]) -> str:
    """A digest of a checkpoint directory's config, tokenizer and weight files (cached per directory state)."""
    d = Path(model_dir).resolve()
    files = sorted(p for p in d.iterdir() if p.is_file() and (p.suffix == ".json" or p.suffix in _WEIGHT_SUFFIXES))
    stamp = (str(d), max((p.stat().st_mtime for p in files), default=0.0), sum(p.stat().st_size for p in files))
    if stamp not in _digests:
        h = hashlib.sha256()
        for p in files:
            _file_digest(p, h)
        _digests[stamp] = h.hexdigest()
    return _digests[stamp]


def entry_dir(workspace: str | os.PathLike[str], model_dir: str | os.PathLike[str]) -> Path:
    """The cache entry of a workspace adapted from a base model."""
    named = f"{Path(workspace).resolve()}\0{model_digest(model_dir)}"   # a name that is not UTF-8: its own bytes
    key = hashlib.sha256(named.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return cache_root() / key


@dataclass
class Score:
    """One-line holes of the held-out slice. ``exact``: the model's best fill is exactly right (no confidence
    bar: what the model knows); ``offered``: the fill reaches the calibration's default bar (what the editor
    shows); ``offered_exact``: offered and exactly right."""

    holes: int = 0
    offered: int = 0
    exact: int = 0
    offered_exact: int = 0

    @property
    def exact_match(self) -> float:
        return self.exact / self.holes if self.holes else 0.0

    @property
    def precision(self) -> float:
        return self.offered_exact / self.offered if self.offered else 0.0

    def summary(self) -> dict[str, Any]:
        return {**asdict(self), "exact_match": round(self.exact_match, 4), "precision": round(self.precision, 4)}


def improves(before: Score, after: Score) -> bool:
    """The gate: the adapted weights are used only when they fill strictly more held-out lines exactly
    (on the same holes), so a no-op adaptation is never adopted."""
    return before.holes == after.holes > 0 and after.exact > before.exact


@dataclass
class AdaptRecord:
    workspace: str
    model: str
    model_digest: str
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    accepted: bool = False
    steps: int = 0
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    train_files: int = 0
    held_out_files: int = 0
    train_tokens: int = 0
    finished: str = ""        # UTC time the run ended
    method: str = ""          # "full" or "lora" (what was trained; engine/adapt/lora.py)
    reason: str = ""          # why nothing was adopted, when it was not

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def read_record(entry: Path) -> AdaptRecord | None:
    """The entry's record, or None when there is none or it is unreadable."""
    try:
        raw = json.loads((entry / RECORD).read_text("utf-8"))
        return AdaptRecord(**{k: v for k, v in raw.items() if k in AdaptRecord.__dataclass_fields__})
    except (OSError, ValueError, TypeError):
        return None


def accepted_weights(entry: Path) -> Path | None:
    """The adapted weights of an entry the gate accepted (``adapter.safetensors`` for a LoRA adapter, with its
    ``adapter.json``; else ``model.safetensors``), or None."""
    record = read_record(entry)
    if record is None or not record.accepted:
        return None
    if (entry / ADAPTER).is_file() and (entry / ADAPTER_CONFIG).is_file():
        return entry / ADAPTER
    return entry / WEIGHTS if (entry / WEIGHTS).is_file() else None


def publish(entry: Path, record: AdaptRecord, write_weights: Any = None, name: str = WEIGHTS) -> None:
    """Replace the entry at once: everything is written into a fresh directory beside it, then renamed,
    so a reader sees the old entry or the new one, never half of one. ``write_weights(path)`` writes them
    (``path``: the entry's ``name``, ``WEIGHTS`` or ``ADAPTER``; an adapter's writer adds ``ADAPTER_CONFIG``)."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=entry.parent))
    try:
        if write_weights is not None:
            write_weights(tmp / name)
        (tmp / RECORD).write_text(json.dumps(record.to_json(), indent=2), "utf-8")
        old = entry.with_name(entry.name + ".old")
        if entry.exists():
            shutil.rmtree(old, ignore_errors=True)
            entry.rename(old)
        tmp.rename(entry)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def lock_path(entry: Path) -> Path:
    return entry.with_name(entry.name + ".lock")


@contextlib.contextmanager
def hold(entry: Path, on_wait: Callable[[int | None], None] | None = None,
         check: Callable[[], None] | None = None, poll: float = 0.5) -> Iterator[bool]:
    """Hold the entry's lock while adapting it; yields whether another process held it first (then its outcome
    is in the cache). While another holds it: ``on_wait(its pid)`` once, then ``check()`` (which may raise, to
    stop waiting) every ``poll`` s. The holder removes the lock file as it ends; a killed holder's file locks
    nothing (the lock ended with its process) and goes with the next holder."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    path = lock_path(entry)
    waited = False
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            while fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not waited and on_wait is not None:
                        on_wait(_holder(path))
                    waited = True
                    if check is not None:
                        check()
                    time.sleep(poll)
            try:
                mine = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:   # the holder we waited for removed it: lock the path's file anew
                mine = False
        except BaseException:
            os.close(fd)
            raise
        if mine:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield waited
    finally:
        try:
            os.unlink(path)   # while locked: a waiter that locks the removed file sees it is gone and opens anew
        except OSError:
            pass
        os.close(fd)


def _holder(path: Path) -> int | None:
    try:
        return int(path.read_text("ascii").strip())
    except (OSError, ValueError):
        return None


def remove(workspace: str | os.PathLike[str], model_dirs: Sequence[str | os.PathLike[str]] = ()) -> list[Path]:
    """Delete every cache entry of ``workspace`` (whatever base model it was adapted from; the entries of the
    base models in ``model_dirs`` even where their record cannot be read, since their path says whose they are);
    the removed paths."""
    root = cache_root()
    target = str(Path(workspace).resolve())
    named = {entry_dir(target, d) for d in model_dirs if Path(d).is_dir()}
    removed = []
    if root.is_dir():
        for entry in sorted(root.iterdir()):
            if not entry.is_dir():
                continue
            record = read_record(entry)
            if entry in named or record is not None and record.workspace == target:
                shutil.rmtree(entry)
                removed.append(entry)
    return removed
