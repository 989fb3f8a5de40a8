"""The quality loop shared by the benchmarks: fill every task, run its tests in the sandbox, score, summarise."""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.fillers import Fill
from benchmarks.metrics import exact_match, latency_summary, mean, rate, syntax_valid
from benchmarks.progress import progress
from benchmarks.sandbox import ExecResult, Limits, check_program, run_program
from benchmarks.tasks import Task


def fill_all(filler, tasks: Sequence[Task], label: str = "fill", warmup: int = 1) -> list[Fill]:
    """Fill every task in order; the first ``warmup`` tasks are filled once beforehand, untimed."""
    for task in tasks[:warmup]:
        filler.fill(task)
    return list(progress((filler.fill(t) for t in tasks), len(tasks), label))


def fill_interleaved(fillers: dict, tasks: Sequence[Task], label: str = "fill", warmup: int = 1) -> dict:
    """Every filler on every task, task by task, rotating which filler goes first: a change in the
    machine's load during the run then touches every configuration alike."""
    names = list(fillers)
    for task in tasks[:warmup]:
        for name in names:
            fillers[name].fill(task)
    fills: dict[str, list[Fill]] = {name: [] for name in names}
    for i, task in enumerate(progress(tasks, len(tasks), label)):
        for name in names[i % len(names):] + names[:i % len(names)]:
            fills[name].append(fillers[name].fill(task))
    return fills


def check_all(tasks: Sequence[Task], fills: Sequence[Fill], limits: Limits = Limits(),
              workers: int | None = None, label: str = "tests", cache: dict | None = None) -> list[ExecResult | None]:
    """Run each tested task's check program (the filled document, its test, the check call); None when untested.
    ``cache`` (shared between calls) reuses the result of a program already run."""
    cache = {} if cache is None else cache

    def run(pair: tuple[Task, Fill]) -> ExecResult | None:
        task, fill = pair
        if not task.has_test:
            return None
        program = check_program(fill.document, "", "", task.test, task.entry_point)
        key = hashlib.sha256(program.encode()).hexdigest()
        if key not in cache:
            cache[key] = run_program(program, limits)
        return cache[key]

    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        return list(progress(pool.map(run, zip(tasks, fills)), len(tasks), label))


def score(task: Task, fill: Fill, result: ExecResult | None) -> dict:
    """One task's record: the figures that summaries are built from."""
    return {
        "task_id": task.task_id,
        "exact_match": exact_match(fill.completion, task.canonical_solution),
        "syntax_valid": syntax_valid(fill.document, task.language_id),
        "passed": None if result is None else result.passed,
        "status": None if result is None else result.status,
        "detail": None if result is None else result.detail,
        "network": None if result is None else result.network,
        "isolation": None if result is None else result.isolation,
        "empty": fill.completion == "",
        "elapsed_ms": round(fill.elapsed_ms, 2),
        "engine_ms": None if fill.engine_ms is None else round(fill.engine_ms, 2),
        "steps": fill.steps, "forwards": fill.forwards, "tokens": fill.tokens, "kind": fill.kind,
        "rejected": fill.rejected,
        "context_edited": fill.context_edited, "error": fill.error, "completion": fill.completion,
    }


def summarise(records: Sequence[dict]) -> dict:
    """The headline figures of a run (see benchmarks/README.md for each field)."""
    tested = [r["passed"] for r in records if r["passed"] is not None]
    known = lambda key: [r[key] for r in records if r[key] is not None]  # noqa: E731
    tokens, forwards = sum(known("tokens")), sum(known("forwards"))
    engine = known("engine_ms")
    return {
        "n": len(records),
        "tested": len(tested),
        "pass_at_1": rate(tested),
        "exact_match": rate([r["exact_match"] for r in records]),
        "syntax_valid": rate([r["syntax_valid"] for r in records]),
        # of the fills actually offered (non-empty): the engine's validation at work
        "syntax_valid_offered": rate([r["syntax_valid"] for r in records if not r["empty"]]),
        "offered": sum(1 for r in records if not r["empty"]),
        "rejected_candidates": sum(r.get("rejected") or 0 for r in records),
        "empty": rate([r["empty"] for r in records]),
        "errors": sum(1 for r in records if r["error"]),
        "context_edited": sum(1 for r in records if r["context_edited"]),
        "latency_ms": latency_summary([r["elapsed_ms"] for r in records]),
        "engine_ms": latency_summary(engine) if engine else None,
        "steps": mean(known("steps")),
        "forwards": mean(known("forwards")),
        "tokens": mean(known("tokens")),
        "tokens_per_forward": tokens / forwards if forwards else None,
        "kinds": dict(Counter(r["kind"] for r in records if r["kind"])),
        "exec_status": dict(Counter(r["status"] for r in records if r["status"])),
        "sandbox_network": sorted({r["network"] for r in records if r["network"]}),
        "sandbox_isolation": sorted({r["isolation"] for r in records if r.get("isolation")}),
    }


def evaluate(filler, tasks: Sequence[Task], limits: Limits = Limits(), workers: int | None = None,
             run_tests: bool = True, label: str = "fill") -> list[dict]:
    """Fill all tasks first, then test them, so that test processes never compete with timed fills."""
    fills = fill_all(filler, tasks, label)
    results = check_all(tasks, fills, limits, workers) if run_tests else [None] * len(tasks)
    return [score(t, f, r) for t, f, r in zip(tasks, fills, results)]


def write_jsonl(path: str | Path, rows: Sequence[dict]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
