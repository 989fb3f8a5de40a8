"""What every result file records (the command, the model, the machine, the time) and how it is written."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.config import LoadConfig

RESULTS_DIR = Path(__file__).parent / "results"
REPO_ROOT = Path(__file__).parent.parent


def command_line(module: str, argv: list[str] | None = None) -> str:
    """The shell command that reproduces this run, from the repository root."""
    args = sys.argv[1:] if argv is None else argv
    return " ".join(["python", "-m", module, *(shlex.quote(a) for a in args)])


def _file_digest(path: Path) -> str | None:
    if not path.is_file():
        return None
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def model_info(model: str, load: LoadConfig | None = None) -> dict:
    """Which weights were measured: the source, a digest of the weights, the training summary, and with ``load``
    the quantization they ran with when it is not none (``auto`` resolved: what the model directory states)."""
    from engine.config import model_dir

    directory = model_dir(model)
    info: dict = {"model": model, "digest": _file_digest(directory / "model.safetensors")}
    if load is not None:
        from engine.backends.loading import quantization_of

        quantization = quantization_of(load)
        if quantization != "none":
            info["quantization"] = quantization
    training = directory / "training.json"
    if training.is_file():
        meta = json.loads(training.read_text())
        info["training"] = {k: meta[k] for k in ("step", "tokens", "trained_seconds", "val_diffusion",
                                                 "val_line_hole", "val_line_acc") if k in meta}
    return info


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def machine_info() -> dict:
    """The machine and its load when the run started (other work on the CPU changes the figures)."""
    info = {"cpu": _cpu_name(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "load_average": [round(x, 2) for x in os.getloadavg()],
            "commit": _git_commit()}
    try:
        import torch

        info["torch"] = torch.__version__
    except ImportError:
        pass
    return info


def envelope(benchmark: str, module: str, argv: list[str] | None = None) -> dict:
    """The fields every result starts with."""
    return {"benchmark": benchmark, "command": command_line(module, argv),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine_info()}


def write_result(path: str | Path, result: dict) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)
    print(f"reproduce: {result['command']}", file=sys.stderr)
    return path


def default_out(name: str) -> Path:
    return RESULTS_DIR / f"{name}.json"


def run_cli(main) -> int:
    """Run a benchmark's ``main``; a model that fails to load, a dead server or bad data ends it with a
    one-line message and status 2 instead of a traceback."""
    from engine.requests import ModelLoadError

    from benchmarks.lsp_client import LspError
    from benchmarks.tasks import TaskFormatError

    try:
        return main()
    except (ModelLoadError, LspError, TaskFormatError, FileNotFoundError) as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
