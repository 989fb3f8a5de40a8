"""A minimal LSP client over the stdio pipes of a real ``diffusion-lsp`` process, for timing requests."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class LspError(RuntimeError):
    """The server answered with a JSON-RPC error, died, or did not answer in time."""


class LspResponseError(LspError):
    """The server answered the request with a JSON-RPC error (it is still running)."""


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in _LINE_BREAK.finditer(text)]


def _utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le", "surrogatepass")) // 2  # a lone surrogate is one unit


def position_at(text: str, offset: int) -> dict:
    """The LSP position (UTF-16 columns) of str offset ``offset``."""
    starts = _line_starts(text)
    line = max(i for i, s in enumerate(starts) if s <= offset)
    return {"line": line, "character": _utf16_len(text[starts[line]:offset])}


def offset_at(text: str, position: dict) -> int:
    """The str offset of an LSP position (UTF-16 columns), clamped to its line as the spec asks."""
    starts = _line_starts(text)
    line = position["line"]
    if line >= len(starts):
        return len(text)
    start = starts[line]
    end = starts[line + 1] if line + 1 < len(starts) else len(text)
    units, i = 0, start
    while i < end and units < position["character"] and text[i] not in "\r\n":
        units += 2 if ord(text[i]) > 0xFFFF else 1
        i += 1
    return i


def apply_workspace_edit(text: str, uri: str, edit: dict) -> str:
    """``text`` (the document ``uri``) with the TextEdits a WorkspaceEdit (``changes`` or ``documentChanges``) makes
    to it, as an editor applies them: ranges in UTF-16 positions of the text before the edit."""
    edits = list((edit.get("changes") or {}).get(uri, []))
    for change in edit.get("documentChanges") or []:
        if change.get("textDocument", {}).get("uri") == uri:
            edits += change.get("edits", [])
    spans = sorted(((offset_at(text, e["range"]["start"]), offset_at(text, e["range"]["end"]), e["newText"])
                    for e in edits), key=lambda span: span[:2], reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


# Server-to-client requests whose answer is null (LSP 3.17): a progress token made, a registration taken, no
# message action chosen, no workspace folders, a refresh done.
_NULL_ANSWERS = {"window/workDoneProgress/create", "client/registerCapability", "client/unregisterCapability",
                 "window/showMessageRequest", "workspace/workspaceFolders", "workspace/codeLens/refresh",
                 "workspace/semanticTokens/refresh", "workspace/inlayHint/refresh", "workspace/inlineValue/refresh",
                 "workspace/diagnostic/refresh", "workspace/foldingRange/refresh", "workspace/textDocumentContent/refresh"}


def server_command() -> list[str]:
    """The ``diffusion-lsp`` console script beside this interpreter, else ``python -m lsp_server``."""
    script = Path(sys.executable).with_name("diffusion-lsp")
    if script.exists():
        return [str(script)]
    found = shutil.which("diffusion-lsp")
    return [found] if found else [sys.executable, "-m", "lsp_server"]


class LspClient:
    """Spawns the server, frames JSON-RPC on its stdin/stdout, and records when each answer arrived.

    The server's own requests are answered as an editor would (LSP 3.17): ``workspace/applyEdit`` with
    ``{"applied": apply_edits}`` (the edit is kept in ``edits``, to inspect or apply with ``apply_workspace_edit``:
    this client holds no documents), ``workspace/configuration`` with one item per section asked from
    ``configuration`` (``initialize`` puts its options there as ``diffusionLsp``), ``window/showDocument`` with
    ``{"success": false}``, the others of the protocol with null, and a method it does not know with
    MethodNotFound."""

    def __init__(self, command: list[str] | None = None, stderr_path: str | os.PathLike = os.devnull,
                 apply_edits: bool = True):
        self.command = command or server_command()
        self.apply_edits = apply_edits
        self.edits: list[dict] = []                 # the WorkspaceEdit of each workspace/applyEdit, in order
        self.configuration: dict[str, Any] = {}     # what workspace/configuration answers, by section
        self._stderr = open(stderr_path, "wb")
        self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr)
        self._ids = itertools.count(1)
        self._pending: dict[int, Future] = {}
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        self.notifications: list[tuple[float, str, Any]] = []   # (perf_counter, method, params); server requests too
        self._reader = threading.Thread(target=self._read_loop, name="lsp-reader", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    # -- framing ---------------------------------------------------------------------------
    def _send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        with self._lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def _read_message(self) -> dict | None:
        length = None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                break
            name, _, value = line.decode("ascii").partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return json.loads(self.proc.stdout.read(length)) if length is not None else {}

    def _read_loop(self) -> None:
        while (message := self._read_message()) is not None:
            arrived = time.perf_counter()
            if "id" in message and "method" in message:        # a request from the server: answered, and kept
                self._send({"id": message["id"], **self._answer(message["method"], message.get("params"))})
                with self._changed:                            # with the notifications (by method)
                    self.notifications.append((arrived, message["method"], message.get("params")))
                    self._changed.notify_all()
            elif "id" in message:                               # an answer to one of ours
                future = self._pending.pop(message["id"], None)
                if future is not None:
                    future.set_result((arrived, message))
            else:
                with self._changed:
                    self.notifications.append((arrived, message.get("method", ""), message.get("params")))
                    self._changed.notify_all()
        for future in list(self._pending.values()):
            future.set_exception(LspError(f"server exited with status {self.proc.poll()}"))
        with self._changed:
            self._changed.notify_all()

    def _answer(self, method: str, params: Any) -> dict:
        """The response to the server's request ``method``: ``{"result": ...}`` or ``{"error": ...}``."""
        params = params if isinstance(params, dict) else {}
        if method == "workspace/applyEdit":
            self.edits.append(params.get("edit") or {})
            if self.apply_edits:
                return {"result": {"applied": True}}
            return {"result": {"applied": False, "failureReason": "this client was told to refuse edits"}}
        if method == "workspace/configuration":
            return {"result": [self._section(item.get("section")) for item in params.get("items") or []]}
        if method == "window/showDocument":
            return {"result": {"success": False}}
        if method in _NULL_ANSWERS:
            return {"result": None}
        return {"error": {"code": -32601, "message": f"this client does not handle {method}"}}

    def _section(self, section: str | None) -> Any:
        """The configuration under a dotted ``section`` (all of it for none), null where there is none."""
        value: Any = self.configuration
        for name in section.split(".") if section else []:
            if not isinstance(value, dict) or name not in value:
                return None
            value = value[name]
        return value

    # -- requests --------------------------------------------------------------------------
    def request_timed(self, method: str, params: Any, timeout: float = 60.0) -> tuple[Any, float]:
        """The result and the round trip in milliseconds (written to answer read)."""
        rid = next(self._ids)
        future: Future = Future()
        self._pending[rid] = future
        sent = time.perf_counter()
        self._send({"id": rid, "method": method, "params": params})
        try:
            arrived, message = future.result(timeout=timeout)
        except TimeoutError as e:
            raise LspError(f"{method}: no answer within {timeout:g} s") from e
        if "error" in message:
            raise LspResponseError(f"{method}: {message['error'].get('message', message['error'])}")
        return message.get("result"), (arrived - sent) * 1000.0

    def request(self, method: str, params: Any, timeout: float = 60.0) -> Any:
        return self.request_timed(method, params, timeout)[0]

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    # -- session ---------------------------------------------------------------------------
    def initialize(self, options: dict, timeout: float = 60.0, root_uri: str | None = None) -> dict:
        self.configuration.setdefault("diffusionLsp", options)
        capabilities = {
            "general": {"positionEncodings": ["utf-16"]},
            "textDocument": {"inlineCompletion": {"dynamicRegistration": False},
                             "synchronization": {"dynamicRegistration": False}},
            "window": {"workDoneProgress": False},
            "workspace": {"applyEdit": True, "configuration": True},
        }
        result = self.request("initialize", {
            "processId": os.getpid(), "rootUri": root_uri, "capabilities": capabilities,
            "initializationOptions": options, "clientInfo": {"name": "diffusion-lsp-benchmarks"},
        }, timeout)
        self.notify("initialized", {})
        return result

    def wait_for(self, method: str, predicate=lambda params: True, timeout: float = 120.0) -> Any:
        """The params of the first notification ``method`` (received so far or later) that satisfies ``predicate``."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for _, m, params in self.notifications:
                    if m == method and predicate(params):
                        return params
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise LspError(f"no {method} notification within {timeout:g} s")
                self._changed.wait(left)

    def wait_ready(self, timeout: float = 300.0) -> dict:
        """Wait for ``diffusion/status`` ready; a load error raises with the server's message."""
        status = self.wait_for("diffusion/status", lambda p: p.get("state") in ("ready", "error"), timeout)
        if status.get("state") == "error":
            raise LspError(f"model failed to load: {status.get('message', '')}")
        return status

    def close(self, timeout: float = 10.0) -> None:
        try:
            if self.proc.poll() is None:
                self.request("shutdown", None, timeout)
                self.notify("exit", None)
                self.proc.wait(timeout)
        except (LspError, OSError, subprocess.TimeoutExpired):
            pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._stderr.close()

    def __enter__(self) -> "LspClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
