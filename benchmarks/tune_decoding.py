"""Decoding tuned per language on development holes (#13 part 5): for each language, the slot counts a one-line hole
is tried at and the step budget that write the most lines exactly, chosen on one development set and confirmed on
another; what is adopted can be written into the model directory's ``serving.json`` (``engine/decoding.py``).

    python -m benchmarks.tune_decoding --model embedded --tune runs/conf/extra-dev.jsonl \\
        --confirm benchmarks/data/code-lines.jsonl.gz --per-language 150 --out benchmarks/results/tune-decoding.json

A coordinate search, each stage on every language's tune holes: first the line lengths (with the default steps),
then the step budget (with each language's best lengths). A language adopts a candidate only when it gets more
holes exactly right than the engine's defaults on the tune set with a one-sided sign test p below ``--max-p``
over the holes only one of them got right, and costs at most ``--max-slowdown`` times the defaults' engine time
(p50); otherwise it keeps the defaults. The confirm set (other held-out files) then reports defaults against the
adopted choice. Never HumanEval: it is a test set.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from contextlib import ExitStack
from dataclasses import replace
from difflib import SequenceMatcher
from pathlib import Path

from benchmarks.compare_considered import sign_p
from benchmarks.evaluate import fill_interleaved
from benchmarks.fillers import EngineFiller
from benchmarks.infill import engine_args, engine_config
from benchmarks.metrics import exact_match, normalise, percentile
from benchmarks.report import envelope, model_info, run_cli, write_result
from benchmarks.tasks import Task, load_tasks

DEFAULT_LENGTHS = (8, 24)        # engine/lengths.py's _LINE_LENGTHS
DEFAULT_STEPS = 16               # the masked backend's default
LENGTHS = ((8, 16), (16, 32), (24,), (8, 16, 24))   # candidates besides the defaults
STEPS = (8, 12, 24)


def per_language(tasks: list[Task], n: int) -> dict[str, list[Task]]:
    """The first ``n`` holes of each language, in file order."""
    out: dict[str, list[Task]] = defaultdict(list)
    for t in tasks:
        if len(out[t.language]) < n:
            out[t.language].append(t)
    return dict(out)


def score(tasks: list[Task], fills) -> dict:
    exact = [exact_match(f.completion, t.canonical_solution) for t, f in zip(tasks, fills)]
    sim = [SequenceMatcher(None, normalise(f.completion), normalise(t.canonical_solution)).ratio()
           for t, f in zip(tasks, fills)]
    ms = sorted(f.engine_ms or f.elapsed_ms for f in fills)
    return {"n": len(tasks), "exact": sum(exact), "exact_holes": [t.task_id for t, e in zip(tasks, exact) if e],
            "edit_similarity": round(sum(sim) / max(1, len(sim)), 4),
            "forwards_mean": round(sum(f.forwards or 0 for f in fills) / max(1, len(fills)), 2),
            "engine_ms_p50": round(percentile(ms, 50), 1) if ms else None,
            "errors": sum(1 for f in fills if f.error)}


def run_stage(args, tasks: list[Task], settings: list[tuple[tuple[int, ...], int]]) -> dict:
    """Every setting on every hole, hole by hole, rotating which goes first (``fill_interleaved``): a change in
    the machine's load touches every setting alike, so their times compare. Keyed by ``key_of``; the engine's
    defaults are "defaults"."""
    fillers = {}
    with ExitStack() as stack:
        for lengths, steps in dict.fromkeys(settings):
            config = engine_config(args, min_confidence=0.0)
            config = replace(config, fill=replace(config.fill, line_lengths=lengths, steps=steps))
            fillers[key_of(lengths, steps)] = stack.enter_context(EngineFiller(config))
        fills = fill_interleaved(fillers, tasks, label=f"{tasks[0].language}: {len(fillers)} settings")
    return {key: {"setting": setting, **score(tasks, fills[key])}
            for setting in dict.fromkeys(settings) for key in [key_of(*setting)]}


def versus(base: dict, cand: dict) -> dict:
    """Holes only one side got exactly right, and the one-sided sign test that the candidate is better."""
    a, b = set(base["exact_holes"]), set(cand["exact_holes"])
    only_base, only_cand = len(a - b), len(b - a)
    two_sided = sign_p(only_base, only_cand)
    one_sided = two_sided / 2 if only_cand > only_base else 1.0
    return {"only_defaults": only_base, "only_candidate": only_cand, "p_one_sided": round(min(1.0, one_sided), 4)}


def choose(stage: dict, base: dict, args) -> tuple[str, dict]:
    """The candidate a language adopts in one stage (its key), or the defaults' key."""
    best_key, best = "defaults", None
    for key, r in stage.items():
        if key == "defaults":
            continue
        v = versus(base, r)
        r["versus_defaults"] = v
        slow = (r["engine_ms_p50"] or 0) > args.max_slowdown * (base["engine_ms_p50"] or 0)
        r["adoptable"] = r["exact"] > base["exact"] and v["p_one_sided"] < args.max_p and not slow
        if r["adoptable"] and (best is None or (r["exact"], r["edit_similarity"]) > (best["exact"],
                                                                                    best["edit_similarity"])):
            best_key, best = key, r
    return best_key, (best or base)


