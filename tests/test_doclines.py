"""The document's own lines as fills: which lines are candidates, how the backend scores them, how they rank."""

import math
from dataclasses import replace

import pytest
import torch

from engine import InfillRequest
from engine.backends.base import Candidate, Control, FillPlan, FillResult, HoleSpec
from engine.config import FillOptions
from engine.confidence import Calibration, choose, copy_first, features
from engine.context import decide_hole
from engine.doclines import MOST, NONE, SPAN, line_options
from engine.infill import complete
from engine.languages import spec_for
from engine.requests import HoleFill, HoleKind

PY = spec_for("python")


def options_at(text: str, cursor: int, typed_first: bool = False, language: str = "python") -> tuple[str, ...]:
    """The options for the cursor's hole; ``typed_first``: the engine's first try, the typed fragment kept."""
    hole = decide_hole(spec_for(language), text, cursor)
    if typed_first:
        hole = replace(hole, start=cursor, heal="")
    line_end = text.find("\n", cursor)
    return line_options(text, hole, text[cursor:len(text) if line_end < 0 else line_end]).texts


def test_typed_code_takes_the_rest_of_each_line_that_starts_with_it_nearest_first():
    text = ("def f(a):\n    self.assertEqual(a, 1)\n    x = 2\n    self.assertTrue(a)\n"
            "    self.ass\n    self.assertIn(a, b)\n    self.ass\n")
    cursor = text.index("self.ass\n") + len("self.ass")
    # the typed fragment "ass" is regenerated (healed): each option starts with it
    assert options_at(text, cursor) == ("assertTrue(a)\n", "assertIn(a, b)\n", "assertEqual(a, 1)\n")
    # kept as typed: the options go on after the cursor; the identical line below is not a candidate (nothing left)
    assert options_at(text, cursor, typed_first=True) == ("ertTrue(a)\n", "ertIn(a, b)\n", "ertEqual(a, 1)\n")


def test_no_options_on_an_empty_line_after_code_on_the_line_in_a_block_or_in_a_selection():
    text = "x = compute(1)\ny = compute(2)\nz = comp(3)\n    \n"
    cursor = text.index("comp(3)") + 4
    assert options_at(text, cursor) == ()                                   # code after the cursor
    assert options_at(text, len(text) - 1) == ()                            # only indentation typed: the model's
    assert options_at(text, text.index("z = ")) == ()                       # column 0 of a line with code
    block = "def f():\n    return 1\n\ndef g():\n"
    hole = decide_hole(PY, block, len(block))
    assert hole.kind is HoleKind.BLOCK and line_options(block, hole, "", "python") == NONE
    hole = decide_hole(PY, text, 0, 5)
    assert line_options(text, hole, "", "python") == NONE                   # a selection (a rewrite)

@pytest.mark.parametrize("text", ["", "\n", "x", "\r\n\r\n"])
def test_tiny_documents_give_no_options(text):
    assert options_at(text, len(text)) == ()


def test_crlf_tabs_emoji_and_lone_surrogates_stay_as_they_are_in_the_line():
    text = "if a:\r\n\tlabel = '😀' + '\ud800'\r\n\tlab\r\n"
    cursor = text.index("\tlab\r") + 4
    # the healed fragment starts at the tab; \r stripped, the line's text kept as it is
    assert options_at(text, cursor) == ("\tlabel = '😀' + '\ud800'\n",)


def test_most_options_and_lines_beyond_the_span_are_not_read():
    far = "value = far_away()\n" + "pass\n" * (SPAN + 10)
    text = far + "".join(f"value = v{i}()\n" for i in range(MOST + 20)) + "val"
    got = options_at(text, len(text))
    assert len(got) == MOST and got[0] == f"value = v{MOST + 19}()\n"[len("val") - 3:]
    assert all("far_away" not in o for o in options_at("value = far_away()\n" + "pass\n" * (SPAN + 10) + "val",
                                                       len(far) + 3))


class Scoring:
    """A backend that writes ``answer`` and scores each option by ``scores`` (text -> probability per token)."""

    name = "scoring"
    default_steps, max_positions = 16, 1024
    searches_lengths = takes_instruction = scores_text = False
    scores_options = True
    model_dir = None

    def __init__(self, answer: str, scores: dict[str, float]):
        self.answer, self.scores, self.plans = answer, scores, []

    def count_tokens(self, text: str) -> int:
        return (len(text) + 3) // 4

    def fill(self, plan: FillPlan, control: Control) -> FillResult:
        self.plans.append(plan)
        options = tuple(Candidate((o,), ((self.scores[o],),), (((0, len(o)),),), math.log(self.scores[o]))
                        if o in self.scores else None for o in plan.options)
        return FillResult((Candidate((self.answer,), ((0.9,),), (((0, len(self.answer)),),), -0.1),), 2, 2, 1,
                          options)

    def stats(self) -> dict:
        return {}

    def close(self) -> None:
        pass


