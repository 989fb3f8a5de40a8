"""torch threads (and weight dtypes) on these 2-core machines: one server process per configuration,
the same single-line tasks sent to each in turn (rotating who goes first), latency side by side in one
run, and how often each configuration's fill is the first one's.

    python -m benchmarks.threads --data ../shared/data/human-eval-infilling/HumanEval-SingleLineInfilling.jsonl.gz \
        --limit 60 --threads 1 2 --dtypes float32 bfloat16 --out benchmarks/results/threads.json
"""

from __future__ import annotations

import argparse
import itertools
from contextlib import ExitStack

from benchmarks.evaluate import fill_interleaved
from benchmarks.fillers import LspFiller
from benchmarks.metrics import latency_summary
from benchmarks.report import default_out, envelope, run_cli, write_result
from benchmarks.tasks import dataset_name, load_tasks


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.threads", description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--limit", type=int, default=60)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--dtypes", nargs="+", default=["auto"], choices=("auto", "float32", "bfloat16"),
                   help="weight dtypes to compare (every thread count with every dtype)")
    p.add_argument("--model", default="embedded")
    p.add_argument("--out", default=str(default_out("threads")))
    args = p.parse_args(argv)
    tasks = load_tasks(args.data, args.limit)
    result = envelope("threads", "benchmarks.threads", argv)
    with ExitStack() as stack:
        configs = list(itertools.product(args.threads, args.dtypes))
        names = [f"threads={n}" + ("" if len(args.dtypes) == 1 else f" dtype={d}") for n, d in configs]
        fillers = {name: stack.enter_context(LspFiller({"model": args.model, "threads": n, "dtype": d}))
                   for name, (n, d) in zip(names, configs)}
        fills = fill_interleaved(fillers, tasks, "threads")
    first = fills[names[0]]
    rows = {name: {"round_trip_ms": latency_summary([f.elapsed_ms for f in fs]),
                   "engine_ms": latency_summary([f.engine_ms for f in fs if f.engine_ms is not None]),
                   "same_fill_as_first": round(sum(a.completion == b.completion for a, b in zip(fs, first)) / len(fs), 3),
                   "offered": sum(1 for f in fs if f.completion)}
            for name, fs in fills.items()}
    base = rows[names[0]]["engine_ms"]
    for name, row in rows.items():
        row["engine_p50_ratio_to_first"] = round(row["engine_ms"]["p50"] / base["p50"], 3) if base["p50"] else None
    result.update({"dataset": dataset_name(args.data), "n": len(tasks), "model": args.model, "configs": rows})
    write_result(args.out, result)
    for name, row in rows.items():
        print(f"{name}: engine p50 {row['engine_ms']['p50']} ms, p95 {row['engine_ms']['p95']} ms; "
              f"round trip p50 {row['round_trip_ms']['p50']} ms (x{row['engine_p50_ratio_to_first']}); "
              f"same fill as the first {100 * row['same_fill_as_first']:.0f}%, {row['offered']} offered")
    return 0


if __name__ == "__main__":
    run_cli(main)
