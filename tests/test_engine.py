"""The engine on the real embedded model: completions, budgets, cancellation, newest-wins, load states."""

import concurrent.futures
import threading

import pytest

from engine import (Cancelled, Engine, EngineConfig, EngineError, EngineState, HoleKind, InfillRequest,
                    ModelLoadError, NotReady)

CODE = "def mean(values):\n    total = sum(values)\n    \n"
CURSOR = len(CODE) - 1  # the indented empty line


@pytest.fixture(scope="module")
def engine(embedded_engine):
    return embedded_engine


def test_completion_is_an_insertion_at_the_cursor(engine):
    c = engine.infill_sync(InfillRequest(CODE, CURSOR, "python"), timeout=60)
    assert c.kind is HoleKind.BLOCK or c.kind is HoleKind.LINE
    assert c.steps >= 1 and c.forwards >= c.steps and c.elapsed_ms > 0 and c.backend == "masked"
    for fill in c.fills:
        assert fill.start == fill.end == CURSOR and fill.text
        assert len(fill.confidences) == len(fill.token_spans)
        assert all(0 <= lo <= hi <= len(fill.text) for lo, hi in fill.token_spans)


def test_step_budget_is_a_cap(engine):
    for steps in (1, 2, 5):
        c = engine.infill_sync(InfillRequest(CODE, CURSOR, "python", steps=steps), timeout=60)
        assert c.steps <= steps


def test_left_to_right_order_takes_one_token_per_forward():
    eng = Engine(EngineConfig.of(threads=1, order="left_to_right", validate=False))
    try:
        eng.start().result(timeout=120)
        c = eng.infill_sync(InfillRequest("x = 1\ny = ", 10, "python", steps=64), timeout=60)
        assert c.forwards >= c.tokens  # never more than one accepted token per forward
    finally:
        eng.close()


def test_drafts_arrive_in_step_order(engine):
    drafts = []
    engine.infill_sync(InfillRequest(CODE, CURSOR, "python"), on_draft=drafts.append, timeout=60)
    assert drafts and [d.step for d in drafts] == sorted(d.step for d in drafts)
    assert all(len(d.texts) == 1 and len(d.pieces[0]) == len(d.confidences[0]) for d in drafts)


def test_cancel_stops_within_one_step(engine):
    seen = []
    holder = {}

    def on_draft(draft):
        seen.append(draft.step)
        if draft.step == 2:
            holder["job"].cancel()

    text = "def f(x):\n" + "    y = x\n" * 50
    holder["job"] = job = engine.submit(InfillRequest(text, 9, "python", max_tokens=64, steps=32), on_draft)
    with pytest.raises((Cancelled, concurrent.futures.CancelledError)):
        job.future.result(timeout=60)
    assert job.stopped_at_step == 2 and max(seen) == 2


def test_newest_request_per_key_wins(engine):
    text = "def f(x):\n" + "    y = x\n" * 50
    gate = threading.Event()
    first = engine.submit(InfillRequest(text, 9, "python", key="doc", max_tokens=64, steps=32),
                          lambda d: gate.set())
    gate.wait(30)  # the first is denoising now
    second = engine.submit(InfillRequest(CODE, CURSOR, "python", key="doc"))
    with pytest.raises((Cancelled, concurrent.futures.CancelledError)):
        first.future.result(timeout=60)
    assert second.future.result(timeout=60).steps >= 1


@pytest.mark.parametrize("offset,end", [(-1, None), (10_000, None), (5, 2)])
def test_bad_offsets_are_errors(engine, offset, end):
    with pytest.raises(EngineError):
        engine.infill_sync(InfillRequest(CODE, offset, "python", end=end), timeout=30)


def test_plain_text_and_binary_context(engine):
    for text in ("hello world\nsecond line ", "\x00\x01\xff" * 100, ""):
        c = engine.infill_sync(InfillRequest(text, len(text), "no-such-language"), timeout=60)
        assert not c.syntax_checked


def test_not_ready_and_failed_load_then_recovery(tmp_path):
    eng = Engine(EngineConfig.of(model=str(tmp_path / "nothing-here")))
    try:
        with pytest.raises(NotReady):
            eng.infill_sync(InfillRequest("x", 1), timeout=5)
        with pytest.raises(ModelLoadError, match="nothing-here"):
            eng.start().result(timeout=30)
        assert eng.state is EngineState.FAILED
        with pytest.raises(NotReady, match="failed to load"):
            eng.infill_sync(InfillRequest("x", 1), timeout=5)
        eng.reconfigure(EngineConfig.of(threads=1)).result(timeout=120)
        assert eng.state is EngineState.READY
    finally:
        eng.close()