# (the copied line three code lines up: one two lines up is refused, validate.repeats_neighbour)
TYPED = "def f(x):\n    result = compute(x, 2)\n    check(result)\n    log(result)\n    result = com"


def test_the_best_scored_line_that_parses_joins_the_fills_and_leads_without_a_calibration_when_typed():
    backend = Scoring("pute(x)", {"pute(x, 2)\n": 0.5, "plain(\n": 0.9})  # the likelier one does not parse
    c = complete(backend, FillOptions(common_lines=False), InfillRequest(TYPED + "\n", len(TYPED), "python"),
                 Control(lambda s: None))
    assert backend.plans[0].options == ("pute(x, 2)\n",)           # only the line that starts as typed
    assert [(f.text, f.copied) for f in c.fills] == [("pute(x, 2)", True)]
    assert [(f.text, f.copied) for f in c.alternatives] == [("pute(x)", False)]
    assert c.fills[0].common is None


def test_document_lines_off_sends_no_options():
    backend = Scoring("pute(x)", {"pute(x, 2)\n": 0.5})
    c = complete(backend, FillOptions(document_lines=False), InfillRequest(TYPED + "\n", len(TYPED), "python"),
                 Control(lambda s: None))
    assert backend.plans[0].options == () and [f.text for f in c.considered] == ["pute(x)"]


def test_a_line_the_model_wrote_itself_is_not_added_twice():
    # one fill: the document's line, estimated as a copy (the model wrote the line the document has)
    backend = Scoring("pute(x, 2)", {"pute(x, 2)\n": 0.5})
    c = complete(backend, FillOptions(), InfillRequest(TYPED + "\n", len(TYPED), "python"), Control(lambda s: None))
    assert [(f.text, f.copied) for f in c.considered] == [("pute(x, 2)", True)]


def _assessed(text: str, fills: list[HoleFill], cal: Calibration | None):
    out = []
    for i, f in enumerate(fills):
        feats = features(f, fills[:i] + fills[i + 1:], text, PY, HoleKind.INLINE)
        out.append((replace(f, confidence=None if cal is None else cal.probability(feats)), feats))
    return out


def test_copy_features_and_ranking_by_estimate():
    text = "a = total(1)\nb = tot\n"
    at = text.index("tot\n") + 3
    model = HoleFill(at, at, "al(2)", (0.9, 0.9))
    copy = HoleFill(at, at, "al(1)", (0.2, 0.3), copied=True)
    feats = features(copy, [model], text, PY, HoleKind.INLINE)
    assert feats["copied"] == 1
    assert feats["copied_mean_log"] == pytest.approx((math.log(0.2) + math.log(0.3)) / 2)
    assert features(model, [copy], text, PY, HoleKind.INLINE)["copied"] == 0
    # no calibration: the document's line leads
    assert copy_first(_assessed(text, [model, copy], None))
    # a calibration that trusts copies: the copy's estimate is higher, it is offered; one that does not: the model's
    trusting = Calibration({"copied": 4.0}, -2.0)
    assert choose(_assessed(text, [model, copy], trusting), trusting, 0.0).copied
    wary = Calibration({"copied": -4.0}, -2.0)
    assert not choose(_assessed(text, [model, copy], wary), wary, 0.0).copied


def test_the_masked_backend_scores_options_with_its_first_forward(embedded_engine):
    backend = embedded_engine.backend
    prefix, suffix = "def f(items):\n    total = len(items)\n    ", "\n    return total\n"
    option, long = "total = len(items)\n", "x = " + " + ".join(["items"] * 40) + "\n"
    plan = FillPlan((prefix, HoleSpec(8, True), suffix), 8, 0.0, options=(option, long, ""))
    result = backend.fill(plan, Control(lambda s: None))
    got, too_long, empty = result.options
    assert empty is None                                                       # no tokens
    # the probabilities a plain full forward over the all-masked canvas gives the option's tokens
    canvas, holes, _, _ = backend._layout(plan)
    logp = backend._logits_at(canvas, torch.arange(holes[0].lo, holes[0].hi)).float().log_softmax(-1)
    toks = backend._encode(option)
    want = [math.exp(float(logp[j, t])) for j, t in enumerate(toks)]
    assert got.texts == (option,) and got.confidences[0] == pytest.approx(want, abs=1e-4)
    assert got.score == pytest.approx(sum(math.log(p) for p in want) / len(want), abs=1e-3)
    # a text longer than the 8 slots: scored on its first 8 tokens, each token after them at their geometric mean
    toks = backend._encode(long)
    assert len(toks) > 8
    head = [math.exp(float(logp[j, t])) for j, t in enumerate(toks[:8])]
    mean_log = sum(math.log(p) for p in head) / 8
    assert too_long.texts == (long,) and too_long.score == pytest.approx(mean_log, abs=1e-3)
    assert too_long.confidences[0][:8] == pytest.approx(head, abs=1e-4)
    assert too_long.confidences[0][8:] == pytest.approx([math.exp(mean_log)] * (len(toks) - 8), abs=1e-4)
    assert len(too_long.token_spans[0]) == len(toks)
    # the fill itself is the one it is without options
    plain = backend.fill(replace(plan, options=()), Control(lambda s: None))
    strip = [(c.texts, c.confidences, c.token_spans) for c in plain.candidates]
    assert strip == [(c.texts, c.confidences, c.token_spans) for c in result.candidates] and plain.options == ()


