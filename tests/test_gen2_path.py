"""The second-generation model's whole path on the CPU, as the GPU session will run it (engine/training/gen2/README.md):
a corpus part staged, tokenized once and trained (`scripts/train_gen2_gpu.sh`, the tiny shape, a few seconds), the
weights brought back as float16 pieces, joined into a run directory here, shipped with its card into a model
directory that states int8, and loaded and filled by the engine with the quantization that directory states."""

from __future__ import annotations

import json
import lzma
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import torch

from benchmarks.fillers import EngineFiller
from benchmarks.tasks import Task
from engine.config import EngineConfig, LoadConfig

ROOT = Path(__file__).resolve().parent.parent

SNIPPETS = {
    "python": "def area(width, height):\n    return width * height\n\n\nclass Box:\n    def __init__(self, w):\n"
              "        self.w = w\n",
    "javascript": "function area(width, height) {\n  return width * height;\n}\nmodule.exports = { area };\n",
    "typescript": "export function area(width: number, height: number): number {\n  return width * height;\n}\n",
    "go": "package shapes\n\nfunc Area(width, height int) int {\n\treturn width * height\n}\n",
    "rust": "pub fn area(width: u32, height: u32) -> u32 {\n    width * height\n}\n",
}


def _part(dest: Path) -> Path:
    """A corpus part as `gen2data pack` writes one: xz JSON lines per split and language."""
    dest.mkdir(parents=True)
    for lang, text in SNIPPETS.items():
        for split, n in (("train", 40), ("valid", 4)):
            rows = [json.dumps({"id": f"test:{lang}/{split}{i}.x", "text": text.replace("area", f"area{i}")})
                    for i in range(n)]
            with lzma.open(dest / f"{split}.{lang}.000.jsonl.xz", "wt", encoding="utf-8") as f:
                f.write("\n".join(rows) + "\n")
    return dest


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gen2")
    part = _part(tmp / "part0")
    # BUDGET_S as the GPU call uses it: nothing is left of 1 s, so the floor (MIN_MINUTES) is what it trains
    env = {**os.environ, "DEVICE": "cpu", "SIZES": "tiny", "BRING": "tiny", "BUDGET_S": "1", "MIN_MINUTES": "0.05",
           "GEN2": str(tmp / "gen2"), "OUT": str(tmp / "OUT"), "PYTHON": sys.executable}
    done = subprocess.run(["bash", "scripts/train_gen2_gpu.sh", "stage", str(part), "train"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "training for 0.05 minutes: budget 1 s" in done.stdout
    back = sorted(p.name for p in (tmp / "OUT").iterdir())
    assert back == ["logs.tar", "tiny.f16.part00", "tiny.meta.tar"], back
    with tarfile.open(tmp / "OUT" / "logs.tar") as tf:
        assert {"tiny/train.log", "tiny.out"} <= set(tf.getnames())
    # step 5 as the session runs it: join, keep under the state folder (no commit here)
    env5 = {**os.environ, "PYTHON": sys.executable, "KEEP": "tiny", "COMMIT": "0", "HOMEDIR": str(tmp / "home"),
            "STATE": str(tmp / "state")}
    done = subprocess.run(["bash", "scripts/gen2_home.sh", str(tmp / "OUT")], cwd=ROOT, env=env5,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"joined tiny; kept under {tmp / 'state'}: tiny and logs.tar" in done.stdout
    assert (tmp / "state" / "tiny" / "checkpoint" / "model.safetensors").read_bytes() == (
        tmp / "home" / "tiny" / "checkpoint" / "model.safetensors").read_bytes()
    assert (tmp / "state" / "logs.tar").is_file()
    (tmp / "empty").mkdir()
    nothing = subprocess.run(["bash", "scripts/gen2_home.sh", str(tmp / "empty")], cwd=ROOT, env=env5,
                             capture_output=True, text=True, timeout=60)
    assert nothing.returncode == 1 and "nothing came back" in nothing.stderr
    from engine.training import card

    model = tmp / "model"
    card.write_card(tmp / "home" / "tiny", model)
    (model / "serving.json").write_text('{"quantization": "int8"}\n')   # what ship_model.sh writes for int8
    return tmp, model


def test_the_run_comes_home_as_a_run_directory_whose_log_begins_with_what_it_read(shipped):
    tmp, _ = shipped
    home = tmp / "home" / "tiny"
    assert (home / "checkpoint" / "model.safetensors").is_file() and (home / "checkpoint" / "tokenizer.json").is_file()
    records = [json.loads(line) for line in (home / "train.log").read_text().splitlines()]
    assert records[0]["event"] == "data" and records[0]["root"] == "corpus"       # copied from the tokenizing step
    assert set(records[0]["languages"]) == set(SNIPPETS) and records[0]["vocab_size"] == 16384
    assert records[1]["event"] == "start" and records[-1]["event"] == "end"


def test_the_card_of_a_model_trained_from_scratch_on_the_corpus(shipped):
    from engine.training import card

    _, model = shipped
    text = (model / "MODEL_CARD.md").read_text()
    assert "This model read the training files of the corpus parts it was given" in text
    for lang in SNIPPETS:
        assert f"| {lang} | 40 | 4 |" in text                                    # training and held-out files read
    assert "Permissively licensed source code in Python, JavaScript, TypeScript, Go and Rust" in text
    assert "standard library of the interpreter" not in text                     # not the first generation's data
    assert "Continued on the code corpus" not in text and "scripts/train_gen2_gpu.sh" in text
    assert "Final validation loss (the code corpus's held-out files of every language)" in text
    assert "## How it runs\n\nWith float32 weights." in text                    # written before serving.json was
    assert "MB (f16 as stored, loaded as fp32)." in text                          # the float16 file that came home
    tmp, _ = shipped
    again = card.write_card(tmp / "home" / "tiny", model).read_text()          # as ship_model rewrites it at the end
    assert "With `int8` weights (`serving.json`" in again
    assert {"model.safetensors", "tokenizer.json", "config.json", "train.log", "loss.png"} <= {
        p.name for p in model.iterdir()}


def test_the_shipped_directory_loads_with_the_quantization_it_states_and_fills(shipped):
    from engine.backends import load_backend
    from engine.backends.loading import quantization_of

    _, model = shipped
    assert quantization_of(LoadConfig(model=str(model), device="cpu")) == "int8"
    backend = load_backend(LoadConfig(model=str(model), device="cpu", threads=1))
    try:
        assert backend.quantization == "int8"
    finally:
        backend.close()
    config = EngineConfig.of(model=str(model), threads=1, min_confidence=0.0)
    with EngineFiller(config) as engine:
        for lang, prompt, suffix in (("python", "def area(width, height):\n    ", "\n"),
                                     ("go", "func Area(width, height int) int {\n\t", "\n}\n")):
            fill = engine.fill(Task(task_id=lang, prompt=prompt, suffix=suffix, canonical_solution="", language=lang))
            assert fill.error == "" and fill.document.startswith(prompt) and fill.document.endswith(suffix)


def test_the_card_shows_the_sizes_tried_from_the_measured_frontier(shipped, tmp_path):
    """After the sizes are measured side by side (benchmarks.size_frontier), the card's "Sizes tried" section is
    their table and plot; before, it is the latency side measured on fresh weights."""
    from benchmarks import size_frontier
    from engine.training import card

    _, model = shipped
    before = card.sizes_section(tmp_path, results=tmp_path / "nothing")
    assert "Not measured yet" in before
    shipped_before = card.sizes_section(tmp_path)          # the committed fresh-weight latency results
    assert "| gen2 medium, fresh weights | int8 | 15.31M |" in shipped_before
    results = tmp_path / "results"
    assert size_frontier.main(["--model", f"tiny@int8={model}", "--limit", "5", "--n", "2", "--cold-runs", "1",
                               "--out", str(results / "size-frontier.json")]) == 0
    text = card.sizes_section(tmp_path, results=results)
    assert "| tiny@int8 | int8 | 1.15M |" in text and "![quality against latency](frontier.png)" in text
    assert (tmp_path / "frontier.png").is_file()


def test_float16_weights_at_home_fill_as_their_float32_copy(shipped, tmp_path):
    """The weights come home and ship in float16 (what the GPU sent: half the bytes of float32 in git); the engine
    loads them as float32, so a float32 copy of the same values fills exactly alike."""
    import shutil

    from safetensors.torch import load_file, save_file

    tmp, model = shipped
    weights = load_file(str(tmp / "home" / "tiny" / "checkpoint" / "model.safetensors"))
    assert {t.dtype for t in weights.values()} == {torch.float16}
    assert load_file(str(model / "model.safetensors")).keys() == weights.keys()
    wide = tmp_path / "float32"
    shutil.copytree(model, wide)
    (wide / "serving.json").unlink()
    save_file({k: v.float() for k, v in weights.items()}, str(wide / "model.safetensors"))
    assert (wide / "model.safetensors").stat().st_size > 1.9 * (model / "model.safetensors").stat().st_size
    fills = []
    for directory in (model, wide):
        config = EngineConfig.of(model=str(directory), quantization="none", threads=1, min_confidence=0.0)
        with EngineFiller(config) as engine:
            fills.append([engine.fill(Task(task_id=lang, prompt=text[:40], suffix=text[60:], canonical_solution="",
                                           language=lang)).document for lang, text in SNIPPETS.items()])
    assert fills[0] == fills[1] and all(fills[0])
