"""Python's own parser and compiler, one call at a time in a process. CPython 3.11 keeps the AST builder's
recursion depth per interpreter, not per thread, so two threads parsing at once (several engines in one process:
TCP sessions, a benchmark's simulated editors) can fail with ``SystemError: AST constructor recursion depth
mismatch``."""

from __future__ import annotations

import ast
import threading
import warnings

_LOCK = threading.Lock()
ONLY_AST = 0x400  # PyCF_ONLY_AST


def parse(source: str) -> ast.Module:
    with _LOCK:
        return ast.parse(source)


def compile_ast(source: str, filename: str) -> ast.AST:
    """``compile(source, filename, "exec", flags=PyCF_ONLY_AST)``: raises as ``compile`` does."""
    with _LOCK:
        return compile(source, filename, "exec", dont_inherit=True, flags=ONLY_AST)


def compile_code(source: str) -> None:
    """``compile(source)`` to bytecode, for its errors only: the parser's, and those only the compiler raises
    (``'return' outside function``, ``'break' outside loop``, ``'await' outside async function``, a misplaced
    ``from __future__``). As fast as ``parse`` (no Python AST objects are built). Its warnings (an invalid escape
    sequence in the user's string) are not printed."""
    with _LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile(source, "<document>", "exec", dont_inherit=True)
