"""Python's own parser and compiler, one call at a time in a process. CPython 3.11 keeps the AST builder's
recursion depth per interpreter, not per thread, so two threads parsing at once (several engines in one process:
TCP sessions, a benchmark's simulated editors) can fail with ``SystemError: AST constructor recursion depth
mismatch``. A lone surrogate (an editor may hold one) is read as U+FFFD, one character for one: the encoding
error would otherwise stand for every text, and hide the syntax. So is a byte order mark that starts the document
(a client may send a file's text with it): Python reading the file skips it, ``compile`` of the text calls it an
invalid character on line 1, and that error stood for every text too.

A source over ``APART`` characters is checked for its errors in a child process (``check_syntax``, ``compile_code``):
``compile`` is one C call that holds the interpreter's lock for its whole length (a 5 MB document: 1-3 s), and
with it the server's event loop, so no request, ``$/cancelRequest`` or ``didChange`` was read meanwhile. The child is
this interpreter, given the source, the flags and the recursion limit, and its verdict is raised here as ``compile``
raises it (the same exception type, message and position)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import threading
import warnings
from typing import Any

from .memory import collection_paused
from .model_text import model_text

_LOCK = threading.Lock()
ONLY_AST = 0x400  # PyCF_ONLY_AST
APART = 256 * 1024   # characters: a larger source is compiled in a child process, off this one's lock


def _source(source: str) -> str:
    """``source`` as Python reads the file, for its errors: lone surrogates as U+FFFD, a leading byte order mark
    skipped (the lines stay the lines; columns on line 1 move, so ``parse``, read for positions, keeps it)."""
    return model_text(source[1:] if source.startswith("\ufeff") else source)


def parse(source: str) -> ast.Module:
    with _LOCK:
        return ast.parse(model_text(source))


def check_syntax(source: str, filename: str = "<document>") -> None:
    """``compile(source, filename, "exec", flags=PyCF_ONLY_AST)`` for its errors only (the parser's): raises as
    ``compile`` does; its warnings are not printed."""
    _check(_source(source), filename, ONLY_AST)


def compile_code(source: str) -> None:
    """``compile(source)`` to bytecode, for its errors only: the parser's, and those only the compiler raises
    (``'return' outside function``, ``'break' outside loop``, ``'await' outside async function``, a misplaced
    ``from __future__``). As fast as ``parse`` (no Python AST objects are built). Its warnings (an invalid escape
    sequence in the user's string) are not printed."""
    _check(_source(source), "<document>", 0)


def _check(source: str, filename: str, flags: int) -> None:
    if len(source) > APART and _check_apart(source, filename, flags):
        return
    # the AST's objects (flags ONLY_AST) are made and dropped without the cyclic collector walking them meanwhile
    with _LOCK, warnings.catch_warnings(), collection_paused():
        warnings.simplefilter("ignore")
        compile(source, filename, "exec", dont_inherit=True, flags=flags)


# The child: compile stdin's source with argv's flags and recursion limit, and write what it raised as JSON. Without
# the cyclic collector (the AST's millions of objects are made and dropped: 1.3 s for 5 MB, 4 s with collections) and
# without freeing them at exit.
_CHILD = """
import gc, json, os, sys, warnings
gc.disable()
warnings.simplefilter("ignore")
flags, limit, filename = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
sys.setrecursionlimit(limit)
source = sys.stdin.buffer.read().decode("utf-8", "surrogatepass")
try:
    compile(source, filename, "exec", dont_inherit=True, flags=flags)
    out = None
except SyntaxError as e:
    out = [type(e).__name__, e.msg, e.lineno, e.offset, e.text, e.end_lineno, e.end_offset]
except (ValueError, RecursionError, MemoryError, SystemError) as e:
    out = [type(e).__name__, str(e)]
sys.stdout.write(json.dumps(out))
sys.stdout.flush()
os._exit(0)
"""
_SYNTAX = {"SyntaxError": SyntaxError, "IndentationError": IndentationError, "TabError": TabError}
_OTHER = {"ValueError": ValueError, "RecursionError": RecursionError, "MemoryError": MemoryError,
          "SystemError": SystemError}


def _check_apart(source: str, filename: str, flags: int) -> bool:
    """``compile``'s verdict on ``source`` from a child process: True when it compiles, else what it raised is raised
    here; a child that ended without a verdict (out of memory or stack on a pathological nesting) is
    ``MemoryError``, Python giving up. False when no child could be started (the caller compiles here)."""
    try:
        done = subprocess.run([sys.executable, "-I", "-S", "-c", _CHILD, str(flags), str(sys.getrecursionlimit()),
                               filename], input=source.encode("utf-8", "surrogatepass"), capture_output=True,
                              check=False)
    except (OSError, ValueError):
        return False
    out: Any
    try:
        out = json.loads(done.stdout) if done.returncode == 0 else ["MemoryError", done.stderr.decode()[-200:]]
    except ValueError:
        out = ["MemoryError", "the child process wrote no verdict"]
    if out is None:
        return True
    if out[0] in _SYNTAX:
        name, msg, lineno, offset, text, end_lineno, end_offset = out
        error = _SYNTAX[name](msg, (filename, lineno, offset, text))
        error.end_lineno, error.end_offset = end_lineno, end_offset
        raise error
    raise _OTHER.get(out[0], MemoryError)(out[1])
