"""Workspace adaptation with low-rank adapters (engine/adapt/lora.py, peft): which layers are adapted, that training
moves the adapters only, that a published entry holds only the adapter, and that the masked backend merges it into
its base weights (the peft model's logits), takes it off bit for bit and refuses a bad one. A tiny random BERT
written at test time (as tests/test_any_checkpoint.py writes one) and the real embedded model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import BertForMaskedLM

from engine import Engine, EngineConfig
from engine.adapt import lora, store
from engine.adapt import run as adapt_run
from engine.adapt.run import AdaptConfig, Gate, adapt, token_stream, train
from engine.backends import load_backend
from engine.config import EMBEDDED_DIR, LoadConfig
from engine.requests import ModelLoadError
from tests.bert_checkpoint import write_tiny_bert
from tests.test_adapt import FUNC, make_workspace

torch.set_num_threads(1)
SAMPLE = "def handler_7(request, limit):\n    total = 0\n    return total + 7\n"


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    """A random BERT of ~0.5M parameters (two layers, hidden 128) and a WordPiece tokenizer, saved_pretrained."""
    return write_tiny_bert(tmp_path_factory.mktemp("tiny-bert-lora"), [FUNC.format(i=i) for i in range(20)] * 5,
                           hidden=128, layers=2, intermediate=512, max_positions=256)


def backend_of(model_dir: Path):
    return load_backend(LoadConfig(model=str(model_dir), device="cpu", dtype="float32", threads=1))


def logits(backend) -> torch.Tensor:
    """The fill path's own forward (``_logits_at``) at every position of a fixed canvas."""
    ids = torch.tensor(backend.tokenizer(SAMPLE)["input_ids"])
    return backend._logits_at(ids, torch.arange(len(ids)))


def fill(backend, before: str = "total + 7") -> str:
    """The engine's own cursor path (as the adapter measures with) on a hole in ``SAMPLE``."""
    from engine.backends.base import Control
    from engine.config import FillOptions
    from engine.requests import InfillRequest
    from engine.serve import serve

    at = SAMPLE.index(before)
    options = FillOptions(steps=4, validate=False, min_confidence=0.0)
    return serve(backend, options, InfillRequest(text=SAMPLE, offset=at, language="python"),
                 Control(lambda step: None)).text


def adapter_files(model_dir: Path, out: Path, seed: int = 1, rank: int = 4) -> tuple[Path, torch.Tensor]:
    """An adapter with random (non-zero) B published from a peft-wrapped model; that model's logits."""
    backend = backend_of(model_dir)
    lora.wrap(backend.model, rank, 2 * rank)
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in backend.model.named_parameters():
            if ".lora_B." in name:
                p.normal_(0, 0.05)
    out.mkdir(parents=True, exist_ok=True)
    lora.save_adapter(backend.model, out / store.ADAPTER)
    return out / store.ADAPTER, logits(backend)


# -- which layers, which method ----------------------------------------------------------------------------------
def test_the_adapted_layers_are_every_linear_of_the_layer_stack_and_nothing_else(bert_dir):
    bert = BertForMaskedLM.from_pretrained(str(bert_dir))
    names = lora.targets(bert)
    assert lora.layer_stack(bert) == "bert.encoder.layer" and len(names) == 2 * 6   # q k v o, intermediate, output
    linears = [n for n, m in bert.named_modules() if isinstance(m, nn.Linear)]
    assert set(linears) - set(names) == {"cls.predictions.transform.dense", "cls.predictions.decoder"}
    from transformers import AutoModelForMaskedLM
    ours = AutoModelForMaskedLM.from_pretrained(str(EMBEDDED_DIR), local_files_only=True)
    assert lora.layer_stack(ours) == "model.layers"
    assert {n.rsplit(".", 1)[-1] for n in lora.targets(ours)} == {"Wqkv", "Wo", "Wi"}
    assert not any("embeddings" in n or "head" in n or "decoder" in n for n in lora.targets(ours))


def test_auto_trains_the_embedded_model_fully_and_a_model_above_the_threshold_with_lora(bert_dir):
    from transformers import AutoModelForMaskedLM
    ours = AutoModelForMaskedLM.from_pretrained(str(EMBEDDED_DIR), local_files_only=True)
    assert lora.parameters(ours) < lora.AUTO_LORA_PARAMETERS and lora.choose(ours, "auto") == "full"
    bert = BertForMaskedLM.from_pretrained(str(bert_dir))
    assert lora.choose(bert, "auto") == "full"
    assert lora.choose(bert, "auto", threshold=lora.parameters(bert) - 1) == "lora"
    assert lora.choose(ours, "lora") == "lora" and lora.choose(bert, "full") == "full"
    with pytest.raises(ValueError, match="must be one of auto, full, lora"):
        lora.choose(bert, "qlora")


