"""The DiffusionGemma backend on a tiny random checkpoint written at test time, through to the CLI and the server."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import pytest_lsp
import torch
from lsprotocol import types
from pytest_lsp import LanguageClient

from engine.backends import Control, FillPlan, HoleSpec, load_backend
from engine.backends.canvas_text import hole_lengths
from engine.backends.diffusion_gemma.canvas import CanvasBatch, Segment, layout
from engine.backends.diffusion_gemma import sampler
from engine.backends.diffusion_gemma.sampler import Sampling, denoise, entropy_bound_accept
from engine.config import LoadConfig
from engine.requests import Cancelled, ModelLoadError
from tests.gemma_checkpoint import GENERATION, SAMPLE, write_checkpoint
from tests.lsp_session import SERVER, inline_params, open_doc, record_notifications, start_session, stats, wait_state

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[1]

PREFIX = 'def read_config(path):\n    """Read a config file."""\n    with open(path) as handle:\n        return '
SUFFIX = "\n\n\ndef main():\n    print(read_config('x'))\n"


@pytest.fixture(scope="session")
def gemma_dir(tmp_path_factory):
    return write_checkpoint(tmp_path_factory.mktemp("diffusion_gemma"))


@pytest.fixture
def backend(gemma_dir):
    b = load_backend(LoadConfig(model=str(gemma_dir), threads=1))
    yield b
    b.close()


def plan(*pieces, steps=6, threshold=0.0) -> FillPlan:
    return FillPlan(tuple(pieces), steps=steps, threshold=threshold)


def never(step: int) -> None:
    return None


class Forwards:
    """Records every decoder call the backend makes (canvas and self-conditioning), through a forward pre-hook."""

    def __init__(self, model):
        self.calls: list[dict] = []
        self.handle = model.register_forward_pre_hook(self.record, with_kwargs=True)

    def record(self, module, args, kwargs):
        if kwargs.get("decoder_input_ids") is not None:
            sc = kwargs.get("self_conditioning_logits")
            self.calls.append({"canvas": kwargs["decoder_input_ids"].clone(),
                               "sc": None if sc is None else sc.float().clone()})

    def __len__(self):
        return len(self.calls)

    def close(self):
        self.handle.remove()


# --- loading ---------------------------------------------------------------------------------------

def test_loads_through_load_backend_with_the_checkpoint_defaults(backend):
    from engine.backends.diffusion_gemma.backend import DiffusionGemmaBackend

    assert isinstance(backend, DiffusionGemmaBackend) and backend.name == "diffusion_gemma"
    s = backend.sampling
    assert (s.steps, s.entropy_bound, s.t_min, s.t_max) == (
        GENERATION["max_denoising_steps"], GENERATION["sampler_config"]["entropy_bound"],
        GENERATION["t_min"], GENERATION["t_max"])
    tok = backend.tokenizer
    assert (backend.pad_id, backend.bos_id) == (tok.pad_token_id, tok.bos_token_id)
    assert backend.count_tokens("def f(x):\n    return x\n") == len(tok("def f(x):\n    return x\n",
                                                                       add_special_tokens=False).input_ids)
    assert backend.count_tokens("") == 0
    assert backend.device.type == "cpu" and backend.model.dtype == torch.float32


def test_load_config_overrides_the_temperatures_and_the_default_budget_is_the_checkpoints(gemma_dir):
    b = load_backend(LoadConfig(model=str(gemma_dir), t_min=0.2, t_max=0.7))
    assert (b.sampling.t_min, b.sampling.t_max) == (0.2, 0.7)
    # the engine's budget for a request without steps: the checkpoint's, once for a typed-then-healed hole too
    assert b.default_steps == b.sampling.steps == GENERATION["max_denoising_steps"]


def test_without_generation_config_the_library_defaults_apply(tmp_path, gemma_dir):
    bare = tmp_path / "bare"
    bare.mkdir()
    for f in gemma_dir.iterdir():
        if f.name != "generation_config.json":
            (bare / f.name).symlink_to(f)
    assert load_backend(LoadConfig(model=str(bare))).sampling == Sampling()


def test_load_failures_raise_model_load_error(tmp_path, gemma_dir):
    with pytest.raises(ModelLoadError, match="config.json"):
        load_backend(LoadConfig(model=str(tmp_path / "missing")))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text((gemma_dir / "config.json").read_text())
    with pytest.raises(ModelLoadError, match="DiffusionGemma"):
        load_backend(LoadConfig(model=str(broken)))
    with pytest.raises(ModelLoadError, match="dtype"):
        load_backend(LoadConfig(model=str(gemma_dir), dtype="int3"))
    # the weights without the tokenizer's files: transformers makes a tokenizer of special tokens alone, which
    # read every text as unknown tokens (the server said "ready" and filled noise)
    no_tokenizer = tmp_path / "no_tokenizer"
    no_tokenizer.mkdir()
    for name in ("config.json", "generation_config.json", "model.safetensors"):
        (no_tokenizer / name).symlink_to(gemma_dir / name)
    with pytest.raises(ModelLoadError, match="tokenizer files"):
        load_backend(LoadConfig(model=str(no_tokenizer)))
    # a generation_config.json that is not JSON: transformers dropped it silently (the library's 48 steps and
    # temperatures replaced the checkpoint's)
    broken_generation = tmp_path / "broken_generation"
    broken_generation.mkdir()
    for f in gemma_dir.iterdir():
        if f.name != "generation_config.json":
            (broken_generation / f.name).symlink_to(f)
    (broken_generation / "generation_config.json").write_text('{"max_denoising_steps": 12, "t_min": 0.3')
    with pytest.raises(ModelLoadError, match="generation_config.json"):
        load_backend(LoadConfig(model=str(broken_generation)))


# --- pinning and rows ------------------------------------------------------------------------------

def test_pinned_tokens_never_change(backend):
    p = plan(PREFIX, HoleSpec(8), "\n\n\ndef main():\n    ", HoleSpec(4), SUFFIX, steps=8)
    _, segments = backend.segments(p)
    batch = layout(segments, backend.canvas_length, backend.pad_id)
    rec = Forwards(backend.model)
    try:
        result = backend.fill(p, Control(never))
    finally:
        rec.close()
    assert len(rec) == result.forwards == 8
    pinned, want = batch.pinned, batch.start
    for call in rec.calls:
        assert call["canvas"].shape == want.shape
        assert torch.equal(call["canvas"][pinned], want[pinned])
        if call["sc"] is not None:  # self-conditioning on a pinned slot is a one-hot on its token
            probs = call["sc"].softmax(-1)
            assert torch.equal(probs.argmax(-1)[pinned], want[pinned])
            assert torch.allclose(probs.max(-1).values[pinned], torch.ones(int(pinned.sum())))
    free_changed = any(not torch.equal(a["canvas"][~pinned], b["canvas"][~pinned])
                       for a, b in zip(rec.calls, rec.calls[1:]))
    assert free_changed
    assert all(len(c.texts) == 2 for c in result.candidates)


def test_hole_lengths_batch_as_rows_with_dead_slots_masked(backend):
    p = plan(PREFIX, HoleSpec(16), SUFFIX, steps=3)
    _, segments = backend.segments(p)
    batch = layout(segments, backend.canvas_length, backend.pad_id)
    assert batch.lengths == [(16,), (8,), (4,), (2,)]
    suffix_window = batch.live[0].sum().item() - 16
    assert batch.live.sum(-1).tolist() == [16 + suffix_window, 8 + suffix_window, 4 + suffix_window, 2 + suffix_window]
    rec = Forwards(backend.model)
    try:
        result = backend.fill(p, Control(never))
    finally:
        rec.close()
    assert all(call["canvas"].shape[0] == 4 for call in rec.calls)        # one forward serves every length
    assert all(len(c.confidences[0]) <= 16 for c in result.candidates)
    assert 1 <= len(result.candidates) <= 4
    assert [c.score for c in result.candidates] == sorted((c.score for c in result.candidates), reverse=True)
    # A shorter row's live slots see exactly what they would see alone: the dead slots are masked out.
    g = torch.Generator().manual_seed(3)
    canvas = torch.where(batch.start < 0, torch.randint(0, backend.vocab_size, batch.start.shape, generator=g),
                         batch.start)
    junk = torch.where(batch.live, canvas, torch.randint(0, backend.vocab_size, canvas.shape, generator=g))
    with torch.inference_mode():
        together = backend.decoder(batch)(canvas, None)
        with_junk = backend.decoder(batch)(junk, None)
        for r in range(1, batch.rows):
            n = int(batch.live[r].sum())
            alone_batch = CanvasBatch(batch.start[r:r + 1, :n], batch.pinned[r:r + 1, :n], batch.live[r:r + 1, :n],
                                      [batch.holes[r]], [batch.lengths[r]])
            alone = backend.decoder(alone_batch)(canvas[r:r + 1, :n], None)
            assert torch.allclose(alone[0], together[r, :n], atol=1e-5)
            assert torch.allclose(with_junk[r, :n], together[r, :n], atol=1e-5)


def test_hole_lengths_for_completion_and_rewrite():
    assert hole_lengths(HoleSpec(64), 0) == [64, 32, 16, 8]
    assert hole_lengths(HoleSpec(3), 0) == [3, 2, 1]
    assert hole_lengths(HoleSpec(1), 0) == [1]
    assert hole_lengths(HoleSpec(40, init="x"), 20) == [20, 25, 15]


def test_rewrite_starts_from_the_selection(backend):
    old = "handle.read()"
    p = plan(PREFIX, HoleSpec(12, init=old), SUFFIX, steps=2)
    rec = Forwards(backend.model)
    try:
        backend.fill(p, Control(never))
    finally:
        rec.close()
    init = backend.encode(old)
    first = rec.calls[0]["canvas"]
    assert first[0, :len(init)].tolist() == init        # the row of the selection's own length
    assert all(first[r, :min(len(init), n)].tolist() == init[:n] for r, (n,) in enumerate(
        layout(backend.segments(p)[1], backend.canvas_length, backend.pad_id).lengths))


def test_multi_hole_fill_and_drafts(backend):
    drafts = []
    p = plan(PREFIX, HoleSpec(6), "\n\n\ndef main():\n    ", HoleSpec(6, stop_at_newline=True), SUFFIX, steps=4)
    result = backend.fill(p, Control(never, lambda *a: drafts.append(a)))
    assert [d[0] for d in drafts] == [1, 2, 3, 4]
    for _step, texts, confs, pieces in drafts:
        assert len(texts) == len(confs) == len(pieces) == 2
        assert all("".join(parts) == text for parts, text in zip(pieces, texts))
    best = result.candidates[0]
    assert "\n" not in best.texts[1]
    for text, confs, spans in zip(best.texts, best.confidences, best.token_spans):
        assert len(confs) == len(spans) and all(0.0 <= c <= 1.0 for c in confs)
        assert all(0 <= lo <= hi <= len(text) for lo, hi in spans)
    assert result.tokens == sum(len(c) for c in best.confidences)


def test_same_request_same_answer(backend):
    p = plan(PREFIX, HoleSpec(8), SUFFIX)
    a, b = backend.fill(p, Control(never)), backend.fill(p, Control(never))
    assert [c.texts for c in a.candidates] == [c.texts for c in b.candidates]


# --- reading fills ---------------------------------------------------------------------------------

def test_a_fill_ends_at_eos_and_at_a_newline_when_asked(backend):
    reader, tok = backend.reader, backend.tokenizer
    ids = backend.encode("x = 1\ny = 2")
    eos = tok.eos_token_id
    lp = [-0.1 * (i + 1) for i in range(len(ids) + 3)]
    text, confs, spans, scored = reader.read(ids + [eos, 7, 8], lp, HoleSpec(16))
    assert text == "x = 1\ny = 2" and len(confs) == len(ids)
    assert scored == lp[:len(ids) + 1]                      # the EOS that chose the length is scored
    assert "".join(text[lo:hi] for lo, hi in spans) == text
    text, confs, spans, _ = reader.read(ids, lp, HoleSpec(16, stop_at_newline=True))
    assert text == "x = 1" and len(confs) == len(spans) and spans[-1][1] <= len(text)
    text, *_ = reader.read(ids, lp, HoleSpec(16, stop_at_newline=True, keep_newline=True))
    assert text == "x = 1\n"
    text, confs, _, scored = reader.read([tok.pad_token_id] + ids, lp, HoleSpec(16))
    assert text == "" and confs == () and len(scored) == 1
    text, *_ = reader.read(ids[:2] + [backend.vocab_size - 1], lp, HoleSpec(16))  # an id the tokenizer lacks
    assert text == tok.decode(ids[:2])


# --- the sampler -----------------------------------------------------------------------------------

def test_entropy_bound_accepts_the_lowest_entropies_within_the_bound():
    h = torch.tensor([[0.5, 0.01, 0.02, 0.3, 0.0]])
    assert entropy_bound_accept(h, 0.1).tolist() == [[False, True, True, True, True]]
    assert entropy_bound_accept(h, 0.0).tolist() == [[False, True, False, False, True]]


def peaked(canvas_shape, vocab, margin, token=5):
    """A fake decoder: every slot predicts ``token`` with logit margin ``margin`` over the rest."""
    def decode(canvas, sc):
        logits = torch.zeros(*canvas_shape, vocab)
        logits[..., token] = margin
        return logits
    return decode


def test_adaptive_stop_counts_free_slots_only():
    B, C, V = 1, 10, 32
    pinned = torch.zeros(B, C, dtype=torch.bool)
    pinned[:, 1:] = True                                   # one free slot among nine pinned
    start = torch.full((B, C), 3)
    start[:, 0] = -1
    flat = Sampling(steps=20, entropy_bound=0.1, t_min=1.0, t_max=1.0, stability=1, confidence=1.0)
    decode = peaked((B, C), V, margin=8.0)
    p = torch.softmax(torch.tensor([8.0] + [0.0] * (V - 1)), 0)
    free_entropy = float(-(p * p.log()).sum())
    g = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    # Confident enough: stops once the argmax held for a step (step 2), long before the budget.
    out = denoise(decode, start, pinned, replace(flat, confidence=free_entropy * 1.5),
                  steps=20, vocab_size=V, generator=g(), sc_dtype=torch.float32)
    assert out.steps == 2 and out.argmax[0, 0] == 5 and torch.equal(out.argmax[0, 1:], start[0, 1:])
    # Above the bound on the free slot but below it averaged over all ten slots: pinned slots must not count.
    out = denoise(decode, start, pinned, replace(flat, confidence=free_entropy / 2),
                  steps=20, vocab_size=V, generator=g(), sc_dtype=torch.float32)
    assert out.steps == 20
    assert math.isclose(out.logp[0, 0].item(), math.log(p[0].item()), abs_tol=1e-6)


# --- no host synchronisation in the loop, same fills ----------------------------------------------

# The loop as it was before the stop verdict moved to the device (it read `done` back twice a step and
# sampled with torch.multinomial): kept verbatim as the reference the current loop must reproduce.
def reference_denoise(decode: sampler.Decode, start: torch.Tensor, pinned: torch.Tensor, sampling: Sampling, *,
                      steps: int, vocab_size: int, generator: torch.Generator, sc_dtype: torch.dtype,
                      check: Callable[[int], None] = lambda step: None,
                      on_step: sampler.OnStep | None = None) -> sampler.Denoised:
    B, C = start.shape
    device = start.device
    canvas = torch.where(start < 0, sampler.noise(B, C, vocab_size, generator, device), start)  # (B, C)
    pins = sampler.Pins(pinned, canvas.clone())
    argmax, logp = canvas.clone(), torch.zeros((B, C), device=device)
    done = torch.zeros(B, dtype=torch.bool, device=device)
    history = torch.full((sampling.stability, B, C), -1, dtype=torch.long, device=device)
    sc = None
    for step in range(steps):
        check(step)
        raw = decode(canvas, sc).float()                                   # (B, C, V)
        # Committed tokens and their untempered log-probability (the score and the confidence users see).
        new_argmax = torch.where(pinned, pins.ids, raw.argmax(-1))         # (B, C)
        new_logp = raw.gather(-1, new_argmax[..., None]).squeeze(-1) - raw.logsumexp(-1)
        # Temperature falls linearly from t_max to t_min as the remaining steps run out (as in generate).
        logits = pins.impose(raw.div_(sampler.temperature(sampling, steps - step, steps)))
        logprobs = logits.log_softmax(-1)                                  # (B, C, V)
        probs = logprobs.exp()
        entropy = -(probs * logprobs).sum(-1).masked_fill_(pinned, 0.0)   # (B, C)
        sample = torch.multinomial(probs.view(B * C, -1), 1, generator=generator).view(B, C)
        del logprobs, probs
        # Accept the lowest-entropy tokens while sum(H) - max(H) <= bound; re-noise everything else.
        accept = sampler.entropy_bound_accept(entropy, sampling.entropy_bound)    # (B, C)
        new_canvas = torch.where(accept, sample, sampler.noise(B, C, vocab_size, generator, device))
        new_canvas = torch.where(pinned, pins.ids, new_canvas)
        # Rows that stopped earlier keep their canvas, their committed tokens and their feedback.
        keep = done[:, None]
        canvas = torch.where(keep, canvas, new_canvas)
        argmax = torch.where(keep, argmax, new_argmax)
        logp = torch.where(keep, logp, new_logp)
        if sc is not None and bool(done.any()):
            logits = torch.where(keep[..., None], sc.float(), logits)
        # Adaptive stop: the argmax canvas held for `stability` steps and the free slots are confident.
        if sampling.stability:
            stable = (history == argmax[None]).all(-1).all(0)
            history = torch.cat([history[1:], argmax[None]])
        else:
            stable = torch.ones_like(done)
        done |= stable & (sampler.mean_free(entropy, pinned) < sampling.confidence)
        sc = logits.to(sc_dtype)                                           # (B, C, V) self-conditioning
        del logits
        if on_step is not None:
            on_step(step + 1, argmax, logp)
        if bool(done.all()):
            return sampler.Denoised(argmax, logp, step + 1, step + 1)
    return sampler.Denoised(argmax, logp, steps, steps)


def stop_rules():
    """The checkpoint's sampler, and stop rules under which rows stop at different steps (the random model's
    mean entropy is about 6.2 nats and falls with the temperature)."""
    return [None, dict(stability=0, confidence=6.2), dict(stability=0, confidence=6.16)]


@pytest.mark.parametrize("lag", [0, 1])
def test_the_loop_reproduces_the_previous_loop_at_the_same_seed(backend, lag):
    plans = [plan(PREFIX, HoleSpec(16), SUFFIX, steps=12, threshold=0.5),
             plan(PREFIX, HoleSpec(6), "\n\n\ndef main():\n    ", HoleSpec(6, stop_at_newline=True), SUFFIX, steps=8),
             plan(PREFIX, HoleSpec(12, init="handle.read()"), SUFFIX, steps=5)]
    base, stops = backend.sampling, set()
    for rule in stop_rules():
        for p in plans:
            backend.sampling = replace(base, **rule) if rule else base
            _, segments = backend.segments(p)
            batch = layout(segments, backend.canvas_length, backend.pad_id)
            with backend.no_grad():
                backend.prompt_cache.update(backend.segments(p)[0])
                kw = dict(steps=p.steps, vocab_size=backend.vocab_size, sc_dtype=torch.float32)
                sampling = replace(backend.sampling, entropy_bound=p.threshold or backend.sampling.entropy_bound)
                if any(s.init for s in segments):
                    sampling = replace(sampling, t_max=sampling.t_min + 0.5 * (sampling.t_max - sampling.t_min))
                want = reference_denoise(backend.decoder(batch), batch.start, batch.pinned, sampling,
                                         generator=torch.Generator().manual_seed(0), **kw)
                got = denoise(backend.decoder(batch), batch.start, batch.pinned, sampling,
                              generator=torch.Generator().manual_seed(0), stop_lag=lag, **kw)
            assert torch.equal(got.argmax, want.argmax) and torch.equal(got.logp, want.logp)
            assert got.steps == want.steps
            # a verdict read one step late costs at most one forward, and only when the batch stopped early
            assert got.forwards == min(want.steps + lag, p.steps)
            stops.add(want.steps < p.steps)
    assert stops == {True, False}                       # both early stops and full budgets were compared
    backend.sampling = base
    # the backend's own fill is the same loop (lag 0 on CPU): the same texts as the reference's canvas
    p = plans[0]
    result = backend.fill(p, Control(never))
    assert result.forwards == result.steps


def test_sampling_draws_what_torch_multinomial_draws():
    from engine.backends.diffusion_gemma.sampler import multinomial

    probs = torch.softmax(torch.randn(64, 300, generator=torch.Generator().manual_seed(1)) * 3, -1)
    want = torch.multinomial(probs, 1, generator=torch.Generator().manual_seed(7)).squeeze(-1)
    assert torch.equal(multinomial(probs, torch.Generator().manual_seed(7)), want)


# --- byte tokens committed as valid UTF-8 (engine/backends/utf8.py) --------------------------------

def _byte_ids(tok) -> dict[int, int]:
    """Byte -> id of the tiny tokenizer's byte token (its byte-level alphabet: ``Ã`` is 0xC3, ``©`` 0xA9)."""
    from engine.backends.utf8 import _byte_decoder
    return {b: tok.convert_tokens_to_ids(ch) for ch, b in _byte_decoder().items()}


