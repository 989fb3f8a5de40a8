"""The DiffusionGemma denoising loop with pinned slots: entropy-bound acceptance, self-conditioning, adaptive stop.

It follows ``DiffusionGemmaForBlockDiffusion.generate`` step for step (temperature schedule from
``t_max`` down to ``t_min``, sample, accept the lowest-entropy tokens while the EB-sampler bound
holds, re-noise the rest, feed the processed logits back, stop when the argmax canvas is stable
and confident), with one change: pinned slots get a one-hot distribution on their token, so they
are always accepted, never re-noised, feed back clean self-conditioning, and are left out of the
stopping statistics.

Nothing in a step waits for the device: acceptance, re-noising, the frozen rows and the stop
statistics are tensor operations, sampling avoids ``torch.multinomial`` (whose validity check reads a
value back every call), and the adaptive stop is read back one step late on CUDA (the host queues step
``s + 1`` before it waits for step ``s``'s verdict; a stopped batch then runs one more forward, whose
rows are all frozen, so the result is the same). With a draft callback, which reads every step back
anyway, the stop is checked at once. ``record_function`` labels (``decoder``, ``sampling``) name the
phases for benchmarks.gpu_check's profile.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import torch
from torch.profiler import record_function

if TYPE_CHECKING:
    from ..utf8 import CanvasGuard

PIN_LOGIT = -1e4  # off-token logit at a pinned slot: exp() underflows to exactly 0 in float32


@dataclass(frozen=True)
class Sampling:
    """The sampler's knobs; defaults come from the checkpoint's ``generation_config.json``."""

    steps: int = 48                    # max_denoising_steps
    entropy_bound: float = 0.1         # sampler_config.entropy_bound
    t_min: float = 0.4
    t_max: float = 0.8
    stability: int = 1                 # stability_threshold: steps the argmax canvas must hold
    confidence: float = 0.005          # confidence_threshold on the mean entropy of free slots

    @classmethod
    def from_generation_config(cls, gen) -> Sampling:
        """From a ``DiffusionGemmaGenerationConfig``; unset fields keep the library's defaults, as in ``generate``."""
        base = cls()
        bound = getattr(getattr(gen, "sampler_config", None), "entropy_bound", None)
        fields = {
            "steps": getattr(gen, "max_denoising_steps", None), "entropy_bound": bound,
            "t_min": getattr(gen, "t_min", None), "t_max": getattr(gen, "t_max", None),
            "stability": getattr(gen, "stability_threshold", None),
            "confidence": getattr(gen, "confidence_threshold", None),
        }
        return replace(base, **{k: v for k, v in fields.items() if v is not None})


@dataclass
class Denoised:
    argmax: torch.Tensor   # (B, C) the committed canvas (argmax of the last step each row ran)
    logp: torch.Tensor     # (B, C) log-probability of each committed token under the untempered logits
    steps: int             # steps run (the batch runs until every row has stopped)
    forwards: int          # decoder forwards (a batch counts once)


Decode = Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]  # (canvas, self-conditioning) -> (B, C, V)
OnStep = Callable[[int, torch.Tensor, torch.Tensor], None]           # (step, argmax, logp)


