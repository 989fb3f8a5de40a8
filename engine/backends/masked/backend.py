"""Absorbing-state denoiser over any transformers masked LM (the embedded model is one).

Canvas: ``prefix + [MASK] * slots + suffix`` in natural order, bidirectional attention; accepted
tokens stay fixed. Mask, pad and EOS ids come from the tokenizer.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ...config import LoadConfig
from ...requests import ModelLoadError, TextTooLong
from ..base import Candidate, Control, FillPlan, FillResult, HoleSpec
from ..loading import (apply_threads, check_masked_quantization, quantize_masked, quiet_libraries, resolve_device,
                       resolve_dtype, resolve_quantization)
from ..score_window import SCORE_PREFIX, SCORE_SUFFIX, head, tail
from . import kv_cache as kv_cache_mod
from .sampler import DEFAULT_THRESHOLD, Denoised, HoleSlots, denoise, denoise_steps
from ..utf8 import Utf8Guard

log = logging.getLogger(__name__)
DEFAULT_STEPS = 16
SCORE_ROWS = 32                      # score_text's masked rows per forward
MASK_GLYPH = "▒"


@dataclass(frozen=True)
class _Kept:
    """A fill's first forward, kept for the next fill with the same text around its holes (``context``)."""

    context: tuple
    forward: kv_cache_mod.Prefix      # every layer's keys and values of the whole canvas
    positions: torch.Tensor           # (N,) the slots the forward was asked for
    logits: torch.Tensor              # (N, V) its answer there

    def same(self, ids: torch.Tensor, positions: torch.Tensor) -> bool:
        """The very canvas and slots of the kept forward: its answer is this forward's."""
        return torch.equal(self.forward.ids, ids) and torch.equal(self.positions, positions)


@dataclass
class _Row:
    """One plan laid out on its canvas, ready to denoise."""

    canvas: torch.Tensor
    holes: list[HoleSlots]
    free: torch.Tensor
    threshold: float
    on_step: Callable | None
    context: tuple
    options: tuple[str, ...] = ()
    first: tuple[torch.Tensor, torch.Tensor] | None = None   # the first forward's (positions, logits), for options


