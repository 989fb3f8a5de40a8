"""The masked-diffusion sampler on a scripted model: how many slots a step accepts, and the budget."""

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
