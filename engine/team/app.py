"""The team server's HTTP protocol (wire format: ``engine/backends/remote/wire.py``), as one Starlette handler
shared by the plain server (``serve_plain``, uvicorn) and the Ray Serve deployment (``ray_app``). Every request
but ``/-/healthz`` needs the bearer token when the server has one; a server without a token binds to loopback
only (``check_bind``). Logs carry job ids, sizes and timings, never document text."""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import socket
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from ..backends.remote import wire
from ..requests import TextTooLong
from .service import REPLICA, Collector, Denoiser, Job

log = logging.getLogger(__name__)
Submit = Callable[[Job], Awaitable[Any]]
_RUNNING: set[asyncio.Future] = set()  # the event loop keeps only weak references to tasks


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """An engine without a token must not be reachable from other machines."""
    if not token and not is_loopback(host):
        raise ValueError(f"refusing to listen on {host} without a token: an unauthenticated engine binds to "
                         f"loopback only (give --token-file, or --host 127.0.0.1)")


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class BodyTooLarge(wire.WireError):
    """A body over ``wire.MAX_BODY`` bytes (HTTP 413): not read further."""


async def _read(request: Request) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > wire.MAX_BODY:
        raise BodyTooLarge(f"a body of {int(declared):,} bytes is over the {wire.MAX_BODY:,} a request may have")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > wire.MAX_BODY:
            raise BodyTooLarge(f"a body over the {wire.MAX_BODY:,} bytes a request may have")
        chunks.append(chunk)
    return b"".join(chunks)


async def _body(request: Request) -> dict[str, Any]:
    raw = await _read(request)
    try:
        data = json.loads(raw)
    except ValueError:
        raise wire.WireError("the body is not JSON") from None
    except RecursionError:   # ``[`` 100,000 times: Python's decoder recurses per level (was HTTP 500 and a traceback)
        raise wire.WireError("the body is not JSON this server reads: it is nested too deeply") from None
    if not isinstance(data, dict):
        raise wire.WireError("the body must be a JSON object")
    if "version" in data and data["version"] != wire.VERSION:
        raise wire.WireError(f"wire version {data['version']!r} is not {wire.VERSION}")
    return data


async def handle(request: Request, denoiser: Denoiser, token: str | None, submit: Submit) -> Response:
    """Answer one request of the team-server protocol."""
    path = request.url.path.rstrip("/")
    if path.endswith("/-/healthz"):
        return PlainTextResponse("ok")
    if token:
        sent = request.headers.get("authorization", "")
        if not hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
            return _error(401, "a valid bearer token is required")
    route = (request.method, path.rpartition("/v1/")[2] if "/v1/" in path else "")
    try:
        if route == ("GET", "info"):
            return JSONResponse(denoiser.info())
        if route == ("GET", "stats"):
            return JSONResponse(denoiser.stats())
        if request.method != "POST" or route[1] not in ("fill", "score", "tokenize", "cancel"):
            return _error(404, f"no such endpoint: {request.method} {path}")
        data = await _body(request)
        digest = denoiser.info()["digest"]
        if "digest" in data and data["digest"] != digest:   # the client's tokenizer, positions... are another model's
            return JSONResponse({"error": f"this team server now serves {denoiser.model or 'another model'} "
                                          f"(digest {digest}), not what the client read from /v1/info (digest "
                                          f"{data['digest']!r}): read /v1/info again",
                                 "digest": digest, "model": denoiser.model}, status_code=409)
        if route[1] == "fill":
            if denoiser.closing:   # the client sends it again (to another replica, or here once it is back)
                return _error(503, "the team server is shutting down")
            if data.get("version") != wire.VERSION:
                raise wire.WireError(f"a fill must say version {wire.VERSION}")
            plan = wire.plan_from_json(data.get("plan"))
            await asyncio.to_thread(denoiser.check_plan, plan)   # refused here (400), not after the stream began
            return _stream(Job(str(data.get("id") or ""), plan, bool(data.get("drafts")), asyncio.get_running_loop()),
                           submit, digest)
        if route[1] == "cancel":
            return JSONResponse({"cancelled": denoiser.cancel(str(data.get("id", "")))})
        if route[1] == "tokenize":
            text = data.get("text")
            if not isinstance(text, str):
                raise wire.WireError("text must be a string")
            return JSONResponse({"count": await asyncio.to_thread(denoiser.count_tokens, text), "digest": digest})
        prefix, middle, suffix = (data.get(k) for k in ("prefix", "middle", "suffix"))
        if not (isinstance(prefix, str) and isinstance(middle, str) and isinstance(suffix, str)):
            raise wire.WireError("prefix, middle and suffix must be strings")
        return JSONResponse({"score": await asyncio.to_thread(denoiser.score, prefix, middle, suffix),
                             "digest": digest})
    except BodyTooLarge as exc:
        return _error(413, str(exc))
    except wire.WireError as exc:
        return _error(400, str(exc))
    except TextTooLong as exc:   # a scored text over the model's positions: the client's TextTooLong, not a 500
        return _error(422, str(exc))


