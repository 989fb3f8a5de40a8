"""Workspace adaptation in the server (setting ``adapt: "background"``) and ``diffusion-lsp adapt``.

When the model is ready the server looks in the cache (``engine/adapt/store.py``) for this workspace and
model: weights the gate accepted are swapped in between requests (``Engine.swap_weights``); a rejected run
is reported and not repeated; with no entry, the adapter process (``python -m engine.adapt``, one thread,
idle priority) starts. The server pauses it while the user types or a fill runs and resumes it after
``QUIET_S`` seconds of quiet, through the process's stdin. Its figures are in ``diffusion/stats`` under ``adapt``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from engine import LoadConfig, ModelChanged
from engine.adapt import store
from engine.config import model_dir

if TYPE_CHECKING:
    from .server import DiffusionServer

log = logging.getLogger(__name__)
QUIET_S = 2.0          # resume the adapter this long after the last keystroke or fill
BACKGROUND_MINUTES = 15.0


def parse_minutes(text: str) -> float:
    """CPU minutes of adapting: a number above 0 (0, a negative number or nan trained nothing and still kept a
    'not adopted' record, which stops the background adapter for the workspace; inf never ended)."""
    try:
        minutes = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number of minutes") from None
    if not 0 < minutes < float("inf"):   # nan fails both comparisons
        raise ValueError(f"minutes must be a number above 0, not {text!r}")
    return minutes


def _background_minutes() -> float:
    text = os.environ.get("DIFFUSION_LSP_ADAPT_MINUTES") or ""
    if not text:
        return BACKGROUND_MINUTES
    try:
        return parse_minutes(text)
    except ValueError as exc:   # the server still starts, with the default
        log.warning("DIFFUSION_LSP_ADAPT_MINUTES: %s; adapting for %g minutes", exc, BACKGROUND_MINUTES)
        return BACKGROUND_MINUTES


def path_of(uri: str | None) -> str | None:
    """The local path a ``file:`` URI names (percent-decoded); None for another scheme (``untitled:``...), a host
    other than this one (``file://server/share/x.py`` is no local ``/share/x.py``) or a path no file can have (a
    NUL byte: every call on it would raise). Percent-escaped bytes that are not UTF-8 (a Latin-1 folder name, as
    Neovim writes it: ``caf%E9``) stay those bytes, as the file system's names do (``os.fsdecode``), not U+FFFD: that
    named no file."""
    if not uri:
        return None
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc.lower() not in ("", "localhost"):
        return None
    path = unquote(parsed.path, errors="surrogateescape")
    return path if path and "\0" not in path else None


class WorkspaceAdapter:
    """The adapter process of one server session and what the status shows of it."""

    def __init__(self, server: DiffusionServer):
        self.server = server
        self.workspace: str | None = None
        self.state = "off"            # off | no-workspace | measuring | training | adopted | rejected | failed
                                      # (with the setting on, "off" until the model is ready: shown as pending)
        self.paused = False
        self._asked = ""              # the last word written to the adapter (each keystroke need not repeat it)
        self.info: dict[str, Any] = {}
        self.minutes = _background_minutes()
        priority = os.environ.get("DIFFUSION_LSP_ADAPT_PRIORITY") or "idle"
        self.priority = priority if priority in ("idle", "nice", "normal") else "idle"
        self._proc: asyncio.subprocess.Process | None = None
        self._task: asyncio.Task[None] | None = None
        self._fills = 0
        self._resume: asyncio.TimerHandle | None = None

    # -- what the status shows ----------------------------------------------------------------
    def summary(self) -> dict[str, Any] | None:
        """What ``diffusion/status`` carries for the clients' status views (None while the setting is off):
        the state and held-out one-line exact match before and after, as fractions."""
        if self.server.settings.load.adapt != "background":
            return None
        out: dict[str, Any] = {"state": "pending" if self.state == "off" else self.state}   # not looked yet
        for when in ("before", "after"):
            score = self.info.get(when)
            if score:
                out[when] = score.get("exact_match")
                out["holes"] = score.get("holes")
        return out

    def _set(self, state: str) -> None:
        self.state = state
        self.server.status.adapt_changed()

    def stats(self) -> dict[str, Any]:
        return {"setting": self.server.settings.load.adapt, "state": self.state, "paused": self.paused,
                "workspace": self.workspace, **self.info}

    # -- start, stop --------------------------------------------------------------------------
    async def engine_ready(self) -> None:
        """The model (re)loaded: adopt cached weights, or start adapting, as the setting says."""
        await self.stop()
        self.info = {}
        load = self.server.settings.load   # the weights looked up, and swapped in only, for this model
        if load.adapt != "background":
            self.state = "off"
            return
        if self.workspace is None:
            self.state = "no-workspace"
            return
        if load.engine:  # the weights live on a remote engine: nothing local to adapt
            self.info["error"] = "workspace adaptation needs a local model (the engine setting names a remote one)"
            self._set("failed")
            return
        model_dir = load.model_dir()
        entry = await asyncio.to_thread(store.entry_dir, self.workspace, model_dir)
        if not await self._adopt(entry, load):
            record = store.read_record(entry)
            if record is not None:      # measured before and not better: not repeated until removed
                self._show(record)
                self._set("rejected")
                return
            await self._spawn(str(model_dir), load)

    async def _adopt(self, entry: Path, load: LoadConfig) -> bool:
        weights = store.accepted_weights(entry)
        record = store.read_record(entry)
        engine = self.server.engine
        if weights is None or record is None or engine is None:
            return False
        try:
            await asyncio.wrap_future(engine.swap_weights(weights, load))
        except ModelChanged as exc:   # another model was loaded meanwhile: its own engine_ready decides
            log.info("%s", exc)
            return True
        except Exception as exc:  # noqa: BLE001 (a bad entry is reported; the base model stays)
            self.info["error"] = str(exc)
            self._set("failed")
            return True
        self._show(record)
        self._set("adopted")
        return True

    def _show(self, record: store.AdaptRecord) -> None:
        self.info.update({"before": record.before, "after": record.after, "accepted": record.accepted,
                          "steps": record.steps, "cpu_seconds": record.cpu_seconds, "reason": record.reason,
                          "cache": str(store.entry_dir(record.workspace, record.model))})

    async def _spawn(self, model: str, load: LoadConfig) -> None:
        assert self.workspace is not None
        cmd = [sys.executable, "-m", "engine.adapt", self.workspace, "--model", model, "--minutes",
               str(self.minutes), "--priority", self.priority, "--commands"]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
        self._proc = await asyncio.create_subprocess_exec(*cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                          stderr=subprocess.PIPE, env=env)
        self.paused, self._asked = False, ""
        self._set("measuring")
        log.info("adapting the model to %s (pid %s)", self.workspace, self._proc.pid)
        self._task = asyncio.get_running_loop().create_task(self._follow(self._proc, model, load))
        if self._fills:
            self._send("pause")

    async def _follow(self, proc: asyncio.subprocess.Process, model: str, load: LoadConfig) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        said: collections.deque[str] = collections.deque(maxlen=1)   # its last line on stderr: why it failed

        async def read_stderr(stream: asyncio.StreamReader) -> None:
            async for raw in stream:
                if line := raw.decode("utf-8", "replace").strip():
                    said.append(line)

        stderr = asyncio.get_running_loop().create_task(read_stderr(proc.stderr))
        async for raw in proc.stdout:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            kind = event.get("event")
            if kind == "measured":
                keys = ("holes", "offered", "exact", "offered_exact", "exact_match", "precision", "line_loss")
                self.info["before"] = {k: event.get(k) for k in keys}
                self._set("training")
            elif kind == "step":
                self.info.update(steps=event["step"], cpu_seconds=event["cpu_seconds"], loss=event["loss"])
            elif kind == "measure" and event.get("phase") == "after":
                self.state = "measuring"
            elif kind == "waiting":   # another session's adapter adapts this workspace: its entry is taken
                self.info["waiting_for"] = event.get("pid")
            elif kind in ("paused", "resumed"):
                self.paused = kind == "paused"
        code = await proc.wait()
        await stderr
        if self._proc is not proc:
            return
        self._proc = None
        entry = store.entry_dir(self.workspace or "", model)
        record = store.read_record(entry)
        if code != 0 or record is None:
            self.info["error"] = f"the adapter exited with status {code}" + (f": {said[0]}" if said else "")
            self._set("failed")
            return
        if not await self._adopt(entry, load):
            self._show(record)
            self._set("rejected")

    def terminate(self) -> None:
        """End the adapter process now (the session ends); it also stops by itself when its stdin closes."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            proc.terminate()

    async def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            proc.terminate()
            await proc.wait()
        self._task = None

    # -- activity: pause while the user types or a fill runs ----------------------------------
    def _send(self, word: str) -> None:
        proc = self._proc
        if word == self._asked and word in ("pause", "resume"):
            return
        if proc is not None and proc.stdin is not None and proc.returncode is None:
            self._asked = word
            try:
                proc.stdin.write((word + "\n").encode())
            except (BrokenPipeError, ConnectionResetError, RuntimeError):
                pass

    def activity(self) -> None:
        """The user typed: pause now, resume after ``QUIET_S`` without activity and no fill running."""
        if self._proc is None:
            return
        self._send("pause")
        self._schedule_resume()

    def _schedule_resume(self) -> None:
        if self._resume is not None:
            self._resume.cancel()
        self._resume = asyncio.get_running_loop().call_later(QUIET_S, self._quiet)

    def _quiet(self) -> None:
        self._resume = None
        if self._fills == 0:
            self._send("resume")

    def fill_started(self) -> None:
        self._fills += 1
        if self._proc is not None:
            self._send("pause")

    def fill_finished(self) -> None:
        self._fills = max(0, self._fills - 1)
        if self._proc is not None and self._fills == 0:
            self._schedule_resume()


