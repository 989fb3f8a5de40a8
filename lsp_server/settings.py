"""Settings from initializationOptions / workspace configuration: parsed at the edge into frozen dataclasses.

The settings are the fields of the engine's ``LoadConfig`` (a change reloads the model) and ``FillOptions``
(sent with every request) and the server's own ``ServerOptions``, each under its camelCase name; nothing
is copied by hand. Each invalid value keeps the value held (the default at first) and is reported by name, so one
typo never loses the rest. Pushes merge onto the settings held; ``null`` puts a setting back to its default.
"""

from __future__ import annotations

from dataclasses import Field, dataclass, field, fields, replace
from typing import Any

from engine import EngineConfig, FillOptions, LoadConfig
from engine.config import ADAPT_MODES, EXPERTS, QUANTIZATIONS

SECTION = "diffusionLsp"


@dataclass(frozen=True)
class ServerOptions:
    """What only the server reads."""

    debounce_ms: int = 0              # wait this long after a request before asking the engine
    drafts: bool = False              # send diffusion/draft notifications while denoising
    draft_interval_ms: int = 100      # at most one draft per this many milliseconds


@dataclass(frozen=True)
class Settings:
    load: LoadConfig = field(default_factory=LoadConfig)
    fill: FillOptions = field(default_factory=FillOptions)
    server: ServerOptions = field(default_factory=ServerOptions)

    def engine_config(self) -> EngineConfig:
        return EngineConfig(self.load, self.fill)


_GROUPS = ("load", "fill", "server")
_GROUP_TYPES = {"load": LoadConfig, "fill": FillOptions, "server": ServerOptions}
_INTERNAL = frozenset({"order", "line_lengths"})  # engine fields no client sets (benchmarks compare decoding orders;
                                                   # line lengths are the model's, per language: engine/decoding.py)
_DTYPES = ("auto", "float32", "bfloat16", "float16")
_RANGES = {"threads": (1, 256), "steps": (0, 512), "threshold": (0.0, 1e9), "t_min": (0.0, 100.0),
           "t_max": (0.0, 100.0), "cache_refresh": (0, 1024), "max_hole_tokens": (1, 1024),
           "max_alternatives": (1, 10), "prefix_tokens": (0, 8192), "suffix_tokens": (0, 8192),
           "debounce_ms": (0, 10_000), "draft_interval_ms": (0, 10_000), "engine_timeout": (0.1, 3600.0),
           "engine_retries": (0, 10)}
_MAY_BE_EMPTY = frozenset({"engine", "engine_token_file", "engine_ca_file"})  # "": no remote engine / no file


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


def setting_fields() -> dict[str, tuple[str, Field[Any]]]:
    """Every setting: its camelCase name -> (its group in ``Settings``, its dataclass field)."""
    return {camel(f.name): (group, f) for group in _GROUPS for f in fields(_GROUP_TYPES[group])
            if f.name not in _INTERNAL}


def _check(name: str, value: Any, default: Any) -> Any:
    """The parsed value, or raise ValueError saying what is wrong."""
    if name == "min_confidence":
        if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1):
            return None if value is None else float(value)
        raise ValueError("must be a number between 0 and 1, or null (the model's default)")
    if name == "device_map":
        if value is None or isinstance(value, str):
            return value
        raise ValueError("must be a string or null")
    kind = type(default)
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError("must be true or false")
        return value
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
            raise ValueError(f"must be {'an integer' if kind is int else 'a number'}")
        lo, hi = _RANGES[name]
        if not lo <= value <= hi:
            raise ValueError(f"must be between {lo} and {hi}")
        return kind(value)
    if name in _MAY_BE_EMPTY and isinstance(value, str):
        if name == "engine" and value and not value.lower().startswith(("http://", "https://", "vllm+http://",
                                                                        "vllm+https://")):
            raise ValueError("must be an http://, https://, vllm+http:// or vllm+https:// URL, or \"\"")
        return value
    if not isinstance(value, str) or not value:
        raise ValueError("must be a non-empty string")
    if name == "dtype" and value not in _DTYPES:
        raise ValueError(f"must be one of {sorted(_DTYPES)}")
    if name == "adapt" and value not in ADAPT_MODES:
        raise ValueError(f"must be one of {', '.join(ADAPT_MODES)}")
    if name == "experts" and value not in EXPERTS:
        raise ValueError(f"must be one of {', '.join(EXPERTS)}")
    if name == "quantization" and value not in QUANTIZATIONS:
        raise ValueError(f"must be one of {', '.join(QUANTIZATIONS)}")
    if name == "device" and not (value in {"auto", "cpu", "cuda", "mps"} or value.startswith("cuda:")):
        raise ValueError("must be auto, cpu, cuda, cuda:N or mps")
    return value


def parse_settings(raw: Any, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """``raw`` as sent by a client (flat, or under ``diffusionLsp``); returns the settings and problems found."""
    base = base or Settings()
    if raw is None:
        return base, []
    if not isinstance(raw, dict):
        return base, [f"settings must be an object, got {type(raw).__name__}"]
    if SECTION in raw:  # our section (other keys are other servers'); null: nothing set for this server
        raw = raw[SECTION]
        if raw is None:
            return base, []
        if not isinstance(raw, dict):
            return base, [f"'{SECTION}' must be an object, got {type(raw).__name__}"]
    known = setting_fields()
    by_snake = {f.name: (group, f) for group, f in known.values()}
    problems: list[str] = []
    values: dict[str, dict[str, Any]] = {group: {} for group in _GROUPS}
    for key, value in raw.items():
        found = known.get(key) or by_snake.get(key)
        if found is None:
            problems.append(f"unknown setting '{key}'")
            continue
        group, f = found
        if value is None:  # a pushed null: back to the default (a client's way to say "the user removed it")
            values[group][f.name] = f.default
            continue
        try:
            values[group][f.name] = _check(f.name, value, f.default)
        except ValueError as exc:
            problems.append(f"'{camel(f.name)}' {exc}; using {getattr(getattr(base, group), f.name)!r}")
    return Settings(**{g: replace(getattr(base, g), **values[g]) for g in _GROUPS}), problems
