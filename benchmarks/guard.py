"""The runner a sandboxed test program runs under: it drops to the sandbox user, binds the limits, then runs the program.

Standard library only: ``sandbox.py`` passes this source to ``python -I -S -B -c`` with the arguments
``PROGRAM TOKEN_FD RESULT_FD NETWORK UID GID CPU_S MEMORY_BYTES FILE_BYTES OPEN_FILES``. In order, before the
program's first line: a private network namespace when bubblewrap did not give one (NETWORK is not
"namespace"); switch to UID/GID when started as root (inside bubblewrap, which granted only
CAP_SETUID/CAP_SETGID for this); read the harness' token from TOKEN_FD and close it; set the rlimits
(RLIMIT_NPROC 0: no new process or thread, binding because the user is not root); a seccomp filter (``seccomp.py``); patches that turn
accidents (``os.system``, ``shutil.rmtree``, ...) into clear errors. A pass is exit status 0 *and*
the token written to RESULT_FD after the program's last line: no file the program can read holds it.
"""

import os
import sys


def _drop_user(uid, gid):
    """Become uid/gid for good when root; afterwards no capability is left."""
    if os.getuid() != 0 or uid == 0:
        return
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)


def _read_token(fd):
    chunks = []
    while True:
        chunk = os.read(fd, 256)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def _set_limits(cpu_s, memory_bytes, file_bytes, open_files):
    import resource

    for limit, value in (
        (resource.RLIMIT_CPU, cpu_s),
        (resource.RLIMIT_AS, memory_bytes),
        (resource.RLIMIT_FSIZE, file_bytes),
        (resource.RLIMIT_NOFILE, open_files),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, 0),
    ):
        try:
            resource.setrlimit(limit, (value, value))
        except (ValueError, OSError):
            pass  # a limit the platform refuses; the harness' wall-clock timeout still holds


def _private_network():
    """A network namespace of our own (only a loopback that is down), when the kernel lets us make one."""
    import ctypes

    clone_newnet, clone_newuser = 0x40000000, 0x10000000
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.unshare(clone_newnet) == 0 or libc.unshare(clone_newuser | clone_newnet) == 0
    except (OSError, AttributeError):
        return False


def _patch_accidents():
    """Clear errors for the calls an honest program has no business making (a convenience: seccomp and the
    mount namespace are what hold; a program that reloads these modules meets those)."""
    import shutil
    import socket
    import subprocess

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


def _run(path, result_fd, token, write=os.write):
    """Run the program as ``__main__``; after its last line, hand the token to the harness."""
    with open(path, encoding="utf-8") as f:
        code = compile(f.read(), path, "exec")
    sys.argv = [path]
    exec(code, {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__})
    sys.stdout.flush()
    sys.stderr.flush()
    write(result_fd, token)


def main(argv, install_seccomp):
    """Run as ``main(sys.argv[1:], install_seccomp)`` by the source ``sandbox.py`` assembles."""
    path, token_fd, result_fd, network, uid, gid, cpu_s, memory, file_bytes, open_files = argv
    if network != "namespace":
        network = "namespace" if _private_network() else "patched"
    _drop_user(int(uid), int(gid))
    token = _read_token(int(token_fd))
    _set_limits(int(cpu_s), int(memory), int(file_bytes), int(open_files))
    seccomp = "seccomp" if install_seccomp(os.getpid(), no_processes=os.getuid() == 0) else "no-seccomp"
    os.write(int(result_fd), f"{network} {seccomp}\n".encode())  # informative only: a pass needs the token
    _patch_accidents()
    _run(path, int(result_fd), token)
