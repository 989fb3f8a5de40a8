"""Hole kinds from the syntax at the cursor, healing, and context windows within token budgets."""

import pytest

from engine.context import decide_hole, indent_options, window
from engine.languages import spec_for
from engine.requests import HoleKind
from engine.validate import baseline_errors, parses, tidy

PY = spec_for("python")
JS = spec_for("javascript")


def chars(s: str) -> int:  # a stand-in token counter: one token per 4 characters
    return (len(s) + 3) // 4


@pytest.mark.parametrize("text,offset,kind,heal", [
    ("def f(x):\n    \n", 14, HoleKind.BLOCK, "    "),        # indented empty line after a header
    ("def f(x):\n", 9, HoleKind.BLOCK, ""),                  # end of the header line
    ("x = d[1:\n", 8, HoleKind.INLINE, ""),                  # a slice colon opens nothing
    ("y = 1\n\nz = 2\n", 6, HoleKind.LINE, ""),              # empty line
    ("a = foo(1)\n", 8, HoleKind.INLINE, ""),                # mid-line, text after the cursor
    ("    for x in y:\n", 0, HoleKind.LINE, ""),             # line start, code after: a whole line
    ("x = prin", 8, HoleKind.INLINE, " prin"),               # word fragment is healed
    ("", 0, HoleKind.LINE, ""),                              # empty file
    ("if (a) {\r\n", 8, HoleKind.BLOCK, ""),                 # CRLF, braces
])
def test_decide_hole(text, offset, kind, heal):
    spec = JS if "{" in text else PY
    hole = decide_hole(spec, text, offset)
    assert hole.kind is kind and hole.heal == heal and hole.end == offset


def test_selection_is_a_span():
    hole = decide_hole(PY, "abc def", 1, 5)
    assert (hole.kind, hole.start, hole.end) == (HoleKind.SPAN, 1, 5)


def test_line_before_code_keeps_its_newline():
    hole = decide_hole(PY, "x = 1\n    return x\n", 6)
    assert hole.kind is HoleKind.LINE and hole.keep_newline
    assert tidy("    y = 2\n    z = 3\n", hole, "    return x") == "    y = 2\n"


def test_inline_never_repeats_the_rest_of_the_line():
    hole = decide_hole(PY, "print(\n", 6)
    assert tidy("x)", hole, ")") == "x"


@pytest.mark.parametrize("fill, rest, kept", [
    ("dict(zip(a, b))", ")", "dict(zip(a, b))"),        # its own pairs: the last ")" closes its "dict("
    ("f(x)", ")", "f(x)"),
    ("v[0]", "]", "v[0]"),
    ("g(\")\")", ")", "g(\")\")"),                        # a bracket in quotes is no bracket
    ("f(x))", ")", "f(x)"),                              # one ")" too many: the user's, written again
    ("x]", "]", "x"),
    ("a, b)", ");", "a, b)"),                            # not the whole rest: nothing to take off
    ("g(a));", ");", "g(a)"),
    ("f(x);", ";", "f(x)"),                              # no closer in the rest: taken off as before
])
def test_a_fill_keeps_the_closer_of_its_own_brackets(fill, rest, kept):
    """``arr.chunk(|)`` (the editor closed the bracket) filled with ``dict(zip(a, b))``: taking off the ``)`` the
    user has after the cursor left ``dict(zip(a, b)`` + ``)``, which never closes ``chunk(``; the right line was
    refused on 5 of 89 development holes typed up to a bracket."""
    text = "y = chunk(" + rest + "\n"
    hole = decide_hole(PY, text, len("y = chunk("))
    assert hole.kind is HoleKind.INLINE
    assert tidy(fill, hole, rest) == kept


@pytest.mark.parametrize("language, text, cursor", [
    ("python", "def f(a):\n    b = a\n    return b\n", "= a"),
    ("typescript", "const counter: number = 1;\nconst doubled = counter * 2;\n", "= counter *"),
    ("go", "package main\n\nfunc main() {\n\tcount := 0\n\tcount++\n}\n", "\tcount++"),
])
def test_an_inline_fill_never_runs_into_the_word_after_the_cursor(language, text, cursor):
    """``b = |a`` filled with ``not a`` lost its repeated ``a`` and the space with it: ``b = nota`` parsed and was
    offered; a fill glued onto the word after the cursor (``cou|nter`` + ``wn``: ``couwnnter``) renames it."""
    at = text.index(cursor) + (2 if cursor.startswith("=") else 4)   # before the word, or inside it
    rest = text[at:text.index("\n", at)]
    hole = decide_hole(spec_for(language), text, at)
    assert hole.kind is HoleKind.INLINE and rest[0].isalpha()
    assert tidy("wn", hole, rest) is None and tidy("x", hole, rest) is None       # glued on: not offered
    assert tidy("not ", hole, rest) == "not " and tidy("-", hole, rest) == "-"    # the model's space kept
    assert tidy("not " + rest.strip(), hole, rest) == "not "                      # the repeat goes, the space stays
    assert tidy("f(", hole, rest) == "f("


def test_window_respects_budgets_and_cuts_at_lines():
    lines = [f"def f{i}(a):\n    return a + {i}\n" for i in range(200)]
    text = "".join(lines)
    offset = len("".join(lines[:100]))
    w = window(PY, text, offset, offset, chars, 40, 20)
    assert chars(w.prefix) <= 40 and chars(w.suffix) <= 20
    assert w.prefix.startswith("def ") and w.suffix.endswith("\n")
    assert text[w.start:offset] == w.prefix and text[offset:w.end] == w.suffix


def test_window_on_one_huge_line_cuts_by_tokens():
    text = "x" * 100_000
    w = window(PY, text, 50_000, 50_000, chars, 10, 10)
    assert 0 < len(w.prefix) <= 40 and 0 < len(w.suffix) <= 40


def test_parse_check_rejects_broken_fills():
    text = "def f(a):\n    \n    return a\n"
    hole = decide_hole(PY, text, 14)
    w = window(PY, text, hole.start, hole.end, chars, 100, 100)
    base = baseline_errors(PY, w, text[hole.start:hole.end])
    assert parses(PY, w, "    a = a + 1", base)
    assert not parses(PY, w, "    a = (a +", base)


def test_a_line_inserted_before_code_always_ends_its_line():
    hole = decide_hole(PY, "x = 1\n    return x\n", 6)
    assert tidy("    y = 2", hole, "    return x") == "    y = 2\n"


def test_indent_options_at_column_zero_and_typed_indentation():
    from engine.context import indent_options
    text = 'def f(xs):\n    """doc"""\n\n        for x in xs:\n            pass\n'
    offset = text.index("        for x")
    hole = decide_hole(PY, text, text.index("\n        for x") + 1)
    assert hole.start == offset and not hole.heal
    assert indent_options(PY, text, hole)[:2] == ("        ", "    ")  # the next line's level, the previous one's
    typed = decide_hole(PY, "def f():\n  \n", 11)
    assert indent_options(PY, "def f():\n  \n", typed) == ("  ",)


def test_indent_options_in_a_tab_indented_file_are_tabs():
    from engine.context import indent_options, reindent
    text = "def f(xs):\n\tfor x in xs:\n\n\treturn xs\n"     # the cursor at column 0 of the empty body line
    hole = decide_hole(PY, text, text.index("\n\n") + 1)
    assert hole.kind is HoleKind.BLOCK and not hole.heal
    options = indent_options(PY, text, hole)
    assert options == ("\t\t", "\t", "")                        # the body, the next line's level, dedents
    assert reindent("    y = x\n    z = y\n", options[0])[0] == "\t\ty = x\n\t\tz = y\n"
    top = "class A:\n\tdef f(self):\n\t\treturn 1\n\ndef g():\n\n"  # a header at column 0: the file's unit
    assert indent_options(PY, top, decide_hole(PY, top, len(top) - 1))[0] == "\t"
    spaces = "def f(xs):\n    for x in xs:\n\n    return xs\n"
    assert indent_options(PY, spaces, decide_hole(PY, spaces, spaces.index("\n\n") + 1)) == ("        ", "    ", "")


