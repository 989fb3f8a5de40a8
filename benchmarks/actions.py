"""Code actions benchmark: "Fix syntax error" on injected single-token errors and "Fill holes" / "Complete
body" on stubbed functions, through the engine the server uses (``engine.serve``: the whole-document check
included), tests in the sandbox where there are tests.

    python -m benchmarks.actions --data ../shared/data/human-eval-infilling/HumanEval-SingleLineInfilling.jsonl.gz \
        --out benchmarks/results/actions.json
    python -m benchmarks.actions --data benchmarks/data/action-functions.jsonl.gz --functions \
        --out benchmarks/results/actions-functions.json

``--functions``: held-out corpus functions in five languages (``benchmarks.action_functions``): the body is
broken or stubbed (each language's stubs: ``...``/``pass``/TODO, ``throw new Error("not implemented")``,
``panic("not implemented")``, ``todo!()``, ...) inside the file's own code around it; no tests.

Fix: each HumanEval solution (the single-line set's prompt + line + suffix, one per problem) gets one token
deleted (``:`` ``)`` ``]`` ``}`` ``,`` or a quote) or a stray ``)``/``,`` inserted, where that breaks the parse.
Reported: applied, parses, restored exactly, tests pass, and lines changed that the error does not touch
(must be 0). Fill/body: the body is replaced by ``...``, ``pass`` or a ``# TODO`` line + ``pass`` (in turn), a
context manager with a deliberate ``pass`` in ``__exit__`` is appended, and the action runs at a cursor in
the function; edits outside the function (the decoy included) are counted (must be 0).

Also counted: tokens of the user's code changed outside the target (fix: tokens of the original code the fixed
document lost, 0 for an exact restore; fill/body: tokens the edits replace outside the stub), and lines a fix
deletes that the error does not touch (must be 0).
"""

from __future__ import annotations

import argparse
import difflib
import random
import re
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


def inject(task: Task, rng: random.Random, functions: bool = False) -> tuple[str, str, int] | None:
    """(original, broken, offset of the change): one token deleted or a stray one inserted in the solution
    (``functions``: in the function's body)."""
    original = task.prompt + task.canonical_solution + task.suffix
    if functions:
        lo, hi = len(task.prompt), len(task.prompt) + len(task.canonical_solution)
    else:
        lo, hi = (len(task.prompt.rsplit('"""', 1)[0]) + 3 if '"""' in task.prompt else 0), len(original)
    spots = [(i, ch) for i, ch in enumerate(original) if lo <= i < hi and ch in DELETABLE]
    rng.shuffle(spots)
    for i, ch in spots[:20]:
        if rng.random() < 0.75:
            broken = original[:i] + original[i + 1:]
        else:
            broken = original[:i] + rng.choice(STRAYS) + original[i:]
        if not syntax_valid(broken, task.language_id):
            return original, broken, i
    return None


_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokens_lost(before: str, after: str) -> int:
    """Tokens (words and punctuation) of ``before`` that ``after`` deleted or replaced."""
    a, b = _TOKEN.findall(before), _TOKEN.findall(after)
    return sum(i2 - i1 for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
               if tag in ("delete", "replace"))


def lines_deleted(before: str, after: str, keep: set[int]) -> int:
    """Lines of ``before`` (0-based) that ``after`` no longer has, other than those in ``keep``."""
    a, b = before.split("\n"), after.split("\n")
    gone = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "delete" or (tag == "replace" and i2 - i1 > j2 - j1):
            gone += len(set(range(i1, i2)) - keep) if tag == "delete" else max(0, (i2 - i1) - (j2 - j1))
    return gone


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


def similarity(offered: str, original: str) -> float:
    """How close an offered body is to the original one: difflib's ratio over their tokens (words and punctuation;
    whitespace and indentation ignored), 1.0 for the same tokens."""
    a, b = _TOKEN.findall(offered), _TOKEN.findall(original)
    return round(difflib.SequenceMatcher(None, a, b, autojunk=False).ratio(), 4) if a or b else 1.0


def lines_in_original(offered: str, original: str) -> float | None:
    """The share of the offered body's non-blank lines (stripped) that are a line of the original body."""
    lines = [line.strip() for line in offered.splitlines() if line.strip()]
    known = {line.strip() for line in original.splitlines()}
    return round(sum(line in known for line in lines) / len(lines), 4) if lines else None


def apply(text: str, fills) -> str:
    for f in sorted(fills, key=lambda f: f.start, reverse=True):
        text = text[:f.start] + f.text + text[f.end:]
    return text


def passes(task: Task, document: str, limits: Limits) -> bool | None:
    if not task.has_test:
        return None
    return run_program(check_program(document, "", "", task.test, task.entry_point), limits).passed


