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
import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any

from .memory import collection_paused
from .model_text import model_text

_LOCK = threading.Lock()
ONLY_AST = 0x400  # PyCF_ONLY_AST
APART = 256 * 1024   # characters: a larger source is compiled in a child process, off this one's lock
POLL = 0.02          # seconds: how often the cancellation is checked while a child compiles


def _source(source: str) -> str:
    """``source`` as Python reads the file, for its errors: lone surrogates as U+FFFD, a leading byte order mark
    skipped (the lines stay the lines; columns on line 1 move, so ``parse``, read for positions, keeps it)."""
    return model_text(source[1:] if source.startswith("\ufeff") else source)


def parse(source: str) -> ast.Module:
    with _LOCK:
        return ast.parse(model_text(source))


def check_syntax(source: str, filename: str = "<document>", check: Callable[[int], None] | None = None) -> None:
    """``compile(source, filename, "exec", flags=PyCF_ONLY_AST)`` for its errors only (the parser's): raises as
    ``compile`` does; its warnings are not printed. ``check(0)`` (a job's cancellation) is called while a child
    compiles: what it raises (``Cancelled``) is raised here, the child killed."""
    _check(_source(source), filename, ONLY_AST, check)


def compile_code(source: str, check: Callable[[int], None] | None = None) -> None:
    """``compile(source)`` to bytecode, for its errors only: the parser's, and those only the compiler raises
    (``'return' outside function``, ``'break' outside loop``, ``'await' outside async function``, a misplaced
    ``from __future__``). As fast as ``parse`` (no Python AST objects are built). Its warnings (an invalid escape
    sequence in the user's string) are not printed. ``check``: as ``check_syntax``'s."""
    _check(_source(source), "<document>", 0, check)


def _check(source: str, filename: str, flags: int, check: Callable[[int], None] | None) -> None:
    if len(source) > APART and _check_apart(source, filename, flags, check):
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


def _check_apart(source: str, filename: str, flags: int, check: Callable[[int], None] | None = None) -> bool:
    """``compile``'s verdict on ``source`` from a child process: True when it compiles, else what it raised is raised
    here; a child that ended without a verdict (out of memory or stack on a pathological nesting) is
    ``MemoryError``, Python giving up. False when no child could be started (the caller compiles here). ``check(0)``
    is called every ``POLL`` seconds while the child runs; what it raises is raised here once the child is killed
    (a cancelled job does not wait for a compile whose verdict nobody reads)."""
    data = source.encode("utf-8", "surrogatepass")
    try:
        read, write = os.pipe()
        try:
            child = subprocess.Popen([sys.executable, "-I", "-S", "-c", _CHILD, str(flags),
                                      str(sys.getrecursionlimit()), filename],
                                     stdin=read, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except BaseException:
            os.close(write)
            raise
        finally:
            os.close(read)
    except (OSError, ValueError):
        return False
    # the source goes in from a thread (a pipe holds 64 KiB), so that this one polls the cancellation meanwhile
    feeder = threading.Thread(target=_feed, args=(write, data), name="pyparse-feed", daemon=True)
    feeder.start()
    try:
        while True:
            try:
                stdout, stderr = child.communicate(timeout=POLL if check is not None else None)
                break
            except subprocess.TimeoutExpired:
                assert check is not None
                check(0)
    except BaseException:
        child.kill()
        child.communicate()
        raise
    finally:
        feeder.join()
    out: Any
    try:
        out = json.loads(stdout) if child.returncode == 0 else ["MemoryError", stderr.decode()[-200:]]
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


def _feed(fd: int, data: bytes) -> None:
    """Write ``data`` to the pipe ``fd`` and close it; a child that was killed (or ended) takes the rest."""
    try:
        with open(fd, "wb", closefd=True) as pipe:
            pipe.write(data)
    except OSError:   # BrokenPipeError: the child is gone (killed when the job was cancelled)
        pass
