"""Every code action's edits pass the whole-document check (issue 18 item 7): Python's own compiler for Python,
the whole document's tree-sitter errors for the others, and in Go and Rust the returns (engine/returns.py); what
fails it is never offered or applied."""

import pytest

from engine.languages import spec_for
from engine.requests import Completion, FillRequest, FixRequest, HoleFill, HoleKind, RewriteRequest
from engine.serve import keep_parsing
from engine.validate import edits_keep_parsing

NUM = "class Num:\n    def __mul__(self, other):\n        return 1\n\n    def __rmul__(self, other):\n        return 2\n"


def _replace(text: str, old: str, new: str) -> HoleFill:
    start = text.index(old)
    return HoleFill(start, start + len(old), new)


@pytest.mark.parametrize("old,new,ok", [
    ("return 1", "return self.__rmul__(other) other", False),  # seen on a real file: two expressions
    ("return 1", "return print(other", False),                 # an unclosed call
    ("return 1", "return self.__rmul__(other)", True),
    ("        return 2\n", "        return 2\n  x = 3\n", False),  # an indentation the parser refuses
])
def test_python_edits_are_checked_by_pythons_parser(old, new, ok):
    assert edits_keep_parsing(spec_for("python"), NUM, [_replace(NUM, old, new)]) is ok


BROKEN = "def area(r:\n    return r * r\n\n\ndef g(x):\n    return x\n"


@pytest.mark.parametrize("old,new,ok", [
    ("def area(r:", "def area(r):", True),
    ("def area(r:\n", "# S:\n# S:\n", False),  # seen on a real file: a def line replaced, its body left indented
    ("def area(r:", "def area(r:)", False),
])
def test_a_fix_must_leave_fewer_errors_and_python_past_its_edit(old, new, ok):
    assert edits_keep_parsing(spec_for("python"), BROKEN, [_replace(BROKEN, old, new)], fixing=True) is ok


def test_with_the_users_own_error_above_an_edit_the_edit_still_may_not_add_one():
    text = "def f():\n    x = )\n\n\ndef g(x):\n    return x\n"  # the user's error, in another function
    assert edits_keep_parsing(spec_for("python"), text, [_replace(text, "return x", "return x + 1")])
    assert not edits_keep_parsing(spec_for("python"), text, [_replace(text, "return x", "return x +")])


@pytest.mark.parametrize("language,text,old,new,ok", [
    ("javascript", "function f(a) {\n  return a;\n}\n", "return a;", "return a + 1;", True),
    ("javascript", "function f(a) {\n  return a;\n}\n", "return a;", "return (a;", False),
    ("go", "package m\n\nfunc f(a int) int {\n\treturn a\n}\n", "return a", "return a +", False),
    ("rust", "fn f(a: i32) -> i32 {\n    a\n}\n", "    a\n", "    a + 1\n", True),
])
def test_other_languages_count_the_whole_documents_errors(language, text, old, new, ok):
    assert edits_keep_parsing(spec_for(language), text, [_replace(text, old, new)]) is ok


GO_PAIR = "package m\n\nfunc f(a int) (int, error) {\n\t...\n}\n\nfunc g(a int) error {\n\t...\n}\n"


def test_a_go_or_rust_edit_whose_return_the_function_cannot_take_is_refused():
    """It parses, but would not compile (engine/returns.py): "Fill holes" keeps that hole's text."""
    first, second = GO_PAIR.index("..."), GO_PAIR.rindex("...")
    wrong, right = HoleFill(first, first + 3, "return a"), HoleFill(second, second + 3, "return nil")
    assert not edits_keep_parsing(spec_for("go"), GO_PAIR, [wrong])
    assert edits_keep_parsing(spec_for("go"), GO_PAIR, [HoleFill(first, first + 3, "return a, nil")])
    fill = keep_parsing(FillRequest(GO_PAIR, "go", ()), _completion(wrong, right))
    assert fill.fills == (right,) and fill.rejected == 1
    rust = "fn main() {\n    let x = 1;\n}\n"
    at = rust.index("let x = 1;")
    assert not edits_keep_parsing(spec_for("rust"), rust, [HoleFill(at, at + 10, "let x = parse(\"1\")?;")])
    assert edits_keep_parsing(spec_for("rust"), rust, [HoleFill(at, at + 10, "let x = parse(\"1\").unwrap();")])