def _scripted_denoise(backend, want: list[list[int]], steps: int, guarded: bool):
    """One row, a hole of ``len(want)`` slots between pinned quotes, the sampler's loop on a scripted decoder that
    wants ``want[k]`` at slot ``k`` (each next choice a tenth as likely); -> the hole's text."""
    quote = backend.encode('"')
    C = len(want) + 2 * len(quote)
    lo = len(quote)
    start = torch.tensor([quote + [-1] * len(want) + quote])
    pinned = start >= 0
    V = backend.vocab_size

    def decode(canvas, sc):
        out = torch.full((1, C, V), -20.0)
        for k, choices in enumerate(want):
            for rank, t in enumerate(choices):
                out[0, lo + k, t] = 5.0 - rank * math.log(10)
        return out

    out = denoise(decode, start, pinned, backend.sampling, steps=steps, vocab_size=V,
                  generator=torch.Generator().manual_seed(0), sc_dtype=torch.float32,
                  utf8=backend.utf8 if guarded else None, holes=[[(lo, lo + len(want))]])
    text, *_ = backend.reader.read(out.argmax[0, lo:lo + len(want)].tolist(), out.logp[0, lo:lo + len(want)].tolist(),
                                   HoleSpec(len(want)))
    return text, out


def test_the_checkpoints_byte_tokens_are_guarded(backend):
    """The tiny checkpoint's tokenizer spells every non-ASCII character in byte tokens, as Gemma's does with its
    byte-fallback ``<0xC3>`` entries: the 128 bytes 0x80-0xFF, each U+FFFD alone."""
    assert backend.utf8 is not None and backend.utf8.size == 128
    assert all(backend.tokenizer.decode([i]) == "\ufffd" for i in backend.utf8.ids.tolist())


