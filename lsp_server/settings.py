"""Settings from initializationOptions / workspace configuration: parsed at the edge, frozen, with defaults.

Each invalid value falls back to its default and is reported by name, so one typo never loses the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from engine.config import EngineConfig

SECTION = "diffusionLsp"


@dataclass(frozen=True)
class Settings:
    model: str = "embedded"
    device: str = "auto"
    dtype: str = "auto"
    device_map: str | None = None
    threads: int = 1
    steps: int = 0
    threshold: float = 0.0
    t_min: float = 0.0
    t_max: float = 0.0
    kv_cache: bool = True
    cache_refresh: int = 4
    max_hole_tokens: int = 64
    prefix_tokens: int = 160
    suffix_tokens: int = 64
    debounce_ms: int = 0
    drafts: bool = False
    draft_interval_ms: int = 100
    validate: bool = True
    min_confidence: float | None = None  # offer a cursor fill only at this estimated P(right); None: the model's default
    names_rule: bool = True

    def engine_config(self) -> EngineConfig:
        return EngineConfig(model=self.model, device=self.device, dtype=self.dtype, device_map=self.device_map,
                            threads=self.threads, steps=self.steps, threshold=self.threshold,
                            t_min=self.t_min, t_max=self.t_max, kv_cache=self.kv_cache,
                            cache_refresh=self.cache_refresh,
                            max_hole_tokens=self.max_hole_tokens, prefix_tokens=self.prefix_tokens,
                            suffix_tokens=self.suffix_tokens, validate=self.validate,
                            min_confidence=self.min_confidence, names_rule=self.names_rule)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


_CHOICES = {"device": None, "dtype": {"auto", "float32", "bfloat16", "float16"}}
_RANGES = {"threads": (1, 256), "steps": (0, 512), "threshold": (0.0, 1e9), "t_min": (0.0, 100.0),
           "t_max": (0.0, 100.0), "cache_refresh": (0, 1024), "max_hole_tokens": (1, 1024),
           "prefix_tokens": (0, 8192), "suffix_tokens": (0, 8192), "debounce_ms": (0, 10_000),
           "draft_interval_ms": (0, 10_000)}


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
    if not isinstance(value, str) or not value:
        raise ValueError("must be a non-empty string")
    if name == "dtype" and value not in _CHOICES["dtype"]:
        raise ValueError(f"must be one of {sorted(_CHOICES['dtype'])}")
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
    if isinstance(raw.get(SECTION), dict):
        raw = raw[SECTION]
    problems, values = [], {}
    known = {_camel(f.name): f for f in fields(Settings)}
    for key, value in raw.items():
        f = known.get(key) or next((g for g in fields(Settings) if g.name == key), None)
        if f is None:
            problems.append(f"unknown setting '{key}'")
            continue
        try:
            values[f.name] = _check(f.name, value, f.default)
        except ValueError as exc:
            problems.append(f"'{_camel(f.name)}' {exc}; using {getattr(base, f.name)!r}")
    return replace(base, **values), problems
