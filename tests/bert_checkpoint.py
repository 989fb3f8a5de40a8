"""A tiny random BERT masked LM with a WordPiece tokenizer ([CLS]/[SEP] around the canvas), written with
``save_pretrained`` at test time: the "any masked-LM checkpoint" the engine and the adapter must take."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast


def write_tiny_bert(path: Path, texts: Sequence[str], hidden: int, layers: int, intermediate: int,
                    max_positions: int) -> Path:
    """Train a 300-word WordPiece vocabulary on ``texts`` and save it with a random BERT of that shape."""
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=300, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tok.train_from_iterator(list(texts), trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")
    fast.save_pretrained(str(path))
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=len(fast), hidden_size=hidden, num_hidden_layers=layers,
                                       num_attention_heads=2, intermediate_size=intermediate,
                                       max_position_embeddings=max_positions, pad_token_id=0))
    model.save_pretrained(str(path))
    return path
