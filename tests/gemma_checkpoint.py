"""A tiny random DiffusionGemma checkpoint written at test time: real config, real tokenizer files, no downloads."""

from __future__ import annotations

import inspect
import json
import textwrap
from pathlib import Path

SPECIALS = ("<pad>", "<eos>", "<bos>")    # ids 0, 1, 2: the order of the config's pad/eos/bos ids
TOKENIZER_VOCAB = 500                     # below the config's 512, whose top ids are the image tokens
GENERATION = {                            # the checkpoint's own sampler defaults, distinct from the library's
    "max_denoising_steps": 12,
    "t_min": 0.3,
    "t_max": 0.9,
    "stability_threshold": 1,
    "confidence_threshold": 0.005,
    "sampler_config": {"entropy_bound": 0.2, "_cls_name": "EntropyBoundSamplerConfig"},
}


def training_text() -> str:
    """A few KB of Python: the source of some standard-library modules (stable for one interpreter)."""
    import argparse
    import dataclasses
    import textwrap as tw
    return "\n".join(inspect.getsource(m)[:12_000] for m in (tw, dataclasses, argparse))


def build_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=TOKENIZER_VOCAB, special_tokens=list(SPECIALS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train_from_iterator([training_text()], trainer=trainer)
    pad, eos, bos = SPECIALS
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token=pad, eos_token=eos, bos_token=bos, unk_token=None,
        clean_up_tokenization_spaces=False,
    )


def tiny_config(canvas_length: int = 48, sliding_window: int = 64):
    from transformers import DiffusionGemmaConfig, DiffusionGemmaTextConfig, Gemma4VisionConfig

    text = DiffusionGemmaTextConfig(
        vocab_size=512, hidden_size=64, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=32,
        num_experts=4, top_k_experts=2, moe_intermediate_size=32,
        global_head_dim=32, num_global_key_value_heads=1,
        layer_types=["sliding_attention", "full_attention"], sliding_window=sliding_window,
        pad_token_id=0, eos_token_id=1, bos_token_id=2,
    )
    vision = Gemma4VisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                num_attention_heads=2, num_key_value_heads=2, head_dim=16)
    return DiffusionGemmaConfig(text_config=text, vision_config=vision, canvas_length=canvas_length,
                                boi_token_id=500, eoi_token_id=501, image_token_id=502)


def write_checkpoint(directory: Path, seed: int = 0, canvas_length: int = 48, sliding_window: int = 64) -> Path:
    """Save a random model, its tokenizer and a generation_config.json into ``directory``."""
    import torch
    from transformers import DiffusionGemmaForBlockDiffusion

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    model = DiffusionGemmaForBlockDiffusion(tiny_config(canvas_length, sliding_window)).eval()
    model.save_pretrained(str(directory))
    (directory / "generation_config.json").write_text(json.dumps(GENERATION, indent=2))
    tokenizer = build_tokenizer()
    for token_id, token in enumerate(SPECIALS):
        assert tokenizer.convert_tokens_to_ids(token) == token_id, (token, token_id)
    tokenizer.save_pretrained(str(directory))
    return directory


SAMPLE = textwrap.dedent('''\
    import os


    def read_config(path):
        """Read a config file."""
        with open(path) as handle:
            return handle.read()


    def main():
        text = read_config(os.environ["CONFIG"])
        print(text)
''')


if __name__ == "__main__":
    import sys
    print(write_checkpoint(Path(sys.argv[1])))
