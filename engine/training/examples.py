"""Training rows for masked diffusion: plain random-rate masking mixed with an infill curriculum.

A row is ``(input_ids, targets, loss_weight)`` over ``T`` tokens. Plain rows mask every token
with probability ``t ~ U(0,1)`` and weight the cross-entropy of masked tokens by ``1/t``.
Infill rows cut a span aligned to lines (one line, several lines, the rest of a line) or a
short token run, pad it with ``<pad>`` targets up to a length bucket so the model learns to
end a hole early, and mask only inside that hole (often all of it), prefix and suffix clean.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BUCKETS = (4, 8, 16, 24, 32, 48, 64, 96, 128)
_MIN_T = 0.05


@dataclass(frozen=True)
class TokenStream:
    ids: np.ndarray         # (N,) int32, files concatenated with <eos> between them
    line_start: np.ndarray  # (N,) bool, token begins a line
    split: int = 0          # library files come before this index, test files after (0: no split)
    p_first: float = 0.0    # probability that a window starts in [0, split) (0: uniform over the stream)
    parts: tuple = ()       # ((name, start, end), ...): the stream's pieces, e.g. one per language

    def part(self, name: str) -> "TokenStream":
        for n, a, b in self.parts:
            if n == name:
                return TokenStream(self.ids[a:b], self.line_start[a:b])
        raise KeyError(name)

    def window_start(self, rng: np.random.Generator, T: int) -> int:
        """Where a training window starts: uniform, or library code first with probability p_first."""
        if self.split and T < self.split < len(self.ids) - T and self.p_first:
            if rng.random() < self.p_first:
                return int(rng.integers(0, self.split - T))
            return int(rng.integers(self.split, len(self.ids) - T))
        return int(rng.integers(0, len(self.ids) - T))


@dataclass(frozen=True)
class Batch:
    input_ids: np.ndarray   # (B, T) int64, masked positions hold mask_id
    targets: np.ndarray     # (B, T) int64, -100 where not masked
    weights: np.ndarray     # (B,) float32, per-row weight applied to each masked token's loss


def _usable(line_starts: np.ndarray, T: int) -> np.ndarray:
    """Line starts a hole may begin at: clear of the window's first and last 8 tokens."""
    return line_starts[(line_starts >= 8) & (line_starts < T - 8)]


def _pick_span(rng: np.random.Generator, line_starts: np.ndarray, T: int) -> tuple[int, int] | None:
    """A hole ``[a, b)`` inside a window of ``T`` tokens; ``None`` when the window has no fitting span."""
    usable = _usable(line_starts, T)
    kind = rng.random()
    if kind < 0.40 and len(usable) >= 2:                      # one whole line, newline included
        i = rng.integers(0, len(usable) - 1)
        return int(usable[i]), int(usable[i + 1])
    if kind < 0.62 and len(usable) >= 3:                      # 2-8 whole lines
        i = rng.integers(0, len(usable) - 2)
        j = min(len(usable) - 1, i + int(rng.integers(2, 9)))
        return int(usable[i]), int(usable[j])
    if kind < 0.85 and len(usable) >= 2:                      # rest of a line, newline left in the suffix
        i = rng.integers(0, len(usable) - 1)
        lo, hi = int(usable[i]), int(usable[i + 1]) - 1       # hi: the newline token
        if hi - lo >= 2:
            return int(rng.integers(lo + 1, hi)), hi
    a = int(rng.integers(8, T - 40))                          # a short token run anywhere
    return a, a + int(rng.integers(1, 25))


def _bucket_for(rng: np.random.Generator, length: int) -> int | None:
    fitting = [b for b in BUCKETS if b >= length]
    if not fitting:
        return None
    # Mostly the tightest bucket, sometimes a looser one: inference guesses the bucket.
    return fitting[0] if rng.random() < 0.5 else fitting[min(len(fitting) - 1, int(rng.integers(1, 4)))]


def _more_lines(rng, line_starts: np.ndarray, taken: list[tuple[int, int]], T: int, k: int) -> list[tuple[int, int]]:
    """Up to ``k`` more whole-line holes, each at least 4 tokens away from every hole already taken."""
    usable = _usable(line_starts, T)
    spans = list(taken)
    for i in rng.permutation(max(len(usable) - 1, 0)):
        if len(spans) > k:
            break
        a, b = int(usable[i]), int(usable[i + 1])
        if b - a <= BUCKETS[-1] and all(b + 4 <= lo or a >= hi + 4 for lo, hi in spans):
            spans.append((a, b))
    return spans


