"""Two ways to fill a task's hole: the engine in-process, or a real ``diffusion-lsp`` over stdio."""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.lsp_client import LspClient, LspError, LspResponseError, offset_at, position_at
from benchmarks.tasks import EXTENSIONS, Task


INVOKED, AUTOMATIC = 1, 2   # InlineCompletionTriggerKind: an explicit request / while typing


@dataclass(frozen=True)
class Fill:
    """What came back for one task, and what it cost."""

    completion: str                 # the text between prompt and suffix in the filled document
    document: str                   # the whole document after the edit, as an editor would hold it
    elapsed_ms: float               # wall time seen by the caller (the round trip through the LSP)
    engine_ms: float | None = None  # the engine's own time, when known
    steps: int | None = None
    forwards: int | None = None
    tokens: int | None = None
    kind: str | None = None
    rejected: int | None = None     # candidates the engine's syntax validation rejected
    context_edited: bool = False    # the edit also changed the prompt or the suffix
    error: str = ""                 # an engine or server error; the task then counts as failed


def apply_edits(text: str, edits: list[tuple[int, int, str]]) -> str:
    """``text`` with each ``(start, end, new)`` applied (str offsets into the original ``text``)."""
    for start, end, new in sorted(edits, key=lambda e: e[0], reverse=True):
        text = text[:start] + new + text[end:]
    return text


def make_fill(task: Task, document: str, inserted: str, **cost) -> Fill:
    """A Fill whose completion is read off the document, so replaced context is accounted for."""
    prompt, suffix = task.prompt, task.suffix
    inside = (len(document) >= len(prompt) + len(suffix)
              and document.startswith(prompt) and document.endswith(suffix))
    completion = document[len(prompt):len(document) - len(suffix)] if inside else inserted
    return Fill(completion=completion, document=document, context_edited=not inside, **cost)


def failed_fill(task: Task, elapsed_ms: float, error: str) -> Fill:
    return Fill(completion="", document=task.text, elapsed_ms=elapsed_ms, error=error)


class EngineFiller:
    """The engine the server embeds, called in-process through ``Engine.infill_sync``."""

    via = "engine"

    def __init__(self, config, kind: str | None = None, slots: int | None = None, workspaces=None):
        self.config = config               # an engine.EngineConfig
        self.kind = kind                   # a HoleKind value, or None: decided from the syntax
        self.slots = slots                 # one fill at this many slots, or None: the engine's choice
        self.workspaces = workspaces       # a benchmarks.workspaces.CorpusWorkspaces: each task's workspace
        self._engine = None

    def __enter__(self) -> "EngineFiller":
        from engine import Engine

        self._engine = Engine(self.config)
        self._engine.start().result()      # raises engine.ModelLoadError
        return self

    def __exit__(self, *exc) -> None:
        self._engine.close()

    def fill(self, task: Task) -> Fill:
        from engine import EngineError, HoleKind, InfillRequest

        workspace = self.workspaces.key(task) if self.workspaces is not None else None
        path = self.workspaces.path(task) if self.workspaces is not None else None
        request = InfillRequest(text=task.text, offset=task.offset, language=task.language_id,
                                kind=HoleKind(self.kind) if self.kind else None, max_tokens=self.slots,
                                workspace=workspace, path=path)
        start = time.perf_counter()
        try:
            c = self._engine.infill_sync(request)
        except EngineError as e:
            return failed_fill(task, (time.perf_counter() - start) * 1000.0, str(e))
        elapsed = (time.perf_counter() - start) * 1000.0
        document = apply_edits(task.text, [(f.start, f.end, f.text) for f in c.fills])
        return make_fill(task, document, c.text, elapsed_ms=elapsed, engine_ms=c.elapsed_ms,
                         steps=c.steps, forwards=c.forwards, tokens=c.tokens, kind=getattr(c.kind, "value", c.kind),
                         rejected=c.rejected)


class ReferenceFiller:
    """The canonical solution, as if a model had produced it: checks the harness itself (pass@1 must be 1)."""

    via = "reference"

    def __enter__(self) -> "ReferenceFiller":
        return self

    def __exit__(self, *exc) -> None:
        pass

    def fill(self, task: Task) -> Fill:
        return make_fill(task, task.prompt + task.canonical_solution + task.suffix, task.canonical_solution,
                         elapsed_ms=0.0)