def workspace_folders(params: Any) -> list[str]:
    """Every workspace folder of ``initialize`` (real paths, in order, each once), else its root URI or path."""
    found = [path_of(f.uri) for f in getattr(params, "workspace_folders", None) or []]
    if not any(found):
        found = [workspace_of(params)]
    return list(dict.fromkeys(os.path.realpath(p) for p in found if p))


def workspace_of(params: Any) -> str | None:
    """The first workspace folder, else the root URI, else the root path of ``initialize``."""
    folders = getattr(params, "workspace_folders", None) or []
    for folder in folders:
        path = path_of(folder.uri)
        if path:
            return path
    root = path_of(getattr(params, "root_uri", None)) or getattr(params, "root_path", None) or None
    return root if root and "\0" not in root else None


def run_cli(args: argparse.Namespace) -> int:
    """``diffusion-lsp adapt [WORKSPACE] [--minutes N] [--model M] [--method auto|full|lora] [--remove]``."""
    workspace = str(Path(args.workspace or ".").resolve())
    if args.remove:
        removed = store.remove(workspace, [model_dir(args.model)])
        print(f"removed {len(removed)} adapted model(s) of {workspace}" +
              "".join(f"\n  {p}" for p in removed))
        return 0
    if not Path(workspace).is_dir():
        print(f"diffusion-lsp adapt: {workspace} is not a directory", file=sys.stderr)
        return 2
    cmd = [sys.executable, "-m", "engine.adapt", workspace, "--model", args.model, "--minutes", str(args.minutes),
           "--method", getattr(args, "method", "auto"), "--priority", "nice"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            print(describe(event), flush=True)
    return proc.returncode


def _pct(score: dict[str, Any]) -> str:
    return f"{100 * score.get('exact_match', 0):.1f}% ({score.get('exact', 0)}/{score.get('holes', 0)})"


def describe(event: dict[str, Any]) -> str:
    kind = event.get("event")
    if kind == "files":
        return (f"{event['train_files']} files to learn from, {event['held_out_files']} held out "
                f"({event['holes']} one-line holes)")
    if kind == "waiting":
        return f"waiting for another adapter of this workspace (pid {event.get('pid')}), to take its outcome"
    if kind == "measured":
        return f"held-out one-line exact match before: {_pct(event)}"
    if kind == "step":
        return f"step {event['step']}: loss {event['loss']} ({event['cpu_seconds']:.0f} CPU s)"
    if kind == "done":
        verdict = "adopted: the server uses it from its next start" if event["accepted"] else \
            f"not adopted: {event['reason']}"
        after = f" -> after: {_pct(event['after'])}" if event.get("after") else ""
        how = " of LoRA adapters" if event.get("method") == "lora" else ""
        whose = "the other adapter: " if event.get("waited") else ""
        return f"{whose}done in {event['steps']} steps{how}{after}; {verdict}"
    return json.dumps(event)
