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


def _points(shift: float, n: int = 3000, seed: int = 1) -> list[dict]:
    """Holes whose true log-odds are the estimate's plus ``shift``, in two languages."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        z = rng.uniform(-5, 3)
        out.append({"language": "c" if i % 2 else "ruby", "z": z, "invented": False,
                    "exact": rng.random() < 1 / (1 + math.exp(-(z + shift)))})
    return out


def test_the_plain_text_correction_recovers_how_much_the_estimates_overrate():
    scale, shift = calibrate_plain.fit(_points(-1.0))
    assert scale == pytest.approx(1.0, abs=0.15) and shift == pytest.approx(-1.0, abs=0.2)
    cal = Calibration({}, 0.0, min_confidence=0.05)
    points = _points(-1.0)
    per = calibrate_plain.held_out(points, cal)
    assert set(per) == {"c", "ruby"}
    for v in per.values():   # fitted on the other language: fewer offered, the estimate nearer the truth
        before, after = v["before"], v["after"]
        assert after["offered"] < before["offered"] and after["log_loss"] < before["log_loss"]
        assert abs(after["mean_estimate"] - after["precision"]) < abs(before["mean_estimate"] - before["precision"])
    # a set that is already calibrated is left about as it is
    scale, shift = calibrate_plain.fit(_points(0.0, seed=2))
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
    assert r["correction"]["shift"] < -0.5
    from engine.confidence import load_calibration

    written = load_calibration(out)
    assert written.weights == base.weights and written.min_confidence == base.min_confidence
    assert written.plain_text == (r["correction"]["scale"], r["correction"]["shift"])
    assert "400 one-line holes, c, lua" in written.plain_fitted_on


def test_the_readme_table_shows_the_plain_text_correction_per_language(tmp_path):
    from benchmarks.table import render

    side = {"holes": 10, "offered": 8, "right": 2, "precision": 0.25, "mean_estimate": 0.4, "log_loss": 0.3}
    result = {"benchmark": "calibrate-plain", "command": "python -m benchmarks.calibrate_plain --out x.json",
              "created": "2026-12-07T03:00:00+0000", "holes": 10, "correction": {"scale": 1.1, "shift": -0.9},
              "held_out_by_language": {"ruby": {"before": side, "after": {**side, "offered": 5, "precision": 0.4}}}}
    text = render([(tmp_path / "confidence-plain.json", result)], tmp_path)
    assert "| ruby | 10 | 8 -> 5 | 25.0 -> 40.0 |" in text and "log-odds x 1.1 - 0.9" in text
