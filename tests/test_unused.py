"""A local nothing reads (engine/unused.py): a fill that declares a variable its function never reads again, where the
code after the hole needs a name nothing defines, is not offered."""

import pytest

from engine.languages import check_spec, spec_for
from engine.returns import MAX_REGION
from engine.unused import unused_local_check

PYTHON = "def mean(xs):  # 😀 \ud800\n    <>\n    return total / len(xs)\n"
JAVASCRIPT = "function f(a) {\n  <>\n  return b + a;\n}\n"
TYPESCRIPT = "export function f(a: number): number {\n  <>\n  return b + a;\n}\n"
GO = "package m\n\nfunc f(a int) int {\n\t<>\n\treturn b\n}\n"
RUST = "fn f(a: i32) -> i32 {\n    <>\n    b + 1\n}\n"
JAVA = "class A {\n    int f(int a) {\n        <>\n        return b + a;\n    }\n}\n"
C = "int g(void) {\n    int b = 2;\n    return b;\n}\n\nint f(int a) {\n    <>\n    return b + a;\n}\n"
CPP = ("#include <mutex>\nint g() { int b = 2; return b; }\n"
       "int f(int a, std::mutex &m) {\n    <>\n    return b + a;\n}\n")
LUA = "local function f(a)\n  <>\n  return b\nend\n"
LUA_FILE = "local M = {}\n<>\nreturn helper\n"
PERL = "sub f {\n    my $a1 = shift;\n    <>\n    return $total + $a1;\n}\n"
RUBY = "def g\n  total = 1\n  total\nend\n\ndef f(a)\n  <>\n  total + a\nend\n"


def _fits(language: str, document: str, fill: str, eol: str = "\n") -> bool:
    text = document.replace("<>", "", 1).replace("\n", eol)
    at = document.index("<>")
    at += document[:at].count("\n") * (len(eol) - 1)
    spec = check_spec(language) or spec_for(language)
    check = unused_local_check(spec, text, at, at)
    assert check is not None
    return check(fill)


@pytest.mark.parametrize("language, document, fill, fits", [
    ("python", PYTHON, "count = 0", False),               # nothing reads ``count``: ``total`` is what is missing
    ("python", PYTHON, "total = sum(xs)", True),
    ("python", PYTHON, "_ignored = sum(xs)", True),       # unused on purpose
    ("python", PYTHON, "print(xs)", True),                # no declaration
    ("javascript", JAVASCRIPT, "const c = a * 2;", False),
    ("javascript", JAVASCRIPT, "const b = a * 2;", True),
    ("javascript", JAVASCRIPT, "let c = a, b = c;", True),   # ``c`` is read on its own line
    ("typescript", TYPESCRIPT, "const c: number = a * 2;", False),
    ("typescript", TYPESCRIPT, "const b: number = a * 2;", True),
    ("go", GO, "c := a * 2", False),
    ("go", GO, "b, c := a, a", False),                    # Go: one name nothing reads does not compile
    ("go", GO, "b, _ := a, a", True),
    ("rust", RUST, "let c = a * 2;", False),
    ("rust", RUST, "let mut c = a;", False),
    ("rust", RUST, "let b = a * 2;", True),
    ("java", JAVA, "int c = a * 2;", False),
    ("java", JAVA, "int b = a * 2;", True),
    ("c", C, "int c = a;", False),
    ("c", C, "int b = a;", True),
    ("cpp", CPP, "int c = a;", False),
    ("cpp", CPP, "std::lock_guard<std::mutex> lock(m);", True),   # a guard: its constructor is the point
    ("lua", LUA, "local c = a", False),
    ("lua", LUA, "local b = a", True),
    ("lua", LUA_FILE, "local unused = 1", False),          # a file's local nothing else in it reads
    ("lua", LUA_FILE, "local function helper() return M end", True),
    ("perl", PERL, "my $count = 0;", False),
    ("perl", PERL, "my $total = 0;", True),
    ("perl", PERL, "my @total = (1);", True),               # ``$total`` ... read with another sigil: judged read
    ("perl", PERL, "my $self = shift;", True),             # takes an argument off @_
    ("ruby", RUBY, "count = a", False),
    ("ruby", RUBY, "total = a", True),
])
def test_a_declared_local_nothing_reads_is_refused_where_the_code_after_needs_a_name(language, document, fill, fits):
    for eol in ("\n", "\r\n"):
        assert _fits(language, document, fill, eol) is fits, (fill, eol)


@pytest.mark.parametrize("language, document, fill", [
    ("python", "def mean(xs):\n    n = len(xs)\n    <>\n", "total = sum(xs)"),      # new code: readers to come
    ("python", "def mean(xs):\n    <>\n    return 0\n", "total = sum(xs)"),        # nothing after is missing
    ("python", "class A:\n    <>\n    def f(self):\n        return total\n", "x = 1"),  # a class's attribute
    ("python", "<>\nprint(total)\n", "x = 1"),                                  # a module's name
    ("javascript", "function f(a) {\n  <>\n}\n", "const c = a * 2;"),
    ("go", "package m\n\nfunc f(a int) int {\n\tb := a\n\t<>\n\treturn b\n}\n", "c := a * 2"),
    ("java", "class A {\n    int c = 0;\n    <>\n    int f() { return b; }\n}\n", "int x = 1;"),   # a field
])
def test_a_declaration_is_not_judged_in_new_code_or_outside_a_function(language, document, fill):
    """A user writing new code declares a name the lines they have yet to write will read: nothing after the cursor
    reads a name that is missing, and the fill is offered. A class's or a module's names may be read elsewhere."""
    assert _fits(language, document, fill)


def test_a_function_the_region_cuts_is_not_judged():
    """The check reads ``MAX_REGION`` characters each side of the hole: a function that reaches further may read
    the name past them."""
    body = "".join(f"    v{i} = {i}\n" for i in range(MAX_REGION // 10))
    text = f"def f(xs):\n    \n{body}    return total + count\n"
    at = text.index("    \n") + 4
    check = unused_local_check(spec_for("python"), text, at, at)
    assert check is not None and check("count = 0")
    short = f"def f(xs):\n    \n    return total + 1\n"
    at = short.index("    \n") + 4
    assert not unused_local_check(spec_for("python"), short, at, at)("count = 0")


def test_a_typed_line_and_a_whole_line_are_judged_alike():
    text = "function f(a) {\n  con\n  return b + a;\n}\n"
    at = text.index("con\n") + 3
    check = unused_local_check(spec_for("javascript"), text, at, at)
    assert not check("st c = a * 2;") and check("st b = a * 2;")
    at = text.index("  con\n")
    whole = text.replace("  con\n", "")
    check = unused_local_check(spec_for("javascript"), whole, at, at)
    assert not check("  const c = a * 2;\n") and check("  const b = a * 2;\n")


def test_other_languages_and_plain_text_are_not_checked():
    from engine.languages import PLAIN
    assert unused_local_check(None, "x", 0, 0) is None
    assert unused_local_check(PLAIN, "x", 0, 0) is None


def test_an_empty_document_and_a_fill_of_several_lines_are_left_alone():
    check = unused_local_check(spec_for("python"), "", 0, 0)
    assert check is not None and check("x = 1") and check("")
    text = PYTHON.replace("<>", "")
    at = PYTHON.index("<>")
    assert unused_local_check(spec_for("python"), text, at, at)("count = 0\n    n = 1")
