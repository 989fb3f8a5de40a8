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


def is_masked(config: LoadConfig) -> bool:
    """Whether the checkpoint ``config`` names loads as a masked LM (no backend registered for its model_type)."""
    return model_type(config) not in _BY_MODEL_TYPE


def backend_class(kind: str) -> BackendLoader:
    """The backend class registered for ``model_type`` ``kind`` (the masked LM for any other)."""
    module, _, name = _BY_MODEL_TYPE.get(kind, _DEFAULT).partition(":")
    loader: BackendLoader = getattr(importlib.import_module(module), name)
    return loader


# A remote engine (the ``engine`` setting) by its URL's scheme -> "module:callable(url, load) -> Backend".
_BY_SCHEME = {
    "http": "engine.backends.remote.client:RemoteBackend.connect",    # the team server (engine/team/)
    "https": "engine.backends.remote.client:RemoteBackend.connect",
    # --- vLLM (issue #17 part 3): the vllm+ schemes are served by engine.backends.vllm, wired here at merge ---
    "vllm+http": "engine.backends.vllm:open_vllm",
    "vllm+https": "engine.backends.vllm:open_vllm",
}


def open_remote(url: str, load: LoadConfig) -> Backend:
    """The backend for a remote engine URL: the one place a URL's scheme picks its backend."""
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    target = _BY_SCHEME.get(scheme)
    if target is None:
        raise ModelLoadError(f"engine {url!r}: the URL must start with one of "
                             f"{', '.join(s + '://' for s in _BY_SCHEME)}")
    module, _, name = target.partition(":")
    try:
        opener = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            raise ModelLoadError(f"engine {url!r}: this build has no backend for {scheme}:// ({module} "
                                 f"is missing)") from None
        raise
    for part in name.split("."):
        opener = getattr(opener, part)
    backend: Backend = opener(url, load)  # type: ignore[operator]
    return backend


def load_backend(config: LoadConfig) -> Backend:
    """Load the checkpoint named by ``config`` with no network access, or open its remote ``engine``."""
    if config.engine:
        return open_remote(config.engine, config)
    return backend_class(model_type(config)).load(config)


__all__ = ["Backend", "Candidate", "Control", "FillPlan", "FillResult", "HoleSpec", "backend_class",
           "load_backend", "model_type", "open_remote"]
