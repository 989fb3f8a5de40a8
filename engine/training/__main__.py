"""Command line: ``python -m engine.training --out runs/embedded --minutes 120``."""

from __future__ import annotations

import argparse
import dataclasses

from .train import TrainConfig, run


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m engine.training", description=__doc__)
    for f in dataclasses.fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.name == "out":
            p.add_argument(flag, required=True, help="run directory (resumed when it holds state.pt)")
        else:
            p.add_argument(flag, type=type(f.default), default=f.default, help=f"default {f.default}")
    args = vars(p.parse_args(argv))
    ckpt = run(TrainConfig(**args))
    print(f"checkpoint: {ckpt}")


if __name__ == "__main__":
    main()