def test_the_engine_offers_a_document_line_through_the_real_model(embedded_engine):
    text = ("import os\n\n\ndef load(path):\n    full = os.path.join(path, 'config.ini')\n    return full\n\n\n"
            "def save(path):\n    full = os.path\n")
    cursor = text.rindex("os.path") + len("os.path")
    c = embedded_engine.infill_sync(InfillRequest(text, cursor, "python"), timeout=60)
    # the typed fragment "path" is kept on the first try: the copy goes on after it
    assert [f.text for f in c.considered if f.copied] == [".join(path, 'config.ini')"]


def test_the_default_bar_offers_a_fill_for_the_coverage_target_of_all_holes():
    from benchmarks.calibrate_languages import OFFER_COVERAGE, choose_bar

    def row(estimate_feature: float, typed: bool) -> dict:
        feats = {"mean_log": estimate_feature, "invented": 0.0}
        return {"typed": typed, "fills": [{"start": 0, "end": 0, "text": "x", "confidences": [0.5],
                                           "features": feats, "exact": False}]}
    cal = Calibration({"mean_log": 1.0}, 0.0)
    whole = [row(-k / 10, False) for k in range(100)]            # estimates from 0.5 down
    typed = [row(5.0, True) for _ in range(100)]                  # all very sure
    assert OFFER_COVERAGE == 0.6
    # whole lines alone: the 60th most confident fill's estimate is the bar (60 of 100 offered)
    assert choose_bar(whole, cal) == pytest.approx(cal.probability({"mean_log": -5.9}), abs=1e-4)
    # typed and whole lines count alike: 120 of 200 offered, the 100 typed and the 20 surest whole lines
    assert choose_bar(whole + typed, cal) == pytest.approx(cal.probability({"mean_log": -1.9}), abs=1e-4)
    # a hole whose engine offers nothing counts against the coverage: then the lowest estimate is the bar
    assert choose_bar(whole[:50] + [{"typed": False, "fills": []}] * 50, cal) == pytest.approx(
        cal.probability({"mean_log": -4.9}), abs=1e-4)


def test_a_lone_surrogate_in_a_document_line_reaches_the_model_as_a_replacement_character(embedded_engine):
    text = "def f(a):\n    label = '\ud800' + a\n    return label\n\n\ndef g(a):\n    label = '"
    c = embedded_engine.infill_sync(InfillRequest(text + "\n", len(text), "python"), timeout=60)
    copies = [f.text for f in c.considered if f.copied]
    # scored through ModelText (U+FFFD, one character for one), offered with the document's own character
    assert copies == ["\ud800' + a"]


def test_after_an_editors_closers_a_line_must_end_with_them_and_its_remainder_stops_before_them():
    text = 'w = compute(1, "a")\nw = compute(2)\nw = compute(3, f(4))\nw = compute(5) + 1\nw = compute()\n'
    cursor = text.rindex("w = compute(") + len("w = compute(")
    hole = decide_hole(PY, text, cursor)
    assert hole.kind is HoleKind.INLINE and hole.heal == ""
    got = line_options(text, hole, ")").texts
    assert got == ("3, f(4)", "2", '1, "a"')               # nearest first, no line break; "5) + 1" ends otherwise
    assert line_options(text, hole, ") ]").texts == ()                      # closers only, nothing between them
    assert line_options(text, hole, ") + 1").texts == ()                    # code after the cursor
    quoted = 'b = t("one")\nb = t("'
    hole = decide_hole(PY, quoted + '")\n', len(quoted))
    assert line_options(quoted + '")\n', hole, '")').texts == ("one",)


