"""Which engine function serves each request kind, chosen by the request's type (on the engine thread)."""

from __future__ import annotations

from .actions import fix_syntax, rewrite
from .backends.base import Backend, Control
from .config import FillOptions
from .infill import complete
from .model_text import ModelText
from .multifill import fill_blanks
from .requests import Completion, FillRequest, FixRequest, InfillRequest, Request, RewriteRequest


def serve(backend: Backend, defaults: FillOptions, request: Request, control: Control) -> Completion:
    """Run ``request`` with its own fill options, else ``defaults`` (the engine's configured ones)."""
    options = request.options or defaults
    backend = ModelText(backend)  # the model reads no lone surrogate, whichever path the request takes
    if isinstance(request, InfillRequest):
        return complete(backend, options, request, control)
    if isinstance(request, FillRequest):
        return fill_blanks(backend, options, request, control)
    if isinstance(request, RewriteRequest):
        return rewrite(backend, options, request, control)
    if isinstance(request, FixRequest):
        return fix_syntax(backend, options, request, control)
    raise TypeError(f"not an engine request: {type(request).__name__}")
