"""The registry of backends: a checkpoint's ``config.json`` ``model_type`` names the backend that loads it.

Adding a backend: a package beside ``masked/`` whose backend class has ``load(LoadConfig)`` and implements
``base.Backend``, and one line in ``_BY_MODEL_TYPE``. Backends are imported only when a model loads (they
import torch).
"""

from __future__ import annotations

import importlib
import json
from typing import Protocol

from ..config import LoadConfig
from ..requests import ModelLoadError
from .base import Backend, Candidate, Control, FillPlan, FillResult, HoleSpec

# model_type -> "module:class"; any other model_type is loaded as a masked LM.
_BY_MODEL_TYPE = {
    "diffusion_gemma": "engine.backends.diffusion_gemma.backend:DiffusionGemmaBackend",
}
_DEFAULT = "engine.backends.masked.backend:MaskedBackend"


def model_type(config: LoadConfig) -> str:
    path = config.model_dir() / "config.json"
    try:
        return str(json.loads(path.read_text()).get("model_type", ""))
    except FileNotFoundError:
        raise ModelLoadError(f"no checkpoint at {config.model_dir()} (config.json not found)") from None
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"unreadable {path}: {exc}") from None


class BackendLoader(Protocol):
    """A backend class: ``load`` builds the backend from a load config."""

    def load(self, config: LoadConfig) -> Backend: ...


def backend_class(kind: str) -> BackendLoader:
    """The backend class registered for ``model_type`` ``kind`` (the masked LM for any other)."""
    module, _, name = _BY_MODEL_TYPE.get(kind, _DEFAULT).partition(":")
    loader: BackendLoader = getattr(importlib.import_module(module), name)
    return loader


def load_backend(config: LoadConfig) -> Backend:
    """Load the checkpoint named by ``config`` with no network access."""
    return backend_class(model_type(config)).load(config)


__all__ = ["Backend", "Candidate", "Control", "FillPlan", "FillResult", "HoleSpec", "backend_class",
           "load_backend", "model_type"]
