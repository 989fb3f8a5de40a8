"""An empty line's candidate lines: what came after the line above and before the line below elsewhere
(engine/doclines.py ``neighbour_options``, engine/worklines.py ``steps_of`` and ``Workspace.neighbours``); and a
typed line's: those of them that start with the typed code, first (``line_options``' ``pairs``)."""

from __future__ import annotations

import math
import re
import threading
from dataclasses import replace

from engine import InfillRequest, doclines, worklines
from engine.backends.base import Control
from engine.config import FillOptions
from engine.confidence import features
from engine.context import decide_hole, indent_options
from engine.doclines import BETWEEN, NEIGHBOUR, NONE, line_options, neighbour_options
from engine.infill import complete
from engine.languages import spec_for
from engine.requests import HoleFill, HoleKind
from tests.test_doclines import Scoring
from tests.test_worklines import workspace_of

PY, GO = spec_for("python"), spec_for("go")

GO_DOC = ("func a() error {\n\tx, err := f()\n\tif err != nil {\n\t\treturn err\n\t}\n\treturn nil\n}\n\n"
          "func b() error {\n\ty, err := g()\n\tif err != nil {\n\t}\n\treturn nil\n}\n")
GO_HOLE = GO_DOC.index("\t}\n\treturn nil\n}\n", GO_DOC.index("func b"))   # column 0 of the "}" line in b


def options_at(spec, text: str, at: int, workspace=None, language: str | None = None):
    hole = decide_hole(spec, text, at)
    line_end = text.find("\n", hole.end)
    rest = text[hole.end: len(text) if line_end < 0 else line_end]
    return hole, neighbour_options(text, hole, rest, language or spec.name, workspace)


def test_steps_of_pairs_code_lines_across_blank_lines_with_their_indentation_step():
    text = "if x:\r\n\tcall(😀)\r\n\r\n\r\n\treturn 1\r\n}\r\n" + "y" * 300 + "\nz = 1\n"
    steps = worklines.steps_of(text)
    assert ("if x:", "call(😀)", 1) in steps
    assert ("call(😀)", "return 1", 0) in steps         # blank lines (CRLF) skipped
    assert ("return 1", "}", -1) in steps                # a lone closer counts
    assert not any("y" * 300 in (a, b) for a, b, _ in steps)   # over LONGEST: no pair, and none across it
    assert ("}", "z = 1", 0) not in steps
    assert worklines.steps_of("") == frozenset() and worklines.steps_of("one line") == frozenset()


def test_workspace_neighbours_count_files_follow_changes_and_keep_lines_seen_between_both():
    ws = worklines.Workspace()
    ws.update("/a.go", "go", "if err != nil {\n\treturn err\n}\n")
    ws.update("/b.go", "go", "if err != nil {\n\treturn err\n}\nif err != nil {\n\treturn err\n}\n")
    ws.update("/c.go", "go", "if err != nil {\n\tpanic(err)\n}\n")
    assert ws.neighbours("go", "if err != nil {", "}") == ([], [])       # nothing until the tables are built
    ws.refresh()
    after, before = ws.neighbours("go", "if err != nil {", "}")
    assert after[0] == ("return err", 1, 2) and ("panic(err)", 1, 1) in after   # files, not occurrences
    assert ("return err", 1, 2) in before and ("panic(err)", 1, 1) in before
    ws.update("/b.go", "go", "if err != nil {\n\tlog(err)\n}\n")        # a changed file counts again
    ws.refresh()
    after, _ = ws.neighbours("go", "if err != nil {", None)
    assert ("return err", 1, 1) in after and ("log(err)", 1, 1) in after
    ws.remove("/a.go")
    ws.refresh()
    after, _ = ws.neighbours("go", "if err != nil {", None)
    assert all(line != "return err" for line, _, _ in after)
    assert ws.neighbours("rust", "if err != nil {", "}") == ([], [])
    # more lines than ``most`` after the line above: the top ones, plus one seen before the line below too
    many = worklines.Workspace()
    for i in range(30):
        many.update(f"/{i}.go", "go", "".join(f"start()\nx{j}()\n" for j in range(30 - i)))   # x_j in 30 - j files
    many.update("/rare.go", "go", "start()\nrare()\nstop()\n")
    many.refresh()
    after, _ = many.neighbours("go", "start()", "stop()", most=4)
    assert after[:4] == [("x0()", 0, 30), ("x1()", 0, 29), ("x2()", 0, 28), ("x3()", 0, 27)]
    assert ("rare()", 0, 1) in after
    many.update("/more.go", "go", "start()\nx0()\n")                 # the next tables count it
    many.refresh()
    assert many.neighbours("go", "start()", None, most=4)[0][0] == ("x0()", 0, 31)


def test_an_empty_line_gets_the_lines_seen_beside_its_neighbours_indented_by_their_step():
    hole, opts = options_at(GO, GO_DOC, GO_HOLE)
    assert hole.kind is HoleKind.LINE and hole.keep_newline
    # "return err" came after "if err != nil {" and before "}" in a(): between both, one level deeper (a tab)
    assert opts.texts[0] == "\t\treturn err\n" and opts.sources[0] == BETWEEN
    assert all(s in (BETWEEN, NEIGHBOUR) for s in opts.sources)
    assert math.isclose(sum(math.exp(p) for p in opts.priors if p is not None), 1.0) or len(opts.texts) < 16
    # the pair across the hole ("if err != nil {" then "}" in b) is not a sighting: "}" is not offered
    assert "\t}\n" not in opts.texts
    # typed indentation is kept as typed; an empty line in a block (no code after): no line break
    typed = GO_DOC[:GO_HOLE] + "\t\t\n" + GO_DOC[GO_HOLE:]
    hole, opts = options_at(GO, typed, GO_HOLE + 2)
    assert hole.heal == "\t\t" and opts.texts[0] == "\t\treturn err"
    # with code typed on the line it is the typed line's options, not these
    code = GO_DOC[:GO_HOLE] + "\t\tret\n" + GO_DOC[GO_HOLE:]
    hole, opts = options_at(GO, code, GO_HOLE + 5)
    assert opts is NONE


