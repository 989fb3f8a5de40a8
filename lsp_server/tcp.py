"""``--tcp``: a listener on a loopback address only, where every connection is a session of its own (its own
server object, documents, settings and engine), admitted by its first message: the token when one is set
(``initializationOptions.token`` of ``initialize``), and a free place under ``--max-clients``.

Sessions share nothing: the engine keys jobs by document URI and reloads on any client's settings, so a
shared model would let one editor cancel or reconfigure another's work. Each admitted session loads its
own model when it sends ``initialized``; ``--max-clients`` bounds how many copies can be loaded.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pygls.server import JsonRPCServer

from .transport import CHUNK, DEFAULT_MAX_MESSAGE, Connection

log = logging.getLogger(__name__)
TOKEN_ENV = "DIFFUSION_LSP_TOKEN"
FIRST_MESSAGE_TIMEOUT = 60.0  # seconds a connection may stay open before its first message
UNAUTHORIZED = -32001  # JSON-RPC server error: this listener needs a token, and it was missing or wrong
TOO_MANY_CLIENTS = -32003  # JSON-RPC server error: --max-clients sessions are open


def check_loopback(host: str) -> None:
    """Refuse any address but the loopback interface: the server runs code-writing models for one user."""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(f"--host must be a loopback address (127.0.0.1, ::1 or localhost), not {host!r}; "
                         "reach a remote machine through an SSH tunnel")


def read_token(path: str | None, environ: dict | os._Environ = os.environ) -> bytes | None:
    """The token from ``--token-file`` (stripped, a UTF-8 byte order mark too; empty is an error), else from
    $DIFFUSION_LSP_TOKEN."""
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8-sig").strip()
        except UnicodeDecodeError:
            raise ValueError(f"the token file {path} is not text (UTF-8)") from None
        if not text:
            raise ValueError(f"the token file {path} is empty")
        if os.stat(path).st_mode & 0o077:
            log.warning("the token file %s can be read by other users (chmod 600 it)", path)
        return text.encode()
    text = environ.get(TOKEN_ENV, "").strip()
    return text.encode() if text else None


def _sent_token(message: dict) -> str | None:
    """The token in an ``initialize`` request's initializationOptions, removed from them (settings never see it)."""
    params = message.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    if message.get("method") != "initialize" or not isinstance(options, dict):
        return None
    token = options.pop("token", None)
    return token if isinstance(token, str) else None


@dataclass
class Gate:
    """Admission for every connection's first message: the token, then a free place."""

    token: bytes | None
    max_clients: int
    sessions: int = 0

    def admit(self, message: dict) -> tuple[int, str] | None:
        sent = _sent_token(message)
        # surrogatepass: a lone surrogate (valid JSON, "\ud800") is a wrong token, not an exception that closes
        # the connection unanswered
        if self.token is not None and (sent is None or not hmac.compare_digest(
                sent.encode("utf-8", "surrogatepass"), self.token)):
            return UNAUTHORIZED, ("diffusion-lsp: this TCP server needs its token as initializationOptions.token "
                                  "in the first message, initialize; it was missing or wrong")
        if self.sessions >= self.max_clients:
            return TOO_MANY_CLIENTS, (f"diffusion-lsp: {self.sessions} clients are connected, the limit "
                                      "(--max-clients); this connection is closed")
        self.sessions += 1
        return None


class _SocketWriter:
    """pygls' writer for one connection; what is written after the connection closed is dropped."""

    def __init__(self, writer: asyncio.StreamWriter):
        self._writer = writer

    def write(self, data: bytes) -> None:
        if not self._writer.is_closing():
            self._writer.write(data)

    def close(self) -> None:
        self._writer.close()  # what was written before is still sent


async def _session(new_session: Callable[[], JsonRPCServer], gate: Gate, max_message: int,
                   reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    peer = writer.get_extra_info("peername")
    server = new_session()
    server.protocol.set_writer(_SocketWriter(writer))
    admitted = False

    def admit(message: dict) -> tuple[int, str] | None:
        nonlocal admitted
        refusal = gate.admit(message)
        admitted = refusal is None
        if refusal is not None:
            log.warning("client %s refused: %s", peer, refusal[1])
        return refusal

    connection = Connection(server, max_message, admit=admit)
    connection.on_exit = connection.close
    log.info("client %s connected", peer)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + FIRST_MESSAGE_TIMEOUT   # for the whole first message, not for each read of it
    try:
        while not connection.closed:
            first = max(0.0, deadline - loop.time()) if connection.admit is not None else None
            data = await asyncio.wait_for(reader.read(CHUNK), first)
            if not data:
                break
            await connection.receive(data)
            await writer.drain()
    except TimeoutError:
        log.warning("client %s sent no whole first message in %.0f s: closed", peer, FIRST_MESSAGE_TIMEOUT)
    except ConnectionError as exc:
        log.info("client %s: %s", peer, exc)
    finally:
        gate.sessions -= admitted
        writer.close()
        server.shutdown()
        log.info("client %s disconnected: its session has ended", peer)


def serve_tcp(new_session: Callable[[], JsonRPCServer], host: str, port: int, *, token: bytes | None = None,
              max_clients: int = 4, max_message: int = DEFAULT_MAX_MESSAGE) -> None:
    """Listen on ``host:port`` (loopback only) until interrupted; each connection gets ``new_session()``."""
    check_loopback(host)
    gate = Gate(token, max_clients)

    async def main() -> None:
        try:
            listener = await asyncio.start_server(
                lambda r, w: _session(new_session, gate, max_message, r, w), host, port)
        except (OSError, OverflowError) as exc:   # the port is taken, or no port at all
            raise SystemExit(f"diffusion-lsp: cannot listen on {host}:{port}: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
        addresses = ", ".join("{}:{}".format(*sock.getsockname()[:2]) for sock in listener.sockets)
        log.info("listening on %s (%s, up to %d clients)", addresses,
                 "token required" if token else "no token", max_clients)
        async with listener:
            await listener.serve_forever()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
