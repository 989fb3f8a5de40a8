"""The embedded tokenizer round-trips text exactly: indentation, tabs, CRLF, trailing spaces, emoji."""

import sysconfig
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from engine.config import EMBEDDED_DIR


@pytest.fixture(scope="module")
def tok():
    return AutoTokenizer.from_pretrained(str(EMBEDDED_DIR), local_files_only=True)


@pytest.mark.parametrize("text", [
    "", "\n", "    \n\t\tx = 1  \r\n", "def f():\n    return 'é😀'\n", "a\x0cb\u2028c", "\x00\x01\xff",
    "        for idx, elem in enumerate(numbers):\n", "  trailing   ", "\r\r\n\n",
])
def test_round_trip(tok, text):
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids, clean_up_tokenization_spaces=False) == text


def test_round_trip_on_stdlib_files(tok):
    root = Path(sysconfig.get_paths()["stdlib"])
    for name in ("textwrap.py", "json/decoder.py", "asyncio/queues.py"):
        text = (root / name).read_text(encoding="utf-8")
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert tok.decode(ids, clean_up_tokenization_spaces=False) == text


def test_lines_are_token_boundaries(tok):
    """A hole at a line start tokenizes the same in and out of context."""
    a, b = "x = 1\n", "    return x\n"
    joint = tok(a + b, add_special_tokens=False)["input_ids"]
    assert joint == tok(a, add_special_tokens=False)["input_ids"] + tok(b, add_special_tokens=False)["input_ids"]


def test_special_tokens(tok):
    for name in ("mask_token_id", "pad_token_id", "eos_token_id", "bos_token_id"):
        assert getattr(tok, name) is not None
    assert len({tok.mask_token_id, tok.pad_token_id, tok.eos_token_id, tok.bos_token_id}) == 4