def _completion(*fills: HoleFill) -> Completion:
    return Completion(tuple(fills), HoleKind.BLOCK, 1, 1, 1, 0.0, True)


def test_holes_are_kept_one_by_one_and_a_rewrite_or_fix_whole_or_not_at_all():
    text = "def a():\n    ...\n\n\ndef b():\n    ...\n"
    first, second = text.index("..."), text.rindex("...")
    good, bad = HoleFill(first, first + 3, "return 1"), HoleFill(second, second + 3, "return (")
    fill = keep_parsing(FillRequest(text, "python", ()), _completion(good, bad))
    assert fill.fills == (good,) and fill.rejected == 1
    rewrite = keep_parsing(RewriteRequest(text, "python", 0, len(text)), _completion(good, bad))
    assert rewrite.fills == () and rewrite.rejected == 2
    broken = text.replace("def b():", "def b(:")
    at = broken.index("def b(:")
    fix = keep_parsing(FixRequest(broken, "python", ()), _completion(HoleFill(at, at + 7, "def b(x:")))
    assert fix.fills == ()  # it removes no error


def test_the_benchmark_places_and_what_it_counts():
    from benchmarks.actions_parse import apply, parses, places, summary

    text = ("import os\n\n\ndef walk(top):\n    names = os.listdir(top)\n    names.sort()\n    names.reverse()\n"
            "    return len(names)\n")
    found = {p.name: p for p in places(text, "python")}
    assert set(found) == {"rewrite", "cursor", "stubbed", "broken"}
    assert text[found["rewrite"].start:found["rewrite"].end] == "names.sort()\n    names.reverse()"
    assert parses(found["stubbed"].text, "python") and "    ...\n" in found["stubbed"].text
    assert not parses(found["broken"].text, "python")
    assert apply("abc", (HoleFill(0, 1, "x"), HoleFill(2, 3, "yz"))) == "xbyz"
    rows = [{"file": "f", "action": "fixSyntax", "edits": 1, "parsed_before": False, "parses": True},
            {"file": "f", "action": "fillHoles", "edits": 1, "parsed_before": False, "parses": False},  # user's error
            {"file": "f", "action": "rewriteSelection", "edits": 1, "parsed_before": True, "parses": False},
            {"file": "f", "action": "completeBody", "edits": 0}]
    counted = summary(rows)
    assert (counted["counted"], counted["leave_the_file_parsing"], counted["actions_run"]) == (2, 1, 4)


@pytest.mark.parametrize("language,text,old,new,ok", [
    # seen on the real server: "Fill 1 hole" filled `__` with `#`, leaving `return # + a` (it compiles)
    ("python", "def f(a):\n    return __ + a\n", "__", "#", False),
    ("python", "def f(a):\n    return __ + a\n", "__", "1  # one", False),
    ("python", "def f(a):\n    return __ + a\n", "__", "a", True),
    ("python", "def f(a):\n    return __  # the sum\n", "__", "a  # a", True),  # only a comment follows
    ("python", "def f(a):\n    ...\n", "    ...", "    # nothing yet\n    return a", True),
    ("python", "def f(a):\n    ...\n", "    ...", "    return a  # the same", True),
    ("javascript", "function f(a) {\n  return __ + a;\n}\n", "__", "a // a", False),
    ("javascript", "function f(a) {\n  return __ + a;\n}\n", "__", "a /* a */", True),
    ("go", "package m\n\nfunc f(a int) int {\n\treturn __ + a\n}\n", "__", "a // a", False),
    ("rust", "fn f(a: i32) -> i32 {\n    __ + a\n}\n", "__", "a // a", False),
])
def test_an_edit_may_not_comment_out_the_code_after_it(language, text, old, new, ok):
    """A comment the edit starts may not run on over the code after the edit: that code would be gone, though
    the document still parses (the edit's title says it fills a hole, not that it removes code)."""
    assert edits_keep_parsing(spec_for(language), text, [_replace(text, old, new)]) is ok


