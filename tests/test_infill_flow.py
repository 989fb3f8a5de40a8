"""engine.infill.complete with a scripted backend: which holes are tried, in what order, and what is offered."""

from engine.backends.base import Candidate, Control, FillResult
from engine.config import FillOptions
from engine.infill import complete
from engine.requests import InfillRequest

TEXT = "def f(values):\n    total = sum(values)\n    return tot"


class Scripted:
    """Answers each fill with ``answer(prefix)``; records the prefixes it was asked about."""

    name = "scripted"
    default_steps, max_positions = 16, 1024
    searches_lengths = takes_instruction = scores_text = False
    model_dir = None

    def __init__(self, answer):
        self.answer, self.prefixes = answer, []

    def count_tokens(self, text: str) -> int:
        return (len(text) + 3) // 4

    def fill(self, plan, control) -> FillResult:
        prefix = plan.pieces[0]
        self.prefixes.append(prefix)
        text = self.answer(prefix)
        return FillResult((Candidate((text,), ((0.9,),), (((0, len(text)),),), 0.0),), 3, 3, 1)

    def stats(self) -> dict:
        return {}

    def close(self) -> None:
        pass


def _complete(backend, steps=None):
    return complete(backend, FillOptions(min_confidence=0.0), InfillRequest(TEXT, len(TEXT), "python", steps=steps),
                    Control(lambda s: None))


def test_a_typed_word_is_continued_as_typed_first():
    backend = Scripted(lambda prefix: "al")
    c = _complete(backend)
    assert [p.endswith("return tot") for p in backend.prefixes] == [True]     # one attempt, fragment kept
    assert c.fills[0].start == c.fills[0].end == len(TEXT) and c.fills[0].text == "al"


def test_the_healed_word_is_tried_when_the_typed_one_finds_nothing():
    backend = Scripted(lambda prefix: "al(((" if prefix.endswith("tot") else " total")
    c = _complete(backend)
    assert [p.endswith("return tot") for p in backend.prefixes] == [True, False]
    assert backend.prefixes[1].endswith("    return")                        # the fragment regenerated
    fill = c.fills[0]
    assert fill.start == fill.end == len(TEXT) and fill.text == "al"          # inserted after what was typed
    assert c.steps == 6 and c.forwards == 6 and c.rejected >= 1               # both attempts counted


def test_the_healed_attempt_keeps_within_the_step_budget():
    backend = Scripted(lambda prefix: "al(((")
    c = _complete(backend, steps=3)                                           # the first attempt spends it
    assert len(backend.prefixes) == 1 and not c.fills


def test_the_backends_default_budget_holds_for_typed_and_healed_together():
    # A backend that searches lengths itself (DiffusionGemma) declares its default budget like any other:
    # with no steps set, the typed attempt's 3 steps spend a default of 3 and no healed attempt follows
    # (DiffusionGemma once had no default_steps, and a typed-then-healed request spent its default twice).
    backend = Scripted(lambda prefix: "al(((")
    backend.default_steps, backend.searches_lengths = 3, True
    c = _complete(backend)
    assert len(backend.prefixes) == 1 and c.steps == 3 and not c.fills
