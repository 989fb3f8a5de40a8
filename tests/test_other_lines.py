"""Languages without a grammar: their development holes (benchmarks/other_lines.py), the task format and metrics
that hold them, and the calibration's plain-text correction fitted on them (benchmarks/calibrate_plain.py)."""

import json
import math
import random

import pytest

from benchmarks import calibrate_plain, other_lines
from benchmarks.metrics import rate, syntax_valid
from benchmarks.tasks import PLAIN_LANGUAGES, TaskFormatError, load_tasks, parse_task
from engine.confidence import Calibration

C_SOURCE = """#include <stdio.h>

int total(const int *xs, int n) {
    int s = 0;
    /* add them up */
    for (int i = 0; i < n; i++) {
        s += xs[i];
    }
    printf("%d\\n", s);
    return s;
}
"""

RUBY_SOURCE = """class Greeter
  def initialize(name)
    @name = name
    @count = 0
  end

  def greet
    @count += 1
    "Hello, #{@name}!"
  end
end
"""


def test_statement_lines_without_a_grammar():
    rows = other_lines.statement_rows(C_SOURCE, "c")
    lines = C_SOURCE.split("\n")
    assert [lines[i].strip() for i in rows] == ["int s = 0;", "s += xs[i];", 'printf("%d\\n", s);', "return s;"]
    assert [line.strip() for line in map(RUBY_SOURCE.split("\n").__getitem__,
                                         other_lines.statement_rows(RUBY_SOURCE, "ruby"))] == \
        ["@name = name", "@count = 0", "@count += 1", '"Hello, #{@name}!"']
    # not statements: a block's opener or end, a comment, an unbalanced or unindented line, a C line without `;`
    for line, language in [("    for (int i = 0; i < n; i++) {", "c"), ("    }", "c"), ("    // s += 1;", "c"),
                           ("    f(a,", "c"), ("int x = 1;", "c"), ("    x = f(a)", "c"), ("    end", "ruby"),
                           ("    if x > 0 then", "lua"), ("    -- a comment", "lua"), ("    # a comment", "perl"),
                           ('    s = f(")";', "java"), ("    return", "ruby")]:
        assert not other_lines._statement_line(line, language), line
    assert other_lines._statement_line('    s = ")" + x;', "java")   # a bracket in quotes counts for nothing


