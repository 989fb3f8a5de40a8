"""Decoding tuned per language for one model: the model directory's ``serving.json`` may carry, per language, the
step budget, the accept threshold and the slot counts a one-line hole is tried at, each chosen on development
holes of that language (``benchmarks.tune_decoding``). A request's options take them where the user left the
setting at its default; a value the user set always wins.

    {"quantization": "int8",
     "decoding": {"go": {"line_lengths": [8, 16], "steps": 12}, "rust": {"threshold": 0.8}}}
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from .config import SERVING_FILE, FillOptions
from .requests import ModelLoadError

TUNED = ("steps", "threshold", "line_lengths")   # what a model may tune per language
_DEFAULTS = {name: getattr(FillOptions(), name) for name in TUNED}

Table = dict[str, dict[str, Any]]


def _check(lang: str, values: object, file: Path) -> dict[str, Any]:
    if not isinstance(values, dict) or set(values) - set(TUNED):
        raise ModelLoadError(f"{file}: decoding for {lang!r} must be an object with {', '.join(TUNED)}")
    out: dict[str, Any] = {}
    for name, value in values.items():
        if name == "steps" and isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 512:
            out[name] = value
        elif name == "threshold" and isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            out[name] = float(value)
        elif (name == "line_lengths" and isinstance(value, list) and value
              and all(isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 256 for n in value)):
            out[name] = tuple(value)
        else:
            raise ModelLoadError(f"{file}: decoding {lang}.{name} = {value!r} is not a valid value")
    return out


def read_serving(model_dir: Path) -> dict[str, Any]:
    """A model directory's ``serving.json`` (how it is meant to run: its quantization, its decoding per language),
    ``{}`` without one. A file that does not parse, or is not an object, is a ``ModelLoadError`` naming it: the
    model directory is broken, and loading it some other way would hide that."""
    file = Path(model_dir) / SERVING_FILE
    try:
        data = json.loads(file.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"unreadable {file}: {exc}") from None
    if not isinstance(data, dict):
        raise ModelLoadError(f"unreadable {file}: not a JSON object")
    return data


def load_table(model_dir: Path | None) -> Table:
    """The per-language decoding a model directory states (empty: none, or no directory, as for a remote engine).
    A ``decoding`` entry that is not what this module writes fails the load with the file and the entry named."""
    if model_dir is None:
        return {}
    table = read_serving(model_dir).get("decoding", {})
    file = Path(model_dir) / SERVING_FILE
    if not isinstance(table, dict):
        raise ModelLoadError(f"{file}: decoding must be an object of languages")
    return {str(lang): _check(str(lang), values, file) for lang, values in table.items()}


def for_language(table: Table, options: FillOptions, language: str) -> FillOptions:
    """``options`` with the model's tuned values for ``language`` where they are still at their defaults."""
    tuned = table.get(language)
    if not tuned:
        return options
    changes = {name: value for name, value in tuned.items() if getattr(options, name) == _DEFAULTS[name]}
    return replace(options, **changes) if changes else options
