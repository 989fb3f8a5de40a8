"""The confidence model's report: HumanEval pass@1 with and without abstention, and the precision/coverage plot."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def humaneval_report(rows: list[dict], cal, names_rule: bool, chosen) -> dict:
    """pass@1 over all tasks for: the engine before (most confident fill by mean log-confidence), the
    calibrated choice without a bar, and with the default bar (abstaining counts as a failure), plus
    pass@1 and exact match among the offered fills; and the curve of pass among offered by coverage."""
    n = len(rows)
    before = sum(bool(max(r["fills"], key=lambda f: f["features"]["mean_log"])["passed"])
                 for r in rows if r["fills"])
    picks = [chosen(r, cal, names_rule) for r in rows]
    offered = [(p, f) for p, f in filter(None, picks)]
    kept = [(p, f) for p, f in offered if p >= cal.min_confidence]
    passed_kept = sum(bool(f["passed"]) for _, f in kept)
    points, right = [], 0
    for i, (p, f) in enumerate(sorted(offered, key=lambda x: -x[0]), 1):
        right += bool(f["passed"])
        points.append({"bar": round(p, 4), "coverage": i / n, "pass_among_offered": right / i})
    summary = {
        "n": n,
        "pass_at_1_before": before / n,
        "pass_at_1_no_bar": sum(bool(f["passed"]) for _, f in offered) / n,
        "pass_among_offered_no_bar": (sum(bool(f["passed"]) for _, f in offered) / len(offered)) if offered else None,
        "offered_no_bar": len(offered) / n,
        "pass_at_1_with_bar": passed_kept / n,
        "offered_with_bar": len(kept) / n,
        "pass_among_offered_with_bar": passed_kept / len(kept) if kept else None,
        "exact_among_offered_with_bar": sum(bool(f["exact"]) for _, f in kept) / len(kept) if kept else None,
    }
    return {"summary": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in summary.items()},
            "curve": points}


def plot_curves(result: dict, path: str | Path) -> str:
    """Precision (exact) against coverage on the development set's report half, and HumanEval pass@1
    among the offered fills against coverage, with and without the names rule; the default bar marked."""
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, v in result["variants"].items():
        pts = v["report_curve"]
        ax.plot([100 * p["coverage"] for p in pts], [100 * p["precision"] for p in pts], label=label)
        d = v["at_default"]
        if d.get("precision") is not None:
            ax.plot([100 * d["coverage"]], [100 * d["precision"]], "o")
            ax.annotate(f"bar {d['bar']:.2f}", (100 * d["coverage"], 100 * d["precision"]),
                        textcoords="offset points", xytext=(5, 5), fontsize=8)
        he = v.get("humaneval")
        if he:
            ax2.plot([100 * p["coverage"] for p in he["curve"]], [100 * p["pass_among_offered"] for p in he["curve"]],
                     label=label)
    ax.axhline(35, color="grey", lw=0.6, ls="--")
    ax.axvline(15, color="grey", lw=0.6, ls="--")
    ax.set(xlabel="coverage: holes offered a fill (%)", ylabel="precision: exactly right among offered (%)",
           title=f"development set, report half (n={result['n_report']})", ylim=(0, 100))
    ax2.set(xlabel="coverage (%)", ylabel="pass@1 among offered (%)", title="HumanEval single-line (reported only)",
            ylim=(0, 100))
    for a in (ax, ax2):
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)