def test_the_indentation_step_ignores_first_column_lines_and_comment_stars():
    """A Go file is mostly lines at the first column (funcs, closing braces, comments): its step is still a tab,
    and a tab where no line is indented yet. A JSDoc block's `` * `` lines do not make the step one space."""
    funcs = "".join(f"// F{i} does it.\nfunc F{i}() bool {{\n\treturn true\n}}\n\n" for i in range(6))
    doc = "package p\n\n" + funcs + "func G(x int) bool {\n\n}\n"
    hole, opts = options_at(GO, doc, doc.index("{\n\n}") + 2)
    assert opts.texts[0] == "\treturn true"                 # seen before "}": one tab deeper, not 4 spaces
    ws = worklines.Workspace()
    ws.update("/other.go", "go", "func G(x int) bool {\n\treturn x > 0\n}\n")
    ws.refresh()
    bare = "package p\n\nfunc G(x int) bool {\n\n}\n"
    hole, opts = options_at(GO, bare, bare.index("{\n\n}") + 2, ws)
    assert opts.texts[0] == "\treturn x > 0"              # nothing indented nearby: gofmt's tab
    ts = ("class A {\n  /**\n   * The name.\n   * Compared.\n   */\n  equals(that: A): boolean {\n\n  }\n}\n")
    other = worklines.Workspace()
    other.update("/b.ts", "typescript", "  equals(that: A): boolean {\n    return this.name === that.name\n  }\n")
    other.refresh()
    hole, opts = options_at(spec_for("typescript"), ts, ts.index("{\n\n  }") + 2, other)
    assert opts.texts[0] == "    return this.name === that.name"   # two spaces deeper, not one


def test_neighbour_options_with_spaces_crlf_and_a_workspace():
    doc = ("def f(x):\r\n    if x is None:\r\n        raise ValueError(x)\r\n    return x\r\n\r\n"
           "def g(x):\r\n    if x is None:\r\n")
    hole, opts = options_at(PY, doc, len(doc))            # the end of the file, an empty last line
    assert hole.kind is HoleKind.BLOCK
    assert opts.texts[0] == "        raise ValueError(x)" and opts.sources[0] == NEIGHBOUR
    ws = worklines.Workspace()
    ws.update("/one.py", "python", "if x is None:\n    return 0\n" * 3 + "if x is None:\n    raise KeyError(x)\n")
    ws.update("/two.py", "python", "if x is None:\n\treturn 0\n")
    ws.refresh()
    hole, opts = options_at(PY, doc, len(doc), ws)
    assert set(opts.texts) == {"        raise ValueError(x)", "        return 0", "        raise KeyError(x)"}
    assert opts.texts[0] == "        return 0"     # in two files (once each, however often in one), then the others
    assert opts.priors[0] == math.log(2 / 4)
    # nothing around (an empty document, a document of one line), or no workspace for the language: nothing
    assert options_at(PY, "", 0)[1] == NONE
    assert options_at(PY, "\n\n", 1)[1] == NONE
    assert options_at(GO, "x := 1\n", 7, ws)[1] == NONE


def test_neighbour_options_reach_the_backend_and_a_copied_line_carries_its_prior():
    backend = Scoring("\t\tpanic(1)\n", {"\t\treturn err\n": 0.9})
    c = complete(backend, FillOptions(), InfillRequest(GO_DOC, GO_HOLE, "go"), Control(lambda s: None))
    # options go to the attempt with the most slots (24), not the 8-slot one
    scored = [p for p in backend.plans if p.options]
    assert len(scored) == 1 and scored[0].options[0] == "\t\treturn err\n"
    copy = next(f for f in c.considered if f.copied)
    assert copy.text == "\t\treturn err\n" and copy.between and copy.neighbour is not None
    assert c.fills and c.fills[0].text == "\t\treturn err\n"
    feats = features(copy, [], GO_DOC, GO, HoleKind.LINE)
    assert feats["neighbour"] == 1 and feats["between"] == 1 and feats["neighbour_prior"] == copy.neighbour
    plain = features(replace(copy, neighbour=None, between=False), [], GO_DOC, GO, HoleKind.LINE)
    assert plain["neighbour"] == plain["between"] == plain["neighbour_prior"] == 0
    # documentLines off: no options at all
    backend = Scoring("\t\tpanic(1)\n", {})
    complete(backend, FillOptions(document_lines=False), InfillRequest(GO_DOC, GO_HOLE, "go"), Control(lambda s: None))
    assert not any(p.options for p in backend.plans)


def test_the_engine_writes_a_neighbours_line_through_the_real_model(embedded_engine):
    text = ("import json\n\n\ndef load(path):\n    with open(path) as handle:\n        data = json.load(handle)\n"
            "    return data\n\n\ndef load_other(path):\n    with open(path) as handle:\n\n    return data\n")
    at = text.index("\n\n    return data\n", text.index("load_other")) + 1
    c = embedded_engine.infill_sync(InfillRequest(text, at, "python"), timeout=60)
    copies = [f for f in c.considered if f.copied]
    assert copies and copies[0].text.strip() == "data = json.load(handle)" and copies[0].between
    assert c.fills and c.fills[0].text.strip() == "data = json.load(handle)"



def test_a_body_line_written_before_its_blocks_end_takes_no_line_seen_before_that_end():
    """"Complete body" asks for a body's lines one by one with the block's end below them (``ends_block``): what is
    seen before a ``}`` (a function's last line: ``return nil``) says nothing of the body's next line, what is seen
    after the line above still does. (On the actions' development bodies, with the workspace: 18 of 96 offered lines
    were the original's; 64 of 154 with this.)"""
    from engine.serve import serve
    from engine.targets import survey

    doc = ("package p\n\nfunc a() error {\n\tx := f()\n\treturn nil\n}\n\nfunc b() error {\n\tlog()\n\treturn nil\n}\n\n"
           "func c() error {\n\n}\n")
    at = doc.index("error {\n\n}") + len("error {\n")
    hole = decide_hole(GO, doc, at)
    rest = ""
    assert "\treturn nil" in neighbour_options(doc, hole, rest, "go").texts          # seen before "}" twice
    # after the line above, or one a name apart from it (``_analogies``): the first lines of a() and b()
    assert set(neighbour_options(doc, hole, rest, "go", before_below=False).texts) == {"\tx := f()", "\tlog()"}
    ws = workspace_of("func c() error {\n\ty := g()\n\treturn y\n}\n", "func d() {\n\tz()\n\treturn\n}\n",
                      language="go", suffix=".go")
    texts = neighbour_options(doc, hole, rest, "go", ws, before_below=False).texts
    assert "\ty := g()" in texts and not {"\treturn nil", "\treturn y", "\treturn"} & set(texts)
    # through "Complete body": no line its body's next line is offered was seen only before the block's end
    worklines.register("test:ends", ws)
    try:
        found = survey(doc, "go", at, at)
        backend = Scoring("\tpanic(1)", {"\ty := g()": 0.9, "\treturn nil": 0.99, "\treturn y": 0.9})
        from engine.requests import FillRequest
        serve(backend, FillOptions(min_confidence=0.0), FillRequest(doc, "go", (found.body,), body=True,
                                                                     workspace="test:ends"), Control(lambda s: None))
        offered = [o for p in backend.plans for o in p.options]
        assert "\ty := g()" in offered and "\treturn nil" not in offered, offered
        # the cursor's own empty line keeps the lines seen before the code below it
        backend = Scoring("\tpanic(1)", {})
        complete(backend, FillOptions(), InfillRequest(doc, at, "go"), Control(lambda s: None))
        assert "\treturn nil" in [o for p in backend.plans for o in p.options]
    finally:
        worklines.unregister("test:ends")

