"""Tuning workspace adaptation on development code bases (never the ones ``benchmarks.adapt`` reports): each
configuration adapts every development code base for ``--minutes`` CPU-minutes (``python -m benchmarks.adapt``
with ``--set`` fields) and records held-out exact match and ``line_loss`` (the training loss on fixed held-out
one-line holes: exact counts are small, the loss is the smoother signal).

    python -m benchmarks.adapt_tune --packages astroid tomlkit --minutes 6 --snapshots 2 4 \\
        --config base --config lr1e3:lr=1e-3 --config lora_lr2e3:method=lora,lr=2e-3 \\
        --out benchmarks/results/adapt-tune.json

A configuration is ``NAME`` or ``NAME:FIELD=VALUE,FIELD=VALUE``. ``--from-logs`` summarises runs already in
``--logs`` (one folder per configuration) instead of running them; a run cut short is summarised as far as it got.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks import adapt as adapt_bench
from benchmarks.report import envelope, run_cli, write_result


def parse_config(text: str) -> tuple[str, list[str]]:
    name, _, fields = text.partition(":")
    return name, [f for f in fields.split(",") if f]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.adapt_tune", description=__doc__.splitlines()[0])
    p.add_argument("--packages", nargs="+", default=["astroid", "tomlkit"])
    p.add_argument("--minutes", type=float, default=6.0)
    p.add_argument("--snapshots", type=float, nargs="*", default=[2.0, 4.0])
    p.add_argument("--holes", type=int, default=200)
    p.add_argument("--config", action="append", default=[], help="NAME or NAME:FIELD=VALUE,... (repeat)")
    p.add_argument("--logs", default="runs/tune", help="one folder of adapter logs per configuration")
    p.add_argument("--from-logs", action="store_true")
    p.add_argument("--note", default="")
    p.add_argument("--out", default="benchmarks/results/adapt-tune.json")
    args = p.parse_args(argv)
    reported = {"sqlglot", "lark", "dulwich"}
    if reported & {n.lower() for n in args.packages}:
        raise SystemExit(f"tune on development code bases, not on the reported ones ({', '.join(sorted(reported))})")
    result = envelope("adapt-tune", "benchmarks.adapt_tune", argv)
    result["codebases"], result["configs"] = args.packages, {}
    for name, fields in map(parse_config, args.config or ["base"]):
        logs = Path(args.logs) / name
        if not args.from_logs:
            adapt_bench.main(["--packages", *args.packages, "--jobs", str(len(args.packages)), "--minutes",
                              str(args.minutes), "--snapshots", *map(str, args.snapshots), "--holes", str(args.holes),
                              "--latency-rounds", "0", "--logs", str(logs), *(f"--set={f}" for f in fields),
                              "--out", str(logs / "adapt.json")])
        runs = {n: adapt_bench.summarise(adapt_bench.read_events(logs / f"{n}.jsonl")) for n in args.packages
                if (logs / f"{n}.jsonl").is_file()}
        result["configs"][name] = {"set": fields, "runs": runs}
    if args.note:
        result["note"] = args.note
    write_result(args.out, result)
    print(json.dumps({k: {n: [(q["minutes"], q["exact"], q.get("line_loss")) for q in r["points"]]
                          for n, r in c["runs"].items()} for k, c in result["configs"].items()}))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