def test_a_byte_fallback_vocabulary_gives_its_byte_tokens_not_its_latin1_characters():
    """Gemma's (sentencepiece) kind of vocabulary: ``<0xHH>`` entries for bytes, and whole characters such as
    ``é`` as entries of their own, whose one character is a byte in the GPT-2 alphabet but is no byte token."""
    from tokenizers import Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    from engine.backends.utf8 import byte_tokens

    vocab = {"<pad>": 0, "<eos>": 1, **{f"<0x{b:02X}>": 2 + b for b in range(256)}}
    for word in ("é", "▁x", "x", "Ã©"):
        vocab[word] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], byte_fallback=True))
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")
    assert tokenizer.decode([vocab["<0xC3>"], vocab["<0xA9>"]]) == "é" and tokenizer.decode([vocab["é"]]) == "é"
    table = byte_tokens(tokenizer)
    assert table == {2 + b: bytes([b]) for b in range(0x80, 0x100)}      # not "é", not "Ã©"


def test_byte_tokens_that_cannot_form_utf8_are_not_committed(backend):
    """The model wants ``x``, then 0xC3 (the lead byte of ``é``), then ``x`` where the continuation belongs (0xA9 a
    tenth as likely): unguarded the fill is ``x`` U+FFFD ``x`` (the engine refuses it: no fill); guarded the last slot
    takes 0xA9 and its own log-probability. A continuation first and a lead last: no U+FFFD either."""
    byte = _byte_ids(backend.tokenizer)
    x = backend.encode("x")[0]
    for steps in (1, 4):
        text, _ = _scripted_denoise(backend, [[x], [byte[0xC3]], [x, byte[0xA9]]], steps, guarded=False)
        assert text == "x\ufffdx"
        text, out = _scripted_denoise(backend, [[x], [byte[0xC3]], [x, byte[0xA9]]], steps, guarded=True)
        assert text == "xé"
        row = torch.full((backend.vocab_size,), -20.0)
        row[x], row[byte[0xA9]] = 5.0, 5.0 - math.log(10)
        assert math.isclose(float(out.logp[0, 3]), float(row.log_softmax(0)[byte[0xA9]]), rel_tol=1e-5)
        text, _ = _scripted_denoise(backend, [[x], [byte[0xA9]], [byte[0xC3]], [x]], steps, guarded=True)
        assert "\ufffd" not in text and text, text
    emoji = [byte[b] for b in "\U0001f600".encode()]
    text, _ = _scripted_denoise(backend, [[t] for t in emoji] + [[backend.pad_id]], 3, guarded=True)
    assert text == "\U0001f600"                             # whole characters are kept as the model spelled them


