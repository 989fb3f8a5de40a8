"""The model's positions bound every canvas (issue 18 item 4), on the real embedded model: contexts are cut to
what the positions leave beside the hole, and a fix whose span alone does not fit is skipped, not an error."""

import pytest

from engine import Engine, EngineConfig
from engine.config import FillOptions
from engine.requests import EngineError, FixRequest, InfillRequest, RewriteRequest
from engine.targets import survey


@pytest.fixture(scope="module")
def engine():
    engine = Engine(EngineConfig())
    engine.start().result(120)
    yield engine
    engine.close()


LONG = "def f(x):\n" + "".join(f"    y{i} = x + {i}\n" for i in range(600)) + "    return \n"


def test_contexts_larger_than_the_positions_are_cut(engine):
    # 2 x 4,000 context tokens configured: far more than the model's positions
    options = FillOptions(prefix_tokens=4000, suffix_tokens=4000)
    at = LONG.index("    y300")
    completion = engine.infill_sync(InfillRequest(LONG, at, "python", options=options), timeout=120)
    assert completion.steps > 0  # it ran on the model instead of failing with "canvas ... exceeds"
    rewrite = RewriteRequest(LONG, "python", at, LONG.index("    y302"), options=options)
    assert engine.infill_sync(rewrite, timeout=120).steps > 0


def test_a_fix_too_big_for_the_model_is_skipped():
    text = "x = f(" * 5000 + "\n"
    found = survey(text, "python", 0, 0)
    assert found.errors  # the survey does find the error: its span is the whole 30,000-character line
    engine = Engine(EngineConfig())
    try:
        engine.start().result(120)
        completion = engine.infill_sync(FixRequest(text, "python", found.errors), timeout=120)
        assert completion.fills == () and completion.steps == 0
    finally:
        engine.close()


def test_a_selection_too_big_for_the_model_is_a_clear_error(engine):
    text = "x = [" + ", ".join(str(i) for i in range(3000)) + "]\n"
    with pytest.raises(EngineError, match="does not fit the model's"):
        engine.infill_sync(RewriteRequest(text, "python", 0, len(text) - 1), timeout=120)
