"""build_server(engine_factory): the declared server (documents, settings, engine, jobs, status, actions),
its lifecycle, document sync and settings. Features live in their own modules (inline.py, actions.py) and
register against ``DiffusionServer``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import uuid
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import (JsonRpcContentModified, JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams,
                              JsonRpcInvalidRequest, JsonRpcMethodNotFound, JsonRpcRequestCancelled)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from engine import Engine, EngineConfig, EngineState

from . import __version__, actions, inline
from .action_specs import JsonRpcRequestFailed
from .actions import Actions
from .adapting import WorkspaceAdapter, workspace_folders, workspace_of
from .documents import Document, DocumentStore, PositionError
from .jobs import JobRunner
from .progress import StatusReporter
from .settings import SECTION, Settings, parse_settings
from .workspace_lines import WorkspaceLines

log = logging.getLogger(__name__)
# answers, not the server's failures: a request the client got wrong, one for a document version the user has moved
# past (ContentModified), one a newer request superseded or with nothing left to compute (RequestFailed; an engine's
# error is logged where it happens, engine/worker.py)
_ANSWERS = (JsonRpcInvalidParams, JsonRpcInvalidRequest, JsonRpcMethodNotFound, JsonRpcRequestCancelled,
            JsonRpcContentModified, JsonRpcRequestFailed)
EngineFactory = Callable[[EngineConfig], Engine]
STATS = "diffusion/stats"


class _Skip:
    """Stands for a message already answered while it was being decoded."""

    jsonrpc = "skip"


class DiffusionProtocol(LanguageServerProtocol):
    """pygls' protocol with two fixes: requests whose params fail to decode get an InvalidParams
    answer (instead of none: the client would wait forever), and document sync uses our own store."""

    _server: DiffusionServer

    def get_message_type(self, method: str) -> Any:  # type: ignore[override]  # pygls: an lru_cache wrapper
        """The lsprotocol type of ``method``'s message. pygls caches this (and ``get_result_type``) with
        ``lru_cache`` on the method, which keys the cache by the protocol object too: the last 128 (session, method)
        pairs kept their sessions alive, and over ``--tcp`` each ended session's server, documents, engine and
        model with them (22 MiB a session with the embedded model). A dict lookup needs no cache."""
        return types.METHOD_TO_TYPES.get(method, (None,))[0]

    def get_result_type(self, method: str) -> Any:  # type: ignore[override]
        return types.METHOD_TO_TYPES.get(method, (None, None))[1]

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                cause = exc.__cause__
                detail = f": {cause}" if cause else ""
                err = JsonRpcInvalidParams(f"invalid params for {data['method']}{detail}")
                self._send_response(data["id"], None, err.to_response_error())
                return _Skip()
            if isinstance(data, dict) and "id" in data:
                return self._unreadable_answer(data, exc)
            self._lost_sync(data)
            raise

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        """A request the client got wrong (an unknown document, a position past the end, an unknown command), one
        for a document that changed since (an action resolved after an edit) and one superseded are answered with
        their error and logged as one line at info level. pygls logs each one with its traceback at error level,
        which editors show as the server failing (Neovim's log writes stderr lines as [ERROR])."""
        if not future.cancelled() and isinstance(future.exception(), _ANSWERS):
            self._request_futures.pop(msg_id, None)
            exc = future.exception()
            log.info("request %s answered with %s: %s", msg_id, type(exc).__name__, exc)
            self._send_response(msg_id, error=exc.to_response_error())
            return
        super()._send_handler_result(future, msg_id=msg_id)

    def _unreadable_answer(self, data: dict[str, Any], exc: JsonRpcException) -> _Skip:
        """A client's answer to one of our requests that does not decode (``workspace/applyEdit`` answered
        with ``null``): the handler awaiting it gets an error instead of waiting for good (its own request would
        never be answered)."""
        future = self._request_futures.pop(data["id"], None)
        cause = exc.__cause__
        log.warning("the client's answer to request %r could not be read: %s", data["id"], cause or exc)
        if future is not None and not future.done():
            future.set_exception(JsonRpcInternalError(
                f"the editor's answer to a request of the server could not be read{f': {cause}' if cause else ''}"))
        return _Skip()

    def _lost_sync(self, data: Any) -> None:
        """A didChange or didOpen that could not be decoded (a null version, a negative position) is a change
        the document store never saw: the document is out of sync until a full-text change (no edit is made
        for text the client no longer has), and what was being computed for it is cancelled."""
        method = data.get("method") if isinstance(data, dict) else None
        if method not in (types.TEXT_DOCUMENT_DID_CHANGE, types.TEXT_DOCUMENT_DID_OPEN):
            return
        params = data.get("params")
        item = params.get("textDocument") if isinstance(params, dict) else None
        uri = item.get("uri") if isinstance(item, dict) else None
        doc = self._server.documents.get(uri) if isinstance(uri, str) else None
        if doc is None:
            return
        was = doc.out_of_sync
        doc.out_of_sync = True
        self._server.lost_sync(doc.uri, f"a {method} it could not decode", was)
        self._server.on_document_changed(doc.uri)

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _Skip):
            return
        super().handle_message(message)

    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None):
        """pygls 2.1 files the future of every generator handler under ``msg_id`` (a fresh uuid for a
        notification such as didChange) and only a request's answer removes it: one future per edit,
        kept for good. Forget each one when it is done (a request's entry is removed the same way)."""
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        future = self._request_futures.get(msg_id)
        if future is not None:
            future.add_done_callback(functools.partial(self._forget_future, msg_id))

    def _forget_future(self, key: Any, future: Any) -> None:
        if self._request_futures.get(key) is future:
            del self._request_futures[key]

    def send_request(self, method: str, params: Any | None = None, callback: Callable[[Any], None] | None = None,
                     msg_id: Any = None) -> Any:
        """A request to the client whose waiter gives up (the 2 s a client has to accept a progress token:
        the awaiting task is cancelled, and so is this future) is forgotten then: pygls kept its future and result
        type until an answer came (for good when none came), and an answer that came later set a result on the
        cancelled future (InvalidStateError, logged as the server failing)."""
        msg_id = msg_id if msg_id is not None else str(uuid.uuid4())
        future = super().send_request(method, params, callback, msg_id)
        future.add_done_callback(functools.partial(self._forget_request, msg_id))
        return future

    def _forget_request(self, msg_id: Any, future: Any) -> None:
        if future.cancelled():
            self._result_types.pop(msg_id, None)
            self._forget_future(msg_id, future)

    def _handle_response(self, msg_id: Any, result: Any | None = None, error: Any | None = None) -> None:
        """pygls drops a request's result type when its answer has a result, never when it is an error (a client
        refusing a progress token): one entry per refused request, kept for good."""
        self._result_types.pop(msg_id, None)
        super()._handle_response(msg_id, result, error)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args):
        """pygls' own, over a copy of the pending futures: cancelling one runs its done callback (``_forget_future``),
        which removes it from the dict pygls iterates. A shutdown while a request to the client was unanswered (the
        load's progress token, asked for right after ``initialized``) failed with "dictionary changed size during
        iteration"; the client then sent no ``exit`` and the server kept running (VS Code's restart left it)."""
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        current_id = self.msg_id  # this request's own future is not cancelled
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current_id and not future.done():
                future.cancel()
        self._shutdown = True
        return None

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args):
        """Exit at once (0 after shutdown, 1 otherwise): the engine thread holds nothing to save."""
        import os
        import sys
        sys.stdout.flush()
        os._exit(0 if self._shutdown else 1)
        yield from ()

    @property
    def encoding(self) -> str:
        encoding = self.workspace.position_encoding if self._workspace is not None else None
        return str(getattr(encoding, "value", encoding) or types.PositionEncodingKind.Utf16.value)

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    async def lsp_workspace__execute_command(  # type: ignore[override]  # awaited, not a generator: cancellable
            self, params: types.ExecuteCommandParams) -> Any:
        """Run a command as one awaited task, so $/cancelRequest cancels it (pygls' own wraps it in a
        generator that a cancel cannot reach). The command gets the arguments as sent."""
        handler = self.fm.commands.get(params.command)
        if handler is None:
            raise JsonRpcInvalidParams(f"unknown command {params.command!r}")
        result = handler(*(params.arguments or ()))
        return await result if inspect.isawaitable(result) else result

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        if self._server.documents.get(params.text_document.uri) is not None:  # a reopen: the old text's jobs go
            log.info("%s opened again: its running jobs are cancelled", params.text_document.uri)
            self._server.on_document_changed(params.text_document.uri)
        self._server.documents.open(params.text_document)
        yield from ()

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        doc = self._server.documents.get(params.text_document.uri)
        was = doc is not None and doc.out_of_sync
        try:
            self._server.documents.change(params, self.encoding)
        except PositionError as exc:
            self._server.lost_sync(params.text_document.uri, f"a change it could not apply: {exc}", was)
        self._server.on_document_changed(params.text_document.uri)
        yield from ()

    @lsp_method(types.TEXT_DOCUMENT_DID_SAVE)
    def lsp_text_document__did_save(self, params: types.DidSaveTextDocumentParams):
        doc = self._server.documents.get(params.text_document.uri)
        text = params.text if params.text is not None else (doc.text if doc is not None else None)
        if text is not None:
            self._server.workspace_lines.saved(params.text_document.uri, text)
        yield from ()

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        self._server.documents.close(params.text_document.uri)
        self._server.on_document_changed(params.text_document.uri)
        yield from ()


