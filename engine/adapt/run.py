"""The adapter: continue training the loaded masked LM on a workspace's files with the training objective and
infill curriculum (``engine/training/examples.py``), measure one-line exact match on the held-out slice before
and after, and publish the weights to the cache only when the gate (``store.improves``) says they are better.

It runs in its own process (``python -m engine.adapt``) on one thread at the lowest priority; between
steps and between measured holes it waits while ``Gate`` is paused (the server pauses it while the user types
or a fill runs).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..backends.base import Control
from ..config import FillOptions, LoadConfig
from ..memory import HeapTrimmer
from ..requests import EngineError, InfillRequest
from . import lora
from .files import SourceFile, held_out, workspace_files
from .holes import LineHole, line_holes
from .store import ADAPTER, WEIGHTS, AdaptRecord, Score, entry_dir, hold, improves, model_digest, publish, read_record

Progress = Callable[[dict[str, Any]], None]


class Stopped(Exception):
    """The gate was told to stop: the run ends without publishing."""


class Gate:
    """Pause, resume and stop, checked by the adapter between steps; ``waiting`` is set while it waits."""

    def __init__(self) -> None:
        self._go = threading.Event()
        self._go.set()
        self.stopped = threading.Event()
        self.waiting = threading.Event()
        self.on_wait: Callable[[bool], None] | None = None

    def pause(self) -> None:
        self._go.clear()

    def resume(self) -> None:
        self._go.set()

    def stop(self) -> None:
        self.stopped.set()
        self._go.set()

    def wait(self) -> None:
        """Return at once unless paused; else block until resumed. Raises ``Stopped`` once stopped."""
        if not self._go.is_set():
            self.waiting.set()
            if self.on_wait:
                self.on_wait(True)
            self._go.wait()
            self.waiting.clear()
            if self.on_wait:
                self.on_wait(False)
        self.check_stop()

    def check_stop(self) -> None:
        """Raise ``Stopped`` once stopped (paused or not)."""
        if self.stopped.is_set():
            raise Stopped()


@dataclass
class AdaptConfig:
    minutes: float = 15.0          # CPU minutes of training (time.process_time of this process, steps only)
    seq_len: int = 256
    batch_size: int = 16
    lr: float = 3e-4
    warmup_steps: int = 20
    p_infill: float = 0.7          # the curriculum's share as in the shipped model's last runs
    max_holes: int = 6
    holes: int = 200               # held-out one-line holes measured (at most)
    per_file: int = 40
    seed: int = 1234
    max_steps: int = 0             # > 0: stop after this many steps whatever the budget (tests)
    snapshots: Sequence[float] = field(default_factory=tuple)  # CPU minutes at which to measure as well
    method: str = "auto"           # "full", "lora" (adapters only: engine/adapt/lora.py), "auto": lora when large
    lora_rank: int = 16
    lora_alpha: int = 32           # the adapters' scale: lora_alpha / lora_rank


def _normalise(code: str) -> str:
    return "\n".join(line.rstrip() for line in code.replace("\r\n", "\n").split("\n")).rstrip("\n")


def score(backend: Any, holes: Sequence[LineHole], gate: Gate | None = None,
          options: FillOptions | None = None) -> Score:
    """One-line exact match of the engine's own cursor path on ``holes`` (the model as it is now): each hole
    filled once with no confidence bar (``Score.exact``), the fill then counted as offered when its estimate
    reaches the calibration's default bar (``Score.offered``, ``Score.offered_exact``)."""
    from ..confidence import load_calibration
    from ..serve import serve

    opts = replace(options or FillOptions(), min_confidence=0.0)
    model_dir = getattr(backend, "model_dir", None)
    calibration = load_calibration(model_dir) if model_dir is not None else None
    bar = calibration.min_confidence if calibration is not None else 0.0
    out = Score(holes=len(holes))
    backend_weights_changed(backend)
    heap = HeapTrimmer()
    for hole in holes:
        if gate is not None:
            gate.wait()
        heap.job_done()
        heap.busy()
        text = hole.prompt + hole.suffix
        try:
            c = serve(backend, opts, InfillRequest(text=text, offset=len(hole.prompt), language=hole.language),
                      Control(lambda step: None))
        except EngineError:
            continue
        if not c.fills or not c.text:
            continue
        doc = text
        for f in sorted(c.fills, key=lambda f: f.start, reverse=True):
            doc = doc[:f.start] + f.text + doc[f.end:]
        inside = doc.startswith(hole.prompt) and doc.endswith(hole.suffix) and \
            len(doc) >= len(hole.prompt) + len(hole.suffix)
        got = doc[len(hole.prompt):len(doc) - len(hole.suffix)] if inside else c.text
        right = _normalise(got) == _normalise(hole.solution)
        confidence = c.fills[0].confidence
        offered = confidence is None or confidence >= bar
        out.exact += right
        out.offered += offered
        out.offered_exact += right and offered
    return out