def denoise(decode: Decode, start: torch.Tensor, pinned: torch.Tensor, sampling: Sampling, *,
            steps: int, vocab_size: int, generator: torch.Generator, sc_dtype: torch.dtype,
            check: Callable[[int], None] = lambda step: None, on_step: OnStep | None = None,
            stop_lag: int | None = None, utf8: CanvasGuard | None = None,
            holes: list[list[tuple[int, int]]] | None = None) -> Denoised:
    """Denoise ``start`` (B, C): pinned slots hold their token, free slots a token to start from or -1 for noise.

    ``stop_lag``: steps between the stop verdict and the host reading it (default: 1 on CUDA without
    ``on_step``, else 0). It changes how many forwards run, never the result or ``steps``.

    ``utf8`` (a vocabulary with byte tokens, engine/backends/utf8.py) with ``holes`` (per row, each hole's
    ``[lo, hi)``): each step also keeps a summary of the byte tokens' log-probabilities (tensor operations), and
    the committed canvas (and each draft's) has every hole's byte tokens valid UTF-8, a token that breaks a
    character replaced by the likeliest that keeps it whole; the loop itself (its sampling, acceptance and stop)
    is unchanged, and a hole whose argmax holds no byte token is exactly as without it."""
    B, C = start.shape
    device = start.device
    lag = stop_lag if stop_lag is not None else int(device.type == "cuda" and on_step is None)
    canvas = torch.where(start < 0, noise(B, C, vocab_size, generator, device), start)  # (B, C)
    pins = Pins(pinned, canvas.clone())
    argmax, logp = canvas.clone(), torch.zeros((B, C), device=device)
    done = torch.zeros(B, dtype=torch.bool, device=device)
    ran = torch.zeros((), dtype=torch.long, device=device)              # steps until every row had stopped
    history = torch.full((sampling.stability, B, C), -1, dtype=torch.long, device=device)
    verdicts: list[Callable[[], bool]] = []                             # stop verdicts not read yet
    sc = None
    guide: tuple[torch.Tensor, torch.Tensor] | None = None              # utf8's summary of each row's last step
    forwards = 0
    for step in range(steps):
        check(step)
        with record_function("decoder"):
            raw = decode(canvas, sc).float()                               # (B, C, V)
        forwards += 1
        with record_function("sampling"):
            # Committed tokens and their untempered log-probability (the score and the confidence users see).
            new_argmax = torch.where(pinned, pins.ids, raw.argmax(-1))     # (B, C)
            lse = raw.logsumexp(-1)                                        # (B, C)
            new_logp = raw.gather(-1, new_argmax[..., None]).squeeze(-1) - lse
            new_guide = utf8.summary(raw, lse) if utf8 is not None else None
            del lse
            # Temperature falls linearly from t_max to t_min as the remaining steps run out (as in generate).
            logits = pins.impose(raw.div_(temperature(sampling, steps - step, steps)))
            logprobs = logits.log_softmax(-1)                              # (B, C, V)
            probs = logprobs.exp()
            entropy = -(probs * logprobs).sum(-1).masked_fill_(pinned, 0.0)  # (B, C)
            sample = multinomial(probs.view(B * C, -1), generator).view(B, C)
            del logprobs, probs
            # Accept the lowest-entropy tokens while sum(H) - max(H) <= bound; re-noise everything else.
            accept = entropy_bound_accept(entropy, sampling.entropy_bound)  # (B, C)
            new_canvas = torch.where(accept, sample, noise(B, C, vocab_size, generator, device))
            new_canvas = torch.where(pinned, pins.ids, new_canvas)
            # Rows that stopped earlier keep their canvas, their committed tokens and their feedback.
            keep = done[:, None]
            canvas = torch.where(keep, canvas, new_canvas)
            argmax = torch.where(keep, argmax, new_argmax)
            logp = torch.where(keep, logp, new_logp)
            if new_guide is not None:
                guide = new_guide if guide is None else (torch.where(keep[..., None], guide[0], new_guide[0]),
                                                         torch.where(keep[..., None], guide[1], new_guide[1]))
            new_sc = logits.to(sc_dtype)                                   # (B, C, V) self-conditioning
            sc = new_sc if sc is None else torch.where(keep[..., None], sc, new_sc)
            del logits, new_sc
            # Adaptive stop: the argmax canvas held for `stability` steps and the free slots are confident.
            if sampling.stability:
                stable = (history == argmax[None]).all(-1).all(0)
                history = torch.cat([history[1:], argmax[None]])
            else:
                stable = torch.ones_like(done)
            ran += (~done).any()
            done |= stable & (mean_free(entropy, pinned) < sampling.confidence)
            verdicts.append(read_later(done.all()))
        if on_step is not None:
            on_step(step + 1, *settled(utf8, holes, argmax, logp, guide))
        if len(verdicts) > lag and verdicts.pop(0)():
            break
    argmax, logp = settled(utf8, holes, argmax, logp, guide)
    return Denoised(argmax, logp, int(ran), forwards)


def settled(utf8: CanvasGuard | None, holes: list[list[tuple[int, int]]] | None, argmax: torch.Tensor,
            logp: torch.Tensor, guide: tuple[torch.Tensor, torch.Tensor] | None) -> tuple[torch.Tensor, torch.Tensor]:
    """The committed canvas with its holes' byte tokens made valid UTF-8 (unchanged without a guard)."""
    if utf8 is None or holes is None or guide is None:
        return argmax, logp
    return utf8.settle(argmax, logp, guide, holes)


def multinomial(probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """(N,) one draw per row of ``probs`` (N, V): ``torch.multinomial(probs, 1)``'s own one-sample path
    (exponential race, the same generator draws, the same ids), without its read-back validity check."""
    race = torch.empty_like(probs).exponential_(1, generator=generator)
    return torch.div(probs, race, out=race).argmax(-1)


def read_later(flag: torch.Tensor) -> Callable[[], bool]:
    """A 0-d bool tensor's value, copied to the host without waiting; calling the result waits for it."""
    if flag.device.type != "cuda":
        return lambda: bool(flag)
    host = torch.empty((), dtype=torch.bool, pin_memory=True)
    host.copy_(flag, non_blocking=True)
    event = torch.cuda.Event()
    event.record()

    def read() -> bool:
        event.synchronize()
        return bool(host)
    return read


class Pins:
    """Pinned slots: a one-hot on their token (zero entropy, always accepted, clean self-conditioning)."""

    def __init__(self, pinned: torch.Tensor, ids: torch.Tensor):
        self.pinned, self.ids = pinned, ids                                # (B, C) bool, (B, C) long
        self.rows, self.cols = pinned.nonzero(as_tuple=True)
        self.tokens = ids[self.rows, self.cols]

    def impose(self, logits: torch.Tensor) -> torch.Tensor:
        logits.masked_fill_(self.pinned[..., None], PIN_LOGIT)
        logits[self.rows, self.cols, self.tokens] = 0.0
        return logits


def temperature(sampling: Sampling, remaining: int, steps: int) -> float:
    return sampling.t_min + (sampling.t_max - sampling.t_min) * remaining / steps


def noise(B: int, C: int, vocab_size: int, generator: torch.Generator, device) -> torch.Tensor:
    return torch.randint(0, vocab_size, (B, C), device=device, generator=generator)


def mean_free(entropy: torch.Tensor, pinned: torch.Tensor) -> torch.Tensor:
    """(B,) mean entropy over each row's free slots: pinned and dead slots do not dilute it."""
    free = ~pinned
    return (entropy * free).sum(-1) / free.sum(-1).clamp(min=1)


def entropy_bound_accept(entropy: torch.Tensor, bound: float) -> torch.Tensor:
    """EB-sampler rule (arXiv 2505.24857): the k lowest-entropy slots with cumsum(H) - H_k <= bound."""
    sorted_h, order = entropy.sort(-1)
    chosen = sorted_h.cumsum(-1) - sorted_h <= bound
    return torch.zeros_like(chosen).scatter(-1, order, chosen)
