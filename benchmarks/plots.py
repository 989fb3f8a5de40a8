"""The benchmark figures as PNG files (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402


def quality_key(result_or_point: dict) -> tuple[str, str]:
    """pass@1 when the tasks have tests, else exact match."""
    return ("pass_at_1", "pass@1") if result_or_point.get("pass_at_1") is not None else ("exact_match", "exact match")


def _subtitle(result: dict) -> str:
    model = result.get("model", {})
    step = model.get("training", {}).get("step")
    return f"{result.get('dataset', '')}, n={result.get('n')}, model {model.get('model')}" + (
        f" (step {step})" if step is not None else "")


def plot_sweep(result: dict, path: str | Path) -> str:
    """Quality against p50 latency, one line per threshold, each point labelled with its step budget."""
    points = result["points"]
    key, label = quality_key(points[0]) if points else ("exact_match", "exact match")
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for threshold in sorted({p["threshold"] for p in points}):
        row = sorted((p for p in points if p["threshold"] == threshold), key=lambda p: p["steps_budget"])
        xs = [p["latency_ms"]["p50"] for p in row]
        ys = [100 * (p[key] or 0) for p in row]
        ax.plot(xs, ys, marker="o", label=f"threshold {threshold:g}")
        for x, y, p in zip(xs, ys, row):
            ax.annotate(str(p["steps_budget"]), (x, y), textcoords="offset points", xytext=(4, 3), fontsize=7)
        ax2.plot([p["steps_budget"] for p in row], [p["forwards"] or 0 for p in row], marker="o",
                 label=f"threshold {threshold:g}")
    ax.set(xlabel="p50 latency per fill (ms)", ylabel=f"{label} (%)", title="quality vs latency (labels: step budget)")
    ax.set_ylim(0, max(5.0, 1.15 * max((100 * (p[key] or 0) for p in points), default=0)))
    ax2.set(xlabel="step budget", ylabel="forward passes per fill (mean)", title="forwards vs budget")
    ax2.set_xscale("log", base=2)
    ax2.set_xticks(sorted({p["steps_budget"] for p in points}))
    ax2.xaxis.set_major_formatter(ticker.ScalarFormatter())
    ax2.xaxis.set_minor_formatter(ticker.NullFormatter())
    for a in (ax, ax2):
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    fig.suptitle(f"steps x threshold sweep: {_subtitle(result)}", fontsize=10)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return str(path)


def plot_compare_order(result: dict, path: str | Path) -> str:
    """Forwards, latency and quality of parallel acceptance beside the left-to-right order."""
    orders = result["orders"]
    names = list(orders)
    key, label = quality_key(next(iter(orders.values())))
    panels = [("forward passes per fill", [orders[n]["forwards"] or 0 for n in names]),
              ("mean latency per fill (ms)", [orders[n]["latency_ms"]["mean"] or 0 for n in names]),
              (f"{label} (%)", [100 * (orders[n][key] or 0) for n in names])]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.6))
    for ax, (title, values) in zip(axes, panels):
        bars = ax.bar(names, values, color=["tab:blue", "tab:gray"])
        ax.bar_label(bars, fmt="%.1f", fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.set_ylim(0, max(1.0, 1.2 * max(values)))
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"parallel acceptance vs left-to-right: {_subtitle(result)}", fontsize=10)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return str(path)
