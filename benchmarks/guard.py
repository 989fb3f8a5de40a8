"""The preamble a sandboxed test program runs first: resource limits, no network, no child processes.

This file is standard-library only: ``sandbox.py`` prepends its source to every program it runs,
then calls ``_sandbox_enter(...)`` before the program and ``_sandbox_exit(nonce)`` after it.
It guards against accidents (a runaway loop, a memory bomb, ``rm -rf``, a stray request), not
against code written to escape: a determined program can restore what is patched here.
"""


def _sandbox_enter(cpu_s, memory_bytes, file_bytes, open_files):
    """Apply the limits to this process; return how the network is blocked ("namespace" or "patched")."""
    import ctypes
    import os
    import resource
    import shutil
    import socket
    import subprocess

    for limit, value in (
        (resource.RLIMIT_CPU, cpu_s),
        (resource.RLIMIT_AS, memory_bytes),
        (resource.RLIMIT_FSIZE, file_bytes),
        (resource.RLIMIT_NOFILE, open_files),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, 0),  # no fork for a non-root user; root is exempt (the os patches below remain)
    ):
        try:
            resource.setrlimit(limit, (value, value))
        except (ValueError, OSError):
            pass  # a limit the platform refuses; the wall-clock timeout in the parent still holds

    # A private network namespace has only a loopback that is down: nothing can be reached.
    # Needs CAP_SYS_ADMIN or unprivileged user namespaces; otherwise only the patches apply.
    network = "patched"
    clone_newnet, clone_newuser = 0x40000000, 0x10000000
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(clone_newnet) == 0 or libc.unshare(clone_newuser | clone_newnet) == 0:
            network = "namespace"
    except (OSError, AttributeError):
        pass

    def blocked(*args, **kwargs):
        raise OSError("blocked by the benchmark sandbox")

    class NoSocket(socket.socket):
        def __init__(self, *args, **kwargs):
            raise OSError("network access is blocked by the benchmark sandbox")

    socket.socket = NoSocket
    for name in ("create_connection", "create_server", "getaddrinfo", "socketpair", "fromfd"):
        setattr(socket, name, blocked)
    for name in (
        "system", "popen", "fork", "forkpty", "kill", "killpg", "execv", "execve", "execvp",
        "execvpe", "execl", "execle", "execlp", "execlpe", "spawnv", "spawnve", "spawnvp",
        "spawnvpe", "posix_spawn", "posix_spawnp", "remove", "unlink", "rmdir", "removedirs",
        "rename", "renames", "replace", "truncate", "chmod", "chown", "lchown", "fchmod",
        "fchown", "putenv", "setuid", "setgid", "chroot",
    ):
        if hasattr(os, name):
            setattr(os, name, blocked)
    shutil.rmtree = shutil.move = shutil.chown = blocked
    subprocess.Popen = blocked
    return network


def _sandbox_exit(nonce, write=__import__("os").write, sys=__import__("sys")):
    """Mark a run that reached its end: the parent counts a pass only when it sees this line last."""
    sys.stdout.flush()
    write(1, ("\n" + nonce + "\n").encode())
