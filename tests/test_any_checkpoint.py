"""Any native transformers masked LM loads through the same code as the embedded model: here a tiny
random BERT with a WordPiece tokenizer ([CLS]/[SEP] around the canvas), written at test time."""

import json

import pytest
import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

from engine import Engine, EngineConfig, InfillRequest


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-bert")
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=300, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tok.train_from_iterator(["def add(a, b):\n    return a + b\n", "for x in range(10):\n    print(x)\n"] * 50, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")
    fast.save_pretrained(str(path))
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=len(fast), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                       intermediate_size=64, max_position_embeddings=512, pad_token_id=0))
    model.save_pretrained(str(path))
    return path


def test_a_bert_checkpoint_fills_through_the_engine(bert_dir):
    assert json.loads((bert_dir / "config.json").read_text())["model_type"] == "bert"
    engine = Engine(EngineConfig.of(model=str(bert_dir), validate=False, steps=4))
    try:
        engine.start().result(timeout=60)
        text = "def add(a, b):\n    return \n"
        c = engine.infill_sync(InfillRequest(text, text.index("return ") + 7, "python"), timeout=60)
        assert c.backend == "masked" and 1 <= c.steps <= 4
        assert engine.stats()["kv_cache"] is False  # the cache is ModernBERT-only; BERT runs full forwards
        for fill in c.fills:
            assert fill.start == fill.end == text.index("return ") + 7
    finally:
        engine.close()
