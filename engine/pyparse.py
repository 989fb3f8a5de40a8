"""Python's own parser, one call at a time in a process. CPython 3.11 keeps the AST builder's recursion depth per
interpreter, not per thread, so two threads parsing at once (several engines in one process: TCP sessions, a
benchmark's simulated editors) can fail with ``SystemError: AST constructor recursion depth mismatch``."""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()
ONLY_AST = 0x400  # PyCF_ONLY_AST


def parse(source: str) -> ast.Module:
    with _LOCK:
        return ast.parse(source)


def compile_ast(source: str, filename: str) -> ast.AST:
    """``compile(source, filename, "exec", flags=PyCF_ONLY_AST)``: raises as ``compile`` does."""
    with _LOCK:
        return compile(source, filename, "exec", dont_inherit=True, flags=ONLY_AST)