def fix_case(backend, config, task: Task, rng: random.Random, limits: Limits, functions: bool = False) -> dict | None:
    from engine.backends.base import Control
    from engine.requests import FixRequest
    from engine.serve import serve
    from engine.targets import survey

    made = inject(task, rng, functions)
    if made is None:
        return None
    original, broken, at = made
    line = broken.count("\n", 0, at)
    spans = survey(broken, task.language_id, at, at).errors
    fixed = broken
    if spans:
        c = serve(backend, config.fill, FixRequest(broken, task.language_id, spans), Control(lambda step: None))
        fixed = apply(broken, c.fills)
    outside = {i for i in changed_lines(broken, fixed) if abs(i - line) > 1}
    return {"task_id": task.task_id, "language": task.language, "line": line, "applied": fixed != broken,
            "parses": syntax_valid(fixed, task.language_id), "exact": fixed == original,
            "passed": (passes(task, fixed, limits) if fixed != broken else False) if task.has_test else None,
            "lines_changed_outside": len(outside), "tokens_changed": tokens_lost(original, fixed),
            "lines_deleted_outside": lines_deleted(broken, fixed, {line})}


def header_stub(task: Task, code: str) -> tuple[str, int, int] | None:
    """The function with its body a stub on its header's line (``def f(x): ...``, ``fn f() { todo!() }``): the
    text and the range a fill may replace (after the header's opener to the end of the stub, in a braces language
    to its closing brace, which stays); None when the header's line does not end the prompt (a Python docstring)."""
    head = task.prompt[:-1] if task.prompt.endswith("\n") else task.prompt
    braces = task.language != "python"
    if not head.rstrip().endswith("{" if braces else ":") or braces and not task.suffix.lstrip(" \t").startswith("}"):
        return None
    head = head.rstrip()
    if braces:
        return head + " " + code + " " + task.suffix.lstrip(" \t"), len(head), len(head) + len(code) + 2
    rest = task.suffix if task.suffix.startswith("\n") else "\n" + task.suffix
    return head + " " + code + rest, len(head), len(head) + len(code) + 1


def fill_case(backend, config, task: Task, stub: str, action: str, limits: Limits, functions: bool = False,
              header: bool = False, workspace: tuple[str | None, str | None] = (None, None)) -> dict | None:
    from engine.backends.base import Control
    from engine.requests import FillRequest
    from engine.serve import serve
    from engine.targets import survey

    decoy = DECOY if task.language == "python" else ""
    text = task.prompt + stub + (task.suffix if functions else "") + decoy
    lo, hi = len(task.prompt), len(task.prompt) + len(stub)        # the stub: the only hole in the function
    cursor = lo + len(stub) - len(stub.lstrip()) + 1
    if header:   # the stub on the header's line
        placed = header_stub(task, stub.strip())
        if placed is None:
            return None
        text, lo, hi = placed[0] + decoy, placed[1], placed[2]
        cursor = lo + 2
    found = survey(text, task.language_id, cursor, cursor)
    key, path = workspace   # (``--workspace-corpus``: the other files of the function's package, as the editor's)
    if action == "fill":
        request = FillRequest(text, task.language_id, found.blanks, workspace=key, path=path) if found.blanks else None
    else:
        request = FillRequest(text, task.language_id, (found.body,), found.callers, body=True, workspace=key,
                              path=path) if found.body is not None else None
    fills = serve(backend, config.fill, request, Control(lambda step: None)).fills if request else ()
    document = apply(text, fills)
    outside = sum(1 for f in fills if f.start < lo or f.end > hi)
    changed = sum(len(_TOKEN.findall(text[f.start:min(f.end, lo)])) + len(_TOKEN.findall(text[max(f.start, hi):f.end]))
                  for f in fills)
    program_doc = document[:len(document) - len(decoy)] if decoy and document.endswith(decoy) else document
    offered = document[lo:hi + len(document) - len(text)] if fills and not outside else None
    quality = {"offered": offered, "confidences": [list(f.confidences) for f in fills]}
    if offered is not None and functions:
        from engine.validate import degenerate

        quality.update(similarity=similarity(offered, task.canonical_solution),
                       lines_in_original=lines_in_original(offered, task.canonical_solution),
                       degenerate=degenerate(offered, text) is not None)
    return {**quality, "task_id": task.task_id, "language": task.language, "action": action,
            "stub": stub.strip().split("\n")[0], "holes": len(found.blanks), "applied": bool(fills),
            "parses": syntax_valid(document, task.language_id),
            "passed": (passes(task, program_doc, limits) if fills else False) if task.has_test else None,
            "edits_outside_scope": outside, "tokens_changed_outside": changed,
            "decoy_intact": document.endswith(decoy)}


def body_indent(task: Task) -> str:
    first = task.canonical_solution.split("\n", 1)[0]
    return first[:len(first) - len(first.lstrip(" \t"))] or "    "


def rates(rows: list[dict], keys: tuple[str, ...]) -> dict:
    """The share of ``rows`` where each key is true (None for a key no row measured, e.g. tests without tests)."""
    n = len(rows)
    out: dict = {"n": n}
    for k in keys:
        measured = [r[k] for r in rows if r[k] is not None]
        out[k] = round(sum(bool(v) for v in measured) / n, 4) if n and measured else None
    return out


