"""The team server under load, and a replica killed mid-request.

    python -m benchmarks.team --editors 20 --fills 5 --out benchmarks/results/team.json

Load: ``--editors`` simulated editors, each a real client engine (context, validation, the remote backend) sending
``--fills`` one-line fills one after another (held-out one-line holes of ``benchmarks/data/code-lines.jsonl.gz``,
every language), against (1) one local engine shared by all of them (one model, jobs in turn), (2) a Ray Serve
team server on a local Ray cluster, ``--replicas`` replicas of the embedded model, batching on (``@serve.batch``,
``--max-batch``), (3) the same with batching off (batches of one). Per setup: fills per second, p50 / p95 latency
(submit to answer), the largest batch a replica ran.

Backend: the masked backend alone, ``B`` plans filled one by one against ``fill_many`` (what batching buys
without the clients, the HTTP hops and Ray's queueing around it).

Fault: against the Ray deployment, a long fill (drafts on) is started; at its first draft the replica serving it
(named by the stream's ``start`` event) is killed with SIGKILL. The fill is retried on the other replica or fails
with a clear error (never a partial or stale answer: the result must be a whole fill of the request sent); then
``--after`` further fills must all be answered while Ray restarts the replica.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import signal
import statistics
import threading
import time
import urllib.request
from pathlib import Path

from benchmarks.metrics import percentile
from benchmarks.report import envelope, model_info, run_cli, write_result

DATA = Path(__file__).parent / "data" / "code-lines.jsonl.gz"


def tasks(n: int) -> list[tuple[str, int, str]]:
    """``n`` one-line holes (document, cursor, language), the languages interleaved."""
    rows = [json.loads(line) for line in gzip.open(DATA, "rt", encoding="utf-8")]
    by_language: dict[str, list[dict]] = {}
    for row in rows:
        by_language.setdefault(row["language"], []).append(row)
    mixed = [r for group in zip(*by_language.values()) for r in group]
    return [(r["prompt"] + r["suffix"], len(r["prompt"]), r["language"]) for r in mixed[:n]]


def run_load(engines: list, work: list[tuple[str, int, str]], fills: int) -> dict:
    """Each engine (an editor) sends its ``fills`` one after another; all editors at once."""
    from engine import InfillRequest

    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(len(engines) + 1)

    def editor(i: int, engine) -> None:
        start.wait()
        for k in range(fills):
            text, offset, language = work[(i * fills + k) % len(work)]
            began = time.perf_counter()
            try:
                engine.infill_sync(InfillRequest(text, offset, language, key=f"editor-{i}"), timeout=600)
                with lock:
                    latencies.append(time.perf_counter() - began)
            except Exception as exc:  # noqa: BLE001 (counted, reported)
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=editor, args=(i, e)) for i, e in enumerate(engines)]
    for t in threads:
        t.start()
    start.wait()
    began = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    return {"fills": len(latencies), "errors": len(errors), "error_examples": errors[:3], "wall_s": round(wall, 2),
            "fills_per_s": round(len(latencies) / wall, 3),
            "p50_ms": round(1000 * statistics.median(latencies), 1) if latencies else None,
            "p95_ms": round(1000 * (percentile(latencies, 95) or 0.0), 1) if latencies else None}


def backend_batching(work: list[tuple[str, int, str]], sizes: tuple[int, ...] = (4, 8, 16), rounds: int = 3) -> dict:
    """The masked backend alone: ``B`` one-line plans (the text around each hole, 8 slots, 16 steps) filled one by
    one, against ``fill_many`` (one batched forward per step); the best of ``rounds``, same results either way."""
    from engine.backends.base import Control, FillPlan, HoleSpec
    from engine.backends.masked.backend import MaskedBackend
    from engine.config import LoadConfig

    backend = MaskedBackend.load(LoadConfig())
    plans = [FillPlan((text[max(0, offset - 600):offset], HoleSpec(8, stop_at_newline=True),
                       text[offset:offset + 200]), 16, 0.0) for text, offset, _ in work]
    out: dict[str, dict] = {}
    for size in sizes:
        batch = plans[:size]
        alone, together = [], []
        for _ in range(rounds):
            began = time.perf_counter()
            for plan in batch:
                backend._prefix = None
                backend.fill(plan, Control(lambda step: None))
            alone.append(time.perf_counter() - began)
            began = time.perf_counter()
            backend.fill_many(batch, [Control(lambda step: None) for _ in batch])
            together.append(time.perf_counter() - began)
        out[str(size)] = {"one_by_one_fills_per_s": round(size / min(alone), 2),
                          "batched_fills_per_s": round(size / min(together), 2),
                          "speedup": round(min(alone) / min(together), 2)}
    return out


def replica_stats(url: str, polls: int = 12) -> dict[str, dict]:
    """``/v1/stats`` of each replica that answered ``polls`` requests (the router spreads them)."""
    seen: dict[str, dict] = {}
    for _ in range(polls):
        with urllib.request.urlopen(url + "/v1/stats", timeout=30) as response:
            stats = json.loads(response.read())
        seen[stats["replica"]] = stats
    return seen


def client_engines(n: int, url: str | None):
    from engine import Engine, EngineConfig

    engines = []
    for _ in range(n):
        engine = Engine(EngineConfig.of(engine=url or "", min_confidence=0, engine_retries=3))
        engine.start().result(120)
        engines.append(engine)
    return engines


def fault(url: str, work: list[tuple[str, int, str]], after: int) -> dict:
    """Kill the replica serving a fill at its first draft; the fill must be retried or fail cleanly."""
    from engine import InfillRequest

    (engine,) = client_engines(1, url)
    text, offset, language = work[0]
    drafts: list = []
    first = threading.Event()

    def on_draft(draft) -> None:
        drafts.append(draft.step)
        first.set()
    began = time.perf_counter()
    job = engine.submit(InfillRequest(text, offset, language, steps=64, key="fault"), on_draft)
    first.wait(300)
    victim = engine.backend.replica
    pid = int(victim.rpartition(":")[2])
    os.kill(pid, signal.SIGKILL)
    killed_at_step = drafts[-1] if drafts else None
    outcome: dict = {"killed_replica": victim, "killed_at_step": killed_at_step}
    try:
        completion = job.future.result(600)
        fill = completion.fills[0] if completion.fills else None
        whole = fill is None or (0 <= fill.start <= offset <= fill.end <= len(text))
        outcome.update(result="answered", whole_fill_of_the_request=whole, steps=completion.steps)
    except Exception as exc:  # noqa: BLE001 (a clean failure is an allowed outcome)
        outcome.update(result="failed cleanly", error=f"{type(exc).__name__}: {exc}")
    outcome["seconds"] = round(time.perf_counter() - began, 2)
    outcome["retries"] = engine.stats()["remote_retries"]
    outcome["drafts_in_order"] = drafts == sorted(drafts)
    answered = 0
    for text2, offset2, language2 in work[1:after + 1]:
        try:
            engine.infill_sync(InfillRequest(text2, offset2, language2, key="after"), timeout=600)
            answered += 1
        except Exception as exc:  # noqa: BLE001 (counted)
            outcome.setdefault("after_errors", []).append(f"{type(exc).__name__}: {exc}")
    outcome.update(after_fills=after, after_answered=answered)
    engine.close()
    return outcome


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.team", description=__doc__.splitlines()[0])
    p.add_argument("--editors", type=int, default=20)
    p.add_argument("--fills", type=int, default=5, help="fills per editor")
    p.add_argument("--replicas", type=int, default=2)
    p.add_argument("--max-batch", type=int, default=8)
    p.add_argument("--num-cpus", type=int, default=2, help="CPUs of the local Ray cluster")
    p.add_argument("--after", type=int, default=10, help="fills sent after the kill")
    p.add_argument("--out", default="benchmarks/results/team.json")
    args = p.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch
    torch.set_num_threads(1)
    from engine.team.options import TeamOptions
    from engine.team.ray_app import start_local, stop_local

    work = tasks(args.editors * args.fills + args.after + 1)
    result = envelope("team", "benchmarks.team", argv)
    result.update(model=model_info("embedded"), settings={
        "editors": args.editors, "fills_per_editor": args.fills, "replicas": args.replicas,
        "max_batch": args.max_batch, "ray_cpus": args.num_cpus, "tasks": str(DATA.name)})
    setups: dict[str, dict] = {}
    result["backend_batching"] = backend_batching(work)
    print("backend", result["backend_batching"], flush=True)

    local = client_engines(1, None)
    run_load(local, work, 1)  # warm-up
    setups["one local engine"] = run_load(local * args.editors, work, args.fills)
    local[0].close()
    print("local", setups["one local engine"], flush=True)

    for name, batch in (("Ray Serve, batching on", args.max_batch), ("Ray Serve, batching off", 1)):
        options = TeamOptions(replicas=args.replicas, num_cpus=args.num_cpus / (args.replicas + 1), max_batch=batch)
        url = start_local(options, num_cpus=args.num_cpus)
        engines = client_engines(args.editors, url)
        run_load(engines[:args.replicas * 2], work, 1)  # warm-up: both replicas have run a fill
        setups[name] = run_load(engines, work, args.fills)
        stats = replica_stats(url)
        setups[name]["largest_batch"] = max(s["largest_batch"] for s in stats.values())
        setups[name]["replicas_seen"] = len(stats)
        print(name, setups[name], flush=True)
        for engine in engines:
            engine.close()
        if batch == args.max_batch:
            result["fault"] = fault(url, work, args.after)
            print("fault", result["fault"], flush=True)
        stop_local()
    result["setups"] = setups
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_cli(main))
