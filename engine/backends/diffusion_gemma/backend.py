"""DiffusionGemma backend: the prefix in the encoder's KV cache, holes denoised on a noise canvas with pinned text.

A fill: tokenize the pieces; make the prompt cache hold ``[bos] + prefix`` (encoding only what
changed, ``prompt_cache``); lay out one canvas row per hole length (``canvas``); denoise every
row in one batch (``sampler``); read each row back as a candidate, best mean log-probability
first. The model is the library's ``DiffusionGemmaForBlockDiffusion``; its own ``generate`` is not
used, since it cannot pin text or batch hole lengths. ``plan.instruction`` is not used: the model
sees raw code, not a chat turn.
"""

from __future__ import annotations

from pathlib import Path

import json
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from ...config import LoadConfig
from ...requests import ModelLoadError
from ..base import Control, FillPlan, FillResult
from ..loading import apply_threads, quiet_libraries, resolve_device, resolve_dtype, resolve_quantization
from ..canvas_text import Segment, split_plan
from ..utf8 import CanvasGuard
from .canvas import CanvasBatch, FillReader, candidates, layout
from .options import OptionError, experts_implementation, is_quantized, quantization_config
from .prompt_cache import PromptCache
from .sampler import Decode, Denoised, Sampling, denoise

log = logging.getLogger(__name__)

SEED = 0            # each fill reseeds its noise: the same request gives the same answer
REWRITE_T_MAX = 0.5  # a rewrite starts this far from t_min towards t_max (a selection is not noise)
MAX_POSITIONS = 1024  # canvas budget the engine lays multi-hole fills out in (the prompt cache takes any prefix)


def sampling_for(model, config: LoadConfig) -> Sampling:
    """The checkpoint's generation_config.json, then the temperatures the load config sets (0 = default).
    The entropy bound travels with each fill (``FillPlan.threshold``)."""
    sampling = Sampling.from_generation_config(getattr(model, "generation_config", None))
    if config.t_min:
        sampling = replace(sampling, t_min=float(config.t_min))
    if config.t_max:
        sampling = replace(sampling, t_max=float(config.t_max))
    return sampling


def check_generation_config(path: Path) -> None:
    """A generation_config.json that is not JSON fails the load, naming the file: transformers drops such a file
    without a word and the library's sampler defaults (steps, temperatures) would silently replace the
    checkpoint's own."""
    file = Path(path) / "generation_config.json"
    if not file.is_file():
        return
    try:
        json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"unreadable generation config {file}: {exc}") from None


TOKENIZER_PROBE = "def area(r):\n    return 3.14 * r * r\n"


def check_tokenizer(tokenizer) -> None:
    """Refuse a tokenizer that cannot read code: without its files (tokenizer.json, tokenizer.model) a
    checkpoint directory still loads one, with the special tokens alone, that reads every text as unknown
    tokens, so the model would see nothing of the document and every fill would be noise."""
    ids = tokenizer.encode(TOKENIZER_PROBE, add_special_tokens=False)
    unknown = tokenizer.unk_token_id
    if not ids or (unknown is not None and unknown in ids):
        raise ValueError(f"its tokenizer reads code as unknown tokens ({len(tokenizer)} tokens in all): are "
                         "its tokenizer files (tokenizer.json, tokenizer.model) missing?")


