"""Where "Fill holes" looks (engine/holes.py, engine/deliberate.py): the selection, else the function or
class at the cursor, the file only when asked; a deliberate ``pass``/``...`` is no hole unless selected."""

import pytest

from engine.holes import Source, scoped_blanks
from engine.languages import spec_for
from engine.targets import survey

DOC = '''import abc
from typing import Protocol, overload


class Resource:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def read(self):
        return 1


class Error(Exception):
    pass


class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self):
        ...


class Reader(Protocol):
    def read(self) -> bytes:
        ...


@overload
def parse(x: int) -> int: ...
@overload
def parse(x: str) -> str: ...
def parse(x):
    return x


def todo(a, b):
    pass


def cleanup():
    try:
        run()
    except OSError:
        pass
'''


def labels(start: int, end: int | None = None, whole_file: bool = False, text: str = DOC) -> list[str]:
    src = Source(spec_for("python"), text)
    _, blanks = scoped_blanks(src, start, start if end is None else end, whole_file)
    return [text[b.start:b.end].strip() for b in blanks]


def test_deliberate_stubs_are_no_holes_in_the_whole_file():
    assert labels(0, whole_file=True) == ["pass"]              # only todo()'s body
    found = scoped_blanks(Source(spec_for("python"), DOC), 0, 0, True)[1]
    assert [DOC.count("\n", 0, b.start) for b in found] == [DOC.count("\n", 0, DOC.index("def todo")) + 1]


@pytest.mark.parametrize("where", ["def __exit__", "class Error", "def area", "def read(self) -> bytes",
                                   "def parse(x: int)", "except OSError"])
def test_a_deliberate_stub_is_a_hole_only_when_selected(where):
    at = DOC.index(where)
    assert labels(at) == []                                    # the cursor in it: nothing to fill
    line_end = DOC.index("\n", DOC.index("\n", at) + 1)
    selected = labels(at, line_end + 1)
    assert selected in ([], ["pass"], ["..."])
    if where != "except OSError":                              # `except: pass` is never a hole
        assert selected


def test_the_cursor_in_a_function_without_holes_touches_nothing_else():
    assert labels(DOC.index("return self")) == []              # not __exit__'s pass, not todo()'s
    assert labels(DOC.index("return 1")) == []


def test_the_cursor_in_the_function_with_the_hole():
    assert labels(DOC.index("def todo") + 4) == ["pass"]


def test_module_level_cursor_fills_nothing_unless_the_file_is_asked_for():
    at = DOC.index("import abc")
    assert labels(at) == []
    assert labels(at, whole_file=True) == ["pass"]


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_crlf_and_emoji_documents(eol):
    text = eol.join(["s = '😀'", "def f():", "\tpass", "class E(Exception):", "\tpass", ""])
    assert labels(text.index("def f"), text=text) == ["pass"]
    assert labels(text.index("class E"), text=text) == []


def test_survey_offers_no_fill_for_a_cursor_beside_a_deliberate_pass():
    at = DOC.index("def __exit__")
    assert survey(DOC, "python", at, at).blanks == ()


@pytest.mark.parametrize("language,text,at,kept", [
    # seen on the real server: "Complete body of addTodo" offered to replace `todos.push(todo);`
    ("javascript", "function addTodo(todo) {\n  todos.push(todo);\n}\n", "todos.push", "todos.push(todo);"),
    ("typescript", "function label(): string {\n  return 'Not implemented yet';\n}\n", "return",
     "return 'Not implemented yet';"),
    ("python", 'def f():\n    log("raise NotImplementedError")\n', "log", 'log("raise NotImplementedError")'),
    ("python", "def sqrt(x):\n    if x < 0:\n        raise NotImplementedError('complex')\n", "if x",
     "raise NotImplementedError('complex')"),
])
def test_complete_body_keeps_statements_that_only_mention_a_stub(language, text, at, kept):
    """A statement is a stub only when it is the not-implemented raise, throw, panic or macro itself; the body
    of a function with real code is continued after it, never replaced."""
    body = survey(text, language, text.index(at), text.index(at)).body
    assert body is not None and body.start == body.end  # inserted after the last statement
    assert kept in text[:body.start]


