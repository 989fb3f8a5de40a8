"""The measurements: prompt cache, infill latency warm and cold, our loop against ``generate`` on one canvas, rows.

Every function takes a ``Bench`` (the backend plus the request's sizes) and returns a dict of
figures; times are medians in milliseconds over ``repeats`` runs after one warm-up run.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

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


# --- fixed-step canvases, the profile, the experts implementations, quantized weights --------------

FIXED = -1.0  # a confidence bar no mean entropy is below: the adaptive stop never fires, every step runs


def free_canvas(rows: int, length: int) -> CanvasBatch:
    """``rows`` rows of ``length`` free slots each (noise), nothing pinned, nothing dead."""
    start = torch.full((rows, length), -1, dtype=torch.long)
    return CanvasBatch(start, torch.zeros((rows, length), dtype=torch.bool),
                       torch.ones((rows, length), dtype=torch.bool),
                       [[(0, length)]] * rows, [(length,)] * rows)


def fixed_steps(b: Bench, batch: CanvasBatch, steps: int) -> Callable[[], object]:
    """One denoising run of exactly ``steps`` steps over ``batch`` after the cached prefix."""
    backend = b.backend
    plan = FillPlan((b.prefix_text, HoleSpec(batch.start.shape[1])), steps=steps, threshold=0.0)
    sampling = replace(backend.sampling, confidence=FIXED)

    def run():
        kept, backend.sampling = backend.sampling, sampling
        try:
            return backend.denoise(batch, plan, Control(never), rewrite=False)
        finally:
            backend.sampling = kept
    return run


def canvases(b: Bench, shapes: list[tuple[int, int]], steps: int = 16) -> dict:
    """ms per step and canvas tokens/s of the loop over rows x length free slots, exactly ``steps`` steps."""
    out = {}
    with b.backend.no_grad():
        b.backend.prompt_cache.update(b.prefix_ids)
    for rows, length in shapes:
        run = fixed_steps(b, free_canvas(rows, length), steps)
        timed, done = b.time(run)
        assert done.forwards == steps, done.forwards
        out[f"{rows}x{length}"] = {**timed, "steps": steps, "ms_per_step": round(timed["ms"] / steps, 3),
                                   "canvas_tokens_per_s": round(rows * length / timed["ms"] * 1000, 1),
                                   "peak_memory_gib": peak_gib(b)}
        reset_peak(b)
    return out


MODULE_LABELS = (("attention", "Attention"), ("router", "Router"), ("experts", "Experts"),
                 ("dense_mlp", "Text4MLP"), ("self_conditioning", "SelfConditioning"))
PHASES = ("decoder", "sampling")  # the sampler's own record_function labels


def label_modules(model) -> list:
    """``record_function`` ranges named ``module::<kind>`` around the decoder's modules of each kind (and the
    output projection), through forward hooks; returns the hook handles."""
    handles, open_ranges = [], []

    def enter(label):
        def pre(module, args):
            rf = torch.profiler.record_function(label)
            rf.__enter__()
            open_ranges.append(rf)
        return pre

    def leave(module, args, output):
        open_ranges.pop().__exit__(None, None, None)

    targets = [(m, next((label for label, key in MODULE_LABELS if key in type(m).__name__), None))
               for m in model.model.decoder.modules()] + [(model.lm_head, "lm_head")]
    for module, label in targets:
        if label is not None:
            handles += [module.register_forward_pre_hook(enter(f"module::{label}")),
                        module.register_forward_hook(leave)]
    return handles


def profile(b: Bench, rows: int, length: int, steps: int = 16, trace: str | None = None) -> dict:
    """Where a step's time goes: torch.profiler over one fixed-step run (after an unprofiled warm-up), per module
    kind of the decoder (attention, router, experts, dense MLP, self-conditioning, output projection) and per phase
    of the loop (decoder forward, sampling); ms per step, host (CPU) and device (CUDA) time; the top device kernels."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    backend = b.backend
    with backend.no_grad():
        backend.prompt_cache.update(b.prefix_ids)
    run = fixed_steps(b, free_canvas(rows, length), steps)
    run()
    cuda = backend.device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    handles = label_modules(backend.model)
    try:
        b.sync()
        t0 = time.perf_counter()
        with torch_profile(activities=activities) as prof:
            run()
            b.sync()
        wall_ms = (time.perf_counter() - t0) * 1000
    finally:
        for h in handles:
            h.remove()
    if trace:
        prof.export_chrome_trace(trace)
    events = prof.key_averages()

    labels = set(PHASES) | {f"module::{label}" for label, _ in MODULE_LABELS} | {"module::lm_head"}

    def times(name: str) -> dict:
        # A range can be listed twice on CUDA: the host range (its device time summed over the kernels its ops
        # launched) and the annotation on the GPU timeline (its span); the larger of each figure is kept.
        found = [e for e in events if e.key == name] or [None]
        host = max((e.cpu_time_total if e else 0) for e in found) / 1000
        device = max((getattr(e, "device_time_total", 0) or 0 if e else 0) for e in found) / 1000 if cuda else None
        return {"calls": max((e.count if e else 0) for e in found), "host_ms_per_step": round(host / steps, 3),
                "device_ms_per_step": None if device is None else round(device / steps, 3)}

    kernels = []
    if cuda:
        ranked = sorted((e for e in events
                         if (getattr(e, "self_device_time_total", 0) or 0) > 0 and e.key not in labels),
                        key=lambda e: e.self_device_time_total, reverse=True)[:15]
        kernels = [{"name": e.key[:120], "calls": e.count,
                    "device_ms_per_step": round(e.self_device_time_total / 1000 / steps, 3)}
                   for e in ranked]
    return {"canvas": f"{rows}x{length}", "steps": steps, "profiled_wall_ms_per_step": round(wall_ms / steps, 3),
            "phases": {name: times(name) for name in PHASES},
            "modules": {label: times(f"module::{label}") for label, _ in MODULE_LABELS + (("lm_head", ""),)},
            "top_device_kernels": kernels, "peak_memory_gib": peak_gib(b)}