def backend_weights_changed(backend: Any) -> None:
    """Drop what the backend keeps that depends on the weights (the masked LM's prefix KV cache)."""
    hook = getattr(backend, "weights_changed", None)
    if hook is not None:
        hook()


def token_stream(tokenizer: Any, texts: Sequence[str], min_tokens: int) -> Any:
    """The files as one token stream with a separator between them (as training builds it), repeated up to
    ``min_tokens`` when the workspace is small."""
    from ..training.examples import TokenStream

    sep = next(i for i in (tokenizer.eos_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id) if i is not None)
    vocab = len(tokenizer)
    ends_line = np.array([tokenizer.decode([i]).endswith("\n") for i in range(vocab)])
    chunks = []
    for ids in tokenizer(list(texts), add_special_tokens=False)["input_ids"] if texts else []:
        chunks += [np.asarray(ids, np.int32), np.asarray([sep], np.int32)]
    ids = np.concatenate(chunks) if chunks else np.zeros(0, np.int32)
    if len(ids) == 0:
        raise ValueError("no tokens to train on")
    if len(ids) < min_tokens:
        ids = np.tile(ids, -(-min_tokens // len(ids)))
    line_start = np.ones(len(ids), bool)
    line_start[1:] = ends_line[ids[:-1]] | (ids[:-1] == sep)
    return TokenStream(ids, line_start)


def batch_loss(model: Any, batch: Any) -> torch.Tensor:
    """The training loss (``engine.training.train.batch_loss``) for ModernBERT; any other masked LM through
    its logits, with the same weighting."""
    if all(hasattr(model, a) for a in ("model", "head", "decoder")):
        from ..training.train import batch_loss as modernbert_loss
        return modernbert_loss(model, batch)[0]
    device = model.device
    ids = torch.from_numpy(batch.input_ids).to(device)
    targets = torch.from_numpy(batch.targets).to(device)
    chosen = targets != -100
    logits = model(input_ids=ids).logits[chosen]
    ce = F.cross_entropy(logits.float(), targets[chosen], reduction="none")
    row_weight = torch.from_numpy(batch.weights).to(device)[:, None].expand_as(chosen)[chosen]
    return (ce * row_weight).sum() / len(batch.weights)


def train(model: Any, tokenizer: Any, stream: Any, cfg: AdaptConfig, gate: Gate, progress: Progress,
          on_snapshot: Callable[[float, int, float], None] | None = None) -> tuple[int, float]:
    """Train in place until ``cfg.minutes`` of this process's CPU time went into steps; returns (steps, cpu s)."""
    from ..backends.loading import native_cpu_bf16
    from ..training.examples import make_batch

    rng = np.random.default_rng(cfg.seed)
    torch.manual_seed(cfg.seed)
    heap = HeapTrimmer()   # every step's tensors differ in size: without trims glibc keeps ~25 MB per step
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=cfg.lr, betas=(0.9, 0.98),
                            weight_decay=0.01)
    bf16 = model.device.type == "cpu" and native_cpu_bf16()
    budget = cfg.minutes * 60.0
    pending = sorted(m * 60.0 for m in cfg.snapshots)
    step, cpu, window = 0, 0.0, []
    pad, mask = tokenizer.pad_token_id, tokenizer.mask_token_id
    T = min(cfg.seq_len, int(getattr(model.config, "max_position_embeddings", cfg.seq_len)))
    model.train()
    try:
        while cpu < budget and not (cfg.max_steps and step >= cfg.max_steps):
            gate.wait()
            t0 = time.process_time()
            for group in opt.param_groups:
                group["lr"] = cfg.lr * min(1.0, (step + 1) / cfg.warmup_steps)
            batch = make_batch(rng, stream, cfg.batch_size, T, pad, mask, p_infill=cfg.p_infill,
                               max_holes=cfg.max_holes)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = batch_loss(model, batch)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            heap.job_done()
            heap.busy()
            cpu += time.process_time() - t0
            step += 1
            window.append(float(loss.detach()))
            if step % 10 == 0:
                progress({"event": "step", "step": step, "cpu_seconds": round(cpu, 1),
                          "loss": round(sum(window) / len(window), 4)})
                window.clear()
            while pending and cpu >= pending[0] and on_snapshot is not None:
                model.eval()
                on_snapshot(pending.pop(0) / 60.0, step, cpu)
                model.train()
    finally:
        model.eval()
    return step, cpu


def held_out_rows(tokenizer: Any, texts: Sequence[str], seq_len: int, rows: int = 64) -> list[Any]:
    """Fixed validation rows from the held-out files: one whole line masked in a 24-token bucket (training's
    ``val_line_hole``), in batches of 16; [] when the files are too short to cut them."""
    from ..training.examples import line_hole_batch

    try:
        stream = token_stream(tokenizer, texts, 2 * seq_len)
        rng = np.random.default_rng(7)
        return [line_hole_batch(rng, stream, 16, seq_len, tokenizer.pad_token_id, tokenizer.mask_token_id)
                for _ in range(max(1, rows // 16))]
    except ValueError:
        return []


def line_loss(model: Any, batches: Sequence[Any]) -> float | None:
    """The mean training loss on ``held_out_rows``: a smooth companion of exact match (lower is better)."""
    if not batches:
        return None
    was_training = model.training
    model.eval()
    with torch.inference_mode():
        value = sum(float(batch_loss(model, b)) for b in batches) / len(batches)
    model.train(was_training)
    return round(value, 4)


def split(files: Sequence[SourceFile]) -> tuple[list[SourceFile], list[SourceFile]]:
    train_files = [f for f in files if not held_out(f.path)]
    return train_files, [f for f in files if held_out(f.path)]


def adapt(workspace: str | os.PathLike[str], load: LoadConfig, cfg: AdaptConfig, gate: Gate | None = None,
          progress: Progress | None = None, store: bool = True,
          on_snapshot: Callable[[dict[str, Any]], None] | None = None) -> AdaptRecord:
    """Adapt the model ``load`` names to ``workspace``; with ``store``, publish the outcome to the cache. With
    ``store``, the run holds the cache entry's lock (``store.hold``): while another adapter of the same workspace
    and model runs (a second editor's server), this one waits without working, then ends with the entry that
    one published (a ``done`` event with ``waited``), or adapts itself when that one ended without publishing."""
    gate = gate or Gate()
    emit = progress or (lambda record: None)
    ws = str(Path(workspace).resolve())
    model_path = load.model_dir()
    if not (model_path / "config.json").is_file():   # before the digest, which lists the directory
        raise ValueError(f"no checkpoint at {model_path} (config.json not found)")
    if not store:
        return _adapt(ws, load, cfg, gate, emit, store, on_snapshot)
    if not Path(ws).is_dir():   # no lock file in the cache for what cannot be adapted
        raise ValueError(f"{workspace}: not a directory")
    entry = entry_dir(ws, model_path)
    with hold(entry, lambda pid: emit({"event": "waiting", "pid": pid}), gate.check_stop) as waited:
        other = read_record(entry) if waited else None
        if other is not None:
            emit({"event": "done", "waited": True, **other.to_json()})
            return other
        return _adapt(ws, load, cfg, gate, emit, store, on_snapshot)


def _adapt(ws: str, load: LoadConfig, cfg: AdaptConfig, gate: Gate, emit: Progress, store: bool,
           on_snapshot: Callable[[dict[str, Any]], None] | None) -> AdaptRecord:
    from ..backends import load_backend

    t_wall, t_cpu = time.time(), time.process_time()
    model_path = load.model_dir()
    record = AdaptRecord(workspace=ws, model=str(model_path), model_digest=model_digest(model_path))
    entry = entry_dir(ws, model_path)
    files = workspace_files(ws)
    train_files, held = split(files)
    holes = line_holes(held, cfg.per_file, cfg.holes)
    record.train_files, record.held_out_files = len(train_files), len(held)
    emit({"event": "files", "train_files": len(train_files), "held_out_files": len(held), "holes": len(holes),
          "config": {k: v for k, v in asdict(cfg).items() if k != "snapshots"}})

    def finish(reason: str = "") -> AdaptRecord:
        record.reason = reason
        record.wall_seconds = round(time.time() - t_wall, 1)
        record.finished = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        if store:
            publish(entry, record, write_weights if record.accepted else None,
                    ADAPTER if record.method == "lora" else WEIGHTS)
        emit({"event": "done", **record.to_json()})
        return record

    def write_weights(path: Path) -> None:
        from safetensors.torch import save_model
        if record.method == "lora":
            lora.save_adapter(backend.model, path)
        else:
            save_model(backend.model, str(path))

    if not train_files:
        return finish("no source files to learn from")
    if len(holes) < 10:
        return finish(f"only {len(holes)} one-line holes in the held-out files: too few to measure a gain")
    torch.set_num_threads(1)
    # float weights, whatever the model's serving.json states: training runs through the model the fills run, and
    # an int8 copy has no float weights to train (the server quantizes the adapted weights again as it loads them)
    backend: Any = load_backend(LoadConfig(model=load.model, device="cpu", dtype="float32", threads=1,
                                      kv_cache=load.kv_cache, cache_refresh=load.cache_refresh, quantization="none"))
    if not getattr(backend, "adapts", False):
        return finish(f"the {backend.name} backend does not adapt")
    model, tokenizer = backend.model, backend.tokenizer
    record.method = lora.choose(model, cfg.method)
    if record.method == "lora":
        lora.wrap(model, cfg.lora_rank, cfg.lora_alpha)   # in place: only the adapters train
    else:
        for p in model.parameters():
            p.requires_grad_(True)
    try:
        emit({"event": "measure", "phase": "before"})
        rows = held_out_rows(tokenizer, [f.text for f in held], cfg.seq_len)
        before = score(backend, holes, gate)
        record.before = {**before.summary(), "line_loss": line_loss(model, rows)}
        emit({"event": "measured", "phase": "before", **record.before})
        stream = token_stream(tokenizer, [f.text for f in train_files], 4 * cfg.seq_len)
        record.train_tokens = int(len(stream.ids))

        def snapshot(minutes: float, step: int, cpu: float) -> None:
            with torch.inference_mode():
                s = score(backend, holes, gate)
            item = {"minutes": minutes, "step": step, "cpu_seconds": round(cpu, 1),
                    "wall_seconds": round(time.time() - t_wall, 1), **s.summary(), "line_loss": line_loss(model, rows)}
            emit({"event": "snapshot", **item})
            if on_snapshot:
                on_snapshot(item)

        record.steps, cpu = train(model, tokenizer, stream, cfg, gate, emit, snapshot)
        record.cpu_seconds = round(cpu, 1)
        emit({"event": "measure", "phase": "after"})
        with torch.inference_mode():
            after = score(backend, holes, gate)
        record.after = {**after.summary(), "line_loss": line_loss(model, rows)}
        record.accepted = improves(before, after)
    except Stopped:
        record.wall_seconds = round(time.time() - t_wall, 1)
        emit({"event": "stopped"})
        raise
    emit({"event": "process_cpu_seconds", "value": round(time.process_time() - t_cpu, 1)})
    return finish("" if record.accepted else "the held-out lines were not filled better than before")


def stdin_commands(gate: Gate, stream: Any) -> threading.Thread:
    """Read ``pause`` / ``resume`` / ``stop`` lines (the server's pipe) into the gate; end of input stops."""

    def read() -> None:
        for line in stream:
            word = line.strip()
            if word == "pause":
                gate.pause()
            elif word == "resume":
                gate.resume()
            elif word == "stop":
                break
        gate.stop()

    t = threading.Thread(target=read, name="adapt-commands", daemon=True)
    t.start()
    return t


def json_progress(out: Any) -> Progress:
    lock = threading.Lock()

    def emit(record: dict[str, Any]) -> None:
        with lock:
            out.write(json.dumps({"time": round(time.time(), 1), **record}) + "\n")
            out.flush()
    return emit
