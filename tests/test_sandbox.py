"""The benchmark sandbox against programs written to escape it (issue 18, item 9): each escape must fail.

Every program here first undoes the runner's convenience patches (reloading ``os``/``subprocess`` or
using ``posix``/``_socket`` directly), so what is tested is what holds underneath: the mount and PID
namespaces, the unprivileged user with RLIMIT_NPROC, seccomp and the token pipe. Run as root (as CI
does) and as any other user; the file-system cases need bubblewrap and say so when it is missing.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from benchmarks import isolation
from benchmarks.sandbox import Limits, run_program

FAST = Limits(timeout_s=5.0)
REPO = Path(__file__).resolve().parent.parent
RELOAD = "import importlib, os, subprocess\nimportlib.reload(os)\nimportlib.reload(subprocess)\n"


def _plan() -> isolation.Plan:
    return isolation.plan_for(tempfile.gettempdir())


needs_bwrap = pytest.mark.skipif(
    _plan().isolation != "bwrap",
    reason="bubblewrap is not installed or cannot start here (apt-get install bubblewrap; unprivileged "
           "users also need user namespaces): without it the file system is not made read-only")


@pytest.fixture(params=["tmp", "repo"])
def outside(request):
    """A directory outside the sandbox that anyone may write to: beside its temporary directory, or in
    the checkout (a place the sandbox sees, read-only)."""
    parent = tempfile.gettempdir() if request.param == "tmp" else str(REPO)
    if not os.access(parent, os.W_OK):
        pytest.skip(f"{parent} is not writable by this user: no place to put the target there")
    path = Path(tempfile.mkdtemp(prefix=".sandbox-outside-", dir=parent))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_runs_isolated_as_an_unprivileged_user():
    if _plan().isolation == "none" and os.getuid() == 0:
        pytest.skip("no bubblewrap and an interpreter that nobody cannot reach: the runner stays root "
                    "(fork and clone are then refused by seccomp instead of RLIMIT_NPROC)")
    r = run_program("import os\nassert os.getuid() != 0 and os.geteuid() != 0\n"
                    "assert os.getcwd().split('/')[-1].startswith('bench-exec-')", FAST)
    assert r.passed, r.detail
    if os.getuid() == 0:
        assert _plan().uid == isolation.NOBODY


@needs_bwrap
def test_open_cannot_write_outside(outside):
    target = outside / "escaped.txt"
    r = run_program(f"open({str(target)!r}, 'w').write('escaped')", FAST)
    assert not r.passed and not target.exists()


@needs_bwrap
def test_unlink_outside_fails(outside):
    target = outside / "keep.txt"
    target.write_text("keep")
    target.chmod(0o666)
    r = run_program(f"import posix\nposix.unlink({str(target)!r})", FAST)
    assert not r.passed and target.read_text() == "keep"


@needs_bwrap
def test_home_directory_is_not_readable():
    secret = f"secret-{uuid.uuid4().hex}"
    target = Path.home() / f".sandbox-secret-{uuid.uuid4().hex[:8]}"
    target.write_text(secret)
    target.chmod(0o644)
    try:
        r = run_program(f"text = open({str(target)!r}).read()\nprint(text)\nraise ValueError(text)", FAST)
    finally:
        target.unlink()
    assert not r.passed and secret not in r.detail


def test_unix_socket_cannot_be_reached(outside):
    path = outside / "harness.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    path.chmod(0o777)
    listener.listen(1)
    listener.settimeout(3.0)
    accepted = []
    waiter = threading.Thread(target=lambda: accepted.append(_accept(listener)))
    waiter.start()
    program = (f"import _socket\ns = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)\n"
               f"s.connect({str(path)!r})\ns.sendall(b'escaped')")
    r = run_program(program, FAST)
    waiter.join()
    listener.close()
    assert not r.passed and accepted == [None]


def _accept(listener):
    try:
        return listener.accept()
    except OSError:
        return None


def test_twenty_children_cannot_be_forked():
    program = RELOAD + ("children = []\nfor _ in range(20):\n    pid = os.fork()\n    if pid == 0:\n"
                        "        os._exit(0)\n    children.append(pid)\nassert len(children) == 20")
    r = run_program(program, FAST)
    assert not r.passed and r.status == "failed"


def test_shell_cannot_run_after_reloading_subprocess(outside):
    target = outside / "from-shell.txt"
    program = RELOAD + (f"out = subprocess.run(['/bin/sh', '-c', 'echo escaped; echo x > {target}'], "
                        "capture_output=True).stdout\nassert out == b'escaped\\n'")
    r = run_program(program, FAST)
    assert not r.passed and not target.exists()
    r = run_program(f"import posix\nposix.execv('/bin/sh', ['sh', '-c', 'echo x > {target}'])", FAST)
    assert not r.passed and not target.exists()


def _processes_named(name: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == name:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("parent_waits", [False, True], ids=["parent-exits", "parent-times-out"])
def test_setsid_grandchild_does_not_outlive_the_harness(parent_waits):
    name = uuid.uuid4().hex[:15]
    program = RELOAD + (
        "import ctypes, time\n"
        "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        f"        ctypes.CDLL(None).prctl(15, {name.encode()!r}, 0, 0, 0)\n"  # PR_SET_NAME
        "        time.sleep(30)\n    os._exit(0)\n"
        + ("time.sleep(30)\n" if parent_waits else "time.sleep(0.5)\n"))
    run_program(program, Limits(timeout_s=2.0))
    for _ in range(20):  # a killed process can take a moment to be reaped
        if not _processes_named(name):
            break
        time.sleep(0.1)
    left = _processes_named(name)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []


def test_end_marker_cannot_be_forged():
    """Everything the program can read (its script, its command line, its environment, its directory)
    written to stdout and every other descriptor it holds, the likeliest marker last, then exit 0."""
    program = (
        "import os, re, posix\nseen = set()\n"
        "for path in [__file__, '/proc/self/cmdline', '/proc/self/environ', *os.listdir('.')]:\n"
        "    try:\n        seen.update(re.findall(rb'[\\w-]{8,}', open(path, 'rb').read()))\n"
        "    except OSError:\n        pass\n"
        "likely = sorted(seen, key=lambda w: (any(k in w.lower() for k in (b'end', b'token', b'mark')), len(w)))\n"
        "for fd in (1, *range(3, 64)):\n    for word in likely:  # the likeliest marker written last\n"
        "        try:\n            posix.write(fd, b'\\n' + word + b'\\n')\n        except OSError:\n            break\n"
        "os._exit(0)\n")
    r = run_program(program, FAST)
    assert r.returncode == 0 and r.status == "failed" and not r.passed


def test_harness_cannot_be_signalled():
    received = []
    previous = signal.signal(signal.SIGUSR1, lambda *args: received.append(args[0]))
    try:
        program = (f"import posix, signal\nfor pid in ({os.getpid()}, posix.getppid()):\n"
                   "    posix.kill(pid, signal.SIGUSR1)")
        r = run_program(program, FAST)
        time.sleep(0.2)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert not r.passed and received == []
