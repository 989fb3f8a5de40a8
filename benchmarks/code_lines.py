"""Per-language development sets of one-line holes from the held-out files of the code corpus.

Like ``benchmarks.stdlib_lines``, for Python, JavaScript, TypeScript, Go and Rust: single-line statements
inside function bodies of the files ``engine.training.codecorpus`` held out by path hash (never trained
on), in the HumanEval-infilling schema without tests plus a ``language`` field, so ``benchmarks.infill``
scores exact match on them and one file holds every language:

    python -m benchmarks.code_lines --corpus "$CORPUS_DIR" --per-language 100 --out /tmp/code-lines.jsonl
    python -m benchmarks.infill --data /tmp/code-lines.jsonl --no-tests --out /tmp/code-lines.json

The calibration's extra development holes (``runs/conf/extra-dev.jsonl``, what ``scripts/ship_model.sh`` needs
from the corpus): other holes of the same files, none of the committed set's, 900 Python and 250 of each other
language (``EXTRA_DEV`` below, the command ``ship_model.sh`` runs when the file is missing):

    python -m benchmarks.code_lines --corpus "$CORPUS_DIR" --extra-dev --out runs/conf/extra-dev.jsonl

Statements are found with the engine's tree-sitter grammars; a statement counts when it is the whole
line (comments and bare strings excluded) and under 100 characters.
"""

from __future__ import annotations

import argparse
import json
import lzma
import random
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from benchmarks.tasks import load_tasks
from engine.adapt.holes import statement_rows

LANGUAGES = ("python", "javascript", "typescript", "go", "rust")
COMMITTED = Path(__file__).resolve().parent / "data" / "code-lines.jsonl.gz"
# --extra-dev: the selection the calibration's extra holes were first made with
EXTRA_DEV = {"per_language": 1200, "seed": 11, "exclude": [COMMITTED],
             "keep": {"python": 900, "javascript": 250, "typescript": 250, "go": 250, "rust": 250}}


def _parser(lang: str, path: str = ""):
    from engine.training.codecorpus import parses, _PARSERS

    parses("x", lang, path)        # builds and caches the grammar's parser
    return _PARSERS["tsx" if path.endswith(".tsx") else lang]


def one_line_statements(text: str, lang: str, path: str = "") -> list[int]:
    """0-based rows whose whole line is one statement inside a function body."""
    data = text.encode("utf-8")
    tree = _parser(lang, path).parse(data)
    if tree.root_node.has_error:
        return []
    return statement_rows(tree.root_node, text, data, lang)


_HEADER = re.compile(r"[^#/*].{3,98}(?::|\{)")   # a line that opens a block: ends with `:` or `{`, no comment


def header_rows(text: str, lang: str, path: str = "") -> list[int]:
    """0-based rows of indented lines that open a block (``if len(items) > 0:``, ``} else if (a) {``,
    ``for k, v := range m {``): the line, stripped, ends with ``:`` or ``{`` and the next code line is indented
    deeper; files that do not parse give none. (``--headers``: holes for a block's header edited in its middle.)"""
    tree = _parser(lang, path).parse(text.encode("utf-8"))
    if tree.root_node.has_error:
        return []
    lines = text.split("\n")
    rows = []
    for i, line in enumerate(lines[:-1]):
        code = line.strip()
        indent = len(line) - len(line.lstrip(" \t"))
        if not indent or not _HEADER.fullmatch(code):
            continue
        below = next((nxt for nxt in lines[i + 1:i + 4] if nxt.strip()), "")
        if len(below) - len(below.lstrip(" \t")) > indent:
            rows.append(i)
    return rows