class DiffusionServer(LanguageServer):
    """The server's state, declared: features read these and attach nothing of their own."""

    protocol: DiffusionProtocol

    def __init__(self, engine_factory: EngineFactory = Engine):
        super().__init__("diffusion-lsp", __version__, protocol_cls=DiffusionProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.documents = DocumentStore()
        self.settings = Settings()
        self.startup_problems: list[str] = []   # invalid initializationOptions, shown once initialized
        self.engine_factory = engine_factory
        self.engine: Engine | None = None       # made after `initialized`
        self.status = StatusReporter(self)
        self.jobs = JobRunner(self)
        self.actions = Actions(self)
        self.adapter = WorkspaceAdapter(self)   # setting adapt: "background" (lsp_server/adapting.py)
        self.workspace_lines = WorkspaceLines(self)   # the workspace's lines for typed lines (engine/worklines.py)

    @property
    def encoding(self) -> str:
        return self.protocol.encoding

    def shutdown(self) -> None:
        """End this session (end of stdin, or its TCP client gone): its engine thread stops too."""
        if self.engine is not None:
            self.engine.close(wait=False)
        self.adapter.terminate()
        self.workspace_lines.close()
        super().shutdown()

    def report_server_error(self, error: Exception, source: Any) -> None:
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)

    def on_document_changed(self, uri: str) -> None:
        """An edit or a close: what was being computed for the old text is cancelled."""
        self.jobs.cancel_document(uri)
        self.adapter.activity()

    def lost_sync(self, uri: str, why: str, was: bool) -> None:
        """A document is out of sync (``why``): logged each time; the user is told once, when it goes out of sync,
        that it gets no suggestion or edit until its whole text is sent again (reopening it does that)."""
        log.warning("%s is out of sync until the next full-text change: %s", uri, why)
        if not was:
            self.warn(f"lost track of {uri} ({why}): no suggestions or edits for it until it is reopened")

    def warn(self, message: str) -> None:
        log.warning(message)
        self.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"diffusion-lsp: {message}"))

    def apply_settings(self, raw: Any, base: Settings | None = None) -> None:
        settings, problems = parse_settings(raw, base)
        if problems:
            self.warn("invalid settings, not applied: " + "; ".join(problems))
        old, self.settings = self.settings, settings
        # Fill options travel with each request; any load setting reloads the model.
        if self.engine is not None and settings.load != old.load:
            self.status.loading(settings.load.engine or settings.load.model)
            self.engine.reconfigure(settings.engine_config())
        self.workspace_lines.start()   # turned on now: count the folders (once, once the model is ready)

    def document_or_error(self, uri: str) -> Document:
        doc = self.documents.get(uri)
        if doc is None:
            raise JsonRpcInvalidParams(f"unknown document {uri}: send textDocument/didOpen first")
        return doc

    def offset_or_error(self, doc: Document, position: types.Position) -> int:
        try:
            return doc.offset_at(position, self.encoding)
        except PositionError as exc:
            raise JsonRpcInvalidParams(str(exc)) from None


