"""Quality benchmark: fill HumanEval-infilling tasks through the engine (or a real server) and score them.

    python -m benchmarks.infill --data ../shared/data/human-eval-infilling/HumanEval-SingleLineInfilling.jsonl.gz \
        --out benchmarks/results/infill-single-line.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from benchmarks.evaluate import evaluate, summarise, write_jsonl
from benchmarks.fillers import EngineFiller, LspFiller, ReferenceFiller
from benchmarks.report import envelope, model_info, run_cli, write_result
from benchmarks.sandbox import Limits
from benchmarks.tasks import dataset_name, load_tasks, typed_tasks
from engine.config import QUANTIZATIONS

KINDS = ("auto", "inline", "line", "block", "span")


def engine_args(parser: argparse.ArgumentParser) -> None:
    """The engine settings every benchmark takes (defaults are EngineConfig's)."""
    parser.add_argument("--model", default="embedded", help='"embedded" or a checkpoint directory')
    parser.add_argument("--steps", type=int, default=0, help="denoising step budget per request (0: backend default)")
    parser.add_argument("--threshold", type=float, default=0.0, help="accept threshold (0: backend default)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"),
                        help="model weights' dtype (auto: the engine's choice for the device)")
    parser.add_argument("--kv-cache", type=int, choices=(0, 1), default=1,
                        help="approximate KV cache for masked LMs (1, the default) or full forwards every step (0)")
    parser.add_argument("--cache-refresh", type=int, default=4, help="full forward every N steps with the cache")
    parser.add_argument("--max-hole-tokens", type=int, default=64,
                        help="cap on a hole's slots (line holes use at most 32, inline 24)")
    parser.add_argument("--prefix-tokens", type=int, default=160, help="context budget before the hole")
    parser.add_argument("--suffix-tokens", type=int, default=64, help="context budget after the hole")
    parser.add_argument("--min-confidence", type=float, default=None,
                        help="withhold cursor fills below this estimate (default: the model's calibrated bar; 0: never)")
    parser.add_argument("--document-lines", type=int, choices=(0, 1), default=1,
                        help="one-line holes may also take a line the document has (1, the default; engine/doclines.py)")
    parser.add_argument("--common-lines", type=int, choices=(0, 1), default=1,
                        help="... or a line code often has (1, the default; engine/commonlines.py)")
    parser.add_argument("--workspace-lines", type=int, choices=(0, 1), default=1,
                        help="... or a line of the workspace's files (1, the default; engine/worklines.py; "
                             "needs --workspace-corpus or --workspace-packages)")
    parser.add_argument("--quantization", default="auto", choices=QUANTIZATIONS,
                        help="weights quantized at load (auto: what the model directory states, else none; masked "
                             "models: int8 on the CPU; DiffusionGemma: torchao)")


def engine_config(args, **overrides):
    from engine.config import EngineConfig

    fields = dict(model=args.model, steps=args.steps, threshold=args.threshold, threads=args.threads,
                  device=args.device, dtype=args.dtype, kv_cache=bool(args.kv_cache), cache_refresh=args.cache_refresh,
                  max_hole_tokens=args.max_hole_tokens, prefix_tokens=args.prefix_tokens,
                  suffix_tokens=args.suffix_tokens, min_confidence=getattr(args, "min_confidence", None),
                  quantization=getattr(args, "quantization", "auto"),
                  document_lines=bool(getattr(args, "document_lines", 1)),
                  common_lines=bool(getattr(args, "common_lines", 1)),
                  workspace_lines=bool(getattr(args, "workspace_lines", 1)))
    return EngineConfig.of(**{**fields, **overrides})


