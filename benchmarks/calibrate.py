"""Fit the confidence model on a development set, choose the default bar, and report precision/coverage.

The first calibration (Python only, the held-out stdlib lines); the shipped one is now fitted on every
language's development sets by ``benchmarks.calibrate_languages``, which reuses ``load`` and the bar rule.

Reads what ``benchmarks.confidence_set`` recorded (every valid fill per hole, its features, whether it is
exactly right; no model runs here). The development set is split by task: even positions fit the
logistic model and choose ``min_confidence``, odd positions report. HumanEval, when given, is only
reported (pass@1 with and without abstention), never fitted or tuned on:

    python -m benchmarks.calibrate --dev /tmp/dev-considered.jsonl --humaneval /tmp/humaneval-considered.jsonl \
        --model-out engine/models/embedded/confidence.json --out benchmarks/results/confidence.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import numpy as np

from benchmarks.report import envelope, write_result
from engine.confidence import Calibration, choose
from engine.requests import HoleFill

TARGET_PRECISION = 0.40   # the bar is the lowest whose fit-half precision reaches this (issue: >= 35% offered)
MIN_COVERAGE = 0.15      # ... else the bar that offers a fill for this share of the holes
VERY_HIGH = 0.6           # an invented name alone is offered only at this estimate
FEATURES = ("mean_log", "min_log", "log_tokens", "agree", "alone", "repeats_line", "invented",
            "kind_inline", "kind_block", "python")   # this first calibration's features, as recorded


def load(path: str) -> list[dict]:
    """The records of a ``confidence_set`` output (``.jsonl`` or ``.jsonl.gz``)."""
    raw = Path(path).read_bytes()
    text = (gzip.decompress(raw) if path.endswith(".gz") else raw).decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def fit(rows: list[dict], names: tuple[str, ...], l2: float = 1.0, iters: int = 50, jitter: float = 0.0) -> Calibration:
    """Logistic regression (Newton steps, L2 on the weights) over every considered fill of ``rows``; ``jitter``
    on the Hessian's diagonal keeps it invertible when a feature never varies (the intercept has no L2)."""
    X = np.array([[f["features"].get(n, 0.0) for n in names] for r in rows for f in r["fills"]],
                 dtype=float).reshape(-1, len(names))   # no fill at all (a weak model's fold): zero rows, not 1-D
    y = np.array([float(f["exact"]) for r in rows for f in r["fills"]])
    X1 = np.hstack([X, np.ones((len(X), 1))])
    w = np.zeros(X1.shape[1])
    reg = np.eye(X1.shape[1]) * l2
    reg[-1, -1] = 0.0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-np.clip(X1 @ w, -60, 60)))
        grad = X1.T @ (p - y) + reg @ w
        hess = (X1 * (p * (1 - p))[:, None]).T @ X1 + reg + np.eye(X1.shape[1]) * jitter
        w -= np.linalg.solve(hess, grad)
    return Calibration({n: round(float(v), 5) for n, v in zip(names, w[:-1])}, round(float(w[-1]), 5))


def chosen(row: dict, cal: Calibration, names_rule: bool) -> tuple[float, dict] | None:
    """The fill the engine would offer with no bar, with its estimate; ``None`` when it offers none."""
    assessed = []
    for f in row["fills"]:
        fill = HoleFill(f["start"], f["end"], f["text"], tuple(f["confidences"]),
                        confidence=cal.probability(f["features"]), copied=bool(f.get("copied")),
                        common=f.get("common"), workspace=f.get("workspace"),
                        neighbour=f.get("neighbour"), between=bool(f.get("between")))
        assessed.append((fill, f["features"]))
    pick = choose(assessed, cal, 0.0, names_rule)
    if pick is None:
        return None
    return pick.confidence, next(f for f in row["fills"] if f["text"] == pick.text)


def curve(rows: list[dict], cal: Calibration, names_rule: bool, key: str = "exact") -> list[dict]:
    """Precision and coverage of the offered fills at every bar (each distinct estimate)."""
    picks = sorted(((p, bool(f[key])) for p, f in filter(None, (chosen(r, cal, names_rule) for r in rows))),
                   key=lambda x: -x[0])
    out, right = [], 0
    for i, (p, ok) in enumerate(picks, 1):
        right += ok
        out.append({"bar": round(p, 4), "offered": i, "coverage": i / len(rows), "precision": right / i,
                    "right_of_all": right / len(rows)})
    return out


def at_bar(points: list[dict], bar: float, n: int) -> dict:
    """The point of ``curve`` for the bar ``bar`` (offer fills whose estimate >= bar)."""
    offered = [p for p in points if p["bar"] >= bar]
    if not offered:
        return {"bar": bar, "offered": 0, "coverage": 0.0, "precision": None, "right_of_all": 0.0}
    return {**offered[-1], "bar": bar, "n": n}


def choose_bar(points: list[dict], target: float = TARGET_PRECISION, floor: float = MIN_COVERAGE) -> float:
    """The lowest bar whose precision reaches ``target`` (the widest coverage that keeps precision high);
    when no bar reaches it (a development set where few fills are right at all), the bar that keeps
    ``floor`` of the holes covered: the most precise offer at the issue's coverage."""
    good = [p for p in points if p["precision"] >= target and p["offered"] >= 20]
    if good:
        return good[-1]["bar"]
    covered = [p for p in points if p["coverage"] >= floor]
    return covered[0]["bar"] if covered else (points[-1]["bar"] if points else 0.0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.calibrate", description=__doc__.splitlines()[0])
    p.add_argument("--dev", required=True, help="benchmarks.confidence_set output on a development set")
    p.add_argument("--humaneval", default=None, help="the same on HumanEval (reported only)")
    p.add_argument("--model-out", default=None, help="write the fitted calibration here (confidence.json)")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    from benchmarks.confidence_plot import plot_curves, humaneval_report

    dev = load(args.dev)
    fit_half, report_half = dev[0::2], dev[1::2]
    result = envelope("calibrate", "benchmarks.calibrate", argv)
    variants = {}
    for label, names_rule in (("names_rule", True), ("no_names_rule", False)):
        names = FEATURES if names_rule else tuple(n for n in FEATURES if n != "invented")
        cal = fit(fit_half, names)
        bar = choose_bar(curve(fit_half, cal, names_rule))
        cal = Calibration(cal.weights, cal.bias, bar, VERY_HIGH, f"{Path(args.dev).name}: even tasks of {len(dev)}")
        points = curve(report_half, cal, names_rule)
        variants[label] = {"calibration": cal.to_json(), "report_curve": points,
                           "at_default": at_bar(points, bar, len(report_half)),
                           "no_abstention": at_bar(points, 0.0, len(report_half))}
        if args.humaneval:
            variants[label]["humaneval"] = humaneval_report(load(args.humaneval), cal, names_rule, chosen)
    result.update({"dev": args.dev, "n_dev": len(dev), "n_fit": len(fit_half), "n_report": len(report_half),
                   "target_precision": TARGET_PRECISION, "variants": variants})
    if args.model_out:
        Path(args.model_out).write_text(json.dumps(variants["names_rule"]["calibration"], indent=2) + "\n")
    plot_curves(result, Path(args.out).with_suffix(".png"))
    write_result(args.out, result)
    for label, v in variants.items():
        d, h = v["at_default"], v.get("humaneval", {})
        print(f"{label}: bar {d['bar']}: precision {d['precision']}, coverage {d['coverage']:.3f} "
              f"(report half, n={len(report_half)}); humaneval {json.dumps(h.get('summary', {}))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
