"""Per-language one-line development sets and the optional ``language`` field of benchmark tasks."""

import json

import pytest

from benchmarks.code_lines import line_tasks, one_line_statements
from benchmarks.metrics import syntax_valid
from benchmarks.tasks import TaskFormatError, load_tasks, parse_task

SOURCES = {
    "python": ("m.py", 'def f(x):\n    """Doc."""\n    y = x + 1\n    if y:\n        return y\n    return (\n        x)\n'),
    "javascript": ("m.js", "function f(x) {\n  const y = x + 1;\n  'bare';\n  if (y) {\n    return y;\n  }\n"
                           "  return g(\n    x);\n}\nconst top = 1;\n"),
    "typescript": ("m.ts", "export function f(x: number): number {\n  const y: number = x + 1;\n  return y;\n}\n"
                           "let top: number = 1;\n"),
    "go": ("m.go", "package m\n\nfunc F(x int) int {\n\ty := x + 1\n\ty++\n\treturn y\n}\n\nvar top = 1\n"),
    "rust": ("m.rs", "fn f(x: u32) -> u32 {\n    let y = x + 1;\n    println!(\"{}\", y);\n    y\n}\n"
                     "static TOP: u32 = 1;\n"),
}
EXPECTED = {   # 1-based lines: whole-line statements inside function bodies only
    "python": [3, 5],
    "javascript": [2, 5],
    "typescript": [2, 3],
    "go": [4, 5, 6],
    "rust": [2, 3],
}


@pytest.mark.parametrize("lang", sorted(SOURCES))
def test_one_line_statements_in_function_bodies(lang):
    name, text = SOURCES[lang]
    assert [r + 1 for r in one_line_statements(text, lang, name)] == EXPECTED[lang]


@pytest.mark.parametrize("lang", sorted(SOURCES))
def test_tasks_cut_one_whole_line_and_carry_their_language(lang):
    name, text = SOURCES[lang]
    tasks = line_tasks([(name, text)], lang, per_file=10, limit=10)
    assert len(tasks) == len(EXPECTED[lang])
    for t in tasks:
        assert t["prompt"] + t["canonical_solution"] + t["suffix"] == text
        assert t["canonical_solution"].endswith("\n") and t["canonical_solution"].count("\n") == 1
        assert t["language"] == lang
        assert parse_task(t).language == lang


def test_broken_files_give_no_tasks():
    assert one_line_statements("function f( {\n  const y = 1;\n}\n", "javascript") == []


def test_a_data_file_mixes_languages_and_defaults_to_python(tmp_path):
    rows = [{"task_id": "a", "prompt": "x = ", "suffix": "\n", "canonical_solution": "1"},
            {"task_id": "b", "prompt": "let x = ", "suffix": ";\n", "canonical_solution": "1", "language": "rust"}]
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [t.language for t in load_tasks(path)] == ["python", "rust"]
    with pytest.raises(TaskFormatError, match="language"):
        parse_task({**rows[0], "language": "cobol"})


@pytest.mark.parametrize("lang, good, bad", [
    ("python", "x = 1\n", "x = (\n"),
    ("javascript", "const x = 1;\n", "const x = (;\n"),
    ("go", "package m\nvar x = 1\n", "package m\nvar x = (\n"),
    ("rust", "fn f() { let x = 1; }\n", "fn f() { let x = ; \n"),
])
def test_syntax_is_judged_in_the_task_language(lang, good, bad):
    assert syntax_valid(good, lang) and not syntax_valid(bad, lang)


def test_extra_holes_leave_out_a_committed_set_and_keep_n_per_language(tmp_path):
    """--exclude drops the holes another data file holds (by task_id), --keep takes the first N of a language after
    that; the languages stay interleaved."""
    import gzip

    from benchmarks import code_lines

    corpus = tmp_path / "corpus"
    (corpus / "files" / "valid").mkdir(parents=True)
    for lang, (name, text) in SOURCES.items():
        rows = [{"id": f"x:{i}/{name}", "text": text.replace("x + 1", f"x + {i}")} for i in range(4)]
        (corpus / "files" / "valid" / f"{lang}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    every = tmp_path / "every.jsonl"
    assert code_lines.main(["--corpus", str(corpus), "--per-language", "50", "--seed", "3", "--out", str(every)]) == 0
    tasks = [json.loads(line) for line in every.read_text().splitlines()]
    counts = {lang: sum(t["language"] == lang for t in tasks) for lang in SOURCES}
    assert counts == {lang: 4 * len(rows) for lang, rows in EXPECTED.items()}
    committed = tmp_path / "committed.jsonl.gz"
    taken = [t for t in tasks if t["language"] in ("go", "rust")][:3]
    with gzip.open(committed, "wt") as f:
        f.write("".join(json.dumps(t) + "\n" for t in taken))
    extra = tmp_path / "extra.jsonl"
    assert code_lines.main(["--corpus", str(corpus), "--per-language", "50", "--seed", "3", "--exclude",
                            str(committed), "--keep", "go=5", "--keep", "python=2", "--out", str(extra)]) == 0
    got = [json.loads(line) for line in extra.read_text().splitlines()]
    ids = [t["task_id"] for t in got]
    assert not {t["task_id"] for t in taken} & set(ids)
    want = {lang: [t["task_id"] for t in tasks if t["language"] == lang and t not in taken] for lang in SOURCES}
    assert [i for i in ids if i.startswith("go:")] == want["go"][:5]
    assert [i for i in ids if i.startswith("python:")] == want["python"][:2]
    assert [i for i in ids if i.startswith("rust:")] == want["rust"]
    assert [t["language"] for t in got[:5]] == list(SOURCES)      # interleaved, as before
    with pytest.raises(SystemExit):
        code_lines.main(["--corpus", str(corpus), "--keep", "cobol=3", "--out", str(extra)])
    with pytest.raises(SystemExit):
        code_lines.main(["--corpus", str(corpus), "--exclude", str(tmp_path / "gone.jsonl"), "--out", str(extra)])
    assert code_lines.main(["--corpus", str(tmp_path / "nothing"), "--out", str(tmp_path / "none.jsonl")]) == 2
    assert not (tmp_path / "none.jsonl").exists()


def test_header_rows_are_indented_lines_that_open_a_block():
    from benchmarks.code_lines import header_rows

    py = ("def f(items):\n    for x in items:\n        if x > 0:\n            return x\n    # a comment:\n"
          "    y = {\n        1: 2}\n    return None\n")
    # `def f` is not indented; the comment opens nothing; `y = {` is followed by a deeper line: a literal, kept
    assert header_rows(py, "python", "m.py") == [1, 2, 5]
    go = "package m\n\nfunc F(x int) int {\n\tif x > 0 {\n\t\treturn x\n\t}\n\treturn 0\n}\n"
    assert header_rows(go, "go", "m.go") == [3]
    assert header_rows("def f(:\n    if x:\n        y\n", "python", "m.py") == []     # does not parse
    tasks = line_tasks([("m.py", py)], "python", headers=True)
    assert sorted(t["canonical_solution"] for t in tasks) == ["        if x > 0:\n", "    for x in items:\n",
                                                               "    y = {\n"]
