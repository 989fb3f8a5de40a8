"""Lines code often has as fills for the rest of a typed line: the table, its lookup, the options, the ranking."""

import gzip
import json
import math
from dataclasses import replace

import pytest

from engine import InfillRequest
from engine.backends.base import Candidate, Control
from engine.commonlines import read_table, table
from engine.config import FillOptions
from engine.confidence import features
from engine.context import decide_hole
from engine.doclines import line_options
from engine.infill import PRIOR_OFFSET, PRIOR_WEIGHT, complete, copy_rank
from engine.languages import spec_for
from engine.requests import HoleFill, HoleKind
from engine.training import common_lines
from tests.test_doclines import Scoring

PY = spec_for("python")


def test_the_shipped_tables_give_the_most_frequent_lines_with_the_typed_start_and_their_share():
    for language in ("python", "javascript", "typescript", "go", "rust"):
        assert table(language) is not None and len(table(language).lines) > 10_000
    got = table("python").starting_with("import n")
    assert got[0][0] == "import numpy as np"
    assert all(line.startswith("import n") for line, _ in got)
    priors = [p for _, p in got]
    assert priors == sorted(priors, reverse=True) and all(p <= 0 for p in priors)
    assert sum(math.exp(p) for p in priors) <= 1.0 + 1e-9      # shares of the lines that start so
    assert len(table("python").starting_with("r", most=5)) == 5
    assert table("go").starting_with("return nil, e")[0][0] == "return nil, err"


def test_nothing_for_an_unknown_start_a_language_without_a_table_or_a_line_that_is_all_typed():
    assert table("python").starting_with("zq_no_such_line_start") == []
    assert table("plaintext") is None
    assert table("typescriptreact") is table("typescript")
    assert all(line != "return None" for line, _ in table("python").starting_with("return None"))


def write_corpus(root, files_by_split):
    for split, rows in files_by_split.items():
        d = root / "files" / split
        d.mkdir(parents=True)
        (d / "python.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    manifest = [{"id": r["id"], "split": s, "language": "python", "licence": "MIT"}
                for s, rows in files_by_split.items() for r in rows]
    (root / "manifest.jsonl").write_text("".join(json.dumps(m) + "\n" for m in manifest))


def test_the_builder_counts_each_line_once_per_training_file_and_keeps_those_in_enough_files(tmp_path):
    train = [{"id": f"pypi:p/f{i}.py",
              "text": "import os\n    x = 1\nx = 1\nx = 1\n" + ("only_here()\n" if i == 0 else "")
              + ("two_files()\n" if i < 2 else "") + "y\tz = '😀'\r\n"} for i in range(3)]
    valid = [{"id": f"pypi:p/v{i}.py", "text": "held_out_line()\n"} for i in range(5)]
    write_corpus(tmp_path / "corpus", {"train": train, "valid": valid})
    out = tmp_path / "out"
    record = common_lines.build(tmp_path / "corpus", out, min_files=2)
    rows = gzip.decompress((out / "python.tsv.gz").read_bytes()).decode("utf-8").splitlines()
    # indentation stripped, counted once per file; sorted by line; a tab inside a line kept; "y" alone is too short
    assert rows == ["3\timport os", "2\ttwo_files()", "3\tx = 1", "3\ty\tz = '😀'"]
    assert record["languages"]["python"]["files_read"] == 3
    assert record["languages"]["python"]["licences_of_files_read"] == {"MIT": 3}
    t = read_table(out / "python.tsv.gz")
    assert t.starting_with("y") == [("y\tz = '😀'", 0.0)]
    assert [line for line, _ in t.starting_with("")] == ["import os", "x = 1", "y\tz = '😀'", "two_files()"]
    assert json.loads((out / "build.json").read_text())["min_files"] == 2
    assert common_lines.main(["--corpus", str(tmp_path / "none"), "--out", str(out)]) == 2


def options_at(text: str, cursor: int, typed_first: bool = False):
    hole = decide_hole(PY, text, cursor)
    if typed_first:
        hole = replace(hole, start=cursor, heal="")
    line_end = text.find("\n", cursor)
    return line_options(text, hole, text[cursor:len(text) if line_end < 0 else line_end], "python")


def test_common_lines_follow_the_documents_at_the_typed_indentation_with_their_priors():
    text = "def f(a):\n    import os.path\n    if a:\n\timport o"
    got = options_at(text, len(text), typed_first=True)
    assert got.texts[0] == "s.path\n" and got.priors[0] is None                  # the document's line first
    common = [(t, p) for t, p in zip(got.texts, got.priors) if p is not None]
    assert common and all(p <= 0 for _, p in common)
    assert "s\n" in [t for t, _ in common]                                        # "import os"
    assert "s.path\n" not in [t for t, _ in common]                               # not twice
    # healed: the typed fragment " o" is regenerated, so each option starts with it
    healed = options_at(text, len(text))
    assert all(t.startswith(" o") for t in healed.texts) and " os\n" in healed.texts
    # without a language (commonLines off) only the document's lines
    hole = replace(decide_hole(PY, text, len(text)), start=len(text), heal="")
    assert line_options(text, hole, "").texts == ("s.path\n",)