def server_options(args) -> dict:
    """The same settings as initializationOptions for ``diffusion-lsp`` (docs/PROTOCOL.md)."""
    return {"model": args.model, "steps": args.steps, "threshold": args.threshold, "threads": args.threads,
            "device": args.device, "dtype": args.dtype, "kvCache": bool(args.kv_cache),
            "cacheRefresh": args.cache_refresh, "maxHoleTokens": args.max_hole_tokens,
            "prefixTokens": args.prefix_tokens, "suffixTokens": args.suffix_tokens,
            "minConfidence": getattr(args, "min_confidence", None),
            "quantization": getattr(args, "quantization", "auto"),
            "documentLines": bool(getattr(args, "document_lines", 1)),
            "commonLines": bool(getattr(args, "common_lines", 1)),
            "workspaceLines": bool(getattr(args, "workspace_lines", 1))}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.infill", description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="JSONL or JSONL.gz in the HumanEval-infilling schema")
    p.add_argument("--out", required=True, help="the result JSON")
    p.add_argument("--limit", type=int, default=None, help="the first N tasks only")
    p.add_argument("--typed", action="store_true",
                   help="each hole as if the first characters of its line were typed (benchmarks.tasks.typed)")
    p.add_argument("--auto-close", action="store_true",
                   help="with --typed: the line typed up to its first opening bracket or quote, whose closer "
                        "the editor has put after the cursor (benchmarks.tasks.auto_closed)")
    p.add_argument("--unended", action="store_true",
                   help="with --typed --auto-close: the lines that end with the closer and `;` instead, the `;` not "
                        "typed yet (it goes after the editor's closer; benchmarks.tasks.auto_closed_unended)")
    p.add_argument("--mid-word", action="store_true",
                   help="with --typed --auto-close: the fill's first 2-3 characters typed too when it starts with a "
                        "word, the cursor in a word before the closers (benchmarks.tasks.mid_word_closed)")
    p.add_argument("--mid-line", action="store_true",
                   help="with --typed: a word typed in the middle of an existing line whose closing run (`),` `;`) "
                        "stays after the cursor (benchmarks.tasks.mid_line_tail)")
    p.add_argument("--header", action="store_true",
                   help="with --typed --mid-line: the line opens a block, and its end from the closers before the "
                        "block's `:` or `{` stays after the cursor (`if len(it|):`; benchmarks.tasks.mid_line_header)")
    p.add_argument("--line-end", action="store_true",
                   help="with --typed: a word typed in the middle of an existing line, nothing after the cursor, "
                        "the fill the rest of the line (the new-user trial's line cases; benchmarks.tasks.mid_line_end)")
    p.add_argument("--samples", default=None, help='write {"task_id", "completion"} per task (JSONL)')
    p.add_argument("--records", default=None, help="write every per-task figure (JSONL)")
    p.add_argument("--via-lsp", action="store_true", help="fill through a real diffusion-lsp process")
    p.add_argument("--reference", action="store_true",
                   help="fill with the canonical solutions (checks the harness: pass@1 must be 100%%)")
    p.add_argument("--kind", choices=KINDS, default="auto",
                   help="hole kind; auto (default) lets the engine decide from the syntax, like the server")
    p.add_argument("--slots", type=int, default=None,
                   help="fill every hole once at this many token slots (default: the engine's choice, e.g. "
                        "8 and 24 for a one-line hole); for studies of hole length")
    p.add_argument("--workspace-corpus", default=None, metavar="DIR",
                   help="a hole's workspace is the other files of its package in this code corpus "
                        "(benchmarks.workspaces; holes from held-out corpus files)")
    p.add_argument("--workspace-packages", action="store_true",
                   help="a hole's workspace is the other files of its Debian package (holes of "
                        "benchmarks.other_lines: C, Java, Ruby, Perl, Lua; benchmarks.workspaces.PackageWorkspaces)")
    p.add_argument("--timeout", type=float, default=3.0, help="wall-clock limit per test program (s)")
    p.add_argument("--workers", type=int, default=None, help="test processes at once (default: CPUs)")
    p.add_argument("--no-tests", action="store_true", help="skip executing tests")
    engine_args(p)
    args = p.parse_args(argv)
    if args.via_lsp and (args.kind != "auto" or args.slots):
        p.error("--kind and --slots cannot be sent through the LSP; use them without --via-lsp")
    if args.via_lsp and (args.workspace_corpus or args.workspace_packages):
        p.error("--workspace-corpus and --workspace-packages work in-process only (the server indexes its own "
                "workspace folder)")
    if args.workspace_corpus and args.workspace_packages:
        p.error("--workspace-corpus or --workspace-packages, not both")
    if args.slots is not None and args.slots < 1:
        p.error("--slots must be at least 1")
    return args


def make_filler(args, stderr_dir: str, workspaces=None):
    if args.reference:
        return ReferenceFiller()
    if args.via_lsp:
        return LspFiller(server_options(args), stderr_path=Path(stderr_dir) / "server.log")
    return EngineFiller(engine_config(args), kind=None if args.kind == "auto" else args.kind, slots=args.slots,
                        workspaces=workspaces)


