"""The team server's core, free of any web framework: a loaded backend, the jobs it runs (each with a cancel flag
and a stream of events), batches of them denoised together (``fill_many`` where the backend has it), and the
counters. The model is used by one batch at a time (a lock); a job's events hop to its request's event loop."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import queue
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..backends import load_backend
from ..backends.base import Backend, Control, FillPlan, FillResult
from ..backends.remote import wire
from ..config import LoadConfig
from ..confidence import CALIBRATION_FILE, load_calibration
from ..decoding import load_table
from ..model_text import ModelText, model_plan, model_text
from ..requests import Cancelled

log = logging.getLogger(__name__)
REPLICA = f"{socket.gethostname()}:{os.getpid()}"  # which process served a fill (the stream's first event)
SHUTTING_DOWN = {"event": "error", "kind": "unavailable", "message": "the team server is shutting down"}


@dataclass
class Job:
    """One fill: its plan, whether it wants drafts, and the events it streams back (on ``loop``)."""

    id: str
    plan: FillPlan
    drafts: bool
    loop: asyncio.AbstractEventLoop
    events: asyncio.Queue = field(default_factory=asyncio.Queue)
    cancelled: threading.Event = field(default_factory=threading.Event)
    done: bool = False

    def emit(self, event: dict[str, Any]) -> None:
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.events.put_nowait, event)

    def check(self, step: int) -> None:
        if self.cancelled.is_set():
            raise Cancelled(step)
        if not self.drafts:  # a tick per step: the client checks its own cancellation between them
            self.emit(wire.step_event(step))

    def draft(self, step: int, texts: Any, confidences: Any, pieces: Any = None, **_: Any) -> None:
        self.emit(wire.step_event(step, texts, confidences, pieces))

    def finish(self, event: dict[str, Any]) -> None:
        self.done = True
        self.emit(event)


@dataclass
class Counters:
    jobs: int = 0
    completed: int = 0
    cancelled: int = 0
    failed: int = 0
    batches: int = 0
    batched_jobs: int = 0      # jobs that ran in a batch of two or more
    largest_batch: int = 0
    forwards: int = 0


class Denoiser:
    """A backend serving jobs from many clients."""

    def __init__(self, backend: Backend, model: str = ""):
        self.backend = backend
        self.model = model
        self.lock = threading.Lock()
        self.counters = Counters()
        self.running: dict[str, Job] = {}
        self.closing = False
        self._info: dict[str, Any] | None = None
        self._counter: Any = None   # a tokenizer of its own for check_plan (None: the backend's, under the lock)
        self._counter_lock = threading.Lock()

    @classmethod
    def load(cls, load: LoadConfig) -> Denoiser:
        if load.engine:
            raise ValueError("a team server runs a local model: its engine setting must be empty")
        backend = load_backend(load)
        if backend.model_dir is not None:   # /v1/info sends it: a broken one fails here, not every client's load
            load_calibration(backend.model_dir)
        return cls(backend, load.model)

    def info(self) -> dict[str, Any]:
        """Capabilities, tokenizer, calibration, decoding and their digest for ``GET /v1/info`` (computed once)."""
        if self._info is None:
            backend = self.backend
            info: dict[str, Any] = {"version": wire.VERSION, "model": self.model}
            info.update({name: getattr(backend, name) for name in wire.CAPABILITIES})
            tokenizer = getattr(backend, "tokenizer", None)
            fast = getattr(tokenizer, "backend_tokenizer", None)
            info["tokenizer"] = fast.to_str() if fast is not None else None  # token counts stay on the client
            path = backend.model_dir / CALIBRATION_FILE if backend.model_dir is not None else None
            info["calibration"] = json.loads(path.read_text(encoding="utf-8")) if path and path.is_file() else None
            # the model's decoding per language (serving.json): the client's engine runs the lengths and budgets
            info["decoding"] = {lang: {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}
                                for lang, values in load_table(backend.model_dir).items()}
            info["batches"] = hasattr(backend, "fill_many")
            info["digest"] = wire.info_digest(info)   # what this server serves: clients check it (wire.py)
            self._info = info
        return self._info

    def check_plan(self, plan: FillPlan) -> None:
        """Refuse (``wire.WireError``: HTTP 400, before the stream starts) a plan whose canvas cannot fit the
        model's positions: the tokens of its texts and its holes' slots (the special tokens a backend adds are not
        counted, so no plan that fits is refused). Counted with a copy of the model's tokenizer, so the check does
        not wait for the batch running under the model's lock."""
        limit, size = self.backend.max_positions, 0
        for piece in plan.pieces:
            if isinstance(piece, str):
                size += self._count(piece)
            else:
                size += max(piece.max_tokens, self._count(piece.init) if piece.init else 0)
            if size > limit:
                raise wire.WireError(f"plan: its texts and holes take {size} tokens or more, over the model's "
                                     f"{limit} positions")

    def _count(self, text: str) -> int:
        if self._counter is None and self.info().get("tokenizer"):
            from tokenizers import Tokenizer
            self._counter = Tokenizer.from_str(self.info()["tokenizer"])
        if self._counter is None:
            return self.count_tokens(text)
        with self._counter_lock:
            return len(self._counter.encode(model_text(text), add_special_tokens=False).ids)

    def count_tokens(self, text: str) -> int:
        with self.lock:
            return ModelText(self.backend).count_tokens(text)

    def score(self, prefix: str, middle: str, suffix: str) -> float:
        with self.lock:
            return ModelText(self.backend).score_text(prefix, middle, suffix)

    def cancel(self, job_id: str) -> bool:
        job = self.running.get(job_id)
        if job is not None:
            job.cancelled.set()
        return job is not None

    def close(self) -> None:
        """The server is stopping: the fills running stop at their next step and every fill not yet run is
        refused, each ending with an ``unavailable`` error event (its client sends it again, to another replica
        or to this server once it is back)."""
        self.closing = True
        for job in list(self.running.values()):
            job.cancelled.set()

    def check_health(self) -> None:
        """Raise when the model cannot answer (Ray Serve restarts the replica)."""
        if self.backend is None:
            raise RuntimeError("no model loaded")
        self.backend.count_tokens("def f():\n    return 1\n")

    def stats(self) -> dict[str, Any]:
        return {"replica": REPLICA, **self.counters.__dict__, "running": len(self.running), **self.backend.stats()}

    def run_batch(self, jobs: list[Job]) -> None:
        """Denoise ``jobs`` together (one batched forward per step where the backend allows) and finish each
        with its result or error event. Blocking: call it off the event loop."""
        if self.closing:
            for job in jobs:
                job.finish(SHUTTING_DOWN)
            return
        live = [j for j in jobs if not j.cancelled.is_set()]
        for job in jobs:
            if job.cancelled.is_set():
                self.counters.cancelled += 1
                job.finish({"event": "error", "kind": "cancelled", "message": "cancelled before it ran"})
        if not live:
            return
        with self.lock:
            for job in live:
                self.running[job.id] = job
            self.counters.jobs += len(live)
            self.counters.batches += 1
            self.counters.largest_batch = max(self.counters.largest_batch, len(live))
            if len(live) > 1:
                self.counters.batched_jobs += len(live)
            began = time.monotonic()
            try:
                results = self._fill(live)
            finally:
                for job in live:
                    self.running.pop(job.id, None)
        log.info("batch of %d: %.1f ms", len(live), (time.monotonic() - began) * 1000)
        for job, result in zip(live, results):
            self._finish(job, result)

    def _fill(self, jobs: list[Job]) -> list[FillResult | Exception]:
        backend = ModelText(self.backend)
        controls = [Control(j.check, j.draft if j.drafts else None) for j in jobs]
        fill_many = getattr(self.backend, "fill_many", None)
        if fill_many is not None and len(jobs) > 1:
            plans = [model_plan(j.plan) for j in jobs]
            return list(fill_many(plans, controls))
        results: list[FillResult | Exception] = []
        for job, control in zip(jobs, controls):
            try:
                results.append(backend.fill(job.plan, control))
            except Exception as exc:  # noqa: BLE001 (each job gets its own error)
                results.append(exc)
        return results

    def _finish(self, job: Job, result: FillResult | Exception) -> None:
        if isinstance(result, FillResult):
            self.counters.completed += 1
            self.counters.forwards += result.forwards
            job.finish({"event": "result", "result": wire.result_json(result)})
        elif isinstance(result, Cancelled):
            self.counters.cancelled += 1
            if self.closing:
                job.finish(SHUTTING_DOWN)
                return
            job.finish({"event": "error", "kind": "cancelled", "message": str(result)})
        else:
            self.counters.failed += 1
            kind = "invalid" if isinstance(result, ValueError) else "internal"
            if kind == "internal":
                log.error("fill %s failed: %s: %s", job.id, type(result).__name__, result)
            job.finish({"event": "error", "kind": kind, "message": f"{type(result).__name__}: {result}"})


