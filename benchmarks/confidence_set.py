"""Every valid fill the engine considers for each hole, with its features and whether it is right, as JSONL.

The model runs once per hole; fitting the confidence model and drawing its curves (``benchmarks.calibrate``)
then read this file only. Nothing is withheld while collecting (``min_confidence`` 0), and every fill the
engine tried (one per length) is kept, so any choice rule can be replayed offline:

    python -m benchmarks.stdlib_lines --limit 1200 --out /tmp/dev-lines.jsonl
    python -m benchmarks.confidence_set --data /tmp/dev-lines.jsonl --out /tmp/dev-considered.jsonl
    python -m benchmarks.confidence_set --data ../shared/data/human-eval-infilling/HumanEval-SingleLineInfilling.jsonl.gz \
        --tests --out /tmp/humaneval-considered.jsonl

An existing output is continued (tasks already in it are skipped), so a long run can be stopped and resumed.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from benchmarks.fillers import apply_edits, make_fill
from benchmarks.infill import engine_args, engine_config
from benchmarks.metrics import exact_match
from benchmarks.progress import progress
from benchmarks.report import run_cli
from benchmarks.sandbox import Limits, check_program, run_program
from benchmarks.tasks import Task, load_tasks, typed_tasks


def considered_record(task: Task, completion, run_tests: bool, limits: Limits, backend=None) -> dict:
    """One hole: the engine's choice and every valid fill it considered, each scored against the reference
    (``backend``: also the costlier signals ``engine.confidence.model_signals`` computes with the model)."""
    from engine.confidence import assess, model_signals
    from engine.languages import spec_for

    spec = spec_for(task.language_id)
    fills = []
    for fill, feats in assess(completion.considered, task.text, spec, completion.kind, None,
                              in_workspace=completion.workspace_counted):
        document = apply_edits(task.text, [(fill.start, fill.end, fill.text)])
        done = make_fill(task, document, fill.text, elapsed_ms=0.0)
        passed = None
        if run_tests and task.has_test:
            program = check_program(document, "", "", task.test, task.entry_point)
            passed = run_program(program, limits).passed
        fills.append({"text": fill.text, "start": fill.start, "end": fill.end, "copied": fill.copied,
                      "common": fill.common, "workspace": fill.workspace, "neighbour": fill.neighbour,
                      "between": fill.between, "tail": fill.tail,
                      "confidences": list(fill.confidences), "features": feats,
                      "exact": exact_match(done.completion, task.canonical_solution), "passed": passed})
        if backend is not None:
            fills[-1]["signals"] = model_signals(backend, spec, task.text, fill)
    chosen = completion.fills[0].text if completion.fills else None
    return {"task_id": task.task_id, "language": task.language, "kind": completion.kind.value, "chosen": chosen,
            "fills": fills, "tested": run_tests and task.has_test}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.confidence_set", description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="tasks in the HumanEval-infilling schema (JSONL or .gz)")
    p.add_argument("--out", required=True, help="the JSONL to write (continued when it exists)")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--typed", action="store_true",
                   help="each hole as if the first characters of its line were typed (benchmarks.tasks.typed)")
    p.add_argument("--auto-close", action="store_true",
                   help="with --typed: the line typed up to its first opening bracket or quote, whose closer "
                        "the editor has put after the cursor (benchmarks.tasks.auto_closed)")
    p.add_argument("--mid-word", action="store_true",
                   help="with --typed --auto-close: the fill's first 2-3 characters typed too when it starts with a "
                        "word (benchmarks.tasks.mid_word_closed)")
    p.add_argument("--line-end", action="store_true",
                   help="with --typed: a word typed in the middle of an existing line, nothing after the cursor "
                        "(benchmarks.tasks.mid_line_end)")
    p.add_argument("--tests", action="store_true", help="run each fill's tests in the sandbox (tasks with tests)")
    p.add_argument("--workspace-corpus", default=None, metavar="DIR",
                   help="a hole's workspace is the other files of its package in this code corpus "
                        "(benchmarks.workspaces; holes from held-out corpus files)")
    p.add_argument("--workspace-packages", action="store_true",
                   help="a hole's workspace is the other files of its Debian package (holes of "
                        "benchmarks.other_lines; benchmarks.workspaces.PackageWorkspaces)")
    p.add_argument("--signals", action="store_true",
                   help="also record each fill's model signals (score_text likelihood, re-noising stability)")
    engine_args(p)
    args = p.parse_args(argv)
    from engine import Engine, InfillRequest
    from engine.model_text import ModelText

    out = Path(args.out)
    done = set()
    if out.exists():
        done = {json.loads(line)["task_id"] for line in out.read_text(encoding="utf-8").splitlines() if line.strip()}
    tasks = load_tasks(args.data, args.limit)
    tasks = typed_tasks(tasks, auto_close=args.auto_close, mid_word=args.mid_word, line_end=args.line_end) \
        if args.typed else tasks
    tasks = [t for t in tasks if t.task_id not in done]
    workspaces = None
    if args.workspace_corpus:
        from benchmarks.workspaces import CorpusWorkspaces

        workspaces = CorpusWorkspaces(args.workspace_corpus)
        tasks = workspaces.grouped(tasks)
    elif args.workspace_packages:
        from benchmarks.workspaces import PackageWorkspaces

        workspaces = PackageWorkspaces()
        tasks = workspaces.grouped(tasks)
    engine = Engine(engine_config(args, min_confidence=0.0))
    engine.start().result()
    limits = Limits()
    try:
        with out.open("a", encoding="utf-8") as f:
            for task in progress(tasks, len(tasks), "considered"):
                workspace = workspaces.key(task) if workspaces is not None else None
                c = engine.infill_sync(InfillRequest(text=task.text, offset=task.offset, language=task.language_id,
                                                     workspace=workspace,
                                                     path=workspaces.path(task) if workspaces is not None else None))
                # the engine thread is idle between jobs: the signals run on the same backend here
                backend = ModelText(engine.backend) if args.signals and engine.backend is not None else None
                f.write(json.dumps(considered_record(task, c, args.tests, limits, backend)) + "\n")
                f.flush()
    finally:
        engine.close()
    print(f"{len(tasks)} holes -> {out} (settings: {json.dumps(asdict(engine_config(args)))})")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
