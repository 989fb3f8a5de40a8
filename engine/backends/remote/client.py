"""``RemoteBackend``: the Backend protocol over HTTP(S) to a team server (``engine.team``), wire format ``wire.py``.

Only canvases travel: the local server keeps documents, tree-sitter, validation, drafts and actions. The engine's
capabilities, its tokenizer (token counts stay local) and its calibration come once, from ``GET /v1/info``, with
their digest: each request sends it and each answer is checked against it, so an engine restarted with another
model is ``EngineChanged`` (the ``Engine`` then reads ``/v1/info`` again), never fills cut for the old one. A fill
streams one event per step, so a cancelled job is noticed within a step, and within ``POLL`` while the engine sends
nothing (its queue is full): the connection is closed (the server stops the job when its client goes) and
``/v1/cancel`` names it too. A fill is a pure computation, so one that
failed without an answer (refused connection, a 502/503/504, a stream cut mid-way by a replica that died) is sent
again after a backoff, up to ``engine_retries`` times; then ``EngineUnreachable``. No document text is logged.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import select
import shutil
import socket
import ssl
import tempfile
import threading
import time
import uuid
from pathlib import Path
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from ...config import SERVING_FILE, LoadConfig
from ...model_text import model_text
from ...requests import Cancelled, EngineChanged, EngineError, EngineUnreachable, ModelLoadError, TextTooLong
from ..base import Control, FillPlan, FillResult
from .. import score_window
from ..credentials import read_token, tls_context
from . import wire

log = logging.getLogger(__name__)
TOKEN_ENV = "DIFFUSION_LSP_ENGINE_TOKEN"
_RETRY_STATUS = {502, 503, 504}
_CUT = (http.client.HTTPException, ConnectionError, TimeoutError, OSError)  # what a dead peer looks like
POLL = 0.05   # seconds between cancel checks while a fill waits on an engine that sends nothing (a full queue)


_INFO_TYPES: dict[str, type] = {"name": str, "default_steps": int, "max_positions": int, "searches_lengths": bool,
                                "takes_instruction": bool, "scores_text": bool, "scores_options": bool, "model": str,
                                "tokenizer": str, "calibration": dict, "decoding": dict, "digest": str}
_INFO_OPTIONAL = frozenset({"model", "tokenizer", "calibration", "decoding", "digest"})   # null: the server has none
_KIND_NAMES = {str: "a string", int: "an integer", bool: "true or false", dict: "an object"}


class _Retry(Exception):
    """Failed without an answer: the request may be sent again."""


class RemoteBackend:
    """A model on a team server, read through the same protocol as a local one."""

    def __init__(self, url: str, load: LoadConfig, token: str | None = None):
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:   # urllib: "Port could not be cast to integer value", "Invalid IPv6 URL"
            why = "the port must be a number 0..65535" if "port" in str(exc).lower() else str(exc)
            raise ModelLoadError(f"engine URL {url!r}: {why} (http://HOST[:PORT][/PATH] or https://...)") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ModelLoadError(f"engine URL {url!r} must be http://HOST[:PORT][/PATH] or https://...")
        self.url = url
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname, port or (443 if self._https else 80)
        self._base = parts.path.rstrip("/")
        self._timeout, self._retries = load.engine_timeout, load.engine_retries
        self._load, self._token = load, token
        self._ssl: ssl.SSLContext | None = None
        if self._https:
            self._ssl = tls_context(load)
        self._conn: http.client.HTTPConnection | None = None
        self._local = threading.local()
        self.counters = {"remote_fills": 0, "remote_retries": 0, "remote_failures": 0, "remote_cancels": 0}
        self._tokenizer: Any = None
        self.replica = ""  # the engine process serving the current (or last) fill
        self.model_dir: Path | None = None
        info = self._info()
        self.name = str(info["name"])
        self.default_steps, self.max_positions = int(info["default_steps"]), int(info["max_positions"])
        self.searches_lengths, self.takes_instruction = bool(info["searches_lengths"]), bool(info["takes_instruction"])
        self.scores_text = bool(info["scores_text"])
        self.scores_options = bool(info.get("scores_options", False))  # a server from before options: not scored
        self.adapts = False  # the weights are on the team server (workspace adaptation is local)
        self.remote_model = str(info.get("model") or "")
        self.digest: str | None = info.get("digest")   # what it serves; None: a server from before digests
        if info.get("tokenizer"):
            from tokenizers import Tokenizer
            try:
                self._tokenizer = Tokenizer.from_str(info["tokenizer"])
            except Exception as exc:  # noqa: BLE001 (tokenizers raises a bare Exception for a text it cannot read)
                raise ModelLoadError(f"the engine at {self.url} sent a tokenizer this client cannot read: "
                                     f"{str(exc)[:200]}") from None
        if info.get("calibration") or info.get("decoding"):  # beside "the checkpoint": a private folder of our own
            folder = self.model_dir = Path(tempfile.mkdtemp(prefix="diffusion-lsp-engine-"))
            if info.get("calibration"):
                (folder / "confidence.json").write_text(json.dumps(info["calibration"]), encoding="utf-8")
            if info.get("decoding"):   # the served model's decoding per language, and nothing else of serving.json
                (folder / SERVING_FILE).write_text(json.dumps({"decoding": info["decoding"]}), encoding="utf-8")

    @classmethod
    def connect(cls, url: str, load: LoadConfig) -> RemoteBackend:
        return cls(url, load, read_token(load, TOKEN_ENV))

    # -- transport --------------------------------------------------------------------------
    def _new_connection(self) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self._timeout, context=self._ssl)
        return http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)

    def _connection(self) -> http.client.HTTPConnection:
        sock = getattr(self._conn, "sock", None)
        if sock is not None and select.select([sock], [], [], 0)[0]:
            # an idle kept-alive connection that is readable was closed by the engine (it restarted, or dropped idle
            # connections): a request sent on it would fail as if the engine were down, so a new one is opened
            self._drop()
        if self._conn is None:  # one kept-alive connection: the engine thread sends one request at a time
            self._conn = self._new_connection()
        return self._conn

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json, application/x-ndjson"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        return headers

    def _send(self, method: str, path: str, body: Any = None, fresh: bool = False) -> http.client.HTTPResponse:
        """The response (status 200), or _Retry / EngineError. A refused token is read again from
        ``engineTokenFile`` (rotated on disk while the session runs) and the request sent once more with it."""
        data = None if body is None else json.dumps(body).encode()
        try:
            conn = self._connection()
            conn.request(method, self._base + path, body=data, headers=self._headers())
            response = conn.getresponse()
        except ssl.SSLCertVerificationError as exc:
            self._drop()
            raise EngineError(f"the engine at {self.url} has a certificate this client does not trust: "
                              f"{exc.verify_message or exc} (set engineCaFile)") from None
        except _CUT as exc:
            self._drop()
            raise _Retry(f"{type(exc).__name__}: {exc}") from None
        if response.status == 200:
            return response
        detail = response.read(2000).decode("utf-8", "replace").strip()
        if response.status == 409:   # the engine serves another model than the /v1/info this client read
            self._drop()
            raise self._changed(str(self._json_field(detail, "model") or ""))
        with contextlib.suppress(ValueError, AttributeError):   # a team server's {"error": why}: its words only
            detail = str(json.loads(detail).get("error") or detail)
        self._drop()
        if response.status == 422:   # a scored text over the model's positions: as a local backend says it
            raise TextTooLong(f"the engine at {self.url}: {detail[:300]}")
        if response.status in _RETRY_STATUS or response.status == 500 and "replica" in detail.lower():
            raise _Retry(f"HTTP {response.status}")
        if response.status == 401:
            if not fresh and self._token_changed():
                return self._send(method, path, body, fresh=True)
            raise EngineError(f"the engine at {self.url} refused the token (set engineTokenFile)")
        raise EngineError(f"the engine at {self.url} answered HTTP {response.status}: {detail[:300]}")

    @staticmethod
    def _json_field(text: str, key: str) -> Any:
        with contextlib.suppress(ValueError, AttributeError):
            return json.loads(text).get(key)
        return None

    def _changed(self, model: str = "") -> EngineChanged:
        """The engine now serves another model (``model``, when it said) than the ``/v1/info`` read at connect."""
        log.warning("engine %s: it now serves %s (digest %s when connected): /v1/info is read again", self.url,
                    model or "another model", self.digest)
        return EngineChanged(f"the engine at {self.url} now serves {model or 'another model'}, not the model it "
                             f"served when this editor connected ({self.remote_model or self.name})", model)

    def _check(self, answer: Any) -> None:
        """An answer (or a stream's first event) stating another digest than the one connected to: EngineChanged.
        One that states none comes from a server from before digests, and is not checked."""
        digest = answer.get("digest") if isinstance(answer, dict) else None
        if digest is not None and digest != self.digest:
            raise self._changed()

    def _body(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` with the digest this client connected to (the engine refuses it with 409 if it serves another)."""
        return body if self.digest is None else {**body, "digest": self.digest}

    def _token_changed(self) -> bool:
        """Whether ``engineTokenFile`` now holds another token than the one sent (then it is used from now on)."""
        if not self._load.engine_token_file:
            return False
        try:
            token = read_token(self._load, TOKEN_ENV)
        except ModelLoadError as exc:   # being rewritten, or gone: the refusal stands
            log.info("engineTokenFile not read again: %s", exc)
            return False
        if token == self._token:
            return False
        log.info("engine %s: engineTokenFile holds a new token; sending it", self.url)
        self._token = token
        return True

    def _call(self, method: str, path: str, body: Any = None, check: Any = None) -> Any:
        """A JSON request/answer with retries (these calls have no side effects)."""
        last = ""
        for attempt in range(self._retries + 1):
            if attempt:
                self._backoff(attempt, check)
            try:
                response = self._send(method, path, body)
                raw = response.read()
            except _Retry as exc:
                last = str(exc)
                continue
            except _CUT as exc:
                self._drop()
                last = f"{type(exc).__name__}: {exc}"
                continue
            try:
                return json.loads(raw)
            except ValueError:   # a whole answer that is not JSON: another kind of server, not a cut connection
                self._drop()
                raise EngineError(f"the engine at {self.url} answered {path} with something other than JSON "
                                  f"({raw[:60]!r}; is it a diffusion-lsp team server?)") from None
        self.counters["remote_failures"] += 1
        raise EngineUnreachable(f"the engine at {self.url} is unreachable ({last})")

    def _backoff(self, attempt: int, check: Any) -> None:
        self.counters["remote_retries"] += 1
        delay = min(4.0, 0.25 * 2 ** (attempt - 1))
        log.info("engine %s: retry %d in %.2f s", self.url, attempt, delay)
        end = time.monotonic() + delay
        while (left := end - time.monotonic()) > 0:
            if check is not None:
                check(0)
            time.sleep(min(left, 0.05))

    def _info(self) -> dict[str, Any]:
        try:
            info = self._call("GET", "/v1/info")
        except EngineUnreachable:   # down for now (restarting, not yet started): the engine tries again
            raise
        except EngineError as exc:
            raise ModelLoadError(str(exc)) from None
        version = info.get("version") if isinstance(info, dict) else None
        if version != wire.VERSION:
            raise ModelLoadError(f"the engine at {self.url} speaks wire version {version!r}, this client "
                                 f"{wire.VERSION} (is it a diffusion-lsp team server?)")
        missing = [k for k in wire.CAPABILITIES if k not in info]
        if missing:
            raise ModelLoadError(f"the engine at {self.url} did not say its {', '.join(missing)}")
        for key, kind in _INFO_TYPES.items():   # bool("false") is True, int("8.0") a bare ValueError: checked here
            value = info.get(key)
            if key in info and not (isinstance(value, kind) and (kind is not int or not isinstance(value, bool))
                                    or value is None and key in _INFO_OPTIONAL):
                raise ModelLoadError(f"the engine at {self.url} sent {key} {value!r} in /v1/info, which must be "
                                     f"{_KIND_NAMES[kind]} (is it a diffusion-lsp team server of this version?)")
        for key in ("default_steps", "max_positions"):
            if info[key] < 1:
                raise ModelLoadError(f"the engine at {self.url} sent {key} {info[key]!r} in /v1/info, which must be "
                                     f"at least 1")
        return info

    # -- the Backend protocol ---------------------------------------------------------------
    def load_weights(self, path: Path | None) -> None:
        raise NotImplementedError("a remote engine's weights are not replaced from here (adapts is False)")

    def _encode(self, text: str) -> list[int]:
        return self._tokenizer.encode(model_text(text), add_special_tokens=False).ids   # as the engine reads it

    def count_tokens(self, text: str) -> int:
        if self._tokenizer is not None:
            return len(self._tokenizer.encode(text, add_special_tokens=False).ids)
        answer = self._call("POST", "/v1/tokenize", self._body({"text": text}))
        self._check(answer)
        return int(self._number("/v1/tokenize", answer, "count", int))

    def score_text(self, prefix: str, middle: str, suffix: str) -> float:
        """The engine's score of ``middle``; only the context its scorer reads travels (``score_window``: the end of
        ``prefix`` and the start of ``suffix`` holding ``SCORE_PREFIX`` / ``SCORE_SUFFIX`` tokens, cut where no token
        crosses, so the score is the one of the whole text), not the whole document the callers pass."""
        if self._tokenizer is not None:
            prefix = score_window.tail(prefix, score_window.SCORE_PREFIX, self._encode)[0]
            suffix = score_window.head(suffix, score_window.SCORE_SUFFIX, self._encode)[0]
        answer = self._call("POST", "/v1/score", self._body({"version": wire.VERSION, "prefix": prefix,
                                                             "middle": middle, "suffix": suffix}))
        self._check(answer)
        return float(self._number("/v1/score", answer, "score", (int, float)))

    def _number(self, path: str, answer: Any, key: str, kind: type | tuple[type, ...]) -> Any:
        """``answer[key]`` when it is a number of ``kind``; else an EngineError naming the call, not a KeyError."""
        value = answer.get(key) if isinstance(answer, dict) else None
        if not isinstance(value, kind) or isinstance(value, bool):
            raise EngineError(f"the engine at {self.url} answered {path} without a number {key!r} ({str(answer)[:80]})")
        return value

    def fill(self, plan: FillPlan, control: Control) -> FillResult:
        job = uuid.uuid4().hex
        body = self._body({"version": wire.VERSION, "id": job, "plan": wire.plan_json(plan),
                           "drafts": control.draft is not None})
        self.counters["remote_fills"] += 1
        shown = 0  # the last step whose draft went out: a retried fill's drafts resume after it
        last = ""
        for attempt in range(self._retries + 1):
            if attempt:
                self._backoff(attempt, control.check)
            control.check(shown)
            try:
                with self._watching(control, shown):
                    return self._stream(job, body, control, shown)
            except _Retry as exc:
                last = str(exc)
                shown = max(shown, getattr(exc, "shown", 0))
                try:   # a cut the watcher made: the fill was cancelled, not failed
                    control.check(shown)
                except Cancelled:
                    self._cancelled(job)
                    raise
        self.counters["remote_failures"] += 1
        raise EngineUnreachable(f"the engine at {self.url} is unreachable ({last})")

    @contextlib.contextmanager
    def _watching(self, control: Control, step: int) -> Iterator[None]:
        """While a fill waits for the engine, check its cancellation every ``POLL`` s on a thread of its own: an
        engine that sends no step (its queue is full, it hangs) would otherwise hold a cancelled fill, and every
        request queued behind it, for up to ``engine_timeout`` per attempt. A cancel shuts the socket down, which
        ends the wait at once (the engine sees its client go and stops the job)."""
        done, lock = threading.Event(), threading.Lock()

        def watch() -> None:
            while not done.wait(POLL):
                try:
                    control.check(step)
                except Cancelled:
                    with lock:
                        sock = getattr(self._conn, "sock", None)
                        if not done.is_set() and sock is not None:
                            try:
                                sock.shutdown(socket.SHUT_RDWR)
                            except OSError:
                                pass

        threading.Thread(target=watch, name="remote-fill-cancel", daemon=True).start()
        try:
            yield
        finally:
            with lock:
                done.set()

    def _cancelled(self, job: str) -> None:
        """A fill cancelled while it ran: counted, and the engine told by name too (the connection is gone)."""
        self.counters["remote_cancels"] += 1
        threading.Thread(target=self._cancel, args=(job,), daemon=True).start()

    def _stream(self, job: str, body: dict, control: Control, shown: int) -> FillResult:
        response = self._send("POST", "/v1/fill", body)
        step = 0
        try:
            while True:
                try:
                    line = response.readline()
                except _CUT as exc:
                    raise self._cut(f"{type(exc).__name__}: {exc}", shown) from None
                if not line:
                    raise self._cut("the stream ended without a result", shown)
                try:
                    event = json.loads(line)
                    kind = event.get("event")
                    if kind == "step":
                        step = int(event["step"])
                        texts = tuple(str(t) for t in event["texts"]) if "texts" in event else None
                        confidences = tuple(tuple(float(x) for x in c) for c in event.get("confidences", ()))
                        pieces = tuple(tuple(str(x) for x in p) for p in event.get("pieces", ()))
                    elif kind == "result":
                        result = wire.result_from_json(event["result"])
                except (ValueError, KeyError, TypeError, AttributeError):   # WireError is a ValueError
                    raise EngineError(f"the engine at {self.url} sent a malformed event") from None
                if kind == "step":
                    control.check(step)
                    if control.draft is not None and texts is not None and step > shown:
                        shown = step
                        control.draft(step, texts, confidences, pieces)
                elif kind == "start":
                    self.replica = str(event.get("replica", ""))
                    self._check(event)   # a client connected to a server from before digests sent none to refuse
                elif kind == "result":
                    if response.readline():  # the stream ends after its result; anything else is a broken peer
                        self._drop()
                    return result
                elif kind == "error":
                    if event.get("kind") == "unavailable":
                        raise self._cut(str(event.get("message", "")), shown)
                    raise EngineError(f"the engine at {self.url}: {event.get('message', 'failed')}")
        except BaseException as exc:
            if not isinstance(exc, _Retry):
                self._drop()  # the server stops the job when its client goes
                if isinstance(exc, Cancelled):
                    self._cancelled(job)
            raise

    def _cut(self, why: str, shown: int) -> _Retry:
        self._drop()
        exc = _Retry(why)
        exc.shown = shown  # type: ignore[attr-defined]
        return exc

    def _cancel(self, job: str) -> None:
        """Tell the engine by name too (best effort, on a connection of its own)."""
        conn = self._new_connection()
        try:
            conn.request("POST", self._base + "/v1/cancel", body=json.dumps({"id": job}).encode(),
                         headers=self._headers())
            conn.getresponse().read()
        except _CUT as exc:
            log.debug("cancel of %s not delivered: %s", job, exc)
        finally:
            conn.close()

    def stats(self) -> dict[str, object]:
        return {"engine": self.url, "remote_model": self.remote_model, "remote_digest": self.digest, **self.counters}

    def close(self) -> None:
        self._drop()
        if self.model_dir is not None:
            shutil.rmtree(self.model_dir, ignore_errors=True)