def offered_quality(rows: list[dict]) -> dict:
    """Among the cases with an edit offered: how many, how many degenerate (``engine.validate.degenerate``: a word
    or a token run repeated abnormally), the mean token similarity to the original body and the mean share of
    offered lines that are lines of the original (``--functions`` only: the original body is known)."""
    offered = [r for r in rows if r.get("similarity") is not None]
    if not offered:
        return {}
    share = [r["lines_in_original"] for r in offered if r["lines_in_original"] is not None]
    return {"offered": len(offered), "degenerate_offered": sum(r["degenerate"] for r in offered),
            "mean_similarity": round(sum(r["similarity"] for r in offered) / len(offered), 4),
            "mean_lines_in_original": round(sum(share) / len(share), 4) if share else None,
            "exact_body": sum(r["similarity"] == 1.0 for r in offered)}


def summary(fixes: list[dict], fills: list[dict]) -> dict:
    fix_keys = ("applied", "parses", "exact", "passed")
    return {
        "fix": {**rates(fixes, fix_keys), **{k: sum(r[k] for r in fixes) for k in
                                             ("lines_changed_outside", "lines_deleted_outside", "tokens_changed")}},
        **{name: {**rates([r for r in fills if r["action"] == name], ("applied", "parses", "passed", "decoy_intact")),
                  **{k: sum(r[k] for r in fills if r["action"] == name)
                     for k in ("edits_outside_scope", "tokens_changed_outside")},
                  **offered_quality([r for r in fills if r["action"] == name])}
           for name in ("fill", "body")},
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.actions", description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="HumanEval-SingleLineInfilling (one task per problem is used), "
                                                 "or with --functions a benchmarks.action_functions file")
    p.add_argument("--functions", action="store_true", help="the data are whole function bodies, any language")
    p.add_argument("--out", required=True)
    p.add_argument("--limit", type=int, default=None, help="problems for the fix cases")
    p.add_argument("--fill-limit", type=int, default=40, help="problems for the fill / body cases")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--header-stubs", action="store_true",
                   help="with --functions: each stub on its function's header line (def f(x): ..., fn f() { todo!() "
                        "}); functions whose header's line does not end the prompt are left out")
    p.add_argument("--workspace-corpus", default=None, metavar="DIR",
                   help="with --functions: each function's workspace is the other files of its package in this code "
                        "corpus (benchmarks.workspaces), whose lines a line filled as the cursor's may take")
    engine_args(p)
    args = p.parse_args(argv)
    if args.workspace_corpus and not args.functions:
        p.error("--workspace-corpus needs --functions (corpus functions)")
    from benchmarks.action_functions import stub
    from engine.backends import load_backend

    config = engine_config(args)
    backend = load_backend(config.load)
    tasks = load_tasks(args.data) if args.functions else problems(load_tasks(args.data))
    order = {t.task_id: n for n, t in enumerate(tasks)}
    rng, limits = random.Random(args.seed), Limits()
    fixes = [r for r in (fix_case(backend, config, t, rng, limits, args.functions)
                         for t in progress(tasks[:args.limit], len(tasks[:args.limit]), "fix")) if r]
    fills = []
    cases = list(enumerate(tasks[:args.fill_limit]))
    workspaces = None
    if args.workspace_corpus:   # by package, each read once (each case keeps its stub: its index in the data)
        from benchmarks.workspaces import CorpusWorkspaces

        workspaces = CorpusWorkspaces(args.workspace_corpus)
        place = {id(t): n for n, t in enumerate(workspaces.grouped([t for _, t in cases]))}
        cases.sort(key=lambda c: place[id(c[1])])
    for i, t in progress(cases, len(cases), "fill"):
        text = stub(t.language, body_indent(t), i, code_only=args.header_stubs) if args.functions \
            else STUBS[i % len(STUBS)]
        where = (workspaces.key(t), workspaces.path(t)) if workspaces is not None else (None, None)
        for action in ("fill", "body"):
            row = fill_case(backend, config, t, text, action, limits, args.functions, args.header_stubs, where)
            if row is not None:
                fills.append(row)
    fills.sort(key=lambda r: order[r["task_id"]])   # in the data's order, whatever order they ran in
    result = envelope("actions", "benchmarks.actions", argv)
    languages = sorted({t.language for t in tasks})
    result.update({
        "data": args.data, "settings": asdict(config), "seed": args.seed, **summary(fixes, fills),
        "languages": {lang: summary([r for r in fixes if r["language"] == lang],
                                    [r for r in fills if r["language"] == lang]) for lang in languages},
        "records": {"fix": fixes, "fill": fills},
    })
    write_result(args.out, result)
    for name in ("fix", "fill", "body"):
        print(name, {k: v for k, v in result[name].items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
