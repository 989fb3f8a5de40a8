"""The storm's operations and checks: a client-side copy of each document, requests in flight, and what counts as stale."""

from __future__ import annotations

import inspect
import json
import os
import signal
import time
from concurrent.futures import Future, TimeoutError as FutureTimeout
from pathlib import Path

from benchmarks.lsp_client import LspClient, position_at

CAPABILITIES = {
    "general": {"positionEncodings": ["utf-16"]},
    "textDocument": {
        "inlineCompletion": {"dynamicRegistration": False},
        "synchronization": {"dynamicRegistration": False},
        "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "refactor"]}},
                       "dataSupport": True, "resolveSupport": {"properties": ["edit"]}},
    },
    "workspace": {"workspaceEdit": {"documentChanges": True}, "applyEdit": True},
    "window": {"workDoneProgress": False},
}
SNIPPETS = ["é", "日本語", "🙂", "\r\n", "x = 'ü'\r\n", "    # 🚀 done\n", "def f(α):\n    return α\n",
            "(", "    if x:\n", "\r\n\r\n", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢"]
CONTENT_MODIFIED = -32801


def corpus() -> list[str]:
    """Real code to edit: a few standard-library modules (the same for one Python version)."""
    import bisect, colorsys, heapq, shlex, textwrap  # noqa: E401
    return [inspect.getsource(m) for m in (textwrap, shlex, heapq, bisect, colorsys)]


def _range(text: str, lo: int, hi: int) -> dict:
    return {"start": position_at(text, lo), "end": position_at(text, hi)}


def _inside(text: str, rng: dict) -> bool:
    """Does ``rng`` (UTF-16 positions) exist in ``text``, start before end?"""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    def ok(p):
        return 0 <= p["line"] < len(lines) and 0 <= p["character"] <= len(lines[p["line"]].encode("utf-16-le")) // 2
    s, e = rng["start"], rng["end"]
    return ok(s) and ok(e) and (s["line"], s["character"]) <= (e["line"], e["character"])


def items_problem(result, text: str) -> tuple[int, str]:
    """An inline/completion answer: (items with a range, what is stale about it or "")."""
    items = result.get("items", []) if isinstance(result, dict) else (result or [])
    edits = 0
    for item in items:
        rng = item.get("range") or (item.get("textEdit") or {}).get("range")
        if rng is not None:
            edits += 1
            if not _inside(text, rng):
                return edits, f"range {rng} is not in the text the request was made for"
    return edits, ""


def resolve_problem(result, uri: str, version: int, current: bool, text: str) -> tuple[int, str]:
    """A resolved code action offered for ``version`` (``current``: still the client's version when the
    resolve was sent; ``text``: the client's text then): (1 when it carries an edit, what is stale or "")."""
    edit = (result or {}).get("edit")
    if not edit:
        return 0, ""
    if not current:
        return 1, f"an edit for {uri} v{version} after the client had moved on"
    for change in edit.get("documentChanges", []):
        if change["textDocument"]["version"] != version:
            return 1, f"an edit for version {change['textDocument']['version']}, the action was for {version}"
        for e in change["edits"]:
            if not _inside(text, e["range"]):
                return 1, f"edit range {e['range']} is not in version {version}"
    return 1, ""


class Storm:
    def __init__(self, client: LspClient, texts: list[str], rng, window: int, cancel: float, timeout: float):
        self.client, self.rng, self.window, self.cancel, self.timeout = client, rng, window, cancel, timeout
        self.docs = {f"file:///storm/doc{i}.py": {"text": t, "version": 1} for i, t in enumerate(texts)}
        self.inflight: list[tuple[int, Future, dict]] = []
        self.offered: list[tuple[str, int, dict]] = []   # (uri, version, code action)
        self.done = 0
        self.counts = {"sent": {}, "answered": 0, "cancelled": 0, "errors": {}, "unanswered": 0, "stale": 0,
                       "with_edit": 0, "content_modified": 0, "stale_examples": [], "error_examples": []}
        for uri, d in self.docs.items():
            client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                                    "version": 1, "text": d["text"]}})

    # -- sending ---------------------------------------------------------------------------
    def _send(self, method: str, params: dict, check) -> int:
        rid = next(self.client._ids)
        future: Future = Future()
        self.client._pending[rid] = future
        self.client._send({"id": rid, "method": method, "params": params})
        self.inflight.append((rid, future, {"method": method, "check": check}))
        self.counts["sent"][method] = self.counts["sent"].get(method, 0) + 1
        return rid

    def _settle(self, limit: int) -> None:
        while len(self.inflight) > limit:
            rid, future, info = self.inflight.pop(0)
            try:
                _, message = future.result(timeout=self.timeout)
            except FutureTimeout:
                self.client._pending.pop(rid, None)
                self.counts["unanswered"] += 1
                continue
            self._judge(message, info)

    def _judge(self, message: dict, info: dict) -> None:
        self.counts["answered"] += 1
        if "error" in message:
            code = message["error"].get("code")
            self.counts["errors"][str(code)] = self.counts["errors"].get(str(code), 0) + 1
            if code == CONTENT_MODIFIED:
                self.counts["content_modified"] += 1
            elif len(self.counts["error_examples"]) < 10 and code not in (-32800,):
                self.counts["error_examples"].append(f"{info['method']}: {message['error'].get('message', '')[:200]}")
            return
        problem = info["check"](message.get("result"))
        if problem:
            self.counts["stale"] += 1
            if len(self.counts["stale_examples"]) < 10:
                self.counts["stale_examples"].append(f"{info['method']}: {problem}")

    # -- operations ------------------------------------------------------------------------
    def step(self) -> None:
        op = self.rng.choices(["edit", "inline", "completion", "action", "resolve"], [35, 25, 15, 15, 10])[0]
        uri = self.rng.choice(list(self.docs))
        getattr(self, "_" + op)(uri)
        self.done += 1
        self._settle(self.window)

    def _edit(self, uri: str) -> None:
        d = self.docs[uri]
        text, lo = d["text"], self.rng.randrange(len(d["text"]) + 1)
        hi = min(len(text), lo + self.rng.choice([0, 0, 1, 5, 20]))
        new = self.rng.choice(SNIPPETS) if hi == lo or self.rng.random() < 0.5 else ""
        change = {"range": _range(text, lo, hi), "text": new}
        d["text"], d["version"] = text[:lo] + new + text[hi:], d["version"] + 1
        self.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": d["version"]},
                                                      "contentChanges": [change]})

    def _complete(self, uri: str, method: str, extra: dict) -> None:
        d = self.docs[uri]
        text = d["text"]
        position = position_at(text, self.rng.randrange(len(text) + 1))
        rid = self._send(method, {"textDocument": {"uri": uri}, "position": position, **extra},
                         lambda result: self._check_items(result, text))
        if self.rng.random() < self.cancel:
            self.client.notify("$/cancelRequest", {"id": rid})
            self.counts["cancelled"] += 1

    def _inline(self, uri: str) -> None:
        self._complete(uri, "textDocument/inlineCompletion", {"context": {"triggerKind": 2}})

    def _completion(self, uri: str) -> None:
        self._complete(uri, "textDocument/completion", {"context": {"triggerKind": 1}})

    def _check_items(self, result, text: str) -> str:
        edits, problem = items_problem(result, text)
        self.counts["with_edit"] += edits
        return problem

    def _action(self, uri: str) -> None:
        d = self.docs[uri]
        text, version = d["text"], d["version"]
        lines = len(text.splitlines()) or 1
        first = self.rng.randrange(lines)
        rng = {"start": {"line": first, "character": 0}, "end": {"line": min(lines - 1, first + self.rng.randint(0, 4)),
                                                                 "character": 0}}
        params = {"textDocument": {"uri": uri}, "range": rng, "context": {"diagnostics": [], "triggerKind": 1}}

        def keep(result) -> str:
            for action in result or []:
                if isinstance(action, dict) and action.get("data"):
                    self.offered.append((uri, version, action))
            del self.offered[:-20]
            return ""
        self._send("textDocument/codeAction", params, keep)

    def _resolve(self, uri: str) -> None:
        if not self.offered:
            return self._action(uri)
        uri, version, action = self.rng.choice(self.offered)
        d = self.docs[uri]
        current, text = d["version"] == version, d["text"]
        self._send("codeAction/resolve", action, lambda result: self._check_resolve(result, uri, version, current, text))

    def _check_resolve(self, result, uri: str, version: int, current: bool, text: str) -> str:
        edits, problem = resolve_problem(result, uri, version, current, text)
        self.counts["with_edit"] += edits
        return problem

    # -- running ---------------------------------------------------------------------------
    def warm_up(self) -> None:
        for uri in self.docs:
            self._inline(uri)
        self._settle(0)
        self.counts = {k: ({} if isinstance(v, dict) else [] if isinstance(v, list) else 0)
                       for k, v in self.counts.items()}

    def run_until(self, total: int) -> None:
        while self.done < total:
            self.step()

    def drain(self) -> None:
        self._settle(0)

    def probe(self, path: str | None, after: int) -> dict:
        """Ask ``benchmarks.memprobe`` (when the server runs under it) for a line of statistics; its summary."""
        if not path:
            return {}
        target = Path(path)
        before = len(target.read_text().splitlines()) if target.exists() else 0
        os.kill(self.client.pid, signal.SIGUSR1)
        for _ in range(600):
            lines = target.read_text().splitlines() if target.exists() else []
            if len(lines) > before:
                line = json.loads(lines[-1])
                return {"probe": {k: line[k] for k in ("malloc", "python_objects", "registries") if k in line}}
            time.sleep(0.1)
        return {"probe": "no answer"}

    def summary(self) -> dict:
        c = self.counts
        return {"operations": self.done, "requests": c["sent"], "answered": c["answered"], "cancelled": c["cancelled"],
                "unanswered": c["unanswered"], "stale": c["stale"], "with_edit": c["with_edit"],
                "content_modified": c["content_modified"], "errors": c["errors"],
                "stale_examples": c["stale_examples"], "error_examples": c["error_examples"]}
