"""The byte-level BPE tokenizer of the embedded model: lines are always token boundaries, whitespace is exact."""

from __future__ import annotations

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
