"""The storm tier (issue 18): a short storm of mixed requests against a real server, and the storm's own judge."""

import json

from benchmarks import storm
from benchmarks.storm_ops import items_problem, resolve_problem

TEXT = "def f(α):\r\n    return '🙂'\n"


def _range(l0, c0, l1, c1):
    return {"start": {"line": l0, "character": c0}, "end": {"line": l1, "character": c1}}


def test_judge_flags_ranges_outside_the_requested_text():
    assert items_problem({"items": [{"insertText": "x", "range": _range(1, 4, 1, 15)}]}, TEXT) == (1, "")
    edits, problem = items_problem({"items": [{"insertText": "x", "range": _range(1, 4, 1, 16)}]}, TEXT)
    assert edits == 1 and "not in the text" in problem   # '🙂' is 2 UTF-16 units: the line has 15
    assert items_problem({"items": [{"insertText": "x", "range": _range(3, 0, 3, 0)}]}, TEXT)[1]


def test_judge_flags_an_edit_for_a_version_the_client_left():
    edit = {"edit": {"documentChanges": [{"textDocument": {"uri": "u", "version": 3},
                                          "edits": [{"range": _range(0, 0, 0, 3), "newText": "g"}]}]}}
    assert resolve_problem(edit, "u", 3, True, TEXT) == (1, "")
    assert "moved on" in resolve_problem(edit, "u", 3, False, TEXT)[1]
    assert "version 3" in resolve_problem(edit, "u", 2, True, TEXT)[1]
    assert resolve_problem({"title": "no edit"}, "u", 3, False, TEXT) == (0, "")


def test_short_storm_has_no_crash_unanswered_or_stale(tmp_path):
    out = tmp_path / "storm.json"
    assert storm.main(["--requests", "80", "--checkpoints", "40", "80", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["operations"] == 80 and result["answered"] > 0 and result["cancelled"] > 0
    assert not result["crashed"] and result["unanswered"] == 0 and result["stale"] == 0
    assert [m["after"] for m in result["memory"]] == [0, 40, 80] and all(m["rss"] > 0 for m in result["memory"])
