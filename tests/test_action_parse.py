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


_SAMPLES = {
    "javascript": "// 😀 naïve\nconst s = 'é';\nfunction f(a, b) {\n  /* the sum */ const c = a + b * 2;\n"
                  "  if (c > 10) {\n    return g(c, [1, 2, 3]); // a note\n  }\n  return { value: c, name: `f_${a}` };\n}\n",
    "typescript": "function f(a: number): number {\n  // 日本語\n  return Math.max(a, 1);\n}\nlet x = [1, 2\n",
    "go": "package m\n\n// 😀\nfunc f(a int) (int, error) {\n\tif a > 1 {\n\t\treturn a, nil // ok\n\t}\n"
          "\treturn 0, nil\n}\n",
    "rust": "/// docs\nfn f(a: i32) -> i32 {\n    let s = \"é😀\"; // a note\n    if a > 1 { a } else { 0 }\n}\n",
    "python": "# 😀\nclass A:\n    def f(self, a):\n        return a + 1  # one\n\n    def g(self):\n        x = (\n",
}


def _edits(text: str) -> list[list[HoleFill]]:
    """Every one-token edit of each line (engine/repair.py's candidates) and comment openers, alone, and some
    pairs of them on different lines."""
    from engine.repair import candidates, line_bounds

    lines, at = [], 0
    while at <= len(text):
        lo, hi = line_bounds(text, at)
        lines.append((lo, hi))
        at = text.find("\n", at) + 1
        if at == 0:
            break
    one = [HoleFill(r.start, r.end, r.new) for r in candidates(text, lines)]
    one += [HoleFill(lo, lo, c) for lo, _ in lines for c in ("// ", "# ", "/* ", "*/")]
    pairs = [[one[i], one[j]] for i in range(0, len(one), 37) for j in range(i + 11, len(one), 53)
             if text.count("\n", one[i].end, one[j].start)]
    return [[f] for f in one] + pairs


@pytest.mark.parametrize("language", sorted(_SAMPLES))
def test_the_incremental_check_of_an_actions_edits_is_the_whole_parses(monkeypatch, language):
    """The edited document's tree is the user's reparsed incrementally (tree-sitter's edit and parse: at 5 MB about
    0.1 s where its whole parse took 1.2-1.5 s and a walk of the whole tree for comments 1.3-2 s more), and only the
    nodes at the edits are visited for comments: every verdict is the one that parsing the edited document anew and
    walking all of it gives, for every one-token edit of each line, comment openers, and pairs of edits."""
    import engine.validate
    from engine.languages import parse

    spec, text = spec_for(language), _SAMPLES[language]
    edits = _edits(text)
    incremental = [edits_keep_parsing(spec, text, fills) for fills in edits]
    fixing = [edits_keep_parsing(spec, text, fills, fixing=True) for fills in edits]

    def whole_parse(spec, old_tree, text, data, placed, tick=None):
        return parse(spec, data)

    def walked(tree, lo, hi):   # every node of the tree, as the check walked before
        found, stack = [], [tree.root_node]
        while stack:
            node = stack.pop()
            if node.type.endswith("comment"):
                if lo <= node.start_byte < hi:
                    found.append((node.start_byte, node.end_byte))
            else:
                stack.extend(node.children)
        return found
    monkeypatch.setattr(engine.validate, "_reparsed", whole_parse)
    monkeypatch.setattr(engine.validate, "_comments_starting", walked)
    assert incremental == [edits_keep_parsing(spec, text, fills) for fills in edits]
    assert fixing == [edits_keep_parsing(spec, text, fills, fixing=True) for fills in edits]
    assert True in incremental and False in incremental


@pytest.mark.parametrize("language", sorted(_SAMPLES))
def test_the_comments_at_an_edit_are_those_of_a_walk_of_the_whole_tree(language):
    from engine.languages import parse
    from engine.validate import _comments_starting

    spec = spec_for(language)
    data = _SAMPLES[language].encode("utf-8")
    tree = parse(spec, data)
    every = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type.endswith("comment"):
            every.append((node.start_byte, node.end_byte))
        else:
            stack.extend(node.children)
    assert every
    for lo in range(len(data) + 1):
        for hi in range(lo, min(len(data), lo + 40) + 1):
            assert sorted(_comments_starting(tree, lo, hi)) == sorted(s for s in every if lo <= s[0] < hi), (lo, hi)


