"""The training loop: tokenizer, token stream, model, resumable state, periodic export of a checkpoint."""

from __future__ import annotations

import json
import math
import platform
import random
import shutil
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from transformers import ModernBertConfig, ModernBertForMaskedLM, PreTrainedTokenizerFast

from ..backends.loading import native_cpu_bf16
from . import corpus as corpus_mod
from . import tokenizer as tok_mod
from .examples import Batch, TokenStream, line_hole_batch, make_batch
from .loader import Batches
from .report import cpu_label


class SettingError(ValueError):
    """A setting that does not fit the run (its stored data, its checkpoint, the machine): the command line
    says it in one line and exits with status 2; any other error keeps its traceback."""


@dataclass(frozen=True)
class TrainConfig:
    out: str
    minutes: float = 60.0
    seed: int = 1234
    threads: int = 1
    vocab_size: int = 4096
    hidden_size: int = 256
    layers: int = 6
    intermediate_size: int = 512
    heads: int = 4
    seq_len: int = 256
    batch_size: int = 24
    peak_lr: float = 1.5e-3
    warmup_steps: int = 200
    decay_fraction: float = 0.15
    p_infill: float = 0.5
    p_library: float = 0.0            # share of windows from library (non-test) files; 0 = uniform over all
    max_holes: int = 1                # infill rows carry 1..max_holes holes (extra ones are whole lines)
    precision: str = "auto"           # bf16: matmuls autocast to bfloat16, weights and loss fp32; fp32; auto:
                                      # bf16 where the CPU has native bf16 (AVX512-BF16/AMX), else fp32
    checkpoint_minutes: float = 10.0
    device: str = "auto"              # auto: cuda when torch sees a GPU, else cpu
    loader_workers: int = 0           # > 0: worker processes make batches ahead, batch n from a generator
                                      # seeded by (seed, n); 0: one generator in the training process
    init_from: str = ""               # a run directory without state.pt starts from this exported checkpoint:
                                      # its weights, tokenizer and step count, a fresh optimizer
    keep_best: bool = False           # keep the state with the lowest val_line_hole (validated at the start and
                                      # at each checkpoint) instead of the last one
    corpus: str = ""                  # a code corpus (engine.training.codecorpus / gen2data pack: JSONL files of
                                      # {id, text} per split and language) instead of the standard library
    tokenizer: str = ""               # with corpus: the tokenizer directory to use (gen2data tokenizer)
    mix_stdlib: float = 0.0           # with corpus: the standard library's training files go first in the
                                      # stream and this share of windows is drawn from them (0: corpus only)


def log(out: Path, record: dict) -> None:
    record = {"time": round(time.time(), 1), **record}
    with open(out / "train.log", "a") as f:
        f.write(json.dumps(record) + "\n")
    print(json.dumps(record), flush=True)


def _stream(tokenizer: PreTrainedTokenizerFast, files) -> TokenStream:
    eos = tokenizer.eos_token_id
    ends_line = np.array([tokenizer.decode([i]).endswith("\n") for i in range(len(tokenizer))])
    chunks = []
    for f in files:
        chunks.append(np.asarray(tokenizer(f.text, add_special_tokens=False)["input_ids"], np.int32))
        chunks.append(np.asarray([eos], np.int32))
    ids = np.concatenate(chunks)
    line_start = np.ones(len(ids), bool)
    line_start[1:] = ends_line[ids[:-1]] | (ids[:-1] == eos)
    return TokenStream(ids, line_start)


def _stream_texts(tokenizer: PreTrainedTokenizerFast, texts: list[str], batch: int = 2048) -> TokenStream:
    """As ``_stream``, encoding many files per call (the tokenizer's own threads share the work)."""
    eos = tokenizer.eos_token_id
    ends_line = np.array([tokenizer.decode([i]).endswith("\n") for i in range(len(tokenizer))])
    chunks = []
    for i in range(0, len(texts), batch):
        for ids in tokenizer(texts[i:i + batch], add_special_tokens=False)["input_ids"]:
            chunks.append(np.asarray(ids, np.int32))
            chunks.append(np.asarray([eos], np.int32))
    ids = np.concatenate(chunks) if chunks else np.zeros(0, np.int32)
    line_start = np.ones(len(ids), bool)
    line_start[1:] = ends_line[ids[:-1]] | (ids[:-1] == eos)
    return TokenStream(ids, line_start)


