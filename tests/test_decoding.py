"""Decoding tuned per language for one model (engine/decoding.py): the model directory's serving.json says, per
language, the slot counts a one-line hole is tried at, the step budget and the accept threshold; a request takes
them where its options are at their defaults, a value the user set wins, other languages keep the engine's, and a
broken entry fails the load naming the file and the entry."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from engine import Engine, EngineConfig, HoleKind, InfillRequest, ModelLoadError
from engine.config import EMBEDDED_DIR, FillOptions
from engine.decoding import for_language, load_table


def _model(tmp_path, serving: dict | str):
    model = tmp_path / "model"
    model.mkdir()
    for f in EMBEDDED_DIR.iterdir():
        (model / f.name).symlink_to(f)
    (model / "serving.json").write_text(serving if isinstance(serving, str) else json.dumps(serving))
    return model


def test_the_table_applies_where_the_options_are_at_their_defaults(tmp_path):
    model = _model(tmp_path, {"quantization": "none",
                              "decoding": {"go": {"line_lengths": [16], "steps": 12}, "rust": {"threshold": 0.8}}})
    table = load_table(model)
    assert table == {"go": {"line_lengths": (16,), "steps": 12}, "rust": {"threshold": 0.8}}
    base = FillOptions()
    assert for_language(table, base, "go") == replace(base, line_lengths=(16,), steps=12)
    assert for_language(table, base, "python") is base                       # not tuned: the engine's
    assert for_language(table, replace(base, steps=4), "go").steps == 4       # the user's own value wins
    assert for_language(table, base, "rust").threshold == 0.8
    assert load_table(tmp_path / "nowhere") == {} and load_table(None) == {}


@pytest.mark.parametrize("decoding, says", [({"go": {"slots": 3}}, "decoding for 'go' must be an object with"),
                                            ({"go": {"steps": 0}}, "go.steps = 0 is not a valid value"),
                                            ({"go": {"line_lengths": []}}, "go.line_lengths = [] is not"),
                                            ({"go": {"line_lengths": [8, "x"]}}, "go.line_lengths"),
                                            ({"go": {"threshold": True}}, "go.threshold = True"),
                                            (["go"], "decoding must be an object of languages")])
def test_a_broken_entry_fails_the_load_naming_it(tmp_path, decoding, says):
    model = _model(tmp_path, {"decoding": decoding})
    with pytest.raises(ModelLoadError, match=re.escape(says)):
        load_table(model)
    engine = Engine(EngineConfig.of(model=str(model), threads=1))
    try:                                              # through the engine: a failed load, not a half-ready engine
        with pytest.raises(ModelLoadError, match=re.escape(says)):
            engine.start().result(timeout=120)
        with pytest.raises(Exception):
            engine.infill_sync(InfillRequest(text="x = \n", offset=4, language="python"), timeout=30)
    finally:
        engine.close()


def test_a_tuned_language_runs_its_own_line_lengths_and_the_others_the_engines(tmp_path):
    model = _model(tmp_path, {"decoding": {"go": {"line_lengths": [16]}}})
    engine = Engine(EngineConfig.of(model=str(model), threads=1, min_confidence=0.0))
    try:
        engine.start().result(timeout=120)

        def slots(text: str, offset: int, language: str) -> set[int]:
            seen: set[int] = set()
            engine.infill_sync(InfillRequest(text=text, offset=offset, language=language, kind=HoleKind.LINE),
                               on_draft=lambda d: seen.add(d.slots), timeout=120)
            return seen - {0}
        go = "package main\n\nfunc add(a, b int) int {\n\t\n}\n"
        py = "def add(a, b):\n    \n\nprint(add(1, 2))\n"
        assert slots(go, go.index("\t\n") + 1, "go") == {16}
        assert slots(py, py.index("    \n") + 4, "python") == {8, 24}
    finally:
        engine.close()


def _scored(exact: list[str], ms: float = 100.0, sim: float = 0.5) -> dict:
    return {"n": 50, "exact": len(exact), "exact_holes": exact, "edit_similarity": sim, "engine_ms_p50": ms}


def test_tuning_adopts_a_candidate_only_on_a_significant_gain_within_the_time_bound():
    import argparse

    from benchmarks.tune_decoding import choose

    args = argparse.Namespace(max_p=0.2, max_slowdown=1.25)
    base = _scored(["a", "b"])
    stage = {"defaults": base,
             "one more": _scored(["a", "b", "c"]),                              # p 0.5: churn, not adopted
             "five more": _scored(["a", "b", "c", "d", "e", "f", "g"]),          # p 0.03: adopted
             "six more, slow": _scored(list("abcdefgh"), ms=200.0)}              # better, but twice as slow
    key, best = choose(stage, base, args)
    assert key == "five more" and best["versus_defaults"] == {"only_defaults": 0, "only_candidate": 5,
                                                              "p_one_sided": 0.0312}
    assert not stage["one more"]["adoptable"] and not stage["six more, slow"]["adoptable"]
    assert choose({"defaults": base, "worse": _scored(["a"])}, base, args)[0] == "defaults"


def test_tune_decoding_runs_the_engine_per_language_and_writes_what_it_adopts(tmp_path):
    from benchmarks import tune_decoding

    model = _model(tmp_path, {"quantization": "none"})
    out = tmp_path / "tune.json"
    dev = "benchmarks/data/code-lines.jsonl.gz"
    assert tune_decoding.main(["--model", str(model), "--tune", dev, "--confirm", dev, "--per-language", "2",
                               "--languages", "python", "go", "--lengths", "16", "--step-budgets", "8",
                               "--max-p", "1.0", "--write", str(model), "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    assert set(r["languages"]) == {"python", "go"}
    for lang, v in r["languages"].items():
        stages = v["tune"]
        assert set(stages["lengths"]) == {"defaults", "lengths 16, steps 16"}
        assert any(k.endswith("steps 8") for k in stages["steps"])
        assert stages["lengths"]["defaults"]["n"] == 2 and v["confirm"]["defaults"]["n"] == 2
        assert (v["adopted"] == "defaults") == (not v["decoding"])
    serving = json.loads((model / "serving.json").read_text())
    assert serving["quantization"] == "none"                                 # other keys kept
    assert serving.get("decoding", {}) == {lang: v["decoding"] for lang, v in r["languages"].items() if v["decoding"]}
    chosen = {"go": {"decoding": {"line_lengths": [16]}}, "python": {"decoding": {}}}
    tune_decoding.write_serving(model, chosen)
    assert load_table(model) == {"go": {"line_lengths": (16,)}}
    he = tmp_path / "HumanEval-SingleLineInfilling.jsonl.gz"
    assert tune_decoding.main(["--tune", str(he), "--confirm", dev, "--out", str(out)]) == 2


def test_the_readme_section_renders_a_tuning_run(tmp_path):
    from benchmarks import table, tune_decoding

    model = _model(tmp_path, {})
    out = tmp_path / "results" / "tune-decoding.json"
    dev = "benchmarks/data/code-lines.jsonl.gz"
    assert tune_decoding.main(["--model", str(model), "--tune", dev, "--confirm", dev, "--per-language", "1",
                               "--languages", "rust", "--lengths", "16", "--step-budgets", "8",
                               "--out", str(out)]) == 0
    block = table.render(table.load_results(out.parent), tmp_path)
    assert "### Decoding per language: chosen on one development set, confirmed on another" in block
    assert "| rust | " in block and " of 1 |" in block