def _biased_toward_bytes(backend, monkeypatch, bias: float = 4.0):
    """The backend's decoder with the 128 byte tokens' logits raised: a model that writes bytes everywhere."""
    ids = backend.utf8.ids
    make = backend.decoder

    def decoder(batch):
        decode = make(batch)

        def biased(canvas, sc):
            logits = decode(canvas, sc).clone()
            logits[..., ids] += bias
            return logits
        return biased
    monkeypatch.setattr(backend, "decoder", decoder)


BYTE_PLANS = [plan(PREFIX, HoleSpec(16), SUFFIX, steps=8),
              plan(PREFIX, HoleSpec(6), "\n\n\ndef main():\n    ", HoleSpec(6, stop_at_newline=True), SUFFIX, steps=6),
              plan(PREFIX, HoleSpec(12, init="handle.read()"), SUFFIX, steps=5),
              plan('s = "\U0001f600é', HoleSpec(12), '"\n', steps=6)]


def test_fills_forced_toward_byte_tokens_decode_without_u_fffd(backend, monkeypatch):
    """The tiny checkpoint with its byte tokens' logits raised, through ``backend.fill`` (every row of every plan,
    drafts too): unguarded 15 of 15 candidates held U+FFFD; guarded none, and each plan still has a fill."""
    _biased_toward_bytes(backend, monkeypatch)
    guard = backend.utf8
    broken = total = 0
    backend.utf8 = None
    for p in BYTE_PLANS:
        for c in backend.fill(p, Control(never)).candidates:
            total += 1
            broken += any("\ufffd" in t for t in c.texts)
    assert broken == total > 10
    backend.utf8 = guard
    for p in BYTE_PLANS:
        drafts: list = []
        cands = backend.fill(p, Control(never, draft=lambda step, texts, *_: drafts.append(texts))).candidates
        assert cands and all("\ufffd" not in t for c in cands for t in c.texts), [c.texts for c in cands]
        assert drafts and all("\ufffd" not in t for texts in drafts for t in texts)