def test_an_edit_after_one_that_fixed_the_users_error_is_still_checked_where_it_landed():
    """The first edit replaces the user's error (so it is not asked whether it touches one) and grows the text;
    the second, further down, breaks a line: its place in the edited document is after the first edit's growth."""
    text = "function f() {\n  let a = (1 + ;\n  return a;\n}\n\nfunction g(b) {\n  return b;\n}\n"
    fixed = _replace(text, "(1 + ;", "(1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10 + 11 + 12 + 13 + 14 + 15);")
    broken = _replace(text, "return b;", "return (b;")
    assert not edits_keep_parsing(spec_for("javascript"), text, [broken])
    assert not edits_keep_parsing(spec_for("javascript"), text, [fixed, broken])
    assert edits_keep_parsing(spec_for("javascript"), text, [fixed, _replace(text, "return b;", "return b + 1;")])


def test_a_lone_surrogate_in_the_document_leaves_pythons_check_in_force():
    """Seen on the real server: with a lone surrogate in a string (an editor may hold one), Python's compiler failed
    on the encoding, the same "error" before and after any edit, so "Complete body" appended `def area(x):` with no
    body (tree-sitter takes it) and it was applied."""
    text = 's = "\ud83d"\n\n\ndef g(x):\n    return x\n'
    end = len(text) - 1
    assert not edits_keep_parsing(spec_for("python"), text, [HoleFill(end, end, "\n    def area(x):")])
    assert edits_keep_parsing(spec_for("python"), text, [HoleFill(end, end, "\n    y = x")])
    code = 'x = \ud83d\n\n\ndef g(x):\n    return x\n'   # the surrogate is the user's own error: it stays theirs
    assert edits_keep_parsing(spec_for("python"), code, [HoleFill(len(code) - 1, len(code) - 1, "\n    y = x")])


@pytest.mark.parametrize("fill", ["\n    def area(x):", "\n    if x:", "\n    for y in x:\n        pass\n    else:"])
def test_with_the_users_own_error_above_an_edit_may_not_leave_a_body_empty(fill):
    """Python stops at the user's error, and tree-sitter takes an opener without its body (an empty block) as no
    error: an edit ending in `if x:` was applied to a document the user was still editing."""
    text = "def f():\n    y = (\n\n\ndef g(x):\n    return x\n\n\ndef h():\n    pass\n"
    at = text.index("    return x") + len("    return x")
    assert not edits_keep_parsing(spec_for("python"), text, [HoleFill(at, at, fill)])
    assert edits_keep_parsing(spec_for("python"), text, [HoleFill(at, at, "\n    if x:\n        return 1")])


@pytest.mark.parametrize("language,text,old,new,ok", [
    # seen on the real server: "Rewrite selection" of `😀 na` in a comment wrote `🔀\ufffdöööööö` (the model's bytes
    # that are no UTF-8, decoded as U+FFFD)
    ("python", "# 😀 naïve café\nx = 1\n", "😀 na", "🔀\ufffdöööööö", False),
    ("go", "package m\n\n// 😀 ok\n", "😀 ok", "\ufffd\" = o", False),
    ("python", "# 😀 naïve café\nx = 1\n", "😀 na", "🔀 na", True),
    ("python", "s = '\ufffd'\nx = 1\n", "x = 1", "x = '\ufffd'", True),   # the document's own U+FFFD may be copied
])
def test_an_edit_may_not_write_a_replacement_character_of_its_own(language, text, old, new, ok):
    assert edits_keep_parsing(spec_for(language), text, [_replace(text, old, new)]) is ok


def test_a_cancel_stops_the_whole_document_check_of_an_action():
    """A fix cancelled during the whole-document check of its edit (a 5 MB document: its parse and the walks of
    its trees, 2-3 s) ran the check to its end. The job's check is polled while the documents are parsed."""
    from engine.backends.base import Control
    from engine.requests import Cancelled

    text = "".join(f"def f{i}(x):\n    return x * {i}\n\n" for i in range(5000)) + "def g(x)\n    return x\n"
    at = text.index("(x)\n    return x\n") + 3
    polled = []

    def check(step):
        polled.append(step)
        raise Cancelled(step)
    with pytest.raises(Cancelled):
        keep_parsing(FixRequest(text, "python", ((at, at),)), _completion(HoleFill(at, at, ":")), Control(check))
    assert polled
    assert keep_parsing(FixRequest(text, "python", ((at, at),)), _completion(HoleFill(at, at, ":")),
                        Control(lambda step: None)).fills   # never cancelled: the same verdict
