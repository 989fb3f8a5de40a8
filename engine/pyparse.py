"""Python's own parser and compiler, one call at a time in a process. CPython 3.11 keeps the AST builder's
recursion depth per interpreter, not per thread, so two threads parsing at once (several engines in one process:
TCP sessions, a benchmark's simulated editors) can fail with ``SystemError: AST constructor recursion depth
mismatch``. A lone surrogate (an editor may hold one) is read as U+FFFD, one character for one: the encoding
error would otherwise stand for every text, and hide the syntax. So is a byte order mark that starts the document
(a client may send a file's text with it): Python reading the file skips it, ``compile`` of the text calls it an
invalid character on line 1, and that error stood for every text too."""

from __future__ import annotations

import ast
import threading
import warnings

from .model_text import model_text

_LOCK = threading.Lock()
ONLY_AST = 0x400  # PyCF_ONLY_AST
def _source(source: str) -> str:
    """``source`` as Python reads the file, for its errors: lone surrogates as U+FFFD, a leading byte order mark
    skipped (the lines stay the lines; columns on line 1 move, so ``parse``, read for positions, keeps it)."""
    return model_text(source[1:] if source.startswith("\ufeff") else source)


def parse(source: str) -> ast.Module:
    with _LOCK:
        return ast.parse(model_text(source))


def compile_ast(source: str, filename: str) -> ast.AST:
    """``compile(source, filename, "exec", flags=PyCF_ONLY_AST)``: raises as ``compile`` does."""
    with _LOCK:
        return compile(_source(source), filename, "exec", dont_inherit=True, flags=ONLY_AST)


def compile_code(source: str) -> None:
    """``compile(source)`` to bytecode, for its errors only: the parser's, and those only the compiler raises
    (``'return' outside function``, ``'break' outside loop``, ``'await' outside async function``, a misplaced
    ``from __future__``). As fast as ``parse`` (no Python AST objects are built). Its warnings (an invalid escape
    sequence in the user's string) are not printed."""
    with _LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile(_source(source), "<document>", "exec", dont_inherit=True)