def test_holes_without_byte_tokens_are_the_loops_bit_for_bit(backend):
    """The guard's summary rides along the loop (no draw, no acceptance changes): every hole whose unguarded argmax
    holds no byte token is the same tokens with the same log-probabilities guarded, at the same seed, under each
    stop rule; the steps and forwards are the same too. The others hold valid UTF-8."""
    plans = BYTE_PLANS[:3] + [plan(PREFIX, HoleSpec(24), SUFFIX, steps=12)]
    base, same = backend.sampling, 0
    is_byte = set(backend.utf8.ids.tolist())
    for rule in stop_rules():
        backend.sampling = replace(base, **rule) if rule else base
        for p in plans:
            prefix, segments = backend.segments(p)
            batch = layout(segments, backend.canvas_length, backend.pad_id)
            with backend.no_grad():
                backend.prompt_cache.update(prefix)
                kw = dict(steps=p.steps, vocab_size=backend.vocab_size, sc_dtype=torch.float32)
                want = reference_denoise(backend.decoder(batch), batch.start, batch.pinned, backend.sampling,
                                         generator=torch.Generator().manual_seed(0), **kw)
                got = denoise(backend.decoder(batch), batch.start, batch.pinned, backend.sampling,
                              generator=torch.Generator().manual_seed(0), utf8=backend.utf8, holes=batch.holes, **kw)
            assert (got.steps, got.forwards) == (want.steps, want.steps)
            for b, spans in enumerate(batch.holes):
                for lo, hi in spans:
                    toks = want.argmax[b, lo:hi].tolist()
                    end = next((j for j, t in enumerate(toks) if backend.reader.is_terminator(t)), len(toks))
                    if not is_byte & set(toks[:end]):
                        same += 1
                        assert torch.equal(got.argmax[b, lo:hi], want.argmax[b, lo:hi])
                        assert torch.equal(got.logp[b, lo:hi], want.logp[b, lo:hi])
                    text, *_ = backend.reader.read(got.argmax[b, lo:hi].tolist(), got.logp[b, lo:hi].tolist(),
                                                   HoleSpec(hi - lo))
                    assert "\ufffd" not in text
    backend.sampling = base
    assert same >= 3