def _lengths(text: str) -> tuple[int, ...]:
    try:
        lengths = tuple(int(n) for n in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: slot counts separated by commas, e.g. 8,16") from None
    if not lengths or any(n < 1 for n in lengths):
        raise argparse.ArgumentTypeError(f"{text!r}: slot counts must be positive")
    return lengths


def key_of(lengths: tuple[int, ...], steps: int) -> str:
    if (tuple(lengths), steps) == (DEFAULT_LENGTHS, DEFAULT_STEPS):
        return "defaults"
    return f"lengths {'/'.join(map(str, lengths))}, steps {steps}"


def write_serving(model_dir: Path, chosen: dict) -> Path:
    """Merge the adopted per-language decoding into ``serving.json`` (other keys kept; a language that adopted
    nothing is removed, so the engine's defaults apply to it)."""
    path = model_dir / "serving.json"
    data = json.loads(path.read_text()) if path.is_file() else {}
    table = {lang: c["decoding"] for lang, c in chosen.items() if c["decoding"]}
    if table:
        data["decoding"] = table
    else:
        data.pop("decoding", None)
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.tune_decoding", description=__doc__.splitlines()[0])
    engine_args(p)
    p.add_argument("--tune", required=True, help="development holes the choice is made on (never HumanEval)")
    p.add_argument("--confirm", required=True, help="other development holes the choice is checked on")
    p.add_argument("--per-language", type=int, default=150, help="holes per language from each set")
    p.add_argument("--languages", nargs="+", default=None, help="only these languages (default: every one)")
    p.add_argument("--lengths", nargs="+", type=_lengths, default=list(LENGTHS),
                   help="line-length candidates besides the defaults 8,24 (e.g. 8,16 24)")
    p.add_argument("--step-budgets", nargs="+", type=int, default=list(STEPS),
                   help="step-budget candidates besides the default 16")
    p.add_argument("--max-p", type=float, default=0.2, help="adopt only below this one-sided sign-test p")
    p.add_argument("--max-slowdown", type=float, default=1.25, help="adopt only within this engine p50 ratio")
    p.add_argument("--write", default="", help="merge the adopted decoding into this model directory's serving.json")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    for path in (args.tune, args.confirm):
        if "humaneval" in Path(path).name.lower():
            print("tune_decoding: HumanEval is a test set; tune and confirm on development holes", file=sys.stderr)
            return 2
    tune = per_language(load_tasks(args.tune), args.per_language)
    confirm = per_language(load_tasks(args.confirm), args.per_language)
    languages = [lang for lang in (args.languages or list(tune)) if lang in tune and lang in confirm]
    if not languages:
        print("tune_decoding: no language has holes in both sets", file=sys.stderr)
        return 2
    result = envelope("tune-decoding", "benchmarks.tune_decoding", argv)
    result.update(model=model_info(args.model, engine_config(args).load), tune=args.tune, confirm=args.confirm,
                  per_language=args.per_language, max_p=args.max_p, max_slowdown=args.max_slowdown, languages={})
    chosen: dict = {}
    for lang in languages:
        holes = tune[lang]
        defaults = (DEFAULT_LENGTHS, DEFAULT_STEPS)
        lengths_stage = run_stage(args, holes, [defaults] + [(lengths, DEFAULT_STEPS) for lengths in args.lengths])
        k1, _ = choose(lengths_stage, lengths_stage["defaults"], args)
        best_lengths = lengths_stage[k1]["setting"][0]
        steps_stage = run_stage(args, holes, [defaults, (best_lengths, DEFAULT_STEPS)]
                                + [(best_lengths, steps) for steps in args.step_budgets])
        k2, _ = choose(steps_stage, steps_stage["defaults"], args)
        final = steps_stage[k2]["setting"] if k2 != "defaults" else lengths_stage[k1]["setting"]
        decoding: dict = {}
        if final[0] != DEFAULT_LENGTHS:
            decoding["line_lengths"] = list(final[0])
        if final[1] != DEFAULT_STEPS:
            decoding["steps"] = final[1]
        final_key = key_of(*final)
        check = run_stage(args, confirm[lang], [defaults, final])
        confirm_base, confirmed = check["defaults"], check.get(final_key) if decoding else None
        if confirmed is not None:
            confirmed["versus_defaults"] = versus(confirm_base, confirmed)
        chosen[lang] = {"decoding": decoding}
        result["languages"][lang] = {"tune": {"lengths": lengths_stage, "steps": steps_stage},
                                     "adopted": final_key, "decoding": decoding,
                                     "confirm": {"defaults": confirm_base, "adopted": confirmed}}
        c = confirmed or confirm_base
        print(f"{lang}: adopted {final_key}; confirm exact {confirm_base['exact']} -> {c['exact']} of "
              f"{confirm_base['n']}", flush=True)
    if args.write:
        from engine.config import model_dir

        result["written"] = str(write_serving(model_dir(args.write), chosen))
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
