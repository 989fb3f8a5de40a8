"""benchmarks/action_safety.py: its checks on known edits, and a smoke run on the real server (embedded model) over
the synthetic documents (an empty file, one line without a line break, a CRLF line) and a small Python file."""

from __future__ import annotations

import json

from benchmarks.action_safety import action_documents, apply_edits, check_cursor_edit, check_result, main


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


def test_a_smoke_run_through_the_real_server_finds_no_damage(tmp_path):
    out = tmp_path / "safety.json"
    assert main(["--corpus", str(tmp_path / "no-corpus"), "--languages", "python", "--limit", "12",
                 "--out", str(out)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["positions"] >= 8 and result["action_places"] >= 3
    assert result["violations"] == {}, [r for r in result["rows"] if r["violations"]]
