"""A storm of mixed requests against a real ``diffusion-lsp``: crashes, unanswered requests, stale edits and memory.

Each operation is one of: an incremental edit (multi-byte text, CRLF, deletions), an inline
completion, a completion, a code action offer, or a resolve of an earlier offer (often after the
document changed, where the answer must be ContentModified, never an edit). Half the completion
requests are cancelled ($/cancelRequest). Up to ``--window`` requests are in flight. Resident memory
(VmRSS of the server's process tree) is read at each checkpoint once the requests in flight drained and
the server had ``--settle`` seconds of quiet (as between an editor's bursts of typing).

    python -m benchmarks.storm --requests 2000 --checkpoints 200 1000 2000   # the issue's figure
    python -m benchmarks.storm --requests 80 --checkpoints 40 80             # the CI budget
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

from benchmarks.lsp_client import LspClient, server_command
from benchmarks.report import envelope, model_info, run_cli, write_result
from benchmarks.serverstats import process_memory_mb
from benchmarks.storm_ops import CAPABILITIES, Storm, corpus

_RESULTS = Path(__file__).parent / "results"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.storm", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=2000, help="operations in all (edits count as one each)")
    p.add_argument("--checkpoints", type=int, nargs="+", default=[200, 1000, 2000],
                   help="read the server's memory after this many operations")
    p.add_argument("--window", type=int, default=4, help="requests in flight at most")
    p.add_argument("--cancel", type=float, default=0.5, help="share of completion requests cancelled")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", default="embedded")
    p.add_argument("--env", nargs="*", default=[], metavar="NAME=VALUE",
                   help="environment for the server (e.g. MALLOC_ARENA_MAX=2), to compare allocator settings")
    p.add_argument("--probe", metavar="JSONL", default=None,
                   help="run the server under benchmarks.memprobe, which appends allocator and object statistics "
                        "to JSONL at each checkpoint")
    p.add_argument("--settle", type=float, default=1.0,
                   help="seconds of quiet after the requests in flight drained, before memory is read")
    p.add_argument("--answer-timeout", type=float, default=120.0, help="seconds before a request counts as unanswered")
    p.add_argument("--out", default=str(_RESULTS / "storm.json"))
    return p.parse_args(argv)


def _command(args) -> list[str]:
    """The server's command line; its environment is this process' with ``--env`` applied."""
    os.environ.update(kv.split("=", 1) for kv in args.env)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    return [sys.executable, "-m", "benchmarks.memprobe", args.probe] if args.probe else server_command()


def run(args) -> dict:
    log = Path(args.out).with_suffix(".server.log")
    log.parent.mkdir(parents=True, exist_ok=True)
    client = LspClient(_command(args), stderr_path=log)
    try:
        client.request("initialize", {"processId": None, "rootUri": None, "capabilities": CAPABILITIES,
                                      "initializationOptions": {"model": args.model, "debounceMs": 0, "threads": 1},
                                      "clientInfo": {"name": "diffusion-lsp-storm"}})
        client.notify("initialized", {})
        client.wait_ready()
        storm = Storm(client, corpus(), random.Random(args.seed), args.window, args.cancel, args.answer_timeout)
        storm.warm_up()
        memory = [{"after": 0, **process_memory_mb(client.pid), **storm.probe(args.probe, 0)}]
        started = time.perf_counter()
        for checkpoint in sorted(set(args.checkpoints)):
            storm.run_until(checkpoint)
            storm.drain()
            time.sleep(args.settle)
            memory.append({"after": checkpoint, "elapsed_s": round(time.perf_counter() - started, 1),
                           **process_memory_mb(client.pid), **_engine_stats(client),
                           **storm.probe(args.probe, checkpoint)})
            print(f"storm: {checkpoint} operations, rss {memory[-1]['rss']} MiB", file=sys.stderr)
        storm.drain()
        crashed = client.proc.poll() is not None
    finally:
        client.close()
    return {"memory": memory, "growth": _growth(memory), "crashed": crashed, **storm.summary(),
            "server_log": log.name}


def _engine_stats(client) -> dict:
    stats = client.request("diffusion/stats", {})
    return {"engine": {k: stats.get(k) for k in ("jobs", "completed", "cancelled", "heap_trims")}}


def _growth(memory: list[dict]) -> dict:
    """RSS growth between consecutive checkpoints and between the first and the last one after 0."""
    points = [m for m in memory if m["after"] > 0]
    out = {f"{a['after']}->{b['after']}": round(100 * (b["rss"] - a["rss"]) / a["rss"], 2)
           for a, b in zip(points, points[1:])}
    if len(points) > 2:
        out[f"{points[0]['after']}->{points[-1]['after']}"] = round(
            100 * (points[-1]["rss"] - points[0]["rss"]) / points[0]["rss"], 2)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = {**envelope("storm", "benchmarks.storm", argv), "settings": vars(args), "model": model_info(args.model),
              **run(args)}
    write_result(args.out, result)
    bad = result["crashed"] or result["unanswered"] or result["stale"]
    print(f"storm: crashed={result['crashed']} unanswered={result['unanswered']} stale={result['stale']} "
          f"growth={result['growth']}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(run_cli(lambda: main()))
