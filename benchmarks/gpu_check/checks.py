"""``python -m benchmarks.gpu_check.checks --out checks.json``: the CPU tests' equalities, again on the GPU, in seconds.

On the tiny random model (float32) on ``--device`` (cuda by default): the sampler's draw equals
``torch.multinomial``'s at the same seed; the loop gives the same canvas, log-probabilities and step
count whether the stop verdict is read at once or one step late (the CUDA default), running at most
one more forward; transformers' experts implementations give the same fills. Exit status 1 when one
of them does not hold.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import torch


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.gpu_check.checks")
    p.add_argument("--out", default="checks.json")
    p.add_argument("--device", default="cuda")
    args = p.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(1)
    from engine.backends.base import Control
    from engine.backends.diffusion_gemma.backend import DiffusionGemmaBackend
    from engine.backends.diffusion_gemma.canvas import layout
    from engine.backends.diffusion_gemma.sampler import denoise, multinomial

    from .__main__ import make_bench
    from .build import build_model, build_tokenizer, model_config

    out: dict = {"device": str(device), "torch": torch.__version__}
    probs = torch.softmax(torch.randn(256, 4096, device=device) * 3, -1)
    want = torch.multinomial(probs, 1, generator=torch.Generator(device=device).manual_seed(7)).squeeze(-1)
    got = multinomial(probs, torch.Generator(device=device).manual_seed(7))
    out["multinomial_equal"] = bool(torch.equal(got, want))

    model, _ = build_model(model_config(True), device, torch.float32)
    ns = argparse.Namespace(steps=12, prefix_tokens=200, suffix_tokens=64, hole=16, repeats=1)
    bench = make_bench(ns, model, build_tokenizer())
    backend: DiffusionGemmaBackend = bench.backend
    plan = bench.plan()
    _, segments = backend.segments(plan)
    batch = layout(segments, backend.canvas_length, backend.pad_id)
    lag: list[dict] = []
    for confidence in (None, 6.2, 6.18):   # the checkpoint's rule, then bars that stop rows at different steps
        sampling = backend.sampling if confidence is None else replace(backend.sampling, stability=0,
                                                                        confidence=confidence)
        runs = []
        with backend.no_grad():
            backend.prompt_cache.update(bench.prefix_ids)
            for stop_lag in (0, 1):
                runs.append(denoise(backend.decoder(batch), batch.start.to(device), batch.pinned.to(device), sampling,
                                    steps=plan.steps, vocab_size=backend.vocab_size,
                                    generator=torch.Generator(device=device).manual_seed(0),
                                    sc_dtype=torch.float32, stop_lag=stop_lag))
        a, b = runs
        lag.append({"confidence": confidence, "steps": a.steps, "forwards": [a.forwards, b.forwards],
                    "equal": bool(torch.equal(a.argmax, b.argmax) and torch.equal(a.logp, b.logp) and a.steps == b.steps
                                  and a.forwards <= b.forwards <= a.forwards + 1)})
    out["stop_lag"] = lag
    fills = {}
    for name in ("eager", "batched_mm", "grouped_mm"):
        model.set_experts_implementation(name)
        result = backend.fill(plan, Control(lambda step: None))
        fills[name] = [list(c.texts) for c in result.candidates]
    out["experts_fills_equal"] = all(f == fills["eager"] for f in fills.values())
    out["ok"] = out["multinomial_equal"] and all(r["equal"] for r in lag) and out["experts_fills_equal"]
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
