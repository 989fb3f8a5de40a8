"""#13's size frontier with trained weights: for each model (a size, and the quantization it would run with), one-line
quality on a development set and single-line latency through the LSP on one CPU thread, side by side; which models
keep the latency bar, and the largest of them (the one the issue ships).

    python -m benchmarks.size_frontier --model small=runs/gen2-home/small/checkpoint \\
        --model medium@int8=runs/gen2-home/medium/checkpoint --model large@int8=runs/gen2-home/large/checkpoint \\
        --model shipped=embedded --out benchmarks/results/size-frontier.json

Quality: ``benchmarks.infill`` on the development set (default ``benchmarks/data/code-lines.jsonl.gz``: one-line holes
from held-out corpus files in five languages; never HumanEval), no confidence bar, exact match of the fill the
engine chooses, overall and per language. Latency: ``benchmarks.frontier.measure`` (warm single-line requests
through ``diffusion-lsp``, one thread, as the fresh-weight frontier measured it). The bar: p50 <= 200 ms, p95 <= 400
ms, RSS <= 1 GB, model files <= 120 MB. The plot (exact match against p50) is written beside the result; the model
card of a second-generation model shows it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from benchmarks import frontier, infill
from benchmarks.report import REPO_ROOT, default_out, envelope, run_cli, write_result

DEV_DATA = REPO_ROOT / "benchmarks" / "data" / "code-lines.jsonl.gz"


def parse_entry(text: str) -> tuple[str, str, str]:
    """``NAME[@QUANTIZATION]=MODEL`` -> (row name, quantization, model); quantization ``none`` or ``int8``. The
    row is named as given (``small@int8``), so one size in both weights makes two rows."""
    label, sep, model = text.partition("=")
    name, _, quantization = label.partition("@")
    quantization = quantization or "none"
    if not (sep and name and model) or quantization not in ("none", "int8"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=MODEL or NAME@int8=MODEL")
    return (name if quantization == "none" else f"{name}@{quantization}"), quantization, model


def parameters(model: str) -> tuple[int, float]:
    """Parameters in the checkpoint's weights file (a tied tensor is stored once) and the file's size in MB (as
    stored: a second-generation model ships float16 weights, which the engine loads as float32)."""
    from safetensors import safe_open

    from engine.config import model_dir

    path = model_dir(model) / "model.safetensors"
    total = 0
    with safe_open(str(path), "pt") as f:
        for key in f.keys():
            n = 1
            for d in f.get_slice(key).get_shape():
                n *= d
            total += n
    return total, round(path.stat().st_size / 1e6, 1)


def quality(model: str, quantization: str, args, tmp: Path, name: str) -> dict:
    """Exact match of the engine's chosen fill on the development set, no bar, overall and per language."""
    out = tmp / f"{name}-quality.json"
    argv = ["--data", args.data, "--no-tests", "--model", model, "--quantization", quantization,
            "--min-confidence", "0", "--threads", "1", "--out", str(out)]
    if args.limit:
        argv += ["--limit", str(args.limit)]
    if infill.main(argv) != 0:
        raise RuntimeError(f"quality run for {name} failed")
    r = json.loads(out.read_text())
    return {"n": r["n"], "exact_match": r["exact_match"], "syntax_valid": r.get("syntax_valid"),
            "languages": {lang: {"n": v["n"], "exact_match": v["exact_match"]}
                          for lang, v in (r.get("languages") or {}).items()}}


def within_bar(row: dict) -> bool:
    return all(v["raw_met"] for v in row["bar"].values())


def plot(result: dict, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for name, row in result["rows"].items():
        x, y = row["latency"]["warm_ms"]["p50"], 100 * row["quality"]["exact_match"]
        ax.scatter([x], [y], s=30 + row["parameters"] / 2e5, color="tab:green" if row["within_bar"] else "tab:red")
        ax.annotate(f"{name} ({row['parameters'] / 1e6:.1f}M)", (x, y), textcoords="offset points", xytext=(6, 4),
                    fontsize=8)
    ax.axvline(frontier.BAR["p50_ms"], color="grey", ls="--", lw=0.8)
    ax.text(frontier.BAR["p50_ms"], ax.get_ylim()[1], " p50 bar", va="top", fontsize=8, color="grey")
    ax.set_xlabel("single-line fill through the LSP, p50 ms (one CPU thread)")
    ax.set_ylabel(f"exact match, % of {result['quality_set']} holes")
    ax.set_title("size frontier: quality against latency (green: within the bar)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.size_frontier", description=__doc__.splitlines()[0])
    p.add_argument("--model", dest="models", type=parse_entry, action="append", required=True,
                   help="NAME=MODEL or NAME@int8=MODEL (a checkpoint directory or 'embedded'), repeatable")
    p.add_argument("--data", default=str(DEV_DATA), help="one-line development holes (never HumanEval)")
    p.add_argument("--limit", type=int, default=0, help="the first N holes of --data (0: all)")
    p.add_argument("--n", type=int, default=40, help="warm single-line requests per model")
    p.add_argument("--cold-runs", type=int, default=1)
    p.add_argument("--single-line-data", default="")
    p.add_argument("--out", default=str(default_out("size-frontier")))
    args = p.parse_args(argv)
    if "humaneval" in Path(args.data).name.lower():
        print("size_frontier: HumanEval is a test set; the frontier is chosen on development holes", file=sys.stderr)
        return 2
    from engine.config import model_dir

    names = [name for name, _, _ in args.models]
    if len(set(names)) < len(names):
        print(f"size_frontier: a model named twice ({', '.join(sorted({n for n in names if names.count(n) > 1}))})",
              file=sys.stderr)
        return 2
    for name, _, model in args.models:
        if not (model_dir(model) / "model.safetensors").is_file():
            print(f"size_frontier: {name}: no model.safetensors in {model_dir(model)}", file=sys.stderr)
            return 2
    result = envelope("size-frontier", "benchmarks.size_frontier", argv)
    result.update(bar=frontier.BAR, quality_set=Path(args.data).name.split(".")[0])
    rows: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-size-frontier-") as t:
        tmp = Path(t)
        for name, quantization, model in args.models:
            params, mb = parameters(model)
            measure_args = argparse.Namespace(n=args.n, cold_runs=args.cold_runs, quantization=quantization,
                                              single_line_data=args.single_line_data)
            row = {"model": model, "quantization": quantization, "parameters": params, "model_mb": mb,
                   "quality": quality(model, quantization, args, tmp, name),
                   "latency": frontier.measure(model, measure_args, tmp, name)}
            frontier.judge(row, 1.0)
            row["latency"].pop("projected", None)
            row["within_bar"] = within_bar(row)
            rows[name] = row
            print(f"{name}: {params / 1e6:.2f}M, exact {100 * row['quality']['exact_match']:.1f}%, p50 "
                  f"{row['latency']['warm_ms']['p50']} ms, p95 {row['latency']['warm_ms']['p95']} ms, "
                  f"{'within' if row['within_bar'] else 'outside'} the bar", flush=True)
    result["rows"] = rows
    # the largest within the bar; one size that keeps it in both weights ships in float32 (int8 is within churn of it
    # on the development holes, benchmarks/results/int8.json, not better)
    fits = sorted((row["parameters"], row["quantization"] == "none", name) for name, row in rows.items()
                  if row["within_bar"])
    result["largest_within_bar"] = fits[-1][2] if fits else None
    out = Path(args.out)
    write_result(out, result)
    plot(result, out.with_suffix(".png"))
    print(f"largest within the bar: {result['largest_within_bar'] or 'none'}; plot {out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
