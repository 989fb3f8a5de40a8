"""One-line holes: the "Fill holes" code action on a stub line against a cursor fill at the same place.

Each hole of a development set in the HumanEval-infilling schema whose ``canonical_solution`` is one line (e.g.
``runs/conf/extra-dev.jsonl``, held-out corpus lines in five languages) is filled twice through the engine the server
runs (``Engine.infill_sync``: ``engine.serve``, the whole-document check and the language's decoding included):

- action: the line replaced by a stub line of its language (``benchmarks.action_functions.STUB_LINES``, one-line
  stubs in turn; the next one where the survey finds no hole on the line), the survey at a cursor on the stub (as
  the server's codeAction does) and "Fill N holes" run on what it found; the fill offered for the stub's hole is
  scored.
- cursor: the line left out and an inline completion asked for at its place (``benchmarks.infill``'s document).

Scored per language: offered, exactly right (the expected line, whitespace-normalized: ``metrics.exact_match``),
junk (offered, wrong, and sharing under half its tokens with the expected line: ``actions.similarity`` < 0.5).

    python -m benchmarks.onehole --data runs/conf/extra-dev.jsonl --limit 100 --threads 1 \
        --out benchmarks/results/onehole-dev.json

Development sets only: never ``benchmarks/data/code-lines.jsonl.gz``, ``action-functions.jsonl.gz`` or HumanEval.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict, replace

from benchmarks.action_functions import STUB_LINES
from benchmarks.actions import similarity
from benchmarks.infill import engine_args, engine_config
from benchmarks.metrics import exact_match, syntax_valid
from benchmarks.progress import progress
from benchmarks.report import envelope, model_info, run_cli, write_result
from benchmarks.tasks import Task, load_tasks

JUNK_SIMILARITY = 0.5
# one-line stubs only (the two-line Python TODO + pass is a body, not a line)
ONE_LINE_STUBS = {lang: tuple(s for s in stubs if "\n" not in s) for lang, stubs in STUB_LINES.items()}
ONE_LINE_STUBS["python"] = ("pass", "# TODO: implement", "...")


def one_line(task: Task) -> bool:
    line = task.canonical_solution
    return line.endswith("\n") and line.count("\n") == 1 and bool(line.strip()) \
        and task.prompt.endswith("\n") and task.language in ONE_LINE_STUBS


def interleaved(tasks: list[Task], limit: int | None) -> list[Task]:
    """The tasks with the languages taken in turn (the first ``limit``), so a limit keeps the mix."""
    by: dict[str, list[Task]] = {}
    for t in tasks:
        by.setdefault(t.language, []).append(t)
    out: list[Task] = []
    queues = [list(reversed(v)) for _, v in sorted(by.items())]
    while any(queues) and (limit is None or len(out) < limit):
        for q in queues:
            if q and (limit is None or len(out) < limit):
                out.append(q.pop())
    return out


def stubbed(task: Task, i: int):
    """(document, stub, hole) for the task's line replaced by a stub line the survey finds as a hole, trying the
    language's stubs from the ``i``-th; None when no stub there is a hole (e.g. a line outside any function)."""
    from engine.targets import survey

    line = task.canonical_solution
    indent = line[:len(line) - len(line.lstrip(" \t"))]
    stubs = ONE_LINE_STUBS[task.language]
    lo = len(task.prompt)
    for k in range(len(stubs)):
        stub = stubs[(i + k) % len(stubs)]
        text = task.prompt + indent + stub + "\n" + task.suffix
        if not syntax_valid(text, task.language_id):
            continue
        cursor = lo + len(indent) + 1
        found = survey(text, task.language_id, cursor, cursor)
        mine = [b for b in found.blanks if b.start <= lo + len(indent) and b.end >= lo + len(indent) + len(stub)]
        if mine:
            return text, stub, found, mine[0]
    return None


def score(offered: str | None, expected: str) -> dict:
    if offered is None:
        return {"offered": None, "exact": False, "junk": False}
    exact = exact_match(offered, expected)
    return {"offered": offered, "exact": exact,
            "junk": not exact and similarity(offered, expected) < JUNK_SIMILARITY}