def test_before_the_lines_own_semicolon_or_comma_a_line_must_end_with_it_too():
    """A word retyped in the middle of an existing line (``draw(ctx, sha|);``: the line's own ``);`` stays after the
    cursor). The options were empty whenever a ``;`` or ``,`` followed the cursor: in JavaScript, TypeScript and
    Rust, whose lines end so, a line typed to its middle had none of the document's lines."""
    from engine.doclines import tail_options

    text = ("function a(ctx, shape) {\n  draw(ctx, shape.width, shape.height);\n  draw(ctx, shape.depth)\n}\n"
            "function b(ctx, shape) {\n  draw(ctx, sha);\n}\n")
    cursor = text.index("sha);") + len("sha")
    hole = replace(decide_hole(spec_for("javascript"), text, cursor), start=cursor, heal="")
    assert hole.kind is HoleKind.INLINE
    assert line_options(text, hole, ");").texts == ("pe.width, shape.height",)   # ends with `);`: not the `)` line
    assert line_options(text, hole, ")").texts == ("pe.depth",)
    assert line_options(text, hole, "); x").texts == ()                          # code after the cursor
    rows = "m = {\n    'a': f(one, two),\n    'b': 1 + f(on),\n}\n"
    cursor = rows.index("f(on)") + len("f(on")
    hole = replace(decide_hole(PY, rows, cursor), start=cursor, heal="")
    assert line_options(rows, hole, "),").texts == ()        # `'b': 1 + f(on` starts no line; the tail options do
    assert tail_options(rows, hole, "),").texts == ("e, two",)


def test_before_a_blocks_colon_or_brace_a_header_line_must_end_with_the_same_text():
    """A block's header edited in its middle (``if len(it|):``, ``if (a|) {``): the closers, then the block's ``:``
    or ``{`` stay after the cursor. No line option applied there: a ``:`` or ``{`` was no line end."""
    from engine.doclines import ends_line, tail_options

    assert ends_line("):") and ends_line(") {") and ends_line(" {") and ends_line(");") and ends_line("")
    assert not ends_line(") + 1") and not ends_line("); x") and not ends_line(") or y:") and not ends_line("= 1;")
    text = ("def f(items):\n    if len(items) > 3:\n        return 1\n    if len(items.keys()):\n"
            "        return 2\n\n\ndef g(items):\n    if len(it):\n        return 0\n")
    cursor = text.index("len(it)") + len("len(it")
    hole = replace(decide_hole(PY, text, cursor), start=cursor, heal="")
    assert line_options(text, hole, "):").texts == ("ems.keys()",)   # the line that ends with `):` too, not `3:`
    go = "func a() {\n\tfor _, x := range xs {\n\t}\n}\n\nfunc b() {\n\tfor _, y := ran {\n\t}\n}\n"
    cursor = go.index("ran {") + len("ran")
    hole = replace(decide_hole(spec_for("go"), go, cursor), start=cursor, heal="")
    assert line_options(go, hole, " {").texts == ()                 # `for _, y := ran` starts no line
    assert tail_options(go, hole, " {").texts == ("ge xs",)   # the line with `:= ran` does, up to its ` {`


def test_the_engine_offers_a_document_line_inside_an_editors_closers(embedded_engine):
    text = ("import os\n\n\ndef load(path):\n    full = os.path.join(path, 'config.ini')\n    return full\n\n\n"
            "def save(path):\n    full = os.path.join()\n")
    cursor = text.rindex("os.path.join(") + len("os.path.join(")
    c = embedded_engine.infill_sync(InfillRequest(text, cursor, "python"), timeout=60)
    assert [f.text for f in c.considered if f.copied and f.common is None] == ["path, 'config.ini'"]


def test_a_word_typed_before_an_editors_closers_takes_its_rest_where_the_document_has_it():
    from engine.doclines import WORD, word_options
    text = ("function report(error) {\n  console.log(error.message, 1);\n  show(errors[0], (a, b) => a);\n"
            "  if (error.code) { a = [errno]; }\n  wait(err.then(f(1, 2)))\n  wait(err, 1)\n  log(errors.get(\")\"))\n"
            "}\nfunction again(error) {\n  log(err)\n}\n")
    cursor = text.rindex("log(err") + len("log(err")
    hole = decide_hole(spec_for("javascript"), text, cursor)
    assert hole.kind is HoleKind.INLINE and hole.heal == ""
    got = word_options(text, hole, ")")
    # nearest line first, each place's text after the fragment up to the ")" that ends the bracket it is in, when
    # it completes the word to a name or a dotted path ("or.code"); not where a comma, "]" or ";" comes first
    # (another call's further arguments), not a call ('ors.get(")")'), nor where the fragment is a whole word
    # ("err.then", "err, 1": not the word being typed)
    assert got.texts == ("or", "or.code")
    assert set(got.sources) == {WORD}
    assert word_options(text, hole, "]").texts == ("no",)            # the closer after the cursor decides
    # the line's own `;` or `,` after the closers (an existing line edited: `log(err|);`): as before a `;` alone,
    # a word the document completes one way, else (here two ways) the words of the nearest places that start so,
    # whatever follows them there: `error` in `function again(error) {`, then `errors` in `log(errors.get(")"))`
    assert word_options(text, hole, ");").texts == word_options(text, hole, "),\r").texts == ("or", "ors")
    one = text.replace("error.code", "e.code")
    assert word_options(one, decide_hole(spec_for("javascript"), one, one.rindex("log(err") + 7), "));").texts == ("or",)
    assert word_options(text, hole, ";;").texts == ("or", "ors")
    assert word_options(text, hole, ");;").texts == ()              # more than closers, then the line's own end
    assert word_options(text, hole, ") + 1").texts == ()          # code after the cursor: not a word's place
    assert word_options(text, hole, "").texts == ()               # the line's end: the whole line's options
    after_paren = text.rindex("log(err") + len("log(")
    assert word_options(text, decide_hole(spec_for("javascript"), text, after_paren), "err)").texts == ()