class DiffusionGemmaBackend:
    name = "diffusion_gemma"
    searches_lengths = True    # several hole lengths are rows of one batch: the engine need not retry
    takes_instruction = False  # the model sees raw code, not a chat turn
    scores_text = False        # no cheap likelihood of a given text: syntax repairs are ranked by the parser
    scores_options = False     # FillPlan.options are not scored (no first forward over all-masked slots of one length)
    adapts = False             # workspace adaptation is for masked LMs (engine/adapt)
    max_positions = MAX_POSITIONS

    def __init__(self, model, tokenizer, sampling: Sampling):
        self.model = model
        self.tokenizer = tokenizer
        self.sampling = sampling
        self.prompt_cache = PromptCache(model)
        text = model.config.get_text_config()
        self.vocab_size = text.vocab_size
        self.canvas_length = model.config.canvas_length or 256
        self.pad_id = first_id(tokenizer.pad_token_id, text.pad_token_id, tokenizer.eos_token_id)
        self.bos_id = first_id(tokenizer.bos_token_id, text.bos_token_id)
        ends = self.terminators(text)
        self.reader = FillReader(tokenizer, ends)
        # every hole's byte tokens (<0xC3> ...) are committed as valid UTF-8 (None: the vocabulary has none)
        self.utf8 = CanvasGuard.for_tokenizer(tokenizer, ends)
        self.model_dir: Path | None = None  # set by load()
        self.quantization = "none"          # set by load(): the quantization the weights were loaded with
        self.quantized = any(is_quantized(p) for p in model.parameters())

    def no_grad(self):
        """``torch.inference_mode``, or ``torch.no_grad`` for torchao's quantized tensors (which cannot be used
        under inference mode: "Cannot set version_counter for inference tensor")."""
        return torch.no_grad() if self.quantized else torch.inference_mode()

    @property
    def default_steps(self) -> int:
        """The checkpoint's ``max_denoising_steps``: the budget of a request that sets none."""
        return self.sampling.steps

    @classmethod
    def load(cls, config: LoadConfig) -> DiffusionGemmaBackend:
        from transformers import AutoTokenizer, DiffusionGemmaForBlockDiffusion

        path = config.model_dir()
        device = resolve_device(config.device)
        try:
            dtype = resolve_dtype(config.dtype, device)
        except KeyError:
            raise ModelLoadError(f"unknown dtype {config.dtype!r} (auto, float32, bfloat16 or float16)") from None
        apply_threads(config.threads)
        quiet_libraries()
        resolved = resolve_quantization(config, masked=False)   # auto: the directory's serving.json, else none
        try:  # before the weights load: an unknown choice or a missing library is said at once
            experts = experts_implementation(config.experts, resolved)
            quantization = quantization_config(resolved)
        except OptionError as exc:
            raise ModelLoadError(str(exc)) from None
        check_generation_config(path)
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True, trust_remote_code=False)
            check_tokenizer(tokenizer)
            kwargs: dict[str, Any] = {"dtype": dtype, "local_files_only": True, "trust_remote_code": False,
                                      "experts_implementation": experts}
            if quantization is not None:
                kwargs["quantization_config"] = quantization
            if config.device_map:
                kwargs["device_map"] = config.device_map
            elif quantization is not None:  # quantized where it runs, never a full-precision copy on the host
                kwargs["device_map"] = str(device)
            model = DiffusionGemmaForBlockDiffusion.from_pretrained(str(path), **kwargs)
            if "device_map" not in kwargs:
                model.to(device)
        except Exception as exc:  # a broken checkpoint fails in many library-specific ways; report each the same
            raise ModelLoadError(f"cannot load the DiffusionGemma checkpoint at {path}: {exc}") from exc
        model.eval()
        backend = cls(model, tokenizer, sampling_for(model, config))
        backend.model_dir = path
        backend.quantization = resolved
        log.info("loaded DiffusionGemma from %s on %s (%s, experts %s, quantization %s), %s", path, backend.device,
                 dtype, experts, resolved, backend.sampling)
        return backend

    @property
    def device(self) -> torch.device:
        return self.model.get_input_embeddings().weight.device

    @property
    def encoder_calls(self) -> int:
        return self.prompt_cache.encoder_calls

    @property
    def encoder_tokens(self) -> int:
        return self.prompt_cache.encoder_tokens

    def score_text(self, prefix: str, middle: str, suffix: str) -> float:
        raise NotImplementedError("DiffusionGemma does not score text (scores_text is False)")

    def load_weights(self, path: Path | None) -> None:
        raise NotImplementedError("DiffusionGemma does not take adapted weights (adapts is False)")

    def stats(self) -> dict[str, object]:
        """Prompt-cache counters: encoder forwards and tokens since load, tokens cached now."""
        return {"encoder_calls": self.encoder_calls, "encoder_tokens": self.encoder_tokens,
                "cached_prefix_tokens": len(self.prompt_cache)}

    def count_tokens(self, text: str) -> int:
        return len(self.encode(text))

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False) if text else []

    def fill(self, plan: FillPlan, control: Control) -> FillResult:
        prefix, segments = self.segments(plan)
        specs = [s.spec for s in segments if s.spec is not None]
        if not specs:
            return FillResult((), 0, 0, 0)
        with self.no_grad():
            control.check(0)
            self.prompt_cache.update(prefix)
            batch = layout(segments, self.canvas_length, self.pad_id)
            done = self.denoise(batch, plan, control, rewrite=any(s.init for s in segments))
            cands = candidates(batch, done.argmax.cpu(), done.logp.cpu(), specs, self.reader)
        tokens = sum(len(c) for c in cands[0].confidences) if cands else 0
        return FillResult(tuple(cands), done.steps, done.forwards, tokens)

    def segments(self, plan: FillPlan) -> tuple[list[int], list[Segment]]:
        """The prefix ids for the cache (after BOS) and the canvas pieces after it."""
        return split_plan(plan, self.encode, self.bos_id, self.pad_id)

    def decoder(self, batch: CanvasBatch) -> Decode:
        """The decoder over the cached prefix for this batch's rows; dead slots are hidden by the attention mask."""
        device, B, C = self.device, batch.rows, batch.start.shape[1]
        view = self.prompt_cache.view(B)
        prefix_len = len(self.prompt_cache)
        positions = torch.arange(prefix_len, prefix_len + C, device=device)[None]            # (1, C)
        live = torch.cat([torch.ones((B, prefix_len), dtype=torch.bool), batch.live], 1).to(device)
        masks = self.model.model.decoder.create_diffusion_decoder_attention_mask(
            config=self.model.config, inputs_embeds=torch.empty((B, C, 0), dtype=self.model.dtype, device=device),
            cache=view, decoder_attention_mask=live)

        def decode(canvas: torch.Tensor, sc: torch.Tensor | None) -> torch.Tensor:
            return self.model(decoder_input_ids=canvas, cache=view, self_conditioning_logits=sc,
                              decoder_attention_mask=masks, decoder_position_ids=positions).logits  # (B, C, V)
        return decode

    def denoise(self, batch: CanvasBatch, plan: FillPlan, control: Control, rewrite: bool) -> Denoised:
        device = self.device
        sampling = self.sampling
        if plan.threshold > 0:
            sampling = replace(sampling, entropy_bound=float(plan.threshold))
        if rewrite:  # the canvas starts from the old code: a cooler start keeps more of it
            sampling = replace(sampling, t_max=sampling.t_min + REWRITE_T_MAX * (sampling.t_max - sampling.t_min))
        generator = torch.Generator(device=device).manual_seed(SEED)
        on_step = self.draft_hook(batch, plan, control) if control.draft is not None else None
        with self.no_grad():  # also when called alone (benchmarks): self-conditioning would chain every step's graph
            return denoise(self.decoder(batch), batch.start.to(device), batch.pinned.to(device), sampling,
                           steps=plan.steps, vocab_size=self.vocab_size,
                           generator=generator, sc_dtype=self.model.get_input_embeddings().weight.dtype,
                           check=control.check, on_step=on_step, utf8=self.utf8, holes=batch.holes)

    def draft_hook(self, batch: CanvasBatch, plan: FillPlan, control: Control
                   ) -> Callable[[int, torch.Tensor, torch.Tensor], None]:
        """After each step, hand the engine the best row's current texts (argmax canvas) and confidences."""
        draft = control.draft
        assert draft is not None

        def on_step(step: int, argmax: torch.Tensor, logp: torch.Tensor) -> None:
            best = candidates(batch, argmax.cpu(), logp.cpu(), list(plan.holes), self.reader)[0]
            pieces = tuple(tuple(text[lo:hi] for lo, hi in spans)
                           for text, spans in zip(best.texts, best.token_spans))
            draft(step, best.texts, best.confidences, pieces)
        return on_step

    def terminators(self, text_config) -> torch.Tensor:
        """(V,) bool: ids that end a hole: EOS, pad, every other special token, ids the tokenizer cannot decode."""
        ends = torch.zeros(self.vocab_size, dtype=torch.bool)
        ids = set(self.tokenizer.all_special_ids) | {self.pad_id}
        for eos in (text_config.eos_token_id, getattr(self.model.generation_config, "eos_token_id", None),
                    self.tokenizer.eos_token_id):
            ids |= set(eos if isinstance(eos, (list, tuple)) else [eos] if eos is not None else [])
        ends[[i for i in ids if i is not None and 0 <= i < self.vocab_size]] = True
        ends[len(self.tokenizer):] = True
        return ends

    def clear_prompt_cache(self) -> None:
        """Forget the cached prefix (benchmarks/gpu_check measures cold fills with it)."""
        self.prompt_cache.clear()

    def close(self) -> None:
        self.prompt_cache.clear()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()


def first_id(*ids):
    return next((i for i in ids if i is not None), None)
