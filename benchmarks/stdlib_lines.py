"""A development set of one-line holes from the stdlib files held out of the embedded model's training.

HumanEval is the yardstick, so choices about decoding are checked here first: single-line statements
inside function bodies of the held-out files (``engine.training.corpus``: 2.5% of files by path hash,
never trained on), in the HumanEval-infilling schema without tests, so that ``benchmarks.infill``
scores exact match on them:

    python -m benchmarks.stdlib_lines --out /tmp/stdlib-lines.jsonl
    python -m benchmarks.infill --data /tmp/stdlib-lines.jsonl --out /tmp/stdlib-lines.json

The set depends on the interpreter's stdlib (the JSONL records its path and version).
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import sys
from collections.abc import Iterable
from pathlib import Path


def line_tasks(files: Iterable[tuple[str, str]], per_file: int = 40, limit: int = 600, seed: int = 7) -> list[dict]:
    """Tasks from ``(name, source)`` pairs: at most ``per_file`` one-line statements per file, each a
    whole line (newline included) inside a function body, not a bare string; ``limit`` in all, shuffled."""
    rng = random.Random(seed)
    tasks: list[dict] = []
    for name, text in files:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        lines = text.splitlines(keepends=True)
        rows = set()
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if not isinstance(node, ast.stmt) or node is fn or node.lineno != node.end_lineno:
                    continue
                if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                    continue  # docstrings and bare strings
                line = lines[node.lineno - 1]
                if len(line) < 100 and line.strip() == (ast.get_source_segment(text, node) or "").strip():
                    rows.add(node.lineno - 1)   # the statement is the whole line
        for i in rng.sample(sorted(rows), min(len(rows), per_file)):
            tasks.append({"task_id": f"{name}:{i + 1}", "prompt": "".join(lines[:i]),
                          "suffix": "".join(lines[i + 1:]), "canonical_solution": lines[i]})
    rng.shuffle(tasks)
    return tasks[:limit]


def compact(task: dict) -> dict:
    """The task cut to the top-level statement around its hole, after a header that keeps every other
    top-level name defined (its imports as written, ``name = None`` for the rest): the model's window and
    the names the document defines stay the same, while parsing the document for each candidate gets cheap."""
    text = task["prompt"] + task["canonical_solution"] + task["suffix"]
    tree = ast.parse(text)
    row = task["prompt"].count("\n") + 1
    header, lo, hi = [], None, None
    lines = text.splitlines(keepends=True)
    for node in tree.body:
        if node.lineno <= row <= node.end_lineno:
            lo, hi = node.lineno - 1 - len(getattr(node, "decorator_list", [])), node.end_lineno
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            header.append("".join(lines[node.lineno - 1:node.end_lineno]))
        else:
            header += [f"{n} = None\n" for n in sorted(_top_names(node))]
    if lo is None:
        return task
    head = "".join(header) + "\n\n"
    node = next(n for n in tree.body if n.lineno <= row <= n.end_lineno)
    inner = [m for m in getattr(node, "body", []) if isinstance(node, ast.ClassDef) and m.lineno <= row <= m.end_lineno]
    if inner:  # a method: the class line(s), then that method alone (methods define no free names)
        m = inner[0]
        start = m.lineno - 1 - len(getattr(m, "decorator_list", []))
        head += "".join(lines[lo:node.body[0].lineno - 1])
        lo, hi = start, m.end_lineno
    return {**task, "prompt": head + "".join(lines[lo:row - 1]), "suffix": "".join(lines[row:hi])}


def _top_names(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.stdlib_lines", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the JSONL to write")
    p.add_argument("--per-file", type=int, default=40)
    p.add_argument("--limit", type=int, default=600)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--compact", action="store_true",
                   help="cut each document to the top-level statement around the hole (see compact())")
    args = p.parse_args(argv)
    from engine.training.corpus import load_corpus

    corpus = load_corpus()
    tasks = line_tasks(((f.path, f.text) for f in corpus.valid), args.per_file, args.limit, args.seed)
    if args.compact:
        tasks = [compact(t) for t in tasks]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for t in tasks:
            f.write(json.dumps({**t, "stdlib": corpus.root, "python": sys.version.split()[0]}) + "\n")
    print(f"{len(tasks)} one-line holes from {len(corpus.valid)} held-out files of {corpus.root} -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
