"""Command line: ``python -m engine.training --out runs/embedded --minutes 120``."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from .train import SettingError, TrainConfig, prepare, run


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m engine.training", description=__doc__)
    for f in dataclasses.fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.name == "out":
            p.add_argument(flag, required=True, help="run directory (resumed when it holds state.pt)")
        elif isinstance(f.default, bool):
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default, help=f"default {f.default}")
        else:
            p.add_argument(flag, type=type(f.default), default=f.default, help=f"default {f.default}")
    p.add_argument("--data-only", action="store_true",
                   help="build the run directory's tokenizer and data.npz, then stop (no training)")
    args = vars(p.parse_args(argv))
    try:
        if args.pop("data_only"):
            print(f"data: {prepare(TrainConfig(**args))}")
            return
        ckpt = run(TrainConfig(**args))
    except SettingError as e:   # a setting that does not fit the run: one line, status 2
        print(f"python -m engine.training: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    print(f"checkpoint: {ckpt}")


if __name__ == "__main__":
    main()