def test_a_directory_that_is_not_a_masked_lm_fails_clearly(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "gpt2"}')
    eng = Engine(EngineConfig.of(model=str(tmp_path)))
    try:
        with pytest.raises(ModelLoadError):
            eng.start().result(timeout=60)
    finally:
        eng.close()


def test_crlf_documents_get_crlf_fills():
    eng = Engine(EngineConfig.of(threads=1, validate=False))
    try:
        eng.start().result(timeout=120)
        text = "def f(a):\r\n    b = a\r\n\r\n    return b\r\n"
        offset = text.index("\r\n    return")  # a line inserted before code keeps its own line end
        c = eng.infill_sync(InfillRequest(text, offset + 2, "python", steps=8), timeout=60)
        for fill in c.fills:
            assert "\n" not in fill.text.replace("\r\n", "")
            assert all(0 <= lo <= hi <= len(fill.text) for lo, hi in fill.token_spans)
    finally:
        eng.close()


BLOCK_HOLES = [  # (document, the cursor after this): block holes before a blank rest of the line
    ("def f(x):\n    if x is None:\n        \n    return x\n", "None:\n        "),
    ("def f(x):\n    if x is None:\n    return x\n", "None:"),
    ("def f(xs):\n    total = 0\n    for x in xs:\n        \n    return total\n", "xs:\n        "),
    ("def main():\n    print('hi')\n\n\nif __name__ == '__main__':\n", "'__main__':"),
]


def test_block_fills_leave_no_blank_line_after_the_body(engine):
    """Inserted as sent (Emacs, Helix), a block fill ending in a line break before the line's own one left a blank
    line after the body: the model wrote ``return x\\n`` into the first hole's empty line."""
    offered = 0
    for text, at in BLOCK_HOLES:
        c = engine.infill_sync(InfillRequest(text, text.index(at) + len(at), "python"), timeout=60)
        assert c.kind is HoleKind.BLOCK
        for fill in c.fills + c.alternatives:
            offered += 1
            assert fill.text == fill.text.rstrip(), (text, fill.text)
    assert offered  # the model offers some block here (with no confidence bar): the check was not vacuous


def test_drafts_start_at_the_cursor_when_indentation_is_regenerated(engine):
    drafts = []
    c = engine.infill_sync(InfillRequest(CODE, CURSOR, "python"), on_draft=drafts.append, timeout=60)
    assert drafts
    for d in drafts:  # the 4 typed spaces are regenerated, but a draft never shows them again
        assert d.texts[0] == "".join(d.pieces[0])
        if c.fills and d is drafts[-1]:
            assert not d.texts[0].startswith("    ") or c.fills[0].text.startswith("    ")


def _model_and_reference(seed: int):
    """The embedded model, 200 random token ids, and a plain full forward's hidden states over them."""
    import torch
    from transformers import AutoModelForMaskedLM

    from engine.config import EMBEDDED_DIR

    model = AutoModelForMaskedLM.from_pretrained(str(EMBEDDED_DIR), local_files_only=True).eval()
    ids = torch.randint(5, 4000, (200,), generator=torch.Generator().manual_seed(seed))
    with torch.inference_mode():
        reference = model.model(input_ids=ids[None]).last_hidden_state[0]
    return model, ids, reference


def test_kv_cache_matches_a_full_forward_on_the_same_canvas():
    import torch

    from engine.backends.masked.kv_cache import DualCache

    model, ids, reference = _model_and_reference(0)
    cache = DualCache(model)
    assert torch.allclose(cache.forward(ids, None), reference, atol=1e-5)
    hole = torch.arange(150, 182)  # within 64 of the end: the sliding-window mask matters
    assert torch.allclose(cache.forward(ids, hole), reference[hole], atol=1e-5)


def test_a_seeded_prefix_gives_the_full_forward_of_the_rest():
    import torch

    from engine.backends.masked.kv_cache import DualCache

    model, ids, reference = _model_and_reference(1)
    first = DualCache(model)
    first.forward(ids, None)
    second = DualCache(model)
    second.seed(first.prefix(ids, 120), len(ids))   # the keys and values of the same canvas: exact
    assert torch.allclose(second.forward(ids, torch.arange(120, 200)), reference[120:], atol=1e-5)
    longer = torch.cat([ids[:120], torch.full((16,), 7), ids[120:]])
    third = DualCache(model)
    third.seed(first.prefix(ids, 120), len(longer))  # another hole length: the rest is computed, shifted
    assert third.forward(longer, torch.arange(120, len(longer))).shape == (len(longer) - 120, model.config.hidden_size)


