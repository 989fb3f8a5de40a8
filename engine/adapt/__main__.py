"""``python -m engine.adapt WORKSPACE``: adapt a model to a workspace in this process (one thread; ``--priority``
lowers it) and publish the gated outcome to the cache. ``diffusion-lsp adapt`` and the server start it."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import Any


def lower_priority(kind: str) -> None:
    """``idle``: the scheduler's idle class where the OS has one (runs only on otherwise idle CPU time), and
    niceness 19; ``nice``: niceness 19; ``normal``: as started."""
    if kind == "normal":
        return
    try:
        os.nice(19 - os.nice(0))
    except OSError:
        pass
    if kind == "idle" and hasattr(os, "sched_setscheduler") and hasattr(os, "SCHED_IDLE"):
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError:
            pass


def with_fields(cfg: Any, settings: list[str]) -> Any:
    """``cfg`` with ``FIELD=VALUE`` settings applied, each value converted to the field's type."""
    known = {f.name: type(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)
             if isinstance(getattr(cfg, f.name), (int, float, str)) and f.name not in ("minutes", "holes", "max_steps")}
    values: dict[str, Any] = {}
    for item in settings:
        name, eq, value = item.partition("=")
        if not eq or name not in known:
            raise ValueError(f"--set {item!r}: expected FIELD=VALUE with FIELD one of {', '.join(sorted(known))}")
        try:
            values[name] = known[name](value)
        except ValueError:
            raise ValueError(f"--set {item!r}: {value!r} is not a {known[name].__name__}") from None
    return dataclasses.replace(cfg, **values)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m engine.adapt", description=__doc__.splitlines()[0])
    p.add_argument("workspace")
    p.add_argument("--model", default="embedded", help="'embedded' or a masked-LM checkpoint directory")
    p.add_argument("--minutes", type=float, default=15.0, help="CPU minutes of training (one thread)")
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: the budget decides)")
    p.add_argument("--holes", type=int, default=200, help="held-out one-line holes to measure, at most")
    p.add_argument("--snapshots", type=float, nargs="*", default=[],
                   help="also measure after these CPU minutes (benchmarks)")
    p.add_argument("--method", choices=("auto", "full", "lora"), default="auto",
                   help="train every weight, or low-rank adapters only (peft LoRA; 'auto': LoRA above 60M parameters)")
    p.add_argument("--lora-rank", type=int, default=16, help="the adapters' rank (with --method lora or auto)")
    p.add_argument("--priority", choices=("idle", "nice", "normal"), default="idle")
    p.add_argument("--no-store", action="store_true", help="measure only: write nothing to the cache")
    p.add_argument("--commands", action="store_true",
                   help="read pause / resume / stop lines on stdin (the server's pipe); end of input stops")
    p.add_argument("--out", default=None, help="also write the final record as JSON here")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="set a training field of AdaptConfig (lr, batch_size, p_infill, max_holes, seq_len, ...); "
                        "for tuning on development code bases")
    args = p.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    lower_priority(args.priority)
    from ..config import LoadConfig
    from ..requests import EngineError
    from .run import AdaptConfig, Gate, Stopped, adapt, json_progress, stdin_commands

    gate = Gate()
    if args.commands:
        stdin_commands(gate, sys.stdin)
    emit = json_progress(sys.stdout)
    gate.on_wait = lambda waiting: emit({"event": "paused" if waiting else "resumed"})
    try:
        cfg = with_fields(AdaptConfig(minutes=args.minutes, holes=args.holes, max_steps=args.max_steps,
                                      snapshots=tuple(args.snapshots), method=args.method, lora_rank=args.lora_rank,
                                      lora_alpha=2 * args.lora_rank), args.set)
    except ValueError as exc:
        print(f"adapt: {exc}", file=sys.stderr)
        return 2
    try:
        record = adapt(args.workspace, LoadConfig(model=args.model), cfg, gate, emit, store=not args.no_store)
    except Stopped:
        return 3
    except (ValueError, EngineError) as exc:   # EngineError: the model did not load (ModelLoadError)
        print(f"adapt: {exc}", file=sys.stderr)
        return 2
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(record.to_json(), f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