def uri_for(task: Task, n: int) -> str:
    ext = EXTENSIONS.get(task.language_id, ".py")
    return f"file:///benchmark/{n:05d}_{re.sub(r'[^A-Za-z0-9_.-]+', '_', task.task_id)}{ext}"


class LspFiller:
    """A real ``diffusion-lsp`` process: didOpen, textDocument/inlineCompletion, didClose per task."""

    via = "lsp"

    def __init__(self, options: dict, stderr_path: str | Path | None = None, trigger: int = INVOKED,
                 load_timeout: float = 120.0, root: str | Path | None = None):
        self.options = options             # initializationOptions (docs/PROTOCOL.md settings)
        self.root = root                   # the workspace folder (rootUri); ready once its lines are counted
        self.trigger = trigger
        self.load_timeout = load_timeout
        self.stderr_path = stderr_path
        self.client: LspClient | None = None
        self._n = 0

    def __enter__(self) -> "LspFiller":
        self.client = LspClient(stderr_path=self.stderr_path or "/dev/null")
        try:
            self.client.initialize(self.options, root_uri=Path(self.root).resolve().as_uri() if self.root else None)
            self.client.wait_ready(self.load_timeout)
            if self.root:
                self._wait_for_workspace_lines()
        except BaseException:
            self.client.close()
            raise
        return self

    def _wait_for_workspace_lines(self) -> None:
        end = time.monotonic() + self.load_timeout
        while time.monotonic() < end:
            state = self.client.request("diffusion/stats", {}).get("workspaceLines", {}).get("state")
            if state in ("ready", "failed", "off"):
                return
            time.sleep(0.2)
        raise LspError(f"the workspace lines of {self.root} were not counted in {self.load_timeout} s")

    def __exit__(self, *exc) -> None:
        self.client.close()

    def fill(self, task: Task) -> Fill:
        self._n += 1
        return fill_over_lsp(self.client, task, uri_for(task, self._n), self.trigger)


def fill_over_lsp(client: LspClient, task: Task, uri: str, trigger: int = INVOKED) -> Fill:
    """Open ``task`` as ``uri``, ask for an inline completion at its hole, apply the item, close it."""
    text = task.text
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": task.language_id, "version": 1, "text": text}})
    before = _completed(client)
    start = time.perf_counter()
    try:
        result, rtt = client.request_timed("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": position_at(text, task.offset),
            "context": {"triggerKind": trigger}})
    except LspResponseError as e:   # the server is fine but refused this one: a failed task
        return failed_fill(task, (time.perf_counter() - start) * 1000.0, str(e))
    finally:
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    engine_ms = _engine_ms(client, before)
    items = result.get("items", []) if isinstance(result, dict) else (result or [])
    if not items:
        return make_fill(task, text, "", elapsed_ms=rtt, engine_ms=engine_ms)
    item = items[0]
    inserted = item["insertText"] if isinstance(item["insertText"], str) else item["insertText"]["value"]
    here = position_at(text, task.offset)
    span = item.get("range") or {"start": here, "end": here}
    start, end = offset_at(text, span["start"]), offset_at(text, span["end"])
    document = apply_edits(text, [(start, end, inserted)])
    return make_fill(task, document, inserted, elapsed_ms=rtt, engine_ms=engine_time(item) or engine_ms)


def _completed(client: LspClient) -> int | None:
    """Jobs the server's engine has completed so far (its diffusion/stats request), outside the timing."""
    try:
        return client.request("diffusion/stats", {}, 10).get("completed")
    except LspError:
        return None


def _engine_ms(client: LspClient, before: int | None) -> float | None:
    """The engine time of the request just answered, when exactly one job completed since ``before``."""
    if before is None:
        return None
    stats = client.request("diffusion/stats", {}, 10)
    return stats.get("last_elapsed_ms") if stats.get("completed") == before + 1 else None


def engine_time(item: dict) -> float | None:
    """The engine's time for an inline completion item, if the server reports one in ``data``."""
    data = item.get("data")
    if isinstance(data, dict):
        for key in ("engineMs", "engine_ms", "elapsedMs", "elapsed_ms"):
            if isinstance(data.get(key), (int, float)):
                return float(data[key])
    return None


def fill_record(task: Task, fill: Fill) -> dict:
    return {"task_id": task.task_id, **asdict(fill)}
