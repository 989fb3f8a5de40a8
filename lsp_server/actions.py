"""Code actions: "Rewrite selection", "Fill N holes", "Complete body of NAME" (refactor.rewrite) and
"Fix syntax error" (quickfix). Offered by textDocument/codeAction, computed in codeAction/resolve or by
the diffusion.runAction command (ending in workspace/applyEdit); diffusion.rewriteSelection takes an
instruction. Every edit is for the version it was computed for, and never for another."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcContentModified, JsonRpcException, JsonRpcInvalidParams

from engine import Completion, EngineError
from engine.actions import FillRequest, FixRequest, RewriteRequest
from engine.targets import Survey, survey

from .action_drafts import ActionStream, hole_json, range_json
from .documents import Document
from .jobs import JobRunner
from .outcome import describe

log = logging.getLogger(__name__)
REWRITE_COMMAND = "diffusion.rewriteSelection"
RUN_COMMAND = "diffusion.runAction"
REWRITE, FILL, BODY, FIX = "rewriteSelection", "fillHoles", "completeBody", "fixSyntax"
_KINDS = {REWRITE: types.CodeActionKind.RefactorRewrite, FILL: types.CodeActionKind.RefactorRewrite,
          BODY: types.CodeActionKind.RefactorRewrite, FIX: types.CodeActionKind.QuickFix}
_FIX_CACHE = 8


class JsonRpcRequestFailed(JsonRpcException):
    """LSP RequestFailed: the request was valid but nothing could be computed."""

    CODE = -32803
    MESSAGE = "Request Failed"


@dataclass(frozen=True)
class ActionData:
    """What an offered action will do, as sent in ``CodeAction.data`` and command arguments."""

    action: str
    uri: str
    version: int
    range: types.Range
    title: str = ""
    instruction: str | None = None

    def to_json(self) -> dict:
        out = {"action": self.action, "uri": self.uri, "version": self.version,
               "range": range_json(self.range), "title": self.title}
        return out if self.instruction is None else {**out, "instruction": self.instruction}

    @classmethod
    def parse(cls, raw: Any, action: str | None = None) -> ActionData:
        raw = _plain(raw)
        try:
            r = raw["range"]
            rng = types.Range(types.Position(int(r["start"]["line"]), int(r["start"]["character"])),
                              types.Position(int(r["end"]["line"]), int(r["end"]["character"])))
            name = action or raw["action"]
            instruction = raw.get("instruction")
            if name not in _KINDS or not isinstance(raw["uri"], str) or not isinstance(raw["version"], int) \
                    or not (instruction is None or isinstance(instruction, str)):
                raise ValueError(name)
            return cls(name, raw["uri"], raw["version"], rng, str(raw.get("title", "")),
                       instruction.strip() or None if instruction else None)
        except (KeyError, TypeError, ValueError) as exc:
            raise JsonRpcInvalidParams(f"not a diffusion-lsp action argument ({exc!r}): {raw!r}") from None


def _plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _title(action: str, found: Survey | None = None) -> str:
    if action == FILL and found is not None:
        n = len(found.blanks)
        return f"Fill {n} hole{'s' if n != 1 else ''}"
    if action == BODY and found is not None:
        return f"Complete body of {found.function}"
    return {REWRITE: "Rewrite selection", FIX: "Fix syntax error", FILL: "Fill holes", BODY: "Complete body"}[action]


class Actions:
    def __init__(self, server):
        self.server = server
        self.fixes: dict[tuple, Completion] = {}  # (uri, version, start, end) -> a fix computed while offering

    # -- offering --------------------------------------------------------------------------
    async def offer(self, params: types.CodeActionParams) -> list[types.CodeAction | types.Command]:
        ls = self.server
        doc = ls.document_or_error(params.text_document.uri)
        start, end = sorted((ls.offset_or_error(doc, params.range.start), ls.offset_or_error(doc, params.range.end)))
        version, text = doc.version, doc.text
        wants = _wants(params.context.only)
        if not any(wants(k) for k in set(_KINDS.values())):
            return []
        found = await asyncio.to_thread(survey, text, doc.language_id, start, end)
        if doc.version != version:
            return []
        offered = []
        if end > start and wants(_KINDS[REWRITE]):
            offered.append(REWRITE)
        if found.blanks and wants(_KINDS[FILL]):
            offered.append(FILL)
        if found.body is not None and wants(_KINDS[BODY]):
            offered.append(BODY)
        invoked = params.context.trigger_kind != types.CodeActionTriggerKind.Automatic
        if found.errors and wants(_KINDS[FIX]) and (invoked or params.context.only):
            fix = await self._compute_fix(doc, found, start, end)
            if doc.version != version:
                return []
            if fix is not None and fix.fills:
                offered.insert(0, FIX)
        return [self._format(ActionData(a, doc.uri, version, params.range, _title(a, found))) for a in offered]

    async def _compute_fix(self, doc: Document, found: Survey, start: int, end: int) -> Completion | None:
        request = FixRequest(doc.text, doc.language_id, found.errors, key=doc.uri + "#fix")
        completion = await self._run(doc, request, None)
        if completion is not None and completion.fills:
            self.fixes[(doc.uri, doc.version, start, end)] = completion
            while len(self.fixes) > _FIX_CACHE:
                self.fixes.pop(next(iter(self.fixes)))
        return completion

    def _format(self, data: ActionData) -> types.CodeAction | types.Command:
        caps = self.server.client_capabilities.text_document
        caps = caps.code_action if caps else None
        command = types.Command(data.title, RUN_COMMAND, arguments=[data.to_json()])
        if caps is None or caps.code_action_literal_support is None:
            return command
        lazy = bool(caps.data_support and caps.resolve_support and "edit" in caps.resolve_support.properties)
        tags = [types.CodeActionTag.LlmGenerated] if (
            caps.tag_support and types.CodeActionTag.LlmGenerated in caps.tag_support.value_set) else None
        return types.CodeAction(data.title, kind=_KINDS[data.action], is_preferred=data.action == FIX or None,
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
            self._tell(_nothing(data.action))
        action.data = {**data.to_json(), "result": {**self._result(doc, completion), "summary": summary}}
        return action

    async def apply(self, data: ActionData) -> dict:
        """Compute ``data``'s edit and have the client apply it (``workspace/applyEdit``, labelled with
        what it does)."""
        doc, completion, summary = await self._summarised(data)
        if not completion.fills:
            self._tell(_nothing(data.action))
            return {"applied": False, "reason": _nothing(data.action)}
        edit = self._edit(doc, data.version, completion)
        result = await self.server.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit, label=summary))
        self._tell(summary)
        return {"applied": bool(result.applied), "result": {**self._result(doc, completion), "summary": summary},
                **({"reason": result.failure_reason} if result.failure_reason else {})}

    async def _summarised(self, data: ActionData) -> tuple[Document, Completion, str]:
        """``compute``, and the sentence saying what its edit does (lsp_server/outcome.py)."""
        doc, completion, ranges = await self.compute(data)
        return doc, completion, describe(data.action, doc.text, ranges, completion)

    async def compute(self, data: ActionData) -> tuple[Document, Completion, list[tuple[int, int]]]:
        """The completion for ``data`` on exactly the version it names (else ContentModified)."""
        ls = self.server
        doc = _current(ls, data)
        start, end = sorted((ls.offset_or_error(doc, data.range.start), ls.offset_or_error(doc, data.range.end)))
        cached = self.fixes.get((doc.uri, doc.version, start, end)) if data.action == FIX else None
        if cached is not None:
            return doc, cached, []
        text, language, key = doc.text, doc.language_id, doc.uri + "#action"
        if data.action == REWRITE:
            if end <= start:
                raise JsonRpcInvalidParams("select the code to rewrite")
            request, ranges = RewriteRequest(text, language, start, end, data.instruction, key=key), [(start, end)]
        else:
            found = await asyncio.to_thread(survey, text, language, start, end)
            doc = _current(ls, data)
            request, ranges = _request(data.action, found, text, language, key, ls.settings.max_hole_tokens)
        stream = None
        if data.action != FIX:
            stream = await ActionStream.open(ls, doc, data.action, data.title or _title(data.action),
                                             [range_json(doc.range_at(s, e, ls.encoding)) for s, e in ranges])
            doc = _current(ls, data)
        try:
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

    async def _run(self, doc: Document, request, stream) -> Completion | None:
        try:
            return await self.server.jobs.run(doc, request, stream)
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

    def _result(self, doc: Document, completion: Completion) -> dict:
        """Per edit: its range, new text and per-token confidence (for marking doubtful tokens)."""
        enc = self.server.encoding
        return {"holes": [hole_json(range_json(doc.range_at(f.start, f.end, enc)), f.text,
                                    [f.text[s:e] for s, e in f.token_spans], f.confidences)
                          for f in completion.fills]}

    def _final_holes(self, doc: Document, action: str, text: str, ranges: list[tuple[int, int]],
                     completion: Completion) -> list[dict]:
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
            f = by_start.get(s)
            pieces = [f.text[a:b] for a, b in f.token_spans] if f else []
            holes.append(hole_json(range_json(doc.range_at(s, e, enc)), f.text if f else text[s:e], pieces,
                                   f.confidences if f else ()))
        return holes


def _request(action: str, found: Survey, text: str, language: str, key: str, body_slots: int):
    if action == FILL:
        if not found.blanks:
            raise JsonRpcRequestFailed("no holes to fill here any more")
        return FillRequest(text, language, found.blanks, key=key), [(b.start, b.end) for b in found.blanks]
    if action == BODY:
        if found.body is None:
            raise JsonRpcRequestFailed("no function body here")
        body = found.body
        return FillRequest(text, language, (body,), found.callers, slots=body_slots, key=key), [(body.start, body.end)]
    if not found.errors:
        raise JsonRpcRequestFailed("no syntax error here any more")
    return FixRequest(text, language, found.errors, key=key), []


def _current(ls, data: ActionData) -> Document:
    doc = ls.document_or_error(data.uri)
    if doc.version != data.version or doc.out_of_sync:
        raise JsonRpcContentModified(
            f"{data.uri} is at version {doc.version}, the action was computed for version {data.version}")
    return doc


def _nothing(action: str) -> str:
    return {REWRITE: "no rewrite that parses and changes something was found",
            FIX: "no fix that parses was found", FILL: "no fill that parses was found",
            BODY: "no body that parses was found"}[action]


def _wants(only):
    def wants(kind: str) -> bool:
        return not only or any(kind == o or kind.startswith(f"{o}.") for o in only)
    return wants


def register(server) -> None:
    if getattr(server, "jobs", None) is None:
        server.jobs = JobRunner(server)
    actions = server.actions = Actions(server)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.RefactorRewrite, types.CodeActionKind.QuickFix],
        resolve_provider=True))
    async def code_action(ls, params: types.CodeActionParams):
        return await actions.offer(params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls, params: types.CodeAction) -> types.CodeAction:
        return await actions.resolve(params)

    @server.command(RUN_COMMAND)
    async def run_action(ls, *arguments) -> dict:
        """``diffusion.runAction`` with an offered action's data: compute, then workspace/applyEdit."""
        return await actions.apply(ActionData.parse(arguments[0] if arguments else None))

    @server.command(REWRITE_COMMAND)
    async def rewrite_selection(ls, *arguments) -> dict:
        """``diffusion.rewriteSelection`` with ``{uri, version, range, instruction?}``."""
        return await actions.apply(ActionData.parse(arguments[0] if arguments else None, REWRITE))