def test_a_word_typed_before_a_lines_own_comma_or_semicolon_takes_the_one_rest_or_the_nearest_words():
    """A word typed in the middle of an existing line whose `,` or `;` stays after the cursor (the new-user trial's
    `HKE|,` for `HKEY_LOCAL_MACHINE,`): the rest where the document has the word before that character when it has
    one such rest (with several, 1 of 32 offered on the development holes was right); else the words of the two
    nearest places that start with it, whatever follows them (`return att|;` -> `attachment` from `const attachment
    = {` ten lines up: on the mid-line development holes 622 -> 632 right)."""
    from engine.doclines import word_options

    def options(text: str, language: str = "python") -> tuple[str, ...]:
        cursor = text.index("|")
        text = text.replace("|", "")
        line_end = text.find("\n", cursor)
        hole = decide_hole(spec_for(language), text, cursor)
        assert hole.kind is HoleKind.INLINE and not hole.heal
        return word_options(text, hole, text[cursor:line_end]).texts

    keys = "keys = [\n    HKEY_LOCAL_MACHINE,\n    HKEY_USERS,\n]\nroots = (\n    HKEY_CURRENT_USER)\n"
    # two rests before a comma: the nearest places' words instead, the nearest first
    assert options(keys + "first = [HKE|,\n") == ("Y_CURRENT_USER", "Y_USERS")
    assert options(keys + "first = [HKEY_|,\n") == ("CURRENT_USER", "USERS")
    assert options("x = 1\nfirst = [HKE|,\n") == ()                     # no word starts so: none
    assert options("HKEYS = 1\nfirst = [HKEYS|,\n") == ()               # the whole word typed: nothing to add
    assert options(keys + "first = f(HKE|)\n") == ("Y_CURRENT_USER",)    # a closer: every rest, as before
    assert options(keys.replace("    HKEY_USERS,\n", "") + "first = [HKE|,\n") == ("Y_LOCAL_MACHINE",)
    js = "const a = templatesPath;\nconst b = tem|;\n"
    assert options(js, "javascript") == ("platesPath",)
    assert options(js.replace("|;", "|; x()"), "javascript") == ()         # code after it: not a word's place