def corpus_files(corpus: Path, split: str, lang: str) -> list[Path]:
    """A split's files of one language: ``files/<split>/<lang>.jsonl`` as the build writes them, or the
    ``<split>.<lang>.NNN.jsonl.xz`` chunks the corpus travels in (in any folder below ``corpus``)."""
    found = sorted(corpus.glob(f"files/{split}/{lang}.jsonl"))
    found += sorted(corpus.rglob(f"{split}.{lang}.*.jsonl.xz"), key=lambda p: p.name)
    return found


def _read_texts(paths: list[Path]) -> list[str]:
    import lzma

    out = []
    for path in paths:
        opener = lzma.open if path.suffix == ".xz" else open
        with opener(path, "rt", encoding="utf-8") as f:
            out += [json.loads(line)["text"] for line in f if line.strip()]
    return out


def prepare_corpus_data(cfg: TrainConfig, out: Path):
    """Token streams of a code corpus with a given tokenizer: training files of every language in one
    stream (shuffled by file, seeded), validation files one part per language."""
    from .codecorpus import LANGUAGES

    tok_dir, data_file = out / "tokenizer", out / "data.npz"
    corpus = Path(cfg.corpus)
    if not data_file.exists():
        for split in ("train", "valid"):
            if not any(corpus_files(corpus, split, lang) for lang in LANGUAGES):
                raise SettingError(f"--corpus {corpus}: no {split} files there ({split}.LANGUAGE.NNN.jsonl.xz or "
                                   f"files/{split}/LANGUAGE.jsonl)")
    if not tok_dir.exists():
        if not cfg.tokenizer:
            raise SettingError("--corpus needs --tokenizer (the directory gen2data tokenizer saved)")
        PreTrainedTokenizerFast.from_pretrained(cfg.tokenizer, local_files_only=True).save_pretrained(str(tok_dir))
    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(tok_dir), local_files_only=True)
    if data_file.exists():
        d = np.load(data_file)
        parts = tuple((str(n), int(a), int(b)) for n, a, b in zip(d["valid_part_names"], d["valid_part_starts"],
                                                                   d["valid_part_ends"]))
        split = int(d["train_split"]) if "train_split" in d else 0
        if bool(split) != bool(cfg.mix_stdlib):
            raise SettingError(f"{data_file} was built {'with' if split else 'without'} the standard library mixed in;"
                             " use a new --out for a different --mix-stdlib")
        return (tokenizer, TokenStream(d["train_ids"].astype(np.int32), d["train_ls"], split, cfg.mix_stdlib),
                TokenStream(d["valid_ids"].astype(np.int32), d["valid_ls"], parts=parts))
    train_texts, per_lang, record = [], {}, {}
    for lang in LANGUAGES:
        t = _read_texts(corpus_files(corpus, "train", lang))
        v = _read_texts(corpus_files(corpus, "valid", lang))
        train_texts += t
        if v:
            per_lang[lang] = _stream_texts(tokenizer, v)
        record[lang] = {"train_files": len(t), "valid_files": len(v)}
    random.Random(cfg.seed).shuffle(train_texts)
    train = _stream_texts(tokenizer, train_texts)
    del train_texts
    if cfg.mix_stdlib:   # the standard library first, drawn from with probability mix_stdlib
        corp = corpus_mod.load_corpus()
        lib = _stream(tokenizer, corp.train)
        train = TokenStream(np.concatenate([lib.ids, train.ids]), np.concatenate([lib.line_start, train.line_start]),
                            len(lib.ids), cfg.mix_stdlib)
        per_lang["stdlib"] = _stream(tokenizer, corp.valid)
        record["stdlib"] = {"train_files": len(corp.train), "valid_files": len(corp.valid),
                            "train_tokens": int(len(lib.ids)), "share_of_windows": cfg.mix_stdlib}
    parts, pos = [], 0
    for lang, s in per_lang.items():
        parts.append((lang, pos, pos + len(s.ids)))
        pos += len(s.ids)
        record[lang]["valid_tokens"] = int(len(s.ids))
    valid = TokenStream(np.concatenate([s.ids for s in per_lang.values()]),
                        np.concatenate([s.line_start for s in per_lang.values()]), parts=tuple(parts))
    small = np.uint16 if len(tokenizer) <= 1 << 16 else np.int32
    np.savez(data_file, train_ids=train.ids.astype(small), train_ls=train.line_start, train_split=train.split,
             valid_ids=valid.ids.astype(small), valid_ls=valid.line_start,
             valid_part_names=np.array([p[0] for p in parts]), valid_part_starts=np.array([p[1] for p in parts]),
             valid_part_ends=np.array([p[2] for p in parts]))
    log(out, {"event": "data", "root": "corpus", "train_tokens": int(len(train.ids)), "valid_tokens": int(len(valid.ids)),
              "languages": record, "vocab_size": len(tokenizer)})
    return tokenizer, train, valid


