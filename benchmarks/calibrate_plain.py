"""The calibration's correction for languages the engine has no grammar for (plain text: C, Java, Ruby, Perl, Lua).

The shipped calibration is fitted on the five languages with a grammar, and reads a plain-text fill's features as
a Python fill's. This fits ``scale`` and ``shift`` of the log-odds, and a shift per regime
(``engine.confidence.PLAIN_SHIFTS``: the request's workspace counts files of the language, the hole is the rest of a
typed line, both), on development holes of such languages (``benchmarks.other_lines``, recorded with
``benchmarks.confidence_set`` four times: whole lines and typed lines, each alone, as a file opened without a folder,
and with each hole's package's other files as its workspace; nothing of them is trained on), the fill the engine
chose per hole against whether it is exactly right. Alone, the fitted model overrated whole lines; with the
workspace's lines it rated them about right. It reports the correction held out by language, each regime apart:
each language's figures come from a correction fitted on the other languages only, since a user's language may be
none of them. The bar stays the calibration's: a fill is offered when it is at least that likely.

    python -m benchmarks.other_lines --out runs/conf/other-dev.jsonl
    python -m benchmarks.confidence_set --data runs/conf/other-dev.jsonl [--typed] [--workspace-packages] \\
        --min-confidence 0 --out runs/conf/other-dev[-typed][-ws].considered.jsonl      # the four recordings
    python -m benchmarks.calibrate_plain --considered runs/conf/other-dev.considered.jsonl \\
        --considered runs/conf/other-dev-ws.considered.jsonl --considered ... \\
        --model-out engine/models/embedded/confidence.json --out benchmarks/results/confidence-plain.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
from pathlib import Path

import numpy as np

from benchmarks.report import envelope, write_result
from benchmarks.tasks import PLAIN_LANGUAGES
from engine.confidence import CALIBRATION_FILE, PLAIN_SHIFTS, Calibration, load_calibration

BINS = (0.0, 0.06, 0.1, 0.2, 0.4, 0.7, 1.0)


def chosen_points(path: str, calibration: Calibration) -> list[dict]:
    """Per hole of a plain-text language: the chosen fill's log-odds under ``calibration`` (uncorrected), whether
    it is exactly right, whether it uses an invented name, and its regime's features (``PLAIN_SHIFTS``)."""
    opener = gzip.open if path.endswith(".gz") else open
    points = []
    with opener(path, "rt", encoding="utf-8") as f:
        for row in map(json.loads, f):
            if row.get("language") not in PLAIN_LANGUAGES:
                continue
            fill = next((x for x in row["fills"] if x["text"] == row.get("chosen")), None)
            if fill is not None:
                points.append({"language": row["language"], "z": calibration.log_odds(fill["features"]),
                               "exact": bool(fill["exact"]), "invented": bool(fill["features"].get("invented")),
                               "shifts": [float(fill["features"].get(name, 0.0)) for name in PLAIN_SHIFTS]})
    return points


Correction = tuple[float, float, tuple[float, ...]]   # scale, shift, one shift per ``PLAIN_SHIFTS`` feature
IDENTITY: Correction = (1.0, 0.0, (0.0,) * len(PLAIN_SHIFTS))


def fit(points: list[dict], iterations: int = 50) -> Correction:
    """``(scale, shift, shifts)`` maximising the likelihood of ``sigmoid(scale * z + shift + sum(shifts * the
    point's regime features))`` (Newton's method, a tiny ridge towards the identity so a degenerate set cannot run
    away; a regime no point is in keeps its shift at 0)."""
    if not points:
        return IDENTITY
    x = np.array([[p["z"], 1.0, *p.get("shifts", IDENTITY[2])] for p in points])
    y = np.array([float(p["exact"]) for p in points])
    prior = np.array([1.0, 0.0, *IDENTITY[2]])
    theta, ridge = prior.copy(), 1e-3
    for _ in range(iterations):
        q = 1.0 / (1.0 + np.exp(-np.clip(x @ theta, -60.0, 60.0)))
        grad = x.T @ (q - y) + ridge * (theta - prior)
        hess = (x * (q * (1.0 - q))[:, None]).T @ x + ridge * np.eye(len(theta))
        step = np.linalg.solve(hess, grad)
        theta = theta - step
        if np.abs(step).sum() < 1e-9:
            break
    a, b, *rest = (round(float(v), 5) for v in theta)
    return a, b, tuple(rest)


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def summary(points: list[dict], correction: Correction, calibration: Calibration) -> dict:
    """What the default bar offers with ``correction`` applied: offered, right, precision, the mean estimate of the
    offered fills (against their precision), log-loss over every chosen fill, and bins of the estimate."""
    a, b, shifts = correction
    offered = right = 0
    estimate = loss = 0.0
    bins = [[0, 0, 0.0] for _ in BINS[:-1]]
    for p in points:
        q = _sigmoid(a * p["z"] + b + sum(v * f for v, f in zip(shifts, p.get("shifts", IDENTITY[2]))))
        loss -= math.log(max(1e-12, q if p["exact"] else 1.0 - q))
        if q < calibration.min_confidence or p["invented"] and q < calibration.very_high:
            continue
        offered, right, estimate = offered + 1, right + p["exact"], estimate + q
        i = next(i for i in range(len(BINS) - 1) if q < BINS[i + 1] or i == len(BINS) - 2)
        bins[i][0], bins[i][1], bins[i][2] = bins[i][0] + 1, bins[i][1] + p["exact"], bins[i][2] + q
    return {"holes": len(points), "offered": offered, "right": right,
            "precision": round(right / offered, 4) if offered else None,
            "mean_estimate": round(estimate / offered, 4) if offered else None,
            "log_loss": round(loss / len(points), 4) if points else None,
            "bins": [{"from": lo, "to": hi, "n": n, "mean_estimate": round(s / n, 4), "right": round(k / n, 4)}
                     for (lo, hi), (n, k, s) in zip(zip(BINS, BINS[1:]), bins) if n]}


