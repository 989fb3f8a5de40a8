"""Runs ``diffusion-lsp`` on stdio and, at each SIGUSR1, appends one line of memory statistics to a JSONL file.

    python -m benchmarks.memprobe OUT.jsonl          # what ``benchmarks.storm --probe OUT.jsonl`` starts

Each line: VmRSS; glibc's mallinfo2 (heap in use vs free, mmapped, arenas) and the RSS after a
``malloc_trim(0)`` when MEMPROBE_TRIM=1 (what the allocator holds but does not use); Python objects
by type (the 15 that grew most since the first line); the server's registries (documents, jobs,
pygls request futures, progress tokens, cached fixes, threads); with MEMPROBE_TRACEMALLOC=1, the
15 source lines whose Python allocations grew most.
"""

from __future__ import annotations

import collections
import ctypes
import gc
import json
import os
import signal
import sys
import threading
import time
import tracemalloc

_FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _FIELDS]


def _rss_mb() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _malloc() -> dict:
    try:
        libc = ctypes.CDLL(None)
        libc.mallinfo2.restype = _Mallinfo2
        info = libc.mallinfo2()
    except (OSError, AttributeError):
        return {}
    out = {"heap_mb": round(info.arena / 2**20, 1), "in_use_mb": round(info.uordblks / 2**20, 1),
           "free_mb": round(info.fordblks / 2**20, 1), "mmapped_mb": round(info.hblkhd / 2**20, 1),
           "mmapped_blocks": info.hblks, "rss_mb": _rss_mb()}
    if os.environ.get("MEMPROBE_TRIM") == "1":
        libc.malloc_trim(0)
        out["rss_after_trim_mb"] = _rss_mb()
    return out


def _registries(server) -> dict:
    def size(get):
        try:
            return len(get())
        except Exception:  # a registry this version of the server does not have
            return None
    return {"documents": size(lambda: server.documents._docs), "jobs_running": size(lambda: server.jobs._running),
            "engine_latest": size(lambda: server.engine._latest), "fixes": size(lambda: server.actions.fixes),
            "request_futures": size(lambda: server.protocol._request_futures),
            "result_types": size(lambda: server.protocol._result_types),
            "progress_tokens": size(lambda: server.work_done_progress.tokens),
            "threads": threading.active_count()}


class Probe:
    def __init__(self, path: str, server):
        self.path, self.server = path, server
        self.first_types: collections.Counter | None = None
        self.first_trace = None

    def line(self) -> dict:
        gc.collect()
        types = collections.Counter(type(o).__name__ for o in gc.get_objects())
        self.first_types = self.first_types or types
        grew = (types - self.first_types).most_common(15)
        out = {"time": time.time(), "malloc": _malloc(), "registries": _registries(self.server),
               "python_objects": {"total": sum(types.values()), "grew": dict(grew)}}
        if tracemalloc.is_tracing():
            snap = tracemalloc.take_snapshot()
            self.first_trace = self.first_trace or snap
            out["tracemalloc"] = [f"{s.size_diff / 1024:.0f} KiB {s.count_diff:+d} {s.traceback}"
                                  for s in snap.compare_to(self.first_trace, "lineno")[:15]]
        return out

    def write(self, *args) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(self.line()) + "\n")


def main(argv: list[str]) -> int:
    if os.environ.get("MEMPROBE_TRACEMALLOC") == "1":
        tracemalloc.start(4)
    from lsp_server.server import build_server
    server = build_server()
    probe = Probe(argv[0], server)
    signal.signal(signal.SIGUSR1, lambda *a: threading.Thread(target=probe.write, daemon=True).start())
    server.start_io()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
