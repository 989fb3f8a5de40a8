"""Code actions benchmark: "Fix syntax error" on injected single-token errors and "Fill holes" / "Complete
body" on stubbed HumanEval functions, through the engine the server uses, tests in the sandbox.

    python -m benchmarks.actions --data ../shared/data/human-eval-infilling/HumanEval-SingleLineInfilling.jsonl.gz \
        --out benchmarks/results/actions.json

Fix: each HumanEval solution (the single-line set's prompt + line + suffix, one per problem) gets one token
deleted (``:`` ``)`` ``]`` ``}`` ``,`` or a quote) or a stray ``)``/``,`` inserted, where that breaks the parse.
Reported: applied, parses, restored exactly, tests pass, and lines changed that the error does not touch
(must be 0). Fill/body: the body is replaced by ``...``, ``pass`` or a ``# TODO`` line + ``pass`` (in turn), a
context manager with a deliberate ``pass`` in ``__exit__`` is appended, and the action runs at a cursor in
the function; edits outside the function (the decoy included) are counted (must be 0).
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import asdict

from benchmarks.infill import engine_args, engine_config
from benchmarks.metrics import syntax_valid
from benchmarks.progress import progress
from benchmarks.report import envelope, write_result
from benchmarks.sandbox import Limits, check_program, run_program
from benchmarks.tasks import Task, load_tasks

DELETABLE = (":", ")", "]", "}", ",", "'", '"')
STRAYS = (")", ",")
STUBS = ("    ...\n", "    pass\n", "    # TODO: implement\n    pass\n")
DECOY = "\n\nclass _Session:\n    def __enter__(self):\n        return self\n\n    def __exit__(self, *exc):\n        pass\n"


def problems(tasks: list[Task]) -> list[Task]:
    """One task per HumanEval problem (the first line hole of each)."""
    seen, out = set(), []
    for t in tasks:
        key = t.task_id.rsplit("/", 1)[0]
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def inject(task: Task, rng: random.Random) -> tuple[str, str, int] | None:
    """(original, broken, offset of the change): one token deleted or a stray one inserted in the solution."""
    original = task.prompt + task.canonical_solution + task.suffix
    body = len(task.prompt.rsplit('"""', 1)[0]) + 3 if '"""' in task.prompt else 0
    spots = [(i, ch) for i, ch in enumerate(original) if i >= body and ch in DELETABLE]
    rng.shuffle(spots)
    for i, ch in spots[:20]:
        if rng.random() < 0.75:
            broken = original[:i] + original[i + 1:]
        else:
            broken = original[:i] + rng.choice(STRAYS) + original[i:]
        if not syntax_valid(broken):
            return original, broken, i
    return None


def changed_lines(before: str, after: str) -> set[int]:
    """0-based lines of ``before`` that ``after`` changed (same line count assumed; else all differing)."""
    a, b = before.split("\n"), after.split("\n")
    if len(a) != len(b):
        import difflib
        out = set()
        for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
            if tag != "equal":
                out.update(range(i1, max(i2, i1 + 1)))
        return out
    return {i for i, (x, y) in enumerate(zip(a, b)) if x != y}


def apply(text: str, fills) -> str:
    for f in sorted(fills, key=lambda f: f.start, reverse=True):
        text = text[:f.start] + f.text + text[f.end:]
    return text


def passes(task: Task, document: str, limits: Limits) -> bool | None:
    if not task.has_test:
        return None
    return run_program(check_program(document, "", "", task.test, task.entry_point), limits).passed


def fix_case(backend, config, task: Task, rng: random.Random, limits: Limits) -> dict | None:
    from engine.actions import FixRequest
    from engine.backends.base import Control
    from engine.targets import survey

    made = inject(task, rng)
    if made is None:
        return None
    original, broken, at = made
    line = broken.count("\n", 0, at)
    spans = survey(broken, "python", at, at).errors
    fixed = broken
    if spans:
        c = FixRequest(broken, "python", spans).run(backend, config, Control(lambda step: None))
        fixed = apply(broken, c.fills)
    outside = {i for i in changed_lines(broken, fixed) if abs(i - line) > 1}
    return {"task_id": task.task_id, "line": line, "applied": fixed != broken, "parses": syntax_valid(fixed),
            "exact": fixed == original, "passed": passes(task, fixed, limits) if fixed != broken else False,
            "lines_changed_outside": len(outside)}


def fill_case(backend, config, task: Task, stub: str, action: str, limits: Limits) -> dict:
    from engine.actions import FillRequest
    from engine.backends.base import Control
    from engine.targets import survey

    text = task.prompt + stub + DECOY
    cursor = len(task.prompt) + stub.index("p" if "pass" in stub else ".")
    found = survey(text, "python", cursor, cursor)
    fn_end = len(task.prompt) + len(stub)
    if action == "fill":
        request = FillRequest(text, "python", found.blanks) if found.blanks else None
    else:
        request = FillRequest(text, "python", (found.body,), found.callers, slots=config.max_hole_tokens) \
            if found.body is not None else None
    fills = request.run(backend, config, Control(lambda step: None)).fills if request else ()
    document = apply(text, fills)
    outside = sum(1 for f in fills if f.start < text.rfind("def ", 0, cursor) or f.end > fn_end)
    program_doc = document[:len(document) - len(DECOY)] if document.endswith(DECOY) else document
    return {"task_id": task.task_id, "action": action, "stub": stub.strip().split("\n")[0],
            "holes": len(found.blanks), "applied": bool(fills), "parses": syntax_valid(document),
            "passed": passes(task, program_doc, limits) if fills else False,
            "edits_outside_scope": outside, "decoy_intact": document.endswith(DECOY)}


def rates(rows: list[dict], keys: tuple[str, ...]) -> dict:
    n = len(rows)
    out = {"n": n}
    for k in keys:
        out[k] = round(sum(bool(r[k]) for r in rows) / n, 4) if n else None
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.actions", description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="HumanEval-SingleLineInfilling (one task per problem is used)")
    p.add_argument("--out", required=True)
    p.add_argument("--limit", type=int, default=None, help="problems for the fix cases")
    p.add_argument("--fill-limit", type=int, default=40, help="problems for the fill / body cases")
    p.add_argument("--seed", type=int, default=1)
    engine_args(p)
    args = p.parse_args(argv)
    from engine.backends import load_backend

    config = engine_config(args)
    backend = load_backend(config)
    tasks = problems(load_tasks(args.data))
    rng, limits = random.Random(args.seed), Limits()
    fixes = [r for r in (fix_case(backend, config, t, rng, limits)
                         for t in progress(tasks[:args.limit], len(tasks[:args.limit]), "fix")) if r]
    fills = []
    for i, t in enumerate(progress(tasks[:args.fill_limit], min(len(tasks), args.fill_limit), "fill")):
        for action in ("fill", "body"):
            fills.append(fill_case(backend, config, t, STUBS[i % len(STUBS)], action, limits))
    result = envelope("actions", "benchmarks.actions", argv)
    fix_keys = ("applied", "parses", "exact", "passed")
    result.update({
        "data": args.data, "settings": asdict(config), "seed": args.seed,
        "fix": {**rates(fixes, fix_keys), "lines_changed_outside": sum(r["lines_changed_outside"] for r in fixes)},
        **{name: {**rates([r for r in fills if r["action"] == name], ("applied", "parses", "passed", "decoy_intact")),
                  "edits_outside_scope": sum(r["edits_outside_scope"] for r in fills if r["action"] == name)}
           for name in ("fill", "body")},
        "records": {"fix": fixes, "fill": fills},
    })
    write_result(args.out, result)
    for name in ("fix", "fill", "body"):
        print(name, {k: v for k, v in result[name].items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