def prepare_data(cfg: TrainConfig, out: Path):
    """Tokenizer and token streams (library files first, then tests), built once per run directory
    and reused on resume; a stream from before the library/test split is rebuilt with the same tokenizer."""
    if cfg.corpus:
        return prepare_corpus_data(cfg, out)
    tok_dir, data_file = out / "tokenizer", out / "data.npz"
    if tok_dir.exists() and data_file.exists():
        tokenizer = PreTrainedTokenizerFast.from_pretrained(str(tok_dir))
        d = np.load(data_file)
        if "train_split" in d:
            ids = lambda k: d[k].astype(np.int32)  # noqa: E731 (stored as uint16 when the vocabulary fits)
            return (tokenizer, TokenStream(ids("train_ids"), d["train_ls"], int(d["train_split"]), cfg.p_library),
                    TokenStream(ids("valid_ids"), d["valid_ls"]))
    corp = corpus_mod.load_corpus()
    if tok_dir.exists():
        tokenizer = PreTrainedTokenizerFast.from_pretrained(str(tok_dir))
    else:
        tokenizer = tok_mod.train_tokenizer((f.text for f in corp.train), cfg.vocab_size)
        tok_mod.save(tokenizer, tok_dir)
    library = [f for f in corp.train if not corpus_mod.is_test_file(f.path)]
    tests = [f for f in corp.train if corpus_mod.is_test_file(f.path)]
    lib_stream, test_stream = _stream(tokenizer, library), _stream(tokenizer, tests)
    train = TokenStream(np.concatenate([lib_stream.ids, test_stream.ids]),
                        np.concatenate([lib_stream.line_start, test_stream.line_start]), len(lib_stream.ids),
                        cfg.p_library)
    valid = _stream(tokenizer, corp.valid)
    small = np.uint16 if len(tokenizer) <= 1 << 16 else np.int32
    np.savez_compressed(data_file, train_ids=train.ids.astype(small), train_ls=train.line_start,
                        train_split=train.split, valid_ids=valid.ids.astype(small), valid_ls=valid.line_start)
    log(out, {"event": "data", "root": corp.root, "train_files": len(corp.train), "valid_files": len(corp.valid),
              "library_files": len(library), "test_files": len(tests), "library_tokens": int(train.split),
              "duplicates_dropped": corp.duplicates_dropped, "train_tokens": int(len(train.ids)),
              "valid_tokens": int(len(valid.ids)), "train_chars": sum(len(f.text) for f in corp.train)})
    return tokenizer, train, valid


