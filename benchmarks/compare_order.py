"""Diffusion against left-to-right: the same model and tasks decoded with parallel acceptance and one
token per step in left-to-right order (the autoregressive order), side by side in one run.

    python -m benchmarks.compare_order --data ../shared/data/human-eval-infilling/HumanEval-SingleLineInfilling.jsonl.gz \
        --limit 200 --out benchmarks/results/compare-order.json
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path

from benchmarks.evaluate import check_all, fill_interleaved, score, summarise
from benchmarks.fillers import EngineFiller
from benchmarks.infill import engine_args, engine_config, num, pct
from benchmarks.plots import plot_compare_order
from benchmarks.report import default_out, envelope, model_info, run_cli, write_result
from benchmarks.sandbox import Limits
from benchmarks.tasks import dataset_name, load_tasks

ORDERS = ("confidence", "left_to_right")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.compare_order", description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--out", default=str(default_out("compare-order")))
    p.add_argument("--plot", default=None, help="PNG path (default: beside --out)")
    p.add_argument("--timeout", type=float, default=3.0)
    p.add_argument("--workers", type=int, default=None)
    engine_args(p)
    return p.parse_args(argv)


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else round(a / b, 3)


def side_by_side(orders: dict) -> dict:
    """Left-to-right over parallel: how many times more forwards and wall time the AR order needs."""
    par, ltr = orders["confidence"], orders["left_to_right"]
    return {
        "forwards": ratio(ltr["forwards"], par["forwards"]),
        "latency_mean": ratio(ltr["latency_ms"]["mean"], par["latency_ms"]["mean"]),
        "latency_p50": ratio(ltr["latency_ms"]["p50"], par["latency_ms"]["p50"]),
        "tokens_per_forward": ratio(par["tokens_per_forward"], ltr["tokens_per_forward"]),
        "pass_at_1_delta": None if par["pass_at_1"] is None else round(par["pass_at_1"] - ltr["pass_at_1"], 4),
        "exact_match_delta": round(par["exact_match"] - ltr["exact_match"], 4),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tasks = load_tasks(args.data, args.limit)
    result = envelope("compare_order", "benchmarks.compare_order", argv)
    result["model"] = model_info(args.model, engine_config(args).load)
    configs = {order: engine_config(args, order=order) for order in ORDERS}
    with ExitStack() as stack:
        fillers = {order: stack.enter_context(EngineFiller(config)) for order, config in configs.items()}
        fills = fill_interleaved(fillers, tasks, label=f"{dataset_name(args.data)} x2")
    limits, cache = Limits(timeout_s=args.timeout), {}
    orders = {}
    for order in ORDERS:
        results = check_all(tasks, fills[order], limits, args.workers, label=f"tests {order}", cache=cache)
        orders[order] = summarise([score(t, f, r) for t, f, r in zip(tasks, fills[order], results)])
    result.update({"dataset": dataset_name(args.data), "data": args.data, "limit": args.limit, "n": len(tasks),
                   "settings": {order: asdict(c) for order, c in configs.items()},
                   "orders": orders, "ratio_ltr_over_parallel": side_by_side(orders)})
    png = args.plot or str(args.out).removesuffix(".json") + ".png"
    result["plot"] = os.path.relpath(png, Path(args.out).parent)   # beside the JSON
    plot_compare_order(result, png)
    write_result(args.out, result)
    for order, r in orders.items():
        print(f"{order:14s} pass@1 {pct(r['pass_at_1'])} exact {pct(r['exact_match'])} forwards {num(r['forwards'])} "
              f"p50 {r['latency_ms']['p50']} ms mean {r['latency_ms']['mean']} ms tokens/forward "
              f"{num(r['tokens_per_forward'], 2)}")
    print(f"left-to-right / parallel: {result['ratio_ltr_over_parallel']}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
