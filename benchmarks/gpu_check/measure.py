"""The measurements: prompt cache, infill latency warm and cold, our loop against ``generate`` on one canvas, rows.

Every function takes a ``Bench`` (the backend plus the request's sizes) and returns a dict of
figures; times are medians in milliseconds over ``repeats`` runs after one warm-up run.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from engine.backends.base import Control, FillPlan, HoleSpec
from engine.backends.diffusion_gemma.backend import SEED, DiffusionGemmaBackend
from engine.backends.diffusion_gemma.canvas import CanvasBatch, Segment, layout


def never(step: int) -> None:
    return None


@dataclass
class Bench:
    backend: DiffusionGemmaBackend
    prefix_ids: list[int]    # BOS + prefix, as the prompt cache holds them
    prefix_text: str
    suffix_text: str
    hole: int
    steps: int
    repeats: int

    def plan(self, hole: int | None = None, suffix: str | None = None) -> FillPlan:
        return FillPlan((self.prefix_text, HoleSpec(hole or self.hole), self.suffix_text if suffix is None else suffix),
                        steps=self.steps, threshold=0.0)

    def sync(self) -> None:
        if self.backend.device.type == "cuda":
            torch.cuda.synchronize()

    def time(self, run: Callable[[], object], before: Callable[[], object] | None = None) -> tuple[dict, object]:
        """Median wall time of ``run`` (``before`` runs untimed each time); one untimed warm-up first."""
        times, out = [], None
        for i in range(self.repeats + 1):
            if before is not None:
                before()
            self.sync()
            t0 = time.perf_counter()
            out = run()
            self.sync()
            if i:
                times.append((time.perf_counter() - t0) * 1000)
        return {"ms": round(statistics.median(times), 2), "runs_ms": [round(t, 2) for t in times]}, out


def prompt_cache(b: Bench) -> dict:
    """Encoder cost of a cold prefix, a repeated one, typing at the end, and an edit near the end."""
    cache, ids = b.backend.prompt_cache, b.prefix_ids
    extra = ids[1:9]
    cold, _ = b.time(lambda: cache.update(ids), before=cache.clear)
    calls = cache.encoder_calls
    repeat, _ = b.time(lambda: cache.update(ids))
    skipped = cache.encoder_calls == calls
    typing, _ = b.time(lambda: cache.update(ids + extra), before=lambda: cache.update(ids))
    at = max(1, len(ids) - 32)
    edited = ids[:at] + [4 if ids[at] == 3 else 3] + ids[at + 1:]   # one token changed
    edit, _ = b.time(lambda: cache.update(edited), before=lambda: cache.update(ids))
    return {"prefix_tokens": len(ids), "cold_encode": cold, "repeated_prefix": {**repeat, "encoder_skipped": skipped},
            "typing_8_tokens": {**typing, "tokens_encoded": len(extra)},
            "edit_32_from_end": {**edit, "tokens_encoded": len(ids) - at}}


def fill(b: Bench) -> dict:
    """The whole backend fill (all hole lengths as rows), with the prefix cached and with the cache cleared."""
    backend = b.backend
    plan = b.plan()
    warm, result = b.time(lambda: backend.fill(plan, Control(never)))
    cold, _ = b.time(lambda: backend.fill(plan, Control(never)), before=backend.clear_prompt_cache)
    _, segments = backend.segments(plan)
    batch = layout(segments, backend.canvas_length, backend.pad_id)
    seconds = warm["ms"] / 1000
    return {
        "rows": batch.rows, "canvas": list(batch.start.shape), "hole_lengths": [r[0] for r in batch.lengths],
        "steps": result.steps, "forwards": result.forwards,
        "warm": warm, "cold": cold, "cache_saving_ms": round(cold["ms"] - warm["ms"], 2),
        "hole_tokens_per_s": round(b.hole / seconds, 1),
        "canvas_tokens_per_s": round(batch.rows * batch.start.shape[1] / seconds, 1),
        "ms_per_step": round(warm["ms"] / max(1, result.steps), 3),
    }


def single_row(backend: DiffusionGemmaBackend, length: int) -> CanvasBatch:
    """One row of ``length`` free slots and nothing pinned: the canvas ``generate`` denoises."""
    batch = layout([Segment(spec=HoleSpec(length))], length, backend.pad_id)
    return CanvasBatch(batch.start[:1], batch.pinned[:1], batch.live[:1], batch.holes[:1], batch.lengths[:1])


def same_canvas(b: Bench) -> dict:
    """Our loop and the model's own ``generate`` on one canvas of ``canvas_length`` slots after the same prefix."""
    backend, model = b.backend, b.backend.model
    C, device = backend.canvas_length, backend.device
    batch, plan = single_row(backend, C), b.plan(hole=C, suffix="")
    ours_warm, out = b.time(lambda: backend.denoise(batch, plan, Control(never), rewrite=False))
    ours_cold, _ = b.time(lambda: (backend.prompt_cache.update(b.prefix_ids),
                                   backend.denoise(batch, plan, Control(never), rewrite=False)),
                          before=backend.clear_prompt_cache)
    s = backend.sampling
    gen = model.generation_config
    gen.max_denoising_steps, gen.t_min, gen.t_max = b.steps, s.t_min, s.t_max
    gen.stability_threshold, gen.confidence_threshold = s.stability, s.confidence
    input_ids = torch.tensor([b.prefix_ids], device=device)
    start = torch.randint(0, backend.vocab_size, (1, C), device=device,
                          generator=torch.Generator(device=device).manual_seed(SEED))
    with backend.no_grad():
        generated, res = b.time(lambda: model.generate(input_ids=input_ids, max_new_tokens=C,
                                                       decoder_input_ids=start.clone()))
    new = res.sequences[0, len(b.prefix_ids):]
    gen_forwards = round(float((new != backend.pad_id).sum()) / float(res.tokens_per_forward[0]))
    return {
        "canvas_length": C, "prefix_tokens": len(b.prefix_ids),
        "ours_cached_prefix": {**ours_warm, "steps": out.steps, "ms_per_step": round(ours_warm["ms"] / out.steps, 3)},
        "ours_cold_prefix": {**ours_cold, "steps": out.steps},
        "generate": {**generated, "steps": gen_forwards,
                     "ms_per_step": round(generated["ms"] / max(1, gen_forwards), 3)},
        "ours_cached_vs_generate": round(ours_warm["ms"] / generated["ms"], 3),
        "ours_cold_vs_generate": round(ours_cold["ms"] / generated["ms"], 3),
        "tokens_per_s": {"ours_cached_prefix": round(C / ours_warm["ms"] * 1000, 1),
                         "ours_cold_prefix": round(C / ours_cold["ms"] * 1000, 1),
                         "generate": round(C / generated["ms"] * 1000, 1)},
    }


def rows(b: Bench, steps: int = 8) -> dict:
    """Cost per step of the fill's batch of hole lengths against its longest row alone."""
    backend = b.backend
    plan = FillPlan(b.plan().pieces, steps=steps, threshold=0.0)
    _, segments = backend.segments(plan)
    batch = layout(segments, backend.canvas_length, backend.pad_id)
    backend.prompt_cache.update(b.prefix_ids)
    one = CanvasBatch(batch.start[:1], batch.pinned[:1], batch.live[:1], batch.holes[:1], batch.lengths[:1])
    all_rows, _ = b.time(lambda: backend.denoise(batch, plan, Control(never), rewrite=False))
    longest, _ = b.time(lambda: backend.denoise(one, plan, Control(never), rewrite=False))
    return {"rows": batch.rows, "steps": steps,
            "all_rows_ms_per_step": round(all_rows["ms"] / steps, 3),
            "longest_row_ms_per_step": round(longest["ms"] / steps, 3),
            "extra_rows_cost": round(all_rows["ms"] / longest["ms"] - 1, 3)}
