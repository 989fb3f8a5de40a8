"""diffusion-lsp's engine: syntax-aware context, diffusion backends, one model thread. No LSP in here."""

from .config import EMBEDDED, EngineConfig, FillOptions, LoadConfig
from .requests import (Cancelled, Completion, Draft, EngineError, EngineUnreachable, FillRequest, FixRequest, Hole,
                       HoleFill, HoleKind, InfillRequest, ModelLoadError, NotReady, Request, RewriteRequest,
                       TextTooLong)
from .worker import Engine, EngineState, Job

__all__ = ["EMBEDDED", "Cancelled", "Completion", "Draft", "Engine", "EngineConfig", "EngineError", "EngineState",
           "EngineUnreachable", "FillOptions", "FillRequest", "FixRequest", "Hole", "HoleFill", "HoleKind",
           "InfillRequest", "Job", "LoadConfig", "ModelLoadError", "NotReady", "Request", "RewriteRequest",
           "TextTooLong"]
