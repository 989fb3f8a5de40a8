"""An approximate key/value cache for ModernBERT denoising (the Fast-dLLM "dual cache" idea).

A full forward over the canvas records every layer's keys and values. Until the next refresh, a step
recomputes only the hole slots: their queries attend to the cached keys/values of the prefix and
suffix (stale by the hole's latest tokens, which is the approximation) and to their own fresh ones.
On a CPU the cost of a forward grows with the tokens processed, so a step over 32 hole slots costs
a fraction of one over a 256-token canvas.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from transformers.models.modernbert import modeling_modernbert as mb


def supports(model) -> bool:
    base = getattr(model, "model", None)
    return isinstance(base, mb.ModernBertModel)


@dataclass(frozen=True)
class Prefix:
    """Every layer's keys and values of a canvas's first ``len(ids)`` tokens, from a full forward."""

    ids: torch.Tensor                 # (P,) the tokens they were computed for
    keys: tuple[torch.Tensor, ...]    # per layer (1, heads, P, head_dim)
    values: tuple[torch.Tensor, ...]

    def head(self, length: int) -> Prefix:
        """The first ``length`` tokens' keys and values (views)."""
        return Prefix(self.ids[:length], tuple(k[:, :, :length] for k in self.keys),
                      tuple(v[:, :, :length] for v in self.values))


class DualCache:
    def __init__(self, model):
        self.base = model.model
        self.config = model.config
        self.keys: list[torch.Tensor] = []    # per layer (1, heads, T, head_dim), after rotary
        self.values: list[torch.Tensor] = []
        self.window = self.config.sliding_window  # half-window: |i - j| <= window attends in local layers

    def _mask(self, rows: torch.Tensor, T: int, layer_type: str) -> torch.Tensor | None:
        if layer_type != "sliding_attention":
            return None
        cols = torch.arange(T, device=rows.device)
        return (rows[:, None] - cols[None, :]).abs() <= self.window           # (P, T) True = attend

    def _layer(self, layer, h: torch.Tensor, positions: torch.Tensor, idx: int, cos, sin, full: bool):
        attn = layer.attn
        x = layer.attn_norm(h)                                                # (1, P, H)
        P = x.shape[1]
        qkv = attn.Wqkv(x).view(1, P, 3, -1, attn.head_dim)
        q, k, v = (t.transpose(1, 2) for t in qkv.unbind(dim=-3))             # (1, heads, P, d)
        q, k = mb.apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1)
        if full:
            self.keys.append(k)
            self.values.append(v)
            keys, values = k, v
        else:
            keys, values = self.keys[idx], self.values[idx]
            keys[:, :, positions] = k                                          # the hole's own, fresh
            values[:, :, positions] = v
        mask = self._mask(positions, keys.shape[2], layer.attention_type)
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, scale=attn.head_dim ** -0.5)
        h = h + attn.Wo(out.transpose(1, 2).reshape(1, P, -1))
        return h + layer.mlp(layer.mlp_norm(h))

    def prefix(self, ids: torch.Tensor, length: int) -> Prefix:
        """The cached keys and values of the first ``length`` tokens (after a full forward over ``ids``)."""
        return Prefix(ids[:length].clone(), tuple(k[:, :, :length].clone() for k in self.keys),
                      tuple(v[:, :, :length].clone() for v in self.values))

    def seed(self, prefix: Prefix, T: int) -> None:
        """Start from ``prefix``'s keys and values for a canvas of ``T`` tokens that begins with the same
        tokens; the rest must then be computed by ``forward(ids, arange(len(prefix.ids), T))``."""
        P = len(prefix.ids)
        self.keys = [torch.cat([k, k.new_zeros(*k.shape[:2], T - P, k.shape[3])], dim=2) for k in prefix.keys]
        self.values = [torch.cat([v, v.new_zeros(*v.shape[:2], T - P, v.shape[3])], dim=2) for v in prefix.values]

    @torch.inference_mode()
    def forward(self, ids: torch.Tensor, positions: torch.Tensor | None) -> torch.Tensor:
        """Hidden states (P, H) at ``positions`` (all of ``ids`` and a cache refresh when None)."""
        full = positions is None
        if positions is None:
            positions = torch.arange(ids.shape[0], device=ids.device)
            self.keys, self.values = [], []
        at: torch.Tensor = positions
        h = self.base.embeddings(input_ids=ids[at][None])                     # (1, P, H)
        rope = {t: self.base.rotary_emb(h, at[None], t) for t in set(self.config.layer_types)}
        for idx, layer in enumerate(self.base.layers):
            cos, sin = rope[layer.attention_type]
            h = self._layer(layer, h, at, idx, cos, sin, full)
        return self.base.final_norm(h)[0]


