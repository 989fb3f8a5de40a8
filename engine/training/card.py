"""Ship a trained run as the embedded model: copy the checkpoint, plot the loss, write the model card.

``python -m engine.training.card runs/embedded`` (figures in the card come from the run's train.log
and from benchmarks/results/*.json; nothing is typed by hand).
"""

from __future__ import annotations

import hashlib
import json
import lzma
import platform
import shutil
import sys
from pathlib import Path

from ..config import EMBEDDED_DIR
from .report import plot, read_log, runs, summary

_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "training.json")
_RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def _digest(path: Path) -> str:
    """The digest benchmarks record for the weights they measured (sha256, first 16 hex digits)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def _quality_rows(digest: str | None = None) -> list[str]:
    """Benchmark rows of the embedded model; with a digest, only those that measured exactly these weights."""
    rows = []
    for path in sorted(_RESULTS.glob("infill-*.json")):
        if path.stem.endswith("-before"):   # the same benchmark before a change to the engine: the README shows both
            continue
        r = json.loads(path.read_text())
        model = r.get("model") or {}
        if model.get("model") != "embedded" or (digest and model.get("digest") != digest):
            continue
        pct = lambda v: "n/a" if v is None else f"{100 * v:.1f}%"  # noqa: E731
        lat = r.get("latency_ms", {})
        rows.append(f"| {r.get('dataset', path.stem)} | {r['n']} | {pct(r.get('pass_at_1'))} | {pct(r.get('exact_match'))} "
                    f"| {pct(r.get('syntax_valid'))} | {pct(r.get('syntax_valid_offered'))} ({r.get('offered', 'n/a')} offered, "
                    f"{r.get('rejected_candidates', 'n/a')} rejected) | {lat.get('p50', 'n/a')} / {lat.get('p95', 'n/a')} "
                    f"| `{r.get('command', '')}` |")
    return rows


def _per_language_rows(digest: str) -> str:
    """Per-language figures of the code-lines set (held-out corpus files, reported only), when measured."""
    path = _RESULTS / "infill-code-lines.json"
    if not path.is_file():
        return ""
    r = json.loads(path.read_text())
    if (r.get("model") or {}).get("digest") != digest or not r.get("languages"):
        return ""
    rows = [f"| {lang} | {v['n']} | {100 * v['exact_match']:.1f}% | {v['offered']} | {100 * v['empty']:.1f}% |"
            for lang, v in sorted(r["languages"].items())]
    return ("\n\nThe `code-lines` row per language (one-line holes of the code corpus's held-out files, the default "
            "bar; empty: no fill offered):\n\n| language | holes | exact match | offered | empty |\n|---|---|---|---|---|\n"
            + "\n".join(rows))


def _targets(digest: str | None = None) -> str:
    """The model issue's targets against the default single-line run of these weights, met or not."""
    path = _RESULTS / "infill-single-line.json"
    if not path.is_file():
        return "not measured yet"
    r = json.loads(path.read_text())
    if digest and (r.get("model") or {}).get("digest") != digest:
        return "not measured for these weights yet"
    p, v = r.get("pass_at_1") or 0.0, r.get("syntax_valid_offered") or 0.0
    return (f"pass@1 {100 * p:.1f}% against >= 10% ({'met' if p >= 0.10 else 'NOT met'}), offered fills that parse "
            f"{100 * v:.1f}% against >= 95% ({'met' if v >= 0.95 else 'NOT met'})")


def _run_rows(records: list[dict]) -> list[str]:
    def cell(v):
        return "not logged" if v is None else v

    def note(r):
        parts = ["fresh optimizer from the exported checkpoint"] if r["fresh_optimizer"] else []
        if r["kept_best_of"]:
            parts.append(f"trained to step {r['kept_best_of']:,}, kept the state that validated best")
        return "; ".join(parts)
    return [f"| {r['from_step']:,}-{r['to_step']:,} | {_data_label(r)} | {r['tokens_m']}M | {r['minutes']} | {r['hardware']} "
            f"| {r['batch_size']} | {r['peak_lr']:g} "
            f"| {cell(r['p_infill'])} | {_library_share(r)} "
            f"| {1 if r['max_holes'] == 1 else '1-' + str(r['max_holes'])} | {'yes' if r['bf16'] else 'no'} | {note(r)} |"
            for r in runs(records) if r["to_step"] > r["from_step"]]