def build_model(cfg: TrainConfig, tokenizer: PreTrainedTokenizerFast) -> ModernBertForMaskedLM:
    mcfg = ModernBertConfig(
        vocab_size=len(tokenizer), hidden_size=cfg.hidden_size, num_hidden_layers=cfg.layers,
        intermediate_size=cfg.intermediate_size, num_attention_heads=cfg.heads,
        max_position_embeddings=1024, global_attn_every_n_layers=3, local_attention=128,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, cls_token_id=tokenizer.bos_token_id,
        sep_token_id=tokenizer.eos_token_id, tie_word_embeddings=True,
        embedding_dropout=0.0, attention_dropout=0.0, mlp_dropout=0.0,
    )
    return ModernBertForMaskedLM(mcfg)


def batch_loss(model: ModernBertForMaskedLM, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """Weighted masked-diffusion loss and the top-1 accuracy on masked tokens (on the model's device)."""
    device = model.device
    ids = torch.from_numpy(batch.input_ids).to(device)
    targets = torch.from_numpy(batch.targets).to(device)
    hidden = model.model(input_ids=ids).last_hidden_state           # (B, T, H)
    chosen = targets != -100                                         # (B, T)
    logits = model.decoder(model.head(hidden[chosen]))               # (N, V): only masked positions
    ce = F.cross_entropy(logits.float(), targets[chosen], reduction="none")  # (N,)
    row_weight = torch.from_numpy(batch.weights).to(device)[:, None].expand_as(chosen)[chosen]
    loss = (ce * row_weight).sum() / len(batch.weights)
    acc = (logits.argmax(-1) == targets[chosen]).float().mean()
    return loss, acc


def lr_at(cfg: TrainConfig, step_in_run: int, frac_time: float) -> float:
    warm = min(1.0, (step_in_run + 1) / cfg.warmup_steps)
    start_decay = 1.0 - cfg.decay_fraction
    decay = 1.0 if frac_time < start_decay else max(0.1, 1.0 - 0.9 * (frac_time - start_decay) / cfg.decay_fraction)
    return cfg.peak_lr * warm * decay


@torch.no_grad()
def validate(model, tokenizer, valid: TokenStream, cfg: TrainConfig) -> dict:
    model.eval()
    rng = np.random.default_rng(0)  # the same rows every time
    diff = make_batch(rng, valid, 32, cfg.seq_len, tokenizer.pad_token_id, tokenizer.mask_token_id, p_infill=0.0)
    line = line_hole_batch(rng, valid, 32, cfg.seq_len, tokenizer.pad_token_id, tokenizer.mask_token_id)
    d_loss, _ = batch_loss(model, diff)
    l_loss, l_acc = batch_loss(model, line)
    metrics = {"val_diffusion": round(float(d_loss), 4), "val_line_hole": round(float(l_loss), 4),
               "val_line_acc": round(float(l_acc), 4)}
    for name, _, _ in valid.parts:   # one-line holes per language (the same rows every time)
        part = valid.part(name)
        if len(part.ids) > 2 * cfg.seq_len:
            try:
                rows = line_hole_batch(np.random.default_rng(1), part, 32, cfg.seq_len, tokenizer.pad_token_id,
                                       tokenizer.mask_token_id)
            except ValueError:
                continue
            p_loss, p_acc = batch_loss(model, rows)
            metrics[f"val_line_hole_{name}"] = round(float(p_loss), 4)
            metrics[f"val_line_acc_{name}"] = round(float(p_acc), 4)
    model.train()
    return metrics


def use_bf16(precision: str, device: str = "cpu") -> bool:
    if precision not in ("auto", "bf16", "fp32"):
        raise SettingError(f"precision must be auto, bf16 or fp32, not {precision!r}")
    if precision == "auto":
        return torch.cuda.is_bf16_supported() if device == "cuda" else native_cpu_bf16()
    return precision == "bf16"


def resolve_device(name: str) -> str:
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name not in ("cpu", "cuda"):
        raise SettingError(f"device must be auto, cpu or cuda, not {name!r}")
    if name == "cuda" and not torch.cuda.is_available():
        raise SettingError("device cuda asked for, but torch sees no GPU")
    return name


def hardware(device: str, threads: int) -> str:
    """What the run trains on, for the log and the model card."""
    if device == "cuda":
        return torch.cuda.get_device_name()
    return cpu_label(threads, platform.machine())


def init_tokenizer(src: Path, out: Path) -> None:
    """A run that starts from a checkpoint tokenizes with the checkpoint's tokenizer."""
    if not (out / "tokenizer").exists():
        PreTrainedTokenizerFast.from_pretrained(str(src), local_files_only=True).save_pretrained(str(out / "tokenizer"))


def prepare(cfg: TrainConfig) -> Path:
    """Only the run directory's tokenizer and token streams (``--data-only``): built where the corpus is,
    then carried to another machine that trains (the corpus is this interpreter's standard library)."""
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    if cfg.init_from:
        init_tokenizer(Path(cfg.init_from), out)
    prepare_data(cfg, out)
    return out / "data.npz"


def load_init(cfg: TrainConfig, out: Path) -> tuple[ModernBertForMaskedLM, dict]:
    """The weights and training.json of an exported checkpoint; the run directory gets its tokenizer."""
    src = Path(cfg.init_from)
    if not (src / "model.safetensors").is_file():
        raise SettingError(f"--init-from {src}: no model.safetensors there")
    model = ModernBertForMaskedLM.from_pretrained(str(src), local_files_only=True)
    mc = model.config
    want = (cfg.hidden_size, cfg.layers, cfg.intermediate_size, cfg.heads)
    got = (mc.hidden_size, mc.num_hidden_layers, mc.intermediate_size, mc.num_attention_heads)
    if want != got:
        raise SettingError(f"--init-from {src}: its shape (hidden, layers, intermediate, heads) {got} is not this "
                         f"run's {want}")
    init_tokenizer(src, out)
    # the model's history goes on in this run's log (the card reads every stage from it): the log shipped
    # beside an exported model, or that of the run whose checkpoint folder this is
    history = next((f for f in (src / "train.log", src.parent / "train.log")
                    if f.is_file() and (f.parent == src or src.name == "checkpoint")), None)
    if history is not None and not (out / "train.log").exists():
        shutil.copyfile(history, out / "train.log")
    meta_file = src / "training.json"
    meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
    return model.float(), meta


@contextmanager
def _stop_on_signal():
    """SIGTERM / SIGINT end the run after the current step, with the state saved and a checkpoint
    exported as at the end of the budget (main thread only; elsewhere the budget alone ends it).
    The previous handlers come back when the run is over."""
    stop = threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda *_: stop.set())
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def export(model, tokenizer, cfg: TrainConfig, out: Path, meta: dict) -> Path:
    ckpt = out / "checkpoint"
    ckpt.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(ckpt), safe_serialization=True)
    tokenizer.save_pretrained(str(ckpt))
    (ckpt / "training.json").write_text(json.dumps({"train_config": asdict(cfg), **meta}, indent=2))
    return ckpt