def _stream(job: Job, submit: Submit, digest: str) -> StreamingResponse:
    async def run() -> None:
        try:
            await submit(job)
        except Exception as exc:  # noqa: BLE001 (the client gets an error event, the server goes on)
            if not job.done:
                log.warning("fill %s not run: %s: %s", job.id, type(exc).__name__, exc)
                job.finish({"event": "error", "kind": "unavailable", "message": f"{type(exc).__name__}"})

    async def events():
        task = asyncio.ensure_future(run())
        _RUNNING.add(task)
        task.add_done_callback(_RUNNING.discard)
        try:
            yield json.dumps({"event": "start", "replica": REPLICA, "digest": digest}) + "\n"
            while True:
                event = await job.events.get()
                yield json.dumps(event) + "\n"
                if event["event"] in ("result", "error"):
                    break
        finally:  # done, or the client went away: a running job stops at its next step
            if not job.done:
                log.info("fill %s: client gone, cancelled", job.id)
            job.cancelled.set()

    return StreamingResponse(events(), media_type="application/x-ndjson")


def make_app(denoiser: Denoiser, token: str | None = None, submit: Submit | None = None) -> Starlette:
    """The protocol as an ASGI app; ``submit`` runs a job (default: a ``Collector`` of its own)."""
    if submit is None:
        submit = Collector(denoiser).submit

    async def endpoint(request: Request) -> Response:
        return await handle(request, denoiser, token, submit)

    methods = ["GET", "POST"]
    return Starlette(routes=[Route("/{path:path}", endpoint, methods=methods)])


class PlainServer:
    """The protocol under uvicorn in a thread of this process (tests, one-machine use): ``url`` once started."""

    def __init__(self, app: Starlette, host: str = "127.0.0.1", port: int = 0, token: str | None = None,
                 certfile: str | None = None, keyfile: str | None = None, sock: socket.socket | None = None):
        """``sock``: a socket already bound to ``host`` to listen on instead of binding ``port`` (closed by
        ``stop``); tests keep a port this way across a server that stops and one that starts on it."""
        import uvicorn

        check_bind(host, token)
        if sock is None:
            sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
        self.sock = sock
        self.port = self.sock.getsockname()[1]
        scheme = "https" if certfile else "http"
        self.url = f"{scheme}://{host if ':' not in host else f'[{host}]'}:{self.port}"
        config = uvicorn.Config(app, log_level="warning", access_log=False, ssl_certfile=certfile,
                                ssl_keyfile=keyfile, timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def start(self) -> PlainServer:
        self.thread.start()
        while not self.server.started and self.thread.is_alive():
            threading.Event().wait(0.01)
        if not self.server.started:
            raise RuntimeError("the team server did not start")
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