def build_server(engine_factory: EngineFactory = Engine) -> DiffusionServer:
    server = DiffusionServer(engine_factory)

    @server.feature(types.INITIALIZE)
    def initialize(ls: DiffusionServer, params: types.InitializeParams) -> None:
        ls.settings, problems = parse_settings(params.initialization_options)
        ls.status.client_supports_progress = bool(
            params.capabilities.window and params.capabilities.window.work_done_progress)
        ls.startup_problems = problems
        ls.adapter.workspace = workspace_of(params)
        ls.workspace_lines.roots = workspace_folders(params)
        watched = params.capabilities.workspace and params.capabilities.workspace.did_change_watched_files
        ls.workspace_lines.watch = bool(watched and watched.dynamic_registration)

    @server.feature(types.INITIALIZED)
    def initialized(ls: DiffusionServer, params: types.InitializedParams) -> None:
        ls.status.loop = asyncio.get_running_loop()
        if ls.startup_problems:
            ls.warn("invalid settings, not applied: " + "; ".join(ls.startup_problems))
        ls.engine = ls.engine_factory(ls.settings.engine_config())
        ls.engine.on_state(ls.status.engine_state_changed)
        ls.engine.on_notice(ls.status.engine_notice)
        loop = asyncio.get_running_loop()

        def adapt_when_ready(state: EngineState, error: str | None) -> None:
            if state is EngineState.READY:
                loop.call_soon_threadsafe(lambda: loop.create_task(ls.adapter.engine_ready()))
                # the workspace's lines are counted once the model is in: counting beside the load slowed it
                # (a 30 MB folder: ready in 4.8 s instead of 3.3)
                loop.call_soon_threadsafe(ls.workspace_lines.start)
        ls.engine.on_state(adapt_when_ready)
        ls.status.loading(ls.settings.load.engine or ls.settings.load.model)
        ls.engine.start()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: DiffusionServer, params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings
        if isinstance(settings, dict) and SECTION not in settings and "settings" in settings:
            settings = settings["settings"]
        ls.apply_settings(settings, ls.settings)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_workspace_folders(ls: DiffusionServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        ls.workspace_lines.folders_changed(params.event.added or [], params.event.removed or [])

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: DiffusionServer, params: types.DidChangeWatchedFilesParams) -> None:
        ls.workspace_lines.files_changed(params.changes)

    @server.feature(STATS)
    def stats(ls: DiffusionServer, params: Any) -> dict[str, Any]:
        """Engine counters, for clients' status views, tests and benchmarks."""
        engine = ls.engine
        return {"state": engine.state.value if engine else "idle", "error": engine.error if engine else None,
                "model": ls.settings.load.model, **(engine.stats() if engine else {}), "adapt": ls.adapter.stats(),
                "workspaceLines": ls.workspace_lines.stats()}

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: DiffusionServer, params: None) -> None:
        ls.adapter.terminate()
        if ls.engine is not None:
            ls.engine.close(wait=False)  # never block the answer on a model that is still loading

    inline.register(server)
    actions.register(server)
    return server
