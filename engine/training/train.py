"""The training loop: tokenizer, token stream, model, resumable state, periodic export of a checkpoint."""

from __future__ import annotations

import json
import math
import random
import signal
import threading
import time
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


def prepare_data(cfg: TrainConfig, out: Path):
    """Tokenizer and token streams (library files first, then tests), built once per run directory
    and reused on resume; a stream from before the library/test split is rebuilt with the same tokenizer."""
    tok_dir, data_file = out / "tokenizer", out / "data.npz"
    if tok_dir.exists() and data_file.exists():
        tokenizer = PreTrainedTokenizerFast.from_pretrained(str(tok_dir))
        d = np.load(data_file)
        if "train_split" in d:
            return (tokenizer, TokenStream(d["train_ids"], d["train_ls"], int(d["train_split"]), cfg.p_library),
                    TokenStream(d["valid_ids"], d["valid_ls"]))
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
    np.savez(data_file, train_ids=train.ids, train_ls=train.line_start, train_split=train.split,
             valid_ids=valid.ids, valid_ls=valid.line_start)
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
    """Weighted masked-diffusion loss and the top-1 accuracy on masked tokens."""
    ids = torch.from_numpy(batch.input_ids)
    targets = torch.from_numpy(batch.targets)
    hidden = model.model(input_ids=ids).last_hidden_state           # (B, T, H)
    chosen = targets != -100                                         # (B, T)
    logits = model.decoder(model.head(hidden[chosen]))               # (N, V): only masked positions
    ce = F.cross_entropy(logits.float(), targets[chosen], reduction="none")  # (N,)
    row_weight = torch.from_numpy(batch.weights)[:, None].expand_as(chosen)[chosen]
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
    model.train()
    return {"val_diffusion": round(float(d_loss), 4), "val_line_hole": round(float(l_loss), 4),
            "val_line_acc": round(float(l_acc), 4)}


def use_bf16(precision: str) -> bool:
    if precision not in ("auto", "bf16", "fp32"):
        raise ValueError(f"precision must be auto, bf16 or fp32, not {precision!r}")
    if precision == "auto":
        return native_cpu_bf16()
    return precision == "bf16"


def _stop_on_signal() -> threading.Event:
    """SIGTERM / SIGINT end the run after the current step, with the state saved and a checkpoint
    exported as at the end of the budget (main thread only; elsewhere the budget alone ends it)."""
    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    return stop


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
    bf16 = use_bf16(cfg.precision)
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    tokenizer, train, valid = prepare_data(cfg, out)
    model = build_model(cfg, tokenizer)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.peak_lr, betas=(0.9, 0.98), weight_decay=0.01)
    rng = np.random.default_rng(cfg.seed)
    state_file = out / "state.pt"
    step, tokens, trained_s = 0, 0, 0.0
    if state_file.exists():
        state = torch.load(state_file, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        step, tokens, trained_s = state["step"], state["tokens"], state["trained_seconds"]
        rng.bit_generator.state = state["rng"]
        torch.set_rng_state(state["torch_rng"])
        log(out, {"event": "resume", "step": step, "tokens": tokens, "trained_seconds": round(trained_s), "bf16": bf16,
                  "config": asdict(cfg)})
    else:
        log(out, {"event": "start", "params": sum(p.numel() for p in model.parameters()), "bf16": bf16,
                  "config": asdict(cfg)})
    model.train()
    budget = cfg.minutes * 60
    t0 = last_ckpt = time.time()
    step_in_run, window = 0, []

    def save_state():
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step, "tokens": tokens,
                    "trained_seconds": trained_s + time.time() - t0, "rng": rng.bit_generator.state,
                    "torch_rng": torch.get_rng_state()}, state_file)

    stop = _stop_on_signal()
    while time.time() - t0 < budget and not stop.is_set():
        for group in opt.param_groups:
            group["lr"] = lr_at(cfg, step_in_run, (time.time() - t0) / budget)
        batch = make_batch(rng, train, cfg.batch_size, cfg.seq_len, tokenizer.pad_token_id,
                           tokenizer.mask_token_id, cfg.p_infill, cfg.max_holes)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss, acc = batch_loss(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step, step_in_run, tokens = step + 1, step_in_run + 1, tokens + batch.input_ids.size
        window.append((float(loss.detach()), float(acc)))
        if step % 25 == 0:
            l, a = np.mean(window, axis=0)
            window.clear()
            log(out, {"step": step, "tokens": tokens, "loss": round(float(l), 4), "acc": round(float(a), 4),
                      "lr": round(opt.param_groups[0]["lr"], 6), "trained_seconds": round(trained_s + time.time() - t0)})
        if time.time() - last_ckpt > cfg.checkpoint_minutes * 60:
            log(out, {"step": step, **validate(model, tokenizer, valid, cfg)})
            save_state()
            export(model, tokenizer, cfg, out, {"step": step, "tokens": tokens})
            last_ckpt = time.time()
    metrics = validate(model, tokenizer, valid, cfg)
    log(out, {"event": "stopped" if stop.is_set() else "end", "step": step, "tokens": tokens, **metrics})
    save_state()
    return export(model, tokenizer, cfg, out, {"step": step, "tokens": tokens,
                                                "trained_seconds": round(trained_s + time.time() - t0), **metrics})