def experts(b: Bench, rows: int, length: int, names: tuple[str, ...] = ("eager", "batched_mm", "grouped_mm"),
            steps: int = 4) -> dict:
    """ms per step of the fixed-step loop under each of transformers' experts implementations (restored after).
    ``batched_mm`` copies each token-expert pair's weights: skipped when that copy would not fit in half the
    free memory."""
    model = b.backend.model
    kept = model.get_experts_implementation()
    text = model.config.get_text_config()
    pair_bytes = 3 * text.moe_intermediate_size * text.hidden_size * model.dtype.itemsize
    pairs = rows * length * text.top_k_experts
    out: dict = {"canvas": f"{rows}x{length}", "steps": steps,
                 "batched_mm_copy_gib": round(pairs * pair_bytes / 2**30, 2)}
    with b.backend.no_grad():
        b.backend.prompt_cache.update(b.prefix_ids)
    run = fixed_steps(b, free_canvas(rows, length), steps)
    try:
        for name in names:
            if name == "batched_mm" and b.backend.device.type == "cuda" and \
                    pairs * pair_bytes > torch.cuda.mem_get_info()[0] / 2:
                out[name] = {"skipped": "the gathered expert weights would not fit"}
                continue
            model.set_experts_implementation(name)
            try:
                timed, _ = b.time(run)
                out[name] = {**timed, "ms_per_step": round(timed["ms"] / steps, 3), "peak_memory_gib": peak_gib(b)}
            except (RuntimeError, NotImplementedError) as exc:  # e.g. quantized tensors without bmm / grouped_mm
                out[name] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
            reset_peak(b)
            free(b)
    finally:
        model.set_experts_implementation(kept)
    return out


def reference_fills(b: Bench, steps: int = 16) -> dict:
    """What a quantized load is compared with: the fill's candidates and one decoder forward's argmax over a fixed
    noise canvas, at the same seed."""
    backend = b.backend
    plan = FillPlan(b.plan().pieces, steps=steps, threshold=0.0)
    result = backend.fill(plan, Control(never))
    batch = free_canvas(1, backend.canvas_length)
    g = torch.Generator(device=backend.device).manual_seed(SEED)
    canvas = torch.randint(0, backend.vocab_size, (1, backend.canvas_length), device=backend.device, generator=g)
    with backend.no_grad():
        backend.prompt_cache.update(b.prefix_ids)
        logits = backend.decoder(batch)(canvas, None).float()
    return {"texts": [list(c.texts) for c in result.candidates], "argmax": logits.argmax(-1).cpu(),
            "logits": logits[0].cpu() if logits.numel() <= 2**27 else None}   # 512 MB of host memory at most


def agreement(before: dict, after: dict) -> dict:
    """How a quantized model's outputs agree with full precision's at the same seed."""
    same_argmax = (before["argmax"] == after["argmax"]).float().mean().item()
    out = {"best_fill_equal": before["texts"][:1] == after["texts"][:1],
           "fills_equal": before["texts"] == after["texts"], "decoder_argmax_agreement": round(same_argmax, 4)}
    if before["logits"] is not None and after["logits"] is not None:
        out["decoder_logits_max_abs_diff"] = round((before["logits"] - after["logits"]).abs().max().item(), 4)
    return out


def weights_gib(model) -> float:
    """Bytes the parameters hold (torchao's quantized tensors: their data and scales)."""
    seen, total = set(), 0
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        inner = [getattr(p, name) for name in getattr(p, "tensor_data_names", [])] or [p]
        total += sum(t.numel() * t.element_size() for t in inner if isinstance(t, torch.Tensor))
    return round(total / 2**30, 4)


def peak_gib(b: Bench) -> float | None:
    if b.backend.device.type != "cuda":
        return None
    b.sync()
    return round(torch.cuda.max_memory_allocated() / 2**30, 2)


def reset_peak(b: Bench) -> None:
    if b.backend.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()


def free(b: Bench) -> None:
    """Drop what the last section left (the caching allocator's free blocks included) before the next one."""
    gc.collect()
    if b.backend.device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