def test_an_empty_line_gets_the_lines_beside_lines_one_name_apart_from_its_neighbours_with_the_name_changed():
    # the line above is another function's header with one name changed: the line after that one, as it is
    doc = ("def finfo(dtyp):\n    torch_dtype = _dtypes.dtype(dtyp).torch_dtype\n    return torch.finfo(torch_dtype)\n"
           "\n\ndef iinfo(dtyp):\n\n    return torch.iinfo(torch_dtype)\n")
    hole, opts = options_at(PY, doc, doc.index("(dtyp):\n\n", 20) + 8)
    # seen after a line like the one above and before a line like the one below: beside both, indented one step
    assert opts.texts == ("    torch_dtype = _dtypes.dtype(dtyp).torch_dtype",) and opts.sources == (BETWEEN,)
    # the changed name is changed in the line taken too (whole names only); CRLF, tabs and an emoji kept as they are
    tree = "\tif left is not None:\r\n\t\tvisit(left, \"😀\", left_x)\r\n\tif right is not None:\r\n\t\t\r\n"
    hole, opts = options_at(PY, tree, tree.index("\t\t\r\n", 30) + 2)
    assert hole.heal == "\t\t" and opts.texts == ("\t\tvisit(right, \"😀\", left_x)",) and opts.sources == (NEIGHBOUR,)
    assert options_at(PY, "x = 1\nx = 2\ny = 1\n\n", 18)[1].texts == ("y = 2",)
    assert options_at(GO, "a := f(x)\nb := g(x)\na := f(y)\n\n", 30)[1].texts == ("b := g(y)",)
    # two names apart, each changed wherever it stands; one name changed in two places
    text = "q = self.q_proj(x)\nq = q.view(n, len(q))\nk = self.k_proj(x)\n\n"
    assert options_at(PY, text, len(text) - 1)[1].texts == ("k = k.view(n, len(k))",)
    text = "x = f(a, a)\ny = a\nx = f(b, b)\n\n"
    assert options_at(PY, text, len(text) - 1)[1].texts == ("y = b",)
    # three names apart, two names that become one, more than the line around them changed, or a line that is the
    # neighbour itself once its name is changed: nothing
    for text in ("t = g(a, b, c)\nu = 1\nt = g(d, e, f)\n\n", "t = g(a, b)\nu = a + b\nt = g(c, c)\n\n"):
        assert options_at(PY, text, len(text) - 1)[1] == NONE
    assert options_at(PY, "if left is None:\n    visit(left)\nif right is not None:\n\n", 55)[1] == NONE
    assert options_at(PY, "f(a)\nf(a)\nf(b)\n\n", 15)[1] == NONE
    # a neighbour longer than a line can be (a 2 MB line) is not searched for: none of its copies are made
    long = "x = g('" + "z" * doclines.LONGEST + "')"
    text = f"{long}\nx = 2\n{long.replace('x', 'y', 1)}\n\n"
    assert options_at(PY, text, len(text) - 1)[1] == NONE
    assert options_at(PY, text.replace("z" * doclines.LONGEST, "z"), len(text) - doclines.LONGEST * 2 + 1)[1].texts \
        == ("y = 2",)


def test_parallel_code_changes_the_word_that_changed_in_the_neighbours_name_in_the_lines_other_names_too():
    # clear_local_storage -> clear_session_storage: one word of the name changed, so localStorage -> sessionStorage
    doc = ('    def clear_local_storage(self):\n        self.driver.execute_script("window.localStorage.clear()")\n'
           "\n    def clear_session_storage(self):\n\n")
    assert options_at(PY, doc, len(doc) - 1)[1].texts == (
        '        self.driver.execute_script("window.sessionStorage.clear()")',)
    # in each name's case (UPPER_SNAKE, CamelCase), a number as a word; CRLF, tabs and an emoji kept as they are
    doc = ("fn sizeof_header32() {\r\n\tassert_eq!(SIZEOF_HEADER_32, size_of::<Header32>()); // 😀\r\n}\r\n"
           "fn sizeof_header64() {\r\n\t\r\n}\r\n")
    hole, opts = options_at(spec_for("rust"), doc, doc.index("\t\r\n}", 60) + 1)
    # (the line itself is there too: it is seen before a "}")
    assert hole.heal == "\t" and opts.texts == ("\tassert_eq!(SIZEOF_HEADER_32, size_of::<Header32>()); // 😀",
                                                "\tassert_eq!(SIZEOF_HEADER_64, size_of::<Header64>()); // 😀")
    doc = ("  getLocalItem(key) {\n    return window.localStorage.getItem(LOCAL_PREFIX + key);\n  }\n"
           "  getSessionItem(key) {\n\n")
    assert options_at(spec_for("javascript"), doc, len(doc) - 1)[1].texts == (
        "    return window.sessionStorage.getItem(SESSION_PREFIX + key);",)
    # two names renamed (q -> k, q_proj -> k_proj): their changed word is changed in the other names too
    text = "q = self.q_proj(x)\nq = q.view(n, q_len)\nk = self.k_proj(x)\n\n"
    assert options_at(PY, text, len(text) - 1)[1].texts == ("k = k.view(n, k_len)",)


