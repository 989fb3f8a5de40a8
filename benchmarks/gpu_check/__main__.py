"""``python -m benchmarks.gpu_check --out results.json``: DiffusionGemma speed on a GPU, with random weights.

Builds a random ``DiffusionGemmaForBlockDiffusion`` at the real checkpoint's layer shapes (bf16,
cuda; nothing downloaded), wraps it in the project's backend, and measures: ms per step of fixed-step
canvases (1 x 256, 4 x 128, 8 x 64), where a step's time goes (``--profile``), our loop against the
model's own ``generate`` on one canvas, a whole infill warm and cold, the prompt cache (cold encode,
repeated prefix, typing, an edit), the cost of the extra hole-length rows, and the experts
implementations; with ``--quantization``, the same on torchao-quantized weights and their agreement
with full precision. Every section records its peak GPU memory and frees what it used. The JSON is
rewritten after every section, so a run cut short still leaves figures. ``--tiny`` runs the same
script on CPU with a tiny model in seconds (a test runs it).
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
import time
from pathlib import Path

import torch

from . import measure
from .build import build_model, build_tokenizer, model_config, source_text

SECTIONS = ("canvases", "profile", "same_canvas", "experts", "fill", "prompt_cache", "rows")  # most wanted first


def shapes(text: str) -> list[tuple[int, int]]:
    return [(int(r), int(n)) for r, n in (s.split("x") for s in text.split(","))]


def run_section(name: str, bench: measure.Bench, args: argparse.Namespace) -> dict:
    canvases = shapes(args.canvases)
    if name == "canvases":
        return measure.canvases(bench, canvases, args.fixed_steps)
    if name == "profile":
        rows, length = canvases[min(1, len(canvases) - 1)]
        return measure.profile(bench, rows, length, args.fixed_steps, args.trace)
    if name == "experts":
        rows, length = canvases[0]
        return measure.experts(bench, rows, length, steps=max(2, args.fixed_steps // 4))
    return getattr(measure, name)(bench)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.gpu_check", description=__doc__.split("\n")[0])
    p.add_argument("--out", default="results.json", help="where to write the figures (JSON)")
    p.add_argument("--tiny", action="store_true", help="a tiny model on CPU: checks the script end to end")
    p.add_argument("--layers", type=int, default=None, help="fewer layers than the real 30 (same shapes)")
    p.add_argument("--prefix-tokens", type=int, default=None, help="prefix length (default 1024; tiny 200)")
    p.add_argument("--hole", type=int, default=None, help="hole slots (default 64; tiny 16)")
    p.add_argument("--suffix-tokens", type=int, default=64)
    p.add_argument("--steps", type=int, default=None, help="denoising steps (default 48; tiny 6)")
    p.add_argument("--repeats", type=int, default=None, help="timed runs per figure (default 3; tiny 2)")
    p.add_argument("--budget-s", type=float, default=300.0, help="skip the remaining sections after this long")
    p.add_argument("--canvases", default=None, help="rows x slots of the fixed-step canvases (default "
                   "1x256,4x128,8x64; tiny 1x48,4x24,8x12); the second is profiled, the first compares experts")
    p.add_argument("--fixed-steps", type=int, default=None,
                   help="steps of the fixed-step sections (default 16; tiny 4)")
    p.add_argument("--profile", action="store_true", help="torch.profiler: where a step's time goes")
    p.add_argument("--trace", default=None, help="with --profile: write the Chrome trace here")
    p.add_argument("--experts", default="auto", help="auto | eager | batched_mm | grouped_mm")
    p.add_argument("--quantization", default="none", help="none | int8 | fp8 | int4 (torchao, in memory)")
    p.add_argument("--sections", default=None, help="comma-separated subset of " + ",".join(SECTIONS))
    p.add_argument("--device", default=None, help="default: cuda (cpu with --tiny)")
    p.add_argument("--dtype", default=None, help="default: bfloat16 (float32 with --tiny)")
    args = p.parse_args(argv)
    tiny = args.tiny
    for name, real, small in (("prefix_tokens", 1024, 200), ("hole", 64, 16), ("steps", 48, 6), ("repeats", 3, 2),
                              ("canvases", "1x256,4x128,8x64", "1x48,4x24,8x12"), ("fixed_steps", 16, 4)):
        if getattr(args, name) is None:
            setattr(args, name, small if tiny else real)
    args.device = args.device or ("cpu" if tiny else "cuda")
    args.dtype = args.dtype or ("float32" if tiny else "bfloat16")
    return args


def make_bench(args, model, tokenizer) -> measure.Bench:
    from engine.backends.base import FillPlan, HoleSpec
    from engine.backends.diffusion_gemma.backend import DiffusionGemmaBackend
    from engine.backends.diffusion_gemma.sampler import Sampling

    sampling = Sampling(steps=args.steps)  # the library's defaults: what the checkpoint ships unless it says otherwise
    backend = DiffusionGemmaBackend(model, tokenizer, sampling)
    text = source_text()
    ids = tokenizer.encode(text, add_special_tokens=False)
    prefix_text = tokenizer.decode(ids[:args.prefix_tokens - 1])
    suffix_text = tokenizer.decode(ids[args.prefix_tokens:args.prefix_tokens + args.suffix_tokens])
    prefix_ids, _ = backend.segments(FillPlan((prefix_text, HoleSpec(1)), steps=1, threshold=0.0))
    return measure.Bench(backend, prefix_ids, prefix_text, suffix_text, args.hole, args.steps, args.repeats)


def environment(args, model, build_s: float) -> dict:
    import transformers

    env = {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
           "device": args.device, "dtype": args.dtype, "build_s": round(build_s, 1),
           "parameters": sum(p.numel() for p in model.parameters()),
           "layers": model.config.text_config.num_hidden_layers, "canvas_length": model.config.canvas_length,
           "experts": model.config.get_text_config()._experts_implementation, "quantization": args.quantization,
           "weights_gib": measure.weights_gib(model)}
    try:
        import torchao
        env["torchao"] = torchao.__version__
    except ImportError:
        env["torchao"] = None
    if args.device.startswith("cuda"):
        env["gpu"] = torch.cuda.get_device_name()
        env["gpu_memory_gib"] = round(torch.cuda.memory_allocated() / 2**30, 1)
    return env


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t0 = time.perf_counter()
    out = Path(args.out)
    command = "python -m benchmarks.gpu_check " + shlex.join(argv if argv is not None else sys.argv[1:])
    print(command, file=sys.stderr)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu_check: no CUDA device here; run with --tiny to check the script on CPU", file=sys.stderr)
        return 2
    if args.device == "cpu":
        torch.set_num_threads(1)
    torch.manual_seed(0)
    from engine.backends.diffusion_gemma.options import experts_implementation, quantize_in_memory

    model, build_s = build_model(model_config(args.tiny, args.layers), torch.device(args.device),
                                 getattr(torch, args.dtype))
    model.set_experts_implementation(experts_implementation(args.experts, args.quantization))
    bench = make_bench(args, model, build_tokenizer())
    quantized = None
    if args.quantization != "none":  # full precision's outputs first, then the same weights quantized in memory
        with bench.backend.no_grad():
            before = measure.reference_fills(bench, args.fixed_steps)
        weights_before = measure.weights_gib(model)
        started = time.perf_counter()
        quantize_in_memory(model, args.quantization)
        bench.backend.quantized = True
        quantize_s = time.perf_counter() - started
        measure.free(bench)
        with bench.backend.no_grad():
            after = measure.reference_fills(bench, args.fixed_steps)
        quantized = {"kind": args.quantization, "quantize_s": round(quantize_s, 1),
                     "weights_gib_before": weights_before, "weights_gib_after": measure.weights_gib(model),
                     "memory_allocated_gib": (round(torch.cuda.memory_allocated() / 2**30, 2)
                                              if args.device.startswith("cuda") else None),
                     **measure.agreement(before, after)}
        del before, after
    measure.free(bench)
    report = {"command": command, "tiny": args.tiny, "environment": environment(args, model, build_s),
              "request": {"prefix_tokens": len(bench.prefix_ids), "hole": args.hole,
                          "suffix_tokens": args.suffix_tokens, "steps": args.steps, "repeats": args.repeats,
                          "canvases": args.canvases, "fixed_steps": args.fixed_steps},
              "quantization": quantized, "figures": {}, "skipped": [], "failed": {}, "complete": False}
    out.write_text(json.dumps(report, indent=2))   # the build (and a quantization's figures) even if no section ends
    wanted = args.sections.split(",") if args.sections else [s for s in SECTIONS if s != "profile" or args.profile]
    for name in wanted:
        if time.perf_counter() - t0 > args.budget_s:
            report["skipped"].append(name)
            continue
        started = time.perf_counter()
        measure.reset_peak(bench)
        try:
            with bench.backend.no_grad():
                figures = run_section(name, bench, args)
            figures["section_s"] = round(time.perf_counter() - started, 1)
            figures["section_peak_memory_gib"] = measure.peak_gib(bench)
            report["figures"][name] = figures
        except torch.OutOfMemoryError as exc:   # say so and go on: the next section starts from freed memory
            report["failed"][name] = f"out of memory: {str(exc)[:300]}"
        measure.free(bench)
        report["elapsed_s"] = round(time.perf_counter() - t0, 1)
        out.write_text(json.dumps(report, indent=2))
        print(f"gpu_check: {name} done ({report['elapsed_s']} s)", file=sys.stderr)
    report["complete"] = not report["skipped"] and not report["failed"]
    report["elapsed_s"] = round(time.perf_counter() - t0, 1)
    out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report["figures"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