def test_the_end_of_a_typed_line_takes_the_rest_of_the_lines_that_have_it_longest_ending_first():
    """A word typed in the middle of a line no other line starts as (the new-user trial's line cases): the rest of
    each line nearby that has the end of the typed code at a word start, the longest ending first, then the
    nearest line."""
    from engine.doclines import TAIL, tail_options

    def options(text: str, language: str = "python", healed: bool = False) -> tuple[str, ...]:
        cursor = text.index("|")
        text = text.replace("|", "")
        line_end = text.find("\n", cursor)
        hole = decide_hole(spec_for(language), text, cursor)
        if not healed:
            hole = replace(hole, start=cursor, heal="")
        got = tail_options(text, hole, text[cursor:len(text) if line_end < 0 else line_end])
        assert set(got.sources) <= {TAIL}
        return got.texts

    text = ("class Pump:\n    def stop(self):\n        if self._paused.is_set():\n            return\n"
            "        self._paused.set()\n        self.x_paused = 1\n\n    def go(self):\n        waiter = self._pa|\n"
            "        paused = _pausing()\n")
    # ``self._pa`` (the longest ending of ``waiter = self._pa`` at a word start) in two lines, nearest first;
    # ``_pa`` alone next (``_pausing()`` below is nearer, but its line has only the shorter ending); not
    # ``x_paused``, where ``_pa`` is inside a word
    assert options(text) == ("used.set()\n", "used.is_set():\n", "using()\n")
    # healed: the fragment is the fill's too
    assert options(text, healed=True)[0] == "_paused.set()\n"
    js = "let currentProp = 1;\nlet b = 2;\nfunction f() {\n  return cur|\n}\n"
    assert options(js, "javascript") == ("rentProp = 1;\n",)        # the whole rest, not only the word
    assert options(text.replace("self._pa|", "self._pa| + 1")) == ()               # code after it: another line's
    assert options("x = 1\ny = f(x.ab|)\nz = f(x.abc)\n") == ("c",)               # an editor's closers: stop there
    assert options("x = 1\ny = f(x.a|)\nz = f(x.ab)\n") == ()                    # a one-character word: too little
    assert options("def f():\n    retur|\n") == ()                               # nothing before the word
    js = "this.#merger.disconnect();\n\tconst m = this.#merger.dis|\r\n"
    assert options(js, "javascript") == ("connect();\n",)                         # a CRLF line's \r is not kept


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_the_engine_finishes_a_line_typed_to_its_middle_with_the_rest_of_a_line_that_has_its_end(embedded_engine,
                                                                                                  newline):
    """The new-user trial's line cases: a word typed in the middle of a line no other line starts as. The model
    alone writes ``used.get()`` (estimated 3%); ``self._paused.set()`` two methods up gives ``used.set()``, offered
    above the shipped bar; Go's ``w.Header().Set("Content-Type", ...)`` the same."""
    from engine import EngineConfig
    from engine.confidence import load_calibration

    bar = load_calibration(EngineConfig().model_dir()).min_confidence
    cases = [("python", "class Pump:\n    def stop(self):\n        if self._paused.is_set():\n            return\n"
                        "        self._paused.set()\n\n    def go(self):\n        waiter = self._pa", "used.set()"),
             ("go", "func a(w http.ResponseWriter) {\n\tw.Header().Set(\"Content-Type\", \"application/json\")\n}\n\n"
                    "func b(w http.ResponseWriter) {\n\th := w.Header().Se", 't("Content-Type", "application/json")')]
    for language, typed, rest in cases:
        text = (typed + "\n").replace("\n", newline)
        c = embedded_engine.infill_sync(InfillRequest(text, len(typed.replace("\n", newline)), language), timeout=60)
        assert [(f.text, f.copied, f.tail) for f in c.fills] == [(rest, True, True)]
        assert c.fills[0].confidence >= bar
        assert text[:c.fills[0].start] + c.fills[0].text + text[c.fills[0].end:] == \
            (typed + rest + "\n").replace("\n", newline)


def test_the_engine_finishes_a_line_retyped_before_its_own_end_with_the_line_the_document_has(embedded_engine):
    """JavaScript and Rust lines end with ``;`` (``draw(ctx, sha|);``), a block's header with ``:`` or ``{``
    (``if err := run(ctx); er| {``, ``for index, item in enum|):``). Retyping the middle of such a line got no line
    of the document, and nothing was offered. The line above that ends the same way now is, above the shipped bar,
    and the line's own end stays after it."""
    from engine import EngineConfig
    from engine.confidence import load_calibration

    bar = load_calibration(EngineConfig().model_dir()).min_confidence
    cases = [("javascript", "function a(ctx, shape) {\n  draw(ctx, shape.width, shape.height);\n}\n\n"
                            "function b(ctx, shape) {\n  clear(ctx);\n  draw(ctx, sha", ");\n}\n",
              "pe.width, shape.height"),
             ("rust", "fn a(v: &mut Vec<u32>, n: u32) {\n    v.push(n.saturating_mul(2));\n}\n\n"
                      "fn b(v: &mut Vec<u32>, n: u32) {\n    v.clear();\n    v.push(n.sat", "));\n}\n",
              "urating_mul(2"),
             ("go", "func a(ctx context.Context) error {\n\tif err := run(ctx); err != nil {\n\t\treturn err\n\t}\n"
                    "\treturn nil\n}\n\nfunc b(ctx context.Context) error {\n\tif err := run(ctx); er", " {\n"
                    "\t\treturn err\n\t}\n\treturn nil\n}\n", "r != nil"),
             ("python", "def a(items):\n    for index, item in enumerate(items):\n        print(index)\n\n\n"
                        "def b(items):\n    for index, item in enum", "):\n        print(item)\n",
              "erate(items")]
    for language, before, after, rest in cases:
        c = embedded_engine.infill_sync(InfillRequest(before + after, len(before), language), timeout=60)
        assert [(f.text, f.copied) for f in c.fills][:1] == [(rest, True)], (language, c.considered)
        assert c.fills[0].confidence >= bar
        assert (before + after)[:c.fills[0].start] + c.fills[0].text + (before + after)[c.fills[0].end:] == \
            before + rest + after


