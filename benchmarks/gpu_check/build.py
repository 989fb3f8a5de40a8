"""A random DiffusionGemma at the real checkpoint's layer shapes (or a tiny one), built in memory: no downloads.

The shapes are those published for ``google/diffusiongemma-26B-A4B-it`` (30 layers of hidden size
2816, 16 query heads of 256, 8 sliding / 2 global key-value heads, global heads of 512, 128 experts
of 704 with 8 active, a dense MLP of 2112, vocabulary 262144, sliding window 1024, canvas 256).
Only the weights are random, so the figures measure speed, not quality.
"""

from __future__ import annotations

import inspect
import time

import torch

REAL_TEXT = dict(
    vocab_size=262_144, hidden_size=2816, intermediate_size=2112, num_hidden_layers=30,
    num_attention_heads=16, num_key_value_heads=8, head_dim=256, global_head_dim=512,
    num_global_key_value_heads=2, num_experts=128, top_k_experts=8, moe_intermediate_size=704,
    sliding_window=1024, max_position_embeddings=262_144,
)
TINY_TEXT = dict(
    vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=2, num_key_value_heads=1, head_dim=32, global_head_dim=32,
    num_global_key_value_heads=1, num_experts=4, top_k_experts=2, moe_intermediate_size=32,
    sliding_window=64,
)
SPECIALS = ("<pad>", "<eos>", "<bos>")  # ids 0, 1, 2, as in the config


def model_config(tiny: bool, layers: int | None = None):
    from transformers import DiffusionGemmaConfig, DiffusionGemmaTextConfig, Gemma4VisionConfig

    text = dict(TINY_TEXT if tiny else REAL_TEXT)
    if layers:
        text["num_hidden_layers"] = layers
    n = text["num_hidden_layers"]
    # Five sliding layers, then one global, ending on a global layer (as in the checkpoint).
    text["layer_types"] = ["full_attention" if (i + 1) % 6 == 0 or i == n - 1 else "sliding_attention"
                           for i in range(n)]
    vision = Gemma4VisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                num_attention_heads=2, num_key_value_heads=2, head_dim=16)
    vocab = text["vocab_size"]
    return DiffusionGemmaConfig(
        text_config=DiffusionGemmaTextConfig(pad_token_id=0, eos_token_id=1, bos_token_id=2, **text),
        vision_config=vision, canvas_length=48 if tiny else 256,
        boi_token_id=vocab - 12, eoi_token_id=vocab - 11, image_token_id=vocab - 10)


def build_model(config, device: torch.device, dtype: torch.dtype, seed: int = 0):
    """Random weights created directly on ``device`` in ``dtype``; returns (model, seconds)."""
    from transformers import DiffusionGemmaForBlockDiffusion

    torch.manual_seed(seed)
    t0 = time.perf_counter()
    with torch.device(device):
        model = DiffusionGemmaForBlockDiffusion._from_config(config, dtype=dtype)
    model.eval()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return model, time.perf_counter() - t0


def source_text() -> str:
    """Python to tokenize: standard-library source, stable for one interpreter."""
    import argparse
    import dataclasses
    import textwrap
    return "\n".join(inspect.getsource(m) for m in (textwrap, dataclasses, argparse))


def build_tokenizer(vocab_size: int = 500):
    """A small byte-level BPE trained here; its ids are a subset of the model's vocabulary."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator([source_text()[:40_000]], trainer=trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=list(SPECIALS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    pad, eos, bos = SPECIALS
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=pad, eos_token=eos, bos_token=bos,
                                   unk_token=None, clean_up_tokenization_spaces=False)
