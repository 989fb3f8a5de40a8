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


# ------------------------------------------------------------------ the retrained (second-generation) tokenizer

GEN2_DIR = EMBEDDED_DIR.parent.parent / "training" / "gen2" / "tokenizer"
FIVE = {
    "python": "def f(xs):\n\tfor x in xs:\r\n        yield x  # 😀 é\n",
    "javascript": "export const add = (a, b) => {\r\n  return a + b; // ✓\n};\n\t\tconsole.log(`${add(1, 2)}`);\n",
    "typescript": "interface P<T> {\n  readonly id: T;\n}\r\nfunction g<T>(p: P<T>): T { return p.id; }\n",
    "go": "package main\n\nfunc main() {\n\tfmt.Println(\"héllo, 世界\")\r\n}\n",
    "rust": "fn main() {\n    let v: Vec<u8> = vec![1, 2];\r\n\tprintln!(\"{:?} 🦀\", v);\n}\n",
}


def _lines_are_boundaries(tok, text):
    ids = tok(text, add_special_tokens=False)["input_ids"]
    per_line = [i for line in text.splitlines(keepends=True) for i in tok(line, add_special_tokens=False)["input_ids"]]
    return ids == per_line


@pytest.fixture(scope="module")
def trained():
    """A small BPE trained here on the five languages, and the same training cut to a smaller vocabulary."""
    from engine.training.tokenizer import train_tokenizer

    texts = [t * 3 for t in FIVE.values()] * 20
    return train_tokenizer(texts, 700), train_tokenizer(texts, 420), texts


@pytest.mark.parametrize("lang", sorted(FIVE))
def test_retrained_bpe_keeps_the_guarantees_in_every_language(trained, lang):
    tok = trained[0]
    text = FIVE[lang]
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids, clean_up_tokenization_spaces=False) == text          # exact, CRLF / tabs / emoji
    assert _lines_are_boundaries(tok, text)                                      # line starts are boundaries
    indented = "\t\t    x = 1\n"
    assert tok.decode(tok(indented, add_special_tokens=False)["input_ids"]) == indented


def test_truncating_a_bpe_is_training_it_smaller(trained):
    """gen2data measures several vocabularies with one training run: the cut tokenizer is the one a
    run at that size learns (BPE training is greedy), and it encodes alike."""
    from engine.training.tokenizer import truncate

    big, small, texts = trained
    cut = truncate(big, len(small))
    assert cut.get_vocab() == small.get_vocab()
    for t in texts[:5]:
        assert cut(t, add_special_tokens=False)["input_ids"] == small(t, add_special_tokens=False)["input_ids"]


@pytest.mark.parametrize("lang", sorted(FIVE))
def test_shipped_gen2_tokenizer(lang):
    tok = AutoTokenizer.from_pretrained(str(GEN2_DIR), local_files_only=True)
    text = FIVE[lang]
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids, clean_up_tokenization_spaces=False) == text
    assert _lines_are_boundaries(tok, text)
    assert len({tok.mask_token_id, tok.pad_token_id, tok.eos_token_id, tok.bos_token_id}) == 4
