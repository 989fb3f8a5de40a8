"""Code actions: offered by textDocument/codeAction, computed in codeAction/resolve or by the
diffusion.runAction command (ending in workspace/applyEdit); diffusion.rewriteSelection takes an
instruction. What each action is lives in ``action_specs.py``. Every edit is for the version it was
computed for, and never for another."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcContentModified, JsonRpcInvalidParams

from engine import Completion, EngineError, Request
from engine.targets import Survey, survey

from .action_specs import REWRITE, SPECS, ActionSpec, JsonRpcRequestFailed, Target
from .documents import Document
from .drafts import DraftStream, hole_json, range_json
from .jobs import document_key
from .outcome import describe, nothing

if TYPE_CHECKING:
    from .server import DiffusionServer

log = logging.getLogger(__name__)
REWRITE_COMMAND = "diffusion.rewriteSelection"
RUN_COMMAND = "diffusion.runAction"
_AHEAD_CACHE = 8


@dataclass(frozen=True)
class ActionData:
    """What an offered action will do, as sent in ``CodeAction.data`` and command arguments."""

    action: str
    uri: str
    version: int
    range: types.Range
    title: str = ""
    instruction: str | None = None
    generation: int | None = None  # which didOpen of the document (None: any; a command from the client)

    @property
    def spec(self) -> ActionSpec:
        return SPECS[self.action]

    def to_json(self) -> dict[str, Any]:
        out = {"action": self.action, "uri": self.uri, "version": self.version,
               "range": range_json(self.range), "title": self.title}
        if self.generation is not None:
            out["generation"] = self.generation
        return out if self.instruction is None else {**out, "instruction": self.instruction}

    @classmethod
    def parse(cls, raw: Any, action: str | None = None) -> ActionData:
        raw = _plain(raw)
        try:
            r = raw["range"]
            rng = types.Range(types.Position(_integer(r["start"]["line"]), _integer(r["start"]["character"])),
                              types.Position(_integer(r["end"]["line"]), _integer(r["end"]["character"])))
            name = action or raw["action"]
            instruction = raw.get("instruction")
            generation = raw.get("generation")
            if name not in SPECS or not isinstance(raw["uri"], str) \
                    or not (instruction is None or isinstance(instruction, str)):
                raise ValueError(name)
            version = _integer(raw["version"])
            generation = None if generation is None else _integer(generation)
            return cls(name, raw["uri"], version, rng, str(raw.get("title", "")),
                       instruction.strip() or None if instruction else None, generation)
        except (KeyError, TypeError, ValueError) as exc:
            raise JsonRpcInvalidParams(f"not a diffusion-lsp action argument ({exc!r}): {raw!r}") from None


def _integer(value: Any) -> int:
    """A JSON integer as the protocol has it: ``true``, ``1.5`` or ``"1"`` is no line, character or version (``int()``
    read them as 1, 1 and 1, so a forged argument named a version or place it did not say)."""
    if type(value) is not int:
        raise TypeError(f"not an integer: {value!r}")
    return value


def _plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class Actions:
    def __init__(self, server: DiffusionServer):
        self.server = server
        # (action, uri, generation, version, start, end) -> what an action computed while offering found
        self.ahead: dict[tuple[str, str, int, int, int, int], Completion] = {}

    # -- offering --------------------------------------------------------------------------
    async def offer(self, params: types.CodeActionParams) -> list[types.CodeAction | types.Command]:
        ls = self.server
        doc = ls.document_or_error(params.text_document.uri)
        start, end = sorted((ls.offset_or_error(doc, params.range.start), ls.offset_or_error(doc, params.range.end)))
        version, generation, text = doc.version, doc.generation, doc.text
        # lsprotocol makes known kinds enum members: compare their values ("refactor.rewrite")
        only = [getattr(kind, "value", kind) for kind in params.context.only] if params.context.only else None
        wants = _wants(only)
        if not any(wants(spec.kind) for spec in SPECS.values()):
            return []
        found = await asyncio.to_thread(survey, text, doc.language_id, start, end)
        # the text surveyed is gone: edited (even back to the same version: a new generation), closed or reopened
        if ls.documents.moved_on(doc.uri, generation, version):
            return []
        invoked = params.context.trigger_kind != types.CodeActionTriggerKind.Automatic
        offered = []
        for spec in SPECS.values():
            if not wants(spec.kind):
                continue
            if await self._offer_one(spec, doc, found, start, end, invoked or bool(params.context.only)):
                offered.append(spec)
            if ls.documents.moved_on(doc.uri, generation, version):
                return []
        return [self._format(ActionData(spec.name, doc.uri, version, params.range, spec.titled(found),
                                        generation=generation)) for spec in offered]

    async def _offer_one(self, spec: ActionSpec, doc: Document, found: Survey, start: int, end: int,
                         compute: bool) -> bool:
        """Is ``spec`` offered here? Each action on its own: one that fails (a fix too big for the model)
        is left out with a log line, and the others are still offered."""
        try:
            if not spec.offered(found, start, end):
                return False
            if not spec.computed_on_offer:
                return True
            if not compute:
                return False
            ahead = await self._compute_ahead(spec, doc, found, start, end)
            return ahead is not None and bool(ahead.fills)
        except Exception as exc:  # noqa: BLE001 (any one action's failure leaves only that action out)
            log.warning("%s not offered at %s %d..%d: %s", spec.name, doc.uri, start, end, exc,
                        exc_info=not isinstance(exc, JsonRpcRequestFailed))
            return False

    async def _compute_ahead(self, spec: ActionSpec, doc: Document, found: Survey, start: int,
                             end: int) -> Completion | None:
        """An action computed while offering (the fix): kept for its resolve, offered only if it found one."""
        request, _ = spec.build(Target(doc.text, doc.language_id, start, end, found, None,
                                       document_key(doc.uri, spec.name)))
        completion = await self._run(doc, request, None)
        if completion is not None and completion.fills:
            self.ahead[(spec.name, doc.uri, doc.generation, doc.version, start, end)] = completion
            while len(self.ahead) > _AHEAD_CACHE:
                self.ahead.pop(next(iter(self.ahead)))
        return completion

    def _format(self, data: ActionData) -> types.CodeAction | types.Command:
        document_caps = self.server.client_capabilities.text_document
        caps = document_caps.code_action if document_caps else None
        command = types.Command(data.title, RUN_COMMAND, arguments=[data.to_json()])
        if caps is None or caps.code_action_literal_support is None:
            return command
        lazy = bool(caps.data_support and caps.resolve_support and "edit" in caps.resolve_support.properties)
        tags = [types.CodeActionTag.LlmGenerated] if (
            caps.tag_support and types.CodeActionTag.LlmGenerated in caps.tag_support.value_set) else None
        return types.CodeAction(data.title, kind=data.spec.kind, is_preferred=data.spec.preferred or None,
                                data=data.to_json() if lazy else None, command=None if lazy else command,
                                tags=tags)

    # -- computing -------------------------------------------------------------------------
    async def resolve(self, action: types.CodeAction) -> types.CodeAction:
        data = ActionData.parse(action.data)
        doc, completion, summary = await self._summarised(data)
        if completion.fills:
            action.edit = self._edit(doc, data.version, completion)
            self._tell(summary)  # what the edit does, e.g. "filled 2 of 3 holes; 1 had no fill that parses"
        else:  # resolved without an edit: the client changes nothing, the user is told why
            self._tell(nothing(data.spec, completion))
        action.data = {**data.to_json(), "result": {**self._result(doc, completion), "summary": summary}}
        return action

    async def apply(self, data: ActionData) -> dict:
        """Compute ``data``'s edit and have the client apply it (``workspace/applyEdit``, labelled with
        what it does)."""
        doc, completion, summary = await self._summarised(data)
        if not completion.fills:
            said = nothing(data.spec, completion)
            self._tell(said)
            return {"applied": False, "reason": said}
        edit = self._edit(doc, data.version, completion)
        result = await self.server.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit, label=summary))
        if result.applied:
            self._tell(summary)
        else:  # the client refused it (a version it has moved past): nothing changed, and the user is told so
            self._tell(f"the edit was not applied ({result.failure_reason or 'the editor refused it'}); "
                       "nothing changed")
        return {"applied": bool(result.applied), "result": {**self._result(doc, completion), "summary": summary},
                **({"reason": result.failure_reason} if result.failure_reason else {})}

    async def _summarised(self, data: ActionData) -> tuple[Document, Completion, str]:
        """``compute``, and the sentence saying what its edit does (lsp_server/outcome.py)."""
        doc, completion, ranges = await self.compute(data)
        return doc, completion, describe(data.action, doc.text, ranges, completion)

    async def compute(self, data: ActionData) -> tuple[Document, Completion, list[tuple[int, int]]]:
        """The completion for ``data`` on exactly the version it names (else ContentModified)."""
        ls, spec = self.server, data.spec
        doc = _current(ls, data)
        data = replace(data, generation=doc.generation)  # a reopen while this runs is never edited either
        start, end = sorted((ls.offset_or_error(doc, data.range.start), ls.offset_or_error(doc, data.range.end)))
        cached = self.ahead.get((spec.name, doc.uri, doc.generation, doc.version, start, end)) \
            if spec.computed_on_offer else None
        if cached is not None:
            return doc, cached, []
        text = doc.text
        found = await asyncio.to_thread(survey, text, doc.language_id, start, end) if spec.surveys else None
        doc = _current(ls, data)
        request, ranges = spec.build(Target(text, doc.language_id, start, end, found, data.instruction,
                                            document_key(doc.uri, "action"), ls.workspace_lines.key(doc.uri),
                                            ls.workspace_lines.path(doc.uri)))
        stream = None
        try:
            if spec.streams:
                stream = await DraftStream.for_action(ls, doc.uri, doc.version, data.action,
                                                      data.title or spec.label,
                                                      [range_json(doc.range_at(s, e, ls.encoding)) for s, e in ranges])
                doc = _current(ls, data)  # edited while the client took the progress token: its progress ends
            completion = await self._run(doc, request, stream)
            if completion is None:
                _current(ls, data)
                raise JsonRpcRequestFailed("superseded by a newer request, or the model is not ready")
        except BaseException:
            if stream is not None:
                stream.close()
            raise
        if stream is not None:
            stream.finish(completion.steps, self._final_holes(doc, data.action, text, ranges, completion))
        return doc, completion, ranges

    async def _run(self, doc: Document, request: Request, stream: DraftStream | None) -> Completion | None:
        try:
            return await self.server.jobs.run(doc, request, stream.on_draft if stream is not None else None)
        except EngineError as exc:
            raise JsonRpcRequestFailed(str(exc)) from None

    # -- formatting ------------------------------------------------------------------------
    def _tell(self, message: str) -> None:
        log.info(message)
        self.server.window_show_message(types.ShowMessageParams(types.MessageType.Info, f"diffusion-lsp: {message}"))

    def _edit(self, doc: Document, version: int, completion: Completion) -> types.WorkspaceEdit:
        edits = [types.TextEdit(doc.range_at(f.start, f.end, self.server.encoding), f.text) for f in completion.fills]
        ws = self.server.client_capabilities.workspace
        if ws and ws.workspace_edit and ws.workspace_edit.document_changes:
            return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
                types.OptionalVersionedTextDocumentIdentifier(doc.uri, version), edits)])
        return types.WorkspaceEdit(changes={doc.uri: edits})

    def _result(self, doc: Document, completion: Completion) -> dict[str, Any]:
        """Per edit: its range, new text and per-token confidence (for marking doubtful tokens)."""
        enc = self.server.encoding
        return {"holes": [hole_json(range_json(doc.range_at(f.start, f.end, enc)), f.text,
                                    [f.text[s:e] for s, e in f.token_spans], f.confidences)
                          for f in completion.fills]}

    def _final_holes(self, doc: Document, action: str, text: str, ranges: list[tuple[int, int]],
                     completion: Completion) -> list[dict[str, Any]]:
        """The final text of every streamed hole: a fill's text, or the hole as it was when left unfilled;
        for a rewrite, the whole selection with its changed lines applied."""
        enc = self.server.encoding
        if action == REWRITE:
            (start, end), out, pos = ranges[0], [], ranges[0][0]
            for f in completion.fills:
                out += [text[pos:f.start], f.text]
                pos = f.end
            new = "".join(out) + text[pos:end]
            return [hole_json(range_json(doc.range_at(start, end, enc)), new, [], [])]
        by_start = {f.start: f for f in completion.fills}
        holes = []
        for s, e in ranges:
            found = by_start.get(s)
            pieces = [found.text[a:b] for a, b in found.token_spans] if found else []
            holes.append(hole_json(range_json(doc.range_at(s, e, enc)), found.text if found else text[s:e], pieces,
                                   found.confidences if found else ()))
        return holes


def _current(ls: DiffusionServer, data: ActionData) -> Document:
    doc = ls.document_or_error(data.uri)
    if doc.version != data.version or doc.out_of_sync:
        raise JsonRpcContentModified(
            f"{data.uri} is at version {doc.version}, the action was computed for version {data.version}")
    if data.generation is not None and doc.generation != data.generation:
        raise JsonRpcContentModified(f"{data.uri} was opened again (or its version went back) since the action "
                                     "was offered")
    return doc


def _wants(only: list[str] | None) -> Callable[[str], bool]:
    def wants(kind: str) -> bool:
        return not only or any(kind == o or kind.startswith(f"{o}.") for o in only)
    return wants


def register(server: DiffusionServer) -> None:
    actions = server.actions

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.RefactorRewrite, types.CodeActionKind.QuickFix]
        + [spec.kind for spec in SPECS.values() if spec.kind != types.CodeActionKind.QuickFix.value],
        resolve_provider=True))
    async def code_action(ls: DiffusionServer,
                          params: types.CodeActionParams) -> list[types.CodeAction | types.Command]:
        return await actions.offer(params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: DiffusionServer, params: types.CodeAction) -> types.CodeAction:
        return await actions.resolve(params)

    @server.command(RUN_COMMAND)
    async def run_action(ls: DiffusionServer, *arguments: Any) -> dict[str, Any]:
        """``diffusion.runAction`` with an offered action's data: compute, then workspace/applyEdit."""
        return await actions.apply(ActionData.parse(arguments[0] if arguments else None))

    @server.command(REWRITE_COMMAND)
    async def rewrite_selection(ls: DiffusionServer, *arguments: Any) -> dict[str, Any]:
        """``diffusion.rewriteSelection`` with ``{uri, version, range, instruction?}``."""
        return await actions.apply(ActionData.parse(arguments[0] if arguments else None, REWRITE))
