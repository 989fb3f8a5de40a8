"""After ``codecorpus``: the tokenizer (its size chosen by measurement), token counts in the manifest, the
data card's totals, and the compressed parts the corpus travels to a GPU machine in.

    python -m engine.training.gen2data tokenizer --corpus DIR      # train 32k once, measure 8k/16k/32k
    python -m engine.training.gen2data count --corpus DIR          # tokens per file -> manifest, totals
    python -m engine.training.gen2data restate                     # the committed manifest under today's rules
    python -m engine.training.gen2data pack --corpus DIR --dest runs/gen2-travel

The tokenizer, the compressed manifest and ``data.json`` go to ``engine/training/gen2/`` (beside where
the second-generation model will be shipped); the measurement to ``benchmarks/results/tokenizer-vocab.json``.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import random
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from . import tokenizer as tok_mod
from .codecorpus import LANGUAGES

ROOT = Path(__file__).resolve().parents[2]
GEN2 = Path(__file__).resolve().parent / "gen2"
RESULTS = ROOT / "benchmarks" / "results"
SIZES = (8192, 16384, 32768)
# The three model shapes the issue asks for (hidden, layers, intermediate, heads), ~5M / ~15M / ~35M
# parameters with a 16k vocabulary; their parameter counts per vocabulary are in the measurement.
SHAPES = {"small": (192, 6, 384, 3), "medium": (384, 6, 768, 6), "large": (512, 9, 1024, 8)}


def read_jsonl(path: Path):
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def files_of(corpus: Path, split: str, lang: str) -> list[Path]:
    d = corpus / "files" / split
    return sorted(d.glob(f"{lang}.jsonl")) + sorted(d.glob(f"{lang}.*.jsonl.xz"))


def texts(corpus: Path, split: str, lang: str):
    for f in files_of(corpus, split, lang):
        for r in read_jsonl(f):
            yield r["text"]


def sample(corpus: Path, lang: str, megabytes: float, seed: int = 0) -> list[str]:
    """About ``megabytes`` of training files of one language, drawn evenly over the files in order."""
    all_texts = list(texts(corpus, "train", lang))
    total = sum(len(t) for t in all_texts) or 1
    keep = min(1.0, megabytes * 1e6 / total)
    rng = random.Random(seed)
    return [t for t in all_texts if rng.random() < keep]


def params(shape: tuple[int, int, int, int], vocab: int) -> dict:
    """Parameters of a ModernBERT masked LM of this shape (tied embeddings), split into embeddings and the rest."""
    h, layers, inter, _ = shape
    per_layer = 4 * h * h + 3 * h * inter + 2 * h     # attention qkv + out, GLU mlp (Wi: h -> 2 inter), norms
    body = layers * per_layer + h * h + 3 * h + vocab  # + head dense, norms, decoder bias
    return {"embedding": vocab * h, "total": vocab * h + body}


def measure(tokenizers: dict[int, object], corpus: Path, per_lang_chars: int = 2_000_000) -> dict:
    """Bytes per token on held-out files of each language, per vocabulary size."""
    out: dict = {}
    for lang in LANGUAGES:
        held, n = [], 0
        for t in texts(corpus, "valid", lang):
            held.append(t)
            n += len(t)
            if n >= per_lang_chars:
                break
        nbytes = sum(len(t.encode()) for t in held)
        out[lang] = {"files": len(held), "bytes": nbytes}
        for v, tok in tokenizers.items():
            ntok = sum(len(x) for x in tok(held, add_special_tokens=False)["input_ids"]) if held else 0
            out[lang][str(v)] = round(nbytes / ntok, 3) if ntok else None
    return out


def cmd_tokenizer(args) -> int:
    corpus = Path(args.corpus)
    t0 = time.time()
    train = []
    for lang in LANGUAGES:
        s = sample(corpus, lang, args.sample_mb)
        print(f"{lang}: {len(s)} files, {sum(map(len, s)) / 1e6:.1f}M chars in the tokenizer sample", flush=True)
        train += s
    random.Random(1).shuffle(train)
    big = tok_mod.train_tokenizer(train, max(SIZES))
    trained_s = time.time() - t0
    toks = {v: tok_mod.truncate(big, v) for v in SIZES}
    m = measure(toks, corpus)
    mean = {str(v): round(sum(m[lang][str(v)] or 0 for lang in LANGUAGES) / len(LANGUAGES), 3) for v in SIZES}
    costs = {name: {str(v): params(shape, v) for v in SIZES} for name, shape in SHAPES.items()}
    best = max(mean.values())
    # The choice: the smallest vocabulary whose mean bytes/token is within 7% of the largest's, so the
    # small model does not spend most of its parameters on embeddings for a few percent of context.
    chosen = args.choose or next(v for v in SIZES if mean[str(v)] >= 0.93 * best)
    result = {"what": "bytes per token of the retrained byte-level BPE on held-out corpus files, per vocabulary",
              "command": "python -m engine.training.gen2data tokenizer --corpus $CORPUS_DIR "
                         f"--sample-mb {args.sample_mb}",
              "sample_mb_per_language": args.sample_mb, "train_seconds": round(trained_s),
              "bytes_per_token": m, "mean_bytes_per_token": mean, "parameters": costs,
              "rule": "smallest vocabulary with mean bytes/token within 7% of the 32k one's",
              "chosen": chosen}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "tokenizer-vocab.json").write_text(json.dumps(result, indent=1) + "\n")
    out = Path(args.save)
    tok_mod.save(toks[chosen], out)
    print(json.dumps({"mean_bytes_per_token": mean, "chosen": chosen, "saved": str(out)}))
    return 0


def cmd_count(args) -> int:
    """Tokens per kept file with the chosen tokenizer; the compressed manifest and the totals."""
    from transformers import PreTrainedTokenizerFast

    corpus = Path(args.corpus)
    tok = PreTrainedTokenizerFast.from_pretrained(args.tokenizer)
    counts: dict[str, int] = {}
    estimate = None
    if args.estimate:   # no tokenizing: tokens estimated from bytes with the measured bytes/token per language
        m = json.loads((RESULTS / "tokenizer-vocab.json").read_text())
        estimate = {lang: m["bytes_per_token"][lang][str(len(tok))] for lang in LANGUAGES}
    for split in ("train", "valid") if estimate is None else ():
        for lang in LANGUAGES:
            batch: list[dict] = []
            for f in files_of(corpus, split, lang):
                for r in read_jsonl(f):
                    batch.append(r)
                    if len(batch) >= 512:
                        _count(tok, batch, counts)
                        batch = []
            _count(tok, batch, counts)
            print(f"{split} {lang}: counted", flush=True)
    build = json.loads((corpus / "build.json").read_text())
    rows = []
    for r in read_jsonl(corpus / "manifest.jsonl"):
        r["tokens"] = counts[r["id"]] if estimate is None else round(r["bytes"] / estimate[r["language"]])
        rows.append(r)
    data = {"tokenizer": args.tokenizer_name, "vocab_size": len(tok),
            "tokens_are": "counted" if estimate is None else "estimated from bytes (held-out bytes/token per "
                                                             "language); rerun without --estimate to count",
            **_totals(rows),
            "packages_fetched": len(build["packages"]),
            "dropped": build["dropped"], "dropped_bytes": build["dropped_bytes"],
            "build_seconds": build["seconds"],
            "packages": [{k: p[k] for k in ("ecosystem", "name", "version", "licence", "files_kept")}
                         for p in build["packages"]]}
    _write(rows, Path(args.manifest), Path(args.data_json), data)
    return 0


MANIFEST_FIELDS = ("package", "version", "licence", "path", "sha256", "tokens", "language", "split", "bytes",
                   "ecosystem")


def _totals(rows: list[dict]) -> dict:
    """Files and tokens per language, licence and source; how many packages have a file in the corpus."""
    totals: dict = {"languages": defaultdict(lambda: defaultdict(int)), "licences": defaultdict(lambda: defaultdict(int)),
                    "ecosystems": defaultdict(lambda: defaultdict(int))}
    packages: set[str] = set()
    for r in rows:
        packages.add(f"{r['ecosystem']}:{r['package']}")
        for key, group in (("languages", r["language"]), ("licences", r["licence"]), ("ecosystems", r["ecosystem"])):
            t = totals[key][group]
            t["files"] += 1
            t[f"{r['split']}_tokens"] += r["tokens"]
            t["bytes"] += r["bytes"]
    return {"files": sum(v["files"] for v in totals["languages"].values()),
            "train_tokens": sum(v["train_tokens"] for v in totals["languages"].values()),
            "valid_tokens": sum(v["valid_tokens"] for v in totals["languages"].values()),
            "packages_with_files": len(packages),
            **{k: {g: dict(v) for g, v in sorted(d.items(), key=lambda kv: str(kv[0]))} for k, d in totals.items()}}


def _write(rows: list[dict], manifest: Path, data_json: Path, data: dict) -> None:
    manifest.parent.mkdir(parents=True, exist_ok=True)
    with lzma.open(manifest, "wt", encoding="utf-8", preset=9) as w:
        for r in rows:
            w.write(json.dumps({k: r[k] for k in MANIFEST_FIELDS}) + "\n")
    data_json.write_text(json.dumps(data, indent=1) + "\n")
    print(json.dumps({k: v for k, v in data.items() if k != "packages"}, indent=1))


def _name(package: str) -> str:
    return re.sub(r"[-_.]+", "-", package).lower()   # a distribution's name as pip compares them


def cmd_restate(args) -> int:
    """The committed manifest and ``data.json`` under today's build rules, without the corpus: the files the build
    keeps out now (the project's own, ``codecorpus.is_own_project``) and rows under a path two files of a package
    shared (a wheel's ``mypy/build.py`` and ``mypyc/build.py`` were both ``build.py``, one file read for both; a build
    now gives each its whole path) leave the manifest and are counted as dropped;
    the totals are recounted from the manifest's token counts. What ``count`` would write after a new build of the
    same packages, for the files that build would keep."""
    from .codecorpus import is_own_project

    manifest, data_json = Path(args.manifest), Path(args.data_json)
    data = json.loads(data_json.read_text())
    every = list(read_jsonl(manifest))
    paths = Counter((r["ecosystem"], r["package"], r["path"]) for r in every)
    rows: list[dict] = []
    out: Counter[str] = Counter()
    left: Counter[tuple[str, str]] = Counter()
    for r in every:
        if is_own_project(r["ecosystem"], r["package"]):
            reason = "the project itself"
        elif paths[(r["ecosystem"], r["package"], r["path"])] > 1:  # codecorpus._inside_top_folder: each file of
            reason = "one path for two files"                         # the pair has its whole path now, not this one
        else:
            rows.append(r)
            continue
        out[reason] += 1
        left[(r["ecosystem"], _name(r["package"]))] += 1
    if not out:
        print(f"restate: nothing in {manifest} is kept out by today's rules; unchanged")
        return 0
    before = {k: data.get(k) for k in ("files", "train_tokens", "valid_tokens")}
    data.update(_totals(rows))
    data["dropped"] = {**data["dropped"], **{k: data["dropped"].get(k, 0) + n for k, n in out.items()}}
    for p in data["packages"]:
        p["files_kept"] -= left[(p["ecosystem"], _name(p["name"]))]
    _write(rows, manifest, data_json, data)
    print(f"restate: {sum(out.values())} files left the manifest ({dict(out)}); files, train and held-out tokens "
          f"{before['files']}, {before['train_tokens']}, {before['valid_tokens']} -> {data['files']}, "
          f"{data['train_tokens']}, {data['valid_tokens']}")
    return 0


def _count(tok, batch: list[dict], counts: dict[str, int]) -> None:
    if batch:
        ids = tok([r["text"] for r in batch], add_special_tokens=False)["input_ids"]
        for r, i in zip(batch, ids):
            counts[r["id"]] = len(i)


def manifest_keys(path: Path) -> set[tuple[str, str]]:
    """(file id, sha256) of every file a corpus manifest lists (``count`` writes it: the model card's data)."""
    return {(f"{r['ecosystem']}:{r['package']}/{r['path']}", r["sha256"]) for r in read_jsonl(path)}


def cmd_pack(args) -> int:
    """The corpus's files as xz-compressed JSONL chunks of about ``--chunk-mb`` (uncompressed), in
    folders ``partN`` of at most ``--part-mib`` compressed: one folder travels per device call. With
    ``--manifest`` (the committed one by default), only the files it lists with the same content: a corpus
    rebuilt later (newer packages in the environment, the project's own sources changed) packs the data
    the model card states, and what it could not find is counted."""
    corpus, dest = Path(args.corpus), Path(args.dest)
    wanted: set[tuple[str, str]] | None = None
    needed = [corpus / "files"] + ([Path(args.manifest), corpus / "manifest.jsonl"] if args.manifest else [])
    missing = [str(f) for f in needed if not f.exists()]
    if missing:
        print(f"pack: {', '.join(missing)} not found (build the corpus first: scripts/build_corpus.sh; "
              "--manifest '' packs every file)", file=sys.stderr)
        return 2
    if args.manifest:
        wanted = manifest_keys(Path(args.manifest))
        sha = {r["id"]: r["sha256"] for r in read_jsonl(corpus / "manifest.jsonl")}
    dest.mkdir(parents=True, exist_ok=True)
    chunks: list[Path] = []
    packed = left_out = 0
    for split in ("valid", "train"):
        for lang in LANGUAGES:
            n, size, w = 0, 0, None
            for f in files_of(corpus, split, lang):
                for r in read_jsonl(f):
                    if wanted is not None and (r["id"], sha.get(r["id"], "")) not in wanted:
                        left_out += 1
                        continue
                    packed += 1
                    line = json.dumps({"id": r["id"], "text": r["text"]}, ensure_ascii=False) + "\n"
                    if w is None or size > args.chunk_mb * 1e6:
                        if w is not None:
                            w.close()
                        path = dest / f"{split}.{lang}.{n:03d}.jsonl.xz"
                        w = lzma.open(path, "wt", encoding="utf-8", preset=args.preset)
                        chunks.append(path)
                        n, size = n + 1, 0
                    w.write(line)
                    size += len(line.encode())
            if w is not None:
                w.close()
            print(f"{split} {lang}: {n} chunks", flush=True)
    # Parts of at most --part-mib compressed, filled in order (validation chunks first, then training
    # chunks of each language in turn), so that the first parts alone make a usable, mixed corpus.
    order = sorted(chunks, key=lambda p: (p.name.split(".")[0] != "valid", int(p.name.split(".")[2]),
                                          LANGUAGES.index(p.name.split(".")[1])))
    parts: list[list[Path]] = [[]]
    sizes = [0]
    for c in order:
        if sizes[-1] and sizes[-1] + c.stat().st_size > args.part_mib * 2**20:
            parts.append([])
            sizes.append(0)
        parts[-1].append(c)
        sizes[-1] += c.stat().st_size
    for i, part in enumerate(parts):
        folder = dest / f"part{i}"
        folder.mkdir(exist_ok=True)
        for c in part:
            os.replace(c, folder / c.name)
    summary: dict = {f"part{i}": {"files": len(p), "MiB": round(sz / 2**20, 1)}
                     for i, (p, sz) in enumerate(zip(parts, sizes))}
    summary["corpus_files"] = {"packed": packed, "left_out": left_out}
    if wanted is not None:
        summary["corpus_files"].update(manifest=str(args.manifest), in_manifest=len(wanted),
                                       not_found=len(wanted) - packed)
        print(f"pack: {packed} of the manifest's {len(wanted)} files packed ({len(wanted) - packed} not found in "
              f"this corpus); {left_out} files of the corpus are not in it and stay out", flush=True)
    (dest / "parts.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary))
    if wanted is not None and not packed:
        print(f"pack: none of the files in {args.manifest} is in {corpus}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    corpus_default = os.environ.get("CORPUS_DIR", str(ROOT / "runs" / "corpus"))
    p = argparse.ArgumentParser(prog="python -m engine.training.gen2data", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tokenizer")
    t.add_argument("--corpus", default=corpus_default)
    t.add_argument("--sample-mb", type=float, default=12.0, help="training text per language (MB)")
    t.add_argument("--choose", type=int, default=0, help="this vocabulary size instead of the rule's")
    t.add_argument("--save", default=str(GEN2 / "tokenizer"))
    c = sub.add_parser("count")
    c.add_argument("--corpus", default=corpus_default)
    c.add_argument("--tokenizer", default=str(GEN2 / "tokenizer"))
    c.add_argument("--tokenizer-name", default="engine/training/gen2/tokenizer")
    c.add_argument("--manifest", default=str(GEN2 / "corpus-manifest.jsonl.xz"))
    c.add_argument("--data-json", default=str(GEN2 / "data.json"))
    c.add_argument("--estimate", action="store_true", help="estimate tokens from bytes instead of counting")
    r = sub.add_parser("restate", help="the committed manifest and data.json under today's build rules")
    r.add_argument("--manifest", default=str(GEN2 / "corpus-manifest.jsonl.xz"))
    r.add_argument("--data-json", default=str(GEN2 / "data.json"))
    k = sub.add_parser("pack")
    k.add_argument("--corpus", default=corpus_default)
    k.add_argument("--dest", default=str(ROOT / "runs" / "gen2-travel"))
    k.add_argument("--part-mib", type=float, default=38.0, help="compressed size of a part (one device call)")
    k.add_argument("--chunk-mb", type=float, default=40.0, help="uncompressed size of a chunk file")
    k.add_argument("--preset", type=int, default=6, help="xz preset")
    k.add_argument("--manifest", default=str(GEN2 / "corpus-manifest.jsonl.xz"),
                   help="pack only the files this manifest lists, with the same sha256 ('' for every file)")
    args = p.parse_args(argv)
    return {"tokenizer": cmd_tokenizer, "count": cmd_count, "restate": cmd_restate, "pack": cmd_pack}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
