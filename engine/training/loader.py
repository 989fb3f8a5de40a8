"""Where training batches come from: the training process itself, or worker processes ahead of it.

With no workers, one generator makes every batch in turn and its state is saved with the run, as
before. With workers (a GPU eats batches faster than one core makes them), batch ``n`` is made from
a generator seeded by ``(seed, n)``: the batches are the same whatever the number of workers, and a
resumed run goes on from its step.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import time
from collections import deque

import numpy as np

from .examples import Batch, TokenStream, make_batch

DRAIN_S = 60.0   # close(): the longest wait for the batches already asked for
_JOB: tuple | None = None  # (stream, cfg, pad_id, mask_id): set before the fork, read by the workers


def _worker_init() -> None:
    """Workers take the default signal actions, whatever the parent installed: SIGTERM ends them (the
    pool's terminate), SIGINT is left to the parent (Ctrl-C stops the run, which closes the pool). A worker
    is forked with SIGTERM blocked (``Batches``), so a terminate that comes before this ends it here."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def _make(n: int) -> Batch:
    stream, cfg, pad_id, mask_id = _JOB
    rng = np.random.default_rng([cfg.seed, n])
    return make_batch(rng, stream, cfg.batch_size, cfg.seq_len, pad_id, mask_id, cfg.p_infill, cfg.max_holes)


class Batches:
    def __init__(self, stream: TokenStream, cfg, pad_id: int, mask_id: int, rng: np.random.Generator, step: int):
        self.stream, self.cfg, self.pad_id, self.mask_id, self.rng = stream, cfg, pad_id, mask_id, rng
        self.pool, self.pending, self.next_n = None, deque(), step
        if cfg.loader_workers > 0:
            global _JOB
            _JOB = (stream, cfg, pad_id, mask_id)
            # Forked with SIGTERM blocked until ``_worker_init`` has set its default action: a worker slow to start
            # (a fork of a large process) got the terminate of a pool closed at once while it still had the
            # parent's handler (the trainer's, or Ray's in the test suite), lived on, and waited for the task
            # queue's lock its killed sibling held, and the close waited for it forever (a CI run hung so). The
            # pool's threads, started here too, keep the mask: Python runs signal handlers in the main thread.
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
            try:
                self.pool = mp.get_context("fork").Pool(cfg.loader_workers, initializer=_worker_init)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
            for _ in range(4 * cfg.loader_workers):
                self._submit()

    def _submit(self) -> None:
        self.pending.append(self.pool.apply_async(_make, (self.next_n,)))
        self.next_n += 1

    def next(self) -> Batch:
        if self.pool is None:
            c = self.cfg
            return make_batch(self.rng, self.stream, c.batch_size, c.seq_len, self.pad_id, self.mask_id,
                              c.p_infill, c.max_holes)
        batch = self.pending.popleft().get()
        self._submit()
        return batch

    def close(self) -> None:
        if self.pool is not None:
            # A worker stopped while it writes a batch leaves half a message in the result pipe, and the pool's
            # terminate then waits for the rest forever (it hung the test suite once): the batches asked for
            # arrive first (a minute at most in all), so every worker is idle when it is stopped.
            deadline = time.monotonic() + DRAIN_S
            for pending in self.pending:
                pending.wait(max(0.0, deadline - time.monotonic()))
            self.pending.clear()
            self.pool.terminate()
            self.pool.join()
            self.pool = None