def as_json(correction: Correction) -> dict:
    return {"scale": correction[0], "shift": correction[1], "shifts": dict(zip(PLAIN_SHIFTS, correction[2]))}


def held_out(points: list[dict], calibration: Calibration, shipped: Correction | None = None) -> dict:
    """Per language: the figures without the correction, and with one fitted on the other languages only (or with
    ``shipped``, fitted on none of these holes); the same per regime (``by_regime``: whole lines or typed ones, alone
    or with their package's files as the workspace)."""
    out = {}
    for language in sorted({p["language"] for p in points}):
        own = [p for p in points if p["language"] == language]
        correction = shipped or fit([p for p in points if p["language"] != language])
        out[language] = {"correction_from_the_others": as_json(correction),
                         "before": summary(own, IDENTITY, calibration),
                         "after": summary(own, correction, calibration),
                         "by_regime": {name: {"before": summary(part, IDENTITY, calibration),
                                              "after": summary(part, correction, calibration)}
                                       for name, part in regimes(own)}}
    return out


def regimes(points: list[dict]) -> list[tuple[str, list[dict]]]:
    """The points of each regime, where there are some: a whole line or a typed one (``kind_inline``), alone or in a
    workspace that counts the language (``plain_workspace``)."""
    workspace, typed = PLAIN_SHIFTS.index("plain_workspace"), PLAIN_SHIFTS.index("kind_inline")
    parts: dict[str, list[dict]] = {}
    for p in points:
        shifts = p.get("shifts", IDENTITY[2])
        name = f"{'typed' if shifts[typed] else 'whole line'}, {'workspace' if shifts[workspace] else 'alone'}"
        parts.setdefault(name, []).append(p)
    order = ["whole line, alone", "whole line, workspace", "typed, alone", "typed, workspace"]
    return [(name, parts[name]) for name in order if name in parts]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.calibrate_plain", description=__doc__.split("\n\n")[0])
    p.add_argument("--considered", required=True, action="append",
                   help="a benchmarks.confidence_set output of plain-text holes (repeatable)")
    p.add_argument("--model", default="engine/models/embedded", help="the model whose calibration is corrected")
    p.add_argument("--model-out", default=None, help="write the calibration with the fitted correction here")
    p.add_argument("--no-fit", action="store_true",
                   help="fit nothing: report the model's own correction on these holes (a language it was not "
                        "fitted on: C++)")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    if args.no_fit and args.model_out:
        p.error("--no-fit writes no calibration (--model-out)")
    calibration = load_calibration(Path(args.model))
    if calibration is None:
        p.error(f"{args.model} has no {CALIBRATION_FILE}")
    points = [q for path in args.considered for q in chosen_points(path, calibration)]
    if not points:
        p.error(f"no holes of {', '.join(PLAIN_LANGUAGES)} in {', '.join(args.considered)}")
    shipped = None
    if args.no_fit:
        if calibration.plain_text is None:
            p.error(f"{args.model}'s {CALIBRATION_FILE} has no plain-text correction to report")
        given = dict(calibration.plain_shifts)
        shipped = (*calibration.plain_text, tuple(given.get(name, 0.0) for name in PLAIN_SHIFTS))
    correction = shipped or fit(points)
    per_language = held_out(points, calibration, shipped)
    result = envelope("calibrate-plain", "benchmarks.calibrate_plain", argv)
    result.update({
        "considered": args.considered, "holes": len(points), "bar": calibration.min_confidence,
        "correction": as_json(correction), "fitted": not args.no_fit,
        "held_out_by_language": per_language,
        "held_out_total": {side: {k: sum(v[side][k] for v in per_language.values()) for k in ("offered", "right")}
                           for side in ("before", "after")},
        "in_sample": {"before": summary(points, IDENTITY, calibration),
                      "after": summary(points, correction, calibration)},
        "in_sample_by_regime": {name: {"before": summary(part, IDENTITY, calibration),
                                       "after": summary(part, correction, calibration)}
                                for name, part in regimes(points)},
    })
    if args.model_out:
        fitted_on = (f"{' + '.join(Path(c).name for c in args.considered)}: {len(points)} one-line holes, "
                     f"{', '.join(sorted({q['language'] for q in points}))}")
        data = json.loads(Path(args.model, CALIBRATION_FILE).read_text(encoding="utf-8"))
        data["plain_text"] = {**as_json(correction), "fitted_on": fitted_on}
        Path(args.model_out).write_text(json.dumps(data, indent=2) + "\n")
    write_result(args.out, result)
    t = result["held_out_total"]
    print(f"plain text: scale {correction[0]}, shift {correction[1]}, "
          f"{', '.join(f'{k} {v:+}' for k, v in zip(PLAIN_SHIFTS, correction[2]))} on {len(points)} holes; held out "
          f"by language: offered {t['before']['offered']} -> {t['after']['offered']}, right {t['before']['right']} -> "
          f"{t['after']['right']}")
    for language, v in per_language.items():
        for regime, w in v["by_regime"].items():
            b, a = w["before"], w["after"]
            print(f"  {language}, {regime}: precision {b['precision']} -> {a['precision']} (mean estimate "
                  f"{b['mean_estimate']} -> {a['mean_estimate']}), offered {b['offered']} -> {a['offered']}, "
                  f"log-loss {b['log_loss']} -> {a['log_loss']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
