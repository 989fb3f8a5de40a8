"""The masked-diffusion sampler on a scripted model: how many slots a step accepts, and the budget."""

import math

import torch

from engine.backends.masked.sampler import HoleSlots, denoise

PAD, MASK, NEWLINE, V = 0, 1, 15, 16
CONTENT = [5, 6, 7, 8]          # the line the scripted model wants; pads after it


def scripted(p: float, lo: int):
    """Each free slot predicts its CONTENT token (or a pad past the line) with probability ``p``."""
    def logits_at(ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        out = torch.full((len(positions), V), 1e-6)
        rest = (1 - p) / (V - 1)
        for i, pos in enumerate(positions.tolist()):
            k = pos - lo
            out[i] = rest
            out[i, CONTENT[k] if k < len(CONTENT) else PAD] = p
        return out.log()
    return logits_at


def run(p: float, steps: int, slots: int = 32):
    lo = 3
    ids = torch.tensor([9, 10, 11] + [MASK] * slots + [12, 13])
    accepted = []
    out = denoise(scripted(p, lo), ids, [HoleSlots(lo, lo + slots, True)], torch.tensor([PAD]),
                  torch.tensor([NEWLINE]), torch.tensor([MASK]), steps, 0.9,
                  on_step=lambda step, ids, free, ends, conf: accepted.append(int((~free[lo:ends[0]]).sum())))
    return out, accepted, lo


def test_a_short_line_in_a_roomy_hole_is_decoded_one_token_per_step():
    # Unsure tokens (p < threshold): the budget (16) is spread over the 4 slots the line is expected to
    # use (its predicted end is the first pad), not over all 32: one token per step, then the pad.
    out, accepted, lo = run(0.6, 16)
    assert out.ids[lo:out.ends[0]].tolist() == CONTENT
    assert out.steps == out.forwards == 5
    assert accepted == [1, 2, 3, 4, 4]  # the fifth step accepts the pad at the frontier: the hole ends there


def test_confident_tokens_are_accepted_together():
    out, accepted, lo = run(0.95, 16)
    assert out.ids[lo:out.ends[0]].tolist() == CONTENT
    assert out.steps == 2 and accepted == [4, 4]


def test_the_budget_bounds_the_forwards_and_the_last_step_takes_every_argmax():
    out, accepted, lo = run(0.6, 3)
    assert out.forwards <= 3
    assert out.ids[lo:out.ends[0]].tolist() == CONTENT


# -- byte tokens that must form UTF-8 (engine/backends/utf8.py), on the embedded model's own tokenizer ------

def _embedded_tokenizer():
    from transformers import AutoTokenizer

    from engine.config import LoadConfig
    return AutoTokenizer.from_pretrained(str(LoadConfig().model_dir()), local_files_only=True)


def _guarded_denoise(want: list[list[int]], steps: int, p: float = 0.95, lo: int = 2):
    """The loop over one hole on the real tokenizer's vocabulary, the scripted model wanting ``want[k]`` (the
    likeliest first, each next one a tenth as likely) at slot ``k``."""
    from engine.backends.utf8 import Utf8Guard

    tok = _embedded_tokenizer()
    pieces = [tok.decode([i], clean_up_tokenization_spaces=False) for i in range(len(tok))]
    term = torch.tensor([tok.pad_token_id, tok.eos_token_id])
    newlines = torch.tensor([i for i, piece in enumerate(pieces) if "\n" in piece])
    guard = Utf8Guard.for_tokenizer(tok, pieces, term, newlines)
    vocab, slots = len(tok), len(want)
    quote = tok('"', add_special_tokens=False)["input_ids"]

    def logits_at(ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        out = torch.full((len(positions), vocab), -20.0)
        for i, pos in enumerate(positions.tolist()):
            for rank, t in enumerate(want[pos - lo]):
                out[i, t] = math.log(p) - rank * math.log(10)
        return out

    ids = torch.tensor(quote * lo + [tok.mask_token_id] * slots + quote)
    out = denoise(logits_at, ids, [HoleSlots(lo, lo + slots, True)], term, newlines,
                  torch.tensor([tok.mask_token_id]), steps, 0.9, utf8=guard)
    toks = [t for t in out.ids[lo:out.ends[0]].tolist() if t not in term.tolist()]
    return tok, guard, tok.decode(toks, clean_up_tokenization_spaces=False)


def test_a_vocabulary_of_byte_tokens_is_guarded():
    tok, guard, _ = _guarded_denoise([[5]], 1)
    assert guard is not None and len(guard.ids) == 128          # the 128 bytes 0x80-0xFF, each a U+FFFD alone
    assert all(tok.decode([i]) == "\ufffd" for i in guard.ids.tolist())


def test_byte_tokens_that_cannot_form_utf8_are_not_accepted():
    """The model wants ``"x`` then 0xC3 (the lead byte of ``é``) in the hole's last slot, and after it an ASCII
    letter where the continuation belongs: unguarded, the fill decodes with U+FFFD (the embedded model writes such
    runs after accents and emoji, and the engine refused the fill). Guarded, each slot takes its likeliest token
    that keeps the hole valid UTF-8: here the continuation 0xA9 the model gave a tenth of the first's probability."""
    tok = _embedded_tokenizer()
    ids = {b: tok.convert_tokens_to_ids(c) for b, c in ((0xC3, "Ã"), (0xA9, "©"))}
    x = tok("x", add_special_tokens=False)["input_ids"][0]
    for steps in (1, 2, 8):   # every slot at once, and one by one
        _, _, text = _guarded_denoise([[x], [ids[0xC3]], [x, ids[0xA9]]], steps)
        assert "\ufffd" not in text and text == "xé", (steps, text)
        _, _, text = _guarded_denoise([[x], [ids[0xA9]], [ids[0xC3]]], steps)   # a continuation first, a lead last
        assert "\ufffd" not in text, (steps, text)


def test_an_emoji_the_model_spells_in_bytes_is_kept_as_it_is():
    tok = _embedded_tokenizer()
    emoji = tok("\U0001f600", add_special_tokens=False)["input_ids"]
    assert len(emoji) == 4
    for steps in (1, 3, 8):
        _, _, text = _guarded_denoise([[t] for t in emoji] + [[tok.pad_token_id]], steps)
        assert text == "\U0001f600"


def test_whatever_the_model_wants_a_guarded_hole_decodes_without_u_fffd():
    """A model that favours byte tokens everywhere (random logits, the 128 byte tokens raised), over hole sizes,
    budgets and both hole kinds: every fill the guarded loop writes is valid UTF-8 (unguarded, all 24 held U+FFFD)."""
    from engine.backends.utf8 import Utf8Guard

    tok = _embedded_tokenizer()
    pieces = [tok.decode([i], clean_up_tokenization_spaces=False) for i in range(len(tok))]
    term = torch.tensor([tok.pad_token_id, tok.eos_token_id])
    newlines = torch.tensor([i for i, piece in enumerate(pieces) if "\n" in piece])
    guard = Utf8Guard.for_tokenizer(tok, pieces, term, newlines)
    assert guard is not None
    quote = tok('"', add_special_tokens=False)["input_ids"]
    for trial in range(24):
        gen = torch.Generator().manual_seed(trial)
        slots, steps = (4, 8, 16, 32)[trial % 4], (1, 2, 5, 16)[trial // 4 % 4]

        def logits_at(ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
            out = torch.randn(len(positions), len(tok), generator=gen) * 2
            out[:, guard.ids] += 4.0
            return out

        ids = torch.tensor(quote + [tok.mask_token_id] * slots + quote)
        out = denoise(logits_at, ids, [HoleSlots(1, 1 + slots, trial % 2 == 0)], term, newlines,
                      torch.tensor([tok.mask_token_id]), steps, 0.9, utf8=guard)
        toks = [t for t in out.ids[1:out.ends[0]].tolist() if t not in term.tolist()]
        text = tok.decode(toks, clean_up_tokenization_spaces=False)
        assert toks and "\ufffd" not in text, (trial, slots, steps, text)
