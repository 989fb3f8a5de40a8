"""diffusion-lsp's engine: syntax-aware context, diffusion backends, one model thread. No LSP in here."""

from .config import EMBEDDED, EngineConfig, FillOptions, LoadConfig
from .requests import (
                       Blank,
                       Cancelled,
                       Completion,
                       Draft,
                       EngineError,
                       FillRequest,
                       FixRequest,
                       HoleFill,
                       HoleKind,
                       InfillRequest,
                       ModelLoadError,
                       NotReady,
                       Request,
                       RewriteRequest,
)
from .worker import Engine, EngineState, Job

__all__ = ["EMBEDDED", "Blank", "Cancelled", "Completion", "Draft", "Engine", "EngineConfig", "EngineError",
           "EngineState", "FillOptions", "FillRequest", "FixRequest", "HoleFill", "HoleKind", "InfillRequest", "Job",
           "LoadConfig", "ModelLoadError", "NotReady", "Request", "RewriteRequest"]