def test_other_lines_tasks_are_whole_lines_of_installed_files(tmp_path, monkeypatch):
    (tmp_path / "a.c").write_text(C_SOURCE)
    (tmp_path / "g.rb").write_text(RUBY_SOURCE)
    monkeypatch.setattr(other_lines, "SOURCES", (other_lines.Source("c", "pkg-c", str(tmp_path / "*.c"), "MIT"),
                                                 other_lines.Source("ruby", "pkg-rb", str(tmp_path / "*.rb"), "BSD"),
                                                 other_lines.Source("lua", "absent", str(tmp_path / "no/*.lua"), "-")))
    out = tmp_path / "dev.jsonl"
    assert other_lines.main(["--out", str(out), "--per-file", "2", "--languages", "c", "ruby", "lua"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["language"] for r in rows) == ["c", "c", "ruby", "ruby"]
    for r in rows:
        source = C_SOURCE if r["language"] == "c" else RUBY_SOURCE
        assert r["prompt"] + r["canonical_solution"] + r["suffix"] == source
        assert r["licence"] in ("MIT", "BSD") and r["task_id"].startswith(r["language"] + ":pkg-")
    tasks = load_tasks(out)
    assert {t.language_id for t in tasks} == {"c", "ruby"}


def test_plain_languages_are_tasks_and_have_no_syntax_verdict():
    record = {"task_id": "c:x:1", "prompt": "", "suffix": "", "canonical_solution": "x;\n"}
    for language in PLAIN_LANGUAGES:
        assert parse_task({**record, "language": language}).language == language
    with pytest.raises(TaskFormatError, match="not one of"):
        parse_task({**record, "language": "cobol"})
    assert syntax_valid("int x = ;", "c") is None and syntax_valid("x = (", "python") is False
    assert rate([None, True, False, None]) == 0.5 and rate([None]) is None


def _points(shift: float, n: int = 3000, seed: int = 1, workspace_shift: float | None = None) -> list[dict]:
    """Holes whose true log-odds are the estimate's plus ``shift``, in two languages; with ``workspace_shift``,
    every other pair of holes filled in a workspace, whose true log-odds are shifted by that much more."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        z = rng.uniform(-5, 3)
        ws = workspace_shift is not None and i % 4 >= 2
        true = z + shift + (workspace_shift or 0.0) * ws
        out.append({"language": "c" if i % 2 else "ruby", "z": z, "invented": False, "shifts": [float(ws), 0.0, 0.0],
                    "exact": rng.random() < 1 / (1 + math.exp(-true))})
    return out


def test_the_plain_text_correction_recovers_how_much_the_estimates_overrate():
    scale, shift, shifts = calibrate_plain.fit(_points(-1.0))
    assert scale == pytest.approx(1.0, abs=0.15) and shift == pytest.approx(-1.0, abs=0.2) and shifts == (0, 0, 0)
    # alone and in a workspace: each regime's shift recovered (the regimes no point is in keep 0)
    scale, shift, shifts = calibrate_plain.fit(_points(-1.0, n=6000, workspace_shift=1.2))
    assert scale == pytest.approx(1.0, abs=0.15) and shift == pytest.approx(-1.0, abs=0.25)
    assert shifts[0] == pytest.approx(1.2, abs=0.25) and shifts[1:] == (0, 0)
    per = calibrate_plain.held_out(_points(-1.0, n=6000, workspace_shift=1.2), Calibration({}, 0.0, 0.05))
    for v in per.values():
        assert set(v["by_regime"]) == {"whole line, alone", "whole line, workspace"}
        for w in v["by_regime"].values():
            after = w["after"]
            assert abs(after["mean_estimate"] - after["precision"]) < 0.05
    cal = Calibration({}, 0.0, min_confidence=0.05)
    points = _points(-1.0)
    per = calibrate_plain.held_out(points, cal)
    assert set(per) == {"c", "ruby"}
    for v in per.values():   # fitted on the other language: fewer offered, the estimate nearer the truth
        before, after = v["before"], v["after"]
        assert after["offered"] < before["offered"] and after["log_loss"] < before["log_loss"]
        assert abs(after["mean_estimate"] - after["precision"]) < abs(before["mean_estimate"] - before["precision"])
    # a set that is already calibrated is left about as it is
    scale, shift, _ = calibrate_plain.fit(_points(0.0, seed=2))
    assert scale == pytest.approx(1.0, abs=0.15) and shift == pytest.approx(0.0, abs=0.2)


def test_calibrate_plain_writes_the_correction_beside_the_weights(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    base = Calibration({"mean_log": 1.0}, 0.5, 0.05, 0.9, "five languages")
    (model / "confidence.json").write_text(json.dumps(base.to_json()))
    considered = tmp_path / "c.jsonl"
    rng = random.Random(3)
    with considered.open("w") as f:
        for i in range(400):
            m = rng.uniform(-4, 0)
            right = rng.random() < 1 / (1 + math.exp(-(0.5 + m - 1.5)))
            fills = [{"text": "x;", "features": {"mean_log": m, "plain_text": 1.0}, "exact": right}]
            f.write(json.dumps({"task_id": f"c:f:{i}", "language": "c" if i % 2 else "lua", "chosen": "x;",
                                "fills": fills}) + "\n")
        f.write(json.dumps({"task_id": "python:f:1", "language": "python", "chosen": "y", "fills": [
            {"text": "y", "features": {"mean_log": 0.0}, "exact": True}]}) + "\n")
    out = tmp_path / "model-out"
    out.mkdir()
    assert calibrate_plain.main(["--considered", str(considered), "--model", str(model),
                                 "--model-out", str(out / "confidence.json"), "--out", str(tmp_path / "r.json")]) == 0
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["holes"] == 400 and set(r["held_out_by_language"]) == {"c", "lua"}
    assert r["correction"]["shift"] < -0.5 and set(r["correction"]["shifts"].values()) == {0.0}
    from engine.confidence import load_calibration

    written = load_calibration(out)
    assert written.weights == base.weights and written.min_confidence == base.min_confidence
    assert written.plain_text == (r["correction"]["scale"], r["correction"]["shift"])
    assert dict(written.plain_shifts) == r["correction"]["shifts"]
    assert "400 one-line holes, c, lua" in written.plain_fitted_on
    # --no-fit: the written correction reported as it is on other holes (a language it was not fitted on)
    assert calibrate_plain.main(["--considered", str(considered), "--model", str(out), "--no-fit",
                                 "--out", str(tmp_path / "n.json")]) == 0
    n = json.loads((tmp_path / "n.json").read_text())
    assert n["fitted"] is False and n["correction"] == r["correction"]
    assert n["held_out_by_language"]["c"]["correction_from_the_others"] == r["correction"]
    with pytest.raises(SystemExit):   # nothing to report without a correction, and nothing written with --no-fit
        calibrate_plain.main(["--considered", str(considered), "--model", str(model), "--no-fit", "--out", "x.json"])
    with pytest.raises(SystemExit):
        calibrate_plain.main(["--considered", str(considered), "--model", str(out), "--no-fit",
                              "--model-out", str(tmp_path / "c.json"), "--out", "x.json"])


def test_the_readme_table_shows_the_plain_text_correction_per_language(tmp_path):
    from benchmarks.table import render

    side = {"holes": 10, "offered": 8, "right": 2, "precision": 0.25, "mean_estimate": 0.4, "log_loss": 0.3}
    result = {"benchmark": "calibrate-plain", "command": "python -m benchmarks.calibrate_plain --out x.json",
              "created": "2026-12-07T03:00:00+0000", "holes": 10, "correction": {"scale": 1.1, "shift": -0.9},
              "held_out_by_language": {"ruby": {"before": side, "after": {**side, "offered": 5, "precision": 0.4}}}}
    text = render([(tmp_path / "confidence-plain.json", result)], tmp_path)
    assert "| ruby | - | 10 | 8 -> 5 | 25.0 -> 40.0 |" in text and "log-odds x 1.1 - 0.9." in text
    result["correction"]["shifts"] = {"plain_workspace": 1.2, "kind_inline": 0.0, "plain_workspace_inline": -0.5}
    result["held_out_by_language"]["ruby"]["by_regime"] = {
        "whole line, alone": {"before": side, "after": side},
        "typed, workspace": {"before": side, "after": {**side, "precision": 0.5}}}
    text = render([(tmp_path / "confidence-plain.json", result)], tmp_path)
    assert "| ruby | whole line, alone | 10 | 8 -> 8 | 25.0 -> 25.0 |" in text
    assert "| ruby | typed, workspace | 10 | 8 -> 8 | 25.0 -> 50.0 |" in text
    assert "log-odds x 1.1 - 0.9, + 1.2 where `plain_workspace`, - 0.5 where `plain_workspace_inline`." in text


# -- a plain-text language's fills checked by a grammar (engine/validate.py: plain_syntax_check) -------------------

CHECKED = {   # language: (document with the hole's line empty, a fill that parses, fills that do not)
    # (the blank line after the ``#include`` joined: the hole, the first blank line, is the loop's body's line)
    "c": (C_SOURCE.replace("<stdio.h>\n\n", "<stdio.h>\n").replace("        s += xs[i];\n", "\n"),
          "        s *= xs[i];",
          ["        if (s > 0) {", "        s *= xs[i]", "        f(s;"]),
    "java": ("class A {\n    int f(int[] xs) {\n        int s = 0;\n\n        return s;\n    }\n}\n",
             "        s = xs.length;", ["        for (int x : xs) {", "        s = xs.length", "        s = (1;"]),
    "ruby": (RUBY_SOURCE.replace("    @count += 1\n", "\n"), "    @count -= 1",
             ["    if @count > 0", "    def shout", "    @count = (1"]),
    "lua": ("local function f(xs)\n  local s = 0\n\n  return s\nend\n", "  s = #xs",
            ["  if s > 0 then", "  for i = 1, #xs do", "  s = (1"]),
    "perl": ("sub f {\n    my $s = 0;\n\n    return $s;\n}\n", "    $s = 1;", ["    if ($s) {", "    $s = (1;"]),
    "cpp": ("namespace n {\ntemplate <typename T>\nT sum(const std::vector<T>& xs) {\n    T s{};\n\n    return s;\n}\n"
            "}  // namespace n\n", "    for (const auto& x : xs) s += x;",
            ["    for (const auto& x : xs) {", "    s += xs[0]", "    s = std::accumulate(xs.begin(;"]),
}


@pytest.mark.parametrize("language", sorted(CHECKED))
def test_a_plain_text_languages_fill_that_adds_a_syntax_error_is_refused(language):
    from engine.languages import check_spec, spec_for
    from engine.validate import plain_syntax_check

    if check_spec(language) is None:
        pytest.skip(f"tree_sitter_{language} is not installed")
    text, good, bad = CHECKED[language]
    at = text.index("\n\n") + 1
    check = plain_syntax_check(check_spec(language), text, at, at)
    assert check is not None and check(good)
    for fill in bad:
        assert not check(fill), fill
    # an error of the user's far above (their broken line) never refuses a fill that parses: where the grammar's
    # recovery runs over the hole, there is no verdict
    far = "x = (\n" + "\n" * 300 if language not in ("c", "cpp") else "int x = (\n" + "\n" * 300
    check = plain_syntax_check(check_spec(language), far + text, len(far) + at, len(far) + at)
    assert check(good)


# a line typed to its middle: (document with "<C>" at the cursor, a rest that finishes the line, rests that leave it
# as broken as the user had it: the string still open, the statement without its end; a broken line of the user's
# that the grammar keeps to itself, put far below)
TYPED = {
    "c": ('int main(void) {\n    const char *msg;\n    msg = "Specified pre<C>\n    return puts(msg);\n}\n',
          'set is not supported";', ["set;", "set is not"], "int y = ;\n"),
    "cpp": ("int f(std::vector<int>& xs) {\n    int n = xs.si<C>\n    return n;\n}\n", "ze();", ["ze()"], "int y = ;\n"),
    "java": ("class A {\n    int f(int[] xs) {\n        int n = xs.len<C>\n        return n;\n    }\n}\n", "gth;",
             ["gth", "gth + f(xs"], "class B { int y = ; }\n"),
    "ruby": ("def f(xs)\n  n = xs.map { |x| x * <C>\n  n.sum\nend\n", "2 }", ["2"], "y = (1\n"),
    "lua": ("local function f(xs)\n  local n = select(<C>\n  return n\nend\n", "'#', xs)", ["'#', xs"], "local y = (1\n"),
    "perl": ("sub f {\n    my $s = join(<C>\n    return $s;\n}\n", '",", @_);', ['",", @_'], "my $y = (1;\n"),
}


@pytest.mark.parametrize("language", sorted(TYPED))
def test_a_plain_text_fill_must_finish_the_line_the_user_left_broken(language):
    """``msg = "Specified pre<C>`` -> ``set;`` adds no error (the user's open string was one already), but leaves
    the line as broken as it was: refused, as ``finishes_line`` refuses it in the languages with a grammar, and so
    where the user has a broken line of their own far below. Not in a rewrite (``finish=False``), whose selection
    may be what is broken: there only an error the fill adds refuses it."""
    from engine.languages import check_spec
    from engine.validate import _DocumentParses, plain_syntax_check

    check_grammar = check_spec(language)
    if check_grammar is None:
        pytest.skip(f"tree_sitter_{language} is not installed")
    document, good, bad, broken = TYPED[language]
    at = document.index("<C>")
    for text in (document.replace("<C>", ""), document.replace("<C>", "") + "\n" * 40 + broken):
        check = plain_syntax_check(check_grammar, text, at, at)
        assert check(good)
        for fill in bad:
            assert not check(fill), fill
        in_a_rewrite = plain_syntax_check(check_grammar, text, at, at, finish=False)
        adds_none = _DocumentParses(check_grammar, text, at, at)
        for fill in bad:
            assert in_a_rewrite(fill) is adds_none(fill, confirm=True), fill


# inside the closer an editor put after the cursor: (document with "<C>" at the cursor, the right fill)
CLOSED = {
    "c": ("int main(void) {\n    printf(<C>)\n    return 0;\n}\n", '"hello\\n"'),
    "cpp": ("int f() {\n    std::printf(<C>)\n    return 0;\n}\n", '"hi"'),
    "java": ("class A {\n    void f() {\n        System.out.println(<C>)\n        return;\n    }\n}\n", '"hi"'),
    "perl": ("sub f {\n    print(<C>)\n    return 1;\n}\n", '"hi"'),
}


@pytest.mark.parametrize("language", sorted(CLOSED))
def test_a_plain_text_fill_inside_an_editors_closers_is_not_asked_for_the_lines_end(language):
    """``printf(|)`` as an editor that closes brackets shows it: the line's ``;`` goes after the ``)``, where no fill
    reaches, so the line stays without it whatever the fill; the fill is judged on the errors it adds."""
    from engine.languages import check_spec
    from engine.validate import plain_syntax_check

    check_grammar = check_spec(language)
    if check_grammar is None:
        pytest.skip(f"tree_sitter_{language} is not installed")
    document, good = CLOSED[language]
    at = document.index("<C>")
    text = document.replace("<C>", "")
    check = plain_syntax_check(check_grammar, text, at, at)
    assert check(good)
    assert not check(good + ") {")   # an error the fill adds still refuses it


def test_only_plain_text_languages_with_a_check_grammar_are_checked():
    from engine.languages import check_spec, spec_for
    from engine.validate import plain_syntax_check

    assert check_spec("python") is None and check_spec("go") is None and check_spec("cobol") is None
    if check_spec("cpp") is not None:   # eglot's ids, after the major mode: c++-mode, cperl-mode
        assert check_spec("c++") == check_spec("cpp") and check_spec("CPerl") == check_spec("perl")
    assert plain_syntax_check(None, "x = 1\n", 0, 0) is None
    from engine.validate import PLAIN_CHECK_LIMIT

    if check_spec("c") is not None:   # a document too large to parse for each request is not checked
        big = "int x;\n" * (PLAIN_CHECK_LIMIT // 7 + 1)
        assert plain_syntax_check(check_spec("c"), big, 0, 0) is None
        assert plain_syntax_check(check_spec("c"), big[:PLAIN_CHECK_LIMIT // 2], 0, 0) is not None


def test_the_engine_withholds_a_c_line_that_opens_a_block_without_its_body():
    """Through ``complete``: a backend whose only fill is an ``if`` header between two statements of a C body. As
    plain text nothing parsed it and it was offered; the C grammar's check refuses it, and a statement is offered."""
    from benchmarks.refusals import RightFill
    from engine.backends.base import Control
    from engine.config import FillOptions
    from engine.infill import complete
    from engine.requests import InfillRequest
    from tests.scripted import ScriptedBackend
    from engine.config import LoadConfig
    from engine.languages import check_spec

    if check_spec("c") is None:
        pytest.skip("tree_sitter_c is not installed")
    text, _, _ = CHECKED["c"]
    at = text.index("\n\n") + 1
    backend = RightFill(ScriptedBackend(LoadConfig()))
    options = FillOptions(min_confidence=0.0, document_lines=False, common_lines=False, workspace_lines=False)
    for truth, offered in (("        if (s > 0) {", False), ("        s *= xs[i];", True)):
        backend.truth = truth
        c = complete(backend, options, InfillRequest(text, at, "c", options=options), Control(lambda step: None))
        assert bool(c.fills) is offered and (not offered or c.fills[0].text.strip() == truth.strip())
        assert c.syntax_checked and (c.rejected > 0) is not offered


@pytest.mark.parametrize("language, comment, code", [
    ("c", "/* add them up */", "*total += 1;"), ("java", "// the sum", "s += 1;"), ("ruby", "# the count", "@count += 1"),
    ("lua", "-- the sum", "s = s + 1"), ("perl", "# the sum", "$s += 1;"), ("cpp", "// the sum", "*it += 1;")])
def test_a_comment_alone_is_no_plain_text_line_unless_a_comment_borders_it(language, comment, code):
    """As in the languages with a grammar (``comment_only``): the check grammar tells a comment from code (C's
    ``*total += 1;`` starts like a comment's line and is code)."""
    from engine.languages import check_spec, spec_for
    from engine.validate import comment_only

    check = check_spec(language)
    if check is None:
        pytest.skip(f"tree_sitter_{language} is not installed")
    spec = spec_for(language)
    prefix, suffix = "    x = 1\n    ", "\n    y = 2\n"
    assert comment_only(spec, prefix, comment, suffix, check)
    assert not comment_only(spec, prefix, code, suffix, check)
    assert not comment_only(spec, "    " + comment + "\n    ", comment, suffix, check)   # among comments: kept
    assert not comment_only(spec, prefix, comment, suffix)   # without the check grammar: no verdict


C_HELPER = """#include "zorblax.h"

static int setup(struct ctx *ctx) {
    struct opts opts = {0};
    zorblax_register_quux_handler(ctx, &opts);
    return 0;
}
"""


def test_a_workspace_counts_plain_text_languages_by_their_own_id_and_the_adapter_does_not(tmp_path):
    """C, Java, Ruby, Perl and Lua files count in a workspace's tables of their own (``languages.lines_name``):
    C's lines are not Ruby's, and a language with neither a grammar nor a table (COBOL) has none. The adapter's
    listing still takes the grammar languages only (its held-out holes are found by their grammar)."""
    import subprocess

    from engine import worklines
    from engine.adapt.files import listed, workspace_files
    from engine.languages import language_for_path, lines_name, source_glob

    assert [language_for_path(p) for p in ("a.c", "a.H", "A.java", "a.rb", "a.pm", "a.pl", "a.lua", "a.cob")] == \
        ["c", "c", "java", "ruby", "perl", "perl", "lua", "plaintext"]
    assert {language_for_path(p) for p in ("a.cpp", "a.cc", "a.cxx", "a.hpp", "a.hh", "a.hxx")} == {"cpp"}
    assert [lines_name(i) for i in ("C", "ruby", "cpp", "c++", "cperl", "typescriptreact", "js", "cobol", "")] == \
        ["c", "ruby", "cpp", "cpp", "perl", "typescriptreact", "javascript", "plaintext", "plaintext"]
    assert all(f",{ext}," in "," + source_glob()[len("**/*.{"):-1] + "," for ext in ("c", "h", "java", "rb", "lua", "py"))
    root = tmp_path / "proj"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "a.c").write_text(C_HELPER)
    (root / "b.c").write_text("int main(void) {\n    zorblax_register_quux_handler(ctx, &opts);\n}\n")
    (root / "g.rb").write_text(RUBY_SOURCE)
    (root / "m.py").write_text("import os\n")
    (root / "notes.txt").write_text("zorblax_register_quux_handler(ctx, &opts);\n")
    ws = worklines.scan(root)
    assert ws.files == 4
    c = ws.table("c")
    assert c is not None and "zorblax_register_quux_handler(ctx, &opts);" in c.lines
    assert list(c.files)[c.lines.index("zorblax_register_quux_handler(ctx, &opts);")] == 2
    assert "@count += 1" in ws.table("ruby").lines and "@count += 1" not in c.lines
    assert ws.table(lines_name("cobol")) is None and ws.table("java") is None
    assert ws.indent_unit("c") == "    "
    # C++ shares C's table: a C++ project's headers are often .h, which count as C
    ws.update("x.cpp", "cpp", "void f() {\n    zorblax_only_in_cpp();\n}\n")
    ws.refresh()
    assert ws.table("cpp") is ws.table("c") and "zorblax_only_in_cpp();" in ws.table("c").lines
    ws.remove("x.cpp")
    ws.refresh()
    assert [f.path for f in workspace_files(root)] == ["m.py"]
    assert [f.path for f in workspace_files(root, plain=True)] == ["a.c", "b.c", "g.rb", "m.py"]
    assert listed(root, ["a.c", "m.py", "notes.txt"]) == {"m.py"}
    assert listed(root, ["a.c", "m.py", "notes.txt"], plain=True) == {"a.c", "m.py"}