def test_the_engine_completes_a_word_typed_inside_an_editors_closers_from_where_the_document_has_it(embedded_engine):
    # the model alone breaks the word (``err`` + ``, err``, under the bar) and no line of the document starts with
    # ``log(err``: before word options that fill was all there was, and nothing was shown
    text = ("def report(error):\n    print(error.message)\n    return error\n\n\n"
            "def again(error):\n    log(err)\n")
    cursor = text.rindex("log(err") + len("log(err")
    c = embedded_engine.infill_sync(InfillRequest(text, cursor, "python"), timeout=60)
    assert [f.text for f in c.considered if f.copied] == ["or.message"]
    assert [f.text for f in c.fills] == ["or.message"]


def test_the_rest_of_a_line_is_never_taken_from_a_comment():
    """The new-user trial's Java case: ``public abstract cla|`` was offered ``ss must``, from the class's doc comment
    `` * <p>A {@code Queue} implementation that extends this class must``: a comment's words go on as prose. Code
    after a ``#include``, a Rust ``#[...]``, a Lua ``#t``, a URL's ``//`` in a string or Python's ``//`` (a floor
    division: HumanEval/156 L8, typed to ``num[``, lost its ``i`` from ``num[i]`` while that read as a comment) is
    still code."""
    from engine.doclines import _in_comment, tail_options

    java = ("/**\n * <p>A {@code Queue} implementation that extends this class must\n * define a method.\n */\n"
            "public abstract class AbstractQueue<E>\n    extends AbstractCollection<E> {\n}\n")
    typed = java.replace("public abstract class AbstractQueue<E>", "public abstract cla")
    cursor = typed.index("public abstract cla") + len("public abstract cla")
    hole = replace(decide_hole(spec_for("java"), typed, cursor), start=cursor, heal="")
    assert tail_options(typed, hole, "").texts == ()
    code = typed.replace(" * <p>A {@code Queue} implementation that extends this class must",
                         "    Object holder = new AbstractHolder(this.class.name);")
    cursor = code.index("public abstract cla") + len("public abstract cla")
    hole = replace(decide_hole(spec_for("java"), code, cursor), start=cursor, heal="")
    assert tail_options(code, hole, "").texts == ("ss.name);\n",)
    cases = [("java", "  // the class must", "class", True), ("python", "  x = 1  # the class must", "class", True),
             ("lua", "-- the class must", "class", True), ("c", "    /* the class */", "class", True),
             ("java", " * class", "class", True), ("javascript", "x = y; // the class", "class", True),
             ("perl", "# the class", "class", True), ("ruby", "x = 1 # the class", "class", True),
             ("c", "#include <class.h>", "class", False), ("rust", "#[derive(Debug)] struct A;", "struct", False),
             ("lua", "n = #items + 1", "items", False), ("go", 'url := "http://a.b/c" + x.class', "class", False),
             ("c", "*p = klass;", "klass", False), ("c", "i--; j = k", "k", False),
             ("python", "x = a.class  # note", "class", False),
             # Python's and Lua's `//` divide and Perl's is "defined or": no comment there
             ("python", "half = total // parts[k]", "parts", False), ("lua", "local h = n // parts[k]", "parts", False),
             ("perl", "my $v = $x // $parts[0];", "parts", False), ("javascript", "a = b - -c; d--", "d", False),
             ("typescriptreact", "  const a = 1; // the class", "class", True)]
    for language, line, word, comment in cases:
        assert _in_comment(line, line.index(word), language) is comment, (language, line)
    # a language of none of these: `#` and `--` only before a blank
    assert _in_comment("  # note about parts", 10) and not _in_comment("#define PARTS parts", 14)
    py = "def f(total, parts, k):\n    half = total // parts[k]\n    rest = total % parts[]\n"
    cursor = py.index("parts[]") + len("parts[")
    hole = replace(decide_hole(PY, py, cursor), start=cursor, heal="")
    assert tail_options(py, hole, "]", "python").texts == ("k",)   # a floor division is no comment


