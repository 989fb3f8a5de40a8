"""Which engine function serves each request kind, chosen by the request's type (on the engine thread); a code
action's edits pass the whole-document check before they leave."""

from __future__ import annotations

import logging
from dataclasses import replace

from .actions import fix_syntax, rewrite
from .backends.base import Backend, Control
from .config import FillOptions
from .confidence import language_of
from .decoding import Table, for_language
from .infill import complete
from .languages import spec_for
from .lines import cr_only, lf_view, to_cr
from .model_text import ModelText
from .multifill import fill_blanks
from .requests import Completion, FillRequest, FixRequest, InfillRequest, Request, RewriteRequest
from .validate import edits_keep_parsing

log = logging.getLogger(__name__)


def serve(backend: Backend, defaults: FillOptions, request: Request, control: Control,
          decoding: Table | None = None) -> Completion:
    """Run ``request`` with its own fill options, else ``defaults`` (the engine's configured ones), with the model's
    decoding for the request's language where those options are at their defaults (``engine/decoding.py``)."""
    options = request.options or defaults
    if decoding:
        options = for_language(decoding, options, language_of(spec_for(request.language)))
    backend = ModelText(backend)  # the model reads no lone surrogate, whichever path the request takes
    # a lone CR ends a line (LSP's rule, the editor's lines): every path reads it as LF, at the same offsets, and a
    # CR-only document's fills go back with CR (engine/lines.py)
    cr = cr_only(request.text)
    view = lf_view(request.text)
    if view is not request.text:
        request = replace(request, text=view)
    if isinstance(request, InfillRequest):
        completion = complete(backend, options, request, control)
    else:
        if isinstance(request, FillRequest):
            completion = fill_blanks(backend, options, request, control)
        elif isinstance(request, RewriteRequest):
            completion = rewrite(backend, options, request, control)
        elif isinstance(request, FixRequest):
            completion = fix_syntax(backend, options, request, control)
        else:
            raise TypeError(f"not an engine request: {type(request).__name__}")
        completion = keep_parsing(request, completion, control) if options.validate else completion
    return to_cr(completion) if cr else completion


def keep_parsing(request: FillRequest | RewriteRequest | FixRequest, completion: Completion,
                 control: Control | None = None) -> Completion:
    """An action's edits as the whole-document check leaves them: holes one by one, each its fill or else the first
    of its shorter forms (``Completion.fallbacks``, in order) that keeps the document parsing with the holes kept
    before it (a hole none of whose forms does keeps its text), a rewrite or a fix whole or not at all. ``control``:
    the job's, whose check (cancellation) is polled while the documents are parsed."""
    spec, text = spec_for(request.language), request.text
    tick = (lambda: control.check(completion.steps)) if control is not None else None
    fixing = isinstance(request, FixRequest)
    refused = 0
    if isinstance(request, FillRequest):
        kept: list = []
        for i, fill in enumerate(completion.fills):
            forms = (fill,) + (completion.fallbacks[i] if i < len(completion.fallbacks) else ())
            for form in forms:
                if edits_keep_parsing(spec, text, kept + [form], tick=tick):
                    kept.append(form)
                    break
                refused += 1
        fills = tuple(kept)
    else:
        fills = completion.fills if edits_keep_parsing(spec, text, completion.fills, fixing, tick) else ()
        refused = len(completion.fills) - len(fills)
    if len(fills) < len(completion.fills):
        log.info("%d of %d edits left out: the edited document would not parse",
                 len(completion.fills) - len(fills), len(completion.fills))
    return replace(completion, fills=fills, rejected=completion.rejected + refused, fallbacks=())