# --- cancellation ----------------------------------------------------------------------------------

def test_cancel_stops_within_one_step(backend):
    def check(step):
        if step >= 3:
            raise Cancelled(step)
    rec = Forwards(backend.model)
    try:
        with pytest.raises(Cancelled) as info:
            backend.fill(plan(PREFIX, HoleSpec(8), SUFFIX, steps=50), Control(check))
    finally:
        rec.close()
    assert info.value.step == 3 and len(rec) == 3


# --- the prompt cache ------------------------------------------------------------------------------

def test_the_encoder_is_skipped_on_a_repeated_prefix(backend):
    backend.fill(plan(PREFIX, HoleSpec(8), SUFFIX), Control(never))
    assert backend.encoder_calls == 1
    first_tokens = backend.encoder_tokens
    assert first_tokens == 1 + backend.count_tokens(PREFIX)                  # BOS + prefix
    backend.fill(plan(PREFIX, HoleSpec(8), SUFFIX), Control(never))           # asked again
    backend.fill(plan(PREFIX, HoleSpec(8), "x" + SUFFIX), Control(never))     # typing after the cursor
    assert (backend.encoder_calls, backend.encoder_tokens) == (1, first_tokens)
    backend.fill(plan(PREFIX + "handle", HoleSpec(8), SUFFIX), Control(never))  # typing at the cursor
    assert backend.encoder_calls == 2 and backend.encoder_tokens - first_tokens <= 4


def test_an_edit_reencodes_only_from_the_change_and_matches_a_cold_encode(backend, gemma_dir):
    long_prefix = SAMPLE * 2                               # longer than the sliding window (64)
    at = long_prefix.rindex("print(text)") + len("print(text")
    edited = long_prefix[:at] + ".strip()" + long_prefix[at:]   # an edit near the end of a long prefix
    backend.fill(plan(long_prefix, HoleSpec(8), SUFFIX), Control(never))
    before = backend.encoder_tokens
    warm = backend.fill(plan(edited, HoleSpec(8), SUFFIX), Control(never))
    reencoded = backend.encoder_tokens - before
    total = 1 + backend.count_tokens(edited)
    assert 0 < reencoded < total / 4
    cold_backend = load_backend(LoadConfig(model=str(gemma_dir)))
    cold = cold_backend.fill(plan(edited, HoleSpec(8), SUFFIX), Control(never))
    assert cold_backend.encoder_tokens == total
    assert [c.texts for c in warm.candidates] == [c.texts for c in cold.candidates]
    assert [round(c.score, 4) for c in warm.candidates] == [round(c.score, 4) for c in cold.candidates]


