"""Loss curve and training summary from a run's train.log: ``python -m engine.training.report RUN_DIR OUT.png``."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def read_log(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "train.log").read_text().splitlines() if line.strip()]


def summary(records: list[dict]) -> dict:
    steps = [r for r in records if "loss" in r]
    vals = [r for r in records if "val_diffusion" in r]
    data = next((r for r in records if r.get("event") == "data"), {})
    resumes = [r for r in records if r.get("event") == "resume"]
    starts = [r for r in records if r.get("event") in ("start", "resume")]
    return {
        "steps": steps[-1]["step"] if steps else 0,
        "tokens_seen": steps[-1]["tokens"] if steps else 0,
        "trained_hours": round(steps[-1]["trained_seconds"] / 3600, 2) if steps else 0,
        "final_train_loss": steps[-1]["loss"] if steps else None,
        "final_validation": {k: v for k, v in vals[-1].items() if k.startswith("val_")} if vals else {},
        "train_files": data.get("train_files"), "valid_files": data.get("valid_files"),
        "train_tokens": data.get("train_tokens"), "valid_tokens": data.get("valid_tokens"),
        "duplicates_dropped": data.get("duplicates_dropped"), "resumes": len(resumes), "runs": len(starts),
    }


def plot(records: list[dict], out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r for r in records if "loss" in r]
    vals = [r for r in records if "val_diffusion" in r]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    ax.plot([r["tokens"] / 1e6 for r in steps], [r["loss"] for r in steps], lw=0.8, alpha=0.6,
            label="train loss (weighted masked-diffusion ELBO, mixed objective)")
    if vals:
        tok = {r["step"]: r["tokens"] for r in steps}
        xs = [tok.get(r["step"], min(tok.items(), key=lambda kv: abs(kv[0] - r["step"]))[1]) / 1e6 for r in vals]
        ax.plot(xs, [r["val_diffusion"] for r in vals], "o-", label="validation: plain diffusion (held-out stdlib)")
        ax.plot(xs, [r["val_line_hole"] for r in vals], "s-", label="validation: one masked line, 24-slot hole")
    for r in records:
        if r.get("event") == "resume":
            ax.axvline(r["tokens"] / 1e6, color="grey", ls=":", lw=0.8)
    ax.set_xlabel("tokens seen (millions)")
    ax.set_ylabel("loss (nats)")
    ax.set_title("embedded model training (dotted: resumed)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out)


def main(argv: list[str] | None = None) -> None:
    argv = argv if argv is not None else sys.argv[1:]
    run, out = Path(argv[0]), Path(argv[1])
    records = read_log(run)
    plot(records, out)
    print(json.dumps(summary(records), indent=2))


if __name__ == "__main__":
    main()
