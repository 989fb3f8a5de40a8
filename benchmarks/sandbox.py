"""Runs an untrusted test program in an isolated, unprivileged process with a timeout, resource limits and no network.

With bubblewrap (``bwrap``, Debian's ``bubblewrap``; the usual mode, ``isolation == "bwrap"``): the
program sees a read-only view of the file system with fresh empty ``/tmp``, ``/var/tmp``, ``/run``,
``/home``, ``/root`` and the harness' home (the interpreter's prefix bound back read-only), its own
temporary directory as the only writable place, and private PID, network, IPC and UTS namespaces:
it can reach no network or other process, and everything it started dies with it. It runs as an
unprivileged user: ``nobody`` (65534) when the harness is root (bubblewrap runs privileged and grants
only CAP_SETUID/CAP_SETGID, which the runner spends on the switch), otherwise the harness' own user in
a user namespace. The runner (``guard.py``) then binds RLIMIT_NPROC 0 (no process or thread: binding,
the user is not root), CPU, address space, file size and open files, and a seccomp filter
(``seccomp.py``: no sockets, no exec, signals only to itself). Without a usable ``bwrap`` the same
runner runs with those limits and seccomp as ``nobody`` when the interpreter is reachable by it (else
as the harness' user with fork refused by seccomp), in a process group killed at the timeout, with a
private network namespace where the kernel allows (``isolation`` "uid" or "none").

The verdict is the harness' own: the exit status the harness reaps, and a random token passed
through a pipe (read by the runner before the program's first line, no file holds it) written back
through another pipe after the program's last line. A program that exits early, or prints anything,
fails. What no in-process harness can prevent (HumanEval's included): the program runs in the
runner's interpreter, so code that inspects it (the calling frame, the garbage collector) can find
the token and write it itself. Closed: finding it in any file, argument or the environment.
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

from benchmarks import isolation

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
    isolation: str = ""                 # "bwrap" | "uid" | "none": see isolation.py

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def check_program(prompt: str, completion: str, suffix: str, test: str, entry_point: str) -> str:
    """The HumanEval-infilling check: the filled function, its tests, and the call that runs them."""
    return f"{prompt}{completion}{suffix}\n\n{test}\n\ncheck({entry_point})\n"


def _runner_source() -> str:
    """The runner: the seccomp filter and the guard, called with the arguments after ``-c``."""
    here = Path(__file__).parent
    parts = [(here / name).read_text(encoding="utf-8") for name in ("seccomp.py", "guard.py")]
    return "\n".join(parts) + "\nimport sys\nmain(sys.argv[1:], install_seccomp)\n"


RUNNER_SOURCE = _runner_source()


def _tail(path: Path, size: int = 4096) -> str:
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - size))
        return f.read().decode("utf-8", "replace")


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else ""


def _signal_name(number: int) -> str:
    return signal.Signals(number).name if number in signal.Signals._value2member_map_ else str(number)


def _normalise(returncode: int, wrapped: bool) -> int:
    """bubblewrap reports a child killed by signal N as 128 + N: negative N, as for a direct child."""
    if wrapped and returncode > 128 and returncode - 128 in signal.Signals._value2member_map_:
        return -(returncode - 128)
    return returncode


def _classify(returncode: int, token_ok: bool, stderr: str) -> tuple[str, str]:
    """The verdict from what the harness itself saw: the exit status it reaped and the token pipe."""
    if returncode == 0:
        return ("passed", "") if token_ok else ("failed", "exited before the check ran")
    if returncode < 0:
        return "crashed", f"killed by {_signal_name(-returncode)}"
    if returncode == 1:   # an uncaught exception, a syntax error in the filled code, or sys.exit(1)
        return "failed", _last_line(stderr)
    return "crashed", f"exit status {returncode}: {_last_line(stderr)}"


def _prepare(work: Path, program: str, plan: isolation.Plan) -> None:
    (work / "main.py").write_text(program, encoding="utf-8")
    if plan.uid != os.getuid():  # the sandbox user owns its directory, and nothing else
        work.parent.chmod(0o711)  # without bubblewrap it must pass through the harness' directory
        os.chown(work, plan.uid, plan.gid)
        os.chown(work / "main.py", plan.uid, plan.gid)


def _private(path: Path):
    """A file only the harness can open (the runner gets the descriptor)."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb")


def _wait(proc: subprocess.Popen, timeout_s: float, result_fd: int) -> tuple[int, bytes, bool]:
    """Reap the runner (killing its whole session at the timeout) and read what the result pipe holds."""
    try:
        proc.wait(timeout=timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # bwrap: its PID namespace dies with it; otherwise the group
    except (ProcessLookupError, PermissionError):
        pass
    returncode = proc.wait()
    chunks = []
    while chunk := os.read(result_fd, 65536):
        chunks.append(chunk)
    return returncode, b"".join(chunks), timed_out


def run_program(program: str, limits: Limits = Limits()) -> ExecResult:
    """Run ``program`` in the sandbox with the limits; never raises for anything the program does."""
    token = secrets.token_hex(16).encode()
    with tempfile.TemporaryDirectory(prefix="bench-run-") as outside:
        plan = isolation.plan_for(tempfile.gettempdir())
        work = Path(tempfile.mkdtemp(prefix="bench-exec-", dir=outside))
        _prepare(work, program, plan)
        token_r, token_w = os.pipe()
        result_r, result_w = os.pipe()
        os.write(token_w, token)
        os.close(token_w)
        args = [str(work / "main.py"), str(token_r), str(result_w), plan.network, str(plan.uid), str(plan.gid),
                str(limits.cpu_s), str(limits.memory_bytes), str(limits.file_bytes), str(limits.open_files)]
        argv = isolation.command(plan, str(work)) + [isolation.interpreter(), "-I", "-S", "-B", "-c", RUNNER_SOURCE, *args]
        env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "TMPDIR": str(work), "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}
        start = time.perf_counter()
        try:
            with _private(Path(outside) / "stdout") as out, _private(Path(outside) / "stderr") as err:
                proc = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                        pass_fds=(token_r, result_w), start_new_session=True)
                os.close(token_r)
                os.close(result_w)
                returncode, result, timed_out = _wait(proc, limits.timeout_s, result_r)
        finally:
            os.close(result_r)
        elapsed = time.perf_counter() - start
        network = result.split(b" ", 1)[0].decode("ascii", "replace")[:16] if b"\n" in result else ""
        if timed_out:
            return ExecResult("timeout", None, elapsed, f"killed after {limits.timeout_s:g} s", network, plan.isolation)
        token_ok = result.endswith(b"\n" + token)
        returncode = _normalise(returncode, plan.isolation == "bwrap")
        status, detail = _classify(returncode, token_ok, _tail(Path(outside) / "stderr"))
        return ExecResult(status, returncode, elapsed, detail, network, plan.isolation)