def test_a_word_changes_only_where_the_names_differ_in_that_word_alone():
    renamed = doclines._renamed
    assert renamed("localStorage, LOCAL, Local, local_x", {"get_local": "get_session"}) \
        == "sessionStorage, SESSION, Session, session_x"
    assert renamed("HTTPServer(http_port)", {"http_get": "ftp_get"}) == "FTPServer(ftp_port)"
    # two words changed, a word added, a one-word name: whole names only
    line = "get_local_a(get_local, left, left_x, localStorage)"
    assert renamed(line, {"get_local_a": "set_session_a"}) == "set_session_a(get_local, left, left_x, localStorage)"
    assert renamed(line, {"get_local": "get_local_b"}) == "get_local_a(get_local_b, left, left_x, localStorage)"
    assert renamed(line, {"left": "right"}) == "get_local_a(get_local, right, left_x, localStorage)"
    # the same word changed two ways by two names: left alone; the renamed names themselves as renamed
    assert renamed("a_local + b_local + localX", {"a_local": "a_session", "b_local": "b_global"}) \
        == "a_session + b_global + localX"
    assert renamed("", {"a_b": "a_c"}) == ""
    # a Rust number's type is a word too (``7.0f32`` beside ``from_f32`` -> ``from_f64``); not a hex digit or a name
    assert renamed("assert_eq!(f.to_f32(), 7.0f32); 1u8, 0x32, 3f32", {"from_f32": "from_f64"}) \
        == "assert_eq!(f.to_f64(), 7.0f64); 1u8, 0x32, 3f64"
    assert renamed("f(7.0f32)", {"a": "b"}) == "f(7.0f32)"


def test_a_typed_line_gets_the_lines_of_parallel_code_that_start_as_typed_first():
    doc = ("def walk(node, visit):\n    if left is not None:\n        walk(left, visit)\n        log(left)\n"
           "    if right is not None:\n        walk(right, visit)\n        lo\n    visit(node)\n")
    at = doc.index("        lo\n") + 10
    opts = typed_options(PY, doc, at)
    # "log(left)" came after "walk(left, visit)", the line above with one name changed: renamed, it comes first
    assert opts.texts[0] == "        log(right)\n" and opts.sources[0] == NEIGHBOUR   # (the typed word is healed)
    assert "        log(left)\n" in opts.texts[1:]     # the document's own line, after it
    assert typed_options(PY, doc, at, pairs=False).texts == ("        log(left)\n",)


def test_the_engine_writes_a_line_of_parallel_code_through_the_real_model(embedded_engine):
    text = ("def walk(node, visit):\r\n    left, right = node.left, node.right\r\n    if left is not None:\r\n"
            "        walk(left, visit)\r\n    if right is not None:\r\n\r\n    visit(node)\r\n")
    at = text.index("if right is not None:\r\n") + len("if right is not None:\r\n")
    c = embedded_engine.infill_sync(InfillRequest(text, at, "python"), timeout=60)   # the default bar, CRLF
    assert c.fills and c.fills[0].text == "        walk(right, visit)" and c.fills[0].copied
    assert (c.fills[0].start, c.fills[0].end) == (at, at)


def test_workspace_neighbours_that_start_with_the_typed_code():
    ws = worklines.Workspace()
    ws.update("/a.go", "go", "if err != nil {\n\treturn err\n}\n")
    ws.update("/b.go", "go", "if err != nil {\n\treturn fmt.Errorf(\"b: %w\", err)\n}\n")
    ws.update("/c.go", "go", "if err != nil {\n\tpanic(err)\n}\nif err != nil {\n\treturn err\n}\n")
    ws.refresh()
    after, before = ws.neighbours("go", "if err != nil {", "}", start="return ")
    assert after == [("return err", 1, 2), ("return fmt.Errorf(\"b: %w\", err)", 1, 1)]
    assert [line for line, _, _ in before] == ["return err", "return fmt.Errorf(\"b: %w\", err)"]
    assert ws.neighbours("go", "if err != nil {", "}", start="return err") == ([], [])   # nothing more than typed
    assert ws.neighbours("go", "if err != nil {", None, start="zz") == ([], [])
    # a start beyond the basic plane, and a file counted after the last refresh: the last tables answer
    ws.update("/d.go", "go", "if err != nil {\n\tlog(\"😀 é\")\n}\nif err != nil {\n\tlog(\"😀 x\")\n}\n")
    assert ws.neighbours("go", "if err != nil {", None, start="log(") == ([], [])
    ws.refresh()
    after, _ = ws.neighbours("go", "if err != nil {", None, start='log("😀')
    assert sorted(after) == [('log("😀 x")', 1, 1), ('log("😀 é")', 1, 1)]


def typed_options(spec, text: str, at: int, workspace=None, pairs: bool = True):
    hole = decide_hole(spec, text, at)
    line_end = text.find("\n", hole.end)
    rest = text[hole.end: len(text) if line_end < 0 else line_end]
    return line_options(text, hole, rest, None, workspace.table(spec.name) if workspace else None,
                        (spec.name, workspace) if pairs else None)


def test_a_typed_line_gets_the_lines_beside_its_neighbours_that_start_as_typed_first():
    doc = ("func a() error {\n\tx, err := f()\n\tif err != nil {\n\t\treturn errors.Wrap(err)\n\t}\n"
           "\treturn nil\n}\n\nfunc b() error {\n\tif err := g(); err != nil {\n\t\treturn err\n\t}\n"
           "\ty, err := g()\n\tif err != nil {\n\t\tret\n\t}\n\treturn nil\n}\n")
    at = doc.index("\t\tret\n") + 5
    opts = typed_options(GO, doc, at)
    # the word fragment is regenerated (healed), so each option is the whole line from its indentation.
    # "return errors.Wrap(err)" sat between "if err != nil {" and "}"; "return nil" (twice) and "return err"
    # (once) only before a "}"
    assert opts.texts[:3] == ("\t\treturn errors.Wrap(err)\n", "\t\treturn nil\n", "\t\treturn err\n")
    assert opts.sources[:3] == (BETWEEN, NEIGHBOUR, NEIGHBOUR)
    assert opts.priors[:3] == (math.log(2 / 5), math.log(2 / 5), math.log(1 / 5))   # shares of the sightings
    # without pairs: the document's lines, nearest first (the line below before the line above), as before
    assert typed_options(GO, doc, at, pairs=False).texts == ("\t\treturn nil\n", "\t\treturn err\n",
                                                           "\t\treturn errors.Wrap(err)\n")
    # the workspace's sightings join the document's (and only those starting as typed reach the options)
    ws = worklines.Workspace()
    for i in range(3):
        ws.update(f"/w{i}.go", "go", "if err != nil {\n\treturn wrapped(err)\n}\nif err != nil {\n\tlog(err)\n}\n")
    ws.refresh()
    opts = typed_options(GO, doc, at, ws)
    assert opts.texts[0] == "\t\treturn wrapped(err)\n" and opts.sources[0] == BETWEEN
    assert "log(err)\n" not in "".join(opts.texts)
    # an editor's closers after the cursor: a candidate must end with them, its rest stops before them
    closed = doc.replace("\t\tret\n", "\t\treturn errors.Wrap()\n")
    at = closed.index("errors.Wrap()") + len("errors.Wrap(")
    opts = typed_options(GO, closed, at)
    assert opts.texts[0] == "err" and opts.sources[0] == BETWEEN


