"""Any native transformers masked LM loads through the same code as the embedded model: here a tiny
random BERT with a WordPiece tokenizer ([CLS]/[SEP] around the canvas), written at test time."""

import json

import pytest
import torch

from engine import Engine, EngineConfig, InfillRequest
from tests.bert_checkpoint import write_tiny_bert


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    texts = ["def add(a, b):\n    return a + b\n", "for x in range(10):\n    print(x)\n"] * 50
    return write_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), texts, hidden=32, layers=1, intermediate=64,
                           max_positions=512)


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
