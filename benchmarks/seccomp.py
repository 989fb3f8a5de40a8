"""A seccomp filter for the sandbox runner: no sockets, no exec, no ptrace, no namespaces, signals only to itself.

Standard library only (its source is sent along with ``guard.py``). ``install_seccomp(pid)`` sets
no_new_privs and loads a classic-BPF filter on x86_64 and aarch64 that answers EPERM to: socket and
socketpair (Unix sockets as much as the network), execve/execveat (``/bin/sh`` however it is
reached), ptrace and process_vm_readv/writev, unshare/setns/mount, io_uring (which could issue
those without a system call), pidfd_open/pidfd_send_signal; kill, tkill, tgkill and
rt_(tg)sigqueueinfo are allowed only towards ``pid`` itself (``os.abort()`` still raises SIGABRT).
Any other ABI (x32, 32-bit) is refused outright; fork and clone too when asked. Returns False where it cannot be installed.
"""

import ctypes
import errno
import platform

_ALLOW, _DENY = 0x7FFF0000, 0x00050000 | errno.EPERM
_ARCHES = {  # machine: (AUDIT_ARCH_*, denied system calls, self-only signal calls, process creation)
    "x86_64": (0xC000003E, (41, 53, 59, 322, 101, 310, 311, 272, 308, 165, 425, 424, 434),
               (62, 200, 234, 129, 297), (56, 57, 58, 435)),
    "aarch64": (0xC00000B7, (198, 199, 221, 281, 117, 270, 271, 97, 268, 40, 425, 424, 434),
                (129, 130, 131, 138, 240), (220, 435)),
}


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def _load(offset):
    return (0x20, 0, 0, offset)          # BPF_LD | BPF_W | BPF_ABS: a 32-bit word of seccomp_data


def _jeq(k, jt, jf):
    return (0x15, jt, jf, k)             # BPF_JMP | BPF_JEQ | BPF_K


def _ret(k):
    return (0x06, 0, 0, k)               # BPF_RET | BPF_K


def filter_code(machine, pid, no_processes=False):
    """The filter's instructions for ``machine`` (``platform.machine()``), or None when unsupported;
    ``no_processes`` also refuses fork/clone (for a runner left as root, where RLIMIT_NPROC does not bind)."""
    if machine not in _ARCHES:
        return None
    arch, denied, self_only, processes = _ARCHES[machine]
    denied = denied + processes if no_processes else denied
    code = [_load(4), _jeq(arch, 1, 0), _ret(_DENY), _load(0)]
    if machine == "x86_64":
        code += [(0x35, 0, 1, 0x40000000), _ret(_DENY)]   # BPF_JGE: the x32 ABI
    for nr in denied:
        code += [_jeq(nr, 0, 1), _ret(_DENY)]
    for nr in self_only:  # allowed only when the low word of the first argument (the target) is pid
        code += [_jeq(nr, 0, 4), _load(16), _jeq(pid, 1, 0), _ret(_DENY), _ret(_ALLOW)]
    return code + [_ret(_ALLOW)]


def install_seccomp(pid, no_processes=False):
    """Load the filter into this process (and anything it could start); True once it holds."""
    code = filter_code(platform.machine(), pid, no_processes)
    if code is None:
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    filters = (_Filter * len(code))(*[_Filter(*instruction) for instruction in code])
    program = _Program(len(code), filters)
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        return False
    return libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(program), 0, 0) == 0
