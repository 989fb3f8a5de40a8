"""A small HTTP client for a vLLM server: JSON in and out, a bearer token, timeouts, and calls that can be
aborted from another thread by closing their socket (vLLM then aborts the request: its ``with_cancellation``
handler wrapper cancels the handler on ``http.disconnect`` and ``AsyncLLM.generate`` aborts the engine request).

Standard library only (``http.client``): no dependency, and the socket is ours to close.
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, parse_qs

log = logging.getLogger(__name__)
SCHEMES = {"vllm+http": "http", "vllm+https": "https"}
DEFAULT_TIMEOUT = 120.0   # seconds for one request (a fill of a large canvas on a busy server included)
CONNECT_TIMEOUT = 10.0


class HttpError(Exception):
    """The server answered with a status other than 200 (``status``, ``message`` from its JSON error)."""

    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class Unreachable(Exception):
    """No answer: the connection failed, broke, or timed out (``timed_out``)."""

    def __init__(self, reason: str, timed_out: bool = False):
        super().__init__(reason)
        self.timed_out = timed_out


class Aborted(Exception):
    """The call was aborted by ``Call.abort`` (the job was cancelled)."""


@dataclass(frozen=True)
class Endpoint:
    """Where the server is, parsed from ``vllm+http://host:port[/model-name][?timeout=S&canvas=N]``."""

    scheme: str                 # http | https
    host: str
    port: int
    model: str | None           # the served model name (``--served-model-name``); None: the only one served
    timeout: float = DEFAULT_TIMEOUT
    canvas: int | None = None   # the served canvas, when ``--diffusion-config`` changed it from config.json's

    @property
    def base(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    @classmethod
    def parse(cls, url: str) -> Endpoint:
        try:
            parts = urlsplit(url)
        except ValueError as exc:   # urllib: "Invalid IPv6 URL", without the URL
            raise ValueError(f"{exc} in {url!r}") from None
        scheme = SCHEMES.get(parts.scheme)
        if scheme is None:
            raise ValueError(f"not a vLLM URL: {url!r} (vllm+http://host:port[/model] or vllm+https://...)")
        if not parts.hostname:
            raise ValueError(f"no host in {url!r}")
        if parts.username or parts.password:
            raise ValueError("put the bearer token in the token setting, not in the URL")
        try:
            port = parts.port or (443 if scheme == "https" else 80)
        except ValueError:
            raise ValueError(f"bad port in {url!r}") from None
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        unknown = set(query) - {"timeout", "canvas"}
        if unknown:
            raise ValueError(f"unknown URL parameter(s) {sorted(unknown)} (timeout, canvas)")
        try:
            timeout = float(query.get("timeout", DEFAULT_TIMEOUT))
            canvas = int(query["canvas"]) if "canvas" in query else None
        except ValueError:
            raise ValueError(f"timeout must be seconds and canvas a token count in {url!r}") from None
        if timeout <= 0 or (canvas is not None and canvas <= 0):
            raise ValueError(f"timeout and canvas must be positive in {url!r}")
        model = unquote(parts.path.strip("/")) or None
        return cls(scheme, parts.hostname, port, model, timeout, canvas)


class Call:
    """One request; ``abort()`` from any thread closes its socket and makes ``run`` raise ``Aborted``."""

    def __init__(self, client: Client, method: str, path: str, body: dict | None):
        self.client, self.method, self.path, self.body = client, method, path, body
        self._lock = threading.Lock()
        self._conn: http.client.HTTPConnection | None = None
        self._aborted = False
        self.token: str | None = None   # the token the last run sent

    def abort(self) -> None:
        with self._lock:
            self._aborted = True
            conn = self._conn
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)  # wakes the reading thread; the server sees the disconnect
            except OSError:
                pass
            conn.close()

    def run(self) -> dict:
        client = self.client
        conn = client.connection()
        with self._lock:
            if self._aborted:
                raise Aborted()
            self._conn = conn
        data = json.dumps(self.body).encode() if self.body is not None else None
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        self.token = client.token
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            conn.request(self.method, self.path, body=data, headers=headers)
            conn.sock.settimeout(client.timeout)  # connect used CONNECT_TIMEOUT; the answer may take longer
            response = conn.getresponse()
            raw = response.read()
        except TimeoutError:
            raise Unreachable(f"no answer within {client.timeout:g} s", timed_out=True) from None
        except (OSError, http.client.HTTPException) as exc:
            if self._aborted:
                raise Aborted() from None
            raise Unreachable(describe(exc)) from None
        finally:
            conn.close()
        if self._aborted:
            raise Aborted()
        try:
            payload = json.loads(raw) if raw else {}
        except ValueError:
            payload = {"error": raw[:200].decode("utf-8", "replace")}
        if response.status != 200:
            raise HttpError(response.status, error_message(payload))
        if not isinstance(payload, dict):
            raise HttpError(response.status, "the answer is not a JSON object")
        return payload


class Client:
    """``reread_token``: where the token can be read again (``engineTokenFile``) when the server refuses it, so a
    token rotated there is sent without a reload; None: the token given is the only one."""

    def __init__(self, endpoint: Endpoint, token: str | None = None, ssl_context: ssl.SSLContext | None = None,
                 reread_token: Callable[[], str | None] | None = None):
        self.endpoint = endpoint
        self.token = token
        self.timeout = endpoint.timeout
        self.ssl_context = None
        if endpoint.scheme == "https":
            self.ssl_context = ssl_context or ssl.create_default_context()
        self.reread_token = reread_token
        self._token_lock = threading.Lock()

    def token_refused(self, sent: str | None) -> bool:
        """The server refused ``sent`` (HTTP 401): whether there is now another token to send (one a concurrent call
        read already, or the one ``reread_token`` reads now)."""
        with self._token_lock:
            if self.token != sent:
                return True
            if self.reread_token is None:
                return False
            try:
                token = self.reread_token()
            except Exception as exc:  # noqa: BLE001 (being rewritten, or gone: the refusal stands)
                log.info("the vLLM token was not read again: %s", exc)
                return False
            if not token or token == sent:
                return False
            log.info("vLLM at %s: the token file holds a new token; sending it", self.endpoint.base)
            self.token = token
            return True

    def connection(self) -> http.client.HTTPConnection:
        e = self.endpoint
        if self.ssl_context is not None:
            return http.client.HTTPSConnection(e.host, e.port, timeout=CONNECT_TIMEOUT, context=self.ssl_context)
        return http.client.HTTPConnection(e.host, e.port, timeout=CONNECT_TIMEOUT)

    def call(self, method: str, path: str, body: dict | None = None) -> Call:
        return Call(self, method, path, body)

    def get(self, path: str) -> dict:
        return self.call("GET", path).run()

    def post(self, path: str, body: dict) -> dict:
        return self.call("POST", path, body).run()


def error_message(payload: object) -> str:
    """vLLM's ``ErrorResponse`` (``{"error": {"message": ...}}``), its auth middleware's ``{"error": "Unauthorized"}``,
    or FastAPI's ``{"detail": ...}``."""
    if isinstance(payload, dict):
        err = payload.get("error", payload.get("detail"))
        if isinstance(err, dict):
            return str(err.get("message", err))
        if err is not None:
            return str(err)
    return str(payload)[:200]


def describe(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror})"
    if isinstance(exc, ssl.SSLError):
        return f"TLS error ({exc.reason or exc})"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