@pytest.mark.parametrize("language, head", [
    ("javascript", "function f(a, b) {"),
    ("go", "package main\n\nfunc f(a, b int) int {"),
    ("rust", "fn f(mut a: i32, mut b: i32) -> i32 {"),
    ("typescriptreact", "function f(a: number, b: number): number {"),
])
def test_a_fill_indented_with_spaces_in_a_tab_indented_body_is_offered_with_tabs(language, head):
    """At column 0 of a tab-indented body the model writes ``            b = a;`` (it learnt mostly from
    space-indented code): the fill is offered at the levels around the hole in tabs, its deeper lines too."""
    from engine.backends.base import Candidate
    from engine.context import indent_options
    from engine.infill import _first_valid
    spec = spec_for(language)
    text = head + "\n\tif (a > b) {\n\n\t}\n\treturn b;\n}\n"

    def offered(text: str, raw: str) -> str | None:
        at = text.index("\n\n", text.index("if (a > b)")) + 1   # the empty line in the if's body, column 0
        hole = decide_hole(spec, text, at)
        assert not hole.heal
        win = window(spec, text, hole.start, hole.end, chars, 200, 200)
        fill = _first_valid(Candidate((raw,), ((0.9,),), (((0, len(raw)),),), 0.0), hole, "", spec, win,
                            baseline_errors(spec, win, ""), indent_options(spec, text, hole))[0]
        return None if fill is None else fill.text
    block = "            b = a;\n            if (b > 0) {\n                a = 1;\n            }"
    assert offered(text, block) == "\t\tb = a;\n\t\tif (b > 0) {\n\t\t\ta = 1;\n\t\t}"   # the opener's body
    after = text.replace("{\n\n\t}", "{\n\t\tb = a;\n\n\t}")
    assert offered(after, "            a = b;") == "\t\ta = b;"   # after a statement: its level
    assert offered(text.replace("\t", "    "), "            b = a;") == "            b = a;"  # spaces: as written


def test_a_multi_line_fill_after_typed_tabs_gets_tabs_on_every_line():
    from engine.backends.base import Candidate
    from engine.context import indent_options
    from engine.infill import _first_valid
    text = "function f(a, b) {\n\tif (a > b) {\n\t\t\n\t}\n}\n"
    at = text.index("\t\t\n") + 2                                  # after the indentation the editor typed
    hole = decide_hole(JS, text, at)
    assert hole.heal == "\t\t"
    win = window(JS, text, hole.start, hole.end, chars, 200, 200)
    raw = "        if (b > 0) {\n            a = 1;\n        }"
    fill = _first_valid(Candidate((raw,), ((0.9,),), (((0, len(raw)),),), 0.0), hole, "", JS, win,
                        baseline_errors(JS, win, ""), indent_options(JS, text, hole))[0]
    assert fill is not None and fill.text == "if (b > 0) {\n\t\t\ta = 1;\n\t\t}"


@pytest.mark.parametrize("language, text, raw, expected", [
    ("javascript", "function f(a) {\n\tif (a > 0) {\n\t}\n}\n", "\n        a = 1;\n        if (a) {\n            a--;\n        }",
     "\n\t\ta = 1;\n\t\tif (a) {\n\t\t\ta--;\n\t\t}"),
    ("python", "class A:\n\tdef add(self, a, b):\n", "\n    c = a + b\n    return c\n", "\n\t\tc = a + b\n\t\treturn c"),
    ("javascript", "function f(a) {\n  if (a > 0) {\n  }\n}\n", "\n    a = 1;", "\n    a = 1;"),   # spaces: as written
])
def test_a_body_after_the_opener_in_a_tab_indented_file_is_offered_with_tabs(language, text, raw, expected):
    from engine.backends.base import Candidate
    from engine.context import indent_options
    from engine.infill import _first_valid
    spec = spec_for(language)
    at = text.index(":\n", text.index("add")) + 1 if language == "python" else text.index("{\n", 20) + 1
    hole = decide_hole(spec, text, at)
    assert hole.kind is HoleKind.BLOCK and not hole.heal
    win = window(spec, text, at, at, chars, 200, 200)
    fill = _first_valid(Candidate((raw,), ((0.9,),), (((0, len(raw)),),), 0.0), hole, "", spec, win,
                        baseline_errors(spec, win, ""), indent_options(spec, text, hole))[0]
    assert fill is not None and fill.text == expected


def test_restyle_gives_every_moved_line_the_files_unit():
    from engine.context import foreign_indent, restyle
    assert foreign_indent("            b = b", ("\t", "")) and not foreign_indent("\tb = b", ("\t", ""))
    assert foreign_indent("\t\tb = b", ("    ",)) and not foreign_indent("b = b", ("\t",))
    assert not foreign_indent("    b", ("",))                                    # nothing tells the file's unit
    text, edits = restyle("            if (x) {\n                y();\n\n            }\n", "\t")
    assert text == "\tif (x) {\n\t\ty();\n\n\t}\n" and len(edits) == 3
    assert restyle("\t\tif x:\n\t\t\ty()\n", "    ")[0] == "    if x:\n        y()\n"
    assert restyle("  a(\n    b,\n     c)\n", "\t")[0] == "\ta(\n\t\tb,\n\t\t c)\n"   # its step: 2; the rest kept


def test_indent_options_step_by_the_documents_own_unit():
    from engine.context import indent_options
    text = "def f(xs):\n  total = 0\n  for x in xs:\n\n  return total\n"    # two-space indentation
    hole = decide_hole(PY, text, text.index("\n\n") + 1)
    assert indent_options(PY, text, hole) == ("    ", "  ", "")    # the loop's body two deeper, not six spaces
    deep = "class A:\n  def f(self):\n    if self:\n      return 1\n\n"
    assert indent_options(PY, deep, decide_hole(PY, deep, len(deep) - 1)) == ("      ", "    ", "  ", "")


def test_reindent_moves_following_lines_alike():
    from engine.context import reindent
    text, edits = reindent("        if x:\n            y()\n        z\n", "    ")
    assert text == "    if x:\n        y()\n    z\n" and len(edits) == 3


def test_an_error_elsewhere_does_not_block_a_good_fill_nor_excuse_a_bad_one():
    from engine.context import Window
    w = Window("x = 1 +\ny = 2\n", "z = 3\n", 0, 0)  # the user's own error on line 1
    base = baseline_errors(PY, w, "")
    assert base == 1
    assert parses(PY, w, "w = 4\n", base)
    assert not parses(PY, w, "w = (4 +\n", base)


@pytest.mark.parametrize("language, prefix, suffix, closing, good", [
    ("javascript", "function f(x) {\n  if (", ") {\n    return 1;\n  }\n}\n", "0 == 0)", "x > 0"),
    ("typescript", "function first<T>(xs: T[]): T {\n  return xs[", "];\n}\n", "0]", "0"),
    ("go", "package main\n\nfunc f(xs []int) int {\n\treturn xs[", "]\n}\n", "0]", "0"),
    ("rust", "fn f(v: &[i32]) -> i32 {\n    let n = v[", "];\n    n\n}\n", "0]", "0"),
])
def test_a_fill_that_closes_what_the_code_after_the_cursor_closes_does_not_parse(language, prefix, suffix,
                                                                                 closing, good):
    """The user's line is broken at the cursor (``if ()``, ``xs[]``: the editor put in the closer), so the
    window's baseline has an error; a fill that closes the bracket again moves that error onto the user's
    closer, right after the fill: the count stays, and the edit would leave ``if (0 == 0)) {``."""
    from engine.context import Window
    from engine.validate import document_parses
    spec = spec_for(language)
    w = Window(prefix, suffix, 0, len(prefix) + len(suffix))
    base = baseline_errors(spec, w, "")
    assert base
    assert not parses(spec, w, closing, base)
    assert not document_parses(spec, prefix + suffix, len(prefix), len(prefix))(closing)
    assert parses(spec, w, good, base)


