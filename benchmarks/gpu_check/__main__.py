"""``python -m benchmarks.gpu_check --out results.json``: DiffusionGemma speed on a GPU, with random weights.

Builds a random ``DiffusionGemmaForBlockDiffusion`` at the real checkpoint's layer shapes (bf16,
cuda; nothing downloaded), wraps it in the project's backend, and measures: the prompt cache
(cold encode, repeated prefix, typing, an edit), a whole infill warm and cold, our loop against the
model's own ``generate`` on one canvas with and without the cached prefix, and the cost of the
extra hole-length rows. The JSON is rewritten after every section, so a run cut short still
leaves figures. ``--tiny`` runs the same script on CPU with a tiny model in seconds (a test runs it).
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

SECTIONS = ("prompt_cache", "fill", "same_canvas", "rows")


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
    p.add_argument("--budget-s", type=float, default=420.0, help="skip the remaining sections after this long")
    p.add_argument("--device", default=None, help="default: cuda (cpu with --tiny)")
    p.add_argument("--dtype", default=None, help="default: bfloat16 (float32 with --tiny)")
    args = p.parse_args(argv)
    tiny = args.tiny
    for name, real, small in (("prefix_tokens", 1024, 200), ("hole", 64, 16), ("steps", 48, 6), ("repeats", 3, 2)):
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
           "layers": model.config.text_config.num_hidden_layers, "canvas_length": model.config.canvas_length}
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
    model, build_s = build_model(model_config(args.tiny, args.layers), torch.device(args.device),
                                 getattr(torch, args.dtype))
    bench = make_bench(args, model, build_tokenizer())
    report = {"command": command, "tiny": args.tiny, "environment": environment(args, model, build_s),
              "request": {"prefix_tokens": len(bench.prefix_ids), "hole": args.hole,
                          "suffix_tokens": args.suffix_tokens, "steps": args.steps, "repeats": args.repeats},
              "figures": {}, "skipped": [], "complete": False}
    for name in SECTIONS:
        if time.perf_counter() - t0 > args.budget_s:
            report["skipped"].append(name)
            continue
        started = time.perf_counter()
        report["figures"][name] = getattr(measure, name)(bench)
        report["figures"][name]["section_s"] = round(time.perf_counter() - started, 1)
        report["elapsed_s"] = round(time.perf_counter() - t0, 1)
        out.write_text(json.dumps(report, indent=2))
        print(f"gpu_check: {name} done ({report['elapsed_s']} s)", file=sys.stderr)
    report["complete"] = not report["skipped"]
    report["elapsed_s"] = round(time.perf_counter() - t0, 1)
    out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report["figures"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