# -- training and merging ----------------------------------------------------------------------------------------
def test_lora_training_moves_only_the_adapters_and_the_merged_backend_gives_the_peft_models_logits(bert_dir, tmp_path):
    backend = backend_of(bert_dir)
    base = logits(backend)
    torch.manual_seed(0)   # the adapters' start and the batches: the same whatever ran before in this process
    targets = lora.wrap(backend.model, 4, 8)
    model = backend.model
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(".lora_A." in n or ".lora_B." in n for n in trainable)
    assert len(trainable) == 2 * len(targets)
    assert torch.equal(logits(backend), base)                              # B starts at zero: nothing changed yet
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    stream = token_stream(backend.tokenizer, [FUNC.format(i=i) for i in range(10)], 4 * 64)
    steps, _ = train(model, backend.tokenizer, stream,
                     AdaptConfig(max_steps=3, batch_size=2, seq_len=64, lr=1e-2, warmup_steps=1), Gate(),
                     lambda event: None)
    assert steps == 3
    changed = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    assert changed == trainable                                            # every adapter moved, nothing else
    peft_logits = logits(backend)
    assert (peft_logits - base).abs().max() > 1e-3
    peft_fill = fill(backend, " + 7")   # after a word, before a space: a fill of these few trained steps that ends
    assert peft_fill                    # in a letter is not offered before a word (it would run into it)

    lora.save_adapter(model, tmp_path / store.ADAPTER)
    meta = json.loads((tmp_path / store.ADAPTER_CONFIG).read_text())
    assert meta["format"] == lora.FORMAT and meta["rank"] == 4 and meta["scale"] == 2.0 and meta["targets"] == targets
    assert set(load_file(str(tmp_path / store.ADAPTER))) == {f"{t}.lora_{m}.weight" for t in targets for m in "AB"}

    fresh = backend_of(bert_dir)                                           # a server's backend: the plain checkpoint
    assert torch.equal(logits(fresh), base)
    fresh.load_weights(tmp_path / store.ADAPTER)
    merged = logits(fresh)
    assert torch.allclose(merged, peft_logits, atol=1e-4, rtol=0)
    assert fill(fresh, " + 7") == peft_fill
    assert not any("lora" in n for n, _ in fresh.model.named_parameters())  # merged, not wrapped
    fresh.load_weights(None)
    assert torch.equal(logits(fresh), base)                                # restored bit for bit


def test_another_adapter_replaces_the_merged_one_and_full_weights_still_load(bert_dir, tmp_path):
    first, first_logits = adapter_files(bert_dir, tmp_path / "a", seed=1)
    second, second_logits = adapter_files(bert_dir, tmp_path / "b", seed=2)
    backend = backend_of(bert_dir)
    base = logits(backend)
    backend.load_weights(first)
    assert torch.allclose(logits(backend), first_logits, atol=1e-4, rtol=0)
    backend.load_weights(second)                                           # not on top of the first
    assert torch.allclose(logits(backend), second_logits, atol=1e-4, rtol=0)
    backend.load_weights(bert_dir / "model.safetensors")                   # a full set: the first adapter off
    assert torch.equal(logits(backend), base)
    backend.load_weights(first)
    assert torch.allclose(logits(backend), first_logits, atol=1e-4, rtol=0)
    backend.load_weights(None)
    assert torch.equal(logits(backend), base)


def _rewrite(path: Path, tensors: dict | None = None, meta: dict | None = None) -> None:
    if tensors is not None:
        save_file(tensors, str(path))
    if meta is not None:
        (path.parent / store.ADAPTER_CONFIG).write_text(json.dumps(meta))


