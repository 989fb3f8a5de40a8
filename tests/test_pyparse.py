"""Python's own parser and compiler (engine/pyparse.py): a large source's errors come from a child process, exactly as
``compile`` here would raise them."""

import warnings

import pytest

import engine.pyparse as pyparse

_BODY = "".join(f"def f_{i}(a):\n    return [a, {{'k': (1, 2)}}]\n\n" for i in range(7000))   # 320 KB, compiles
_TAILS = {   # appended to _BODY (a BOM before it): each a way Python refuses a source, or one it takes
    "compiles": "",
    "missing colon": "def g(a)\n    return a\n",
    "unexpected indent": "x = 1\n    y = 2\n",
    "tabs": "if x:\n\ty = 1\n        z = 2\n",
    "null byte": "x = '\0'\n",
    "return outside function": "return 1\n",   # the compiler's error only
    "too deep": "x = " + "-" * 200_000 + "1\n",   # the parser gives up: MemoryError
    "too many parentheses": "x = " + "(" * 300 + ")" * 300 + "\n",
    "lone surrogate": "x = '\ud800'\ny = (\n",
    "unterminated triple quote": "x = '''abc\n",
    "misplaced future import": "from __future__ import annotations\n",
    "invalid escape (a warning)": "x = '\\d'\n",
    "nonlocal": "def h():\n    nonlocal q\n",
    "byte order mark": "x = (\n",
}


def _outcome(check, source: str):
    try:
        check(source)
    except SyntaxError as e:
        return type(e), e.msg, e.lineno, e.offset, e.text, e.end_lineno, e.end_offset
    except (ValueError, RecursionError, MemoryError, SystemError) as e:
        return type(e), str(e)
    return None


def _here(flags: int):
    """``compile`` in this process, as pyparse called it for every source before."""
    def check(source: str) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(pyparse._source(source), "<document>", "exec", dont_inherit=True, flags=flags)
    return check


@pytest.mark.parametrize("tail", list(_TAILS))
def test_a_large_source_is_compiled_in_a_child_process_with_the_same_verdict(monkeypatch, tail):
    """``compile`` of a whole document is one C call holding the interpreter's lock: a 5 MB document's held the
    server's event loop 1-7 s (no request, cancel or edit read meanwhile). A source over ``APART`` characters is
    compiled in a child process, and what it raises here is what ``compile`` here raised: type, message, position."""
    source = ("\ufeff" if tail == "byte order mark" else "") + _BODY + _TAILS[tail]
    assert len(source) > pyparse.APART
    expected = [_outcome(_here(pyparse.ONLY_AST), source), _outcome(_here(0), source)]
    compiled_here: list[int] = []

    def spy(source, *args, **kwargs):
        compiled_here.append(len(source))
        return compile(source, *args, **kwargs)
    monkeypatch.setattr(pyparse, "compile", spy, raising=False)
    got = [_outcome(pyparse.check_syntax, source), _outcome(pyparse.compile_code, source)]
    assert got == expected
    assert compiled_here == []   # not in this process


def test_a_small_source_is_compiled_here(monkeypatch):
    """Under ``APART`` characters (the engine's windows, the validators' documents up to 200,000) a child would cost
    more than it saves: ``compile`` runs here, as before."""
    compiled_here: list[int] = []

    def spy(source, *args, **kwargs):
        compiled_here.append(len(source))
        return compile(source, *args, **kwargs)
    monkeypatch.setattr(pyparse, "compile", spy, raising=False)
    source = _BODY[:100_000] + "def g(a)\n"
    assert _outcome(pyparse.check_syntax, source) == _outcome(_here(pyparse.ONLY_AST), source)
    assert compiled_here == [len(source)]


def test_without_a_child_the_source_is_compiled_here(monkeypatch):
    """No interpreter to start (an embedding without ``sys.executable``): the verdict is still given, here."""
    monkeypatch.setattr(pyparse.sys, "executable", "/nonexistent/python")
    source = _BODY + "def g(a)\n"
    assert _outcome(pyparse.check_syntax, source) == _outcome(_here(pyparse.ONLY_AST), source)


def test_a_cancelled_job_kills_the_child_compiling_for_it(monkeypatch, child_processes):
    """A fix-syntax job cancelled (the document changed, ``$/cancelRequest``) while a child compiled its multi-MB
    document waited for the child's verdict (about 2 s on 5 MB), and the next fill on the engine thread waited with
    it. The job's check is polled while the child runs: what it raises (``Cancelled``) is raised here, the child
    killed."""
    from engine.requests import Cancelled

    children = child_processes
    monkeypatch.setattr(pyparse, "_CHILD", "import time\ntime.sleep(600)\n")   # a compile that never ends
    polled = []

    def check(step):
        polled.append(children[-1].poll())
        if len(polled) == 3:
            raise Cancelled(step)
    with pytest.raises(Cancelled):
        pyparse.check_syntax(_BODY + "def g(a)\n", "<document>", check)
    assert polled == [None, None, None]   # asked while the child ran
    assert len(children) == 1 and children[0].returncode not in (None, 0)   # killed and reaped


@pytest.mark.parametrize("tail", ["compiles", "missing colon", "return outside function", "too deep"])
def test_a_child_polled_for_a_cancel_that_never_comes_gives_the_same_verdict(monkeypatch, tail):
    """Polling the job's check (here every millisecond) changes no verdict."""
    monkeypatch.setattr(pyparse, "POLL", 0.001)
    source = _BODY + _TAILS[tail]
    polled: list[int] = []
    expected = [_outcome(_here(pyparse.ONLY_AST), source), _outcome(_here(0), source)]
    got = [_outcome(lambda s: pyparse.check_syntax(s, "<document>", polled.append), source),
           _outcome(lambda s: pyparse.compile_code(s, polled.append), source)]
    assert got == expected
    assert polled   # the check was asked while the children compiled