def settings(args) -> dict:
    if args.reference:
        return {}
    if args.via_lsp:
        return {**server_options(args), "kind": "auto"}
    return {**asdict(engine_config(args)), "kind": args.kind, "slots": args.slots}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    read = load_tasks(args.data, args.limit)
    if args.mid_word and not (args.typed and args.auto_close):
        print("--mid-word needs --typed --auto-close", file=sys.stderr)
        return 2
    if args.unended and (not (args.typed and args.auto_close) or args.mid_word):
        print("--unended needs --typed --auto-close (and not --mid-word)", file=sys.stderr)
        return 2
    if args.mid_line and not args.typed or args.mid_line and args.auto_close:
        print("--mid-line needs --typed (and not --auto-close)", file=sys.stderr)
        return 2
    if args.header and not args.mid_line:
        print("--header needs --typed --mid-line", file=sys.stderr)
        return 2
    if args.line_end and (not args.typed or args.auto_close or args.mid_line):
        print("--line-end needs --typed (and not --auto-close or --mid-line)", file=sys.stderr)
        return 2
    tasks = typed_tasks(read, auto_close=args.auto_close, mid_word=args.mid_word, mid_line=args.mid_line,
                        line_end=args.line_end, header=args.header, unended=args.unended) if args.typed else read
    closed = bool(args.typed and args.auto_close)
    name = (dataset_name(args.data) + ("-typed" if args.typed else "") + ("-closed" if closed else "")
            + ("-unended" if args.unended else "")
            + ("-word" if args.mid_word else "") + ("-midline" if args.mid_line else "")
            + ("-header" if args.header else "")
            + ("-lineend" if args.line_end else ""))
    if not tasks:
        # --limit counts the holes read; --typed (--auto-close) then keeps those it can type (up to a bracket)
        print(f"no tasks in {args.data}" if not read else
              f"none of the {len(read)} tasks read from {args.data} can be typed"
              f"{' up to an opening bracket or quote (--auto-close)' if closed else ' (--typed)'}: raise --limit",
              file=sys.stderr)
        return 2
    workspaces = None
    if args.workspace_corpus:
        from benchmarks.workspaces import CorpusWorkspaces

        workspaces = CorpusWorkspaces(args.workspace_corpus)
        tasks = workspaces.grouped(tasks)
    elif args.workspace_packages:
        from benchmarks.workspaces import PackageWorkspaces

        workspaces = PackageWorkspaces()
        tasks = workspaces.grouped(tasks)
    result = envelope("infill", "benchmarks.infill", argv)
    limits = Limits(timeout_s=args.timeout)
    with tempfile.TemporaryDirectory(prefix="bench-infill-") as tmp, make_filler(args, tmp, workspaces) as filler:
        result["model"] = {"model": "reference"} if args.reference else model_info(args.model, engine_config(args).load)
        records = evaluate(filler, tasks, limits, args.workers, run_tests=not args.no_tests,
                           label=name)
    result.update({
        "dataset": name, "data": args.data, "limit": args.limit, "typed": args.typed,
        "workspace_corpus": Path(args.workspace_corpus).name if args.workspace_corpus else None,
        "workspace_packages": args.workspace_packages,
        "auto_close": closed, "unended": args.unended, "mid_word": args.mid_word, "mid_line": args.mid_line,
        "header": args.header,
        "line_end": args.line_end,
        "via": filler.via,
        "settings": settings(args),
        "sandbox": asdict(limits),
        **summarise(records),
    })
    languages = sorted({t.language for t in tasks})
    if languages != ["python"]:   # a file with holes in several languages: the figures per language too
        result["languages"] = {lang: summarise([r for t, r in zip(tasks, records) if t.language == lang])
                               for lang in languages}
    if args.samples:
        write_jsonl(args.samples, [{"task_id": r["task_id"], "completion": r["completion"]} for r in records])
    if args.records:
        write_jsonl(args.records, records)
    write_result(args.out, result)
    print(headline(result))
    for lang, r in result.get("languages", {}).items():
        print(f"  {lang}: n={r['n']}, exact {pct(r['exact_match'])}, syntax {pct(r['syntax_valid'])}, "
              f"offered {r.get('offered', '-')}")
    return 0


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def num(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def headline(r: dict) -> str:
    lat = r["latency_ms"]
    return (f"{r['dataset']} n={r['n']} via {r['via']}: pass@1 {pct(r['pass_at_1'])}, exact {pct(r['exact_match'])}, "
            f"syntax {pct(r['syntax_valid'])}, p50 {lat['p50']} ms, p95 {lat['p95']} ms, "
            f"steps {num(r['steps'])}, forwards {num(r['forwards'])}, tokens/forward {num(r['tokens_per_forward'], 2)}"
            + (f", {r['errors']} engine errors" if r["errors"] else ""))


if __name__ == "__main__":
    sys.exit(run_cli(main))
