"""diffusion-lsp's engine: syntax-aware context, diffusion backends, one model thread. No LSP in here."""

from typing import TYPE_CHECKING, Any

from .config import EMBEDDED, EngineConfig, FillOptions, LoadConfig
from .requests import (Cancelled, Completion, Draft, EngineChanged, EngineError, EngineUnreachable, FillRequest,
                       FixRequest, Hole, HoleFill, HoleKind, InfillRequest, ModelChanged, ModelLoadError, NotReady,
                       Request, RewriteRequest, TextTooLong)

if TYPE_CHECKING:
    from .worker import Engine, EngineState, Job


def __getattr__(name: str) -> Any:
    """The worker (and with it the syntax layer's tree-sitter grammars) is imported when first asked for, so
    ``python -m engine.training`` runs where only torch and transformers are installed (the GPU machine's image)."""
    if name in ("Engine", "EngineState", "Job"):
        from . import worker
        return getattr(worker, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["EMBEDDED", "Cancelled", "Completion", "Draft", "Engine", "EngineChanged", "EngineConfig", "EngineError",
           "EngineState", "EngineUnreachable", "FillOptions", "FillRequest", "FixRequest", "Hole", "HoleFill",
           "HoleKind", "InfillRequest", "Job", "LoadConfig", "ModelChanged", "ModelLoadError", "NotReady", "Request",
           "RewriteRequest", "TextTooLong"]