def _hardware_time(records: list[dict]) -> str:
    """Training time per kind of hardware, e.g. '4.3 hours on a 2-core x86-64 CPU and 9.9 minutes on one NVIDIA H200'."""
    cpu = sum(r["minutes"] for r in runs(records) if r["hardware"].startswith("CPU"))
    gpus: dict[str, float] = {}
    for r in runs(records):
        if not r["hardware"].startswith("CPU"):
            gpus[r["hardware"]] = gpus.get(r["hardware"], 0.0) + r["minutes"]
    parts = [f"{cpu / 60:.2f} hours on a 2-core x86-64 CPU"] if cpu else []
    parts += [f"{m:.1f} minutes on one {name}" for name, m in gpus.items()]
    return " and ".join(parts) or "no time"


GEN2_DATA = Path(__file__).resolve().parent / "gen2" / "data.json"
GEN2_MANIFEST = GEN2_DATA.parent / "corpus-manifest.jsonl.xz"
_ROOT = Path(__file__).resolve().parents[2]


def _library_share(run: dict) -> str:
    """The stdlib's library (non-test) share of a run's rows; a code corpus has no such split."""
    if run.get("corpus"):
        return "n/a"
    return "not logged" if run["p_library"] is None else str(run["p_library"] or "uniform")


def _data_label(run: dict) -> str:
    if not run.get("corpus"):
        return "stdlib"
    mix = f", stdlib in {run['mix_stdlib']:.0%} of windows" if run.get("mix_stdlib") else ""
    return f"code corpus `{run['corpus']}`{mix}"   # as the run was given it: a travel part or a built corpus


