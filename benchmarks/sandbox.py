"""Runs an untrusted test program in a separate process with a timeout, resource limits and no network.

Enforced, always: a wall-clock timeout that kills the whole process group; a fresh temporary
directory as cwd, HOME and TMPDIR (removed afterwards); an isolated interpreter (``-I -S -B``:
no site-packages, no PYTHON* variables, no user site, no .pyc files); a minimal environment
(no proxy variables); stdin closed; limits on CPU time, address space, file size and open files;
a pass requires exit status 0 and a random end marker, so an early ``sys.exit(0)`` fails.
Enforced where the kernel allows it: a private network namespace (root or unprivileged user
namespaces); no child processes (RLIMIT_NPROC, not applied to root).
Best effort, always: ``socket``, ``os`` process/delete functions and ``subprocess`` are patched
to raise (see ``guard.py``). Not enforced: writes outside the temporary directory by code that
undoes the patches. Run untrusted samples in a container.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

GUARD_SOURCE = (Path(__file__).parent / "guard.py").read_text(encoding="utf-8")
STATUSES = ("passed", "failed", "timeout", "crashed")


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 3.0              # wall clock; the process group is killed after it
    cpu_s: int = 4                      # RLIMIT_CPU (SIGXCPU, then SIGKILL)
    memory_bytes: int = 1 << 30         # RLIMIT_AS
    file_bytes: int = 16 << 20          # RLIMIT_FSIZE, also bounds stdout and stderr
    open_files: int = 64                # RLIMIT_NOFILE


@dataclass(frozen=True)
class ExecResult:
    status: str                         # one of STATUSES
    returncode: int | None              # negative: killed by that signal
    elapsed_s: float
    detail: str = ""                    # the last line of stderr, or why it was stopped
    network: str = ""                   # how the network was blocked: "namespace" | "patched" | "" (never started)

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def check_program(prompt: str, completion: str, suffix: str, test: str, entry_point: str) -> str:
    """The HumanEval-infilling check: the filled function, its tests, and the call that runs them."""
    return f"{prompt}{completion}{suffix}\n\n{test}\n\ncheck({entry_point})\n"


def _source(program: str, limits: Limits, nonce: str) -> str:
    enter = (
        f"_sandbox_network = _sandbox_enter({limits.cpu_s}, {limits.memory_bytes}, "
        f"{limits.file_bytes}, {limits.open_files})\n"
        "open('.sandbox', 'w').write(_sandbox_network)\n"
        "del _sandbox_enter, _sandbox_network\n"
    )
    return f"{GUARD_SOURCE}\n{enter}\n{program}\n\n_sandbox_exit({nonce!r})\n"


def _tail(path: Path, size: int = 4096) -> str:
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - size))
        return f.read().decode("utf-8", "replace")


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else ""


def _classify(returncode: int, stdout: str, stderr: str, nonce: str) -> tuple[str, str]:
    if returncode == 0:
        if stdout.rstrip().endswith(nonce):
            return "passed", ""
        return "failed", "exited before the check ran"
    if returncode < 0:
        name = signal.Signals(-returncode).name if -returncode in signal.Signals._value2member_map_ else str(-returncode)
        return "crashed", f"killed by {name}"
    if returncode == 1:   # an uncaught exception, a syntax error in the filled code, or sys.exit(1)
        return "failed", _last_line(stderr)
    return "crashed", f"exit status {returncode}: {_last_line(stderr)}"


def run_program(program: str, limits: Limits = Limits()) -> ExecResult:
    """Run ``program`` with the guard and limits; never raises for anything the program does."""
    nonce = "sandbox-end-" + secrets.token_hex(8)
    with tempfile.TemporaryDirectory(prefix="bench-exec-") as tmp:
        work = Path(tmp)
        (work / "main.py").write_text(_source(program, limits, nonce), encoding="utf-8")
        env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "TMPDIR": tmp, "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}
        start = time.perf_counter()
        with (work / "stdout").open("wb") as out, (work / "stderr").open("wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-B", "main.py"],
                cwd=tmp, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                start_new_session=True,  # its own process group, killed as a whole on timeout
            )
            try:
                returncode = proc.wait(timeout=limits.timeout_s)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # also reaps anything it left running
                except ProcessLookupError:
                    pass
                returncode = proc.wait()
        elapsed = time.perf_counter() - start
        marker = work / ".sandbox"
        network = marker.read_text()[:16] if marker.is_file() else ""
        if timed_out:
            return ExecResult("timeout", None, elapsed, f"killed after {limits.timeout_s:g} s", network)
        status, detail = _classify(returncode, _tail(work / "stdout"), _tail(work / "stderr"), nonce)
        return ExecResult(status, returncode, elapsed, detail, network)