class Collector:
    """Batching without Ray (the plain HTTP server): jobs queue up; a thread takes the first and whatever else
    arrives within ``wait_ms`` (at most ``max_batch``) and runs them as one batch."""

    def __init__(self, denoiser: Denoiser, max_batch: int = 8, wait_ms: float = 5.0):
        self.denoiser, self.max_batch, self.wait = denoiser, max(1, max_batch), wait_ms / 1000
        self._queue: queue.Queue[Job | None] = queue.Queue()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="team-batches", daemon=True)
        self._thread.start()

    async def submit(self, job: Job) -> None:
        if self._closed:
            job.finish(SHUTTING_DOWN)
        else:
            self._queue.put(job)

    def close(self, timeout: float = 30.0) -> None:
        """Serve no more batches: wait for the one running (``Denoiser.close`` first stops it at its next step),
        then end every fill still queued with an ``unavailable`` error event."""
        self._closed = True
        self._queue.put(None)
        self._thread.join(timeout)
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return
            if job is not None and not job.done:
                job.finish(SHUTTING_DOWN)

    def _run(self) -> None:
        while (first := self._queue.get()) is not None:
            batch = [first]
            end = time.monotonic() + self.wait
            while len(batch) < self.max_batch and (left := end - time.monotonic()) > 0:
                try:
                    job = self._queue.get(timeout=left)
                except queue.Empty:
                    break
                if job is None:
                    self._queue.put(None)
                    break
                batch.append(job)
            try:
                self.denoiser.run_batch(batch)
            except Exception as exc:  # noqa: BLE001 (the thread serves the next batch)
                log.exception("batch failed")
                for job in batch:
                    if not job.done:
                        job.finish({"event": "error", "kind": "internal", "message": f"{type(exc).__name__}"})
