"""What a backend keeps between fills must not change a fill: random edit sequences on real documents, each fill
with the kept state compared with the same request's fill from a cold start.

DiffusionGemma's prompt cache is exact by design (a causal encoder: a token's keys and values depend only on the
tokens before it). The masked backend's kept prefix (kv_cache) is exact when the fill's canvas is the one it was
kept from (the same text and hole lengths) and approximate by design when only the text around the holes is the
same (another length tried for the same hole): there the fill must reuse it (no full forward), as documented.
``fill_many`` gives each plan its ``fill``.
"""

from __future__ import annotations

import inspect
import random
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from engine.backends import Control, FillPlan, HoleSpec, load_backend
from engine.backends.diffusion_gemma.prompt_cache import PromptCache
from engine.config import EMBEDDED_DIR, LoadConfig
from engine.requests import Cancelled
from tests.gemma_checkpoint import write_checkpoint

torch.set_num_threads(1)

PYTHON = inspect.getsource(textwrap)[:7000]   # a real module (stable for one interpreter)
GO = textwrap.dedent("""\
    package main

    import (
    \t"fmt"
    \t"strings"
    )

    // Join returns the words joined by sep, skipping empty ones.
    func Join(words []string, sep string) string {
    \tvar kept []string
    \tfor _, w := range words {
    \t\tif w == "" {
    \t\t\tcontinue
    \t\t}
    \t\tkept = append(kept, strings.TrimSpace(w))
    \t}
    \treturn strings.Join(kept, sep)
    }

    func main() {
    \tfmt.Println(Join([]string{"a", "", "b"}, ", "))
    }
    """) * 3
TYPED = ["x", "(", " ", "\n", "self.", "é", "🙂", "return "]


def never(step: int) -> None:
    return None


def cancel_at(n: int) -> Callable[[int], None]:
    def check(step: int) -> None:
        if step >= n:
            raise Cancelled(step)
    return check


