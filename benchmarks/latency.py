"""Latency benchmark through a real ``diffusion-lsp`` process: cold and warm round trips per hole shape,
the server's overhead over the engine, and its resident memory.

    python -m benchmarks.latency --out benchmarks/results/latency.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from benchmarks.fillers import AUTOMATIC, EngineFiller, LspFiller, fill_over_lsp, uri_for
from benchmarks.holesets import HOLE_SETS, MULTI_LINE, SINGLE_LINE, hole_set
from benchmarks.infill import engine_args, engine_config, server_options
from benchmarks.lsp_client import LspClient, LspError
from benchmarks.metrics import latency_summary, percentile, rate
from benchmarks.progress import progress
from benchmarks.report import default_out, envelope, model_info, run_cli, write_result
from benchmarks.serverstats import process_memory_mb

# Issue 2's targets for single-line inline completion on the embedded model (2-core CPU).
TARGETS = {"p50_ms": 150.0, "p95_ms": 300.0, "overhead_p50_ms": 5.0, "rss_mb": 1024.0}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.latency", description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(default_out("latency")))
    p.add_argument("--n", type=int, default=40, help="warm requests per hole shape (one per HumanEval problem)")
    p.add_argument("--cold-runs", type=int, default=3, help="fresh server processes per hole shape")
    p.add_argument("--holes", nargs="+", choices=HOLE_SETS, default=list(HOLE_SETS))
    p.add_argument("--single-line-data", default=str(SINGLE_LINE))
    p.add_argument("--multi-line-data", default=str(MULTI_LINE))
    p.add_argument("--workspace", default=None, metavar="DIR",
                   help="the servers' workspace folder (rootUri; its lines counted before timing starts) and the "
                        "in-process engine's (benchmarks.workspaces.FolderWorkspace)")
    engine_args(p)
    return p.parse_args(argv)


def options(args) -> dict:
    return {**server_options(args), "debounceMs": 0, "drafts": False}


def cold_runs(args, tasks, log: Path) -> list[dict]:
    """Fresh servers: spawn -> initialize answered -> model ready -> first completion answered."""
    runs = []
    for i in range(args.cold_runs):
        task = tasks[-(i + 1)]   # tasks the warm phase reaches last, if at all
        start = time.perf_counter()
        client = LspClient(stderr_path=log)
        try:
            root = Path(args.workspace).resolve().as_uri() if args.workspace else None
            client.initialize(options(args), root_uri=root)
            initialized = time.perf_counter()
            client.wait_ready()
            ready = time.perf_counter()
            fill = fill_over_lsp(client, task, uri_for(task, 0), AUTOMATIC)
        finally:
            client.close()
        runs.append({"initialize_ms": (initialized - start) * 1000, "ready_ms": (ready - start) * 1000,
                     "first_ms": fill.elapsed_ms, "task_id": task.task_id})
    return runs


def warm_runs(args, sets: dict, log: Path) -> tuple[dict, dict, dict]:
    """One server for every shape, and the same engine in this process: per task, one request through
    the server and one in-process fill, alternating which goes first, so both see the same machine load.
    Each request opens a new document (no cache can answer it); two untimed tasks warm both up."""
    lsp: dict = {name: [] for name in sets}
    engine: dict = {name: [] for name in sets}
    from benchmarks.workspaces import FolderWorkspace

    folder = FolderWorkspace(args.workspace) if args.workspace else None
    with LspFiller(options(args), stderr_path=log, trigger=AUTOMATIC, root=args.workspace) as server, \
            EngineFiller(engine_config(args), workspaces=folder) as local:
        for task in next(iter(sets.values()))[:2]:
            server.fill(task)
            local.fill(task)
        i = 0
        for name, tasks in sets.items():
            for task in progress(tasks, len(tasks), f"warm {name}"):
                first, second = (server, local) if i % 2 == 0 else (local, server)
                a, b = first.fill(task), second.fill(task)
                lsp[name].append(a if first is server else b)
                engine[name].append(b if first is server else a)
                i += 1
        memory = process_memory_mb(server.client.pid)
    return lsp, engine, memory


def overhead(lsp_fills, engine_fills) -> dict:
    """Round trip minus engine time: per request from the server's own report when it gives one,
    else paired with the in-process engine time for the same task, measured right beside it."""
    reported = [f.elapsed_ms - f.engine_ms for f in lsp_fills if f.engine_ms is not None]
    if reported and len(reported) == len(lsp_fills):
        diffs, method = reported, "server-reported engine time"
    else:
        diffs = [a.elapsed_ms - b.engine_ms for a, b in zip(lsp_fills, engine_fills) if b.engine_ms is not None]
        method = "paired with in-process engine time"
    summary = latency_summary(diffs)
    return {"method": method, "p50": summary["p50"], "p95": summary["p95"], "mean": summary["mean"]}


def shape_result(lsp_fills, engine_fills, cold) -> dict:
    same = [a.completion == b.completion for a, b in zip(lsp_fills, engine_fills)]
    return {
        "n": len(lsp_fills),
        "cold_first_ms": latency_summary([c["first_ms"] for c in cold]),
        "warm_ms": latency_summary([f.elapsed_ms for f in lsp_fills]),
        "engine_ms": latency_summary([f.engine_ms for f in engine_fills if f.engine_ms is not None]),
        "engine_wall_ms": latency_summary([f.elapsed_ms for f in engine_fills]),
        "overhead_ms": overhead(lsp_fills, engine_fills),
        "empty": rate([f.completion == "" for f in lsp_fills]),
        "same_as_engine": rate(same),
        "kinds": sorted({f.kind for f in engine_fills if f.kind}),
        "forwards": percentile([f.forwards for f in engine_fills if f.forwards is not None], 50),
        "requests": [{"round_trip_ms": round(a.elapsed_ms, 2), "engine_ms": b.engine_ms, "forwards": b.forwards,
                      "kind": b.kind, "empty": a.completion == ""} for a, b in zip(lsp_fills, engine_fills)],
    }


def targets(result: dict) -> dict:
    """Issue 2's targets, judged on the single-line shape."""
    single = result["holes"].get("single-line")
    if not single:
        return {}
    measured = {"p50_ms": single["warm_ms"]["p50"], "p95_ms": single["warm_ms"]["p95"],
                "overhead_p50_ms": single["overhead_ms"]["p50"], "rss_mb": result["memory_mb"]["peak"]}
    return {k: {"target": TARGETS[k], "measured": v, "met": v is not None and v <= TARGETS[k]}
            for k, v in measured.items()}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sets = {name: hole_set(name, args.n, args.single_line_data, args.multi_line_data) for name in args.holes}
    result = envelope("latency", "benchmarks.latency", argv)
    result["model"] = model_info(args.model, engine_config(args).load)
    result["settings"] = {**asdict(engine_config(args)), **options(args), "triggerKind": "automatic",
                          "workspace": Path(args.workspace).resolve().name if args.workspace else None}
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        log = Path(tmp) / "server.log"
        try:
            cold = {name: cold_runs(args, tasks, log) for name, tasks in sets.items()}
            lsp, engine, memory = warm_runs(args, sets, log)
        except LspError as e:
            tail = log.read_text(errors="replace").splitlines()[-30:] if log.exists() else []
            print(f"latency: {e}\n--- server stderr (tail) ---\n" + "\n".join(tail), file=sys.stderr)
            return 1
    every_cold = [c for runs in cold.values() for c in runs]
    result["startup_ms"] = {"initialize": latency_summary([c["initialize_ms"] for c in every_cold]),
                            "ready": latency_summary([c["ready_ms"] for c in every_cold])}
    result["memory_mb"] = memory
    result["holes"] = {name: shape_result(lsp[name], engine[name], cold[name]) for name in sets}
    result["overhead_all_ms"] = overhead([f for n in sets for f in lsp[n]], [f for n in sets for f in engine[n]])
    result["targets"] = targets(result)
    write_result(args.out, result)
    for name, r in result["holes"].items():
        print(f"{name:12s} warm p50 {r['warm_ms']['p50']} ms p95 {r['warm_ms']['p95']} ms | cold first "
              f"p50 {r['cold_first_ms']['p50']} ms | engine p50 {r['engine_ms']['p50']} ms | overhead p50 "
              f"{r['overhead_ms']['p50']} ms")
    print(f"server overhead over all shapes: {result['overhead_all_ms']}")
    print(f"server memory: {memory}")
    for k, t in result["targets"].items():
        print(f"target {k}: {t['measured']} <= {t['target']}: {'met' if t['met'] else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
