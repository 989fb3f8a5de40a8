"""textDocument/inlineCompletion (ghost text) and textDocument/completion (the fallback item)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError

from engine import Completion, EngineError, HoleFill, InfillRequest

from .documents import Document
from .drafts import DraftStream, hole_json, range_json

if TYPE_CHECKING:
    from .server import DiffusionServer

log = logging.getLogger(__name__)


async def _complete_at(ls: DiffusionServer, uri: str, position: types.Position,
                       progress_token: types.ProgressToken | None = None) -> tuple[Document, Completion] | None:
    doc = ls.document_or_error(uri)
    offset = ls.offset_or_error(doc, position)
    if ls.settings.server.debounce_ms:
        generation, version = doc.generation, doc.version
        await asyncio.sleep(ls.settings.server.debounce_ms / 1000)
        if ls.documents.moved_on(uri, generation, version):
            return None
    version = doc.version

    def place(spans: Sequence[tuple[int, int]]) -> list[dict[str, Any]] | None:
        """Where a draft goes: its own str range (a regenerated word starts before the cursor)."""
        if doc.version != version:
            return None
        return [range_json(doc.range_at(start, end, ls.encoding)) for start, end in spans]

    stream = DraftStream(ls, uri, version, [range_json(doc.range_at(offset, offset, ls.encoding))],
                         token=progress_token, place=place)
    request = InfillRequest(text=doc.text, offset=offset, language=doc.language_id, key=uri,
                            workspace=ls.workspace_lines.key(uri), path=ls.workspace_lines.path(uri))
    try:
        completion = await ls.jobs.run(doc, request, stream.on_draft if stream.wanted() else None)
    except BaseException as exc:  # an engine error, or $/cancelRequest: a progress begun is ended
        stream.close()
        if isinstance(exc, EngineError):
            raise JsonRpcInternalError(str(exc)) from None
        raise
    if completion is None or not completion.fills:
        if completion is not None:
            log.info("no fill for %s v%s (%s hole, %d steps): %s", uri, doc.version, completion.kind.value,
                     completion.steps, why_empty(completion))
            stream.finish(completion.steps, [], completion.kind.value)
        else:  # dropped (the document moved on, or the job was superseded): a progress begun is ended
            stream.close()
        return None
    log.info("fill for %s v%s: %.1f ms engine, %d steps, %d tokens, %d alternatives", uri, doc.version,
             completion.elapsed_ms, completion.steps, completion.tokens, len(completion.alternatives))
    fill = completion.fills[0]
    pieces = tuple(fill.text[lo:hi] for lo, hi in fill.token_spans)
    final = hole_json(range_json(doc.range_at(fill.start, fill.end, ls.encoding)), fill.text, pieces, fill.confidences,
                      fill.confidence)
    stream.finish(completion.steps, [final], completion.kind.value)
    return doc, completion


def why_empty(completion: Completion) -> str:
    """Why ``completion`` offers nothing, for the log: an empty answer says nothing to the user, and some of the
    reasons are no check a setting turns off."""
    parts = []
    if completion.considered:
        best = max(f.confidence or 0.0 for f in completion.considered)
        parts.append(f"{len(completion.considered)} valid fill(s) withheld as too unsure (best estimate {best:.1%}; "
                     f"setting minConfidence) or using a name the file defines nowhere (namesRule)")
    if completion.not_utf8:
        parts.append(f"{completion.not_utf8} candidate(s) written in byte tokens that form no UTF-8 (refused "
                     f"whatever the settings)")
    if completion.rejected:
        checks = " (the syntax checks among them: setting validate)" if completion.syntax_checked else ""
        parts.append(f"{completion.rejected} fill(s) refused in all{checks}")
    return "; ".join(parts) or "the model wrote nothing"


def offered(completion: Completion) -> tuple[HoleFill, ...]:
    """The fills to offer: the best, then the alternatives (best first, at most ``maxAlternatives`` in all)."""
    return completion.fills[:1] + completion.alternatives


def register(server: DiffusionServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    async def inline_completion(ls: DiffusionServer,
                                params: types.InlineCompletionParams) -> types.InlineCompletionList | None:
        result = await _complete_at(ls, params.text_document.uri, params.position, params.work_done_token)
        if result is None:
            return types.InlineCompletionList(items=[])
        doc, completion = result
        return types.InlineCompletionList(items=[types.InlineCompletionItem(
            insert_text=fill.text, range=doc.range_at(fill.start, fill.end, ls.encoding))
            for fill in offered(completion)])

    @server.feature(types.TEXT_DOCUMENT_COMPLETION,
                    types.CompletionOptions(trigger_characters=[".", "(", "[", ",", " ", "="]))
    async def completion(ls: DiffusionServer, params: types.CompletionParams) -> types.CompletionList:
        result = await _complete_at(ls, params.text_document.uri, params.position, params.work_done_token)
        if result is None:
            return types.CompletionList(is_incomplete=True, items=[])
        doc, completion = result
        return types.CompletionList(is_incomplete=True, items=[
            _completion_item(doc, fill, ls.encoding, rank) for rank, fill in enumerate(offered(completion))])


_WORD_MAX = 256  # characters of the word before a fill taken into its item, at most


def typed_word_start(text: str, end: int) -> int:
    """Where the word (letters, digits, ``_``) that ends at ``end`` starts; ``end`` when none does."""
    start = end
    while start > 0 and end - start < _WORD_MAX and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    return start


def _completion_item(doc: Document, fill: HoleFill, encoding: str, rank: int) -> types.CompletionItem:
    """The fill as a completion item. Clients filter items by the word typed before the cursor (Helix, eglot: the
    fill ``al`` after ``return tot`` was never shown), so the item takes that word in: its edit replaces the word
    with itself and the fill (``total``)."""
    start = typed_word_start(doc.text, fill.start)
    text = doc.text[start:fill.start] + fill.text
    first = next((line for line in text.splitlines() if line.strip()), text).strip()
    likely = f"{fill.confidence:.0%} likely right" if fill.confidence is not None else ""
    about = ", ".join(x for x in (f"alternative {rank}" if rank else "", likely) if x)
    return types.CompletionItem(
        label=first[:80] or "(diffusion fill)",
        kind=types.CompletionItemKind.Text,  # Helix reads a Snippet item's text as a snippet
        detail="diffusion fill" + (f" ({about})" if about else ""),
        data={"confidence": fill.confidence},
        documentation=types.MarkupContent(types.MarkupKind.Markdown, f"```\n{fill.text}\n```"),
        sort_text=str(rank),
        text_edit=types.TextEdit(doc.range_at(start, fill.end, encoding), text),
    )
