"""How often the engine's own checks refuse the right fill: the engine with a backend whose only fill is the hole's
text (the canonical solution, in the forms a model may write it: with or without its line break and indentation).

Everything after the model runs as in the server: the hole's shape, `tidy`, the stutter and repeat rules, the window's
and the whole document's parse, the returns, the brackets, the names rule (with ``--workspace-corpus`` a name the
package defines in another file counts as defined), the calibrated confidence with ``minConfidence`` 0. A hole whose
offered fill is not the right one is a refusal: ``none`` (nothing offered) or ``other`` (the engine changed it). No
model forward runs (the embedded model's tokenizer counts the context), so a set of 1,500 holes takes a few minutes.

    python -m benchmarks.refusals --data runs/conf/extra-dev.jsonl [--typed [--auto-close | --mid-line ...]]
        [--workspace-corpus runs/corpus] --out O

Development sets only: what it finds is a check to fix, measured again with the model (``benchmarks.infill``).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from .fillers import apply_edits, make_fill
from .infill import engine_args, engine_config
from .metrics import exact_match
from .report import envelope, write_result
from .tasks import Task, load_tasks, typed_tasks


class RightFill:
    """A backend whose only fill is ``truth`` (set per hole); the loaded backend counts tokens and holds the
    model directory (the calibration). It scores no options: the document's lines are not offered."""

    scores_options = False

    def __init__(self, real):
        self.real = real
        self.truth = ""

    def __getattr__(self, name: str):
        return getattr(self.real, name)

    def fill(self, plan, control):
        from engine.backends.base import Candidate, FillResult

        forms: list[str] = []
        for form in (self.truth, self.truth.rstrip("\n"), self.truth.strip("\n").lstrip(" \t"), self.truth.strip()):
            if form and form not in forms:
                forms.append(form)
        n = len(plan.holes)
        candidates = []
        for form in forms:
            pieces = max(1, len(form) // 4)
            spans = tuple((i * 4, len(form) if i == pieces - 1 else i * 4 + 4) for i in range(pieces))
            candidates.append(Candidate((form,) * n, ((0.99,) * pieces,) * n, (spans,) * n, -0.01))
        return FillResult(tuple(candidates), 1, 1, 1, (None,) * len(plan.options))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.refusals", description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="JSONL or JSONL.gz in the HumanEval-infilling schema")
    p.add_argument("--out", required=True, help="the result JSON")
    p.add_argument("--limit", type=int, default=None, help="the first N tasks only")
    p.add_argument("--typed", action="store_true", help="as benchmarks.infill --typed")
    p.add_argument("--auto-close", action="store_true", help="as benchmarks.infill --auto-close (with --typed)")
    p.add_argument("--unended", action="store_true", help="as benchmarks.infill --unended")
    p.add_argument("--mid-word", action="store_true", help="as benchmarks.infill --mid-word")
    p.add_argument("--mid-line", action="store_true", help="as benchmarks.infill --mid-line (with --typed)")
    p.add_argument("--header", action="store_true", help="as benchmarks.infill --header")
    p.add_argument("--line-end", action="store_true", help="as benchmarks.infill --line-end (with --typed)")
    p.add_argument("--workspace-corpus", default=None, metavar="DIR",
                   help="a hole's workspace is the other files of its package in this code corpus")
    engine_args(p)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from engine import Engine, EngineError, InfillRequest
    from engine.backends import load_backend

    args = parse_args(argv)
    tasks: list[Task] = load_tasks(args.data, args.limit)
    if args.typed:
        tasks = typed_tasks(tasks, auto_close=args.auto_close, mid_word=args.mid_word, mid_line=args.mid_line,
                            line_end=args.line_end, header=args.header, unended=args.unended)
    if not tasks:
        print(f"no tasks from {args.data}", file=sys.stderr)
        return 2
    workspaces = None
    if args.workspace_corpus:
        from .workspaces import CorpusWorkspaces

        workspaces = CorpusWorkspaces(args.workspace_corpus)
        tasks = workspaces.grouped(tasks)
    backend: list[RightFill] = []

    def load(config):
        backend.append(RightFill(load_backend(config)))
        return backend[0]

    engine = Engine(engine_config(args, min_confidence=0.0), backend_loader=load)
    engine.start().result()
    counts: Counter[tuple[str, str]] = Counter()
    refused: list[dict[str, str | None]] = []
    try:
        for task in tasks:
            backend[0].truth = task.canonical_solution
            request = InfillRequest(text=task.text, offset=task.offset, language=task.language_id,
                                    workspace=workspaces.key(task) if workspaces else None,
                                    path=workspaces.path(task) if workspaces else None)
            try:
                c = engine.infill_sync(request)
            except EngineError as exc:
                counts[(task.language, "error")] += 1
                refused.append({"task_id": task.task_id, "kind": "error", "offered": str(exc),
                                "right": task.canonical_solution})
                continue
            document = apply_edits(task.text, [(f.start, f.end, f.text) for f in c.fills])
            offered = make_fill(task, document, c.text, elapsed_ms=0.0).completion
            kind = "right" if exact_match(offered, task.canonical_solution) else "other" if c.fills else "none"
            counts[(task.language, kind)] += 1
            if kind != "right":
                refused.append({"task_id": task.task_id, "kind": kind, "offered": offered if c.fills else None,
                                "right": task.canonical_solution})
    finally:
        engine.close()
    languages = sorted({lang for lang, _ in counts})
    per = {lang: {kind: counts[(lang, kind)] for kind in ("right", "none", "other", "error")} for lang in languages}
    result = envelope("refusals", "benchmarks.refusals", argv)
    result.update({"data": args.data, "n": len(tasks), "typed": args.typed,
                   "variant": [name for name in ("auto_close", "mid_word", "mid_line", "header", "line_end")
                               if getattr(args, name)],
                   "refused": len(refused), "languages": per, "records": refused})
    write_result(args.out, result)
    print(f"{args.data}: {len(refused)} of {len(tasks)} right fills refused")
    for lang in languages:
        n = sum(per[lang].values())
        print(f"  {lang}: {n - per[lang]['right']} of {n} (none {per[lang]['none']}, other {per[lang]['other']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