def test_a_shorter_prefix_crops_without_encoding(backend):
    backend.fill(plan(PREFIX, HoleSpec(4), SUFFIX, steps=1), Control(never))
    calls, ids = backend.encoder_calls, [backend.bos_id] + backend.encode(PREFIX)
    assert backend.prompt_cache.update(ids[:10]) == 0          # e.g. after deleting back to token 10
    assert backend.encoder_calls == calls and len(backend.prompt_cache) == 10
    assert backend.prompt_cache.update(ids) == len(ids) - 10 and backend.encoder_calls == calls + 1


def test_layout_cuts_the_suffix_to_the_canvas():
    segs = [Segment(spec=HoleSpec(8)), Segment(ids=tuple(range(10, 100)))]
    batch = layout(segs, canvas_length=24, pad_id=0)
    assert batch.start.shape == (4, 24) and batch.start[0, 8:].tolist() == list(range(10, 26))
    assert (batch.start[0, :8] == -1).all() and not batch.pinned[0, :8].any() and batch.pinned[0, 8:].all()
    assert batch.live[3].sum() == 1 + 16 and batch.pinned[3].sum() == 24 - 1


# --- experts implementations and quantized weights -------------------------------------------------

FILL_PLANS = [plan(PREFIX, HoleSpec(16), SUFFIX, steps=8),
              plan(PREFIX, HoleSpec(6), "\n\n\ndef main():\n    ", HoleSpec(6, stop_at_newline=True), SUFFIX, steps=6)]


def fills(b) -> list:
    return [[(c.texts, round(c.score, 3)) for c in b.fill(p, Control(never)).candidates] for p in FILL_PLANS]


def test_the_experts_implementations_give_the_same_fills(gemma_dir, backend):
    """transformers' experts implementations on CPU: the per-expert loop, one bmm over gathered weights, torch's
    grouped GEMM. Their sums run in different orders (logits agree to ~1e-6), and the fills are the same."""
    assert backend.model.config.get_text_config()._experts_implementation == "grouped_mm"   # auto
    want = fills(backend)
    for name in ("eager", "batched_mm", "grouped_mm"):
        b = load_backend(LoadConfig(model=str(gemma_dir), experts=name))
        assert all(v == name for v in b.model.get_experts_implementation().values())
        assert fills(b) == want, name


def test_unknown_choices_and_a_missing_library_fail_the_load(gemma_dir, monkeypatch):
    with pytest.raises(ModelLoadError, match="experts"):
        load_backend(LoadConfig(model=str(gemma_dir), experts="loop"))
    with pytest.raises(ModelLoadError, match="quantization"):
        load_backend(LoadConfig(model=str(gemma_dir), quantization="int3"))
    monkeypatch.setitem(sys.modules, "torchao", None)            # as on a machine without torchao
    monkeypatch.setitem(sys.modules, "torchao.quantization", None)
    with pytest.raises(ModelLoadError, match="torchao"):
        load_backend(LoadConfig(model=str(gemma_dir), quantization="int8"))


@pytest.mark.parametrize("kind", ["int8", "fp8"])
def test_quantized_weights_through_torchao_on_cpu(gemma_dir, backend, kind):
    """int8 / fp8 weight-only (torchao) quantizes the Linear weights and the fused 3-D experts, encoder and decoder
    alike (they are tied), and runs the per-expert loop; the in-memory path of benchmarks.gpu_check is the same."""
    pytest.importorskip("torchao")
    from transformers import DiffusionGemmaForBlockDiffusion

    from engine.backends.diffusion_gemma.backend import DiffusionGemmaBackend
    from engine.backends.diffusion_gemma.options import is_quantized, quantize_in_memory

    b = load_backend(LoadConfig(model=str(gemma_dir), quantization=kind))
    model = b.model
    assert model.config.get_text_config()._experts_implementation == "eager"              # auto with quantization
    for layers in (model.model.decoder.layers, model.model.encoder.language_model.layers):
        layer = layers[0]
        assert is_quantized(layer.experts.gate_up_proj) and is_quantized(layer.experts.down_proj)
        assert is_quantized(layer.self_attn.q_proj.weight) and is_quantized(layer.mlp.up_proj.weight)
        assert not is_quantized(layer.router.proj.weight)
    decoder, encoder = model.model.decoder.layers[0], model.model.encoder.language_model.layers[0]
    assert decoder.experts.gate_up_proj is encoder.experts.gate_up_proj                     # still one copy
    assert not is_quantized(model.lm_head.weight)
    quantized = fills(b)
    assert all(cands for cands in quantized)
    # the same weights quantized in memory (gpu_check's random model) give the same fills
    plain = DiffusionGemmaForBlockDiffusion.from_pretrained(str(gemma_dir), experts_implementation="eager").eval()
    quantize_in_memory(plain, kind)
    assert fills(DiffusionGemmaBackend(plain, b.tokenizer, b.sampling)) == quantized


# --- end to end: the one-shot command and the server -----------------------------------------------

DOC = PREFIX + SUFFIX          # the cursor sits at the end of PREFIX: line 4, after "return "
CURSOR_LINE, CURSOR_COL = PREFIX.count("\n"), len(PREFIX.rsplit("\n", 1)[1])   # 0-based