def part_totals(corpus: Path, manifest: Path = GEN2_MANIFEST) -> dict:
    """The training files a run read from a code corpus (a built corpus or a travel part), per language and
    per licence, joined with the corpus manifest by id: files, bytes and tokens (the corpus tokenizer's)."""
    from .train import corpus_files

    index = {}
    with lzma.open(manifest, "rt", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            index[f"{r['ecosystem']}:{r['package']}/{r['path']}"] = r
    totals: dict = {"files": 0, "languages": {}, "licences": {}, "not_in_manifest": 0}
    for lang in sorted({r["language"] for r in index.values()}):
        for path in corpus_files(corpus, "train", lang):
            with (lzma.open if path.suffix == ".xz" else open)(path, "rt", encoding="utf-8") as f:
                for line in f:
                    if not line.strip():
                        continue
                    r = index.get(json.loads(line)["id"])
                    if r is None:
                        totals["not_in_manifest"] += 1
                        continue
                    totals["files"] += 1
                    for group, name in (("languages", r["language"]), ("licences", r["licence"])):
                        t = totals[group].setdefault(name, {"files": 0, "bytes": 0, "tokens": 0})
                        t["files"] += 1
                        t["bytes"] += r["bytes"]
                        t["tokens"] += r["tokens"]
    return totals


def continued_section(records: list[dict], root: Path = _ROOT, manifest: Path = GEN2_MANIFEST) -> str:
    """The data of the runs that continued on a code corpus: which part, how much of each language and
    licence, how many tokens with the model's own tokenizer; empty when every run read the stdlib."""
    corpus_runs = [r for r in runs(records) if r["corpus"] and r["to_step"] > r["from_step"]]
    if not corpus_runs or from_scratch(records):
        return ""
    data = [r for r in records if r.get("event") == "data" and r.get("root") == "corpus"][-1]
    lib = data["languages"].get("stdlib", {}).get("train_tokens", 0)   # the stdlib mixed in (--mix-stdlib)
    corpus_tokens = data["train_tokens"] - lib
    seen = sum(r["tokens_m"] * (1 - r["mix_stdlib"]) for r in corpus_runs) * 1e6     # of the corpus itself
    lib_seen = sum(r["tokens_m"] * r["mix_stdlib"] for r in corpus_runs) * 1e6
    shares = ", ".join(sorted({f"{r['mix_stdlib']:.0%}" for r in corpus_runs if r["mix_stdlib"]}))
    mixed = "" if not lib_seen else (
        f"\nThe standard library's training files stayed in the mix ({lib / 1e6:,.1f}M tokens, {shares} of the "
        f"windows, {lib_seen / 1e6:,.1f}M tokens seen), so that its Python was not forgotten.")
    sections, read = [], []
    for corpus in dict.fromkeys(r["corpus"] for r in corpus_runs):
        path = Path(corpus) if Path(corpus).is_absolute() else root / corpus
        if not path.exists():
            raise FileNotFoundError(f"{path}: the corpus part the run read is needed to count its files")
        t = part_totals(path, manifest)
        if t["not_in_manifest"]:
            raise ValueError(f"{path}: {t['not_in_manifest']} training files are not in {manifest.name}")
        read.append(f"`{corpus}` (" + ("the whole built corpus, every language" if (path / "files" / "train").is_dir()
                                       else "a part `gen2data pack` writes; the first ones mix every language") + ")")

        def rows(group: dict) -> str:
            return "\n".join(f"| {name} | {v['files']:,} | {v['bytes'] / 1e6:,.0f} MB | {v['tokens'] / 1e6:,.1f}M |"
                             for name, v in sorted(group.items(), key=lambda kv: -kv[1]["bytes"]))
        sections.append(f"""| language | files | size | tokens (corpus tokenizer) |
|---|---|---|---|
{rows(t['languages'])}

| licence | files | size | tokens (corpus tokenizer) |
|---|---|---|---|
{rows(t['licences'])}""")
    valid = ", ".join(f"{lang} {v['valid_files']:,} files" for lang, v in data["languages"].items())
    return f"""### Continued on the code corpus (steps {corpus_runs[0]['from_step']:,}-{corpus_runs[-1]['to_step']:,})

Then the model went on training on the second-generation code corpus
(`engine/training/gen2/DATA_CARD.md`: permissive licences only, fetched by package name, exact and near
duplicates removed, HumanEval kept out; every file with its package, version, licence and sha256 in
`corpus-manifest.jsonl.xz`): the training files of {', '.join(read)}, {t['files']:,} files, {corpus_tokens / 1e6:,.1f}M
tokens with this model's tokenizer, of which it saw {seen / 1e6:,.1f}M ({seen / corpus_tokens:.2f} passes).{mixed}
The tokenizer stays the stdlib one: byte-level, so every language round-trips exactly, in more tokens.
Validation from then on: the corpus's held-out files ({valid}).

{chr(10).join(sections)}"""


def data_section(data: dict) -> str:
    """The data section for a model trained on the code corpus (``gen2data count``'s data.json): totals
    per language, per licence and per source, what was kept out and why."""
    def m(v: int) -> str:
        return f"{v / 1e6:,.1f}M"

    def rows(group: dict) -> str:
        return "\n".join(f"| {name} | {t['files']:,} | {m(t.get('train_tokens', 0))} | {m(t.get('valid_tokens', 0))} "
                         f"| {t['bytes'] / 1e6:,.0f} MB |" for name, t in sorted(
                             group.items(), key=lambda kv: -kv[1].get("train_tokens", 0)))
    dropped = ", ".join(f"{k} {v:,}" for k, v in sorted(data["dropped"].items(), key=lambda kv: -kv[1]))
    fetched = data["packages_fetched"]
    return f"""Permissively licensed source code in Python, JavaScript, TypeScript, Go and Rust from {fetched} packages
named in `engine/training/sources/packages.toml` and fetched by name with the ordinary clients (pip, npm,
apt-get; versions in `sources/lock.tsv`), {data['packages_with_files']} of which gave files that passed every filter.
{data['files']:,} files, {m(data['train_tokens'])} training tokens and {m(data['valid_tokens'])} held-out tokens
(2.5% of files per language by path hash) with the {data['vocab_size']:,}-entry tokenizer
({data.get('tokens_are', 'counted')}), after exact
(sha256 of normalised text) and near-duplicate (MinHash over 5-token shingles, Jaccard >= 0.85) removal.
Every file is listed with its package, version, licence, path, sha256 and tokens in
`corpus-manifest.jsonl.xz`. Rebuild: `bash scripts/build_corpus.sh`.

| language | files | training tokens | held-out tokens | size |
|---|---|---|---|---|
{rows(data['languages'])}

| licence | files | training tokens | held-out tokens | size |
|---|---|---|---|---|
{rows(data['licences'])}

| source | files | training tokens | held-out tokens | size |
|---|---|---|---|---|
{rows(data['ecosystems'])}

Kept out, in files (`engine/training/codecorpus.py`): {dropped}. Licences accepted: MIT, BSD-2/3-Clause,
0BSD, Apache-2.0, ISC, PSF-2.0, Unlicense, Zlib, BSL-1.0, CC0-1.0, the Unicode data licences; weak and
strong copyleft (MPL, LGPL, GPL, AGPL, EPL), other Creative Commons licences and unknown licences are
kept out (`engine/training/licences.py`). HumanEval is kept out in any form: packages named like it
and any file holding two lines of its prompts or solutions."""


def write_data_card(data_json: Path = GEN2_DATA, target: Path | None = None) -> Path:
    """``DATA_CARD.md`` beside data.json: the data section on its own, until a model trained on it ships."""
    data = json.loads(data_json.read_text())
    target = target or data_json.parent / "DATA_CARD.md"
    target.write_text("# The code corpus of the second-generation embedded model\n\n"
                      "Generated by `python -m engine.training.card --data-card` from `data.json`.\n\n"
                      + data_section(data) + "\n")
    return target


def from_scratch(records: list[dict]) -> bool:
    """Whether the model was trained from its first step on the code corpus (the second generation), not first on
    the standard library and then continued."""
    first = next((r for r in records if r.get("event") == "data"), {})
    return first.get("root") == "corpus"


def _read_data(records: list[dict], s: dict) -> str:
    """What a model trained from scratch on the corpus read: the training files of the parts it was given, per
    language, and how many tokens it saw of them."""
    data = next(r for r in records if r.get("event") == "data")
    langs = data.get("languages", {})
    rows = "\n".join(f"| {lang} | {v.get('train_files', 0):,} | {v.get('valid_files', 0):,} | "
                     f"{v.get('valid_tokens', 0) / 1e6:,.2f}M |" for lang, v in langs.items())
    seen = s["tokens_seen"]
    passes = seen / data["train_tokens"] if data.get("train_tokens") else 0.0
    return f"""This model read the training files of the corpus parts it was given (`gen2data pack` writes the parts; the
first ones mix every language): {data['train_tokens'] / 1e6:,.1f}M training tokens, of which it saw {seen / 1e6:,.1f}M
({passes:.2f} passes), and validated on the held-out files of the same parts:

| language | training files read | held-out files | held-out tokens |
|---|---|---|---|
{rows}"""


def _stdlib_data(records: list[dict], s: dict) -> str:
    return f"""The Python standard library of the interpreter that ran the training (`{next((r['root'] for r in records if r.get('event') == 'data'), '?').split('/lib/')[-1]}`,
CPython {platform.python_version()}): every `*.py` including tests, minus `encodings/` tables, `idlelib`,
`turtledemo`, deliberately broken test inputs and files over 300 KB; exact duplicates dropped
({s['duplicates_dropped']}). {s['train_files']} files ({s['train_tokens']:,} tokens) for training,
{s['valid_files']} files ({s['valid_tokens']:,} tokens, 2.5% chosen by path hash) held out for
validation. Nothing else: HumanEval and all other code stay unseen for evaluation."""


def _resume_note(continued: bool, scratch: bool = False) -> str:
    if scratch:
        return ("Training goes on from these weights with a fresh optimizer (`--init-from` this run's `checkpoint`, on "
                "the CPU or a later GPU: `engine/training/gen2/README.md`).")
    if continued:
        return ("Training goes on from the shipped weights with a fresh optimizer (`bash scripts/resume_training.sh`, "
                "on the code corpus part it last read); the second-generation models train on a GPU "
                "(`engine/training/gen2/README.md`).")
    return ("Training resumes from `training-state/` (`bash scripts/resume_training.sh`, or `scripts/train_on_gpu.sh` "
            "on a GPU).")


def _per_language(v: dict) -> str:
    langs = [k.removeprefix("val_line_hole_") for k in v if k.startswith("val_line_hole_")]
    if not langs:
        return ""
    return "; one masked line per language: " + ", ".join(f"{lang} {v[f'val_line_hole_{lang}']}" for lang in langs)


def _limits(s: dict, stdlib_seen: float, continued: bool, params: int | None = None,
            scratch: bool = False) -> str:
    if scratch:
        size = f"{params / 1e6:.1f}M parameters" if params else "Small"
        return f"""- {size}, trained on {s['tokens_seen'] / 1e6:,.0f}M tokens of permissively licensed code in five
  languages: it writes common idioms of the libraries in its corpus, not general programming, and its fills
  are often wrong. The figures above say how often, per language; the confidence bar withholds the fills
  it is least sure of.
- Languages outside Python, JavaScript, TypeScript, Go and Rust get plain guesses."""
    stdlib = (f"{s['train_tokens'] / 1e6:.1f}M tokens of the standard library, each seen about "
              f"{stdlib_seen / s['train_tokens']:.0f} times")
    if not continued:
        return f"""- Tiny, and trained on one small corpus ({stdlib}): it knows common Python idioms of the standard library, not
  general programming; fills are often wrong and sometimes repetitive. Treat it as a demonstration of
  the experience, and point the `model` setting at a real checkpoint for useful suggestions.
- Python only in its training data; other languages get plain guesses."""
    return f"""- Tiny (5M parameters), and trained mostly on one small corpus ({stdlib}), then on a
  part of the code corpus seen well under once: it knows common Python idioms and the surface of
  JavaScript, TypeScript, Go and Rust, not general programming; fills are often wrong and sometimes
  repetitive. Treat it as a demonstration of the experience, and point the `model` setting at a real
  checkpoint for useful suggestions.
- Its tokenizer was trained on Python: other languages take more tokens for the same text, so less of their
  code fits the context window."""


def sizes_section(target: Path, results: Path = _RESULTS) -> str:
    """The sizes tried for a second-generation model: the trained frontier (``benchmarks.size_frontier``, its plot
    copied beside the card) when it was measured, else the latency side measured on fresh weights."""
    path = results / "size-frontier.json"
    if path.is_file():
        r = json.loads(path.read_text())
        if (results / "size-frontier.png").is_file():
            shutil.copy2(results / "size-frontier.png", target / "frontier.png")
        rows = "\n".join(
            f"| {name} | {row['quantization']} | {row['parameters'] / 1e6:.2f}M | {row['model_mb']} | "
            f"{100 * row['quality']['exact_match']:.1f}% | {row['latency']['warm_ms']['p50']} | "
            f"{row['latency']['warm_ms']['p95']} | {'yes' if row['within_bar'] else 'no'} |"
            for name, row in r["rows"].items())
        return f"""Trained on the same data and measured side by side (`{r['command']}`): exact match of the chosen fill on
{r['rows'][next(iter(r['rows']))]['quality']['n']} development holes ({r['quality_set']}, held-out corpus files, no
bar) and warm single-line fills through the LSP on one CPU thread. The issue ships the largest model within
p50 <= 200 ms and p95 <= 400 ms: {r.get('largest_within_bar') or 'none of them'}.

| model | weights | parameters | file MB | exact | p50 ms | p95 ms | within the bar |
|---|---|--:|--:|--:|--:|--:|---|
{rows}

![quality against latency](frontier.png)"""
    fresh = sorted((json.loads(p.read_text()) for p in results.glob("frontier-latency*.json")),
                   key=lambda r: (r.get("quantization", "none") != "none", r.get("created", "")))   # float32 first
    if not fresh:
        return "Not measured yet (`python -m benchmarks.size_frontier`)."
    rows = "\n".join(f"| {name} | {r.get('quantization', 'none')} | {row['parameters'] / 1e6:.2f}M | "
                     f"{row['latency']['warm_ms']['p50']} | {row['latency']['warm_ms']['p95']} | "
                     f"{r.get('created', '?')[:16].replace('T', ' ')}, {r.get('machine', {}).get('cpu', '?')} |"
                     for r in fresh for name, row in r["rows"].items() if name.startswith("gen2"))
    return f"""The trained sizes are not measured side by side yet (`python -m benchmarks.size_frontier`). Before training,
latency alone was measured on fresh weights of each shape (`benchmarks/results/frontier-latency*.json`; the bar is
p50 <= 200 ms, p95 <= 400 ms):

| shape | weights | parameters | p50 ms | p95 ms | measured (UTC, CPU) |
|---|---|--:|--:|--:|---|
{rows}

Two-core machines with different CPUs differ by up to a factor of two: the bar is judged on the machine at hand,
which is why the trained sizes are measured side by side in one run."""


def _serving(target: Path) -> str:
    """What the model directory's serving.json states (the quantization ``auto`` picks, decoding per language)."""
    path = target / "serving.json"
    data = json.loads(path.read_text()) if path.is_file() else {}
    quantization = data.get("quantization", "none")
    runs_as = ("float32 weights" if quantization == "none" else
               f"`{quantization}` weights (`serving.json`; the default `quantization: auto` follows it where it can run)")
    table = data.get("decoding") or {}
    decoding = "; ".join(
        f"{lang}: " + ", ".join(f"{k.replace('_', ' ')} {'/'.join(map(str, v)) if isinstance(v, list) else v}"
                                for k, v in values.items())
        for lang, values in table.items())
    return (f"With {runs_as}. Decoding: "
            + (f"tuned per language on development holes (`benchmarks.tune_decoding`): {decoding}; every other "
               "language the engine's defaults (one-line holes at 8 and 24 slots, 16 steps)." if table else
               "the engine's defaults for every language (one-line holes at 8 and 24 slots, 16 steps)."))


def _shown(run: Path) -> str:
    """A run directory as the card names it: relative to the repository when it is inside it."""
    try:
        return str(run.resolve().relative_to(_ROOT))
    except ValueError:
        return str(run)


def _command(scratch: bool) -> str:
    if scratch:
        return ("`MINUTES=N bash scripts/train_gen2_gpu.sh stage PART ... train` (seeded, resumable: each size's state "
                "in `$GEN2/runs/SIZE/state.pt`, checkpoint exported every minute).")
    return ("`python -m engine.training --out runs/embedded --minutes N` (seeded, resumable: state in\n"
            "`runs/embedded/state.pt`, checkpoint exported every 10 minutes).")


def _gpu_paragraph(scratch: bool) -> str:
    if scratch:
        return """The second generation trains on one GPU (`scripts/train_gen2_gpu.sh`: three sizes side by side on the
same data, `engine/training/gen2/README.md`): the corpus travels there compressed in parts, is tokenized
once, batches are made ahead by worker processes, each size validates per language every minute, and the
weights come back as float16 pieces (`engine.training.parts`) and ship in float16 (the engine loads them as
float32: the same values in half the bytes)."""
    return """GPU runs (`scripts/train_on_gpu.sh`) train the same model shape, so the shipped model keeps its CPU
speed: the data is built here (`--data-only`: the corpus is this interpreter's standard library) and
carried there, batches are made ahead by worker processes, and `--keep-best` keeps the state with the
lowest one-line-hole validation loss, validated every 30 seconds."""


def _stored(path: Path) -> str:
    """How the weights file stores its tensors, from its safetensors header: ``fp32``, or e.g. ``f16 as stored,
    loaded as fp32`` (the engine computes in float32 whatever the file holds)."""
    from safetensors import safe_open

    with safe_open(str(path), "pt") as f:
        dtypes = "/".join(sorted({f.get_slice(k).get_dtype() for k in f.keys()}))
    return "fp32" if dtypes == "F32" else f"{dtypes.lower()} as stored, loaded as fp32"


def write_card(run: Path, target: Path = EMBEDDED_DIR) -> Path:
    records = read_log(run)
    s = summary(records)
    continued = continued_section(records)   # before anything is copied: a missing corpus part stops here
    if continued:
        continued = "\n\n" + continued
    target.mkdir(parents=True, exist_ok=True)
    for name in _FILES:
        shutil.copy2(run / "checkpoint" / name, target / name)
    root = next((r["root"] for r in records if r.get("event") == "data"), None)
    log_text = (run / "train.log").read_text()
    if root:  # the machine's path to its stdlib says nothing to a reader: name the stdlib instead
        log_text = log_text.replace(json.dumps(root), json.dumps(f"<stdlib of CPython {platform.python_version()}>"))
    (target / "train.log").write_text(log_text)
    plot(records, target / "loss.png")
    cfg = json.loads((target / "config.json").read_text())
    params = next((r["params"] for r in records if r.get("event") == "start"), None)
    size_mb = (target / "model.safetensors").stat().st_size / 1e6
    stored = _stored(target / "model.safetensors")
    digest = _digest(target / "model.safetensors")
    quality = _quality_rows(digest) or [
        "| (no benchmark results for these weights yet: run `python -m benchmarks.infill ...`) | | | | | | | |"]
    # the stdlib stage: tokens seen before any run read a code corpus
    first_corpus = next((r for r in runs(records) if r["corpus"]), None)
    stdlib_seen = first_corpus["from_tokens"] if first_corpus else s["tokens_seen"]   # before any corpus run
    v = s["final_validation"]
    scratch = from_scratch(records)
    gpus = sorted({r["hardware"] for r in runs(records) if not r["hardware"].startswith("CPU")})
    if scratch and gpus:
        on = "one " + " and one ".join(gpus) + (" and a CPU" if any(r["hardware"].startswith("CPU")
                                                                   for r in runs(records)) else "")
    else:
        on = "a laptop-class CPU" + (" and briefly on one GPU" if gpus else "")
    text = f"""# The embedded model: a {params / 1e6:.1f}M-parameter masked-diffusion code model trained on {on}

Shipped in `engine/models/embedded/` so that diffusion-lsp works offline on a fresh machine. It loads
through exactly the code path of any published checkpoint (`AutoModelForMaskedLM`,
`AutoTokenizer`, `local_files_only=True`). Regenerate this card with
`python -m engine.training.card {_shown(run)}`.

## What it is

- Architecture: ModernBERT (`{cfg.get('model_type')}`), {cfg.get('num_hidden_layers')} layers, hidden
  {cfg.get('hidden_size')}, {cfg.get('num_attention_heads')} heads, intermediate {cfg.get('intermediate_size')},
  RoPE, bidirectional attention, tied embeddings; {params:,} parameters; `model.safetensors` {size_mb:.1f} MB ({stored}).
- Tokenizer: byte-level BPE with {cfg.get('vocab_size')} entries trained on the same corpus; every line is
  pre-split (newline merged with the previous chunk) so a hole at a line start tokenizes the same in and
  out of context; whitespace and indentation round-trip exactly (tested). Special tokens `<pad>`, `<bos>`,
  `<eos>`, `<mask>`.
- Objective: masked diffusion (per sequence t ~ U(0,1), stratified over the batch; each token masked with
  probability t; cross-entropy on masked tokens weighted 1/t) mixed with an infill curriculum: a whole
  line, 2-8 whole lines, the rest of a line, or a short token run is cut out, padded with `<pad>` targets
  up to a length bucket (4 ... 128, often looser than the tightest) and masked inside the hole only (whole
  hole in 30% of rows), prefix and suffix clean: the model learns to end a hole early with pads.

## Data

{data_section(json.loads(GEN2_DATA.read_text())) + chr(10) * 2 + _read_data(records, s) if scratch
 else _stdlib_data(records, s)}{continued}

## Training

{_command(scratch)} This model: {s['steps']:,} steps,
{s['tokens_seen'] / 1e6:,.1f}M tokens seen, trained {_hardware_time(records)}; AdamW with warmup
and a linear decay at the end of each run, rows of 256 tokens. It ran as {s['runs']} runs
({s['resumes']} resumes; the full log with every setting is `train.log` beside this card):

| steps | data | tokens | minutes | hardware | batch (rows) | peak lr | infill share | library share | holes per infill row | bf16 autocast | note |
|---|---|---|---|---|---|---|---|---|---|---|---|
{chr(10).join(_run_rows(records))}

{_gpu_paragraph(scratch)}

A run's steps end where its last saved state was; steps logged after that (a run stopped between
checkpoints) were discarded and trained again. Infill rows with several holes (`--max-holes`) add whole-line holes elsewhere in the window: about
twice the loss-bearing slots per row. bf16 autocast (fp32 weights, optimizer and loss) runs where the
CPU has native bf16 (`--precision auto`); on this machine it made a step about twice as fast.

Final validation loss ({"the code corpus's held-out files of every language" if continued or scratch
                         else "held-out stdlib"}):
plain diffusion {v.get('val_diffusion')}, one masked line in a 24-slot hole {v.get('val_line_hole')} (nats per hole
slot, pads included){_per_language(v)}.

![loss curve](loss.png)

{("## Sizes tried" + chr(10) * 2 + sizes_section(target) + chr(10) * 2) if scratch else ""}## Measured quality

HumanEval-infilling, no oracle length, the same engine path the server uses (syntax validation on),
pass@1 by executing the tests in a sandbox; an empty fill passes 2.6% of single-line tasks:

| set | n | pass@1 | exact match | document parses | offered fills that parse | latency p50 / p95 (ms) | command |
|---|---|---|---|---|---|---|---|
{chr(10).join(quality)}

Rows whose command sets `--steps` ran with that step budget instead of the default 16 (the `steps`
setting). The engine fills a one-line hole at 8 and at 24 slots and offers the valid fill the model is
surer of (`docs/ARCHITECTURE.md`); rows whose command sets `--slots` filled every hole once at that
size: the length study behind that choice (`benchmarks/README.md`). The `stdlib-lines` rows are the
development set (one-line holes from the held-out stdlib files; exact match only, they have no tests).{_per_language_rows(digest)}

Against the targets of the model issue, at the default step budget: {_targets(digest)}. {_resume_note(bool(continued), scratch)}

## How it runs

{_serving(target)}

## Limitations

{_limits(s, stdlib_seen, bool(continued), params, scratch)}
- Context: trained on 256-token windows; the server gives it at most ~160 tokens before and ~64 after
  the cursor.
- No instruction following; the rewrite instruction is ignored by this backend.
"""
    (target / "MODEL_CARD.md").write_text(text)
    return target / "MODEL_CARD.md"


def main(argv: list[str] | None = None) -> None:
    argv = argv if argv is not None else sys.argv[1:]
    if argv[:1] == ["--data-card"]:
        print(write_data_card(*(Path(a) for a in argv[1:3])))
        return
    if not argv:
        sys.exit("usage: python -m engine.training.card RUN [TARGET] | --data-card [DATA_JSON [TARGET]]")
    try:
        print(write_card(Path(argv[0]), Path(argv[1]) if len(argv) > 1 else EMBEDDED_DIR))
    except (FileNotFoundError, ValueError) as e:   # a missing run, checkpoint or corpus part: say which
        print(f"engine.training.card: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
