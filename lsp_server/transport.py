"""The wire under one session: framed JSON-RPC read from a byte stream, and an answer for everything pygls
would leave unanswered or serve against LSP's lifecycle (framing errors, invalid JSON, batches, requests before
``initialize`` or after ``shutdown``, a second ``initialize``); every other message goes to the session's pygls
protocol. ``serve_stdio`` runs it over stdin/stdout.

JSON-RPC 2.0 rules applied here (LSP uses no batches): bytes that are not a framed message or not JSON get
one Parse error (-32700, id null); a JSON value that is not a request, notification or response gets
Invalid Request (-32600, with its id when it has a usable one); a batch array is answered, per JSON-RPC 2.0,
with an array holding an Invalid Request error for each element that is not a notification (none of them
runs); a request after ``shutdown`` gets Invalid Request, as LSP asks. Before ``initialize`` (LSP's lifecycle), a
request gets ServerNotInitialized (-32002) and a notification is dropped, but for ``exit`` and the server's own
``diffusion/stats`` (a status probe, answered at any time); a second ``initialize`` gets Invalid Request and a
second ``initialized`` is dropped (pygls ran them again: the settings and folders replaced, a second model loaded
beside the first).

Messages are handled in the order sent, even when one read holds several: after each message the loop runs
once, so a request's handler starts (and reads the document at the position it names) before the next
message, such as the didChange of the user's next keystroke, is applied.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Callable
from typing import Any

from pygls.io_ import StdoutWriter
from pygls.server import JsonRPCServer

from .framing import Framer, FramingError

log = logging.getLogger(__name__)
DEFAULT_MAX_MESSAGE = 64 * 2**20
PARSE_ERROR, INVALID_REQUEST, INTERNAL_ERROR, SERVER_NOT_INITIALIZED = -32700, -32600, -32603, -32002
BEFORE_INITIALIZE = {"exit", "diffusion/stats"}   # the messages served before ``initialize``
CHUNK = 1 << 16
_SIZE = re.compile(r"(\d+)\s*([kmg]?)i?b?", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``--max-message-size``: bytes, or a number with K, M or G (powers of 1024), e.g. ``64M``."""
    match = _SIZE.fullmatch(text.strip())
    if match is None or int(match.group(1)) == 0:
        raise ValueError(f"expected a positive size such as 67108864 or 64M, got {text!r}")
    return int(match.group(1)) * 1024 ** " kmg".index((match.group(2) or " ").lower())


def _usable_id(message: dict) -> Any:
    """The message's id if JSON-RPC allows it (a string, an integer or null), else None."""
    rid = message.get("id")
    return rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None


def _invalid(message: Any) -> str | None:
    """Why ``message`` is not a JSON-RPC 2.0 request, notification or response (None when it is one)."""
    if not isinstance(message, dict):
        return f"expected a JSON-RPC message object, got {type(message).__name__}"
    if message.get("jsonrpc") != "2.0":
        return 'not JSON-RPC 2.0: "jsonrpc" must be "2.0"'
    if "id" in message and message["id"] is not None and _usable_id(message) is None:
        return "an id must be a string or an integer"
    if "method" in message:
        return None if isinstance(message["method"], str) else '"method" must be a string'
    if "id" in message and ("result" in message or "error" in message):
        return None
    return 'neither a request or notification ("method") nor a response ("id" with "result" or "error")'