def test_a_line_hole_tries_two_lengths_over_one_full_forward():
    eng = Engine(EngineConfig.of(threads=1, min_confidence=0.0))
    try:
        eng.start().result(timeout=120)
        text = "def area(w, h):\n    result = w * h\n\n    return result\n"
        c = eng.infill_sync(InfillRequest(text, text.index("\n\n") + 1, "python"), timeout=60)
        stats = eng.stats()
        assert c.kind is HoleKind.LINE and c.steps <= 16          # the lengths share the step budget
        assert stats["full_forwards"] == 1 and stats["tail_forwards"] >= 1   # the second length reuses the prefix
        again = eng.infill_sync(InfillRequest(text, text.index("\n\n") + 1, "python"), timeout=60)
        assert again.fills == c.fills and eng.stats()["full_forwards"] == 1  # the same context: nothing recomputed
    finally:
        eng.close()


def test_kv_cache_steps_run_over_the_hole_only():
    eng = Engine(EngineConfig.of(threads=1, kv_cache=True, cache_refresh=4, min_confidence=0.0))
    try:
        eng.start().result(timeout=120)
        c = eng.infill_sync(InfillRequest(CODE, CURSOR, "python", steps=12), timeout=60)
        stats = eng.stats()
        assert stats["kv_cache"] and stats["full_forwards"] >= 1
        if c.forwards > 1:
            assert stats["hole_forwards"] >= 1 and stats["full_forwards"] <= 1 + (c.forwards - 1) // 4
    finally:
        eng.close()


SURROGATE_DOC = 'def f(x):\n    s = "\ud800"\n    return \n'


@pytest.mark.parametrize("after", ["def f(x):\n", '"\ud800"\n', "return "])
def test_a_lone_surrogate_is_never_written_back_as_a_replacement_character(engine, after):
    """The model reads a lone surrogate as U+FFFD (engine/model_text.py), and the check against the model's
    bytes that are no UTF-8 took the window's U+FFFD for one the document has: over stdio the real model's fills
    here were ``  # \\ufffd``, ``  s = "\\ufffd"`` and ``#\\ufffd"`` (an alternative), U+FFFD where the user wrote
    none. A fill may write U+FFFD only where the window really has one."""
    at = SURROGATE_DOC.index(after) + len(after)
    c = engine.infill_sync(InfillRequest(SURROGATE_DOC, at, "python"), timeout=60)
    assert all("\ufffd" not in f.text for f in c.fills + c.alternatives + c.considered)


def test_a_fill_after_an_emoji_is_written_in_bytes_that_form_utf8(engine):
    """After an emoji and an accent the real model filled this line with byte tokens that form no UTF-8
    ('\ufffd' x 12 then '")'): refused whatever the settings, so no fill, even with ``validate`` off. The loop now
    accepts a byte token only where its hole can still be valid UTF-8 (engine/backends/utf8.py): the fill is
    ``' "\U0001f600\u00e9"'``, and no candidate is refused for its bytes."""
    from engine import FillOptions
    line = '    s = "\U0001f600\U0001f600\u00e9" + '
    text = "def f(x):\n" + line + "\n    return s\n"
    c = engine.infill_sync(InfillRequest(text, text.index(line) + len(line), "python",
                                         options=FillOptions(validate=False, min_confidence=0.0)), timeout=60)
    assert c.not_utf8 == 0
    assert c.fills and all("\ufffd" not in f.text for f in c.fills + c.alternatives + c.considered)


def test_a_draft_shows_an_emoji_whole_or_not_yet(engine):
    """The real model writes the emoji of these lines in byte tokens, each a U+FFFD alone: the drafts showed
    ``\\ufffd\\ufffd\\u2592\\ufffd"`` for five steps before ``\\U0001f500"`` (each token's piece decoded apart).
    A run of such tokens is decoded together, and a U+FFFD beside a masked slot (bytes still to come) is not shown."""
    text = 'x = "😀"\ny = "😀"\nz = "😀"\nw = "'
    drafts = []
    c = engine.infill_sync(InfillRequest(text, len(text), "python"), on_draft=drafts.append, timeout=60)
    assert c.fills and any(ord(ch) > 0xFFFF for ch in c.fills[0].text)  # the model's emoji
    assert drafts and all("\ufffd" not in d.texts[0] for d in drafts)
    assert all(d.texts[0] == "".join(d.pieces[0]) and len(d.pieces[0]) == len(d.confidences[0]) for d in drafts)
    assert c.fills[0].text.rstrip("\n") in drafts[-1].texts[0]
