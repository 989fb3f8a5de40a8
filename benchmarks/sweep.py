"""Sampler sweep: a steps x acceptance-threshold grid on the same tasks, quality against latency, as a plot.

    python -m benchmarks.sweep --data ../shared/data/human-eval-infilling/HumanEval-SingleLineInfilling.jsonl.gz \
        --limit 100 --out benchmarks/results/sweep.json
"""

from __future__ import annotations

import argparse
import os
import itertools
import sys
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path

from benchmarks.evaluate import check_all, fill_interleaved, score, summarise
from benchmarks.fillers import EngineFiller
from benchmarks.infill import engine_args, engine_config, num, pct
from benchmarks.plots import plot_sweep
from benchmarks.report import default_out, envelope, model_info, run_cli, write_result
from benchmarks.sandbox import Limits
from benchmarks.tasks import dataset_name, load_tasks

POINT_FIELDS = ("pass_at_1", "exact_match", "syntax_valid", "empty", "latency_ms", "steps", "forwards",
                "tokens_per_forward", "errors")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.sweep", description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--steps-grid", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    p.add_argument("--thresholds", type=float, nargs="+", default=[0.5, 0.7, 0.9, 1.0],
                   help="confidence accept thresholds (1.0: only the step budget decides)")
    p.add_argument("--out", default=str(default_out("sweep")))
    p.add_argument("--plot", default=None, help="PNG path (default: beside --out)")
    p.add_argument("--timeout", type=float, default=3.0)
    p.add_argument("--workers", type=int, default=None)
    engine_args(p)
    args = p.parse_args(argv)
    if 0.0 in args.thresholds:
        p.error("threshold 0 means the backend default; give the value itself")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tasks = load_tasks(args.data, args.limit)
    result = envelope("sweep", "benchmarks.sweep", argv)
    result["model"] = model_info(args.model, engine_config(args).load)
    grid = list(itertools.product(args.steps_grid, args.thresholds))
    with ExitStack() as stack:
        fillers = {point: stack.enter_context(EngineFiller(engine_config(args, steps=point[0], threshold=point[1])))
                   for point in grid}
        fills = fill_interleaved(fillers, tasks, label=f"{dataset_name(args.data)} x{len(grid)}")
    limits, cache, points = Limits(timeout_s=args.timeout), {}, []
    for steps, threshold in grid:
        results = check_all(tasks, fills[steps, threshold], limits, args.workers,
                            label=f"tests steps={steps} threshold={threshold:g}", cache=cache)
        summary = summarise([score(t, f, r) for t, f, r in zip(tasks, fills[steps, threshold], results)])
        points.append({"steps_budget": steps, "threshold": threshold,
                       **{k: summary[k] for k in POINT_FIELDS}})
    result.update({"dataset": dataset_name(args.data), "data": args.data, "limit": args.limit, "n": len(tasks),
                   "settings": asdict(engine_config(args)), "points": points})
    png = args.plot or str(args.out).removesuffix(".json") + ".png"
    result["plot"] = os.path.relpath(png, Path(args.out).parent)   # beside the JSON
    plot_sweep(result, png)
    write_result(args.out, result)
    for p in points:
        print(f"steps {p['steps_budget']:3d} threshold {p['threshold']:.2f}: pass@1 {pct(p['pass_at_1'])} exact "
              f"{pct(p['exact_match'])} p50 {p['latency_ms']['p50']} ms forwards {num(p['forwards'])}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