def test_the_engine_fills_a_typed_c_line_from_another_c_file_of_the_workspace(embedded_engine):
    """Through the real model: the rest of a typed C line that only another C file of the workspace has is offered,
    marked as a workspace line; a Ruby document of the same workspace never gets C's lines."""
    from engine import InfillRequest, worklines

    ws = worklines.Workspace()
    ws.update("a.c", "c", C_HELPER)
    ws.update("b.c", "c", "int main(void) {\n    zorblax_register_quux_handler(ctx, &opts);\n}\n")
    ws.refresh()
    worklines.register("test:c", ws)
    try:
        # (no neighbour of the line is in the workspace: the line comes from its table of C lines)
        text = "#include \"zorblax.h\"\n\nint start(struct ctx *ctx, struct opts opts) {\n    zorblax_reg\n" \
               "    return restart(ctx);\n}\n"
        cursor = text.index("zorblax_reg\n") + len("zorblax_reg")
        c = embedded_engine.infill_sync(InfillRequest(text, cursor, "c", workspace="test:c"), timeout=60)
        assert c.fills and c.fills[0].text == "ister_quux_handler(ctx, &opts);"
        assert c.fills[0].workspace is not None
        off = embedded_engine.infill_sync(InfillRequest(text, cursor, "c"), timeout=60)
        assert not off.fills or off.fills[0].text != "ister_quux_handler(ctx, &opts);"
        rb = "def start(ctx)\n  zorblax_reg\n  0\nend\n"
        r = embedded_engine.infill_sync(InfillRequest(rb, rb.index("reg\n") + 3, "ruby", workspace="test:c"),
                                        timeout=60)
        assert all(f.workspace is None for f in r.fills)
    finally:
        worklines.unregister("test:c")


