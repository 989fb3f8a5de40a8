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
from .infill import complete, lf_control
from .languages import spec_for
from .lines import LfText, cr_only, eol_of, lf_view, to_cr, to_lf
from .model_text import ModelText
from .multifill import fill_blanks
from .oneline import body_place, fill_body, fill_lines, header_stub, line_holes, stub_body
from .requests import Completion, FillRequest, FixRequest, Hole, InfillRequest, Request, RewriteRequest
from .validate import edits_keep_parsing

log = logging.getLogger(__name__)
Action = FillRequest | RewriteRequest | FixRequest   # a code action's request


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
        completion = complete(backend, options, request, control)  # it reads a CRLF document as LF itself
    elif isinstance(request, (FillRequest, RewriteRequest, FixRequest)):
        completion = _action(backend, options, request, control)
    else:
        raise TypeError(f"not an engine request: {type(request).__name__}")
    return to_cr(completion) if cr else completion


def _action(backend: Backend, options: FillOptions, request: Action, control: Control) -> Completion:
    """A code action's edits, through the whole-document check. A CRLF document's action runs on its text read as LF
    (``LfText``: windows, middles and budgets counted on what the model sees, every check), so it gets its LF twin's
    edits; they go back in the document's offsets (never inside a ``\r\n``), written with its line end."""
    if "\r\n" in request.text:
        doc, eol = LfText(request.text), eol_of(request.text)
        completion = _action(backend, options, _read_as_lf(request, doc), lf_control(control, doc, eol))
        return doc.completion_back(completion, eol)
    if isinstance(request, FillRequest):
        lines = line_holes(request)   # stub lines among code: each filled as the cursor fill at its line
        # a body, or a function's stub body on its header's line: line by line, each the cursor fill at its line
        place = body_place(request) if request.body else None if lines else header_stub(request)
        if lines and len(lines) == 1 and lines[0].function:   # a function's stub body: written as its body
            completion = fill_body(backend, options, request, control, stub_body(lines[0]))
        elif lines:
            completion = fill_lines(backend, options, request, control, lines)
        elif place is not None:
            completion = fill_body(backend, options, request, control, place)
        else:
            completion = fill_blanks(backend, options, request, control)
    elif isinstance(request, RewriteRequest):
        completion = rewrite(backend, options, request, control)
    else:
        completion = fix_syntax(backend, options, request, control)
    return keep_parsing(request, completion, control) if options.validate else completion


def _read_as_lf(request: Action, doc: LfText) -> Action:
    """``request`` on ``doc.lf``: its offsets mapped, a found hole's fixed texts (its line breaks, a TODO line) LF."""
    at = doc.to_lf
    if isinstance(request, FillRequest):
        def hole(h: Hole) -> Hole:
            return replace(h, start=at(h.start), end=at(h.end), heal=to_lf(h.heal), indent=to_lf(h.indent),
                           lead=to_lf(h.lead), tail=to_lf(h.tail), context=to_lf(h.context))
        return replace(request, text=doc.lf, holes=tuple(map(hole, request.holes)),
                       callers=tuple((at(lo), at(hi)) for lo, hi in request.callers))
    if isinstance(request, RewriteRequest):
        return replace(request, text=doc.lf, start=at(request.start), end=at(request.end))
    return replace(request, text=doc.lf, spans=tuple((at(lo), at(hi)) for lo, hi in request.spans))


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
