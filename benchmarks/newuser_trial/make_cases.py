"""Picks the new-user trial's cases from held-out corpus files (runs/corpus/files/valid/*.jsonl):
per language, 4 "finish the line I started" cases (an existing line cut near its middle at a token
boundary, the user types the next 2-3 characters) and 1 code-action case (a function body line turned
into a hole). Deterministic (seed 7) for a set of files, whatever their order in the corpus build (sorted by id
first: two builds of the same locked corpus listed the held-out files in different orders and picked other cases).
Writes the files into a workspace and the cases as JSON.

    python benchmarks/newuser_trial/make_cases.py CORPUS_VALID_DIR OUT_DIR [--mid | --plain CONF_DIR]

--mid: other lines (seed 11), each ending in closers ")]};," that stay after the cursor, no action cases.
--plain: the languages filled as plain text (C, C++, Java, Ruby, Perl, Lua; seed 13), 4 line cases each from the files
of their development holes (CONF_DIR/other-dev.jsonl and other-dev-cpp.jsonl, ``benchmarks.other_lines``), no action
cases (they have no hole actions).
"""
from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

EXT = {"python": "py", "go": "go", "rust": "rs", "javascript": "js", "typescript": "ts"}
ROOT = Path(__file__).resolve().parents[2]
PLAIN_EXT = {"c": "c", "cpp": "cpp", "java": "java", "ruby": "rb", "perl": "pl", "lua": "lua"}
COMMENT = ("#", "//", "/*", "*", '"""', "'''")
PLAIN_COMMENT = COMMENT + ("--", "=")   # Lua's comments, Perl's POD and Ruby's =begin: prose, not a line of code
JSX = ("tsx", "jsx")   # a file of these keeps its extension: an editor opens it as typescriptreact / javascriptreact


def extension(source: str, ext: str) -> str:
    """The case file's extension: the language's, or the source's own where it is TSX or JSX. Saved as ``.ts``, a
    TSX file is opened as plain TypeScript, whose parser reads its JSX as errors: not what a user of that file gets."""
    own = source.rsplit(".", 1)[-1]
    return own if own in JSX else ext


def prose_rows(text: str, language: str) -> set[int]:
    """The rows of a plain-text language's file that its check grammar reads as comments or documentation (Perl's POD,
    a C block comment's inner lines): prose, not a line of code to finish."""
    from engine.languages import check_spec, parse
    spec = check_spec(language)
    tree = parse(spec, text) if spec is not None else None
    rows: set[int] = set()
    stack = [tree.root_node] if tree is not None else []
    while stack:
        node = stack.pop()
        if "comment" in node.type or node.type == "pod":
            rows.update(range(node.start_point[0], node.end_point[0] + 1))
        else:
            stack.extend(node.children)
    return rows


def pick_line(lines: list[str], rng: random.Random, comment: tuple[str, ...] = COMMENT,
              prose: set[int] = frozenset()) -> tuple[int, int] | None:  # type: ignore[assignment]
    candidates = []
    for i in range(20, len(lines) - 5):
        s = lines[i].strip()
        if not (18 <= len(s) <= 70) or s.startswith(comment) or i in prose:
            continue
        if s.count('"') + s.count("'") > 2:   # mostly strings: nothing to infer
            continue
        candidates.append(i)
    if not candidates:
        return None
    i = rng.choice(candidates)
    line = lines[i]
    indent = len(line) - len(line.lstrip())
    body = line[indent:]
    # cut points: right after a non-word char followed by a word char, near the middle
    cuts = [indent + m.start() for m in re.finditer(r"(?<=[\s(.=,\[:])\w", body)]
    cuts = [c for c in cuts if len(line) * 0.3 <= c <= len(line) * 0.7]
    if not cuts:
        return None
    return i, rng.choice(cuts)


def plain_documents(conf: Path) -> dict[str, list[dict]]:
    """Per plain-text language, its development holes' files as corpus rows (``id``, ``text``)."""
    if str(ROOT) not in sys.path:   # run as a script: the checkout's benchmarks package
        sys.path.insert(0, str(ROOT))
    from benchmarks.action_safety import plain_files
    files = plain_files(conf, tuple(PLAIN_EXT), shortest=0, longest=sys.maxsize)
    return {lang: [{"id": f"debian:{name}", "text": text} for name, text in rows] for lang, rows in files.items()}