def test_a_common_line_ranks_by_its_score_and_prior_and_is_offered_with_its_prior():
    # (the copied line three code lines up: one two lines up is refused, validate.repeats_neighbour)
    text = "def f(a):\n    total = a\n    return total\n\n\ndef g(a):\n    total = a\n    return tot"
    assert copy_rank(Candidate(("x",), ((0.5,),), (((0, 1),),), -0.5), -3.0) == \
        pytest.approx(-0.5 + PRIOR_WEIGHT * -3.0 + PRIOR_OFFSET)
    backend = Scoring("al + 1", {"al\n": math.exp(-1.0)})
    c = complete(backend, FillOptions(), InfillRequest(text + "\n", len(text), "python"), Control(lambda s: None))
    options = backend.plans[0].options
    assert options[0] == "al\n" and len(options) > 1                      # the document's line, then common ones
    copy = next(f for f in c.considered if f.copied)
    assert copy.text == "al" and copy.common is None
    # only a common line scores: it is the copy, with its prior
    common = next(o for o in options[1:])
    backend = Scoring("al + 1", {common: 0.9})
    c = complete(backend, FillOptions(), InfillRequest(text + "\n", len(text), "python"), Control(lambda s: None))
    copies = [f for f in c.considered if f.copied]
    assert [f.text for f in copies] == [common.rstrip("\n")] and copies[0].common is not None
    assert copies[0].common < 0
    # commonLines off: the document's line only (then the rest of the line ``tot`` ends, doclines.tail_options)
    backend = Scoring("al + 1", {common: 0.9})
    complete(backend, FillOptions(common_lines=False), InfillRequest(text + "\n", len(text), "python"),
             Control(lambda s: None))
    assert backend.plans[0].options == ("al\n", "al = a\n")


def test_common_line_features():
    text = "x = 1\nimport n\n"
    at = text.index("n\n") + 1
    copy = HoleFill(at, at, "umpy as np", (0.5, 0.5), copied=True, common=-0.25)
    feats = features(copy, [], text, PY, HoleKind.INLINE)
    assert feats["common"] == 1 and feats["common_prior"] == -0.25 and feats["copied"] == 1
    doc = replace(copy, common=None)
    assert features(doc, [], text, PY, HoleKind.INLINE)["common"] == 0


def test_the_engine_offers_a_common_line_through_the_real_model(embedded_engine):
    text = "import os\nimport n\n\n\ndef mean(values):\n    return np.mean(values)\n"
    cursor = text.index("import n") + len("import n")
    c = embedded_engine.infill_sync(InfillRequest(text, cursor, "python"), timeout=60)
    commons = [f for f in c.considered if f.copied and f.common is not None]
    assert [f.text for f in commons] == ["umpy as np"]
    assert c.fills and c.fills[0].text == "umpy as np"


def test_a_model_that_scores_options_has_every_table_read_when_it_is_ready():
    from engine import Engine, EngineConfig
    from engine.commonlines import DATA, _table
    from tests.scripted import ScriptedBackend

    names = sorted(p.name.removesuffix(".tsv.gz") for p in DATA.glob("*.tsv.gz"))
    assert names == ["go", "javascript", "python", "rust", "typescript"]
    _table.cache_clear()
    engine = Engine(EngineConfig.of(threads=1), backend_loader=ScriptedBackend.load)
    try:
        engine.start().result(timeout=60)
        assert _table.cache_info().currsize == len(names)              # read at load, before any request
    finally:
        engine.close()


def test_a_damaged_table_is_logged_and_left_out(tmp_path, monkeypatch, caplog):
    from engine import commonlines

    (tmp_path / "python.tsv.gz").write_bytes(b"not gzip at all")
    (tmp_path / "go.tsv.gz").write_bytes(gzip.compress(b"three\treturn x\n"))      # not a count
    monkeypatch.setattr(commonlines, "DATA", tmp_path)
    commonlines._table.cache_clear()
    try:
        with caplog.at_level("WARNING"):
            commonlines.preload()
            assert commonlines.table("python") is None and commonlines.table("go") is None
        assert "common lines for python not used" in caplog.text and "common lines for go not used" in caplog.text
        # the document's lines still come
        text = "x = total(1)\ny = 2\nx = tot"
        got = line_options(text, decide_hole(PY, text, len(text)), "", "python")
        assert got.texts == (" total(1)\n",)                       # the healed fragment " tot" regenerated
    finally:
        commonlines._table.cache_clear()