class MaskedBackend:
    name = "masked"
    default_steps = DEFAULT_STEPS
    searches_lengths = False   # one hole length per fill: the engine tries lengths and retries
    takes_instruction = False  # the canvas is raw code
    scores_text = True         # pseudo-log-likelihood: each token of the text masked in turn
    scores_options = True      # FillPlan.options: each text's tokens' probabilities on the first forward
    adapts = True              # load_weights: a workspace's adapted weights (engine/adapt)

    def __init__(self, model, tokenizer, device: torch.device, order: str = "confidence",
                 kv_cache: bool = False, cache_refresh: int = 0, quantization: str = "none"):
        self.tokenizer, self.device, self.order = tokenizer, device, order
        self.quantization = quantization
        self._weights = model                          # what adapted weights change (float)
        self.model = quantize_masked(model, quantization)  # what the fills run: the same model, or its int8 copy
        self.kv_cache = kv_cache and kv_cache_mod.supports(model)
        self.cache_refresh = cache_refresh
        self.model_dir: Path | None = None  # set by load()
        self.passes = {"full": 0, "tail": 0, "partial": 0}
        self._prefix: _Kept | None = None  # the last full first forward, by its text
        self._merged: dict[str, torch.Tensor] = {}   # a merged LoRA adapter's layers: their original weights
        self._overwritten = False                      # a full set of adapted weights was loaded over the checkpoint
        self.mask_id = tokenizer.mask_token_id
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.mask_id
        specials = {tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.sep_token_id}
        self.terminators = torch.tensor(sorted(i for i in specials if i is not None) or [self.mask_id])
        self._term_set = set(self.terminators.tolist())
        suppressed = set(tokenizer.all_special_ids) - set(self.terminators.tolist())
        suppressed.add(self.mask_id)
        self.suppressed = torch.tensor(sorted(suppressed))
        vocab = len(tokenizer)
        self.piece = [tokenizer.decode([i], clean_up_tokenization_spaces=False) for i in range(vocab)]
        self.newlines = torch.tensor([i for i, p in enumerate(self.piece) if "\n" in p] or [self.mask_id])
        # byte tokens are accepted only where their hole can still be valid UTF-8 (None: no byte tokens)
        self.utf8 = Utf8Guard.for_tokenizer(tokenizer, self.piece, self.terminators, self.newlines)
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
        dtype = resolve_dtype(config.dtype, device)
        quantization = resolve_quantization(config, masked=True)
        unfit = check_masked_quantization(quantization, device, dtype)
        if unfit:
            raise ModelLoadError(unfit)
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True, trust_remote_code=False)
            # One typed dict: a conditional `**{...}` is inferred as dict[str, str] and checked against
            # every keyword of from_pretrained's signature, which differs between transformers releases.
            kwargs: dict[str, Any] = {"local_files_only": True, "trust_remote_code": False, "dtype": dtype}
            if config.device_map:
                kwargs["device_map"] = config.device_map
            model = AutoModelForMaskedLM.from_pretrained(str(path), **kwargs)
        except (OSError, ValueError, KeyError) as exc:
            raise ModelLoadError(f"cannot load masked LM from {path}: {exc}") from exc
        if tokenizer.mask_token_id is None:
            raise ModelLoadError(f"{path}: the tokenizer has no mask token, so it is not a masked LM")
        if not config.device_map:
            model.to(device)
        model.eval()
        backend = cls(model, tokenizer, device, config.order, config.kv_cache, config.cache_refresh, quantization)
        backend.model_dir = path
        return backend

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def close(self) -> None:
        self.model = self._weights = None

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
        its tokens masked in turn, the context cut to 96 tokens before and 32 after. The canvas never
        exceeds ``max_positions`` (``score_layout``): the context gives way first (the suffix to a quarter of
        the room the middle leaves, the prefix to the rest), and a ``middle`` that does not fit alone raises
        ``TextTooLong``. The rows run in batches of
        ``SCORE_ROWS``. Used to rank syntax repairs (engine/repair.py) and fills (engine/confidence.py). Only the
        end of ``prefix`` and the start of ``suffix`` that hold those tokens are tokenized (``score_window``): the
        callers pass a whole document's."""
        mid = self._encode(middle)
        if not mid:
            return 0.0
        pre, suf = tail(prefix, SCORE_PREFIX, self._encode)[1], head(suffix, SCORE_SUFFIX, self._encode)[1]
        ids, at = self.score_layout(pre, mid, suf)
        total = 0.0
        for first in range(0, len(mid), SCORE_ROWS):
            rows = torch.arange(first, min(len(mid), first + SCORE_ROWS))
            pos = rows + at                                                                 # (R,)
            batch = ids.repeat(len(rows), 1)                                                # (R, T)
            batch[torch.arange(len(rows)), pos] = self.mask_id
            index = torch.arange(len(rows)).to(self.device)
            batch, pos = batch.to(self.device), pos.to(self.device)
            if self._fast:
                hidden = self.model.model(input_ids=batch).last_hidden_state                # (R, T, H)
                logits = self.model.decoder(self.model.head(hidden[index, pos]))           # (R, V)
            else:
                logits = self.model(input_ids=batch).logits[index, pos]                    # (R, V)
            logp = logits.float().log_softmax(-1).gather(1, ids.to(self.device)[pos][:, None])  # (R, 1)
            total += float(logp.sum())
        return total

    def score_layout(self, pre: list[int], mid: list[int], suf: list[int]) -> tuple[torch.Tensor, int]:
        """``score_text``'s canvas (at most ``max_positions`` ids) and where the middle starts in it."""
        lead, tail = (self.leading[:1], self.leading[1:]) if len(self.leading) >= 2 else ([], [])
        room = self.max_positions - len(lead) - len(tail) - len(mid)
        if room < 0:
            raise TextTooLong(f"text of {len(mid)} tokens exceeds the model's {self.max_positions} positions")
        suf = suf[:min(SCORE_SUFFIX, room // 4)]
        pre = pre[len(pre) - min(len(pre), SCORE_PREFIX, room - len(suf)):]
        return torch.tensor(list(lead) + pre + mid + suf + list(tail)), len(lead) + len(pre)

    def _stepper(self, holes: list[HoleSlots], T: int, context: tuple = ()
                 ) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
        """``logits_at`` for one fill. With the KV cache: the first step runs a full forward, or, when the
        previous fill had the same text around its holes (``context``: another length tried for the same
        hole), reuses that forward's keys and values up to the first hole and computes only the rest; on the
        very canvas it was kept from (a request asked again) it reuses the whole forward, so the fill is the
        cold fill bit for bit (a forward over the rest alone differs in the last bits, and with int8 weights,
        whose activation scale is set per forward, in its text); a refresh every ``cache_refresh`` steps
        recomputes the holes and the text after the first hole (the prefix keeps its first-step keys and
        values); the steps between compute the hole slots only. Without the cache, full forwards."""
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
            kept = self._prefix if first and self._prefix is not None and self._prefix.context == context else None
            if kept is not None and kept.same(ids, positions):
                cache.seed(kept.forward, T)
                return kept.logits.clone()                                                   # (N, V)
            seeded = kept is not None and torch.equal(kept.forward.ids[:lo], ids[:lo])
            if seeded and kept is not None:
                cache.seed(kept.forward.head(lo), T)
            if first and not seeded:
                self.passes["full"] += 1
                hidden = cache.forward(ids, None)[positions.to(self.device)]                # (N, H)
                logits = self.model.decoder(self.model.head(hidden)).cpu()                 # (N, V)
                self._prefix = _Kept(context, cache.prefix(ids, T), positions.clone(), logits.clone())
                return logits
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
        """Adapted weights, loaded in place on the engine thread between fills: a full set saved by
        ``safetensors.torch.save_model``, or a LoRA adapter (``adapter.safetensors``, engine/adapt/lora.py) merged
        into the base weights (W += scale * B @ A); None: the checkpoint's own. An adapter is checked before
        anything changes (a bad one raises ``ModelLoadError`` and the weights in use stay); the adapted layers'
        original weights are kept (on the CPU), so taking an adapter off or changing it reloads nothing. A full set
        is checked too (its tensors' names and shapes) before anything is loaded."""
        from ...adapt import lora

        try:
            if path is not None and lora.is_adapter(path):
                adapter = lora.read_adapter(path, self._weights)
                self._base_weights()
                self._merged = lora.merge(adapter)
            elif path is None:
                self._base_weights()
            else:
                self._check_file(path)
                self._unmerge()
                self._overwritten = True   # from here until the checkpoint is reloaded, even if this load fails
                self._load_file(path)
        finally:  # also after a load that failed half way: nothing computed from the old weights is used again
            self._weights.eval()
            self.model = quantize_masked(self._weights, self.quantization)   # int8: quantized again from them
            self.weights_changed()

    def _unmerge(self) -> None:
        if self._merged:
            from ...adapt import lora
            lora.restore(self._weights, self._merged)
            self._merged = {}

    def _base_weights(self) -> None:
        """The checkpoint's own weights again: an adapter's layers restored; after a full set of adapted weights,
        the checkpoint reloaded (its ``model.safetensors``)."""
        self._unmerge()
        if not self._overwritten:
            return
        if self.model_dir is None or not (self.model_dir / "model.safetensors").is_file():
            raise ModelLoadError("the checkpoint's own weights cannot be reloaded in place")
        self._load_file(self.model_dir / "model.safetensors")
        self._overwritten = False

    def _check_file(self, source: Path) -> None:
        """A full set of weights fits the model (the same tensors, of the same shapes; of tied tensors one is
        enough, and the decoder may be left out), read from the file's header before anything is loaded, so a set
        that does not fit changes nothing."""
        from safetensors import SafetensorError, safe_open

        try:
            with safe_open(str(source), framework="pt") as f:
                shapes = {name: tuple(f.get_slice(name).get_shape()) for name in f.keys()}
        except (OSError, ValueError, SafetensorError) as exc:   # safetensors' words name no file
            raise ModelLoadError(f"cannot use the weights {source}: {exc}") from exc
        state = self._weights.state_dict()
        own = {name: tuple(t.shape) for name, t in state.items()}
        storage = {name: t.untyped_storage().data_ptr() for name, t in state.items()}   # tied tensors share one
        present = {storage[n] for n in shapes if n in storage}
        missing = sorted(n for n in own if n not in shapes and "decoder" not in n and storage[n] not in present)
        unexpected = sorted(n for n in shapes if n not in own)
        other = sorted(n for n in shapes if n in own and shapes[n] != own[n])
        if missing or unexpected or other:
            raise ModelLoadError(f"{source}: weights do not fit this model (missing {missing[:3]}, "
                                 f"unexpected {unexpected[:3]}, other shapes {other[:3]})")

    def _load_file(self, source: Path) -> None:
        from safetensors import SafetensorError
        from safetensors.torch import load_model

        try:
            with torch.no_grad():
                missing, unexpected = load_model(self._weights, str(source), strict=False, device=str(self.device))
        except (OSError, RuntimeError, ValueError, SafetensorError) as exc:
            raise ModelLoadError(f"cannot load weights from {source}: {exc}") from exc
        missing = sorted(m for m in missing if "decoder" not in m)
        if unexpected or missing:
            raise ModelLoadError(f"{source}: weights do not fit this model (missing {missing[:3]}, "
                                 f"unexpected {sorted(unexpected)[:3]})")

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
        row = self._prepare(plan, control)
        logits_at = self._stepper(row.holes, len(row.canvas), row.context)
        if row.options:
            logits_at = _keeping_first(row, logits_at)
        out = denoise(logits_at, row.canvas, row.holes,
                      self.terminators, self.newlines, self.suppressed, plan.steps, row.threshold, self.order,
                      control.check, row.on_step, row.free, self.utf8)
        return self._result(row, out)

    @torch.inference_mode()
    def fill_many(self, plans: Sequence[FillPlan], controls: Sequence[Control]) -> list[FillResult | Exception]:
        """Several plans (from different editors) denoised together: one batched forward per step over every
        canvas still running, each canvas's loop unchanged (``sampler.denoise_steps``), so each result is the
        one ``fill`` gives at the same settings. Per plan a ``FillResult`` or the exception that ended it (a
        ``Cancelled`` stops its row only). One plan is simply ``fill`` (which may reuse the last prefix). With int8
        weights the plans run one after another: int8's activation scale is set per forward, so a row batched with
        others would not be the fill it is alone (measured: one of four texts changed)."""
        if len(plans) == 1 or self.quantization != "none":
            out: list[FillResult | Exception] = []
            for plan, control in zip(plans, controls):
                try:
                    out.append(self.fill(plan, control))
                except Exception as exc:  # noqa: BLE001 (handed back per plan, as for several)
                    out.append(exc)
            return out
        results: list[FillResult | Exception | None] = [None] * len(plans)
        rows: dict[int, _Row] = {}
        loops: dict[int, Generator[tuple[torch.Tensor, torch.Tensor], torch.Tensor, Denoised]] = {}
        wants: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        for i, (plan, control) in enumerate(zip(plans, controls)):
            try:
                rows[i] = row = self._prepare(plan, control)
                loops[i] = denoise_steps(row.canvas, row.holes, self.terminators, self.newlines, self.suppressed,
                                         plan.steps, row.threshold, self.order, control.check, row.on_step, row.free,
                                         self.utf8)
            except Exception as exc:  # noqa: BLE001 (one bad plan fails alone)
                results[i] = exc
        sizes = [len(rows[i].canvas) if i in rows else 1 for i in range(len(plans))]
        cache = kv_cache_mod.BatchCache(self.model, sizes) if self.kv_cache else None
        step = 0
        sent: dict[int, torch.Tensor | None] = dict.fromkeys(loops)
        while loops:
            for i in list(loops):
                try:
                    logits = sent[i]
                    wants[i] = next(loops[i]) if logits is None else loops[i].send(logits)
                except StopIteration as done:
                    results[i] = self._result(rows[i], done.value)
                    del loops[i]
                except Exception as exc:  # noqa: BLE001 (a cancelled or failed row leaves the batch)
                    results[i] = exc
                    del loops[i]
            if not loops:
                break
            live = list(loops)
            logits_rows = self._batch_logits(cache, [(i, rows[i], *wants[i]) for i in live], step)
            sent = dict(zip(live, logits_rows))
            if step == 0:   # each row's first forward, for its options (the loop alters the logits it is sent)
                for i, logits in zip(live, logits_rows):
                    if rows[i].options:
                        rows[i].first = (wants[i][1].clone(), logits.float().clone())
            step += 1
        return [r if r is not None else RuntimeError("no result") for r in results]

    def _batch_logits(self, cache: kv_cache_mod.BatchCache | None, wants: list, step: int) -> list[torch.Tensor]:
        """One forward for every live row's ``(row index, _Row, ids, positions)``: logits (N_i, V) per row."""
        if cache is None:  # full forwards over the padded canvases
            T = max(len(ids) for _, _, ids, _ in wants)
            batch = torch.full((len(wants), T), self.pad_id, dtype=torch.long)
            attention = torch.zeros(len(wants), T, dtype=torch.long)
            for b, (_, _, ids, _) in enumerate(wants):
                batch[b, :len(ids)], attention[b, :len(ids)] = ids, 1
            batch, attention = batch.to(self.device), attention.to(self.device)
            if self._fast:
                hidden = self.model.model(input_ids=batch, attention_mask=attention).last_hidden_state
                picked = torch.cat([hidden[b, pos.to(self.device)] for b, (_, _, _, pos) in enumerate(wants)])
                logits = self.model.decoder(self.model.head(picked)).cpu()
            else:
                full = self.model(input_ids=batch, attention_mask=attention).logits
                logits = torch.cat([full[b, pos.to(self.device)] for b, (_, _, _, pos) in enumerate(wants)]).cpu()
            return list(logits.split([len(pos) for _, _, _, pos in wants]))
        refresh = bool(self.cache_refresh and step % self.cache_refresh == 0)
        requests: list[tuple[int, torch.Tensor, torch.Tensor | None]] = []
        picks: list[torch.Tensor] = []
        for i, row, ids, positions in wants:  # the same passes as ``_stepper``: full, tail (refresh), holes
            lo = min(h.lo for h in row.holes)
            if step == 0:
                self.passes["full"] += 1
                requests.append((i, ids.to(self.device), None))
                picks.append(positions)
            elif refresh:
                self.passes["tail"] += 1
                requests.append((i, ids.to(self.device), torch.arange(lo, len(ids), device=self.device)))
                picks.append(positions - lo)
            else:
                self.passes["partial"] += 1
                hole_pos = torch.cat([torch.arange(h.lo, h.hi) for h in row.holes])
                where = torch.full((len(ids),), -1, dtype=torch.long)
                where[hole_pos] = torch.arange(len(hole_pos))
                requests.append((i, ids.to(self.device), hole_pos.to(self.device)))
                picks.append(where[positions])
        hidden = cache.forward(requests)
        picked = torch.cat([h[p.to(self.device)] for h, p in zip(hidden, picks)])
        logits = self.model.decoder(self.model.head(picked)).cpu()
        return list(logits.split([len(p) for p in picks]))

    def _prepare(self, plan: FillPlan, control: Control) -> _Row:
        canvas, holes, specs, free = self._layout(plan)
        if any(s.init for s in specs):
            self._renoise(canvas, holes, specs, free)
        on_step = self._draft_hook(holes, control.draft) if control.draft else None
        # What the first forward's prefix keys and values depend on, bar the holes' lengths.
        context = tuple(p if isinstance(p, str) else ("hole", p.init) for p in plan.pieces) + (self.order,)
        return _Row(canvas, holes, free, plan.threshold or DEFAULT_THRESHOLD, on_step, context, plan.options)

    def _result(self, row: _Row, out: Denoised) -> FillResult:
        texts, confs, spans, logps, kept = [], [], [], [], 0
        for h, end in zip(row.holes, out.ends):
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
        return FillResult((candidate,), out.steps, out.forwards, kept, self._options(row))

    def _options(self, row: _Row) -> tuple[Candidate | None, ...]:
        """Each of the row's options as a candidate for its first hole: the probability the first forward (every
        slot still masked) gave each of its tokens at its slot, from the hole's first slot on; None for a text with
        no tokens. A text longer than the hole is scored on the tokens that fit (a whole line of 40 tokens over a
        24-slot hole: its first 24); each token past them gets their geometric mean, so the score (their mean
        log-probability) is theirs and the text keeps one confidence per token."""
        if not row.options:
            return ()
        if row.first is None or not row.holes:
            return (None,) * len(row.options)
        positions, logits = row.first
        logp = logits.log_softmax(-1)                                                      # (N, V)
        at = {int(p): k for k, p in enumerate(positions.tolist())}
        h = row.holes[0]
        out: list[Candidate | None] = []
        encoded = self.tokenizer(list(row.options), add_special_tokens=False)["input_ids"]   # one call for all
        for toks in encoded:
            fit = min(len(toks), h.hi - h.lo)
            rows_at = [at.get(h.lo + j, -1) for j in range(fit)]
            if not fit or -1 in rows_at:
                out.append(None)
                continue
            lp = logp[torch.tensor(rows_at), torch.tensor(toks[:fit])]                     # (fit,)
            decoded, spans = self._decode(toks)
            score = float(lp.mean())
            confs = tuple(round(float(x), 6) for x in lp.exp()) + (round(math.exp(score), 6),) * (len(toks) - fit)
            out.append(Candidate((decoded,), (confs,), (spans,), score))
        return tuple(out)

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
                parts: list[str] = []
                c: list[float] = []
                split: list[tuple[int, int]] = []  # (part, id): the run of tokens holding bytes of a character
                masked = after = False                 # the slot before is masked; and before the run's start
                for pos in range(h.lo, end):
                    token = int(ids[pos])
                    if free[pos]:
                        self._join_split(parts, split, after, True)
                        parts.append(MASK_GLYPH)
                        c.append(0.0)
                    elif token not in self._term_set:
                        piece = self.piece[token]
                        if "\ufffd" in piece:
                            after = after if split else masked
                            split.append((len(parts), token))
                        else:
                            self._join_split(parts, split, after, False)
                        parts.append(piece)
                        c.append(round(float(conf[pos]), 3))
                    else:
                        self._join_split(parts, split, after, False)
                    masked = bool(free[pos])
                self._join_split(parts, split, after, False)
                texts.append("".join(parts))
                confs.append(tuple(c))
                pieces.append(tuple(parts))
            draft(step, tuple(texts), tuple(confs), tuple(pieces))
        return on_step

    def _join_split(self, parts: list[str], split: list[tuple[int, int]], masked_before: bool,
                    masked_after: bool) -> None:
        """A draft's run of tokens that hold a character's bytes (an emoji is spelt in several; alone each decodes
        as U+FFFD) decoded together, its text on the run's last token (as ``_decode`` attributes it). Beside a
        masked slot (the rest of a character's bytes may come there) a U+FFFD at that end is not shown yet."""
        if not split:
            return
        text = self.tokenizer.decode([token for _, token in split], clean_up_tokenization_spaces=False)
        if masked_before:
            text = text.lstrip("\ufffd")
        if masked_after:
            text = text.rstrip("\ufffd")
        for k, _ in split:
            parts[k] = ""
        parts[split[-1][0]] = text
        split.clear()


def _keeping_first(row: _Row, logits_at: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
                   ) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """``logits_at`` that keeps a copy of its first answer in ``row.first`` (the loop alters what it is given)."""
    def first_kept(ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        logits = logits_at(ids, positions)
        if row.first is None:
            row.first = (positions.clone(), logits.float().clone())
        return logits
    return first_kept
