"""Loss curve and training summary from a run's train.log: ``python -m engine.training.report RUN_DIR OUT.png``."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def read_log(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "train.log").read_text().splitlines() if line.strip()]


def summary(records: list[dict]) -> dict:
    steps = [r for r in records if "loss" in r]
    done = [r for r in records if "tokens" in r and "step" in r]
    vals = [r for r in records if "val_diffusion" in r]
    data = next((r for r in records if r.get("event") == "data"), {})
    resumes = [r for r in records if r.get("event") == "resume"]
    starts = [r for r in records if r.get("event") in ("start", "resume")]
    return {
        "steps": done[-1]["step"] if done else 0,            # the end event when the run ended cleanly
        "tokens_seen": done[-1]["tokens"] if done else 0,
        "trained_hours": round(steps[-1]["trained_seconds"] / 3600, 2) if steps else 0,
        "final_train_loss": steps[-1]["loss"] if steps else None,
        "final_validation": {k: v for k, v in vals[-1].items() if k.startswith("val_")} if vals else {},
        "train_files": data.get("train_files"), "valid_files": data.get("valid_files"),
        "train_tokens": data.get("train_tokens"), "valid_tokens": data.get("valid_tokens"),
        "duplicates_dropped": data.get("duplicates_dropped"), "resumes": len(resumes), "runs": len(starts),
    }


def cpu_label(threads: int | None, machine: str = "") -> str:
    """'CPU x86_64, 2 threads': how the log and the card name a CPU run."""
    name = f"CPU {machine}" if machine else "CPU"
    return name if not threads else f"{name}, {threads} thread{'s' if threads != 1 else ''}"


def runs(records: list[dict]) -> list[dict]:
    """Each run (start or resume) with the settings that changed between runs and where it began/ended."""
    marks = [i for i, r in enumerate(records) if r.get("event") in ("start", "resume")]
    out = []
    for n, i in enumerate(marks):
        r = records[i]
        cfg = r.get("config") or {}
        part = records[i:marks[n + 1] if n + 1 < len(marks) else len(records)]
        done = [x for x in part[1:] if "tokens" in x and "step" in x]   # progress lines and the end event
        last = done[-1] if done else r
        end = next((x for x in reversed(part) if x.get("event") in ("end", "stopped")), {})
        # the run's own last line: a data event after it belongs to the next run (a log continued elsewhere)
        own = next((x for x in reversed(part) if "step" in x), r)
        out.append({"from_step": r.get("step", 0), "to_step": last.get("step", 0), "from_tokens": r.get("tokens", 0),
                    "tokens_m": round((last.get("tokens", 0) - r.get("tokens", 0)) / 1e6, 1),
                    "minutes": round((own["time"] - r["time"]) / 60, 1),
                    "threads": cfg.get("threads"), "p_infill": cfg.get("p_infill"),
                    "p_library": cfg.get("p_library", 0.0) if cfg else None, "max_holes": cfg.get("max_holes", 1),
                    "bf16": r.get("bf16", False),
                    # runs from before the GPU option logged no hardware: they ran on the CPU
                    "hardware": r.get("hardware") or cpu_label(cfg.get("threads")),
                    "batch_size": cfg.get("batch_size", 24), "peak_lr": cfg.get("peak_lr", 1.5e-3),
                    "corpus": cfg.get("corpus") or "",   # a code corpus (part); empty: the stdlib
                    "mix_stdlib": cfg.get("mix_stdlib", 0.0) if cfg.get("corpus") else 0.0,   # stdlib windows' share
                    "fresh_optimizer": bool(r.get("fresh_optimizer")), "kept_best_of": end.get("kept_best_of")})
    return out


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
        def tokens_at(r: dict) -> float:   # a validation line names its step; a run too short to log loss has none
            if r["step"] in tok or not tok:
                return tok.get(r["step"], r.get("tokens", 0))
            return min(tok.items(), key=lambda kv: abs(kv[0] - r["step"]))[1]
        xs = [tokens_at(r) / 1e6 for r in vals]
        held = "held-out files of the run's data" if any(r.get("event") == "data" and r.get("root") == "corpus"
                                                         for r in records) else "held-out stdlib"
        ax.plot(xs, [r["val_diffusion"] for r in vals], "o-", label=f"validation: plain diffusion ({held})")
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
