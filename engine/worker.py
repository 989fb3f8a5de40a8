"""Engine: one thread owns the model; jobs queue up with a future and a cancel event each.

The newest job per key wins: submitting a job cancels the older one with the same key, before it
reaches the model if it is still queued, or within one denoising step if it is running. A remote engine that
now serves another model (``EngineChanged``) fails the job that met it and is loaded again, from the same
configuration, before the next job is taken.
"""

from __future__ import annotations

import concurrent.futures
import enum
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import commonlines, memory
from .backends.base import Backend, Control
from .config import EngineConfig, LoadConfig
from .confidence import load_calibration
from .decoding import Table, load_table
from .memory import HeapTrimmer, collection_paused
from .requests import (Cancelled, Completion, Draft, EngineChanged, EngineError, EngineUnreachable, ModelChanged,
                       ModelLoadError, NotReady, Request)
from .serve import serve

log = logging.getLogger(__name__)


class EngineState(str, enum.Enum):
    IDLE = "idle"
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"
    UNREACHABLE = "unreachable"   # a remote engine did not answer the last job; the next one tries it again
    CLOSED = "closed"


_SERVING = (EngineState.READY, EngineState.UNREACHABLE)  # jobs are taken in these states


@dataclass
class Job:
    request: Request
    on_draft: Callable[[Draft], None] | None = None
    future: concurrent.futures.Future[Completion] = field(default_factory=concurrent.futures.Future)
    cancelled: threading.Event = field(default_factory=threading.Event)
    stopped_at_step: int | None = None  # set when a running job noticed its cancellation

    def cancel(self) -> None:
        self.cancelled.set()
        self.future.cancel()  # succeeds only while queued; a running job stops at its next step

    def check(self, step: int) -> None:
        if self.cancelled.is_set():
            self.stopped_at_step = step
            raise Cancelled(step)


@dataclass
class Counters:
    """What the engine thread did since start (``diffusion/stats``)."""

    jobs: int = 0
    completed: int = 0
    cancelled: int = 0
    failed: int = 0
    steps: int = 0
    forwards: int = 0
    last_cancelled_at_step: int | None = None
    last_elapsed_ms: float | None = None


@dataclass
class _Load:
    config: EngineConfig
    future: concurrent.futures.Future[None] = field(default_factory=concurrent.futures.Future)


@dataclass
class _Swap:
    weights: Path | None   # adapted weights (engine/adapt), or None: the checkpoint's own
    load: LoadConfig | None = None   # the load they were made for (None: whatever is loaded)
    future: concurrent.futures.Future[None] = field(default_factory=concurrent.futures.Future)


def _load_backend(config: LoadConfig) -> Backend:
    from .backends import load_backend
    return load_backend(config)


