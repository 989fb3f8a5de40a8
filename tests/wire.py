"""A raw LSP wire for hostile tests: any bytes to a real server (its stdin, or a TCP connection), and every
framed message it sends back (objects and batch arrays alike) kept in arrival order."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

SERVER = [sys.executable, "-m", "lsp_server", "-v"]


def frame(message: Any) -> bytes:
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def request(rid: Any, method: str, params: Any = None) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def notification(method: str, params: Any = None) -> dict:
    return {"jsonrpc": "2.0", "method": method, "params": params}


INITIALIZE = {"processId": None, "rootUri": None, "capabilities": {}, "initializationOptions": {"threads": 1}}


class Wire:
    """Writes with ``write``/``send``; a reader thread parses the server's frames into ``messages``."""

    def __init__(self, write: Callable[[bytes], None], read: Callable[[int], bytes],
                 close: Callable[[], None] = lambda: None):
        self.write, self._read, self.close = write, read, close
        self.messages: list[Any] = []
        self.closed = False
        self._changed = threading.Condition()
        threading.Thread(target=self._reader, daemon=True).start()

    def send(self, message: Any) -> None:
        self.write(frame(message))

    def _reader(self) -> None:
        buf = b""
        while True:
            end = buf.find(b"\r\n\r\n")
            if end >= 0:
                length = int(next(line.split(b":")[1] for line in buf[:end].split(b"\r\n")
                                  if line.lower().startswith(b"content-length:")))
                if len(buf) >= end + 4 + length:
                    with self._changed:
                        self.messages.append(json.loads(buf[end + 4:end + 4 + length]))
                        self._changed.notify_all()
                    buf = buf[end + 4 + length:]
                    continue
            try:
                data = self._read(65536)
            except OSError:
                data = b""
            if not data:
                with self._changed:
                    self.closed = True
                    self._changed.notify_all()
                return
            buf += data

    def wait_for(self, predicate: Callable[[Any], bool], timeout: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = next((m for m in self.messages if predicate(m)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    raise AssertionError(f"no such message; got {self.messages!r:.2000}")
                self._changed.wait(left)

    def answer(self, rid: Any, timeout: float = 30.0) -> dict:
        return self.wait_for(lambda m: isinstance(m, dict) and m.get("id") == rid and "method" not in m, timeout)

    def index(self, message: Any) -> int:
        return next(i for i, m in enumerate(self.messages) if m is message)

    def wait_closed(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not self.closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("the connection stayed open")
                self._changed.wait(left)


class StdioServer:
    """A real ``diffusion-lsp`` over pipes, its log in ``log``."""

    def __init__(self, log: Path, *args: str):
        self.log = log
        self.proc = subprocess.Popen(SERVER + list(args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=log.open("wb"))
        self.wire = Wire(self._write, self.proc.stdout.read1)

    def _write(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


class TcpServer:
    """A real ``diffusion-lsp --tcp --port 0``; ``connect`` opens a new client connection to it."""

    def __init__(self, log: Path, *args: str):
        self.log = log
        self.proc = subprocess.Popen(SERVER + ["--tcp", "--port", "0", "--log-file", str(log), *args],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.port = self._port()

    def _port(self) -> int:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            text = self.log.read_text() if self.log.exists() else ""
            for line in text.splitlines():
                if "listening on 127.0.0.1:" in line:
                    return int(line.split("listening on 127.0.0.1:")[1].split()[0].rstrip(","))
            if self.proc.poll() is not None:
                raise AssertionError(f"the server exited: {self.proc.stderr.read().decode()}")
            time.sleep(0.05)
        raise AssertionError("the server never listened")

    def wait_log(self, text: str, count: int = 1, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self.log.read_text().count(text) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} not logged {count} times")
            time.sleep(0.05)

    def connect(self) -> Wire:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        sock.settimeout(None)
        def close() -> None:
            sock.shutdown(socket.SHUT_RDWR)  # a close() alone leaves the reader thread's recv holding it open
            sock.close()
        return Wire(sock.sendall, sock.recv, close)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
