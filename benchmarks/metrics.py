"""Scoring one fill (exact match, syntax) and summarising many (rates, percentiles, means)."""

from __future__ import annotations

import ast
import math
import warnings
from collections.abc import Sequence


def normalise(code: str) -> str:
    """Code with trailing whitespace removed from every line and from the end (indentation kept)."""
    return "\n".join(line.rstrip() for line in code.replace("\r\n", "\n").split("\n")).rstrip("\n")


def exact_match(completion: str, reference: str) -> bool:
    return normalise(completion) == normalise(reference)


def syntax_valid(document: str, language: str = "python") -> bool | None:
    """Whether the filled document parses: Python's own parser for Python, tree-sitter (no ERROR or
    MISSING node) for the engine's other languages; None for a language it has no grammar for (plain text)."""
    if language != "python":
        from engine.languages import PLAIN, parse, spec_for

        if spec_for(language) is PLAIN:
            return None
        tree = parse(spec_for(language), document)
        return tree is not None and not tree.root_node.has_error
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning for odd escapes is not an error
            ast.parse(document)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100), linear between closest ranks (numpy's default); None when empty."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def rate(flags: Sequence[bool | None]) -> float | None:
    """The share of true flags among those known (None: not measured for that one)."""
    known = [f for f in flags if f is not None]
    return sum(1 for f in known if f) / len(known) if known else None


def latency_summary(ms: Sequence[float]) -> dict:
    """``{"p50", "p95", "mean", "max", "n"}`` in milliseconds, rounded to 0.1 ms."""

    def r(x: float | None) -> float | None:
        return None if x is None else round(x, 1)

    return {"p50": r(percentile(ms, 50)), "p95": r(percentile(ms, 95)), "mean": r(mean(ms)),
            "max": r(max(ms) if ms else None), "n": len(ms)}