def _infill_row(rng, stream: TokenStream, T: int, pad_id: int, mask_id: int, t: float, max_holes: int = 1):
    """One row with 1..``max_holes`` holes: the curriculum's span, plus whole-line holes elsewhere in the
    window (more loss per forward; single-line infill is what a cursor asks for most)."""
    for _ in range(20):
        start = stream.window_start(rng, T)
        window = stream.ids[start:start + T]
        line_starts = np.flatnonzero(stream.line_start[start:start + T])
        span = _pick_span(rng, line_starts, T)
        if span is None:
            continue
        extra = int(rng.integers(0, max_holes)) if max_holes > 1 else 0
        spans = sorted(_more_lines(rng, line_starts, [span], T, extra) if extra else [span])
        pieces, holes, pos, length = [], [], 0, 0
        for a, b in spans:
            bucket = _bucket_for(rng, b - a)
            at = length + a - pos                    # where the hole lands once earlier pads are in
            if bucket is None or at + bucket > T - 4:
                break                                # this hole and later ones stay clean text
            pieces += [window[pos:a], window[a:b], np.full(bucket - (b - a), pad_id, np.int64)]
            holes.append((at, bucket))
            length, pos = at + bucket, b
        if not holes:
            continue
        filled = np.concatenate(pieces + [window[pos:]])[:T]
        region = np.zeros(T, bool)
        for at, n in holes:
            region[at:at + n] = True
        return _mask(rng, filled, region, mask_id, t)
    return None


def _mask(rng, row: np.ndarray, region: np.ndarray, mask_id: int, t: float):
    chosen = region & (rng.random(len(row)) < t)
    if not chosen.any():
        chosen[rng.choice(np.flatnonzero(region))] = True
    inputs = np.where(chosen, mask_id, row)
    targets = np.where(chosen, row, -100)
    weight = 1.0 / max(t, _MIN_T) / region.sum()
    return inputs, targets, weight


def make_batch(rng: np.random.Generator, stream: TokenStream, batch: int, T: int,
               pad_id: int, mask_id: int, p_infill: float = 0.5, max_holes: int = 1) -> Batch:
    # Stratified t over the batch: lower variance than i.i.d. draws.
    ts = (np.arange(batch) + rng.random(batch)) / batch
    rng.shuffle(ts)
    rows = []
    for t in ts:
        if rng.random() < p_infill:
            t_hole = 1.0 if rng.random() < 0.3 else max(float(t), _MIN_T)
            row = _infill_row(rng, stream, T, pad_id, mask_id, t_hole, max_holes)
            if row is not None:
                rows.append(row)
                continue
        start = stream.window_start(rng, T)
        rows.append(_mask(rng, stream.ids[start:start + T].astype(np.int64), np.ones(T, bool), mask_id, max(float(t), _MIN_T)))
    inputs, targets, weights = zip(*rows)
    return Batch(np.stack(inputs), np.stack(targets), np.asarray(weights, np.float32))


def line_hole_batch(rng, stream: TokenStream, batch: int, T: int, pad_id: int, mask_id: int) -> Batch:
    """Validation rows: one whole line masked entirely in a 24-token bucket, as single-line infill sees it."""
    rows, tries = [], 0
    while len(rows) < batch:
        tries += 1
        if tries > 500 * batch:
            raise ValueError("no window of this stream has a short line to hole")
        start = int(rng.integers(0, len(stream.ids) - T))
        ls = np.flatnonzero(stream.line_start[start:start + T])
        ls = ls[(ls >= 64) & (ls < T - 64)]
        if len(ls) < 2 or ls[1] - ls[0] > 24:
            continue
        a, b = int(ls[0]), int(ls[1])
        window = stream.ids[start:start + T]
        filled = np.concatenate([window[:a], window[a:b], np.full(24 - (b - a), pad_id, np.int64), window[b:]])[:T]
        region = np.zeros(T, bool)
        region[a:a + 24] = True
        rows.append(_mask(rng, filled, region, mask_id, 1.0))
    inputs, targets, weights = zip(*rows)
    return Batch(np.stack(inputs), np.stack(targets), np.asarray(weights, np.float32))
