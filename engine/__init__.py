"""diffusion-lsp's engine: syntax-aware context, diffusion backends, one model thread. No LSP in here."""

from .config import EMBEDDED, EngineConfig
from .requests import (Cancelled, Completion, Draft, EngineError, HoleFill, HoleKind, InfillRequest,
                       ModelLoadError, NotReady)
from .worker import Engine, EngineState, Job

__all__ = ["EMBEDDED", "Cancelled", "Completion", "Draft", "Engine", "EngineConfig", "EngineError",
           "EngineState", "HoleFill", "HoleKind", "InfillRequest", "Job", "ModelLoadError", "NotReady"]
