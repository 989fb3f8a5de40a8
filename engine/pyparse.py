"""Python's own parser and compiler, one call at a time in a process. CPython 3.11 keeps the AST builder's
recursion depth per interpreter, not per thread, so two threads parsing at once (several engines in one process:
TCP sessions, a benchmark's simulated editors) can fail with ``SystemError: AST constructor recursion depth
mismatch``. A lone surrogate (an editor may hold one) is read as U+FFFD, one character for one: the encoding
error would otherwise stand for every text, and hide the syntax. So is a byte order mark that starts the document
(a client may send a file's text with it): Python reading the file skips it, ``compile`` of the text calls it an
invalid character on line 1, and that error stood for every text too."""

from __future__ import annotations

import ast
import contextlib
import gc
import threading
import warnings
from collections.abc import Iterator

from .model_text import model_text

_LOCK = threading.Lock()
ONLY_AST = 0x400  # PyCF_ONLY_AST
_PAUSES = threading.Lock()
_paused = [0, False]   # callers inside ``collection_paused``, and whether the collector was on when the first came


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """The cyclic garbage collector off meanwhile (on again after the last caller, if it was on). An AST is tens of
    thousands of objects: each thousand made starts a collection, and every few parses of a large file one of every
    object of the process (a loaded model has hundreds of thousands), which cost more than the parse itself. An
    AST has no cycles: it is freed as its last reference goes, collector or not."""
    with _PAUSES:
        if not _paused[0]:
            _paused[1] = gc.isenabled()
            gc.disable()
        _paused[0] += 1
    try:
        yield
    finally:
        with _PAUSES:
            _paused[0] -= 1
            if not _paused[0] and _paused[1]:
                gc.enable()


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