def test_a_fix_in_a_large_document_is_checked_without_parsing_it_anew(monkeypatch):
    """The whole-document check of a fix's edit parsed the user's document and the edited one from scratch and walked
    the edited tree whole (a 5 MB JavaScript file: 2.5-3.5 s of the engine thread, after the survey had parsed the
    same document for the action). The user's tree is the survey's (``languages.document_tree``), the edited one
    reparsed from it; an edit that breaks the document is still refused."""
    import engine.languages
    import engine.validate
    from engine.targets import survey

    text = "".join(f"function f_{i}(a, b) {{\n  // step {i}\n  const c = g(a, b * {i});\n  return c;\n}}\n\n"
                   for i in range(1500))
    at = text.index("b * 750)") + len("b * 750")
    broken = text[:at] + text[at + 1:]
    assert len(broken.encode()) > 1 << 16
    spans = survey(broken, "javascript", at, at).errors   # the code action's survey: the document parsed once
    whole: list[int] = []
    for module, name in ((engine.languages, "parse"), (engine.validate, "_parse_anew")):
        def counted(spec, source, *args, _parse=getattr(module, name), **kwargs):
            old_tree = args[0] if args else kwargs.get("old_tree")
            if old_tree is None and len(source) > len(broken) // 2:
                whole.append(len(source))
            return _parse(spec, source, *args, **kwargs)
        monkeypatch.setattr(module, name, counted)
    request = FixRequest(broken, "javascript", spans)
    assert keep_parsing(request, _completion(HoleFill(at, at, ")"))).fills == (HoleFill(at, at, ")"),)
    assert whole == []   # before: 2, the document and the edited one
    later = broken.index("return c;", at)
    for fills in ([HoleFill(at, at, ")"), HoleFill(later, later + 9, "return (c;")],   # fixes one, breaks another
                  [HoleFill(at, at, ") // done")],                                    # comments out the ';'
                  [HoleFill(at, at, "]")]):
        assert keep_parsing(request, _completion(*fills)).fills == (), fills


def _walk_all_for_empty_blocks(tree) -> int:
    """The empty blocks of a walk of every node of the tree (the check's walk before it opened only statements)."""
    count, stack = 0, [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "block" and node.named_child_count == 0:
            count += 1
        stack.extend(node.children)
    return count


def _damaged(text: str, seed: int, n: int) -> list[str]:
    """``n`` copies of ``text``, each damaged at one place: a character deleted, an opener without a body inserted
    (``if x:``, ``else:``), an unclosed bracket or quote, a line's indentation changed."""
    import random

    rng = random.Random(seed)
    out = []
    for _ in range(n):
        at = rng.randrange(len(text))
        line = text.rfind("\n", 0, at) + 1
        kind = rng.randrange(6)
        if kind == 0:
            out.append(text[:at] + text[at + 1:])
        elif kind in (1, 2):
            indent = text[line:at][:len(text[line:at]) - len(text[line:at].lstrip())]
            out.append(text[:line] + indent + ("if x:\n" if kind == 1 else "else:\n") + text[line:])
        elif kind == 3:
            out.append(text[:at] + "(" + text[at:])
        elif kind == 4:
            out.append(text[:at] + "'" + text[at:])
        else:
            out.append(text[:line] + "   " + text[line:])
    return out


def test_the_empty_blocks_of_a_python_document_are_counted_opening_only_its_statements(monkeypatch):
    """For a Python document over Python's size limit the whole-document check of a code action's edit counts the
    empty blocks (an opener without its body) of the user's tree and of the edited one: a walk of every node of both
    trees (at 5 MB 860,000 nodes each, 0.26-0.9 s a walk, 90% of the check). A block is only ever under a compound
    statement, a block or the module (tree-sitter-python's grammar), or under an error: only those are opened (at 5 MB
    42,000 nodes looked at; in argparse.py, 4,016 of 18,176). The count is the whole walk's, on real files of the standard library damaged at 60
    places each."""
    import argparse
    import inspect

    import engine.validate
    from engine.languages import parse
    from engine.validate import _empty_blocks

    spec = spec_for("python")
    for module in (argparse, inspect):
        with open(module.__file__, encoding="utf-8") as f:
            text = f.read()
        docs = [text] + _damaged(text, 7, 60)
        counts = [_empty_blocks(parse(spec, doc)) for doc in docs]
        assert counts == [_walk_all_for_empty_blocks(parse(spec, doc)) for doc in docs]
        assert counts[0] == 0 and max(counts) > 0
        looked: list[int] = []
        monkeypatch.setattr(engine.validate, "_TICK_NODES", 1)   # a tick for each node looked at
        tree = parse(spec, text)
        _empty_blocks(tree, lambda: looked.append(1))
        monkeypatch.undo()
        assert 0 < len(looked) < tree.root_node.descendant_count / 3, (len(looked), tree.root_node.descendant_count)


def test_with_the_users_own_error_above_an_edit_in_a_large_python_document_no_body_is_left_empty():
    """Over Python's size limit tree-sitter alone judges an edit: an opener without its body (an empty block) is one
    more error, in a document with the user's own error above the edit."""
    from engine.validate import _PYTHON_CHECK_LIMIT

    body = "".join(f"def f{i}(x):\n    if x > {i}:\n        return [x, {{'k': (x, {i})}}]\n    return None\n\n\n"
                   for i in range(3000))
    text = "def broken():\n    y = (\n\n\n" + body
    assert len(text) > _PYTHON_CHECK_LIMIT
    at = text.index("    return None\n", len(text) // 2) + len("    return None")
    assert not edits_keep_parsing(spec_for("python"), text, [HoleFill(at, at, "\n    if x:")])
    assert edits_keep_parsing(spec_for("python"), text, [HoleFill(at, at, "\n    if x:\n        return 1")])