@pytest.mark.parametrize("language,text,stub", [
    ("javascript", "function f() {\n  throw new Error('not implemented');\n}\n", "throw new Error('not implemented');"),
    ("javascript", "function f() {\n  throw new Error(\n    'TODO');\n}\n", "throw new Error(\n    'TODO');"),
    ("python", "def f():\n    raise NotImplementedError\n", "raise NotImplementedError"),
    ("go", 'package m\n\nfunc f() int {\n\tpanic("not implemented")\n}\n', 'panic("not implemented")'),
    ("rust", "fn f() -> u8 {\n    todo!()\n}\n", "todo!()"),
])
def test_complete_body_still_replaces_a_stub(language, text, stub):
    at = text.index(stub)
    body = survey(text, language, at, at).body
    assert body is not None and text[body.start:body.end].strip() == stub


@pytest.mark.parametrize("language,text", [
    ("python", "def f():\r\n    # TODO: x\r\n    return 1\r\n"),
    ("javascript", "function f() {\r\n  // TODO: x\r\n  return 1;\r\n}\r\n"),
    ("go", "package m\r\n\r\nfunc f() int {\r\n\t// TODO: x\r\n\treturn 1\r\n}\r\n"),
    ("rust", "fn f() -> u8 {\r\n    // TODO: x\r\n    1\r\n}\r\n"),
])
def test_a_todo_hole_in_a_crlf_document_leaves_its_line_break_whole(language, text):
    """Python's, Go's and Rust's grammars end a line comment after the CR of a CRLF: the hole took the CR, and its
    fill left the line ending in a bare LF (and the model read the TODO line with a CR of its own)."""
    at = text.index("TODO")
    (hole,) = survey(text, language, at, at).blanks
    assert text[hole.end:hole.end + 2] == "\r\n" and hole.context.endswith("TODO: x\r\n")
    assert "\r" not in text[hole.start:hole.end] and "\r\r" not in hole.context


@pytest.mark.parametrize("language,text", [
    ("javascript", "function f() {\r\n  // note\r\n}\r\n"),
    ("go", "package m\r\n\r\nfunc f() int {\r\n\t// note\r\n}\r\n"),
    ("rust", "fn f() -> u8 {\r\n    // note\r\n}\r\n"),
])
def test_complete_body_after_a_comment_in_a_crlf_document_goes_after_its_line_break(language, text):
    at = text.index("note")
    body = survey(text, language, at, at).body
    assert body is not None and text[body.start:body.start + 2] == "\r\n" and body.lead == "\r\n"


@pytest.mark.parametrize("language,text,kept", [
    ("python", "def f(x):\n    y = x  # note\n", "    y = x  # note\n"),
    ("python", 'def f(x):\n    """Doc."""  # note\n', '    """Doc."""  # note\n'),
    ("javascript", "function f(x) {\n  const y = x; // note\n}\n", "  const y = x; // note\n"),
    ("go", "package m\n\nfunc f(x int) {\n\ty := x /* a */ // note\n}\n", "\ty := x /* a */ // note\n"),
    ("rust", "fn f(x: u8) {\r\n    let y = x; // note\r\n}\r\n", "    let y = x; // note\r\n"),
])
def test_complete_body_goes_after_the_comment_that_ends_the_last_line(language, text, kept):
    """The body was continued between the last statement and its comment: the user's comment moved onto the
    generated line (`y = x` then `return y  # note`)."""
    body = survey(text, language, text.index("x"), text.index("x")).body
    assert body is not None and (text[:body.start] + body.lead).endswith(kept)


@pytest.mark.parametrize("language,text,replaced", [
    # a body of TODO markers only, or TODO lines right above the stub: "Complete body" kept them above the code it
    # wrote (a finished function still saying "TODO: implement"); they are the stub, replaced as "Fill holes" does
    ("javascript", "function f(a) {\n  // TODO: implement\n}\n", "  // TODO: implement"),
    ("go", "package m\n\nfunc F(a int) int {\n\t// TODO: implement\n\t// FIXME\n}\n", "\t// TODO: implement\n\t// FIXME"),
    ("rust", "fn f(a: u8) -> u8 {\r\n    // TODO: implement\r\n    todo!()\r\n}\r\n",
     "    // TODO: implement\r\n    todo!()"),
    ("python", "def f(a):\n    # TODO: implement\n    pass\n", "    # TODO: implement\n    pass"),
    ("python", 'def f(a):\n    """Doc \U0001f600."""\n\t# TODO: implement\n\tpass\n', "\t# TODO: implement\n\tpass"),
    ("typescript", "function f(a: number): number {\n  // TODO\n  throw new Error('not implemented');\n}\n",
     "  // TODO\n  throw new Error('not implemented');"),
])
def test_complete_body_replaces_the_todo_markers_of_its_stub(language, text, replaced):
    at = text.index("TODO")
    body = survey(text, language, at, at).body
    assert body is not None and text[body.start:body.end] == replaced and not body.lead
    assert body.start == text.rfind("\n", 0, at) + 1   # from its line's start: the indentation is the hole's