def test_a_typed_line_beside_its_neighbours_reaches_the_fill_with_its_prior():
    doc = ("def f(p):\n    with open(p) as h:\n        data = json.load(h)\n    return data\n\n"
           "def g(p):\n    with open(p) as h:\n        data = json.loads(h.read())\n    print(data)\n\n"
           "def k(p):\n    with open(p) as h:\n        data = js\n    return data\n")
    at = doc.index("data = js\n") + len("data = js")
    backend = Scoring("on.dump(h)", {"on.load(h)\n": 0.3, "on.loads(h.read())\n": 0.6})
    c = complete(backend, FillOptions(common_lines=False), InfillRequest(doc, at, "python"), Control(lambda s: None))
    assert backend.plans[0].options[:2] == ("on.load(h)\n", "on.loads(h.read())\n")   # beside both first
    copy = next(f for f in c.considered if f.copied)
    # ranked first whatever its score: seen between "with open(p) as h:" and "return data"
    assert copy.text == "on.load(h)" and copy.between and copy.neighbour == math.log(2 / 3)   # 2 of 3 sightings
    assert c.fills and c.fills[0].text == "on.load(h)"


def test_a_line_beside_the_neighbours_ranks_before_any_other_candidate_line():
    from engine.backends.base import Candidate
    from engine.doclines import COMMON, DOCUMENT, WORKSPACE
    from engine.infill import copy_rank

    def cand(score):
        return Candidate(("x",), ((0.5,),), (((0, 1),),), score)
    one_side = copy_rank(cand(-6.0), math.log(0.1), NEIGHBOUR)
    assert one_side > max(copy_rank(cand(-0.01), None, DOCUMENT), copy_rank(cand(-0.01), 0.0, WORKSPACE),
                          copy_rank(cand(-0.01), 0.0, COMMON))
    assert copy_rank(cand(-9.0), math.log(0.01), BETWEEN) > copy_rank(cand(-0.01), 0.0, NEIGHBOUR)
    assert copy_rank(cand(-1.0), math.log(0.5), NEIGHBOUR) > copy_rank(cand(-1.0), math.log(0.25), NEIGHBOUR)


LOAD = ("func load(name string) error {\n\tf, err := open(name)\n\tif err != nil {\n\n\t}\n\treturn use(f)\n}\n")


def test_an_empty_lines_options_rank_the_line_whose_names_are_near_first():
    """A line seen more often but with names the document has nowhere ranks after one whose names are all near
    the cursor (``doclines.neighbour_rank``, fitted on the development holes); the options keep their order of
    sightings, the rank decides which is the copy (``infill.copy_rank``)."""
    from engine.backends.base import Candidate
    from engine.doclines import RANK_SCORE, neighbour_rank
    from engine.infill import copy_rank
    ws = worklines.Workspace()
    for i in range(2):
        ws.update(f"/w{i}.go", "go", 'if err != nil {\n\treturn errors.Wrap(err, "load")\n}\n')
    ws.update("/v.go", "go", "if err != nil {\n\treturn err\n}\n")
    ws.refresh()
    at = LOAD.index("{\n\n\t}") + 2
    hole, opts = options_at(GO, LOAD, at, ws)
    assert opts.texts[:2] == ('\t\treturn errors.Wrap(err, "load")', "\t\treturn err")   # the most seen first
    assert opts.sources[:2] == (BETWEEN, BETWEEN) and len(opts.ranks) == len(opts.texts)
    wrap, plain = opts.ranks[:2]
    assert plain > wrap                                   # errors and Wrap are in no line of this document
    names = set(re.findall(r"[A-Za-z_]\w*", LOAD))      # a small document: all of it is near
    assert wrap == neighbour_rank('return errors.Wrap(err, "load")', True, 0, names, names)

    def scored(score):
        return Candidate(("x",), ((0.5,),), (((0, 1),),), score)
    assert copy_rank(scored(-2.0), opts.priors[1], BETWEEN, plain) > copy_rank(scored(-2.0), opts.priors[0], BETWEEN,
                                                                               wrap)
    # the model's score still counts: a line far more likely to the model wins back
    gap = (plain - wrap) / RANK_SCORE
    assert copy_rank(scored(-1.0), opts.priors[0], BETWEEN, wrap) > copy_rank(scored(-1.5 - gap), opts.priors[1],
                                                                              BETWEEN, plain)
    # seen in this document after the line above counts more than seen elsewhere
    assert neighbour_rank("x = 1", False, 2, set(), {"x"}) > neighbour_rank("x = 1", False, 0, set(), {"x"})
    # a typed line's options carry no ranks: they keep their own order (NEIGHBOURS_FIRST, then score + prior)
    assert typed_options(GO, LOAD.replace("{\n\n\t}", "{\n\t\tret\n\t}"), LOAD.index("{\n\n\t}") + 7, ws).ranks == ()


def test_an_empty_line_gets_the_better_ranked_neighbour_through_the_engine():
    ws = worklines.Workspace()
    for i in range(2):
        ws.update(f"/w{i}.go", "go", 'if err != nil {\n\treturn errors.Wrap(err, "load")\n}\n')
    ws.update("/v.go", "go", "if err != nil {\n\treturn err\n}\n")
    ws.refresh()
    worklines.register("test:rank", ws)
    try:
        at = LOAD.index("{\n\n\t}") + 2
        backend = Scoring("\t\tpanic(err)", {'\t\treturn errors.Wrap(err, "load")': 0.3, "\t\treturn err": 0.3})
        c = complete(backend, FillOptions(common_lines=False), InfillRequest(LOAD, at, "go", workspace="test:rank"),
                     Control(lambda s: None))
        copy = next(f for f in c.considered if f.copied)
        assert copy.text == "\t\treturn err" and copy.between
    finally:
        worklines.unregister("test:rank")