def test_a_plain_text_holes_benchmark_workspace_is_its_packages_other_files(tmp_path, monkeypatch):
    from benchmarks.tasks import Task
    from benchmarks.workspaces import PackageWorkspaces
    from engine import worklines
    from engine.adapt import files

    (tmp_path / "a.c").write_text(C_HELPER)
    (tmp_path / "b.c").write_text("int main(void) {\n    only_in_b();\n}\n")
    (tmp_path / "big.c").write_text("int big;\n" * 30)
    (tmp_path / "g.rb").write_text(RUBY_SOURCE)
    monkeypatch.setattr(other_lines, "SOURCES", (other_lines.Source("c", "pkg-c", str(tmp_path / "*.c"), "MIT"),
                                                 other_lines.Source("ruby", "pkg-rb", str(tmp_path / "*.rb"), "BSD")))
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 200)   # big.c is over it: an editor's listing skips it
    ws = PackageWorkspaces()
    task = lambda name, lang: Task(f"{lang}:{name}:2", "", "", "", language=lang)   # noqa: E731
    a, b, g = task(f"pkg-c{tmp_path}/a.c", "c"), task(f"pkg-c{tmp_path}/b.c", "c"), task(f"pkg-rb{tmp_path}/g.rb",
                                                                                          "ruby")
    assert [t.task_id for t in ws.grouped([b, g, a])] == [a.task_id, b.task_id, g.task_id]
    key = ws.key(a)
    assert key == "bench:pkg-c" and ws.path(a) == f"pkg-c{tmp_path}/a.c"
    lines = worklines.lookup(key).table("c").lines
    assert "only_in_b();" in lines and "zorblax_register_quux_handler(ctx, &opts);" not in lines
    assert "int big;" not in lines
    ws.key(b)   # a.c back, b.c out
    lines = worklines.lookup(key).table("c").lines
    assert "only_in_b();" not in lines and "zorblax_register_quux_handler(ctx, &opts);" in lines
    assert ws.key(g) == "bench:pkg-rb" and worklines.lookup(key) is None
    assert worklines.lookup("bench:pkg-rb").table("ruby") is None   # its one file is the hole's
    # a package not installed: no workspace, and the one loaded stays as it was
    assert ws.key(task(f"pkg-none{tmp_path}/x.c", "c")) is None
    assert ws.key(g) == "bench:pkg-rb" and worklines.lookup("bench:pkg-rb").table("ruby") is None
    ws.key(a)
    assert "only_in_b();" in worklines.lookup("bench:pkg-c").table("c").lines
    worklines.unregister("bench:pkg-c")


