"""The DiffusionGemma prompt cache: the prefix's keys and values, kept between requests, reused up to the change.

The encoder is causal, so the cache entries of a token depend only on the tokens before it: when a
new prefix shares its first ``k`` tokens with the cached one, the cache is cut to ``k`` and only the
rest is encoded. Sliding-window layers normally drop keys older than their window, which would
make a cut impossible once the window is full; this cache records their whole past instead, and
hands the decoder a view holding only the last ``window - 1`` keys, exactly what the library's
own cache would hold. The decoder reads the cache and never writes it, so one cache serves every
step and every row of a fill.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import DynamicCache  # noqa: E402
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

from .. import loading  # noqa: F401  (sets the offline flags before transformers loads)


class PromptCache:
    def __init__(self, model, enabled: bool = True):
        self.model = model
        self.enabled = enabled
        self.ids: list[int] = []          # the token ids whose keys and values ``cache`` holds
        self.cache: DynamicCache | None = None
        self.encoder_calls = 0            # encoder forwards run (a repeated prefix runs none)
        self.encoder_tokens = 0           # prefix tokens encoded

    def __len__(self) -> int:
        return len(self.ids)

    def clear(self) -> None:
        self.ids, self.cache = [], None

    def update(self, ids: list[int]) -> int:
        """Make the cache hold ``ids`` (at least one token); returns how many tokens were encoded."""
        keep = common_length(self.ids, ids) if self.enabled and self.cache is not None else 0
        if keep == len(ids) == len(self.ids):
            return 0
        cache, self.ids = self.cache, []   # invalid until the encoder has finished
        if keep == 0 or cache is None or not self.croppable(cache):
            keep, cache = 0, self.fresh()
        else:
            crop(cache, keep)
        if keep < len(ids):
            self.encode(cache, ids[keep:], keep)
        self.cache, self.ids = cache, list(ids)
        return len(ids) - keep

    def fresh(self) -> DynamicCache:
        cache = DynamicCache(config=self.model.config)
        cache.activate_past_recording()
        return cache

    def encode(self, cache: DynamicCache, ids: list[int], offset: int) -> None:
        device = self.model.get_input_embeddings().weight.device
        input_ids = torch.tensor([ids], dtype=torch.long, device=device)                # (1, n)
        positions = torch.arange(offset, offset + len(ids), device=device)[None]         # (1, n)
        with torch.no_grad():  # the cache outlives the call: it must not hold an autograd graph
            self.model.model.encoder(input_ids=input_ids, cache=cache, position_ids=positions)
        self.encoder_calls += 1
        self.encoder_tokens += len(ids)

    def view(self, batch: int) -> DynamicCache:
        """A read-only cache for ``batch`` decoder rows: the same tensors expanded, windows cut as the library does."""
        view = DynamicCache(config=self.model.config)
        assert self.cache is not None, "view() after update()"
        layers: list[Any] = list(self.cache.layers)  # DynamicLayer / DynamicSlidingWindowLayer (croppable)
        for src, dst in zip(layers, view.layers):
            keys, values = src.keys, src.values
            if isinstance(src, DynamicSlidingWindowLayer):
                keys, values = keys[..., -(src.sliding_window - 1):, :], values[..., -(src.sliding_window - 1):, :]
            dst.lazy_initialization(keys, values)
            dst.keys = keys.expand(batch, -1, -1, -1)
            dst.values = values.expand(batch, -1, -1, -1)
            if isinstance(src, DynamicSlidingWindowLayer):
                dst.cumulative_length = src.cumulative_length
        return view

    @staticmethod
    def croppable(cache: DynamicCache | None) -> bool:
        return cache is not None and all(type(layer) in (DynamicLayer, DynamicSlidingWindowLayer) and
                                         getattr(layer, "record_past", True) for layer in cache.layers)


def crop(cache: DynamicCache, length: int) -> None:
    """Keep the first ``length`` positions of every layer (sliding layers hold their whole past here)."""
    layers: list[Any] = list(cache.layers)  # croppable: DynamicLayer / DynamicSlidingWindowLayer only
    for layer in layers:
        if layer.is_initialized:
            layer.keys = layer.keys[..., :length, :]
            layer.values = layer.values[..., :length, :]
        if isinstance(layer, DynamicSlidingWindowLayer):
            layer.cumulative_length = length


def common_length(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n