class Engine:
    def __init__(self, config: EngineConfig, backend_loader: Callable[[LoadConfig], Backend] = _load_backend):
        self.config = config
        self.state = EngineState.IDLE
        self.error: str | None = None
        self.backend: Backend | None = None
        self._loader = backend_loader
        self._queue: queue.Queue[_Load | _Swap | Job | None] = queue.Queue()
        self._latest: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._listeners: list[Callable[[EngineState, str | None], None]] = []
        self._notice_listeners: list[Callable[[str], None]] = []
        self._counters = Counters()
        self.decoding: Table = {}              # the loaded model's decoding per language (engine/decoding.py)
        self.weights: Path | None = None       # the adapted weights in use (None: the checkpoint's own)
        self._load_again = False               # a remote engine was unreachable at its load: the next job tries again
        self._heap = HeapTrimmer()
        self._thread = threading.Thread(target=self._run, name="diffusion-engine", daemon=True)
        self._thread.start()

    # -- control ----------------------------------------------------------------------------
    def on_state(self, listener: Callable[[EngineState, str | None], None]) -> None:
        """Call ``listener(state, error)`` (from the engine thread) whenever the state changes."""
        self._listeners.append(listener)

    def on_notice(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(message)`` (from the engine thread) when the engine has news for the user beyond its state:
        a remote engine now serves another model (called once it is loaded again, before the state is ready)."""
        self._notice_listeners.append(listener)

    def start(self) -> concurrent.futures.Future[None]:
        """Load ``self.config``'s model on the engine thread."""
        return self.reconfigure(self.config, force=True)

    def reconfigure(self, config: EngineConfig, force: bool = False) -> concurrent.futures.Future[None]:
        """Adopt ``config``: its fill options at once; a reload when any load setting changed (or the model is
        not loaded). A reload cancels the jobs running and queued: they would end on the model (or remote engine)
        the user just left, and their answers would arrive as if from the new one."""
        if config.load == self.config.load and not force and self.state in _SERVING:
            self.config = config
            done: concurrent.futures.Future[None] = concurrent.futures.Future()
            done.set_result(None)
            return done
        with self._lock:
            for job in self._latest.values():
                job.cancel()
            self._latest.clear()
        load = _Load(config)
        self._queue.put(load)
        return load.future

    def swap_weights(self, weights: Path | None, load: LoadConfig | None = None) -> concurrent.futures.Future[None]:
        """Use adapted weights (None: the checkpoint's own again). Queued like a job, so the swap happens on the
        engine thread between two requests: a running fill finishes on the weights it started with. ``load``: the
        load settings the weights were made for; a load queued before the swap (the user chose another model while
        the adapter finished) makes it ``ModelChanged``, not weights of one model in another of the same shapes."""
        swap = _Swap(weights, load)
        self._queue.put(swap)
        return swap.future

    def cancel_keys(self, matches: Callable[[str], bool]) -> None:
        """Cancel the newest job of every key ``matches`` accepts (the server: a document's jobs, on an edit)."""
        with self._lock:
            for key in [k for k in self._latest if matches(k)]:
                self._latest.pop(key).cancel()

    def close(self, wait: bool = True) -> None:
        with self._lock:
            for job in self._latest.values():
                job.cancel()
        self._queue.put(None)
        if wait:
            self._thread.join(timeout=10)

    def stats(self) -> dict[str, object]:
        """Counters since start: jobs run, cancelled (and the step the last one stopped at), forwards, heap
        trims; and the backend's own."""
        return {**asdict(self._counters), "heap_trims": self._heap.trims,
                "adapted_weights": str(self.weights) if self.weights is not None else None,
                **(self.backend.stats() if self.backend is not None else {})}

    # -- requests ---------------------------------------------------------------------------
    def submit(self, request: Request, on_draft: Callable[[Draft], None] | None = None) -> Job:
        job = Job(request, on_draft)
        if self.state not in _SERVING:
            job.future.set_exception(NotReady(self._not_ready_message()))
            return job
        if request.key is not None:
            with self._lock:
                older = self._latest.get(request.key)
                if older is not None:
                    older.cancel()
                self._latest[request.key] = job
        self._queue.put(job)
        return job

    def infill_sync(self, request: Request, on_draft: Callable[[Draft], None] | None = None,
                    timeout: float | None = None) -> Completion:
        return self.submit(request, on_draft).future.result(timeout)

    def _not_ready_message(self) -> str:
        if self.state is EngineState.FAILED:
            return f"the model failed to load: {self.error}"
        return f"the model is {self.state.value}"

    # -- the engine thread ------------------------------------------------------------------
    def _set_state(self, state: EngineState, error: str | None = None) -> None:
        self.state, self.error = state, error
        for listener in list(self._listeners):
            try:
                listener(state, error)
            except Exception:  # a listener's bug must not kill the engine thread
                log.exception("state listener failed")

    def _run(self) -> None:
        while True:
            try:
                task = self._queue.get(timeout=self._heap.wait())
            except queue.Empty:  # no job for a while: hand the jobs' freed memory back (engine/memory.py)
                self._heap.quiet()
                continue
            if task is None:   # closed: the model goes now (a --tcp session's end), not when the Engine is collected
                memory.model_unloading()
                if self.backend is not None:
                    self.backend.close()
                    self.backend = None
                self._set_state(EngineState.CLOSED)
                return
            if isinstance(task, _Load):
                self._do_load(task)
            elif isinstance(task, _Swap):
                self._do_swap(task)
            else:
                self._do_job(task)
                self._heap.job_done()
                if self._queue.empty():
                    self._heap.busy()

    def _do_load(self, task: _Load, changed: bool = False, again: bool = False) -> None:
        """Load ``task``'s model. A remote engine that does not answer (a team server restarting, or not yet up
        when the editor starts) leaves the engine ``unreachable``, not failed: each new job tries the load again
        (``again``: no loading state for that, the outage is told once) until it answers."""
        self._load_again = False
        if not again:
            self._set_state(EngineState.LOADING)
        memory.model_unloading()
        if self.backend is not None:
            self.backend.close()
            self.backend = None
        self.weights = None
        try:
            # The collector paused meanwhile: importing torch and building the model make hundreds of thousands of
            # objects, and each full collection on the way walked them all (7 of them, 2.2 s of a 2-core machine's
            # load). Their garbage is collected after the load (memory.model_loaded, or the next full collection).
            with collection_paused():
                self.backend = self._loader(task.config.load)
                self.decoding = load_table(getattr(self.backend, "model_dir", None))   # the model's, per language
                if getattr(self.backend, "model_dir", None) is not None:   # read by every fill: a broken one fails
                    load_calibration(self.backend.model_dir)
                if getattr(self.backend, "scores_options", False):   # read now (0.2 s), not on a first typed line
                    commonlines.preload()
        except EngineUnreachable as exc:
            if self.backend is not None:
                self.backend.close()
                self.backend = None
            log.warning("%s", exc)
            self.config, self._load_again = task.config, True
            self._set_state(EngineState.UNREACHABLE, str(exc))
            task.future.set_exception(exc)
            return
        except Exception as exc:  # noqa: BLE001 (any load failure is reported once, the engine stays up)
            if self.backend is not None:   # loaded, but its directory's decoding is broken: not half ready
                self.backend.close()
                self.backend = None
            message = str(exc) if isinstance(exc, ModelLoadError) else f"{type(exc).__name__}: {exc}"
            log.error("model load failed: %s", message)
            self.config = task.config
            self._set_state(EngineState.FAILED, message)
            task.future.set_exception(ModelLoadError(message))
            return
        self.config = task.config
        if changed:   # the remote engine serves another model: the user is told which, once
            served = getattr(self.backend, "remote_model", "") or self.backend.name
            for listener in list(self._notice_listeners):
                try:
                    listener(f"the team server at {task.config.load.engine} now serves {served}")
                except Exception:  # a listener's bug must not kill the engine thread
                    log.exception("notice listener failed")
        quantized = getattr(self.backend, "quantization", "none")   # resolved: auto is what the model states
        log.info("model %s loaded (%s backend%s%s)", task.config.load.model, self.backend.name,
                 "" if quantized == "none" else f", {quantized} weights",
                 f", decoding tuned for {', '.join(sorted(self.decoding))}" if self.decoding else "")
        memory.model_loaded()   # before READY: the first fill does not wait behind the collection
        self._set_state(EngineState.READY)
        task.future.set_result(None)

    def _do_swap(self, task: _Swap) -> None:
        try:
            if self.backend is None or self.state is not EngineState.READY:
                raise NotReady(self._not_ready_message())
            if task.load is not None and task.load != self.config.load:
                raise ModelChanged(f"weights made for model {task.load.model} not used: {self.config.load.model} "
                                   f"was loaded since")
            if not self.backend.adapts:
                raise EngineError(f"the {self.backend.name} backend does not take adapted weights")
            self.backend.load_weights(task.weights)
        except Exception as exc:  # noqa: BLE001 (reported to the caller; the weights in use stay)
            log.error("weights not swapped: %s", exc)
            task.future.set_exception(exc if isinstance(exc, EngineError) else   # safetensors' words name no file
                                      EngineError(f"cannot use the weights {task.weights}: {exc}"))
            return
        self.weights = task.weights
        log.info("weights: %s", task.weights or "the checkpoint's own")
        task.future.set_result(None)

    def _do_job(self, job: Job) -> None:
        counters = self._counters
        changed = False
        if not job.future.set_running_or_notify_cancel():
            counters.cancelled += 1
            counters.last_cancelled_at_step = 0
            return  # cancelled while queued: never reaches the model
        counters.jobs += 1
        if self.backend is None and self._load_again:   # the remote engine was down when it was to be loaded
            self._do_load(_Load(self.config), again=True)
        try:
            if self.backend is None:
                if self.state is EngineState.UNREACHABLE:
                    raise EngineUnreachable(self.error or "the engine is unreachable")
                raise NotReady(self._not_ready_message())
            control = Control(job.check, self._draft_forwarder(job) if job.on_draft else None)
            completion = serve(self.backend, self.config.fill, job.request, control, self.decoding)
            counters.completed += 1
            counters.steps += completion.steps
            counters.forwards += completion.forwards
            counters.last_elapsed_ms = completion.elapsed_ms
            if self.state is EngineState.UNREACHABLE:
                self._set_state(EngineState.READY)
            job.future.set_result(completion)
        except Cancelled as exc:
            counters.cancelled += 1
            counters.last_cancelled_at_step = exc.step
            job.future.set_exception(exc)
        except EngineUnreachable as exc:
            counters.failed += 1
            log.warning("%s", exc)
            self._set_state(EngineState.UNREACHABLE, str(exc))
            job.future.set_exception(exc)
        except EngineChanged as exc:   # what the backend read when it connected is not what the engine serves now
            counters.failed += 1
            job.future.set_exception(exc)
            changed = True
        except EngineError as exc:
            counters.failed += 1
            job.future.set_exception(exc)
        except Exception as exc:  # a bug in one request must not take the engine down
            log.exception("infill failed")
            job.future.set_exception(EngineError(f"internal error: {type(exc).__name__}: {exc}"))
        finally:
            if job.request.key is not None:
                with self._lock:
                    if self._latest.get(job.request.key) is job:
                        del self._latest[job.request.key]
        if changed:   # loaded again here, before the next job: no job runs half on the old info, half on the new
            self._do_load(_Load(self.config), changed=True)

    @staticmethod
    def _draft_forwarder(job: Job) -> Callable[..., None]:
        on_draft = job.on_draft
        assert on_draft is not None

        def forward(step: int, texts: Sequence[str], confidences: Sequence[tuple[float, ...]],
                    pieces: Sequence[tuple[str, ...]] | None = None, **where: Any) -> None:
            if not job.cancelled.is_set():  # ``where``: Draft's attempt, slots, kind, spans (engine/infill.py)
                on_draft(Draft(step, tuple(texts), tuple(confidences), tuple(pieces or ()), **where))
        return forward
