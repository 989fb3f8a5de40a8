"""Every hole-length and step-budget rule: how many slots a hole gets on the canvas, which lengths a hole is
tried at, and how many denoising steps a request may spend. Cursor fills, multi-hole fills, bodies, fixes
and rewrites all ask here."""

from __future__ import annotations

from .backends.base import Backend
from .config import FillOptions
from .requests import EngineError, Hole, HoleKind

# Cursor holes: the largest an INLINE / LINE hole gets (capped by ``max_hole_tokens``).
_CURSOR_SLOTS = {HoleKind.INLINE: 24, HoleKind.LINE: 32}
# A one-line hole is filled at each of these slot counts (two of the training's length buckets: half
# of HumanEval's lines fit in 8 tokens, nine in ten in 24), and the valid fill the model is most
# confident of wins. The model reads a hole's size as a hint of the line's length: on HumanEval
# single-line one fill at 32 slots passes 7.5%, at 24 8.7%, at 8 9.7%, the two together 10.8%
# (benchmarks/README.md, which also has the held-out stdlib set, where one 24-slot fill does best).
_LINE_LENGTHS = (8, 24)
_MAX_SPAN_TOKENS = 384        # a selection's hole: 1.5x its tokens + 8, at most this
_BLOCK_RETRY_MIN = 16         # a block hole this large may retry at half the slots
SLOTS_INLINE = 16             # a multi-hole fill's expression hole (``__``)
SLOTS_STATEMENTS = 48         # a multi-hole fill's body or statement hole
_MIN_MULTI_SLOTS = 12         # many holes shrink to no fewer slots than this
_CANVAS_MARGIN = 16           # positions kept free of a multi-hole canvas
_POSITION_MARGIN = 8          # positions kept free of a one-hole canvas (specials; BPE merges across pieces)


def step_budget(request_steps: int | None, options: FillOptions, backend: Backend) -> int:
    """The steps a request may spend in all: its own, else the configured ones, else the backend's default.
    Always at least 1: "0 steps" means "the default" and is resolved here only."""
    return max(1, request_steps or options.steps or backend.default_steps)


def cursor_slots(kind: HoleKind, max_tokens: int | None, options: FillOptions, span_tokens: int) -> int:
    """Slots of a cursor or selection hole: the request's own size, else by kind (``span_tokens``: the
    tokens of a selection being replaced)."""
    if max_tokens:
        return max_tokens
    if kind is HoleKind.SPAN:
        return min(_MAX_SPAN_TOKENS, int(span_tokens * 1.5) + 8)
    return min(options.max_hole_tokens, _CURSOR_SLOTS.get(kind, options.max_hole_tokens))


def line_lengths(kind: HoleKind, max_tokens: int | None, options: FillOptions, backend: Backend) -> tuple[int, ...]:
    """The slot counts a one-line hole is tried at; () when the hole is filled once at its own size."""
    if kind is not HoleKind.LINE or max_tokens or backend.searches_lengths:
        return ()
    return tuple(dict.fromkeys(min(n, options.max_hole_tokens) for n in options.line_lengths or _LINE_LENGTHS))


def attempts(kind: HoleKind, slots: int, lengths: tuple[int, ...], backend: Backend) -> tuple[int, ...]:
    """The slot counts tried in turn: the line lengths, else the hole's size, and for a block half of it
    after (cursor-sized holes answer at once; a backend that batches lengths never needs the retry)."""
    if lengths:
        return lengths
    if kind is HoleKind.BLOCK and slots >= _BLOCK_RETRY_MIN and not backend.searches_lengths:
        return slots, slots // 2
    return (slots,)


def attempt_steps(budget: int, spent: int, lengths: tuple[int, ...]) -> int:
    """Steps for the next attempt: lengths share the budget evenly, a retry gets what is left (0: none)."""
    left = budget - spent
    if left < 1:
        return 0
    return min(max(1, budget // len(lengths)), left) if lengths else left


def fix_slots(original_tokens: int) -> int:
    """Slots for re-masking a syntax error's span: room for a little more than was there."""
    return max(8, original_tokens * 5 // 4 + 4)


def blank_slots(blanks: list[Hole], body: bool, options: FillOptions, backend: Backend) -> list[int]:
    """Slots per hole of a multi-hole fill: a body gets ``max_hole_tokens``; other holes by kind, all shrunk
    together while they would take more than half the canvas."""
    sizes = [options.max_hole_tokens if body else SLOTS_INLINE if b.inline else SLOTS_STATEMENTS for b in blanks]
    cap = canvas_cap(backend)
    while sum(sizes) > cap // 2 and max(sizes) > _MIN_MULTI_SLOTS:
        sizes = [max(_MIN_MULTI_SLOTS, s * 3 // 4) for s in sizes]
    return sizes


def canvas_cap(backend: Backend) -> int:
    """Tokens a multi-hole canvas may take."""
    return backend.max_positions - _CANVAS_MARGIN


def context_tokens(backend: Backend, options: FillOptions, hole_tokens: int) -> tuple[int, int]:
    """Prefix and suffix token budgets beside a hole of ``hole_tokens`` slots: the configured ones, cut in
    proportion to what the model's positions leave. EngineError when the hole alone does not fit."""
    room = backend.max_positions - _POSITION_MARGIN - hole_tokens
    if room < 0:
        raise EngineError(f"a hole of {hole_tokens} tokens does not fit the model's {backend.max_positions} "
                          "positions; select less")
    pre, suf = options.prefix_tokens, options.suffix_tokens
    if pre + suf <= room:
        return pre, suf
    cut = room * pre // (pre + suf)
    return cut, room - cut