class Editor:
    """A document, a cursor and a hole length, changed by random edits the way a user makes them."""

    OPS = ("type", "delete", "far", "after", "same", "language", "length", "cancel", "jump")

    def __init__(self, seed: int, window: int = 600, lengths: tuple[int, ...] = (4, 8, 12)):
        self.rng = random.Random(seed)
        self.docs = {"python": PYTHON, "go": GO}
        self.language, self.window, self.lengths = "python", window, lengths
        self.doc, self.cursor, self.length = PYTHON, 3000, lengths[-1]

    def edit(self, op: str) -> None:
        rng, doc, cur = self.rng, self.doc, self.cursor
        if op == "type":
            typed = rng.choice(TYPED)
            self.doc, self.cursor = doc[:cur] + typed + doc[cur:], cur + len(typed)
        elif op == "delete":
            n = min(cur, rng.randint(1, 5))
            self.doc, self.cursor = doc[:cur - n] + doc[cur:], cur - n
        elif op == "far":                                   # far above the cursor, still in the prefix window
            at = rng.randrange(max(0, cur - self.window), max(1, cur - self.window // 2))
            self.doc, self.cursor = doc[:at] + "# note\n" + doc[at:], cur + len("# note\n")
        elif op == "after":                                 # only the text after the hole changes
            at = rng.randrange(cur, min(len(doc), cur + 120) + 1)
            self.doc = doc[:at] + "y" + doc[at:]
        elif op == "language":
            self.docs[self.language] = doc
            self.language = "go" if self.language == "python" else "python"
            self.doc = self.docs[self.language]
            self.cursor = rng.randrange(len(self.doc) // 3, len(self.doc) - 50)
        elif op == "length":
            self.length = rng.choice([n for n in self.lengths if n != self.length])
        elif op == "jump":
            self.cursor = rng.randrange(len(doc) // 4, len(doc) - 50)

    def plan(self, steps: int, options: tuple[str, ...] = ()) -> FillPlan:
        before = self.doc[max(0, self.cursor - self.window):self.cursor]
        after = self.doc[self.cursor:self.cursor + 200]
        return FillPlan((before, HoleSpec(self.length), after), steps, 0.0, options=options)


def outcome(result) -> tuple:
    return ([(c.texts, c.confidences, c.token_spans, c.score) for c in result.candidates],
            result.steps, result.forwards, result.tokens, result.options)


def close(a, b, tol: float = 1e-4) -> bool:
    """The same fill up to float rounding: texts, spans and counts exactly, confidences and scores within ``tol``."""
    ca, cb = a.candidates, b.candidates
    return ((a.steps, a.forwards, a.tokens) == (b.steps, b.forwards, b.tokens) and len(ca) == len(cb)
            and all(x.texts == y.texts and x.token_spans == y.token_spans and abs(x.score - y.score) <= tol
                    and all(abs(p - q) <= tol for hx, hy in zip(x.confidences, y.confidences)
                            for p, q in zip(hx, hy)) for x, y in zip(ca, cb)))


# --- DiffusionGemma: the prompt cache -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gemma(tmp_path_factory):
    """The tiny checkpoint with a sliding window of 16: prefixes of hundreds of tokens are cut far beyond it."""
    path = write_checkpoint(tmp_path_factory.mktemp("gemma_sw16"), sliding_window=16)
    backend = load_backend(LoadConfig(model=str(path), threads=1))
    yield backend
    backend.close()


def same_cache(warm: PromptCache, model) -> bool:
    """The warm cache holds what a cold encode of its ids gives: every layer's keys and values, and its length."""
    cold = PromptCache(model)
    cold.update(list(warm.ids))
    if warm.cache is None or cold.cache is None:
        return False
    for a, b in zip(warm.cache.layers, cold.cache.layers):
        lengths = getattr(a, "cumulative_length", None), getattr(b, "cumulative_length", None)
        if (a.keys.shape != b.keys.shape or lengths[0] != lengths[1]
                or not torch.allclose(a.keys, b.keys, atol=1e-5) or not torch.allclose(a.values, b.values, atol=1e-5)):
            return False
    return True


@pytest.mark.parametrize("seed", [0, 1])
def test_gemma_fills_with_the_prompt_cache_are_its_cold_fills(gemma, seed):
    editor = Editor(seed)
    for _ in range(18):
        op = editor.rng.choice(Editor.OPS)
        editor.edit(op)
        plan = editor.plan(steps=6)
        if op == "cancel":                                   # cancelled mid-fill, then asked again
            with pytest.raises(Cancelled):
                gemma.fill(plan, Control(cancel_at(editor.rng.randint(0, 3))))
        warm = gemma.fill(plan, Control(never))
        assert same_cache(gemma.prompt_cache, gemma.model), op
        gemma.clear_prompt_cache()
        cold = gemma.fill(plan, Control(never))
        assert close(warm, cold), (op, [c.texts for c in warm.candidates], [c.texts for c in cold.candidates])
        if editor.rng.random() < 0.5:                        # half the time the next fill starts from the warm path
            gemma.fill(editor.plan(steps=1), Control(never))


# --- the masked backend: the kept prefix ----------------------------------------------------------------------

def masked_pair(**load) -> tuple:
    config = LoadConfig(device="cpu", dtype="float32", threads=1, kv_cache=True, cache_refresh=4, **load)
    return load_backend(config), load_backend(config)


@pytest.fixture(scope="module")
def adapter(tmp_path_factory) -> Path:
    from tests.test_adapt_lora import adapter_files
    path, _ = adapter_files(EMBEDDED_DIR, tmp_path_factory.mktemp("adapter"), seed=3)
    return path


@pytest.mark.parametrize("quantization", ["none", "int8"])
def test_masked_fills_with_the_kept_prefix_are_their_cold_fills_where_the_canvas_is_the_same(quantization, adapter):
    """Exact where the kept keys and values come from this very canvas (the same text and hole lengths: a request
    asked again, after a cancel, after another fill) or where the text changed (a full forward): bit for bit the
    cold fill, with float or int8 weights. Where only the hole length changed the prefix is reused by design
    (approximate): no full forward runs. A weight swap drops what was kept."""
    warm, cold = masked_pair(quantization=quantization)
    editor = Editor(7, window=400, lengths=(4, 8, 12))
    kept: tuple | None = None       # the canvas (text, hole length) whose first forward the warm backend keeps
    exact = approximate = 0
    for i in range(32):
        op = editor.rng.choice(Editor.OPS + ("same", "swap"))
        if op == "swap":
            weights = editor.rng.choice([adapter, None])
            warm.load_weights(weights)
            cold.load_weights(weights)
            op = "same"
        editor.edit(op)
        plan = editor.plan(steps=8, options=("return x", "pass") if i % 3 == 0 else ())
        full = warm.passes["full"]
        if op == "cancel":
            with pytest.raises(Cancelled):
                warm.fill(plan, Control(cancel_at(editor.rng.randint(1, 3))))
        result = warm.fill(plan, Control(never))
        text = tuple(p for p in plan.pieces if isinstance(p, str))
        if warm.passes["full"] > full:
            kept = (text, editor.length)
        elif kept is not None and kept[0] == text and kept[1] != editor.length:
            approximate += 1         # another length over the same text: reused, as documented
            continue
        cold.weights_changed()
        exact += 1
        assert outcome(result) == outcome(cold.fill(plan, Control(never))), (i, op, quantization)
    assert exact >= 16 and approximate >= 1


def test_a_request_asked_again_with_int8_weights_is_the_fill_it_was():
    """What an editor sees: the same cursor request twice at the same text gives the same fill."""
    from engine import Engine, EngineConfig, InfillRequest

    eng = Engine(EngineConfig.of(threads=1, min_confidence=0.0, quantization="int8"))
    try:
        eng.start().result(timeout=120)
        for cursor in (4634, 1276, 2552):     # mid-line holes in the text above
            request = InfillRequest(PYTHON, cursor, "python")
            first = eng.infill_sync(request, timeout=60)
            again = eng.infill_sync(request, timeout=60)
            assert [(f.text, f.confidence) for f in again.fills] == [(f.text, f.confidence) for f in first.fills]
    finally:
        eng.close()


# --- the masked backend: several plans in one padded forward ------------------------------------------------

def many_plans() -> list[FillPlan]:
    """Plans of different canvas lengths, hole lengths, languages and budgets, options on some, two holes on one."""
    py, go = PYTHON.index('"""_split(text'), GO.index("\t\tkept = append")
    return [FillPlan((PYTHON[py - 500:py], HoleSpec(24), PYTHON[py:py + 150]), 12, 0.0, options=("return x\n",)),
            FillPlan((GO[go - 80:go], HoleSpec(8, True), GO[go:go + 40]), 8, 0.0),
            FillPlan(("def add(a, b):\n    ", HoleSpec(4, True), "\n"), 4, 0.0),
            FillPlan((GO[:go], HoleSpec(16), "\n", HoleSpec(6, True), GO[go:go + 300]), 16, 0.5),
            FillPlan((PYTHON[py - 200:py], HoleSpec(12, True), ""), 6, 0.0, options=("pass", "x" * 200))]


@pytest.mark.parametrize("load", [{"kv_cache": True}, {"kv_cache": False}, {"quantization": "int8"}])
def test_fill_many_gives_each_plan_its_fill_and_a_cancelled_one_stops_alone(load):
    backend = load_backend(LoadConfig(device="cpu", dtype="float32", threads=1, cache_refresh=4, **load))
    plans = many_plans()
    controls = [Control(never), Control(never), Control(cancel_at(2)), Control(never), Control(cancel_at(1))]
    alone: list = []
    for plan, control in zip(plans, controls):
        backend._prefix = None                          # nothing kept from the previous fill: the batch keeps none
        try:
            alone.append(backend.fill(plan, control))
        except Cancelled as exc:
            alone.append(exc)
    backend._prefix = None
    together = backend.fill_many(plans, controls)
    assert len(together) == len(plans)
    for a, t in zip(alone, together):
        if isinstance(a, Cancelled):
            assert isinstance(t, Cancelled) and t.step == a.step
        else:
            assert not isinstance(t, Exception) and close(a, t, tol=2e-4), ([c.texts for c in a.candidates], t)
            assert len(a.options) == len(t.options) and all(
                (x is None) == (y is None) and (x is None or (x.texts == y.texts and abs(x.score - y.score) <= 2e-4))
                for x, y in zip(a.options, t.options))


def test_a_full_set_of_weights_that_does_not_fit_is_refused_before_anything_changes(tmp_path):
    """A file with a tensor the model lacks, one missing or one of another shape (or no safetensors at all) is a
    clear ``ModelLoadError`` and the weights in use stay: the next fill, kept forward and all, is the one before."""
    from safetensors.torch import save_file

    from engine.requests import ModelLoadError

    backend = load_backend(LoadConfig(device="cpu", dtype="float32", threads=1, kv_cache=True))
    plan = Editor(0).plan(steps=8)
    before = outcome(backend.fill(plan, Control(never)))
    generator = torch.Generator().manual_seed(0)
    own = {name: (t + 0.05 * torch.randn(t.shape, generator=generator) if t.is_floating_point() else t).contiguous()
           for name, t in backend._weights.state_dict().items() if name != "decoder.weight"}   # tied: saved once
    layer = next(name for name in own if ".layers.0." in name and name.endswith(".weight"))
    bad = {"extra tensor": {**own, "extra.weight": torch.zeros(1)},
           "missing tensor": {n: t for n, t in own.items() if n != layer},
           "other shape": {**own, layer: torch.zeros(3, 3)}}
    for why, tensors in bad.items():
        path = tmp_path / f"{why}.safetensors"
        save_file(tensors, str(path))
        with pytest.raises(ModelLoadError, match="do not fit this model"):
            backend.load_weights(path)
        assert outcome(backend.fill(plan, Control(never))) == before, why
    (tmp_path / "junk.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(ModelLoadError, match="junk.safetensors"):
        backend.load_weights(tmp_path / "junk.safetensors")
    assert outcome(backend.fill(plan, Control(never))) == before