def test_the_engine_writes_a_typed_lines_neighbour_through_the_real_model_crlf_tabs_and_a_lone_surrogate(
        embedded_engine):
    text = ("import json\r\n\r\n\r\ndef f(p):\r\n\twith open(p) as h:\r\n\t\tdata = json.load(h, '😀\ud800')\r\n"
            "\treturn data\r\n\r\n\r\ndef k(p):\r\n\twith open(p) as h:\r\n\t\tdata = js\r\n\treturn data\r\n")
    at = text.index("data = js\r") + len("data = js")
    c = embedded_engine.infill_sync(InfillRequest(text, at, "python"), timeout=60)
    copy = next(f for f in c.considered if f.copied)
    assert copy.between and copy.text == "on.load(h, '😀\ud800')"     # the user's own text, the surrogate kept
    assert c.fills and c.fills[0].text == copy.text and c.fills[0].start == c.fills[0].end == at


def test_a_typed_line_keeps_its_own_options():
    text = "def f(x):\n    result = compute(x, 2)\n    result = com"
    hole = decide_hole(PY, text, len(text))
    assert line_options(text, hole, "").texts and neighbour_options(text, hole, "") == NONE
    assert HoleFill(0, 0, "x").neighbour is None


def _python_corpus(root, package: str, files: dict[str, str]) -> None:
    """A code corpus of one PyPI package's Python files (id -> text), all held out, as scripts/build_corpus.sh
    lays one out."""
    import json

    (root / "files" / "valid").mkdir(parents=True)
    (root / "files" / "valid" / "python.jsonl").write_text(
        "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in files.items()))
    (root / "manifest.jsonl").write_text(
        "".join(json.dumps({"id": i, "ecosystem": "pypi", "package": package}) + "\n" for i in files))


def test_the_neighbour_probes_count_sightings_and_copies_on_a_corpus(tmp_path):
    import json

    from benchmarks.neighbour_probes import copies, oracle

    files = {"pypi:alpha/a.py": "def f():\n    x = load()\n    check(x)\n    return x\n",
             "pypi:alpha/b.py": "def g():\n    x = load()\n    check(x)\n    return x\n",     # a copy of a.py's lines
             "pypi:alpha/c.py": "y = start()\nrun(y)\nstop(y)\n"}
    _python_corpus(tmp_path, "alpha", files)
    holes = [  # a.py without its "check(x)" line; c.py without "run(y)" (seen nowhere else)
        {"task_id": "python:pypi:alpha/a.py:3", "prompt": "def f():\n    x = load()\n", "suffix": "    return x\n",
         "canonical_solution": "    check(x)\n", "language": "python"},
        {"task_id": "python:pypi:alpha/c.py:2", "prompt": "y = start()\n", "suffix": "stop(y)\n",
         "canonical_solution": "run(y)\n", "language": "python"}]
    data = tmp_path / "holes.jsonl"
    data.write_text("".join(json.dumps(h) + "\n" for h in holes))
    found = oracle(str(data), str(tmp_path))["python"]
    assert found["n"] == 2 and found["both_first"] == 1 and found["workspace_after_first"] == 1
    assert found["document_after_among"] == 0        # the pair across the hole is no sighting
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": holes[0]["task_id"], "completion": "    check(x)\n"}) + "\n"
                       + json.dumps({"task_id": holes[1]["task_id"], "completion": ""}) + "\n")
    split = copies(str(data), str(samples), str(tmp_path), None)["python"]
    assert split == {"copy_n": 1, "copy_offered": 1, "copy_right": 1, "no_copy_n": 1, "no_copy_offered": 0,
                     "no_copy_right": 0}
    # the same holes as typed: the line is the typed head with its rest, still a copy for a.py's hole
    from benchmarks.tasks import load_task_set

    typed = load_task_set(f"typed:{data}")
    samples.write_text("".join(json.dumps({"task_id": t.task_id, "completion": t.canonical_solution}) + "\n"
                               for t in typed))
    split = copies(f"typed:{data}", str(samples), str(tmp_path), None)["python"]
    assert split == {"copy_n": 1, "copy_offered": 1, "copy_right": 1, "no_copy_n": 1, "no_copy_offered": 1,
                     "no_copy_right": 1}
    # the probe through the real engine and model records each empty line's options with their rank's features;
    # the rank's fit reads them back (a.py's hole: "check(x)" seen between its neighbours in b.py)
    from benchmarks.neighbour_probes import probe, rank
    from engine.doclines import RANK_WEIGHTS

    out = tmp_path / "probe.jsonl"
    probe(str(data), str(out), str(tmp_path))
    rows = {r["task_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    first = rows[holes[0]["task_id"]]["candidates"]
    assert [c[0] for c in first] == ["    check(x)\n"] and len(first[0][4]) == len(RANK_WEIGHTS)
    # seen beside both; of its names "x" is near, "check" is in no other line of a.py
    assert first[0][4][:4] == [1.0, 0.0, 0.5, 1.0]
    fitted = rank(str(out), folds=2)
    assert fitted["holes"] == 1 and fitted["right_among"] == 1 and fitted["first_right_shipped_weights"]["all"] == 1


def test_a_crlf_document_gets_the_neighbours_line_with_its_own_line_ends():
    crlf = GO_DOC.replace("\n", "\r\n")
    at = crlf.index("\t}\r\n\treturn nil\r\n}\r\n", crlf.index("func b"))
    backend = Scoring("\t\tpanic(1)\n", {"\t\treturn err\n": 0.9})
    c = complete(backend, FillOptions(), InfillRequest(crlf, at, "go"), Control(lambda s: None))
    assert [p.options[0] for p in backend.plans if p.options] == ["\t\treturn err\n"]   # the model reads LF
    assert c.fills and c.fills[0].text == "\t\treturn err\r\n" and c.fills[0].start == at


def test_the_pools_probe_scores_the_documents_lines_and_the_line_that_binds_a_wanted_name(tmp_path, monkeypatch):
    """``probe --pools`` (real engine and model on a two-file corpus): the empty line above ``return lb + ub``,
    where nothing binds ``ub``, gets the workspace's ``ub = idx[3]`` as a ``wanted`` candidate (it binds the wanted
    name) and the document's other lines as ``document`` candidates, each scored by the model; ``pools`` fits the
    rank with and without them."""
    import json

    from benchmarks.neighbour_probes import pools, probe

    files = {"pypi:beta/d.py": "def h(idx):\n    lb = idx[1]\n    ub = idx[3]\n    return lb + ub\n",
             "pypi:beta/e.py": "def k(idx):\n    ub = idx[3]\n    return ub\n"}
    _python_corpus(tmp_path, "beta", files)
    hole = {"task_id": "python:pypi:beta/d.py:3", "prompt": "def h(idx):\n    lb = idx[1]\n",
            "suffix": "    return lb + ub\n", "canonical_solution": "    ub = idx[3]\n", "language": "python"}
    data = tmp_path / "holes.jsonl"
    data.write_text(json.dumps(hole) + "\n")
    out = tmp_path / "pools.jsonl"
    probe(str(data), str(out), str(tmp_path), pools=True)
    row = json.loads(out.read_text())
    by_source = {}
    for code, score, _prior, source, rank_features, extra in row["candidates"]:
        by_source.setdefault(source, {})[code.strip()] = (score, rank_features, extra)
    assert "ub = idx[3]" in by_source["wanted"]
    score, rank_features, (copies, context, binds) = by_source["wanted"]["ub = idx[3]"]
    assert score < 0 and len(rank_features) == 5 and (copies, binds) == (0.0, 1.0)
    # the cursor stands before "return lb + ub" (the fill goes before it): the lines of the document but that one
    assert set(by_source["document"]) == {"def h(idx):", "lb = idx[1]"}
    assert all(extra[2] == 0.0 for _, _, extra in by_source["document"].values())   # none binds ub
    fitted = pools(str(out), folds=2)
    assert fitted["holes"] == 1
    assert fitted["options + wanted pool"]["right_among"]["all"] == 1 and fitted["all"]["right_among"]["all"] == 1
    assert "options" not in fitted or fitted["options"]["right_among"]["all"] == 0
    # the command line writes the same figures as a result file, the note apart from the command
    import sys

    from benchmarks.neighbour_probes import main

    result = tmp_path / "neighbour-pools.json"
    monkeypatch.setattr(sys, "argv", ["neighbour_probes", "pools", str(out), "--result", str(result),
                                      "--note", "a note"])
    main()
    written = json.loads(result.read_text())
    assert written["benchmark"] == "neighbour-pools" and written["note"] == "a note"
    assert "a note" not in written["command"] and written["all"] == fitted["all"]


def test_a_large_documents_neighbours_measure_the_indentation_of_their_own_pairs_only(monkeypatch):
    """On a 12,000-line document an empty line's neighbours read SPAN code lines each side, but only the pairs with
    a neighbour in them need their indentation: measuring every line cost ~20 ms of CPU per request."""
    body = "".join(f"    value_{i} = compute({i})\n" for i in range(3000))
    far = "def e():\n    if ready:\n        elsewhere()\n" + body + body   # beyond SPAN code lines
    text = (far + "def f():\n    if ready:\n        start()\n    stop()\n" + body
            + "def g():\n    if ready:\n\n    stop()\n" + body
            + "def h():\n    if ready:\n        start()\n        go()\n    stop()\n")
    widths: list[str] = []
    measure = worklines.indent_width
    monkeypatch.setattr(worklines, "indent_width", lambda line: widths.append(line) or measure(line))
    at = text.index("    if ready:\n\n", text.index("def g")) + len("    if ready:\n")
    hole, opts = options_at(PY, text, at)
    # "start()" after "if ready:" (twice) and before "stop()" (once); "elsewhere()" is beyond SPAN
    assert opts.texts[:2] == ("        start()", "        go()") and opts.sources[:2] == (BETWEEN, NEIGHBOUR)
    assert not any("elsewhere" in t for t in opts.texts)
    assert len(widths) <= 12     # the neighbours, and the two lines of each pair they are in
    monkeypatch.setattr(worklines, "indent_width", measure)
    assert options_at(PY, text, at)[1] == opts


def test_the_lines_around_the_cursor_are_read_alike_in_chunks_of_any_size(monkeypatch):
    text = "if a:\r\n\tx = 1\r\n\r\n\n  \n\ty = 2\n\rz\n\nreturn x\n\n"
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    ends = [text.find("\n", s) if text.find("\n", s) >= 0 else len(text) for s in starts]
    expect = {(s, up): doclines._code_lines(text, s if up else e, up)
              for s, e in zip(starts, ends) for up in (True, False)}
    nearby = {s: list(doclines._nearby(text, s, e)) for s, e in zip(starts, ends)}
    for size in (1, 2, 3, 7):
        monkeypatch.setattr(doclines, "_CHUNK", size)
        for s, e in zip(starts, ends):
            assert doclines._code_lines(text, s, True) == expect[(s, True)]
            assert doclines._code_lines(text, e, False) == expect[(s, False)]
            assert list(doclines._nearby(text, s, e)) == nearby[s]
            assert list(doclines._nearby(text, s, e, "x")) == [line for line in nearby[s] if "x" in line]
    # nearest first, the line above before the one below; blank lines are no code lines; a line's \r is kept
    at = text.index("  \n")
    assert nearby[at][:6] == ["", "\ty = 2", "\r", "\rz", "\tx = 1\r", ""]
    assert [c for c, _, _ in doclines._code_lines(text, at, True)] == ["x = 1", "if a:"]
    assert doclines._code_lines(text, at + 2, False)[0] == ("y = 2", 4, "\t")


def test_a_file_saved_at_each_keystroke_keeps_as_many_line_ids_as_its_lines_need(monkeypatch):
    """Each save of a line being typed (an editor's auto-save) gave the line as it then read an id, and ids were
    never forgotten: a day's editing of one file grew the tables (and each refresh's work) without bound. The
    ids no file pairs any more are forgotten once the ids doubled; the answers stay those of a fresh count."""
    monkeypatch.setattr(worklines, "_COMPACT_FROM", 64, raising=False)   # (4096 in use) a shorter day
    base = "".join(f"def f{i}(x):\n    return g{i}(x)\n" for i in range(40))
    typed = "".join(f"    value_{k} = compute(alpha_{k}, beta)\n" for k in range(40))   # the code being written
    ws = worklines.Workspace()
    ws.update("/b.py", "python", "def f3(x):\n    return g3(x)\n    value_7 = compute(alpha_7, beta)\n")
    for k in range(len(typed)):
        ws.update("/a.py", "python", base + typed[:k + 1])
        if k % 10 == 0:   # the server rebuilds once per batch of saves
            ws.refresh()
    ws.refresh()
    fresh = worklines.Workspace()
    fresh.update("/b.py", "python", "def f3(x):\n    return g3(x)\n    value_7 = compute(alpha_7, beta)\n")
    fresh.update("/a.py", "python", base + typed)
    fresh.refresh()
    assert len(ws._strings) <= 2 * max(len(fresh._strings), 64)   # 1,036 ids before: one per save or so
    for above, below, start in [("def f3(x):", None, ""), ("return g3(x)", "value_8 = compute(alpha_8, beta)", ""),
                                ("value_7 = compute(alpha_7, beta)", None, "value"), (None, "return g9(x)", "")]:
        got, want = ws.neighbours("python", above, below, start=start), fresh.neighbours("python", above, below,
                                                                                          start=start)
        assert [sorted(side) for side in got] == [sorted(side) for side in want] and got != ([], [])


def test_an_option_seen_in_the_document_is_indented_by_the_columns_it_moved_there():
    """After ``r[k] = n`` (16 columns) the document returned at 4: three blocks ended there, not one. The option
    after the same line below is indented as it was there, not one step less than the line above. A move the
    neighbour's own indentation cannot make (2 columns off two tabs, 3 columns onto a 2-space unit) gives None, and
    the option falls back to the step."""
    body = ("def f(xs):\n    r = {}\n    for k in xs:\n        if k:\n            for n in k:\n"
            "                r[k] = n\n")
    text = body + "    return r\n\n\n" + body.replace("def f", "def g") + "\n"
    hole, found = options_at(PY, text, len(text) - 1)
    assert found.texts == ("    return r",)
    assert doclines._moved("\t\t", -4, "\t") == "\t" and doclines._moved("\t\t", -2, "\t") is None
    assert doclines._moved("        ", 4, "    ") == "            " and doclines._moved("  ", 3, "  ") is None


def test_an_option_seen_beside_both_takes_the_neighbour_whose_step_says_how_far():
    """Seen (in the workspace) after ``raise E()`` a step less indented and before ``async def h():`` at the same
    indentation: "less indented" does not say how far, "the same" does, so the option goes at the first column
    (before, one step less than the 8-column ``raise``: 4 columns, a decorator the parse refused)."""
    ws = worklines.Workspace()
    ws.update("/a.py", "python", "def f():\n    if x:\n        raise E()\n\n@app.get('/')\nasync def h():\n    pass\n")
    ws.refresh()
    text = "def g():\n    if y:\n        raise E()\n\n\nasync def h():\n    return 1\n"
    hole, found = options_at(PY, text, text.index("\n\n\n") + 2, ws)
    assert [t.rstrip("\n") for t in found.texts][0] == "@app.get('/')"


def test_a_document_with_nothing_indented_is_indented_as_the_workspaces_files_are():
    """underscore's findWhere.js indents nothing but the line the cursor is on: its ``return`` came four spaces in
    (no unit seen: four), underscore's files are indented two. A document with no indented code line now takes the
    unit most of the workspace's files of its language indent with (a tab for a tab-indented project), else its
    language's usual one (two spaces in JavaScript); a document that indents code keeps its own."""
    body = "function find(obj, p) {\n{0}return obj.filter(p);\n}}\n"
    two, tab = body.replace("{0}", "  ").replace("}}", "}"), body.replace("{0}", "\t").replace("}}", "}")
    doc = "import find from './find.js';\r\n\r\nexport default function findWhere(obj, attrs) {\r\n\r\n}\r\n"
    at = doc.index("{\r\n\r\n") + 3
    spec = spec_for("javascript")

    def js(*files: str) -> worklines.Workspace:
        return workspace_of(*files, language="javascript", suffix=".js")

    assert options_at(spec, doc, at, js(two, two, tab))[1].texts == ("  return obj.filter(p);",)
    assert options_at(spec, doc, at, js(tab, tab, two))[1].texts == ("\treturn obj.filter(p);",)
    hole = decide_hole(spec, doc, at)
    assert indent_options(spec, doc, hole)[0] == "  "                 # no workspace: JavaScript's two spaces
    assert indent_options(spec, doc, hole, "\t")[0] == "\t"
    own = "function h() {\r\n    return 0;\r\n}\r\n" + doc      # the document's own four spaces win
    at = own.index("{\r\n\r\n") + 3
    assert set(options_at(spec, own, at, js(tab, two, tab))[1].texts) == {"    return obj.filter(p);", "    return 0;"}
    assert indent_options(spec, own, decide_hole(spec, own, at), "\t")[0] == "    "


def test_the_workspaces_indentation_unit_follows_its_files():
    ws = worklines.Workspace()
    assert ws.indent_unit("python") is None
    ws.update("/a.ts", "typescript", "class A {\n    f(): number {\n        return 1;\n    }\n}\n")
    ws.update("/b.tsx", "typescriptreact", "// 😀 \ud800\nexport const B = () => (\n\t<div/>\n);\n")
    ws.update("/c.ts", "typescript", "export const c = 1;\n")               # nothing indented: no say
    ws.update("/d.ts", "typescript", "/*\n   a licence\n */\nlet d = 2;\n")   # a comment's lines are no code
    assert ws.indent_unit("typescript") == ws.indent_unit("typescriptreact") == "\t"   # a tie: the tab
    ws.update("/e.ts", "typescript", "if (x) {\n  y();\n}\n")
    ws.update("/f.ts", "typescript", "if (x) {\n  y();\n}\n")
    assert ws.indent_unit("typescript") == "  "
    ws.remove("/e.ts")
    ws.update("/f.ts", "typescript", "if (x) {\n    y();\n}\n")           # changed: counted once, as it now is
    assert ws.indent_unit("typescript") == "    "                     # two files at four spaces (a.ts, f.ts)
    assert ws.indent_unit("python") is None
    # a request reads it while the indexing thread holds the lock (building a large folder's tables)
    got: list = []
    with ws._lock:
        reader = threading.Thread(target=lambda: got.append(ws.indent_unit("typescript")))
        reader.start()
        reader.join(timeout=30)
    assert got == ["    "]