def test_the_server_counts_a_c_folder_and_a_saved_c_file_and_offers_their_lines(tmp_path):
    """Through a real server: a folder's C files are counted (its notes are not), the watcher's glob names C's
    extensions, and a C line only another C file has fills a typed line; a C file saved later counts too."""
    import subprocess
    import sys

    from benchmarks.lsp_client import LspClient
    from tests.test_worklines import inline_texts, start_watching_server, wait_until

    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "a.c").write_text(C_HELPER)
    (root / "b.h").write_text("void zorblax_register_quux_handler(struct ctx *ctx, struct opts *opts);\n")
    (root / "notes.txt").write_text("zorblax_plumbus_fleeb(ctx);\n")
    doc = root / "main.c"
    text = "#include \"zorblax.h\"\n\nint start(struct ctx *ctx, struct opts opts) {\n    zorblax_\n" \
           "    return restart(ctx);\n}\n"
    doc.write_text(text)
    uri = doc.as_uri()
    with LspClient([sys.executable, "-m", "lsp_server"]) as client:
        glob, stats = start_watching_server(client, root)
        assert {"c", "h", "java", "py"} <= set(glob[len("**/*.{"):-1].split(","))
        assert stats["workspaceLines"]["files"] == 3   # a.c, b.h, main.c; not notes.txt
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "c", "version": 1,
                                                                "text": text}})
        at = {"line": 3, "character": len("    zorblax_")}

        def offered():
            return inline_texts(client, uri, at)

        assert "register_quux_handler(ctx, &opts);" in offered()
        other = root / "c.c"
        other.write_text("void go(struct ctx *ctx) {\n    zorblax_plumbus_fleeb(ctx);\n}\n")
        client.notify("textDocument/didOpen", {"textDocument": {"uri": other.as_uri(), "languageId": "c",
                                                                "version": 1, "text": other.read_text()}})
        client.notify("textDocument/didSave", {"textDocument": {"uri": other.as_uri()}})
        wait_until(lambda: client.request("diffusion/stats", {})["workspaceLines"]["files"] == 4)
        edited = text.replace("    zorblax_\n", "    zorblax_p\n")
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                 "contentChanges": [{"text": edited}]})
        at = {"line": 3, "character": len("    zorblax_p")}
        assert "lumbus_fleeb(ctx);" in offered()
