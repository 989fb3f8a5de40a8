"""Absorbing-state denoiser over any transformers masked LM (the embedded model is one).

Canvas: ``prefix + [MASK] * slots + suffix`` in natural order, bidirectional attention; accepted
tokens stay fixed. Mask, pad and EOS ids come from the tokenizer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import torch

from ...config import LoadConfig
from ...requests import ModelLoadError
from ..base import Candidate, Control, FillPlan, FillResult, HoleSpec
from ..loading import apply_threads, quiet_libraries, resolve_device, resolve_dtype
from . import kv_cache as kv_cache_mod
from .sampler import DEFAULT_THRESHOLD, HoleSlots, denoise

log = logging.getLogger(__name__)
DEFAULT_STEPS = 16
MASK_GLYPH = "▒"


class MaskedBackend:
    name = "masked"
    default_steps = DEFAULT_STEPS
    searches_lengths = False   # one hole length per fill: the engine tries lengths and retries
    takes_instruction = False  # the canvas is raw code
    scores_text = True         # pseudo-log-likelihood: each token of the text masked in turn
    adapts = True              # load_weights: a workspace's adapted weights (engine/adapt)

    def __init__(self, model, tokenizer, device: torch.device, order: str = "confidence",
                 kv_cache: bool = False, cache_refresh: int = 0):
        self.model, self.tokenizer, self.device, self.order = model, tokenizer, device, order
        self.kv_cache = kv_cache and kv_cache_mod.supports(model)
        self.cache_refresh = cache_refresh
        self.model_dir: Path | None = None  # set by load()
        self.passes = {"full": 0, "tail": 0, "partial": 0}
        self._prefix: tuple[tuple, kv_cache_mod.Prefix] | None = None  # the last fill's, by its text
        self.mask_id = tokenizer.mask_token_id
        specials = {tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.sep_token_id}
        self.terminators = torch.tensor(sorted(i for i in specials if i is not None) or [self.mask_id])
        self._term_set = set(self.terminators.tolist())
        suppressed = set(tokenizer.all_special_ids) - set(self.terminators.tolist())
        suppressed.add(self.mask_id)
        self.suppressed = torch.tensor(sorted(suppressed))
        vocab = len(tokenizer)
        self.piece = [tokenizer.decode([i], clean_up_tokenization_spaces=False) for i in range(vocab)]
        self.newlines = torch.tensor([i for i, p in enumerate(self.piece) if "\n" in p] or [self.mask_id])
        self.leading = tokenizer("", add_special_tokens=True)["input_ids"]  # [CLS] [SEP] for BERT, [] for ours
        self.max_positions = int(getattr(model.config, "max_position_embeddings", 512))
        # ModernBERT: the head runs on the masked slots only
        self._fast = all(hasattr(model, a) for a in ("model", "head", "decoder"))

    @classmethod
    def load(cls, config: LoadConfig) -> MaskedBackend:
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        apply_threads(config.threads)
        quiet_libraries()
        path = config.model_dir()
        device = resolve_device(config.device)
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True, trust_remote_code=False)
            model = AutoModelForMaskedLM.from_pretrained(
                str(path), local_files_only=True, trust_remote_code=False, dtype=resolve_dtype(config.dtype, device),
                **({"device_map": config.device_map} if config.device_map else {}))
        except (OSError, ValueError, KeyError) as exc:
            raise ModelLoadError(f"cannot load masked LM from {path}: {exc}") from exc
        if tokenizer.mask_token_id is None:
            raise ModelLoadError(f"{path}: the tokenizer has no mask token, so it is not a masked LM")
        if not config.device_map:
            model.to(device)
        model.eval()
        backend = cls(model, tokenizer, device, config.order, config.kv_cache, config.cache_refresh)
        backend.model_dir = path
        return backend

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def close(self) -> None:
        self.model = None

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"] if text else []

    @torch.inference_mode()
    def _logits_at(self, ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        batch = ids[None].to(self.device)                                        # (1, T)
        if self._fast:
            hidden = self.model.model(input_ids=batch).last_hidden_state[0]      # (T, H)
            return self.model.decoder(self.model.head(hidden[positions.to(self.device)])).cpu()  # (N, V)
        return self.model(input_ids=batch).logits[0, positions.to(self.device)].cpu()

    @torch.inference_mode()
    def score_text(self, prefix: str, middle: str, suffix: str) -> float:
        """Pseudo-log-likelihood of ``middle`` between ``prefix`` and ``suffix``: the sum of log p of each of
        its tokens masked in turn (one batch of rows), the context cut to 96 tokens before, 32 after.
        Used to rank syntax repairs (engine/repair.py)."""
        mid = self._encode(middle)
        if not mid:
            return 0.0
        lead, tail = (self.leading[:1], self.leading[1:]) if len(self.leading) >= 2 else ([], [])
        pre = self._encode(prefix)[-96:]
        ids = torch.tensor(list(lead) + pre + mid + self._encode(suffix)[:32] + list(tail))  # (T,)
        rows = torch.arange(len(mid))
        pos = rows + len(lead) + len(pre)                                                   # (M,)
        batch = ids.repeat(len(mid), 1)                                                     # (M, T)
        batch[rows, pos] = self.mask_id
        batch, pos = batch.to(self.device), pos.to(self.device)
        if self._fast:
            hidden = self.model.model(input_ids=batch).last_hidden_state                    # (M, T, H)
            logits = self.model.decoder(self.model.head(hidden[rows.to(self.device), pos]))  # (M, V)
        else:
            logits = self.model(input_ids=batch).logits[rows.to(self.device), pos]          # (M, V)
        logp = logits.float().log_softmax(-1).gather(1, ids.to(self.device)[pos][:, None])  # (M, 1)
        return float(logp.sum())

    def _stepper(self, holes: list[HoleSlots], T: int, context: tuple = ()
                 ) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
        """``logits_at`` for one fill. With the KV cache: the first step runs a full forward, or, when the
        previous fill had the same text around its holes (``context``: another length tried for the same
        hole), reuses that forward's keys and values up to the first hole and computes only the rest; a
        refresh every ``cache_refresh`` steps recomputes the holes and the text after the first hole
        (the prefix keeps its first-step keys and values); the steps between compute the hole slots
        only. Without the cache, full forwards."""
        if not self.kv_cache:
            return self._logits_at
        cache = kv_cache_mod.DualCache(self.model)
        lo = min(h.lo for h in holes)
        tail = torch.arange(lo, T, device=self.device)                                      # (T - lo,)
        hole_pos = torch.cat([torch.arange(h.lo, h.hi) for h in holes]).to(self.device)   # (Ph,)
        where = torch.full((T,), -1, dtype=torch.long)
        where[hole_pos.cpu()] = torch.arange(len(hole_pos))
        step = 0

        def logits_at(ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
            nonlocal step
            first, refresh = step == 0, bool(self.cache_refresh and step % self.cache_refresh == 0)
            step += 1
            ids = ids.to(self.device)
            kept = self._prefix
            seeded = first and kept is not None and kept[0] == context and torch.equal(kept[1].ids, ids[:lo])
            if seeded and kept is not None:
                cache.seed(kept[1], T)
            if first and not seeded:
                self.passes["full"] += 1
                hidden = cache.forward(ids, None)[positions.to(self.device)]                # (N, H)
                self._prefix = (context, cache.prefix(ids, lo)) if context else None
            elif first or refresh:
                self.passes["tail"] += 1
                hidden = cache.forward(ids, tail)[(positions - lo).to(self.device)]          # (N, H)
            else:
                self.passes["partial"] += 1
                hidden = cache.forward(ids, hole_pos)[where[positions].to(self.device)]    # (N, H)
            return self.model.decoder(self.model.head(hidden)).cpu()                       # (N, V)
        return logits_at

    def weights_changed(self) -> None:
        """Forget what was computed with the old weights (the kept prefix keys and values)."""
        self._prefix = None

    def load_weights(self, path: Path | None) -> None:
        """Adapted weights saved by ``safetensors.torch.save_model`` (None: the checkpoint's own), loaded in
        place on the engine thread between fills."""
        from safetensors.torch import load_model

        source = path
        if source is None:
            if self.model_dir is None or not (self.model_dir / "model.safetensors").is_file():
                raise ModelLoadError("the checkpoint's own weights cannot be reloaded in place")
            source = self.model_dir / "model.safetensors"
        try:
            with torch.no_grad():
                missing, unexpected = load_model(self.model, str(source), strict=False, device=str(self.device))
        except (OSError, RuntimeError, ValueError) as exc:
            raise ModelLoadError(f"cannot load weights from {source}: {exc}") from exc
        if unexpected or [m for m in missing if "decoder" not in m]:
            raise ModelLoadError(f"{source}: weights do not fit this model (missing {missing[:3]}, "
                                 f"unexpected {unexpected[:3]})")
        self.model.eval()
        self.weights_changed()

    def stats(self) -> dict[str, object]:
        return {"kv_cache": self.kv_cache, "full_forwards": self.passes["full"],
                "tail_forwards": self.passes["tail"], "hole_forwards": self.passes["partial"]}

    def _layout(self, plan: FillPlan) -> tuple[torch.Tensor, list[HoleSlots], list[HoleSpec], torch.Tensor]:
        ids: list[int] = list(self.leading[:1]) if len(self.leading) >= 2 else []
        holes: list[HoleSlots] = []
        specs: list[HoleSpec] = []
        init_free: list[tuple[int, int]] = []
        for piece in plan.pieces:
            if isinstance(piece, str):
                ids.extend(self._encode(piece))
                continue
            lo = len(ids)
            init = self._encode(piece.init) if piece.init else []
            slots = max(piece.max_tokens, len(init))
            ids.extend(init + [self.mask_id] * (slots - len(init)))
            holes.append(HoleSlots(lo, lo + slots, piece.stop_at_newline))
            specs.append(piece)
            init_free.append((lo + len(init), lo + slots))
        ids.extend(self.leading[1:] if len(self.leading) >= 2 else [])
        if len(ids) > self.max_positions:
            raise ValueError(f"canvas of {len(ids)} tokens exceeds the model's {self.max_positions} positions")
        canvas = torch.tensor(ids)
        free = torch.zeros(len(ids), dtype=torch.bool)
        for lo, hi in init_free:
            free[lo:hi] = True
        return canvas, holes, specs, free

    def _renoise(self, canvas: torch.Tensor, holes: list[HoleSlots], specs: list[HoleSpec], free: torch.Tensor):
        """Rewrite: mask the initial tokens the model doubts most (p < 0.5, at least a quarter of each hole)."""
        for h, spec in zip(holes, specs):
            if not spec.init:
                continue
            pos = torch.arange(h.lo, h.hi)[~free[h.lo:h.hi]]
            if len(pos) == 0:
                continue
            probs = self._logits_at(canvas, pos).float().softmax(-1)            # (N, V)
            p_now = probs.gather(1, canvas[pos][:, None]).squeeze(1)            # (N,)
            doubt = p_now < 0.5
            k = max(1, len(pos) // 4)
            doubt[p_now.topk(k, largest=False).indices] = True
            canvas[pos[doubt]] = self.mask_id
            free[pos[doubt]] = True

    @torch.inference_mode()
    def fill(self, plan: FillPlan, control: Control) -> FillResult:
        canvas, holes, specs, free = self._layout(plan)
        if any(s.init for s in specs):
            self._renoise(canvas, holes, specs, free)
        threshold = plan.threshold or DEFAULT_THRESHOLD
        on_step = self._draft_hook(holes, control.draft) if control.draft else None
        # What the first forward's prefix keys and values depend on, bar the holes' lengths.
        context = tuple(p if isinstance(p, str) else ("hole", p.init) for p in plan.pieces) + (self.order,)
        out = denoise(self._stepper(holes, len(canvas), context), canvas, holes, self.terminators, self.newlines,
                      self.suppressed,
                      plan.steps, threshold, self.order, control.check, on_step, free)
        texts, confs, spans, logps, kept = [], [], [], [], 0
        for h, end in zip(holes, out.ends):
            toks = out.ids[h.lo:end].tolist()
            while toks and toks[-1] in self._term_set:
                toks.pop()
            text, token_spans = self._decode(toks)
            c = out.confidence[h.lo:h.lo + len(toks)].tolist()
            texts.append(text)
            confs.append(tuple(round(x, 4) for x in c))
            spans.append(token_spans)
            logps.extend(torch.tensor(c).clamp_min(1e-9).log().tolist())
            kept += len(toks)
        score = sum(logps) / len(logps) if logps else 0.0
        candidate = Candidate(tuple(texts), tuple(confs), tuple(spans), score)
        return FillResult((candidate,), out.steps, out.forwards, kept)

    def _decode(self, toks: list[int]) -> tuple[str, tuple[tuple[int, int], ...]]:
        text = self.tokenizer.decode(toks, clean_up_tokenization_spaces=False)
        spans, pos = [], 0
        for t in toks:  # per-token spans; byte-split characters are attributed to the later token
            piece = self.piece[t]
            n = len(piece) if "\ufffd" not in piece else 0
            spans.append((min(pos, len(text)), min(pos + n, len(text))))
            pos += n
        return text, tuple(spans)

    def _draft_hook(self, holes: list[HoleSlots], draft: Callable) -> Callable:
        def on_step(step: int, ids: torch.Tensor, free: torch.Tensor, ends: list[int], conf: torch.Tensor) -> None:
            texts, confs, pieces = [], [], []
            for h, end in zip(holes, ends):
                parts, c = [], []
                for pos in range(h.lo, end):
                    if free[pos]:
                        parts.append(MASK_GLYPH)
                        c.append(0.0)
                    elif int(ids[pos]) not in self._term_set:
                        parts.append(self.piece[int(ids[pos])])
                        c.append(round(float(conf[pos]), 3))
                texts.append("".join(parts))
                confs.append(tuple(c))
                pieces.append(tuple(parts))
            draft(step, tuple(texts), tuple(confs), tuple(pieces))
        return on_step
