"""Resident memory of a process and its children, from /proc (Linux)."""

from __future__ import annotations

from pathlib import Path


def _status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def children(pid: int) -> list[int]:
    """Direct and indirect children of ``pid``."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def process_memory_mb(pid: int) -> dict:
    """``{"rss", "peak"}`` in MiB: current (VmRSS) and high-water (VmHWM), summed over the process tree."""
    pids = [pid, *children(pid)]
    return {"rss": round(sum(_status_kb(p, "VmRSS") for p in pids) / 1024, 1),
            "peak": round(sum(_status_kb(p, "VmHWM") for p in pids) / 1024, 1),
            "processes": len(pids)}