def test_a_bad_adapter_is_refused_clearly_and_the_weights_in_use_stay(bert_dir, tmp_path):
    good, good_logits = adapter_files(bert_dir, tmp_path / "good")
    tensors = load_file(str(good))
    meta = json.loads((good.parent / store.ADAPTER_CONFIG).read_text())
    first = meta["targets"][0]
    cases = {
        "do not fit a rank 4 adapter": ({**tensors, f"{first}.lora_A.weight": torch.zeros(4, 7)}, meta),
        "has no Linear layer 'bert.embeddings.word_embeddings'":
            ({**{k: v for k, v in tensors.items() if not k.startswith(first + ".")},
              "bert.embeddings.word_embeddings.lora_A.weight": tensors[f"{first}.lora_A.weight"],
              "bert.embeddings.word_embeddings.lora_B.weight": tensors[f"{first}.lora_B.weight"]},
             {**meta, "targets": ["bert.embeddings.word_embeddings"] + meta["targets"][1:]}),
        "has no Linear layer 'bert.encoder.layer.9.attention.self.query'":
            ({**{k.replace("layer.0.", "layer.9."): v for k, v in tensors.items()}},
             {**meta, "targets": [t.replace("layer.0.", "layer.9.") for t in meta["targets"]]}),
        "tensors do not match its targets": ({k: v for k, v in tensors.items() if k != f"{first}.lora_B.weight"},
                                             meta),
        "not a diffusion-lsp-lora description": (tensors, {**meta, "format": "other"}),
        "values that are not finite": ({**tensors, f"{first}.lora_B.weight": torch.full_like(
            tensors[f"{first}.lora_B.weight"], float("nan"))}, meta),
    }
    backend = backend_of(bert_dir)
    base = logits(backend)
    for i, (message, (bad_tensors, bad_meta)) in enumerate(cases.items()):
        bad = tmp_path / f"bad{i}" / store.ADAPTER
        bad.parent.mkdir()
        _rewrite(bad, bad_tensors, bad_meta)
        with pytest.raises(ModelLoadError, match=message):
            backend.load_weights(bad)
        assert torch.equal(logits(backend), base), message                 # the base weights untouched
    (tmp_path / "bad0" / store.ADAPTER_CONFIG).unlink()
    with pytest.raises(ModelLoadError, match="cannot read the adapter"):
        backend.load_weights(tmp_path / "bad0" / store.ADAPTER)
    backend.load_weights(good)                                             # with an adapter in use: it stays
    with pytest.raises(ModelLoadError):
        backend.load_weights(tmp_path / "bad1" / store.ADAPTER)
    assert torch.allclose(logits(backend), good_logits, atol=1e-4, rtol=0)
    backend.load_weights(None)
    assert torch.equal(logits(backend), base)


