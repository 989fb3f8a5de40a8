"""Two models on the same development holes: the fills each considered (``benchmarks.confidence_set`` files),
compared hole by hole on the holes both sets cover, per set and per language.

    python -m benchmarks.compare_considered --baseline embedded --candidate runs/cont1/checkpoint \\
        --set code-lines=OLD.considered.jsonl.gz:NEW.considered.jsonl.gz [--set ...] \\
        [--train-log runs/cont1/train.log] --out benchmarks/results/continue-code.json

Counted per hole, with no confidence bar: ``exact`` (the fill the engine chose is exactly right) and
``with_fill`` (the engine considered at least one valid fill). ``changed`` counts the holes only one model
got exactly right ([only the baseline, only the candidate]) and ``sign_p`` is the two-sided exact sign test
on them: the chance of a split at least that uneven if the two models were equally good, so a difference of
a few lines among thousands of holes is told from churn. ``same_chosen`` counts the holes where both chose the
same fill (or both none): for the same weights run another way (``--candidate-quantization int8``), how often
the editor would see the same suggestion. ``overall`` adds the sets up. With ``--train-log``
the candidate's run is summarised too (its command settings, steps, tokens and the validation losses at its
start and end).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
from pathlib import Path

from .report import envelope, model_info, write_result


def load(path: Path) -> dict[str, dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return {r["task_id"]: r for r in (json.loads(line) for line in f if line.strip())}


def chose_exact(record: dict) -> bool:
    fills = {f["text"]: f for f in record["fills"]}
    return record["chosen"] is not None and bool(fills.get(record["chosen"], {}).get("exact"))


def sign_p(only_baseline: int, only_candidate: int) -> float:
    """Two-sided exact sign test: the probability, if each changed hole were a fair coin, of a split at
    least as uneven as this one (1.0 when nothing changed)."""
    n, k = only_baseline + only_candidate, min(only_baseline, only_candidate)
    if n == 0:
        return 1.0
    return round(min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n), 4)


def _add(into: dict, t: dict) -> None:
    into["holes"] += t["holes"]
    into["same_chosen"] += t["same_chosen"]
    for key in ("exact", "with_fill", "changed"):
        into[key] = [into[key][i] + t[key][i] for i in (0, 1)]


def _empty() -> dict:
    return {"holes": 0, "exact": [0, 0], "with_fill": [0, 0], "changed": [0, 0], "same_chosen": 0}


def _finish(t: dict) -> dict:
    return {**t, "sign_p": sign_p(*t["changed"])}


def compare(baseline: dict[str, dict], candidate: dict[str, dict]) -> dict:
    """Per language and in total, on the holes both cover: holes, exact, with_fill and changed as
    [baseline, candidate], the sign test on the changed holes, and same_chosen: the holes where both chose the
    same fill (or both none)."""
    languages: dict[str, dict] = {}
    for task_id, new in candidate.items():
        old = baseline.get(task_id)
        if old is None:
            continue
        t = languages.setdefault(new.get("language", "python"), _empty())
        t["holes"] += 1
        t["same_chosen"] += old.get("chosen") == new.get("chosen")
        right = [chose_exact(r) for r in (old, new)]
        for i, r in enumerate((old, new)):
            t["exact"][i] += right[i]
            t["with_fill"][i] += bool(r["fills"])
            t["changed"][i] += right[i] and not right[1 - i]
    total = _empty()
    for t in languages.values():
        _add(total, t)
    return {"baseline_holes": len(baseline), "candidate_holes": len(candidate), "total": _finish(total),
            "languages": {k: _finish(v) for k, v in sorted(languages.items())}}


def overall(sets: dict[str, dict]) -> dict:
    """The sets added up, per language and in total (a hole belongs to one set)."""
    languages: dict[str, dict] = {}
    total = _empty()
    for st in sets.values():
        for lang, t in st["languages"].items():
            _add(languages.setdefault(lang, _empty()), t)
            _add(total, t)
    return {"total": _finish(total), "languages": {k: _finish(v) for k, v in sorted(languages.items())}}


def run_summary(log: Path) -> dict:
    """The candidate's last training run as the model card's table of runs reads it (steps, tokens, minutes,
    hardware, data, settings), with the one-line-hole validation losses at its start and end."""
    from engine.training.report import runs

    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    starts = [i for i, r in enumerate(records) if r.get("event") in ("start", "resume")]
    if not starts:
        raise ValueError(f"{log}: no start or resume event")
    part = records[starts[-1]:]
    end = next((r for r in reversed(part) if r.get("event") in ("end", "stopped")), None)
    if end is None:
        raise ValueError(f"{log}: the last run has no end event")
    vals = [r for r in part if "val_line_hole" in r]
    losses = lambda r: {k: v for k, v in r.items() if k.startswith("val_line_hole")}  # noqa: E731
    return {**runs(records)[-1], "validation_start": losses(vals[0]) if vals else {}, "validation_end": losses(end)}


def offered(considered: Path, data: Path, calibration) -> dict[str, bool | None]:
    """Per hole of a considered set: what the engine would show at the calibration's default bar: None (no fill
    offered) or whether the offered fill is exactly right. The features are recomputed on the hole's document
    (``data``), as the calibration reads them."""
    from benchmarks.calibrate_languages import pick, prepare

    out: dict[str, bool | None] = {}
    for row in prepare(str(considered), str(data)):
        got = pick(row, calibration)
        out[row["task_id"]] = None if got is None or got[0] < calibration.min_confidence else bool(got[1]["exact"])
    return out


def offer_counts(old: dict[str, bool | None], new: dict[str, bool | None]) -> dict:
    """On the holes both sides cover: holes offered a fill and holes offered the exactly right one, [baseline,
    candidate]."""
    common = [k for k in new if k in old]
    return {"holes": len(common),
            "offered": [sum(side[k] is not None for k in common) for side in (old, new)],
            "right": [sum(bool(side[k]) for k in common) for side in (old, new)]}


def _data(text: str) -> tuple[str, Path]:
    name, _, path = text.partition("=")
    if not (name and path):
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=TASKS")
    return name, Path(path)


def _pair(text: str) -> tuple[str, Path, Path]:
    name, _, paths = text.partition("=")
    old, _, new = paths.partition(":")
    if not (name and old and new):
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=BASELINE:CANDIDATE")
    return name, Path(old), Path(new)


def described(model: str, quantization: str) -> dict:
    """``model_info``, and the quantization the fills were recorded with when it is not ``none`` (``auto``: what
    the model directory states, as ``confidence_set`` resolved it)."""
    from engine.config import LoadConfig

    return model_info(model, LoadConfig(model=model, device="cpu", quantization=quantization))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.compare_considered", description=__doc__.splitlines()[0])
    p.add_argument("--baseline", required=True, help='the baseline model: "embedded" or a checkpoint directory')
    p.add_argument("--candidate", required=True, help="the candidate model's checkpoint directory")
    p.add_argument("--set", dest="sets", type=_pair, action="append", required=True,
                   help="NAME=BASELINE_CONSIDERED:CANDIDATE_CONSIDERED")
    for side in ("baseline", "candidate"):
        p.add_argument(f"--{side}-quantization", default="auto", choices=("auto", "none", "int8"),
                       help=f"the {side}'s fills were recorded with this --quantization (auto: the model's own)")
    p.add_argument("--calibration", default="",
                   help='with --data: count what both sides would offer at this model\'s calibrated bar ("embedded" '
                        "or a checkpoint directory with a confidence.json)")
    p.add_argument("--data", dest="data", type=_data, action="append", default=[],
                   help="NAME=TASKS: the task file a set's holes came from (for --calibration)")
    p.add_argument("--train-log", type=Path, default=None, help="the candidate run's train.log")
    p.add_argument("--verdict", default="", help="what was decided from these figures, and why")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    for _, old, new in args.sets:
        for path in (old, new):
            if not path.is_file():
                print(f"compare_considered: {path}: no such file", file=sys.stderr)
                return 2
    result = {**envelope("compare-considered", "benchmarks.compare_considered", argv),
              "baseline": described(args.baseline, args.baseline_quantization),
              "candidate": described(args.candidate, args.candidate_quantization),
              "sets": {name: {"baseline_file": str(old), "candidate_file": str(new), **compare(load(old), load(new))}
                       for name, old, new in args.sets},
              "verdict": args.verdict}
    result["overall"] = overall(result["sets"])
    if args.calibration:
        from engine.config import model_dir
        from engine.confidence import load_calibration

        calibration = load_calibration(model_dir(args.calibration))
        if calibration is None:
            print(f"compare_considered: {args.calibration} has no confidence calibration", file=sys.stderr)
            return 2
        data = dict(args.data)
        total = {"holes": 0, "offered": [0, 0], "right": [0, 0]}
        for name, old, new in args.sets:
            if name not in data:
                continue
            counts = offer_counts(offered(old, data[name], calibration), offered(new, data[name], calibration))
            result["sets"][name]["offered_at_bar"] = counts
            total["holes"] += counts["holes"]
            for key in ("offered", "right"):
                total[key] = [total[key][i] + counts[key][i] for i in (0, 1)]
        result["offered_at_bar"] = {"calibration": args.calibration, "bar": calibration.min_confidence, **total}
    if args.train_log:
        result["candidate_run"] = run_summary(args.train_log)
    write_result(args.out, result)
    for name, s in [*result["sets"].items(), ("all sets", result["overall"])]:
        print(name, json.dumps(s["total"]))
    if "offered_at_bar" in result:
        print("offered at the bar", json.dumps(result["offered_at_bar"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