@pytest.mark.parametrize("language,text", [
    ("javascript", "function f(a) {\n  // sum the items of a\n}\n"),              # it says what to write: kept
    ("javascript", "function f(a) {\n  // TODO: implement\n  // sum the items of a\n}\n"),   # not only markers
    ("go", "package m\n\nfunc F(a int) int {\n\t// TODO: implement\n\n\t// FIXME\n}\n"),  # a blank line apart
    ("python", "def f(a):\n    # TODO: implement\n\n    pass\n"),
    ("rust", "fn f(a: u8) -> u8 {\n    let b = a; // TODO: check\n    todo!()\n}\n"),   # after code on its line
])
def test_complete_body_keeps_comments_that_are_not_a_stubs_markers(language, text):
    at = text.index("(a")
    body = survey(text, language, at, at).body
    assert body is not None and "TODO" not in text[body.start:body.end] and "sum" not in text[body.start:body.end]


@pytest.mark.parametrize("language,text,read", [
    # WordPress' translation function: `__('Save')` was offered as "Fill 1 hole", its name the hole
    ("javascript", "import { __ } from '@wordpress/i18n';\nfunction Title() {\n  const label = __('Save');\n"
                   "  const x = g(__);\n  return label;\n}\n", "g(__)"),
    ("python", "def f(pairs):\n    for a, __ in pairs:\n        g(a, __ + 1)\n", "__ + 1"),
    ("python", "def f(__):\n    __ = g(__)\n    return __(1)\n", "g(__)"),
    ("go", "package m\n\nfunc f(__ int) int {\n\t__ := 1\n\treturn g(__)\n}\n", "g(__)"),
    ("rust", "fn f(__: u8) -> u8 {\n    let (a, __) = p;\n    g(__)\n}\n", "g(__)"),
    ("typescript", "function f(__: number): number {\n  const y = g(__);\n  return y;\n}\n", "g(__)"),
])
def test_a_double_underscore_is_a_hole_only_where_it_is_read(language, text, read):
    """A ``__`` that is called, imported, a parameter or bound by an assignment or a loop is the user's code (a
    translation function, a throwaway name), not a placeholder: only a ``__`` read as a value is a hole."""
    at = text.index(read)
    found = survey(text, language, at, at).blanks
    assert [(b.start, b.end) for b in found] == [(text.index("__", at), text.index("__", at) + 2)]


@pytest.mark.parametrize("language,stub,hole", [
    ("javascript", 'throw new Error("Todo not found");', False),   # a to-do app's own error
    ("javascript", 'throw new Error("invalid todo id");', False),
    ("javascript", 'throw new Error("TODO");', True),
    ("javascript", "throw new Error('todo: parse the header');", True),
    ("javascript", 'throw new Error("Method not implemented.");', True),
    ("typescript", 'throw new Error(`TODO ${name}`);', True),
    ("go", 'panic("invalid todo state")', False),
    ("go", 'panic("TODO")', True),
    ("go", 'panic("todo: later")', True),
    ("go", 'panic("unimplemented")', True),
])
def test_a_throw_or_panic_is_a_hole_when_its_message_says_it_is_not_written_yet(language, stub, hole):
    if language == "go":
        text = f"package m\n\nfunc get(id int) int {{\n\tif id < 0 {{\n\t\t{stub}\n\t}}\n\treturn id\n}}\n"
    else:
        text = f"function get(id) {{\n  if (id < 0) {{\n    {stub}\n  }}\n  return id;\n}}\n"
    at = text.index("return")
    found = survey(text, language, at, at).blanks
    assert [text[b.start:b.end].strip() for b in found] == ([stub] if hole else [])