def test_one_shot_infill_json_is_complete(tmp_path, gemma_dir):
    source = tmp_path / "sample.py"
    source.write_text(DOC)
    where = f"{source}:{CURSOR_LINE + 1}:{CURSOR_COL + 1}"
    out = subprocess.run([sys.executable, "-m", "lsp_server", "infill", where, "--model", str(gemma_dir),
                          "--json", "--steps", "4", "--threads", "1"],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    for key in ("text", "start", "end", "kind", "steps", "forwards", "tokens", "elapsed_ms", "load_ms",
                "tokens_per_forward", "confidences", "syntax_checked", "rejected", "backend", "model"):
        assert key in result, key
    assert result["backend"] == "diffusion_gemma" and result["model"] == str(gemma_dir)
    assert result["start"] == {"line": CURSOR_LINE, "character": CURSOR_COL}
    assert 0 < result["steps"] and result["forwards"] == result["steps"]
    assert len(result["confidences"]) <= result["tokens"] or not result["text"]


@pytest_lsp.fixture(config=SERVER)
async def gemma_client(lsp_client: LanguageClient, gemma_dir):
    """The real server (stdio) on the tiny DiffusionGemma checkpoint, under VS Code's capabilities."""
    record_notifications(lsp_client)
    await start_session(lsp_client, "vscode", {"model": str(gemma_dir), "steps": 4, "drafts": True,
                                               "draftIntervalMs": 0})
    assert await wait_state(lsp_client, "ready", "error") == "ready"
    yield
    await lsp_client.shutdown_session()


async def test_inline_completion_through_the_server(gemma_client: LanguageClient, gemma_dir):
    """The same request path as the embedded model: settings -> Engine -> load_backend -> this backend."""
    uri = "file:///project/sample.py"
    open_doc(gemma_client, uri, DOC)
    result = await gemma_client.text_document_inline_completion_async(inline_params(uri, CURSOR_LINE, CURSOR_COL))
    assert isinstance(result, types.InlineCompletionList)
    server = await stats(gemma_client)
    assert server["state"] == "ready" and server["model"] == str(gemma_dir)
    steps = [d["step"] for d in gemma_client.drafts if not d["done"]]
    assert steps[:4] == [1, 2, 3, 4]                     # a draft after every denoising step
    assert gemma_client.drafts[-1]["done"]


# --- the GPU check, end to end on CPU so it cannot rot ---------------------------------------------

def test_gpu_check_runs_tiny_on_cpu(tmp_path):
    from benchmarks.gpu_check.__main__ import main

    out = tmp_path / "results.json"
    assert main(["--tiny", "--out", str(out), "--repeats", "1", "--profile"]) == 0
    report = json.loads(out.read_text())
    assert report["complete"] and report["environment"]["device"] == "cpu" and not report["failed"]
    figures = report["figures"]
    assert list(figures) == ["canvases", "profile", "same_canvas", "experts", "fill", "prompt_cache", "rows"]
    assert all(f["section_peak_memory_gib"] is None for f in figures.values())          # no CUDA here
    steps = report["request"]["fixed_steps"]
    shapes = report["request"]["canvases"].split(",")
    for shape in shapes:
        row = figures["canvases"][shape]
        assert row["steps"] == steps and row["ms_per_step"] > 0 and row["canvas_tokens_per_s"] > 0
    prof = figures["profile"]
    assert set(prof["phases"]) == {"decoder", "sampling"} and prof["phases"]["decoder"]["calls"] == steps
    assert set(prof["modules"]) == {"attention", "router", "experts", "dense_mlp", "self_conditioning", "lm_head"}
    layers = report["environment"]["layers"]
    assert prof["modules"]["experts"]["calls"] == prof["modules"]["attention"]["calls"] == layers * steps
    assert all(m["host_ms_per_step"] > 0 and m["device_ms_per_step"] is None for m in prof["modules"].values())
    assert all(figures["experts"][name]["ms_per_step"] > 0 for name in ("eager", "batched_mm", "grouped_mm"))
    cache = figures["prompt_cache"]
    assert cache["repeated_prefix"]["encoder_skipped"] and cache["typing_8_tokens"]["tokens_encoded"] == 8
    assert figures["fill"]["rows"] == 4 and figures["fill"]["warm"]["ms"] > 0
    same = figures["same_canvas"]
    assert same["generate"]["steps"] == same["ours_cached_prefix"]["steps"] == report["request"]["steps"]
    assert figures["rows"]["all_rows_ms_per_step"] > 0


def test_gpu_check_quantized_tiny_on_cpu(tmp_path):
    pytest.importorskip("torchao")
    from benchmarks.gpu_check.__main__ import main

    out = tmp_path / "results.json"
    assert main(["--tiny", "--out", str(out), "--repeats", "1", "--quantization", "int8",
                 "--sections", "canvases,experts"]) == 0
    report = json.loads(out.read_text())
    q = report["quantization"]
    assert q["kind"] == "int8" and q["weights_gib_after"] < q["weights_gib_before"]
    assert 0.5 < q["decoder_argmax_agreement"] <= 1 and isinstance(q["fills_equal"], bool)
    assert report["environment"]["experts"] == "eager"
    assert all(report["figures"]["canvases"][s]["ms_per_step"] > 0 for s in report["request"]["canvases"].split(","))
    assert "error" in report["figures"]["experts"]["grouped_mm"]   # torchao's int8 tensors: no grouped GEMM


def test_gpu_checks_hold_on_cpu(tmp_path):
    """The equalities the GPU session re-checks on CUDA (benchmarks/gpu_check/checks.py), here on CPU."""
    from benchmarks.gpu_check.checks import main

    out = tmp_path / "checks.json"
    assert main(["--device", "cpu", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["ok"] and any(r["forwards"][1] == r["forwards"][0] + 1 for r in report["stop_lag"])