def test_python_parser_checks_the_whole_small_document():
    from engine.validate import python_check
    text = "def f(a):\n    \n    return a\n"
    at = text.index("    \n") + 4
    check = python_check(PY, text, at - 4, at)
    assert check("    a += 1") and not check("        a += 1")  # unexpected indent
    later = "def f(a):\n    \n    return (a\n"  # the user's own error after the hole stays theirs
    check = python_check(PY, later, at - 4, at)
    assert check("    a += 1") and check("    a += 1\n    b = 2") and not check("        a += 1")
    assert python_check(spec_for("javascript"), text, 0, 0) is None


def test_python_rejects_what_parses_but_does_not_compile():
    """``continue`` outside a loop, ``return`` outside a function, ``await`` outside ``async def`` parse: Python's
    compiler refuses them, and so does the check; in their place they pass."""
    from engine.validate import KEEPS_ERROR, PARSES, python_check
    text = "def f(xs):\n    n = 0\n    \n    for x in xs:\n        \n        n += x\n    return n\n\n\n\n"
    body, loop = text.index("    \n") + 4, text.index("        \n") + 8
    in_body, in_loop = python_check(PY, text, body - 4, body), python_check(PY, text, loop - 8, loop)
    assert in_body("    continue\n") == "" and in_body("    break\n") == ""
    assert in_loop("        continue\n") == PARSES and in_loop("        break\n") == PARSES
    assert in_body("    await g()\n") == "" and in_body("    return n\n") == PARSES
    top = len(text) - 1
    at_top = python_check(PY, text, top, top)
    assert at_top("return 1\n") == "" and at_top("x = f([1])\n") == PARSES
    # the user's own compile error stays theirs, as a parse error does; the function around the hole compiles alone
    theirs = "def f():\n    \n    return 1\nbreak\n"
    at = theirs.index("    \n") + 4
    assert python_check(PY, theirs, at - 4, at)("    y = 2\n") == PARSES
    assert python_check(PY, theirs, at - 4, at)("    continue\n") == ""
    assert python_check(PY, theirs + "def g(:\n", at - 4, at)("    y = 2\n") == PARSES


def test_an_action_that_would_not_compile_is_refused():
    from engine.requests import HoleFill
    from engine.validate import edits_keep_parsing
    text = "def f(xs):\n    for x in xs:\n        print(x)\n    return xs\n"
    at = text.index("        print(x)")
    keep = HoleFill(at, at + len("        print(x)"), "        continue", (), ())
    assert edits_keep_parsing(PY, text, [keep])
    out = text.index("    return xs")
    assert not edits_keep_parsing(PY, text, [HoleFill(out, out + len("    return xs"), "    break", (), ())])


def test_nesting_too_deep_for_pythons_parser_leaves_the_verdict_to_the_window_check():
    from engine.validate import KEEPS_ERROR, python_check
    deep = "x = f" + "(a," * 1000 + ")" * 1000 + "\n"   # MemoryError/RecursionError inside ast.parse
    assert python_check(PY, "y = 1\n" + deep, 0, 0) is None    # the user's document: not judged by Python
    check = python_check(PY, "y = 1\n", 6, 6)
    assert check(deep) == KEEPS_ERROR                        # a fill: never a crash, never "parses"


def test_a_fill_that_keeps_the_users_error_on_their_line_is_refused():
    """The user's error is on the line they are typing (a bracket or a string still open, ``from m imp``): a fill
    after which Python reports the same error there left the line as broken as they had it. Their error on another
    line stays theirs, and a fill that finishes the line passes."""
    from engine.validate import KEEPS_ERROR, PARSES, python_check
    text = "def f(cls):\n    h = np.r_[h, cls\n    return h\n"
    at = text.index("cls\n    return") + 3
    check = python_check(PY, text, at, at)
    assert check(".mod.level,") == "" and check("") == ""          # the bracket still open
    assert check(".mod.level]") == PARSES
    typing = "x = 1\nif x:\n\tprint(\"Button cli\n\tmsg = \"\U0001f600\"\n"   # a string left open; a tab, an emoji
    at = typing.index("cli") + 3
    check = python_check(PY, typing, at, at)
    assert check("cked") == "" and check("cked!\")") == PARSES
    assert python_check(PY, "from os imp\r\nx = 1\r\n", 11, 11)("ort path.sep") == ""   # CRLF: the same line
    assert python_check(PY, "from os imp\r\nx = 1\r\n", 11, 11)("ort sep") == PARSES
    # the user's error on another line (the call above is never closed): the fill on its own line keeps it
    above = "x = f(1,\n      2\ny = 3\n"
    at = above.index("2") + 1
    assert python_check(PY, above, at, at)(", 3") == KEEPS_ERROR


def test_an_indentation_error_at_the_hole_is_the_fills_to_fix():
    from engine.validate import python_check
    text = "def f(xs):\n    n = 0\n    \n        print(x)\n    return xs\n"   # the loop header is missing
    at = text.index("    \n") + 4
    check = python_check(PY, text, at - 4, at)
    assert check("    for x in xs:") and check("    for x in xs:\n")
    assert not check("    y = 1") and not check("    # note")        # the unexpected indent stays
    far = "def f(xs):\n    n = 0\n    \n    y = 2\n\n\n\n        z = 3\n"  # an indentation error far below is not
    at = far.index("    \n") + 4
    check = python_check(PY, far, at - 4, at)
    assert check("    x = 1")


def test_a_python_block_fill_ends_where_it_would_leave_the_block():
    from engine.requests import Hole
    from engine.infill import _options
    hole = Hole(0, 0, HoleKind.BLOCK)
    # the body under the cursor, then statements at the enclosing level (the suffix's business): cut there
    raw = "        x = f(name)\n        y = x\n    result = x\n    return result\n"
    assert _options(raw, hole, offside=True) == ["        x = f(name)\n        y = x\n", "        x = f(name)\n"]
    # deeper lines and blank lines stay inside the block
    nested = "        if x:\n            y()\n\n        z()\n"
    assert _options(nested, hole, offside=True)[0] == nested
    # braces languages: a closing brace is less indented and legitimate, nothing is cut
    assert _options("  return 1;\n}\n", hole)[0] == "  return 1;\n}\n"


def test_a_window_starting_inside_a_docstring_does_not_reject_a_good_line():
    from engine.backends.base import Candidate
    from engine.infill import _first_valid
    from engine.validate import KEEPS_ERROR, PARSES, baseline_errors, python_check
    prompt = 'def f(grid, k):\n    """' + "Find the path; the docstring runs on.\n    " * 30 + '"""\n'
    suffix = "    val = n * n + 1\n    return val\n"
    text, at = prompt + suffix, len(prompt)
    hole = decide_hole(PY, text, at)
    win = window(PY, text, at, at, chars, 40, 16)
    assert '"""' not in win.prefix[:-5]             # the window opens inside the docstring
    baseline = baseline_errors(PY, win, "")
    assert baseline > 0                              # so tree-sitter sees the rest of it as broken code
    line = "    n = len(grid)\n"
    candidate = Candidate((line,), ((0.9,),), (((0, len(line)),),), 0.0)
    check = python_check(PY, text, at, at)
    fill, bad = _first_valid(candidate, hole, suffix.split("\n")[0], PY, win, baseline, (), check)
    assert check(line) == PARSES and fill is not None and fill.text == line and bad == 0
    alone, _ = _first_valid(candidate, hole, suffix.split("\n")[0], PY, win, baseline, ())
    assert alone is None                             # the window check alone would have refused it
    broken = Candidate(("    n = len(grid\n",), ((0.9,),), (((0, 17),),), 0.0)
    assert _first_valid(broken, hole, suffix.split("\n")[0], PY, win, baseline, (), check)[0] is None
    later = text + "def g(:\n"                       # the user's own error below: Python stops there, and
    check = python_check(PY, later, at, at)          # judges the function around the hole alone
    assert check(line) == PARSES and check("    n = len(grid\n") == ""
    inside = text + "    def g(:\n"                  # in the same function: the window check has the last word
    assert python_check(PY, inside, at, at)(line) == KEEPS_ERROR