class Connection:
    """One client's byte stream and the pygls session it talks to: ``receive`` bytes as they arrive."""

    def __init__(self, server: JsonRPCServer, max_message: int = DEFAULT_MAX_MESSAGE,
                 admit: Callable[[dict], tuple[int, str] | None] | None = None,
                 on_exit: Callable[[], None] | None = None):
        self.server, self.protocol = server, server.protocol
        self.framer = Framer(max_message)
        self.admit = admit  # checks the first message (TCP: token, capacity); an error closes the connection
        self.on_exit = on_exit  # `exit` ends this connection only (TCP); None: pygls ends the process
        self.closed = False
        self.initialize_seen = False   # LSP's lifecycle: what comes before ``initialize`` is refused
        self.initialized_seen = False

    async def receive(self, data: bytes) -> None:
        self.framer.feed(data)
        while not self.closed and (item := self.framer.next()) is not None:
            if isinstance(item, FramingError):
                log.warning("framing error, %d bytes dropped until the next header: %s", item.dropped, item.reason)
                self.send_error(None, PARSE_ERROR, f"Parse error: {item.reason}")
            else:
                self._body(item)
                # an async handler only starts when the loop runs: let it read the document as this message
                # saw it, before the next message (a didChange in the same read) changes it
                await asyncio.sleep(0)

    def send_error(self, rid: Any, code: int, message: str) -> None:
        self.protocol._send_data(_error(rid, code, message))

    def close(self) -> None:
        self.closed = True

    def _body(self, body: bytes) -> None:
        try:
            message = json.loads(body)
        except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, or nested too deep
            log.warning("a %d-byte message is not JSON (%s): answered with a Parse error", len(body), exc)
            self.send_error(None, PARSE_ERROR, f"Parse error: {exc}")
            self.framer.reject(body)
            return
        if isinstance(message, list):
            self._batch(message)
        elif (problem := _invalid(message)) is not None:
            log.warning("invalid request: %s", problem)
            self.send_error(_usable_id(message) if isinstance(message, dict) else None, INVALID_REQUEST,
                            f"Invalid Request: {problem}")
        elif self.admit is not None:
            self._admit(message)
        else:
            self._dispatch(message)

    def _batch(self, batch: list) -> None:
        log.warning("a batch of %d messages was refused: LSP does not use JSON-RPC batches", len(batch))
        if not batch:
            self.send_error(None, INVALID_REQUEST, "Invalid Request: an empty batch")
            return
        answers = [_error(_usable_id(m) if isinstance(m, dict) else None, INVALID_REQUEST,
                          "Invalid Request: JSON-RPC batches are not supported by this Language Server Protocol "
                          "server; send each message on its own")
                   for m in batch if not (isinstance(m, dict) and "method" in m and "id" not in m)]
        if answers:  # a batch of notifications only gets no answer (JSON-RPC 2.0)
            self.protocol._send_data(answers)

    def _admit(self, message: dict) -> None:
        admit, self.admit = self.admit, None
        refusal = admit(message) if admit is not None else None
        if refusal is None:
            self._dispatch(message)
            return
        if "id" in message and "method" in message:
            self.send_error(_usable_id(message), *refusal)
        self.close()

    def _dispatch(self, message: dict) -> None:
        method, is_request = message.get("method"), "id" in message and "method" in message
        if method == "exit" and self.on_exit is not None:
            self.on_exit()
            return
        if is_request and getattr(self.protocol, "_shutdown", False):
            log.warning("%s after shutdown: answered with Invalid Request", method)
            self.send_error(_usable_id(message), INVALID_REQUEST,
                            f"Invalid Request: {method} after shutdown (only exit is accepted now)")
            return
        if method is not None and not self._in_lifecycle(method, is_request, message):
            return
        try:
            self.protocol.handle_message(self.protocol.structure_message(message))
        except ConnectionError:  # the client is gone (a broken pipe): the loop ends the session
            raise
        except Exception as exc:  # pygls could not decode or route it: say so to a waiting client
            log.exception("could not handle %s", method or "a response")
            if method == "initialize" and is_request:
                self.initialize_seen = False   # not initialized: the client may try again
            if is_request:
                self.send_error(_usable_id(message), INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")

    def _in_lifecycle(self, method: str, is_request: bool, message: dict) -> bool:
        """Whether ``method`` may run now (LSP's lifecycle); when not, it is answered (a request) or dropped."""
        if method == "initialize" and is_request:
            if self.initialize_seen:
                log.warning("a second initialize: answered with Invalid Request")
                self.send_error(_usable_id(message), INVALID_REQUEST,
                                "Invalid Request: initialize may only be sent once per session")
                return False
            self.initialize_seen = True
        elif not self.initialize_seen and method not in BEFORE_INITIALIZE:
            log.warning("%s before initialize: %s", method, "answered with ServerNotInitialized" if is_request
                        else "dropped")
            if is_request:
                self.send_error(_usable_id(message), SERVER_NOT_INITIALIZED,
                                f"Server not initialized: {method} before initialize")
            return False
        elif method == "initialized" and not is_request:
            if self.initialized_seen:
                log.warning("a second initialized notification: dropped")
                return False
            self.initialized_seen = True
        return True


def _error(rid: Any, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def _stdin_chunks(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue) -> None:
    """Read stdin on a daemon thread (it never holds the process open) and hand each chunk to the loop,
    waiting while the queue is full (a client writing faster than the server reads is held back)."""
    fd = sys.stdin.buffer.fileno()
    while True:
        try:
            data = os.read(fd, CHUNK)
        except OSError as exc:
            log.error("reading stdin failed: %s", exc)
            data = b""
        try:
            asyncio.run_coroutine_threadsafe(queue.put(data), loop).result()
        except RuntimeError:  # the loop is gone: the session has ended
            return
        if not data:
            return


def serve_stdio(server: JsonRPCServer, max_message: int = DEFAULT_MAX_MESSAGE) -> None:
    """Serve one session over stdin/stdout until the end of stdin (or ``exit``, which ends the process)."""
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))

    async def main() -> None:
        connection = Connection(server, max_message)
        queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=16)
        threading.Thread(target=_stdin_chunks, args=(asyncio.get_running_loop(), queue),
                         name="stdin", daemon=True).start()
        while not connection.closed and (data := await queue.get()):
            await connection.receive(data)
        log.info("end of input: the session ends")

    try:
        asyncio.run(main())
    except BrokenPipeError:
        log.error("the client closed our stdout: the session ends")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
