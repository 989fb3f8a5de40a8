"""The byte-level BPE tokenizer of the embedded model: lines are always token boundaries, whitespace is exact."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

PAD, BOS, EOS, MASK = "<pad>", "<bos>", "<eos>", "<mask>"
SPECIAL_TOKENS = [PAD, BOS, EOS, MASK]


def train_tokenizer(texts: Iterable[str], vocab_size: int) -> PreTrainedTokenizerFast:
    """Train on ``texts``; every line (with its newline) is pre-split so a hole at a line start tokenizes alike in and out of context."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\n"), behavior="merged_with_previous"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        min_frequency=2,
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return wrap(tok)


def truncate(tokenizer: PreTrainedTokenizerFast, vocab_size: int) -> PreTrainedTokenizerFast:
    """The same BPE cut to its first ``vocab_size`` entries: the special tokens, the byte alphabet and the
    earliest merges. BPE training is greedy, so this is the tokenizer a training run with that vocabulary
    size would have learned from the same texts (one training run measures several sizes)."""
    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    vocab: dict[str, int] = spec["model"]["vocab"]
    if vocab_size >= len(vocab):
        return tokenizer
    kept = {t: i for t, i in vocab.items() if i < vocab_size}
    merges = spec["model"]["merges"]
    n_base = len(vocab) - len(merges)  # specials and alphabet come before the merges
    spec["model"]["vocab"] = kept
    spec["model"]["merges"] = merges[:max(0, vocab_size - n_base)]
    for m in spec["model"]["merges"]:
        a, b = m if isinstance(m, list) else m.split(" ", 1)
        if a + b not in kept:
            raise ValueError(f"merge {a!r} + {b!r} has no entry below {vocab_size}: merges are not in id order")
    return wrap(Tokenizer.from_str(json.dumps(spec)))


def wrap(tok: Tokenizer) -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token=PAD, bos_token=BOS, eos_token=EOS, mask_token=MASK,
        cls_token=BOS, sep_token=EOS, unk_token=None,
        clean_up_tokenization_spaces=False,
        model_input_names=["input_ids", "attention_mask"],
    )


def save(tokenizer: PreTrainedTokenizerFast, directory: Path) -> None:
    tokenizer.save_pretrained(str(directory))
