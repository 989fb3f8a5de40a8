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