GO_SWITCH = """package main

func f(r *R) int {
\tfor {
\t\tc := r.next()
\t\tswitch c {
\t\tcase 'a':
\t\t\tc = r.readByte()
\t\t\tif c == 'b' {
\t\t\t\treturn 1
\t\t\t}
\t\tcase ' ', '\\t':
\t\t\tc = r.
\t\t}
\t}
}
"""


def test_a_window_cut_inside_a_switch_leaves_the_verdict_to_the_whole_document():
    from engine.validate import document_parses

    go = spec_for("go")
    cursor = GO_SWITCH.index("c = r.\n") + len("c = r.")
    win = window(go, GO_SWITCH, cursor, cursor, lambda s: (len(s) + 3) // 4, 20, 16)
    assert win.prefix.startswith("\t\tcase ' '")                      # the window starts at the second case
    baseline = baseline_errors(go, win, "")
    assert baseline and not parses(go, win, "readByte()", baseline)   # its own errors cover the cursor's line
    check = document_parses(go, GO_SWITCH, cursor, cursor)
    assert check("readByte()")
    assert not check("readByte(")                                    # an error at the fill
    assert not check("readByte() }")                                 # closes the switch: an error further down
    with_error = GO_SWITCH.replace("package main\n", "package main\nfunc {\n")   # the user's error above stays
    cursor = with_error.index("c = r.\n") + len("c = r.")
    assert document_parses(go, with_error, cursor, cursor)("readByte()")
    assert document_parses(spec_for("plaintext"), "x", 0, 0) is None
    assert document_parses(go, "x" * 300_001, 0, 0) is None


def test_the_engine_fills_the_line_a_window_cut_inside_a_switch_rejected():
    from engine import InfillRequest
    from engine.backends.base import Control
    from engine.config import FillOptions
    from engine.infill import complete
    from tests.test_doclines import Scoring

    cursor = GO_SWITCH.index("c = r.\n") + len("c = r.")
    backend = Scoring("readByte()", {})
    c = complete(backend, FillOptions(prefix_tokens=20, suffix_tokens=16, min_confidence=0),
                 InfillRequest(GO_SWITCH, cursor, "go"), Control(lambda s: None))
    assert c.fills and c.fills[0].text == "readByte()"
    backend = Scoring("readByte() }", {})
    c = complete(backend, FillOptions(prefix_tokens=20, suffix_tokens=16, min_confidence=0),
                 InfillRequest(GO_SWITCH, cursor, "go"), Control(lambda s: None))
    assert not c.fills


@pytest.mark.parametrize("fill", ["readByte()", "readByte(", "readByte() }", "x\n\t\t\ty := 2", "name('😀')",
                                  "a\r\n\t\t\tb = ☃", "", "}\n}\n}\nfunc g() {"])
def test_the_incremental_reparse_judges_as_a_whole_parse_does(fill):
    from engine.languages import error_spans, parse
    from engine.validate import document_parses

    go = spec_for("go")
    text = GO_SWITCH.replace("package main\n", "package main\n// ☃ 😀\n")
    cursor = text.index("c = r.\n") + len("c = r.")
    start = cursor - 2                                               # replaces "r." too
    lo = len(text[:start].encode("utf-8"))
    before = error_spans(parse(go, text))
    after = error_spans(parse(go, text[:start] + fill + text[cursor:]))
    hi, shift = lo + len(fill.encode("utf-8")), len(fill.encode("utf-8")) - 2
    kept = {(s, e) if e <= lo else (s + shift, e + shift) for s, e in before
            if e <= lo and s < lo or s >= lo + 2 and e > lo + 2}
    expected = all((s, e) in kept and not (s < max(hi, lo + 1) and e > lo) for s, e in after)
    assert document_parses(go, text, start, cursor)(fill) == expected


def test_the_checks_share_their_trees_and_never_see_an_edited_one():
    """validate.parse remembers a thread's last trees (the checks of one fill read the same texts); the whole
    document's check edits a copy, so a remembered tree still says what a fresh parse says."""
    from engine import languages, validate
    spec = spec_for("javascript")
    user = "function f(a) {\n  return g(a);\n}\n"
    first = validate.parse(spec, user)
    assert validate.parse(spec, user) is first
    accepts = validate.document_parses(spec, user, user.index("a);"), user.index("a);") + 1)
    assert accepts is not None and accepts("a, 1") and not accepts("a +")
    again = validate.parse(spec, user)
    fresh = languages.parse(spec, user)
    assert str(again.root_node) == str(fresh.root_node) and not again.root_node.has_error
    for i in range(validate._KEEP):
        validate.parse(spec, f"let x{i} = {i};\n")
    assert validate.parse(spec, user) is not first   # forgotten after the last _KEEP texts


@pytest.mark.parametrize("prefix, fill, suffix, repeats", [
    # an empty line's fill that copies the line above, at its indentation
    ("for x in xs:\n    total += x\n    ", "total += x", "\n", True),
    # ... or at another indentation: an if's body that is the line after the if, a header copied into its body
    # (a real server offered these on third-party files: click, rich, chalk, body-parser, query-core, log)
    ("def f(x):\n    if x is None:\n        ", "return x", "\n    return x\n", True),
    ("if self.box:\n            ", "return width", "\n        return width\n", True),
    ("for x in xs:\n    ", "for x in xs:", "\n    total += x\n", True),
    ("        impl Source for OnePair {\n            ", "impl Source for OnePair {", "\n                visit()\n", True),
    ("    if (a) {\n        ", "debug('strict')", "\n          debug('strict')\n", True),
    # ... or the line below, inserted before it
    ("def f(a):\n    ", "return a\n    ", "return a\n", True),
    # typed: the line the fill completes becomes the line above
    ("self.status = status\nself.", "status = status", "\n", True),
    # a multi-line fill that repeats its own line
    ("def f():\n", "    g()\n    g()\n", "", True),
    # the nearest code line counts across blank lines
    ("x = 1\n\n\n", "x = 1", "\n", True),
    # different lines, closers and rows of data may repeat
    ("for x in xs:\n    ", "total += x", "\n", False),
    ("        }\n    ", "}", "\n", False),
    ("table = [\n    0,\n    ", "0,", "\n]\n", False),
    ("row = [\n    None,\n    ", "None,", "\n]\n", False),
    # ... but not a lone name (an import's or a destructuring's name twice), nor a row at another indentation
    ("import {\n\tstringReplaceAll,\n\t", "stringReplaceAll,", "\n} from './utilities.js';\n", True),
    ("({\n      ", "state,", "\n      state,\n      queryHash,\n", True),
    ("table = [\n    0,\n        ", "0,", "\n]\n", True),
    # ... nor an entry with its key, nor an expression (the action-safety run: a real server offered these three)
    ("      {\n        new_state: state,\n        ", "new_state: state,", "\n      },\n", True),
    ("    eprintln!(\n        \"{}\",\n        env!(\"CARGO_PKG_NAME\"),\n        e", "nv!(\"CARGO_PKG_NAME\"),",
     "\n    );\n", True),
    # the code line after next: the development fills that copied it were wrong 12 times in 13 (a Go job's second
    # ``j.m.Lock()`` where ``Unlock`` belongs; a row's ``index`` set the line before its ``id`` and ``index``)
    ("func (j *countJob) Run() {\n\tj.m.Lock()\n\tj.started++\n\tj.", "m.Lock()", "\n\ttime.Sleep(j.delay)\n",
     True),
    ("\trow._valuesCache = makeObjectMap();\n\tr", "ow.index = rowIndex;", "\n\trow.id = id;\n\trow.index = rowIndex;\n",
     True),
    ("    const block = blockNumberHex || blockTag\n\n", "    const chainFormat = client.chain?.formatters?.format\n",
     "    assertRequest(args)\n\n    const chainFormat = client.chain?.formatters?.format\n", True),
    ("x = foo(a)\nif x:\n    ", "x = foo(a)", "\n", True),
    ("import {\n\tstate,\n\tqueryHash,\n\t", "state,", "\n} from './state.js';\n", True),
    # ... but not one further away, nor a line of keywords and literals, a comment, a decorator or attribute, a row of
    # data
    ("x = foo(a)\ny = 1\nz = 2\n", "x = foo(a)", "\n", False),
    ("    if a:\n        return None\n    if b:\n        ", "return None", "\n", False),
    ("        if x:\n            continue\n        y()\n        ", "continue", "\n", False),
    ("    try:\n        a()\n    ", "try:", "\n        b()\n", False),
    ("@overload\ndef f(a: int) -> int: ...\n", "@overload", "\ndef f(a: str) -> str: ...\n", False),
    ("#[inline]\nfn a() {}\n", "#[inline]", "\nfn b() {}\n", False),
    ("// sets a\na = 1;\n", "// sets a", "\nb = 1;\n", False),
    ("table = [\n    0, 1,\n    1, 0,\n    ", "0, 1,", "\n]\n", False),
    ("names = [\n    \"a\",\n    ", "\"a\",", "\n]\n", False),
    ("const m = [\n  [1, -2],\n  ", "[1, -2],", "\n];\n", False),
    ("let k = [\n    0x1f, 0u8,\n    ", "0x1f, 0u8,", "\n];\n", False),
    # the repeat is the user's own, not the fill's
    ("a = 1\na = 1\n", "b = 2", "\n", False),
    ("a = 1\na = ", "", "1\n", False),
])
def test_a_fill_that_copies_the_code_line_next_to_it(prefix, fill, suffix, repeats):
    from engine.validate import repeats_neighbour
    assert repeats_neighbour(prefix, fill, suffix) is repeats


def test_a_rewrite_may_write_the_users_line_after_next_again():
    """A rewrite writes the selection's own lines again: a user's ``x = foo(a)``, ``if x:``, ``x = foo(a)`` would
    refuse every rewrite of them (the real model's only rewrite in test_actions' surrogate case was refused so)."""
    from engine.validate import repeats_neighbour
    assert repeats_neighbour("x = foo(a)\nif x:\n    ", "x = foo(a)", "\n", after_next=False) is False
    assert repeats_neighbour("x = foo(a)\n", "x = foo(a)", "\n", after_next=False) is True


def test_a_rewrite_that_keeps_the_users_two_equal_lines_is_no_repeat():
    """A rewrite gives the selection's lines back: two equal lines the user wrote side by side (``self.advance()``
    twice) made every rewrite that kept them "a copy of the line next to it", so the real server offered no rewrite
    of such a selection whatever the model changed around them. The lines a rewrite gives back unchanged are the
    user's (``kept``); a line it changes into a copy of its neighbour, or a copy it adds, is still refused."""
    from engine.validate import repeats_neighbour
    pre, post = "    def skip(self):\n", "\n    def peek(self):\n        return 1\n"
    user = "        self.advance()\n        self.advance()\n        return self.peek()\n"
    changed = "        self.advance()\n        self.advance()\n        return self.pos\n"
    assert repeats_neighbour(pre, changed, post, after_next=False) is True           # as before: refused
    assert repeats_neighbour(pre, changed, post, after_next=False, kept=user) is False
    # the model's own copies: a changed line that copies its kept neighbour, a copy added between the user's lines
    assert repeats_neighbour(pre, "        self.advance()\n        self.advance()\n        self.advance()\n", post,
                             after_next=False, kept=user) is True
    user2 = "        self.advance()\n        return self.peek()\n"
    assert repeats_neighbour(pre, "        self.advance()\n        self.advance()\n        return self.peek()\n",
                             post, after_next=False, kept=user2) is True
    # the line above the selection equal to the selection's first line, kept
    assert repeats_neighbour("    def skip(self):\n        self.advance()\n", changed[len("        self.advance()\n"):],
                             post, after_next=False, kept=user[len("        self.advance()\n"):]) is False


_FAR = "".join(f"\n\ndef helper_{i}(a, b):\n    c = a * {i} + b\n    return c\n" for i in range(10))
_LOOPS = ("import os\n\n\ndef total(xs):\n    t = 0\n    for x in xs:\n        if x is None:\n            continue\n"
          "        t += x\n    return t\n\n\ndef name_of(path):\n    base = os.path.basename(path)\n    <>\n"
          "    return base\n" + _FAR)


@pytest.mark.parametrize("error", ["below", "above", "same class"])
def test_the_users_error_elsewhere_does_not_let_a_fill_that_would_not_compile_through(error):
    """Python stops at the user's own syntax error (an unclosed bracket 50 lines away), so the whole-document check
    answered "keeps the user's error" for every fill, and tree-sitter alone judged them: ``continue`` or ``break``
    outside a loop, ``return`` outside a function, a line indented off its block were offered, as in a clean file
    they are not. The code around the hole that compiles alone (its function, here) now judges the fill."""
    from engine.validate import PARSES, python_check
    doc = {"below": _LOOPS + "\n\ndef late(a):\n    x = max(a,\n    return x\n",
           "above": _LOOPS.replace("import os\n", "import os\nimport sys,\n", 1),
           "same class": "class C:\n    def broken(self):\n        y = (\n" + _LOOPS.replace("\n", "\n    ")
           .replace("\n    \n", "\n\n").replace("def total(xs)", "def total(self, xs)")
           .replace("def name_of(path)", "def name_of(self, path)").replace("def helper_", "def helper_")}[error]
    at = doc.index("<>")
    text = doc.replace("<>", "", 1)
    ind = text[text.rfind("\n", 0, at) + 1:at]
    check = python_check(PY, text, at, at)
    for bad in ("continue", "break", "  base = 1", "x = (1,", "await os.sep"):
        assert check(bad) == "", bad
    for good in ("base = base.strip()", "if not base:\n" + ind + "    return None", "for p in path:\n" + ind
                 + "    continue"):
        assert check(good) == PARSES, good
    if error == "same class":
        return
    top = text.index("\n\ndef helper_3") + 2   # a new top-level statement between two functions
    assert python_check(PY, text, top, top)("return 1\n") == ""
    assert python_check(PY, text, top, top)("LIMIT = 1\n") == PARSES


def test_the_users_error_in_the_holes_own_function_leaves_the_verdict_as_it_was():
    from engine.validate import KEEPS_ERROR, PARSES, python_check, python_region
    text = "def f(xs):\n    y = (\n    \n    return xs\n"
    at = text.index("    \n") + 4
    assert python_region(text, at, at) is None
    assert python_check(PY, text, at, at)("continue") == KEEPS_ERROR   # Python cannot tell: the window check decides
    nested = "def outer():\n    n = 0\n    y = (\n    def inner():\n        \n        return n\n    return inner\n"
    at = nested.index("        \n") + 8
    assert python_region(nested, at, at) == (nested.index("    def inner"), nested.index("    return inner"), "if 1:\n")
    assert python_check(PY, nested, at, at)("nonlocal n") == PARSES   # the outer function (cut off) binds n
    assert python_check(PY, nested, at, at)("continue") == ""


def test_a_fill_that_closes_the_error_at_the_cursor_is_offered_beside_another_error():
    """The user types a line (or the hole is a block's empty body) while the file has another error further down:
    the fill that completes the line moves Python's first error to the other one, and every such fill was
    refused as "not the user's error"; one that leaves an error of its own is still refused."""
    from engine.validate import PARSES, python_check
    text = "def f(xs):\n    n = len(\n    return n\n" + _FAR + "\n\ndef late(a):\n    x = max(a,\n    return x\n"
    at = text.index("len(") + 4
    check = python_check(PY, text, at, at)
    assert check("xs)") == PARSES
    assert check("xs)\n    continue") == "" and check("xs)]") == ""
    assert check("xs") != PARSES   # the user's error as it was: the window check decides
    body = "def f(xs):\n    if xs:\n        \n    return 1\n" + _FAR + "\n\ndef late(a):\n    x = max(a,\n    return x\n"
    at = body.index("        \n") + 8
    assert python_check(PY, body, at, at)("xs.sort()") == PARSES
    assert python_check(PY, body, at, at)("break") == ""


def test_an_action_that_would_not_compile_is_refused_beside_the_users_error():
    from engine.requests import HoleFill
    from engine.validate import edits_keep_parsing
    text = ("def f(xs):\n    for x in xs:\n        print(x)\n    return xs\n" + _FAR + "\n\ndef late(a):\n"
            "    x = max(a,\n    return x\n")
    out = text.index("    return xs")
    assert not edits_keep_parsing(PY, text, [HoleFill(out, out + len("    return xs"), "    break", (), ())])
    at = text.index("        print(x)")
    keep = HoleFill(at, at + len("        print(x)"), "        continue", (), ())
    assert edits_keep_parsing(PY, text, [keep])
    both = [keep, HoleFill(out, out + len("    return xs"), "    return [x for x in xs]", (), ())]
    assert edits_keep_parsing(PY, text, both)


def test_a_large_document_is_parsed_while_other_threads_run():
    """tree-sitter's parse of bytes is one C call that holds the interpreter's lock: a 5 MB document's survey (a
    code action, on a thread of its own) held the event loop, every request and cancel, for 1.5-3.2 s. A source over
    ``languages._CHUNK`` bytes is read through callbacks, between which another thread runs; the tree is the same,
    from scratch and incrementally."""
    import sys
    import threading
    import time

    import tree_sitter

    from engine import languages

    spec = spec_for("python")
    text = "".join(f"def f{i}(x):\n    return x * {i}\n\n" for i in range(80_000)) + "def broken(:\n    é😀 = 1\n"
    languages.parse(spec, "x = 1\n")   # this thread's parser made, its grammar loaded
    parsing, stop, seen = threading.Event(), threading.Event(), []

    def watch() -> None:   # pure Python: it runs only while the parsing thread lets go of the lock
        while not stop.is_set():
            if parsing.is_set() and (not seen or time.perf_counter() - seen[-1] > 0.001):
                seen.append(time.perf_counter())

    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        parsing.set()
        tree = languages.parse(spec, text)
        parsing.clear()
    finally:
        stop.set()
        watcher.join()
        sys.setswitchinterval(interval)
    assert len(seen) >= 20   # the watcher ran at 20 moments a millisecond apart (373-458 seen); before: 3-7, at the call's edges
    plain = tree_sitter.Parser(languages.grammar("python"))
    assert str(tree.root_node) == str(plain.parse(text.encode()).root_node)
    edited = "import os\n" + text
    tree.edit(0, 0, 10, (0, 0), (0, 0), (1, 0))
    assert str(languages.parse(spec, edited, tree).root_node) == str(plain.parse(edited.encode()).root_node)


def test_a_tick_that_raises_halts_a_large_parse_and_the_next_parse_starts_afresh():
    """A job cancelled while tree-sitter parsed its 5 MB document (1-2 s) waited for the parse. ``tick`` is called
    at tree-sitter's progress reports: what it raises halts the parse and is raised; the thread's parser is reset
    (a halted parser resumes the old parse at its next call, whatever text it is given)."""
    import tree_sitter

    from engine import languages
    from engine.requests import Cancelled

    spec = spec_for("python")
    text = "".join(f"def f{i}(x):\n    return x * {i}\n\n" for i in range(20_000))
    assert len(text) > languages._CHUNK
    ticks = []

    def tick() -> None:
        ticks.append(1)
        if len(ticks) == 5:
            raise Cancelled(0)
    with pytest.raises(Cancelled):
        languages.parse(spec, text, tick=tick)
    assert len(ticks) == 5
    other = "".join(f"x{i} = [{i}]\n" for i in range(10_000))
    plain = tree_sitter.Parser(languages.grammar("python"))
    assert str(languages.parse(spec, other).root_node) == str(plain.parse(other.encode()).root_node)
    assert str(languages.parse(spec, text, tick=lambda: None).root_node) == str(plain.parse(text.encode()).root_node)


APACHE = ("/*\n   Copyright The Authors.\n\n   Licensed under the Apache License, Version 2.0 (the \"License\");\n"
          "   you may not use this file except in compliance with the License.\n\n"
          "       http://www.apache.org/licenses/LICENSE-2.0\n\n   limitations under the License.\n*/\n\n")


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_a_licence_comments_lines_do_not_set_the_indentation(eol):
    """A licence header in a block comment (its lines three spaces in) is no code: a small Go file under one is
    tab-indented (a real user's `return false` came indented four spaces under such a header), a JavaScript one
    two spaces."""
    from engine.context import code_indents, indent_unit
    from engine.holes import Source
    go = (APACHE + "package p\n\nfunc On() bool {\n\n}\n").replace("\n", eol)
    at = go.index("{" + eol + eol) + 1 + len(eol)
    assert code_indents(go, at, "go") == ["", "", ""]            # package, func, closing brace
    assert indent_unit(go, at, "go") == "\t"
    body = (APACHE + "package p\n\nfunc On(c bool) bool {\n\tif c {\n\n\t}\n\treturn c\n}\n").replace("\n", eol)
    assert indent_unit(body, body.index("if c"), "go") == "\t"
    hole = decide_hole(spec_for("go"), go, at)
    assert indent_options(spec_for("go"), go, hole)[0] == "\t"
    js = APACHE + "function on() {}\n"
    assert Source(JS, js).indent_unit(js.index("{")) == "  "     # nothing indented: JavaScript's usual two spaces
    assert indent_unit(js + "function g() {\n    return 1;\n}\n", 0, "javascript") == "    "


def test_a_docstrings_text_does_not_set_pythons_indentation():
    from engine.context import indent_unit
    text = ('"""Module.\n\n   Indented three in the text.\n      six.\n   three.\n      six.\n   three.\n"""\n\n'
            'def f(x):\n  return x\n\ndef g(y):\n  z = """\n     text\n        more\n     text\n  """\n  return y\n')
    assert indent_unit(text, 0, "python") == "  "


@pytest.mark.parametrize("language, prefix, fill, suffix, dead", [
    # the real fills: a return before the function's own next line, at the same level
    ("typescript", "  if (x) {\n    return a\n  }\n", "  return undefined\n", "  return sign * b\n}\n", True),
    ("go", "\t\tif tc.chatty {\n\t\t\tx()\n\t\t}\n", "\t\treturn false\n", "\t\tif ok {\n\t\t}\n\t})\n", True),
    ("rust", "    let a = 1;\n", "    return (None, None);\n", "    opts.checkout = a;\n}\n", True),
    ("python", "def f(x):\n    y = 1\n", "    raise ValueError(x)", "\n\n    # why\n    return y\n", True),
    ("go", "\tfor {\n\t\tx()\n", "\t\tcontinue\n", "\t\ty()\n\t}\n", True),
    ("javascript", "function f() {\n", "  throw new Error('no');\n", "  // later\n  g();\n}\n", True),
    # the jump ends its block, or what follows may follow it
    ("python", "def f(x):\n    if x:\n", "        return 1\n", "    return 2\n", False),
    ("go", "\tswitch x {\n\tcase 1:\n", "\t\treturn a\n", "\tcase 2:\n\t\treturn b\n\t}\n", False),
    ("javascript", "  switch (x) {\n    case 1:\n", "      return a;\n", "    default:\n      return b;\n", False),
    ("javascript", "function f() {\n", "  return helper();\n", "  function helper() {}\n}\n", False),
    ("rust", "fn f() -> u8 {\n", "    return 1;\n", "    fn helper() {}\n}\n", False),
    ("go", "func f() {\n", "\tgoto done\n", "\tx()\ndone:\n\ty()\n}\n", True),
    ("go", "\tx()\n", "\tgoto done\n", "done:\n\ty()\n}\n", False),
    ("python", "def f():\n    try:\n", "        return g()\n", "    except OSError:\n        pass\n", False),
    # not a whole jump of the fill's, or it goes on
    ("python", "def f():\n    return ", "x", "\n    y = 1\n", False),              # the user typed `return`
    ("javascript", "function f() {\n", "  return a +\n", "    b;\n}\n", False),
    ("python", "def f():\n", "    return g(\n", "        1)\n    y = 1\n", False),
    ("python", "def f():\n", "    returned = 1\n", "    y = 1\n", False),          # a name, no jump
    ("python", "def f():\n", "    return", " x\n    y = 1\n", False),             # code after it on its line
])
def test_a_fill_ending_with_a_jump_before_code_of_its_block_is_dead_code(language, prefix, fill, suffix, dead):
    from engine.validate import jumps_over_code
    assert _as_lf_and_crlf(jumps_over_code, spec_for(language), prefix, fill, suffix) == (dead, dead)


def _as_lf_and_crlf(check, spec, prefix: str, fill: str, suffix: str) -> tuple[bool, bool]:
    """A text check's verdict on the text as given and on its CRLF twin."""
    crlf = [part.replace("\n", "\r\n") for part in (prefix, fill, suffix)]
    return check(spec, prefix, fill, suffix), check(spec, *crlf)


@pytest.mark.parametrize("language, prefix, fill, suffix, loose", [
    # the real fills: a tuple that does nothing, a comma expression swallowing the next line
    ("python", "def f(self):\n    self.index_n", "ames,", "\n    self.col_names = None\n", True),
    ("python", "def f():\n    num", "_channels_latents,", "\n\n    map_size = None\n", True),
    ("javascript", "function f(a) {\n  normal", ",", "\n  normals.set(a, 0);\n}\n", True),
    ("typescript", "function f(a) {\n  x = a", ",", "\n  g();\n}\n", True),
    # a comma in brackets, in a declaration, an assignment's tuple, a return's: no such comma
    ("python", "x = [\n    ", "a,", "\n    b]\n", False),
    ("python", "def f():\n    shape = ", "n,", "\n    return shape\n", False),
    ("python", "def f(\n    ", "a,", "\n    b):\n    pass\n", False),
    ("python", "def f():\n    return ", "a,", "\n", False),
    ("python", "d = {\n    ", "'a': 1,", "\n}\n", False),
    ("javascript", "const a = [\n  ", "normal,", "\n  b];\n", False),
    ("javascript", "f(\n  ", "a,", "\n  b);\n", False),
    ("typescript", "let a = 1", ",", "\n  b = 2;\n", False),
    ("typescript", "const o = {\n  ", "a: 1,", "\n  b: 2,\n};\n", False),
    ("typescript", "interface A {\n  ", "a: string,", "\n  b: number\n}\n", False),
    ("go", "func f() {\n\t", "a,", "\n}\n", False),
])
def test_a_line_ended_by_a_comma_outside_brackets_is_not_offered(language, prefix, fill, suffix, loose):
    from engine.validate import ends_in_a_loose_comma
    spec = spec_for(language)
    assert _as_lf_and_crlf(ends_in_a_loose_comma, spec, prefix, fill, suffix) == (loose, loose)
    note = "# 😀 é\n" if language == "python" else "// 😀 é\n"   # offsets in bytes: characters of 2 and 4 bytes before
    assert ends_in_a_loose_comma(spec, note + prefix, fill, suffix) is loose


@pytest.mark.parametrize("fill, unused", [
    ("\t\"math\"\n", True),                 # a real body line: a string alone, which Go refuses ("is not used")
    ("\terr\n", True),
    ("\ta + 1\n", True),
    ("\tfmt.Println(a)\n", False),
    ("\t(f())\n", False),
    ("\t<-done\n", False),
    ("\tx := <-done\n", False),
    ("\ta++\n", False),
])
def test_a_go_value_alone_on_its_line_is_not_offered(fill, unused):
    from engine.validate import go_value_unused
    prefix, suffix = "package m\n\n// 😀\nfunc f(a int) {\n", "}\n"
    assert _as_lf_and_crlf(go_value_unused, spec_for("go"), prefix, fill, suffix) == (unused, unused)
    assert go_value_unused(spec_for("python"), "def f():\n", "    'doc'\n", "") is False


@pytest.mark.parametrize("fill, empty", [
    ("        ///\n", True),            # a real fill: an empty doc comment in a Rust function's body
    ("#", True), ("  //!\r\n", True), ("/* */", True), ("//\n//\n", True),
    ("// 😀 note", False), ("# TODO", False), ("x = 1  #", False), ("", False), ("\r\n", False),
])
def test_a_fill_of_empty_comment_markers_says_nothing(fill, empty):
    from engine.validate import empty_comment
    assert empty_comment(fill) is empty


@pytest.mark.parametrize("language, prefix, fill, suffix, alone", [
    # real fills on development holes: a comment of the document again, the model's own words
    ("python", "def f(x):\n    y = x * 2\n    ", "# The Coverage interface is used to", "\n    return y\n", True),
    ("go", "func (b bases) Less(i, j int) bool {\n\t", "// The Coverage interface is used to", "\n}\n", True),
    ("rust", "fn f() {\n    let a = 1;\n    ", "/* see above */", "\n    a\n}\n", True),
    ("typescript", "function f() {\n  ", "// 😀 TODO\n  // later", "\n  return 1;\n}\n", True),
    # inside a comment's lines (above or below the cursor's line): a comment is what the user writes there
    ("python", "def f(x):\n    # first we double x,\n    ", "# then we add one", "\n    return x\n", False),
    ("go", "func f() {\n\t", "// Step one:", "\n\n\t// - read the file\n\tread()\n}\n", False),
    ("javascript", "/**\n * Adds.\n", " * @param a the first", "\n */\nfunction add(a) {}\n", False),
    # code, code before a comment, a comment after the code typed on the line: not a comment alone
    ("python", "def f(x):\n    ", "y = x  # double", "\n    return y\n", False),
    ("python", "def f(x):\n    y = x", "  # double", "\n    return y\n", False),
    ("rust", "fn f() {\n    ", "/* a */ let b = 2;", "\n}\n", False),
    ("go", "func f() {\n\t", "x := 1", "\n}\n", False),
])
def test_a_comment_alone_is_not_the_line(language, prefix, fill, suffix, alone):
    from engine.validate import comment_only
    assert _as_lf_and_crlf(comment_only, spec_for(language), prefix, fill, suffix) == (alone, alone)


@pytest.mark.parametrize("language, before, line, passes", [
    ("python", "    ", "import numpy as np", False),              # real fills: the module's import again in a body
    ("python", "        ", "from sphinx.locale import __", False),
    ("python", "    import nu", "mpy as np", False),              # typed, then the import's rest
    ("python", "    ", "import numpy", True),                     # another import than the module's
    ("python", "    ", "from os import sep", True),
    ("python", "    ", "np = 1", True),
    ("python", "", "import numpy as np", True),                   # at the top: not in a body (another check's)
    ("python", "    ", "import numpy as np\n    x = np.ones(2)", True),   # more than the one line
    ("rust", "        ", "use std::io;", True),                   # a test module's use: needed again
])
def test_an_import_the_module_has_at_its_top_is_not_written_in_a_body(language, before, line, passes):
    from engine.validate import imported_again
    imports = "use std::io;\n" if language == "rust" else "import numpy as np\nfrom sphinx.locale import __\n"
    text = f"# 😀 \ud800\n{imports}\ndef f(x):\n    y = x\n{before}\n    return y\n"
    start = text.index("    y = x\n") + len("    y = x\n") + len(before)
    for eol in ("\n", "\r\n"):   # (the engine reads a CRLF document as LF; the check takes either)
        at = start + text[:start].count("\n") * (len(eol) - 1)
        check = imported_again(spec_for(language), text.replace("\n", eol), at)
        assert (check is None if language == "rust" else check(line.replace("\n", eol)) is passes), (line, eol)
    assert imported_again(spec_for("python"), "def f():\n    \n", 13)("import os")   # no import at the top


@pytest.mark.parametrize("text, fill, passes", [
    ("def test_a(r):\n    x = r.get()\n    |\n", "return x", False),        # a real fill: a test's assertion lost
    ("def test_a(r):\n    x = r.get()\n|\n", "    return x  # 😀", False),  # the line's indentation in the fill
    ("class TestA:\n    def test_b(self):\n        |\n", "return self.x", False),
    ("def test_a(r):\n    if r:\n        |\n", "return 1", False),          # in a block of the test
    ("async def test_a(r):\n    |\n", "return await r", False),
    ("def test_a(r):\n    if r:\n        |\n", "return", True),            # no value
    ("def test_a(r):\n    def inner():\n        |\n", "return 1", True),     # a function inside the test
    ("def test_a(r):\n    def inner():\n        pass\n    if r:\n        |\n", "return 1", False),   # after it
    ("class T:\n    def test_a(\n        self,\n    ):\n        x = 1\n        |\n", "return x", False),
    ("def helper(r):\n    |\n", "return r", True),
    ("def test_a(r):\n    |\n", "assert r", True),
    ("def test_a(r):\n    pass\n\nx = [\n|\n", "return 1", True),          # not in the test (column 0)
])
def test_a_python_test_returns_no_value(text, fill, passes):
    from engine.returns import returns_in_a_test
    at = text.index("|")
    for eol in ("\n", "\r\n"):
        doc = text.replace("|", "").replace("\n", eol)
        check = returns_in_a_test(spec_for("python"), doc, at + text[:at].count("\n") * (len(eol) - 1))
        assert check(fill) is passes, (text, fill, eol)
    assert returns_in_a_test(spec_for("go"), "func TestA(t *testing.T) {\n\t\n}\n", 29) is None


@pytest.mark.parametrize("before, head, fill, passes", [
    ("def f(out):\n", "    ", "out = out", False),                  # real fills: a statement that does nothing
    ("class A:\n    def f(self):\n", "        self.na", "me = self.name", False),   # typed to its middle
    ("function f() {\n", "\t", "this.#id = this.#id; // 😀", True),   # a comment after it: left as written
    ("function f() {\n", "\t", "this.#id = this.#id;", False),
    ("fn f(x: u8) {\n", "    ", "let x = x;", True),                # a declaration that shadows
    ("func f() {\n", "\t", "v := v", True),
    ("def f(x):\n", "    ", "x = x + 1", True),
    ("foo(\n    a=a,\n", "    ", "x = x", True),                    # a call's lines: maybe a keyword argument
    ("def f(x):\n", "    ", "x=x", True),
    ("def f(out):\n", "    ", "out = out\n    y = 1", False),        # its first line
])
def test_a_line_that_assigns_a_name_to_itself_is_no_fill(before, head, fill, passes):
    from engine.validate import assigns_itself
    for eol in ("\n", "\r\n"):
        text = (before + head).replace("\n", eol)
        assert assigns_itself(text, len(text))(fill.replace("\n", eol)) is passes, (head, fill, eol)


def test_an_empty_comment_is_never_the_cursor_fill():
    from engine.backends.base import Candidate
    from engine.context import indent_options
    from engine.infill import _first_valid
    spec = spec_for("rust")
    for eol in ("\n", "\r\n"):
        text = f"fn f(a: u8) -> u8 {{{eol}    let b = a;{eol}{eol}    b{eol}}}{eol}"
        at = text.index(f"{eol}{eol}") + len(eol)   # the empty line, column 0
        hole = decide_hole(spec, text, at)
        win = window(spec, text, hole.start, hole.end, chars, 200, 200)
        for raw, offered in (("    ///", False), ("    let c = b;", True)):
            fill = _first_valid(Candidate((raw,), ((0.9,),), (((0, len(raw)),),), 0.0), hole, "", spec, win,
                                baseline_errors(spec, win, ""), indent_options(spec, text, hole))[0]
            assert (fill is not None) is offered, (raw, eol)


def test_the_typed_fragment_is_found_as_the_line_end_pattern_finds_it_in_linear_time():
    """``_word_tail`` gives what ``[ \\t]*[A-Za-z_][A-Za-z0-9_]*$`` finds (the typed word with the blanks before it),
    on every string of a small alphabet up to 6 characters, and on a 2 MB word in one pass (the pattern searched
    over such a line took minutes)."""
    import itertools
    import re

    from engine.context import _word_tail

    pattern = re.compile(r"[ \t]*[A-Za-z_][A-Za-z0-9_]*$")
    for n in range(7):
        for chars in itertools.product("a_0 \t.é", repeat=n):
            s = "".join(chars)
            m = pattern.search(s)
            assert _word_tail(s) == (m.group(0) if m else ""), s
    assert _word_tail("x = " + "Ab9_" * 500_000) == " " + "Ab9_" * 500_000   # with the blank before it
    assert _word_tail("x = 12" + "3" * 2_000_000) == ""


def test_the_best_ranked_copy_that_validates_is_taken_among_the_first_eight():
    """A candidate line the checks refuse (here: one that breaks the parse) gives way to the next best-ranked one,
    down to the ``COPIES_CHECKED``-th; one ranked below them is never validated."""
    from engine.backends.base import Candidate
    from engine.doclines import DOCUMENT
    from engine.infill import COPIES_CHECKED, _best_copy

    def line(text: str, score: float) -> tuple[Candidate, None, str, None]:
        return Candidate((text,), ((0.5,),), (((0, len(text)),),), score), None, DOCUMENT, None
    text = "def f(a):\n    b = a + 1\n\n    return b\n"
    at = text.index("\n\n") + 1
    hole = decide_hole(PY, text, at)
    win = window(PY, text, at, at, chars, 200, 200)
    baseline = baseline_errors(PY, win, "")
    broken = [line(f"    c = (a + {k}\n", -float(k)) for k in range(COPIES_CHECKED - 1)]   # best ranked, refused
    good = line("    b = b * 2\n", -10.0)
    fill, rejected = _best_copy([*broken, good], hole, "", PY, win, baseline, None)
    assert fill is not None and fill.text == "    b = b * 2" and fill.copied and rejected >= COPIES_CHECKED - 1
    one_more = [*broken, line("    c = (a\n", -9.0), good]          # the good line ranks just below the checked
    assert _best_copy(one_more, hole, "", PY, win, baseline, None) == (None, rejected + 1)


def test_a_copy_that_invents_a_name_gives_way_to_the_next_that_does_not():
    """With the names rule (``invents``), a valid copy that uses a name the document defines nowhere (which ``offer``
    would rank last and withhold) gives way to the next best-ranked valid copy that does not (the new-user trial's
    `return att|;`: the common line `return attrs;` ranked above `attachment`, the local ten lines up); with none
    that does not, the first valid one stays."""
    from engine.backends.base import Candidate
    from engine.doclines import COMMON, WORD
    from engine.infill import _best_copy
    from engine.names import invented_names

    js = spec_for("javascript")
    text = "function f(node) {\n  const attachment = { node };\n  use(attachment);\n  return att;\n}\n"
    at = text.index("att;") + 3
    hole = decide_hole(js, text, at)
    win = window(js, text, at, at, chars, 200, 200)
    baseline = baseline_errors(js, win, ";")

    def copy(rest: str, score: float, source: str) -> tuple[Candidate, None, str, None]:
        return Candidate((rest,), ((0.5,),), (((0, len(rest)),),), score), None, source, None

    def invents(fill):
        return bool(invented_names(js, text, fill.start, fill.text, fill.end))

    common, word = copy("rs", -1.0, COMMON), copy("achment", -5.0, WORD)
    assert _best_copy([common, word], hole, ";", js, win, baseline, None, text=text)[0].text == "rs"   # as ranked
    fill, _ = _best_copy([common, word], hole, ";", js, win, baseline, None, text=text, invents=invents)
    assert fill is not None and fill.text == "achment" and fill.copied
    fill, _ = _best_copy([common, copy("ributes", -2.0, WORD)], hole, ";", js, win, baseline, None, text=text,
                         invents=invents)
    assert fill is not None and fill.text == "rs"   # every valid copy invents one: the best-ranked