def line_tasks(files: Iterable[tuple[str, str]], lang: str, per_file: int = 10, limit: int = 200,
               seed: int = 7, headers: bool = False) -> list[dict]:
    """Tasks from ``(name, source)`` pairs of one language: at most ``per_file`` holes per file, each a
    whole line (newline included), ``limit`` in all, shuffled (seeded); with ``headers``, lines that open a block
    (``header_rows``) instead of one-line statements."""
    rng = random.Random(seed)
    tasks: list[dict] = []
    for name, text in files:
        lines = text.splitlines(keepends=True)
        rows = header_rows(text, lang, name) if headers else one_line_statements(text, lang, name)
        for i in rng.sample(rows, min(len(rows), per_file)):
            tasks.append({"task_id": f"{lang}:{name}:{i + 1}", "prompt": "".join(lines[:i]),
                          "suffix": "".join(lines[i + 1:]), "canonical_solution": lines[i], "language": lang})
    rng.shuffle(tasks)
    return tasks[:limit]


def held_out_files(corpus: Path, lang: str) -> list[tuple[str, str]]:
    """The validation files of one language: the build's ``files/valid/<lang>.jsonl`` or travel chunks."""
    from engine.training.train import corpus_files

    out = []
    for path in corpus_files(corpus, "valid", lang):
        opener = lzma.open if path.suffix == ".xz" else open
        with opener(path, "rt", encoding="utf-8") as f:
            out += [(r["id"], r["text"]) for r in map(json.loads, f) if r]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.code_lines", description=__doc__.splitlines()[0])
    p.add_argument("--corpus", required=True, help="the built corpus (engine.training.codecorpus --out)")
    p.add_argument("--out", required=True, help="the JSONL to write (every language, interleaved)")
    p.add_argument("--per-language", type=int, default=100)
    p.add_argument("--per-file", type=int, default=10)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--languages", nargs="*", default=list(LANGUAGES))
    p.add_argument("--exclude", action="append", default=[], metavar="DATA",
                   help="leave out the holes of this data file (by task_id; JSONL, .gz allowed); repeatable")
    p.add_argument("--keep", action="append", default=[], metavar="LANG=N",
                   help="after --exclude, the first N holes of LANG (default: all of --per-language); repeatable")
    p.add_argument("--headers", action="store_true",
                   help="holes on lines that open a block (`if x > 0:`, `if (a) {`) instead of one-line statements")
    p.add_argument("--extra-dev", action="store_true",
                   help="the calibration's extra development holes: " + json.dumps(
                       {**EXTRA_DEV, "exclude": ["benchmarks/data/code-lines.jsonl.gz"]}))
    args = p.parse_args(argv)
    if args.extra_dev:
        args.per_language, args.seed = EXTRA_DEV["per_language"], EXTRA_DEV["seed"]
        args.exclude = [*map(str, EXTRA_DEV["exclude"]), *args.exclude]
        args.keep = [f"{lang}={n}" for lang, n in EXTRA_DEV["keep"].items()] + args.keep
    keep: dict[str, int] = {}
    for item in args.keep:
        lang, _, n = item.partition("=")
        if lang not in LANGUAGES or not n.isdigit():
            p.error(f"--keep {item!r}: expected LANG=N with LANG one of {', '.join(LANGUAGES)}")
        keep[lang] = int(n)
    for path in args.exclude:
        if not Path(path).is_file():
            p.error(f"--exclude {path}: no such file")
    excluded = {t.task_id for path in args.exclude for t in load_tasks(path)}
    per_lang = {}
    for lang in args.languages:
        files = held_out_files(Path(args.corpus), lang)
        if not files:
            print(f"code_lines: no held-out {lang} files under {args.corpus} (files/valid/{lang}.jsonl or "
                  f"valid.{lang}.NNN.jsonl.xz)", file=sys.stderr)
            return 2
        tasks = line_tasks(files, lang, args.per_file, args.per_language, args.seed, args.headers)
        per_lang[lang] = [t for t in tasks if t["task_id"] not in excluded][:keep.get(lang, len(tasks))]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for i in range(max(map(len, per_lang.values()), default=0)):   # interleaved: --limit keeps the mix
            for lang in args.languages:
                if i < len(per_lang[lang]):
                    f.write(json.dumps(per_lang[lang][i]) + "\n")
    print(json.dumps({lang: len(t) for lang, t in per_lang.items()}), f"-> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