# -- the whole run: publish the adapter, the engine adopts it ----------------------------------------------------
def test_adapt_with_lora_publishes_only_a_small_adapter_that_the_engine_swaps_in(bert_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setattr(lora, "AUTO_LORA_PARAMETERS", 1000)               # "auto" takes this tiny model for large
    # A random model fills no held-out line either way, so the gate would never publish: open it for this run.
    monkeypatch.setattr(adapt_run, "improves", lambda before, after: True)
    ws = make_workspace(tmp_path / "ws")
    digest = store.model_digest(bert_dir)
    record = adapt(ws, LoadConfig(model=str(bert_dir)),
                   AdaptConfig(max_steps=2, holes=12, batch_size=2, seq_len=64, lora_rank=4, lora_alpha=8))
    assert record.method == "lora" and record.steps == 2 and record.accepted
    entry = store.entry_dir(ws, bert_dir)
    assert {p.name for p in entry.iterdir()} == {store.RECORD, store.ADAPTER, store.ADAPTER_CONFIG}
    assert store.read_record(entry).method == "lora"
    assert (entry / store.ADAPTER).stat().st_size * 10 < (bert_dir / "model.safetensors").stat().st_size
    assert json.loads((entry / store.ADAPTER_CONFIG).read_text())["rank"] == 4
    assert store.accepted_weights(entry) == entry / store.ADAPTER
    assert store.model_digest(bert_dir) == digest                          # the checkpoint itself untouched

    engine = Engine(EngineConfig.of(model=str(bert_dir), validate=False, steps=4, threads=1))
    try:
        engine.start().result(120)
        engine.swap_weights(store.accepted_weights(entry)).result(120)
        assert engine.stats()["adapted_weights"] == str(entry / store.ADAPTER)
        engine.swap_weights(None).result(120)
        assert engine.stats()["adapted_weights"] is None
    finally:
        engine.close()


def test_a_full_run_still_publishes_the_whole_model(bert_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setattr(adapt_run, "improves", lambda before, after: True)
    ws = make_workspace(tmp_path / "ws")
    record = adapt(ws, LoadConfig(model=str(bert_dir)),
                   AdaptConfig(max_steps=1, holes=12, batch_size=2, seq_len=64, method="full"))
    entry = store.entry_dir(ws, bert_dir)
    assert record.method == "full" and store.accepted_weights(entry) == entry / store.WEIGHTS
    assert not (entry / store.ADAPTER).exists()


def test_the_command_line_takes_the_method(bert_dir, tmp_path):
    import os
    import subprocess
    import sys

    ws = make_workspace(tmp_path / "ws")
    out = subprocess.run([sys.executable, "-m", "engine.adapt", str(ws), "--model", str(bert_dir), "--method",
                          "lora", "--lora-rank", "2", "--max-steps", "1", "--holes", "10", "--no-store",
                          "--priority", "normal"],
                         cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"), "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr
    done = json.loads(out.stdout.splitlines()[-1])
    assert done["event"] == "done" and done["method"] == "lora" and done["steps"] == 1


def test_the_embedded_modernbert_trains_adapters_and_merges_them_on_its_kv_cache_path(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    record = adapt(make_workspace(tmp_path / "ws"), LoadConfig(kv_cache=True),
                   AdaptConfig(max_steps=1, holes=10, batch_size=2, seq_len=128, method="lora"), store=False)
    assert record.method == "lora" and record.steps == 1 and record.after["holes"] == 10
    path, peft_logits = adapter_files(EMBEDDED_DIR, tmp_path / "adapter")
    backend = load_backend(LoadConfig(device="cpu", dtype="float32", threads=1, kv_cache=True))
    assert backend.kv_cache
    base = logits(backend)
    backend.load_weights(path)
    assert torch.allclose(logits(backend), peft_logits, atol=1e-4, rtol=0) and (peft_logits - base).abs().max() > 0.1
    assert path.stat().st_size * 10 < (EMBEDDED_DIR / "model.safetensors").stat().st_size
    backend.load_weights(None)
    assert torch.equal(logits(backend), base)


def test_int8_runs_int8_linear_layers_near_the_float_model_and_adapters_still_swap(tmp_path):
    """``quantization: int8`` on a masked model: the layer stack's attention and MLP input projections and the decoder
    run as dynamic int8 Linear layers, the MLP output projections and the head's dense layer stay float, and the float weights stay for adapters; at masked slots the int8 model predicts what the float one does (top-1
    agreement); an adapter merges into the float weights and is quantized with them; taking it off gives the int8
    base bit for bit."""
    from torch.ao.nn.quantized import dynamic as qdynamic

    from engine.backends.loading import int8_layers

    def masked(backend) -> torch.Tensor:
        """Logits at every third token of a longer canvas, masked (what the sampler reads)."""
        ids = torch.tensor(backend.tokenizer(SAMPLE * 4)["input_ids"])
        slots = torch.arange(2, len(ids), 3)
        ids[slots] = backend.mask_id
        return backend._logits_at(ids, slots)

    def agreement(a: torch.Tensor, b: torch.Tensor) -> float:
        """Top-1 agreement of the int8 logits ``a`` with the float ``b``; where they differ, the float model
        rates the int8 choice within one nat of its own (a near tie, not a different prediction)."""
        fa, fb = a.log_softmax(-1), b.log_softmax(-1)
        differ = fa.argmax(-1) != fb.argmax(-1)
        gap = fb.max(-1).values - fb.gather(1, fa.argmax(-1)[:, None])[:, 0]
        assert (gap[differ] < 1.0).all()
        return 1.0 - differ.float().mean().item()

    plain = backend_of(EMBEDDED_DIR)
    q = load_backend(LoadConfig(device="cpu", dtype="float32", threads=1, quantization="int8"))
    kinds = {n: type(m) for n, m in q.model.named_modules() if isinstance(m, (nn.Linear, qdynamic.Linear))}
    layers = len(q.model.model.layers)
    assert {n for n, k in kinds.items() if k is qdynamic.Linear} == int8_layers(plain.model)
    assert len(int8_layers(plain.model)) == 3 * layers + 1               # Wqkv, attention Wo, MLP Wi; the decoder
    assert {n for n, k in kinds.items() if k is nn.Linear} == \
        {f"model.layers.{i}.mlp.Wo" for i in range(layers)} | {"head.dense"}
    assert q.kv_cache and all(isinstance(m, nn.Linear) for n, m in q._weights.named_modules() if n in kinds)
    base = masked(q)
    assert len(base) >= 20 and agreement(base, masked(plain)) >= 0.9 and not torch.equal(base, masked(plain))
    path, _ = adapter_files(EMBEDDED_DIR, tmp_path / "adapter")
    plain.load_weights(path)
    q.load_weights(path)
    adapted = masked(q)
    assert agreement(adapted, masked(plain)) >= 0.9 and (adapted - base).abs().max() > 0.1
    q.load_weights(None)
    assert torch.equal(masked(q), base)
    assert fill(q)                                            # the engine's cursor path runs on it


def test_int8_picks_the_same_layers_of_a_bert(bert_dir):
    """The rule is the architecture's shape, not ModernBERT's names: in a BERT, the attention's query, key, value
    and output and the MLP's input (``intermediate``) of every layer, and the decoder; not the MLP's output or the
    prediction head's transform."""
    from engine.backends.loading import int8_layers

    model = backend_of(bert_dir).model
    picked = int8_layers(model)
    assert "cls.predictions.decoder" in picked and "cls.predictions.transform.dense" not in picked
    assert {n.split(".layer.")[1].split(".", 1)[1] for n in picked - {"cls.predictions.decoder"}} == {
        "attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
        "intermediate.dense"}
    assert len(picked) == 5 * model.config.num_hidden_layers + 1
    q = load_backend(LoadConfig(model=str(bert_dir), device="cpu", dtype="float32", threads=1, quantization="int8"))
    assert fill(q) is not None


@pytest.mark.parametrize("settings, says", [({"quantization": "fp8"}, "DiffusionGemma"),
                                            ({"quantization": "int8", "dtype": "bfloat16"}, "float32")])
def test_a_quantization_a_masked_model_cannot_take_is_a_clear_load_error(settings, says):
    with pytest.raises(ModelLoadError, match=says):
        load_backend(LoadConfig(device="cpu", threads=1, **settings))
    from engine.backends.loading import check_masked_quantization

    assert "CPU" in check_masked_quantization("int8", torch.device("cuda"), torch.float32)
    assert check_masked_quantization("int8", torch.device("cpu"), torch.float32) is None
    assert check_masked_quantization("none", torch.device("cuda"), torch.bfloat16) is None


def test_a_torch_without_int8_kernels_is_a_clear_load_error(monkeypatch):
    """Where torch has no int8 kernels (a build or CPU this cannot run here), quantizing raises inside torch: the
    load says so as a ModelLoadError naming the quantized engine, not a traceback from the engine thread."""
    import torch.ao.quantization as tq

    def no_kernels(*args, **kwargs):
        raise RuntimeError("Didn't find engine for operation quantized::linear_prepack NoQEngine")
    monkeypatch.setattr(tq, "quantize_dynamic", no_kernels)
    with pytest.raises(ModelLoadError, match="'int8' is not available here .*NoQEngine"):
        load_backend(LoadConfig(device="cpu", threads=1, quantization="int8"))


def test_auto_runs_the_quantization_the_model_directory_states_where_it_can(tmp_path, caplog):
    """``quantization: auto`` (the default): a model directory's serving.json says how it is meant to run (a model
    shipped for int8); a directory that says nothing runs as it is; where int8 cannot run (bfloat16) the stated int8
    is left aside and the log says why, while an explicit setting still wins; a broken serving.json fails the load."""
    import logging
    from dataclasses import replace

    from engine.backends.loading import quantization_of

    model = tmp_path / "model"
    model.mkdir()
    for f in EMBEDDED_DIR.iterdir():
        (model / f.name).symlink_to(f)
    config = LoadConfig(model=str(model), device="cpu", threads=1)
    assert LoadConfig().quantization == "auto" and not (EMBEDDED_DIR / "serving.json").exists()
    assert quantization_of(config) == "none" and load_backend(config).quantization == "none"
    (model / "serving.json").write_text('{"quantization": "int8"}')
    assert quantization_of(config) == "int8"
    backend = load_backend(config)
    assert backend.quantization == "int8" and backend.model is not backend._weights
    assert quantization_of(replace(config, quantization="none")) == "none"
    with caplog.at_level(logging.INFO, logger="engine.backends.loading"):
        assert load_backend(replace(config, dtype="bfloat16")).quantization == "none"
    assert "is meant to run with quantization int8; loading it without: quantization 'int8' quantizes float32" \
        in caplog.text
    with pytest.raises(ModelLoadError, match="float32"):       # asked for by name: still a clear error
        load_backend(replace(config, dtype="bfloat16", quantization="int8"))
    for text, says in (("{", "unreadable"), ("[1]", "unreadable"), ('{"quantization": "int9"}', "'int9'; it must be"),
                       ('{"quantization": "auto"}', "'auto'; it must be")):
        (model / "serving.json").write_text(text)
        with pytest.raises(ModelLoadError, match=says):
            load_backend(config)