def run(cfg: TrainConfig) -> Path:
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(cfg.threads)
    device = resolve_device(cfg.device)
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    state_file = out / "state.pt"
    init = load_init(cfg, out) if cfg.init_from and not state_file.exists() else None
    tokenizer, train, valid = prepare_data(cfg, out)
    rng = np.random.default_rng(cfg.seed)
    step, tokens, trained_s = 0, 0, 0.0
    state = torch.load(state_file, weights_only=True, map_location="cpu") if state_file.exists() else None
    if state is not None:
        step, tokens, trained_s = state["step"], state["tokens"], state["trained_seconds"]
        rng.bit_generator.state = state["rng"]
        torch.set_rng_state(state["torch_rng"])
    elif init is not None:
        step, tokens = init[1].get("step", 0), init[1].get("tokens", 0)
        trained_s = float(init[1].get("trained_seconds", 0))
    # Worker processes are forked before the GPU is touched (a forked child must not inherit CUDA state).
    batches = Batches(train, cfg, tokenizer.pad_token_id, tokenizer.mask_token_id, rng, step)
    bf16 = use_bf16(cfg.precision, device)
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    model = init[0] if init is not None else build_model(cfg, tokenizer)
    if state is not None:
        model.load_state_dict(state["model"])
    model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.peak_lr, betas=(0.9, 0.98), weight_decay=0.01)
    if state is not None:
        opt.load_state_dict(state["optimizer"])
    where = {"bf16": bf16, "hardware": hardware(device, cfg.threads), "config": asdict(cfg)}
    if state is not None:
        log(out, {"event": "resume", "step": step, "tokens": tokens, "trained_seconds": round(trained_s), **where})
    elif init is not None:
        log(out, {"event": "resume", "step": step, "tokens": tokens, "trained_seconds": round(trained_s),
                  "from_checkpoint": cfg.init_from, "fresh_optimizer": True, **where})
    else:
        log(out, {"event": "start", "params": sum(p.numel() for p in model.parameters()), **where})
    model.train()
    budget = cfg.minutes * 60
    t0 = last_ckpt = time.time()
    step_in_run, window = 0, []

    def save_state():
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step, "tokens": tokens,
                    "trained_seconds": trained_s + time.time() - t0, "rng": batches.rng.bit_generator.state,
                    "torch_rng": torch.get_rng_state()}, state_file)

    best = {"val_line_hole": math.inf}

    def checkpoint(metrics: dict) -> None:
        """Save the state and export a checkpoint, unless keep_best and an earlier state validated better."""
        if cfg.keep_best and metrics["val_line_hole"] >= best["val_line_hole"]:
            return
        best.update(metrics, step=step, tokens=tokens)
        save_state()
        export(model, tokenizer, cfg, out, {"step": step, "tokens": tokens,
                                            "trained_seconds": round(trained_s + time.time() - t0), **metrics})

    if cfg.keep_best:  # the starting point is the first candidate
        metrics = validate(model, tokenizer, valid, cfg)
        log(out, {"step": step, **metrics})
        checkpoint(metrics)
    with _stop_on_signal() as stop:
        autocast = torch.autocast(device, dtype=torch.bfloat16, enabled=bf16)
        try:
            while time.time() - t0 < budget and not stop.is_set():
                for group in opt.param_groups:
                    group["lr"] = lr_at(cfg, step_in_run, (time.time() - t0) / budget)
                batch = batches.next()
                with autocast:
                    loss, acc = batch_loss(model, batch)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                step, step_in_run, tokens = step + 1, step_in_run + 1, tokens + batch.input_ids.size
                window.append(torch.stack([loss.detach(), acc]))
                if step % 25 == 0:
                    l, a = torch.stack(window).mean(0).tolist()
                    window.clear()
                    log(out, {"step": step, "tokens": tokens, "loss": round(l, 4), "acc": round(a, 4),
                              "lr": round(opt.param_groups[0]["lr"], 6), "trained_seconds": round(trained_s + time.time() - t0)})
                if time.time() - last_ckpt > cfg.checkpoint_minutes * 60:
                    metrics = validate(model, tokenizer, valid, cfg)
                    log(out, {"step": step, **metrics})
                    checkpoint(metrics)
                    last_ckpt = time.time()
        finally:
            batches.close()
        metrics = validate(model, tokenizer, valid, cfg)
        ended = "stopped" if stop.is_set() else "end"
        if cfg.keep_best and metrics["val_line_hole"] >= best["val_line_hole"]:
            # The end event names the state that was kept: the next resume starts from it.
            log(out, {"step": step, **metrics})
            log(out, {"event": ended, "step": best["step"], "tokens": best["tokens"], "kept_best_of": step,
                      **{k: v for k, v in best.items() if k.startswith("val_")}})
            return out / "checkpoint"
        log(out, {"event": ended, "step": step, "tokens": tokens, **metrics})
        checkpoint(metrics)  # always kept here: plain runs keep the last state, keep_best runs improved on the best
        return out / "checkpoint"