def main() -> None:
    corpus, out = Path(sys.argv[1]), Path(sys.argv[2])
    mid = len(sys.argv) > 3 and sys.argv[3] == "--mid"   # cursor inside the line, closers after it
    plain = plain_documents(Path(sys.argv[4])) if len(sys.argv) > 4 and sys.argv[3] == "--plain" else None
    rng = random.Random(13 if plain else 11 if mid else 7)
    (out / "ws").mkdir(parents=True, exist_ok=True)
    cases = []
    for lang, ext in (PLAIN_EXT if plain else EXT).items():
        docs = plain[lang] if plain else [json.loads(line) for line in (corpus / f"{lang}.jsonl").open()]
        docs = [d for d in docs if 80 <= d["text"].count("\n") <= 1500 and "\r" not in d["text"]]
        docs.sort(key=lambda d: d["id"])   # the files' order in the corpus build does not matter, only which they are
        rng.shuffle(docs)
        n_line = 0
        for d in docs:
            if n_line == 4:
                break
            lines = d["text"].split("\n")
            got = (pick_line(lines, rng, PLAIN_COMMENT, prose_rows(d["text"], lang)) if plain
                   else pick_line(lines, rng))
            if got is None:
                continue
            row, col = got
            name = f"{lang}_{n_line}.{extension(d['id'], ext)}"
            rest = lines[row][col:]
            tail = ""
            if mid:  # the closers at the line's end stay after the cursor (as an auto-pair plugin leaves them)
                tail = rest[len(rest.rstrip(")]};,")):]
                if not tail or len(rest) - len(tail) < 4:
                    continue
                rest = rest[: len(rest) - len(tail)]
            # the file as saved when the user starts the line's rest: the server counts the saved files of the
            # workspace folder, and a saved copy holding the whole line handed the answer over (python_1.py's
            # ``self.fil|`` got ``ename = filename`` as a line seen beside both neighbours in its own saved copy)
            (out / "ws" / name).write_text("\n".join(lines[:row] + [lines[row][:col] + tail] + lines[row + 1:]))
            typed = rest[: 3 if len(rest) > 6 else 2]
            cases.append({"kind": "line", "lang": lang, "file": name, "source": d["id"], "row": row, "col": col,
                          "typed": typed, "expected": rest[len(typed):], "tail": tail, "line": lines[row]})
            n_line += 1
        if mid or plain:
            continue
        # code action: a function body's line replaced by the language's hole
        hole = {"python": "pass", "go": "// TODO", "rust": "todo!()", "javascript": "// TODO",
                "typescript": "// TODO"}[lang]
        for d in docs[10:]:
            lines = d["text"].split("\n")
            pat = {"python": r"^\s*def \w+\(.*\):\s*$", "go": r"^func .*\{\s*$", "rust": r"^\s*(pub )?fn .*\{\s*$",
                   "javascript": r"^\s*(function \w+|\w+\s*\(.*\)\s*)\{?\s*$|function \w+\(.*\)\s*\{\s*$",
                   "typescript": r"^\s*(public |private |async |static )*\w+\(.*\)(: [\w<>\[\]| ]+)?\s*\{\s*$"}[lang]
            rows = [i for i, s in enumerate(lines[:-3]) if re.match(pat, s) and lines[i + 1].strip()
                    and lines[i + 2].strip() in ("}", "")]
            if not rows:
                continue
            row = rng.choice(rows) + 1
            indent = lines[row][: len(lines[row]) - len(lines[row].lstrip())]
            original = lines[row]
            lines[row] = indent + hole
            name = f"{lang}_action.{extension(d['id'], ext)}"
            (out / "ws" / name).write_text("\n".join(lines))
            cases.append({"kind": "action", "lang": lang, "file": name, "source": d["id"], "row": row,
                          "col": len(indent), "typed": hole, "expected": original.strip(), "line": original})
            break
    (out / "cases.json").write_text(json.dumps(cases, indent=1))
    for c in cases:
        print(c["kind"], c["file"], c["row"] + 1, repr(c["line"]), "| typed", repr(c["typed"]))


if __name__ == "__main__":
    main()
