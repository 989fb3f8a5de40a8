"""The hole shapes latency is measured on, drawn from HumanEval-infilling: a whole line, the rest of a
line being typed, and a body of several lines after a block opener."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from benchmarks.tasks import Task, load_tasks

DATA_DIR = Path("../shared/data/human-eval-infilling")   # relative to the repository root
SINGLE_LINE = DATA_DIR / "HumanEval-SingleLineInfilling.jsonl.gz"
MULTI_LINE = DATA_DIR / "HumanEval-MultiLineInfilling.jsonl.gz"
HOLE_SETS = ("single-line", "typing", "multi-line")


def _problem(task: Task) -> str:
    """``SingleLineInfilling/HumanEval/12/L3`` -> ``HumanEval/12``."""
    parts = task.task_id.split("/")
    return "/".join(parts[1:3]) if len(parts) >= 3 else task.task_id


def one_per_problem(tasks: Sequence[Task], n: int) -> list[Task]:
    """Up to ``n`` tasks, the first of each problem, so the set spans many functions."""
    seen: set[str] = set()
    out: list[Task] = []
    for task in tasks:
        if _problem(task) not in seen:
            seen.add(_problem(task))
            out.append(task)
            if len(out) == n:
                break
    return out


def typing_task(task: Task) -> Task | None:
    """The same line, half typed: the cursor after the first half of its words, the rest of the line to fill."""
    line = task.canonical_solution.rstrip("\n")
    if "\n" in line or not line.strip():
        return None
    indent = len(line) - len(line.lstrip())
    cuts = [m.end() for m in re.finditer(r"\w+", line) if m.end() < len(line)]
    cuts = [c for c in cuts if c > indent]
    if not cuts:
        return None
    cut = cuts[len(cuts) // 2]
    return replace(task, task_id=task.task_id + "/typing", prompt=task.prompt + line[:cut],
                   suffix="\n" + task.suffix, canonical_solution=line[cut:])


def body_after_opener(task: Task) -> bool:
    """A hole of 2-6 lines right after a line ending in ':' (a body the server fills as a block)."""
    lines = task.canonical_solution.count("\n")
    return task.prompt.rstrip().endswith(":") and 2 <= lines <= 6


def hole_set(name: str, n: int, single: Path = SINGLE_LINE, multi: Path = MULTI_LINE) -> list[Task]:
    if name == "single-line":
        return one_per_problem(load_tasks(single), n)
    if name == "typing":
        typed = [t for t in map(typing_task, load_tasks(single)) if t is not None]
        return one_per_problem(typed, n)
    if name == "multi-line":
        return one_per_problem([t for t in load_tasks(multi) if body_after_opener(t)], n)
    raise ValueError(f"unknown hole set {name!r}; one of {', '.join(HOLE_SETS)}")