def test_the_rest_of_a_word_is_never_taken_from_a_comment():
    """A word typed before the line's own ``;`` got the rest of the nearest words that start so, a comment's words
    too (Java's ``values|`` from a doc comment's ``values``): prose, not the name being typed."""
    from engine.doclines import word_options

    java = ("class A {\n  /** Returns the count of stored elements. */\n  int count() {\n    return size;\n  }\n"
            "  int first() {\n    int elementCount = 0;\n    return ele;\n  }\n}\n")
    cursor = java.index("return ele;") + len("return ele")
    hole = replace(decide_hole(spec_for("java"), java, cursor), start=cursor, heal="")
    assert word_options(java, hole, ";", "java").texts == ("mentCount",)
    assert word_options(java, hole, ";").texts == ("mentCount",)   # no language: the same comment starts
    commented = java.replace("    int elementCount = 0;\n", "")
    cursor = commented.index("return ele;") + len("return ele")
    hole = replace(decide_hole(spec_for("java"), commented, cursor), start=cursor, heal="")
    assert word_options(commented, hole, ";", "java").texts == ()   # only the comment's ``elements``


def test_a_pod_line_is_prose_not_code():
    """Lines of prose with no comment mark of their own (Perl's POD, Ruby's ``=begin``, a Lua long comment) give
    neither a line's rest nor a word's: Perl's ``mydie("Unknowns dis|`` got ``tribution object.`` from a POD
    line. A cursor inside such prose still reads it, and the code around it keeps giving its lines; offsets and line
    breaks stay where they are. A Python docstring is read as it was: its examples are code (nltk's
    ``return [self.tokenize(s) for s in strings]``, a development hole's right line)."""
    from engine.doclines import _without_prose, line_options, tail_options, word_options

    perl = ("package X;\n\n=head1 METHODS\n\nReturns the distribution object.\n\n=cut\n\n"
            "sub d {\n    my $dist = $self->{dis\n}\n")
    cursor = perl.index("{dis\n") + len("{dis")
    hole = replace(decide_hole(spec_for("perl"), perl, cursor), start=cursor, heal="")
    assert tail_options(perl, hole, "", "perl").texts == ()
    assert tail_options(perl, hole, "", None).texts == ("tribution object.\n",)   # no language: no POD
    coded = perl.replace("sub d {", "my $disk = $self->{disk_name};\nsub d {")
    cursor = coded.index("{dis\n") + len("{dis")
    hole = replace(decide_hole(spec_for("perl"), coded, cursor), start=cursor, heal="")
    assert tail_options(coded, hole, "", "perl").texts == ("k_name};\n",)
    word = perl.replace("{dis\n", "{dis};\n")
    cursor = word.index("{dis}") + len("{dis")
    hole = replace(decide_hole(spec_for("perl"), word, cursor), start=cursor, heal="")
    assert word_options(word, hole, "};", "perl").texts == ()
    assert word_options(word, hole, "};", None).texts == ("tribution",)
    line = perl.replace("    my $dist = $self->{dis\n", "    Ret\n")
    cursor = line.index("    Ret\n") + len("    Ret")
    hole = replace(decide_hole(spec_for("perl"), line, cursor), start=cursor, heal="")
    assert line_options(line, hole, "", None, pairs=("perl", None)).texts == ()
    # inside POD, its lines are read
    pod = perl.replace("Returns the distribution object.\n", "Returns the distribution object.\nThe dis\n")
    cursor = pod.index("The dis\n") + len("The dis")
    assert _without_prose(pod, "perl", cursor) is pod
    hole = replace(decide_hole(spec_for("perl"), pod, cursor), start=cursor, heal="")
    assert tail_options(pod, hole, "", "perl").texts == ("tribution object.\n",)

    py = ('def tokenize_sents(self, strings):\n    """Apply to each element.  I.e.:\n\n'
          '        return [self.tokenize(s) for s in strings]\n    """\n    return [self.tokenize(s)\n')
    cursor = py.rindex("tokenize(s)") + len("tokenize(s)")
    hole = replace(decide_hole(PY, py, cursor), start=cursor, heal="")
    assert tail_options(py, hole, "", "python").texts == (" for s in strings]\n",)

    for language, text, prose, kept in (
            ("ruby", "x = 1\n=begin\nthe x = one\n=end\ny = 2\n", "the x = one", ("x = 1", "y = 2")),
            ("lua", "local a = 1\n--[==[ long\n a = comment ]] still\n]==]\nlocal b = a\n", " a = comment",
             ("local a = 1", "local b = a")),
            ("perl", "my $a;\n=cut\nmy $b;\n=pod\n\nmy $c = prose;\n", "my $c = prose", ("my $a;", "my $b;")),
            ("perl", "my $a;\n=head1 Never cut\nmy $b = prose;\n", "my $b", ("my $a;",))):
        masked = _without_prose(text, language, 0)
        assert len(masked) == len(text) and masked.count("\n") == text.count("\n"), language
        assert prose not in masked and all(code in masked for code in kept), (language, masked)
    for language in ("python", "javascript", "c", None):
        assert _without_prose('x = 1\n"""a\n/* b\n*/\n"""\n', language, 0) == 'x = 1\n"""a\n/* b\n*/\n"""\n'
