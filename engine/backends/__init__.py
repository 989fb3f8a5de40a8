"""Backends by checkpoint type: DiffusionGemma checkpoints get their own; anything else is a masked LM."""

from __future__ import annotations

import json

from ..config import EngineConfig
from ..requests import ModelLoadError
from .base import Backend, Candidate, Control, FillPlan, FillResult, HoleSpec


def model_type(config: EngineConfig) -> str:
    path = config.model_dir() / "config.json"
    try:
        return json.loads(path.read_text()).get("model_type", "")
    except FileNotFoundError:
        raise ModelLoadError(f"no checkpoint at {config.model_dir()} (config.json not found)") from None
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"unreadable {path}: {exc}") from None


def load_backend(config: EngineConfig) -> Backend:
    """Load the checkpoint named by ``config`` with no network access."""
    kind = model_type(config)
    if kind == "diffusion_gemma":
        from .diffusion_gemma import DiffusionGemmaBackend
        return DiffusionGemmaBackend.load(config)
    from .masked import MaskedBackend
    return MaskedBackend.load(config)


__all__ = ["Backend", "Candidate", "Control", "FillPlan", "FillResult", "HoleSpec", "load_backend", "model_type"]