def action_case(engine, task: Task, i: int, options) -> dict:
    from engine import EngineError
    from engine.requests import FillRequest

    made = stubbed(task, i)
    if made is None:
        return {"hole": False, **score(None, task.canonical_solution)}
    text, stub, found, hole = made
    request = FillRequest(text, task.language_id, found.blanks, options=options)
    t0 = time.perf_counter()
    try:
        c = engine.infill_sync(request)
    except EngineError as e:
        return {"hole": True, "stub": stub, "error": str(e), **score(None, task.canonical_solution)}
    ms = round((time.perf_counter() - t0) * 1000)
    fill = next((f for f in c.fills if f.start == hole.start and f.end == hole.end), None)
    offered = None
    if fill is not None:
        offered = fill.text + ("" if fill.text.endswith("\n") else "\n")
    return {"hole": True, "stub": stub, "holes": len(found.blanks), "unsure": c.unsure, "rejected": c.rejected,
            "ms": ms, **score(offered, task.canonical_solution)}


def cursor_case(engine, task: Task) -> dict:
    from engine import EngineError, InfillRequest

    from benchmarks.fillers import apply_edits, make_fill

    t0 = time.perf_counter()
    try:
        c = engine.infill_sync(InfillRequest(text=task.text, offset=task.offset, language=task.language_id))
    except EngineError as e:
        return {"error": str(e), **score(None, task.canonical_solution)}
    ms = round((time.perf_counter() - t0) * 1000)
    if not c.fills:
        return {"ms": ms, **score(None, task.canonical_solution)}
    document = apply_edits(task.text, [(f.start, f.end, f.text) for f in c.fills])
    return {"ms": ms, **score(make_fill(task, document, c.text, elapsed_ms=0.0).completion, task.canonical_solution)}


def tally(rows: list[dict]) -> dict:
    n = len(rows)
    offered = sum(r["offered"] is not None for r in rows)
    exact = sum(r["exact"] for r in rows)
    return {"n": n, "offered": offered, "exact": exact, "junk": sum(r["junk"] for r in rows),
            "exact_of_offered": round(exact / offered, 4) if offered else None}


def summary(records: list[dict]) -> dict:
    out: dict = {}
    for way in ("action", "cursor"):
        rows = [r[way] for r in records]
        out[way] = tally(rows)
        if way == "action":
            out[way]["no_hole"] = sum(not r["hole"] for r in rows)
            out[way]["withheld_by_gate"] = sum(bool(r.get("unsure")) for r in rows)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.onehole", description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="a development set (HumanEval-infilling schema, any language)")
    p.add_argument("--out", required=True, help="the result JSON")
    p.add_argument("--limit", type=int, default=None, help="the first N one-line holes (languages in turn)")
    p.add_argument("--skip-cursor", action="store_true", help="the action fills only")
    engine_args(p)
    args = p.parse_args(argv)
    from engine import Engine

    tasks = interleaved([t for t in load_tasks(args.data) if one_line(t)], args.limit)
    if not tasks:
        print(f"no one-line holes in {args.data}", file=sys.stderr)
        return 2
    config = engine_config(args)
    options = None
    if args.min_confidence == 0:   # the quality gate off for the actions too (FillOptions.min_confidence = 0)
        options = replace(config.fill, min_confidence=0.0)
    engine = Engine(config)
    engine.start().result()
    records = []
    try:
        for i, t in enumerate(progress(tasks, len(tasks), "onehole")):
            action = action_case(engine, t, i, options)
            cursor = {"skipped": True, **score(None, t.canonical_solution)} if args.skip_cursor \
                else cursor_case(engine, t)
            records.append({"task_id": t.task_id, "language": t.language, "expected": t.canonical_solution,
                            "action": action, "cursor": cursor})
    finally:
        engine.close()
    result = envelope("onehole", "benchmarks.onehole", argv)
    result.update({"data": args.data, "limit": args.limit, "settings": asdict(config),
                   "model": model_info(args.model, config.load), **summary(records),
                   "languages": {lang: summary([r for r in records if r["language"] == lang])
                                 for lang in sorted({r["language"] for r in records})},
                   "records": records})
    write_result(args.out, result)
    for lang, s in [("all", result)] + sorted(result["languages"].items()):
        print(f"{lang:11} action: {s['action']}\n{'':11} cursor: {s['cursor']}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
