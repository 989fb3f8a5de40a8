"""Held-out corpus functions for the code actions benchmark (``benchmarks.actions --data`` this file).

Functions from the validation files of the code corpus (``engine.training.codecorpus`` holds them out by path
hash; the embedded model never trained on them) in Python, JavaScript, TypeScript, Go and Rust, in the
HumanEval-infilling schema without tests: ``prompt`` is the code before the function's body (a few lines
of the file before the function, its header and, in Python, its docstring), ``canonical_solution`` the
body's lines, ``suffix`` the closing line(s) and a few lines after, plus ``language``. Each document
(``prompt + canonical_solution + suffix``) parses, and so does the document with the body replaced by one
stub line, so "Fill holes" and "Complete body" have a function to work on and "Fix syntax error" a body
to break:

    python -m benchmarks.action_functions --corpus "$CORPUS_DIR" --out benchmarks/data/action-functions.jsonl.gz

A function qualifies when its body is 3 to 25 whole lines of at most 1,200 characters and it starts at its
line's first non-blank character. Files are shuffled (seeded), at most 2 functions taken per file, and the
languages interleaved (a benchmark's ``--limit`` keeps the mix).

``--dev``: a development set for tuning the code actions (``DEV`` below: another seed, and none of the committed
test set's functions, nor a function whose text is in one of its documents or around one of its bodies,
``--exclude``), never the reported set:

    python -m benchmarks.action_functions --corpus runs/corpus --dev     # -> runs/conf/action-dev.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from pathlib import Path

from benchmarks.code_lines import LANGUAGES, held_out_files
from engine.adapt.holes import FUNCTIONS

STUB_LINES = {"python": ("...", "pass", "# TODO: implement\n{indent}pass"),
              "javascript": ('throw new Error("not implemented");', "// TODO: implement"),
              "go": ('panic("not implemented")', "// TODO: implement"),
              "rust": ("todo!()", "unimplemented!()")}
STUB_LINES["typescript"] = STUB_LINES["javascript"]
CONTEXT_BEFORE, CONTEXT_AFTER = 1500, 500   # characters of the file kept around the function (whole lines)
COMMITTED = Path(__file__).resolve().parent / "data" / "action-functions.jsonl.gz"
DEV = {"seed": 23, "per_language": [60, 30, 30, 30, 30], "exclude": [COMMITTED], "out": "runs/conf/action-dev.jsonl"}


def stub(language: str, indent: str, i: int, code_only: bool = False) -> str:
    """The ``i``-th stub body (one or two lines, newline-terminated) for a body indented ``indent``; ``code_only``:
    of the stubs that are one statement (no comment: one that fits on the header's line, ``{ todo!() }``)."""
    lines = STUB_LINES[language]
    if code_only:
        lines = tuple(line for line in lines if "\n" not in line and not line.startswith(("#", "//")))
    return indent + lines[i % len(lines)].replace("{indent}", indent) + "\n"


def _parses(text: str, language: str) -> bool:
    from benchmarks.metrics import syntax_valid

    return syntax_valid(text, language)


def _body_rows(fn, language: str, lines: list[str]) -> tuple[int, int] | None:
    """[first, last) rows of the body's whole lines, or None when the body is not whole lines."""
    body = fn.child_by_field_name("body")
    if body is None:
        return None
    if language == "python":
        first = body.start_point[0]
        stmts = [c for c in body.named_children if c.type != "comment"]
        if stmts and stmts[0].type == "expression_statement" and stmts[0].named_child_count == 1 \
                and stmts[0].named_children[0].type == "string":      # the docstring stays in the prompt
            first = stmts[0].end_point[0] + 1
        last = body.end_point[0] + 1
        if first <= fn.start_point[0] or first >= last:
            return None
        return first, last
    if body.type not in ("statement_block", "block"):
        return None
    first, last = body.start_point[0] + 1, body.end_point[0]   # between the `{` line and the `}` line
    if first >= last or lines[body.start_point[0]].rstrip()[-1:] != "{" or lines[last].strip()[:1] != "}":
        return None
    return first, last


def functions_of(name: str, text: str, language: str) -> list[dict]:
    """Tasks for the qualifying functions of one file."""
    from engine.languages import parse, spec_for

    tree = parse(spec_for("typescriptreact" if name.endswith(".tsx") else language), text)
    if tree is None or tree.root_node.has_error:
        return []
    lines = text.splitlines(keepends=True)
    out, stack = [], [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type not in FUNCTIONS[language]:
            continue
        rows = _body_rows(node, language, lines)
        if rows is None or not 3 <= rows[1] - rows[0] <= 25:
            continue
        first, last = rows
        body = "".join(lines[first:last])
        row0 = node.start_point[0]
        if len(body) > 1200 or lines[row0][:node.start_point[1]].strip():
            continue
        indent = lines[first][:len(lines[first]) - len(lines[first].lstrip(" \t"))]
        if not indent or any(line.strip() and not line.startswith(indent) for line in lines[first:last]):
            continue
        task = _cut(name, lines, row0, first, last, language, indent)
        if task is not None:
            out.append(task)
    return out


def _cut(name: str, lines: list[str], row0: int, first: int, last: int, language: str, indent: str) -> dict | None:
    """The task with at most ``CONTEXT_BEFORE``/``CONTEXT_AFTER`` characters around the function, cut at
    lines where the document (and the stubbed one) still parses."""
    head = "".join(lines[row0:first])
    body = "".join(lines[first:last])
    stubbed = stub(language, indent, 0)

    def ok(before: str, after: str) -> bool:
        return _parses(before + head + body + after, language) and _parses(before + head + stubbed + after, language)

    lowest = last if language == "python" else last + 1      # a brace body keeps its closing line
    after = next((a for a in ("".join(lines[last:hi]) for hi in range(len(lines), lowest - 1, -1))
                  if (len(a) <= CONTEXT_AFTER or a.count("\n") <= 1) and ok("", a)), None)
    if after is None:
        return None
    before = next((b for b in ("".join(lines[lo:row0]) for lo in range(max(0, row0 - 80), row0 + 1))
                   if len(b) <= CONTEXT_BEFORE and ok(b, after)), None)
    if before is None:
        return None
    return {"task_id": f"{language}:{name}:{row0 + 1}", "prompt": before + head, "canonical_solution": body,
            "suffix": after, "language": language}


def _collapsed(text: str) -> str:
    return " ".join(text.split())


class Excluded:
    """The functions of other data files (``--exclude``), and what they hold: a function is left out when it is one
    of them (the same ``task_id``: file and line), when its body is inside one of their documents, or when its
    document holds one of their bodies (whitespace collapsed), so neither set's text is the other's context."""

    def __init__(self, paths: list[str]) -> None:
        self.ids: set[str] = set()
        self.documents: list[str] = []
        self.bodies: list[str] = []
        for path in paths:
            opener = gzip.open if str(path).endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8") as f:
                for task in map(json.loads, filter(str.strip, f)):
                    self.ids.add(task["task_id"])
                    self.documents.append(_collapsed(task["prompt"] + task["canonical_solution"] + task["suffix"]))
                    self.bodies.append(_collapsed(task["canonical_solution"]))

    def __contains__(self, task: object) -> bool:
        assert isinstance(task, dict)
        if task["task_id"] in self.ids:
            return True
        body = _collapsed(task["canonical_solution"])
        document = _collapsed(task["prompt"] + task["canonical_solution"] + task["suffix"])
        return any(body in d for d in self.documents) or any(b in document for b in self.bodies)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.action_functions", description=__doc__.splitlines()[0])
    p.add_argument("--corpus", required=True, help="the built corpus (engine.training.codecorpus --out)")
    p.add_argument("--out", help="the JSONL(.gz) to write (with --dev: " + DEV["out"] + ")")
    p.add_argument("--per-language", type=int, nargs="*", default=None,
                   help="functions per language, in the order of --languages (default 60 30 30 30 30)")
    p.add_argument("--languages", nargs="*", default=list(LANGUAGES))
    p.add_argument("--per-file", type=int, default=2)
    p.add_argument("--seed", type=int, default=None, help="default 5 (--dev: " + str(DEV["seed"]) + ")")
    p.add_argument("--exclude", action="append", default=[], metavar="DATA",
                   help="leave out this data file's functions, and any function whose body its documents hold or "
                        "whose document holds one of its bodies (JSONL, .gz allowed); repeatable")
    p.add_argument("--dev", action="store_true",
                   help="the code actions' development set: seed " + str(DEV["seed"]) + ", the committed "
                        "benchmarks/data/action-functions.jsonl.gz excluded")
    args = p.parse_args(argv)
    if args.dev:
        args.exclude = [*map(str, DEV["exclude"]), *args.exclude]
        args.out = args.out or DEV["out"]
        args.seed = DEV["seed"] if args.seed is None else args.seed
    if args.out is None:
        p.error("--out is required (or --dev)")
    args.seed = 5 if args.seed is None else args.seed
    args.per_language = args.per_language or [60, 30, 30, 30, 30]
    for path in args.exclude:
        if not Path(path).is_file():
            p.error(f"--exclude {path}: no such file")
    excluded = Excluded(args.exclude)
    rng = random.Random(args.seed)
    per_language: dict[str, list[dict]] = {}
    for language, want in zip(args.languages, args.per_language):
        files = sorted(held_out_files(Path(args.corpus), language))
        rng.shuffle(files)
        got: list[dict] = []
        for name, text in files:
            if len(got) >= want:
                break
            found = [t for t in functions_of(name, text, language) if t not in excluded]
            got += rng.sample(found, min(len(found), args.per_file, want - len(got)))
        per_language[language] = got
    # interleaved, so that --limit / --fill-limit keep the mix of languages
    tasks = [t for i in range(max(map(len, per_language.values()), default=0))
             for got in per_language.values() if i < len(got) for t in [got[i]]]
    counts = {language: len(got) for language, got in per_language.items()}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(t) + "\n" for t in tasks).encode("utf-8")
    out.write_bytes(gzip.compress(data, mtime=0) if out.suffix == ".gz" else data)
    print(json.dumps(counts), f"-> {out} ({out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
