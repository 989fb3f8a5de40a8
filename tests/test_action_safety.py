"""benchmarks/action_safety.py: its checks on known edits, and a smoke run on the real server (embedded model) over
the synthetic documents (an empty file, one line without a line break, a CRLF line) and a small Python file."""

from __future__ import annotations

import json

import pytest

from benchmarks.action_safety import (action_documents, action_places, apply_edits, check_cursor_edit, check_result,
                                      STUB_LINE, functions, main)


def _edit(text: str, start: int, end: int, new: str) -> dict:
    from benchmarks.lsp_client import position_at
    return {"range": {"start": position_at(text, start), "end": position_at(text, end)}, "newText": new}


def test_the_checks_catch_each_kind_of_damage():
    text = "def f(x):\r\n    s = '😀'\r\n    return x\r\n"
    at = text.index("return x") + len("return x")
    after, spans = apply_edits(text, [_edit(text, at, at, " + 1")])
    assert check_cursor_edit(text, at, spans[0]) == [] and check_result(text, after, "python", spans) == []
    bad = {"place": _edit(text, at - 3, at + 2, " y"), "eol": _edit(text, at, at, "\n    y = 1"),
           "parse": _edit(text, at, at, " + (x"), "text": _edit(text, at, at, " + '\ufffd'"),
           "dup": _edit(text, text.index("    return"), text.index("    return"), "    return x\r\n")}
    for kind, edit in bad.items():
        after, spans = apply_edits(text, [edit])
        found = check_cursor_edit(text, at, spans[0]) if kind == "place" else check_result(text, after, "python",
                                                                                           spans)
        assert {v.split(":")[0] for v in found} == {kind}, (kind, found)
    # UTF-16: the emoji is two units; an edit after it lands after it
    quote = text.index("'", text.index("😀"))
    assert apply_edits(text, [_edit(text, quote, quote, "!")])[0].count("😀!'") == 1


def test_code_actions_reach_every_language():
    # --action-files is per language: the list was cut at files x languages x 2 documents in language order, so
    # with 6 files picked per language the first language took every place and the last ones none
    picked = {lang: [(f"{lang}-{i}.x", "a\nb\n") for i in range(6)] for lang in ("python", "go", "rust")}
    docs = action_documents(picked, 2)
    assert [(name, lang) for name, lang, _ in docs] == [
        (f"{lang}-{i}.x{crlf}", lang) for lang in picked for i in range(2) for crlf in ("", " [crlf]")]
    assert docs[1][2] == "a\r\nb\r\n"


FUNCTION = {
    "python": "def f(x):\n    a = 1\n    b = 2\n    c = (a, b)\n    return c\n",
    "javascript": "function f(x) {\n  const a = 1;\n  const b = 2;\n  const c = f(a, b);\n  return c;\n}\n",
    "typescript": "function f(x: number) {\n  const a = 1;\n  const b = 2;\n  const c = f(a, b);\n  return c;\n}\n",
    "go": "package m\n\nfunc F(x int) int {\n\ta := 1\n\tb := 2\n\tc := F(a + b)\n\treturn c\n}\n",
    "rust": "fn f(x: i32) -> i32 {\n    let a = 1;\n    let b = 2;\n    let c = f(a + b);\n    c\n}\n",
}


@pytest.mark.parametrize("language", sorted(FUNCTION))
def test_every_language_has_action_places(language):
    """Before: Go's body block holds its statements in a statement_list, so no Go function was found and the
    benchmark placed no Go action (0 of 79 Go development files)."""
    text = FUNCTION[language]
    (start, end, stmts), = functions(text, language)
    assert len(stmts) == 4 and text[stmts[0][0]:].startswith(("a = 1", "const a", "a :=", "let a"))
    places = action_places(text, language)
    assert [kind for kind, *_ in places] == ["selection", "cursor", "stubbed", "stubline", "broken"]
    (_, stubbed, at, _), = [p for p in places if p[0] == "stubline"]
    assert stubbed[at:].startswith(STUB_LINE[language]) and stubbed.count("\n") == text.count("\n")
    # the survey finds the stub line as a hole, and the engine fills it as a line among code
    from engine.oneline import line_holes
    from engine.requests import FillRequest
    from engine.targets import survey
    found = survey(stubbed, language, at + 1, at + 1)
    assert line_holes(FillRequest(stubbed, language, found.blanks)) is not None, found.blanks


def test_a_smoke_run_through_the_real_server_finds_no_damage(tmp_path):
    out = tmp_path / "safety.json"
    assert main(["--corpus", str(tmp_path / "no-corpus"), "--languages", "python", "--limit", "12",
                 "--out", str(out)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["positions"] >= 8 and result["action_places"] >= 3
    assert result["violations"] == {}, [r for r in result["rows"] if r["violations"]]


PLAIN_FUNCTION = {
    "c": "int f(int x) {\n  int a = 1;\n  int b = 2;\n  int c = g(a, b);\n  return c;\n}\n",
    "cpp": "int f(int x) {\n  auto a = 1;\n  auto b = 2;\n  auto c = g(a, b);\n  return c;\n}\n",
    "java": "class A {\n  int f(int x) {\n    int a = 1;\n    int b = 2;\n    int c = g(a, b);\n    return c;\n  }\n}\n",
    "ruby": "def f(x)\n  a = 1\n  b = 2\n  c = g(a, b)\n  c\nend\n",
    "perl": "sub f {\n  my $a = 1;\n  my $b = 2;\n  my $c = g($a, $b);\n  return $c;\n}\n",
    "lua": "function f(x)\n  local a = 1\n  local b = 2\n  local c = g(a, b)\n  return c\nend\n",
}


@pytest.mark.parametrize("language", sorted(PLAIN_FUNCTION))
def test_the_languages_filled_as_plain_text_are_judged_by_their_check_grammar(language):
    """C, C++, Java, Ruby, Perl and Lua get fills too (plain text, checked by a grammar): the benchmark finds their
    functions and counts their syntax errors with the check grammar, so a fill that breaks the parse is caught."""
    from benchmarks.action_safety import errors_of, synthetic
    text = PLAIN_FUNCTION[language]
    (_, _, stmts), = functions(text, language)
    assert len(stmts) == 4
    assert [kind for kind, *_ in action_places(text, language)] == ["selection", "cursor", "stubbed", "stubline",
                                                                    "broken"]
    at = text.index("g(a") if "g(a" in text else text.index("g($a")
    assert errors_of(text, language) == 0
    after, spans = apply_edits(text, [_edit(text, at, at, "(")])
    assert errors_of(after, language) > 0
    assert any(v.startswith("parse") for v in check_result(text, after, language, spans))
    for doc in synthetic(language):
        assert errors_of(doc.text, language) == 0, doc.name


def test_plain_files_are_the_development_holes_files(tmp_path):
    from benchmarks.action_safety import plain_files
    body = "x\n" * 500
    rows = [{"task_id": f"c:pkg/a.c:{i}", "prompt": body[:2 * i], "canonical_solution": "x\n",
             "suffix": body[2 * i + 2:]} for i in (3, 9)]
    rows.append({"task_id": "lua:pkg/tiny.lua:1", "prompt": "", "canonical_solution": "x\n", "suffix": ""})
    (tmp_path / "other-dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert plain_files(tmp_path, ("c", "lua")) == {"c": [("pkg/a.c", body)], "lua": []}