class BatchCache:
    """``DualCache`` for several canvases at once (``MaskedBackend.fill_many``): row ``r`` of a padded cache per
    layer holds canvas ``r``'s keys and values; each forward computes each live row's own positions, all rows in
    one padded batch, and attends to the rows' caches (padding masked)."""

    def __init__(self, model, sizes: list[int]):
        self.base = model.model
        self.config = model.config
        self.window = self.config.sliding_window
        self.sizes = torch.tensor(sizes)
        self.T = max(sizes)
        self.keys: list[torch.Tensor] = []      # per layer (R, heads, T, head_dim), after rotary
        self.values: list[torch.Tensor] = []

    @torch.inference_mode()
    def forward(self, rows: list[tuple[int, torch.Tensor, torch.Tensor | None]]) -> list[torch.Tensor]:
        """Per ``(row, ids, positions)`` (positions None: a full forward of that row) the hidden states (P, H) at
        those positions. A row's first forward must be a full one."""
        device = rows[0][1].device
        ats = [torch.arange(ids.shape[0], device=device) if at is None else at for _, ids, at in rows]
        lengths = [len(at) for at in ats]
        live = torch.tensor([row for row, _, _ in rows], device=device)
        B, P, T = len(rows), max(lengths), self.T
        tokens = torch.zeros(B, P, dtype=torch.long, device=device)
        where = torch.zeros(B, P, dtype=torch.long, device=device)
        for b, ((_, ids, _), pos) in enumerate(zip(rows, ats)):
            tokens[b, :len(pos)] = ids[pos]
            where[b, :len(pos)] = pos
        cols = torch.arange(T, device=device)
        valid = cols[None, :] < self.sizes.to(device)[live][:, None]                        # (B, T)
        near = (where[:, :, None] - cols[None, None, :]).abs() <= self.window                # (B, P, T)
        masks = {"full_attention": valid[:, None, None, :],
                 "sliding_attention": (near & valid[:, None, :])[:, None]}
        every = B == len(self.sizes) and bool((live == torch.arange(B, device=device)).all())
        h = self.base.embeddings(input_ids=tokens)                                          # (B, P, H)
        rope = {t: self.base.rotary_emb(h, where, t) for t in set(self.config.layer_types)}
        for idx, layer in enumerate(self.base.layers):
            cos, sin = rope[layer.attention_type]
            attn = layer.attn
            x = layer.attn_norm(h)
            qkv = attn.Wqkv(x).view(B, P, 3, -1, attn.head_dim)
            q, k, v = (t.transpose(1, 2) for t in qkv.unbind(dim=-3))                       # (B, heads, P, d)
            q, k = mb.apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1)
            if len(self.keys) <= idx:
                shape = (len(self.sizes), k.shape[1], T, k.shape[3])
                self.keys.append(k.new_zeros(shape))
                self.values.append(v.new_zeros(shape))
            keys, values = self.keys[idx], self.values[idx]
            for b, ((row, _, _), pos, n) in enumerate(zip(rows, ats, lengths)):
                keys[row, :, pos] = k[b, :, :n]                                               # fresh: the row's own
                values[row, :, pos] = v[b, :, :n]
            if not every:
                keys, values = keys[live], values[live]
            out = F.scaled_dot_product_attention(q, keys, values, attn_mask=masks[layer.attention_type],
                                                 scale=attn.head_dim ** -0.5)
            h = h + attn.Wo(out.transpose(1, 2).reshape(B, P, -1))
            h = h + layer.mlp(layer.mlp_norm(h))
        hidden = self.base.final_norm(h)
        return [hidden[b, :n] for b, n in enumerate(lengths)]
