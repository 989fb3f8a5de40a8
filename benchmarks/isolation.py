"""How the sandbox starts its runner: bubblewrap's command line, the unprivileged user, and the fallback without it."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

NOBODY = 65534            # nobody / nogroup on Debian and most Linux systems
HIDDEN = ("/tmp", "/var/tmp", "/run", "/home", "/root", "/mnt", "/media")  # empty tmpfs in the sandbox


@dataclass(frozen=True)
class Plan:
    """How the runner is started, and what that promises."""
    bwrap: str                # bubblewrap's path, or "" to start the runner directly
    isolation: str            # "bwrap" | "uid" (fallback, as nobody) | "none" (fallback, as this user)
    uid: int                  # the user the runner switches to (its own when equal to os.getuid())
    gid: int
    network: str              # "namespace" when the plan itself gives one, else "" (the runner tries)


def interpreter() -> str:
    """The base interpreter (not a virtual environment's link): it needs no pyvenv.cfg to start."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(base)


def _reachable_by_others(path: str) -> bool:
    """Every directory above ``path`` searchable by any user, and the file readable by any user."""
    p = Path(path)
    if not p.exists() or not p.stat().st_mode & 0o004:
        return False
    return all(parent.stat().st_mode & 0o001 for parent in p.parents)


def _hidden_dirs() -> list[str]:
    homes = {str(Path.home()), os.environ.get("HOME", "") or "/"}
    return [d for d in (*HIDDEN, *sorted(homes)) if d != "/" and os.path.isdir(d)]


def _is_hidden(path: str) -> bool:
    return any(path.startswith(hidden + "/") for hidden in _hidden_dirs())


def _reachable(path: str) -> list[str]:
    """Options creating the directories between a hidden place and ``path``, searchable by the sandbox user
    (bubblewrap would make them 0700, owned by root)."""
    argv = []
    for hidden in _hidden_dirs():
        if path.startswith(hidden + "/"):
            between = [Path(hidden) / p for p in Path(path).relative_to(hidden).parents if str(p) != "."]
            for parent in reversed(between):
                argv += ["--perms", "0755", "--dir", str(parent)]
    return argv


def bwrap_argv(bwrap: str, work: str, as_root: bool) -> list[str]:
    """bubblewrap's options: a read-only root, the hidden places emptied, ``work`` the only writable one."""
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for d in _hidden_dirs():
        argv += ["--tmpfs", d]
    prefix = os.path.realpath(sys.base_prefix)  # the interpreter and its standard library, read-only
    argv += _reachable(prefix) + ["--ro-bind", prefix, prefix] if _is_hidden(prefix) else []
    argv += _reachable(work) + ["--bind", work, work, "--chdir", work]
    argv += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
             "--die-with-parent", "--new-session"]
    if as_root:  # privileged bubblewrap: the runner is given only what it needs to become nobody
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:        # unprivileged bubblewrap: a user namespace, with no further ones inside
        argv += ["--unshare-user", "--disable-userns"]
    return argv + ["--"]


@functools.lru_cache(maxsize=1)
def plan_for(work_parent: str) -> Plan:
    """The strongest plan this machine allows (probed once: bubblewrap present and able to start)."""
    as_root = os.getuid() == 0
    uid, gid = (NOBODY, NOBODY) if as_root else (os.getuid(), os.getgid())
    bwrap = shutil.which("bwrap")
    if bwrap:
        probe = Path(work_parent)
        argv = bwrap_argv(bwrap, str(probe), as_root) + [interpreter(), "-I", "-S", "-c", "pass"]
        try:
            ok = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return Plan(bwrap, "bwrap", uid, gid, "namespace")
    if as_root and _reachable_by_others(interpreter()):
        return Plan("", "uid", NOBODY, NOBODY, "")
    return Plan("", "none", os.getuid(), os.getgid(), "")


def command(plan: Plan, work: str) -> list[str]:
    """What goes before ``python -I -S -B -c RUNNER ...`` for a program in ``work``."""
    return bwrap_argv(plan.bwrap, work, os.getuid() == 0) if plan.bwrap else []
