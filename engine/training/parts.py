"""Weights in parts small enough for the device tool (files of at most 16 MiB come back), and back.

    python -m engine.training.parts split runs/gen2/large/checkpoint $OUT large   # there
    python -m engine.training.parts join OUT_FOLDER large runs/gen2-home/large    # here

``split`` writes ``NAME.meta.tar`` (config, tokenizer, training.json, train.log) and the weights as
float16 safetensors cut into ``NAME.f16.partNN`` pieces of at most ``--max-mib``; float16 keeps 10
mantissa bits (bfloat16 keeps 7) and every weight of these models is far inside its range. ``join``
checks the pieces' sha256 and rebuilds the run as a training run directory: ``DEST/checkpoint/`` with the
float16 weights as they came (half the size of float32 in git once shipped; the engine and ``--init-from`` load
them as float32, the same values) and ``DEST/train.log``, the layout ``scripts/ship_model.sh``
(``RUN=DEST``), ``engine.training.card`` and ``--init-from DEST/checkpoint`` read; it says which steps and
tokens it holds.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
import tarfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save

_META = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "training.json")


def split(ckpt: Path, out: Path, name: str, max_mib: float = 15.0, log: Path | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    weights = load_file(str(ckpt / "model.safetensors"))
    blob = save({k: v.to(torch.float16).contiguous() for k, v in weights.items()})
    size = int(max_mib * 2**20)
    parts = []
    for i in range(0, len(blob), size):
        p = out / f"{name}.f16.part{i // size:02d}"
        p.write_bytes(blob[i:i + size])
        parts.append(p)
    index = {"parts": [p.name for p in parts], "sha256": hashlib.sha256(blob).hexdigest(), "bytes": len(blob)}
    with tarfile.open(out / f"{name}.meta.tar", "w") as tf:
        for fn in _META:
            if (ckpt / fn).is_file():
                tf.add(ckpt / fn, arcname=fn)
        if log is not None and log.is_file():
            tf.add(log, arcname="train.log")
        data = json.dumps(index).encode()
        info = tarfile.TarInfo("parts.json")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return [out / f"{name}.meta.tar", *parts]


def join(folder: Path, name: str, dest: Path) -> Path:
    """The run ``split`` sent, rebuilt under ``dest`` (``checkpoint/`` and ``train.log``); returns the checkpoint
    directory. Pieces that do not add up (a piece missing, cut or altered) are a ValueError, before anything
    is written."""
    with tarfile.open(folder / f"{name}.meta.tar") as tf:
        index = json.loads(tf.extractfile("parts.json").read())   # type: ignore[union-attr]
        missing = [p for p in index["parts"] if not (folder / p).is_file()]
        if missing:
            raise ValueError(f"{name}: {', '.join(missing)} did not come back")
        blob = b"".join((folder / p).read_bytes() for p in index["parts"])
        if hashlib.sha256(blob).hexdigest() != index["sha256"]:
            raise ValueError(f"{name}: the parts do not add up to the weights that were split (sha256 differs)")
        ckpt = dest / "checkpoint"
        ckpt.mkdir(parents=True, exist_ok=True)
        for member in tf.getmembers():
            if member.name == "parts.json":
                continue
            tf.extract(member, dest if member.name == "train.log" else ckpt, filter="data")
    (ckpt / "model.safetensors").write_bytes(blob)   # float16 as it came: the engine loads it as float32
    return ckpt


def main(argv: list[str] | None = None) -> int:
    argv = argv if argv is not None else sys.argv[1:]
    if len(argv) >= 4 and argv[0] == "split":
        log = Path(argv[4]) if len(argv) > 4 else None
        for p in split(Path(argv[1]), Path(argv[2]), argv[3], log=log):
            print(p, p.stat().st_size)
        return 0
    if len(argv) == 4 and argv[0] == "join":
        try:
            d = join(Path(argv[1]), argv[2], Path(argv[3]))
        except (OSError, ValueError, KeyError, tarfile.TarError) as exc:
            print(f"engine.training.parts: {exc}", file=sys.stderr)
            return 1
        meta = json.loads((d / "training.json").read_text()) if (d / "training.json").is_file() else {}
        print(f"{d}: step {meta.get('step')}, tokens {meta.get('tokens')}")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
