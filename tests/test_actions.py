"""Code actions: where holes are (pure), how a fill is shaped (pure), and end to end over stdio against
the real server on the embedded model: every action on Python and JavaScript, several holes in one
engine job, fixes only when they parse, stale versions never edited, a long rewrite cancelled, drafts."""

import asyncio
import time

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from engine.actions import minimal_edits
from engine.backends.base import Candidate, Control, FillResult
from engine.config import FillOptions
from engine.holes import Source, found_hole
from engine.requests import FillRequest, FixRequest, RewriteRequest
from engine.serve import serve
from engine.languages import error_count, parse, spec_for
from engine.model_text import given_back, model_text
from engine.multifill import shape
from engine.requests import HoleFill
from engine.targets import survey
from engine.validate import edits_keep_parsing
from tests.lsp_session import cancelled_after, open_doc, plain, raced, stats

PY = '''import math


def area(r):
    """Area of a circle of radius r."""
    ...


def perimeter(r):
    # TODO: two pi r
    pass


def describe(r):
    return f"{area(r)} {__}"


print(describe(2))
'''
JS = '''function area(r) {
  throw new Error("not implemented");
}

function perimeter(r) {
  // TODO: two pi r
}

const describe = (r) => area(r) + " " + __;
console.log(describe(2));
'''
CONTENT_MODIFIED, REQUEST_CANCELLED = -32801, -32800


# -- pure: holes, bodies, error spans, shapes, minimal edits ------------------------------------

def test_python_holes_are_found_with_exact_spans():
    found = survey(PY, "python", 0, len(PY))
    assert [(b.label, PY[b.start:b.end]) for b in found.blanks] == [
        ("...", "    ..."), ("pass", "    # TODO: two pi r\n    pass"), ("__", "__")]
    todo = found.blanks[1]
    assert todo.context == "    # TODO: two pi r\n" and todo.indent == "    "
    assert found.blanks[2].inline


def test_javascript_holes_and_the_function_at_the_cursor():
    found = survey(JS, "javascript", 0, len(JS))
    assert [(b.label, JS[b.start:b.end]) for b in found.blanks] == [
        ("raise", '  throw new Error("not implemented");'), ("TODO", "  // TODO: two pi r"), ("__", "__")]
    at = JS.index("// TODO")
    cursor = survey(JS, "javascript", at, at)
    assert cursor.function == "perimeter" and [JS[b.start:b.end] for b in cursor.blanks] == ["  // TODO: two pi r"]
    # a body of TODO markers only: they are its stub, replaced (as "Fill holes" replaces them)
    assert cursor.body is not None and JS[cursor.body.start:cursor.body.end] == "  // TODO: two pi r"
    callers = survey(JS, "javascript", 11, 11).callers
    assert [JS[lo:hi] for lo, hi in callers] == ["const describe = (r) => area(r) + \" \" + __;\n"]


@pytest.mark.parametrize("language,text,holes", [
    ("typescript", 'function f(a: number): number {\n  throw new Error("TODO");\n}\nconst x: number = __;\n',
     ['  throw new Error("TODO");', "__"]),
    ("go", 'package m\n\nfunc f() int {\n\t// TODO: compute\n\tpanic("not implemented")\n}\n',
     ['\t// TODO: compute\n\tpanic("not implemented")']),
    ("rust", "fn f() -> i32 {\n    todo!()\n}\n\nfn g() { unimplemented!(); }\n", ["    todo!()", " unimplemented!(); "]),
    ("python", "try:\n    import x\nexcept ImportError:\n    pass\n_ = [1, 2][...]\n", []),  # idioms, not holes
])
def test_holes_in_other_languages(language, text, holes):
    assert [text[b.start:b.end] for b in survey(text, language, 0, len(text)).blanks] == holes


@pytest.mark.parametrize("text,language,at,replaced,lead,tail", [
    ("def f(x): ...\n", "python", 4, " ...", "\n", ""),                        # same-line body moves down
    ("def f(x):\n    '''Doc.'''\n", "python", 4, "", "\n", ""),               # docstring only: append
    ("def f(x):\n    y = 1\n    pass\n", "python", 4, "", "\n", ""),          # real code: continue it
    ("function f(a) {}\n", "javascript", 9, "", "\n", "\n"),                  # empty braces
    ("fn f() -> i32 {\n    todo!()\n}\n", "rust", 3, "    todo!()", "", ""),  # a stub is replaced
])
def test_complete_body_target(text, language, at, replaced, lead, tail):
    body = survey(text, language, at, at).body
    assert body is not None
    assert (text[body.start:body.end], body.lead, body.tail) == (replaced, lead, tail)


def test_non_ascii_and_crlf_offsets_are_str_offsets():
    text = "s = 'é😀'\r\ndef f():\r\n    pass\r\n"
    found = survey(text, "python", 0, len(text))
    assert [text[b.start:b.end] for b in found.blanks] == ["    pass"]
    src = Source(spec_for("python"), text)
    assert src.eol == "\r\n" and src.to_str(src.to_byte(text.index("def"))) == text.index("def")


def test_syntax_error_spans_grow_from_the_error_lines():
    text = "def f(x):\n    y = (x + 1\n    return y\n\n\nprint(f(2))\n"
    at = text.index("y =")
    spans = survey(text, "python", at, at).errors
    assert spans and all(text[lo:hi].endswith(("1", "y")) for lo, hi in spans)
    assert spans[0][1] - spans[0][0] < spans[-1][1] - spans[-1][0] or len(spans) == 1
    assert survey(PY, "python", 0, 0).errors == ()


def _candidate(*texts):
    return Candidate(texts, tuple(() for _ in texts), tuple(() for _ in texts), 0.0)


def test_a_statement_fill_is_reindented_and_stops_where_it_leaves_the_block():
    blank = found_hole(10, 17, "...", indent="    ")
    options = shape(blank, _candidate("\n  return 1\n    x = 2\ndef g():\n    pass"), 0, "\n")
    assert [o.text for o in options] == ["    return 1\n    x = 2", "    return 1"]
    assert [o.text for o in shape(found_hole(0, 2, "__", inline=True), _candidate("  a + b \nmore"), 0, "\n")] == ["a + b"]
    assert shape(blank, _candidate("\n\n  "), 0, "\n") == []
    crlf = shape(blank, _candidate("a\n    b"), 0, "\r\n")[0]
    assert crlf.text == "    a\r\n    b"


def test_minimal_edits_touch_only_the_changed_lines():
    text = "a = 1\nb = 2\nc = 3\nd = 4\n"
    new = "a = 1\nb = 20\nc = 3\nd = 4\ne = 5\n"
    fill = HoleFill(0, len(text), new, (0.9,) * 4, ((6, 8), (9, 11), (24, 26), (27, 29)))
    edits = minimal_edits(text, fill)
    assert [(text[e.start:e.end], e.text) for e in edits] == [("b = 2\n", "b = 20\n"), ("", "e = 5\n")]
    assert edits[0].token_spans == ((0, 2), (3, 5)) and len(edits[1].confidences) == 2


# -- the engine side with a scripted backend: layout, validation, offsets ----------------------

class ScriptedBackend:
    """Answers fixed texts per hole (one token per character), and keeps the plans it was given."""

    name, max_positions, default_steps = "scripted", 1024, 16
    searches_lengths = takes_instruction = scores_text = scores_options = False
    model_dir = None

    def __init__(self, *texts):
        self.texts, self.plans = texts, []

    def count_tokens(self, text):
        return (len(text) + 3) // 4

    def fill(self, plan, control):
        self.plans.append(plan)
        control.check(0)
        texts = tuple(self.texts[i % len(self.texts)] for i in range(len(plan.holes)))
        spans = tuple(tuple((i, i + 1) for i in range(len(t))) for t in texts)
        confs = tuple(tuple(0.5 for _ in t) for t in texts)
        return FillResult((Candidate(texts, confs, spans, 0.0),), 1, 1, sum(map(len, texts)))

    def stats(self):
        return {}

    def close(self):
        pass


def _run(request, backend, **options):
    return serve(backend, FillOptions(**options), request, Control(lambda step: None))


def _applied(text, fills):
    for f in sorted(fills, key=lambda f: f.start, reverse=True):
        text = text[:f.start] + f.text + text[f.end:]
    return text


def test_holes_share_one_canvas_and_a_fill_that_breaks_the_parse_is_dropped():
    blanks = survey(PY, "python", 0, len(PY)).blanks
    backend = ScriptedBackend("return math.pi * r * r", "\n        return 2 * math.pi * r", "r + ((")
    completion = _run(FillRequest(PY, "python", blanks), backend)
    (plan,) = backend.plans
    assert len(plan.pieces) == 7 and plan.pieces[2].endswith("    # TODO: two pi r\n")  # the TODO is shown
    assert [(f.start, f.end) for f in completion.fills] == [(b.start, b.end) for b in blanks[:2]]
    assert [f.text for f in completion.fills] == ["    return math.pi * r * r", "    return 2 * math.pi * r"]
    assert completion.rejected == 1 and _parses(_applied(PY, completion.fills), "python")
    unchecked = _run(FillRequest(PY, "python", blanks), backend, validate=False)
    assert [f.text for f in unchecked.fills][2] == "r + (("


def test_the_canvas_sees_far_callers_and_a_same_line_body_moves_down():
    """The canvas (``multifill.fill_blanks``: a body the line-by-line path does not take) reads the function's far
    callers; a body on its header's line moves to its own line."""
    from engine.multifill import fill_blanks

    text = "def area(w, h): ...\n" + "x = 1\n" * 80 + "print(area(2, 3))\n"
    found = survey(text, "python", 5, 5)
    backend = ScriptedBackend("return w * h")
    completion = fill_blanks(backend, FillOptions(suffix_tokens=8), FillRequest(text, "python", (found.body,),
                                                                                found.callers),
                             Control(lambda step: None))
    assert backend.plans[0].pieces[-1].endswith("print(area(2, 3))\n")
    assert _applied(text, completion.fills).startswith("def area(w, h):\n    return w * h\nx = 1\n")


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_a_body_that_writes_a_line_twice_is_cut_before_the_copy(eol, canvas):
    # the embedded model continued a held-out file's body (torch's module_tracker.py, CRLF) with the same call twice;
    # the shorter form, the call once, is offered instead, as a cursor fill would be (validate.repeats_neighbour)
    text = ("class T:\n    def fn(self, name):\n        if name:\n            self.log(name)\n"
            "        self.parents.add(name)\n\n    def g(self):\n        return 1\n").replace("\n", eol)
    found = survey(text, "python", text.index("if name"), text.index("if name"))
    backend = ScriptedBackend("\n        self.parents.add(name, name)\n        self.parents.add(name, name)")
    completion = _run(FillRequest(text, "python", (found.body,), found.callers, body=True), backend)
    assert [f.text for f in completion.fills] == [f"{eol}        self.parents.add(name, name)"]


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_a_body_the_document_refuses_falls_back_to_its_shorter_form(eol, canvas):
    # the embedded model's body on a held-out file (torch's module_tracker.py, LF) ended in `add(name) name`: the
    # window's tree-sitter check passed it, Python's compiler (the whole-document check) did not, and the hole was
    # dropped although its shorter form, the first line alone, parses: that form is offered instead
    text = ("class T:\n    def fn(self, name):\n        if name:\n            self.log(name)\n"
            "        self.parents.add(name)\n\n    def g(self):\n        return 1\n").replace("\n", eol)
    found = survey(text, "python", text.index("if name"), text.index("if name"))
    backend = ScriptedBackend("\n        self.parents.add(name, name)\n        self.parents.add(name) name")
    request = FillRequest(text, "python", (found.body,), found.callers, body=True)
    completion = _run(request, backend)
    assert [f.text for f in completion.fills] == [f"{eol}        self.parents.add(name, name)"]
    assert completion.rejected == 1 and completion.fallbacks == ()
    assert compile(_applied(text, completion.fills), "<doc>", "exec")


def test_a_body_none_of_whose_forms_the_document_takes_is_not_offered(canvas):
    # both forms (two lines, then the first alone) pass the window's check and fail Python's: no edit at all
    text = ("class T:\n    def fn(self, name):\n        if name:\n            self.log(name)\n"
            "        self.parents.add(name)\n\n    def g(self):\n        return 1\n")
    found = survey(text, "python", text.index("if name"), text.index("if name"))
    backend = ScriptedBackend("\n        self.log(name) name\n        self.parents.add(name) name")
    completion = _run(FillRequest(text, "python", (found.body,), found.callers, body=True), backend)
    assert completion.fills == () and completion.rejected == 2 and completion.fallbacks == ()


def test_a_fix_is_kept_only_when_it_removes_the_error():
    # no repair of one or two tokens parses here, so the lines around the error are re-masked
    text = "def f(x):\n    y = (x + 1 2 3\n    return y\n\n\nprint(f(2))\n"
    spans = survey(text, "python", text.index("y ="), text.index("y =")).errors
    good = _run(FixRequest(text, "python", spans), ScriptedBackend("    y = (x + 1, 2, 3)"))
    assert [(text[f.start:f.end], f.text) for f in good.fills] == [("    y = (x + 1 2 3", "    y = (x + 1, 2, 3)")]
    assert _parses(_applied(text, good.fills), "python")
    bad = ScriptedBackend("    y = ((x")
    assert _run(FixRequest(text, "python", spans), bad).fills == ()
    assert len(bad.plans) == 2 * len(spans)  # each span: re-noised, then masked whole


def test_a_rewrite_edits_only_the_lines_that_changed():
    text = "def f(x):\n    a = 1\n    b = 2\n    return a + b\n"
    lo, hi = text.index("    a"), len(text)
    backend = ScriptedBackend("    a = 1\n    b = 3\n    return a + b\n")
    completion = _run(RewriteRequest(text, "python", lo, hi), backend)
    assert [(text[f.start:f.end], f.text) for f in completion.fills] == [("    b = 2\n", "    b = 3\n")]


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_a_rewrite_keeps_whether_the_selection_ends_its_line(eol):
    """Seen on the real server: whole lines selected (to column 0 of the next line), the model's text without its
    last line break, and the edit deleted the blank line after the selection ("rewrote 1 line", `pass` as it was)."""
    text = eol.join(["def f(x):", "    pass", "", "", "def g(y):", "    return y + 1", ""])
    lo = text.index("    pass")
    hi = lo + len("    pass" + eol)
    same = _run(RewriteRequest(text, "python", lo, hi), ScriptedBackend("    pass"))
    assert same.fills == ()  # nothing changed
    new = _run(RewriteRequest(text, "python", lo, hi), ScriptedBackend("    return x"))
    assert _applied(text, new.fills) == text.replace("    pass" + eol, "    return x" + eol)
    # a selection within a line: a line break after the model's text would split the line
    at = text.index("y + 1")
    split = _run(RewriteRequest(text, "python", at, at + 5), ScriptedBackend("y + 2\n"))
    assert _applied(text, split.fills) == text.replace("y + 1", "y + 2")


def test_the_model_reads_lf_in_a_crlf_document_and_the_edits_come_back_crlf():
    """The one line-ending rule (engine/lines.py) for the actions too: "Fill holes", "Complete body" and a fix's
    re-masked lines showed the model CRLF text (it was trained on LF; its fills on CRLF files were junk)."""
    text = PY.replace("\n", "\r\n")
    blanks = survey(text, "python", 0, len(text)).blanks
    backend = ScriptedBackend("return math.pi * r * r", "\n        return 2 * math.pi * r", "return r")
    completion = _run(FillRequest(text, "python", blanks), backend)
    assert not any("\r" in p for p in backend.plans[0].pieces if isinstance(p, str))
    assert completion.fills and all("\n" not in f.text.replace("\r\n", "") for f in completion.fills)
    assert _applied(text, completion.fills) == _applied(PY, _run(FillRequest(PY, "python", survey(
        PY, "python", 0, len(PY)).blanks), backend).fills).replace("\n", "\r\n")
    broken = "def f(x):\r\n    y = (x + 1 2 3\r\n    return y\r\n\r\n\r\nprint(f(2))\r\n"
    spans = survey(broken, "python", broken.index("y ="), broken.index("y =")).errors
    fixer = ScriptedBackend("    y = (x + 1, 2, 3)\n    z = y")
    fixed = _run(FixRequest(broken, "python", spans), fixer)
    for plan in fixer.plans:
        assert not any("\r" in (p if isinstance(p, str) else p.init or "") for p in plan.pieces)
    assert _applied(broken, fixed.fills) == broken.replace("    y = (x + 1 2 3", "    y = (x + 1, 2, 3)\r\n    z = y")



@pytest.mark.parametrize("lf", ["def f(x):\n    y = x + 1\n    return y\n", "x = 1\ny = 2\nprint(x + y)\n"])
def test_a_rewrite_of_a_whole_crlf_document_is_the_lf_documents_with_crlf(embedded_engine, lf):
    """The real model: a rewrite's own text went to the model with its CRs, and whether the fill went back with
    CRLF was decided by the window around the selection alone, which a whole-document selection does not have.
    The first document's rewrite was lost (the model read CR), the second wrote LF lines into the CRLF file
    (``x = ()\\n\\n__ = {}\\n...``). A CRLF document's rewrite is now its LF twin's, with CRLF."""
    crlf = lf.replace("\n", "\r\n")
    plain_fills, crlf_fills = (embedded_engine.submit(RewriteRequest(text, "python", 0, len(text))).future.result(120)
                               .fills for text in (lf, crlf))
    assert _applied(crlf, crlf_fills) == _applied(lf, plain_fills).replace("\n", "\r\n")
    assert all("\n" not in f.text.replace("\r\n", "") for f in crlf_fills)


def test_a_rewrite_leaves_a_line_the_model_gave_back_with_its_lone_surrogate(embedded_engine):
    """The real model reads a lone surrogate as U+FFFD (engine/model_text.py) and gave the line holding one back as
    it read it: the rewrite counted the line as changed and its edit replaced the user's character with U+FFFD."""
    text = "s = '\ud800'\nt = '\ud800'\ndef f(a):\n    u = '\ud800'\n    return u\n"
    lo, hi = text.index("t = "), len(text)
    fills = embedded_engine.submit(RewriteRequest(text, "python", lo, hi)).future.result(120).fills
    assert fills  # the model changed other lines
    assert all(model_text(text[f.start:f.end]) != f.text for f in fills)
    assert "    u = '\ud800'\n" in _applied(text, fills)


def test_a_rewrite_may_keep_two_equal_lines_of_the_users(embedded_engine):
    """The real model kept the user's two ``self.advance()`` lines and changed the line after them; the repeat check
    took the kept lines for a copy the rewrite made of its neighbour and refused it (the server offered no rewrite).
    Lines given back unchanged are the user's (validate.repeats_neighbour's ``kept``): the edit is offered, and it
    leaves the two lines as they were."""
    text = ("class Lexer:\n    def skip_pair(self):\n        self.advance()\n        self.advance()\n"
            "        return self.peek()\n\n    def peek(self):\n        return self.text[self.pos]\n")
    lo = text.index("        self.advance()")
    hi = text.index("\n\n    def peek") + 1
    fills = embedded_engine.submit(RewriteRequest(text, "python", lo, hi)).future.result(120).fills
    assert fills
    assert "    def skip_pair(self):\n        self.advance()\n        self.advance()\n" in _applied(text, fills)


SURROGATE_PY = 'def g(x):\n    s = "\udc00"\n    if x:\n        ...\n    return s\n'


def test_fill_holes_never_writes_a_lone_surrogate_back_as_a_replacement_character(embedded_engine):
    """The real model reads the lone surrogate as U+FFFD and filled the ``...`` with ``s = "\\ufffd"``; the
    whole-document check took the U+FFFD it read for one the document has, and "Fill holes" wrote U+FFFD into the
    file. An option with U+FFFD the document lacks is not chosen now (this one has no other: no edit)."""
    found = survey(SURROGATE_PY, "python", 0, len(SURROGATE_PY))
    assert found.blanks
    fills = embedded_engine.submit(FillRequest(SURROGATE_PY, "python", found.blanks)).future.result(120).fills
    assert all("\ufffd" not in f.text for f in fills)


def test_a_rewritten_line_gets_its_lone_surrogate_back(embedded_engine):
    """The real model's rewrite of these lines gave the lone surrogate (read as U+FFFD) back on a line it changed.
    It was refused whole: the U+FFFD was taken for the model's bytes that are no UTF-8, since only the text around
    the selection was asked whether it had one (a surrogate elsewhere in the window let it through, and the edit
    wrote ``'\\ufffd'``). A rewrite may give back what it read in the selection, and a changed run of lines gets the
    lone surrogates the model read as U+FFFD back, in order, when it has as many; else the whole-document check
    refuses the rewrite.

    The real model's U+FFFD here was byte tokens that formed no UTF-8 (``s = '\\ufffd'`` on its last line): its loop
    keeps byte tokens valid UTF-8 now (engine/backends/utf8.py), and it writes whole characters of its own
    there (``\\ufb06``, ``'\\\\'``), so a backend that gives the U+FFFD back stands in for it below; the real
    model's rewrite still writes no U+FFFD into the file."""
    lo, hi = SURROGATE_PY.index("    s ="), SURROGATE_PY.index("    return")
    fills = embedded_engine.submit(RewriteRequest(SURROGATE_PY, "python", lo, hi)).future.result(120).fills
    assert all("\ufffd" not in f.text for f in fills)
    assert "\ufffd" not in _applied(SURROGATE_PY, fills)
    back = _run(RewriteRequest(SURROGATE_PY, "python", lo, hi),
                ScriptedBackend('    s = "\ufffd" * 2\n    if x:\n        ...\n')).fills
    assert back and all("\ufffd" not in f.text for f in back)
    assert _applied(SURROGATE_PY, back) == SURROGATE_PY.replace('"\udc00"', '"\udc00" * 2')


def test_given_back_restores_lone_surrogates_only_one_for_one():
    assert given_back("a = '\ud800' + '\ufffd'\n", "b = '\ufffd' + '\ufffd'\n") == "b = '\ud800' + '\ufffd'\n"
    assert given_back("a = '\ud800'\n", "b = '\ufffd\ufffd'\n") == "b = '\ufffd\ufffd'\n"  # refused later
    assert given_back("a = '\ufffd'\n", "b = '\ufffd'\n") == "b = '\ufffd'\n"
    assert not edits_keep_parsing(spec_for("python"), SURROGATE_PY, [HoleFill(0, 0, "# \ufffd\n")])


def test_a_body_the_model_writes_back_as_it_was_is_no_fill(embedded_engine):
    """The real model, in a tab-indented file: "Complete body of inner" replaced the stub ``pass`` with ``pass`` and
    said "completed the body". A fill that changes nothing is no fill: the action says it found none."""
    text = "def add(a, b):\n\t...\n\nclass K:\n\tdef m(self, x):\n\t\tdef inner(y):\n\t\t\tpass\n\t\treturn inner\n"
    at = text.index("def inner")
    found = survey(text, "python", at, at)
    assert found.function == "inner" and text[found.body.start:found.body.end] == "\t\t\tpass"
    completion = embedded_engine.submit(FillRequest(text, "python", (found.body,), found.callers, body=True)
                                        ).future.result(120)
    assert all(f.text != text[f.start:f.end] for f in completion.fills)


def test_a_document_starting_with_a_byte_order_mark_is_checked_by_python(embedded_engine):
    """A client sent a file's text with its BOM: Python's compiler called the BOM an invalid character on line 1, so
    the whole-document check took it for the user's own error and left the rest to tree-sitter, which takes an
    unexpected indent. Over stdio the real model's rewrite of ``f(1`` in ``x = f(1)`` was applied as
    ``x = None\\n\\nbx = None\\n    f(1)``: the file no longer ran. Python reads a file's BOM as nothing; so does the
    check now."""
    text = "\ufeffdef f(a):\n    ...\n\nx = f(1)\n"
    at = text.index("f(1)")
    fills = embedded_engine.submit(RewriteRequest(text, "python", at - 3, at + 1)).future.result(120).fills
    compile(_applied(text, fills)[1:], "<rewritten>", "exec")  # Python runs the file: it compiles
    indented = HoleFill(at, at, "None\n\nbx = None\n    ")
    assert not edits_keep_parsing(spec_for("python"), text, [indented])
    assert edits_keep_parsing(spec_for("python"), text, [HoleFill(at, at + 4, "f(2)")])


def test_a_cr_only_document_is_read_as_lines_and_its_edits_come_back_with_cr():
    """Old Mac line ends: a lone CR ends a line for LSP (the editor shows lines) and for Python, but the engine read
    a CR-only file as one line, and tree-sitter a ``#`` comment as running to the end of the file: "Fill holes" and
    "Complete body" wrote LF into the CR-only file (``def main():\\n    import itertools\\r``) and the TODO hole was
    not found. The engine reads the file as LF (one character for one) and writes CR back."""
    text = PY.replace("\n", "\r")
    blanks = survey(text, "python", 0, len(text)).blanks
    assert [(b.label, text[b.start:b.end]) for b in blanks] == [
        ("...", "    ..."), ("pass", "    # TODO: two pi r\r    pass"), ("__", "__")]
    backend = ScriptedBackend("return math.pi * r * r", "\n        return 2 * math.pi * r", "return r")
    completion = _run(FillRequest(text, "python", blanks), backend)
    assert not any("\r" in p for p in backend.plans[0].pieces if isinstance(p, str))
    assert completion.fills and all("\n" not in f.text for f in completion.fills)
    assert _applied(text, completion.fills) == _applied(PY, _run(FillRequest(PY, "python", survey(
        PY, "python", 0, len(PY)).blanks), backend).fills).replace("\n", "\r")
    moved = "def main(): ...\r\r\rprint(main())\r"   # a same-line body moves to its own line: with a CR
    body = survey(moved, "python", 5, 5).body
    assert body is not None
    completion = _run(FillRequest(moved, "python", (body,)), ScriptedBackend("return 1"))
    assert _applied(moved, completion.fills) == "def main():\r    return 1\r\r\rprint(main())\r"
    broken = "def f(x):\r    y = (x + 1 2 3\r    return y\r\r\rprint(f(2))\r"
    spans = survey(broken, "python", broken.index("y ="), broken.index("y =")).errors
    fixer = ScriptedBackend("    y = (x + 1, 2, 3)\n    z = y")
    fixed = _run(FixRequest(broken, "python", spans), fixer)
    for plan in fixer.plans:
        assert not any("\r" in (p if isinstance(p, str) else p.init or "") for p in plan.pieces)
    assert _applied(broken, fixed.fills) == broken.replace("    y = (x + 1 2 3", "    y = (x + 1, 2, 3)\r    z = y")


# -- end to end --------------------------------------------------------------------------------

@pytest.fixture
def applied(client):
    """workspace/applyEdit requests the server sent during the test (the client accepts them)."""
    if not hasattr(client, "applied_edits"):
        client.applied_edits = []

        @client.feature(types.WORKSPACE_APPLY_EDIT)
        def _apply(ls, params: types.ApplyWorkspaceEditParams):
            ls.applied_edits.append(params)
            return ls.apply_answer
    client.applied_edits.clear()
    client.apply_answer = types.ApplyWorkspaceEditResult(applied=True)
    return client.applied_edits


def _range(text: str, start: int, end: int) -> types.Range:
    def pos(offset):
        line = text.count("\n", 0, offset)
        return types.Position(line, offset - (text.rfind("\n", 0, offset) + 1))
    return types.Range(pos(start), pos(end))


def _offset(text: str, p: types.Position) -> int:
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    return starts[p.line] + p.character


async def _actions(client, uri, rng, only=None, trigger=types.CodeActionTriggerKind.Invoked):
    result = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri), rng, types.CodeActionContext([], only=only, trigger_kind=trigger)))
    return result or []


def _pick(actions, prefix):
    found = [a for a in actions if a.title.startswith(prefix)]
    assert len(found) <= 1
    return found[0] if found else None


def _edits(client, edit: types.WorkspaceEdit, uri: str, version: int):
    """The text edits of ``edit``, checking it names the version it was computed for when it can."""
    if client.editor == "vscode":  # documentChanges supported: the edit carries the version
        (change,) = edit.document_changes
        assert change.text_document.uri == uri and change.text_document.version == version
        return list(change.edits)
    assert edit.document_changes is None
    return list(edit.changes[uri])


def _apply(text: str, edits) -> str:
    for e in sorted(edits, key=lambda e: _offset(text, e.range.start), reverse=True):
        text = text[:_offset(text, e.range.start)] + e.new_text + text[_offset(text, e.range.end):]
    return text


def _parses(text: str, language: str) -> bool:
    return error_count(parse(spec_for(language), text)) == 0


async def _configure(client, **settings):
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams({"diffusionLsp": settings}))


async def test_offers_are_lazy_titled_and_filtered_by_kind(client):
    uri = f"file:///offers-{client.snapshot}.py"
    open_doc(client, uri, PY)
    everything = await _actions(client, uri, _range(PY, 0, len(PY)))
    assert {a.title for a in everything} >= {"Fill 3 holes", "Rewrite selection"}
    assert all(isinstance(a, types.CodeAction) and a.edit is None and a.data for a in everything)
    kinds = {a.data["action"]: a.kind for a in everything}  # clients match on these, never on titles
    assert kinds == {"rewriteSelection": "refactor.rewrite.rewriteSelection", "fillHoles": "refactor.rewrite.fillHoles"}
    assert all(a.tags is None for a in everything)  # neither snapshot advertises codeAction.tagSupport
    at = PY.index("pass")
    cursor = await _actions(client, uri, _range(PY, at, at))
    assert {a.title for a in cursor} == {"Fill 1 hole", "Complete body of perimeter"}
    assert {a.kind for a in cursor} == {"refactor.rewrite.fillHoles", "refactor.rewrite.completeBody"}
    only_body = await _actions(client, uri, _range(PY, at, at), only=["refactor.rewrite.completeBody"])
    assert [a.data["action"] for a in only_body] == ["completeBody"]
    assert await _actions(client, uri, _range(PY, 0, len(PY)), only=[types.CodeActionKind.QuickFix]) == []


@pytest.mark.parametrize("language,text", [("python", PY), ("javascript", JS)])
async def test_three_holes_are_filled_in_one_job_exactly_in_place(client, language, text):
    uri = f"file:///holes-{client.snapshot}.{language}"
    open_doc(client, uri, text, language)
    found = survey(text, language, 0, len(text))
    holes = [_range(text, b.start, b.end) for b in found.blanks]
    await _configure(client, validate=False)  # every hole is filled, so the ranges can be checked exactly
    try:
        action = _pick(await _actions(client, uri, _range(text, 0, len(text))), "Fill 3 holes")
        client.drafts.clear()
        before = await stats(client)
        t0 = time.monotonic()
        resolved = await client.code_action_resolve_async(action)
        elapsed = time.monotonic() - t0
        after = await stats(client)
    finally:
        await _configure(client, validate=True)
    assert after["jobs"] == before["jobs"] + 1 and after["completed"] == before["completed"] + 1
    edits = _edits(client, resolved.edit, uri, 1)
    assert [e.range for e in edits] == holes
    result = resolved.data["result"]["holes"]
    assert [h["text"] for h in result] == [e.new_text for e in edits]
    assert all(0 <= t["confidence"] <= 1 for h in result for t in h["tokens"])
    await asyncio.sleep(0.1)
    drafts = [d for d in client.drafts if d["uri"] == uri]
    assert drafts and drafts[-1]["done"] and not any(d["done"] for d in drafts[:-1])
    assert [d["step"] for d in drafts] == sorted(d["step"] for d in drafts)
    assert [h["text"] for h in drafts[-1]["holes"]] == [e.new_text for e in edits]
    assert [h["range"]["start"]["line"] for h in drafts[0]["holes"]] == [r.start.line for r in holes]
    progress = [r for token, r in client.progress_reports.items() if str(token).startswith("diffusion-lsp/action/")]
    assert progress and isinstance(progress[-1][0], types.WorkDoneProgressBegin)
    assert isinstance(progress[-1][-1], types.WorkDoneProgressEnd)
    print(f"\n{language} 3-hole fill: {elapsed * 1000:.0f} ms round trip, engine {after['last_elapsed_ms']} ms")


async def test_the_run_action_command_ends_in_one_versioned_apply_edit(client, applied):
    uri = f"file:///run-{client.snapshot}.py"
    open_doc(client, uri, PY)
    holes = [_range(PY, b.start, b.end) for b in survey(PY, "python", 0, len(PY)).blanks]
    action = _pick(await _actions(client, uri, _range(PY, 0, len(PY))), "Fill 3 holes")
    await _configure(client, validate=False)
    try:
        answer = plain(await client.workspace_execute_command_async(
            types.ExecuteCommandParams("diffusion.runAction", [action.data])))
    finally:
        await _configure(client, validate=True)
    # the edit's label says what it did (validation off: every hole gets a fill)
    assert answer["applied"] is True and len(applied) == 1 and applied[0].label == "filled 3 of 3 holes"
    assert answer["result"]["summary"] == "filled 3 of 3 holes"
    assert [e.range for e in _edits(client, applied[0].edit, uri, 1)] == holes


async def test_an_edit_the_editor_refuses_is_not_reported_as_done(client, applied):
    """The client answers workspace/applyEdit with applied: false (its document moved past the edit's version): the
    user is told nothing changed, with the editor's reason, not "filled 3 of 3 holes"."""
    uri = f"file:///refused-{client.snapshot}.py"
    open_doc(client, uri, PY)
    action = _pick(await _actions(client, uri, _range(PY, 0, len(PY))), "Fill 3 holes")
    client.apply_answer = types.ApplyWorkspaceEditResult(applied=False, failure_reason="the buffer is newer")
    await _configure(client, validate=False)
    try:
        before = len(client.messages)
        answer = plain(await client.workspace_execute_command_async(
            types.ExecuteCommandParams("diffusion.runAction", [action.data])))
    finally:
        await _configure(client, validate=True)
    assert answer["applied"] is False and answer["reason"] == "the buffer is newer" and len(applied) == 1
    told = [m.message for m in client.messages[before:]]
    assert "diffusion-lsp: the edit was not applied (the buffer is newer); nothing changed" in told
    assert not any("filled" in m for m in told)


@pytest.mark.parametrize("language,text", [("python", PY), ("javascript", JS)])
async def test_validated_fills_and_bodies_parse(client, language, text):
    uri = f"file:///valid-{client.snapshot}.{language}"
    open_doc(client, uri, text, language)
    at = text.index("TODO")
    for title in ("Fill", "Complete body"):
        action = _pick(await _actions(client, uri, _range(text, at, at)), title)
        assert action is not None, title
        resolved = await client.code_action_resolve_async(action)
        if resolved.edit is None:  # the small model found nothing that parses: nothing to edit, the user is told
            assert resolved.data["result"]["holes"] == []
            assert resolved.data["result"]["summary"] in ("filled 0 of 1 hole; 1 had no fill that parses",
                                                          "no body that parses was found")
            continue
        new = _apply(text, _edits(client, resolved.edit, uri, 1))
        assert _parses(new, language)
        assert new.startswith(text[:text.index("perimeter")]) and new.endswith(text[text.index("\n\n", at):])


@pytest.mark.parametrize("language,text,error", [
    ("python", "def f(x):\n    y = (x + 1\n    return y\n\n\nprint(f(2))\n", "y ="),
    ("javascript", "function f(a) {\n  const b = a +;\n  return b;\n}\nf(1);\n", "const"),
])
async def test_a_fix_is_offered_only_when_it_parses(client, language, text, error):
    uri = f"file:///fix-{client.snapshot}.{language}"
    open_doc(client, uri, text, language)
    at = text.index(error)
    before = await stats(client)
    actions = await _actions(client, uri, _range(text, at, at), only=[types.CodeActionKind.QuickFix])
    assert (await stats(client))["jobs"] == before["jobs"] + 1  # the fix was tried while offering
    for action in actions:
        assert action.title == "Fix syntax error" and action.kind == types.CodeActionKind.QuickFix
        resolved = await client.code_action_resolve_async(action)
        assert _parses(_apply(text, _edits(client, resolved.edit, uri, 1)), language)
    clean = f"file:///clean-{client.snapshot}.{language}"
    open_doc(client, clean, PY if language == "python" else JS, language)
    assert await _actions(client, clean, _range(PY, 0, 0), only=[types.CodeActionKind.QuickFix]) == []


async def test_rewrite_edits_only_changed_whole_lines_inside_the_selection(client, applied):
    uri = f"file:///rewrite-{client.snapshot}.py"
    open_doc(client, uri, PY)
    lo, hi = PY.index("def describe"), PY.index("print(")
    await _configure(client, validate=False)
    try:
        action = _pick(await _actions(client, uri, _range(PY, lo, hi)), "Rewrite selection")
        resolved = await client.code_action_resolve_async(action)
        edits = _edits(client, resolved.edit, uri, 1) if resolved.edit else []  # none: the text was kept
        answer = plain(await client.workspace_execute_command_async(
            _rewrite(uri, 1, PY, lo, hi, instruction="use math.pi")))
    finally:
        await _configure(client, validate=True)
    for e in edits:
        start, end = _offset(PY, e.range.start), _offset(PY, e.range.end)
        assert lo <= start <= end <= hi and e.range.start.character == 0 and e.range.end.character == 0
    assert answer["applied"] == bool(applied)
    for params in applied:
        assert all(lo <= _offset(PY, e.range.start) <= _offset(PY, e.range.end) <= hi
                   for e in _edits(client, params.edit, uri, 1))


def _rewrite(uri, version, text, lo, hi, **extra) -> types.ExecuteCommandParams:
    r = _range(text, lo, hi)
    rng = {"start": {"line": r.start.line, "character": r.start.character},
           "end": {"line": r.end.line, "character": r.end.character}}
    return types.ExecuteCommandParams("diffusion.rewriteSelection",
                                      [{"uri": uri, "version": version, "range": rng, **extra}])


async def test_a_stale_version_is_never_edited(client, applied):
    uri = f"file:///stale-action-{client.snapshot}.py"
    open_doc(client, uri, PY)
    action = _pick(await _actions(client, uri, _range(PY, 0, len(PY))), "Fill 3 holes")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(version=2, uri=uri),
        [types.TextDocumentContentChangePartial(types.Range(types.Position(0, 0), types.Position(0, 0)), "# hi\n")]))
    with pytest.raises(JsonRpcException) as err:
        await client.code_action_resolve_async(action)
    assert err.value.code == CONTENT_MODIFIED
    with pytest.raises(JsonRpcException) as err:
        await client.workspace_execute_command_async(_rewrite(uri, 1, PY, 0, 40))
    assert err.value.code == CONTENT_MODIFIED
    assert applied == []


async def _denoising(client, uri: str, timeout: float = 20.0) -> None:
    """Until the model is past its first denoising step on ``uri`` (a draft says so); a loaded machine
    may take longer than any fixed sleep."""
    deadline = time.monotonic() + timeout
    while not any(d["uri"] == uri and d["step"] >= 1 for d in client.drafts):
        assert time.monotonic() < deadline, "no draft past step 1"
        await asyncio.sleep(0.02)


async def test_an_edit_during_a_long_rewrite_stops_it_and_nothing_is_applied(client, applied):
    uri = f"file:///moving-{client.snapshot}.py"
    text = "def f(x):\n" + "    y = x + 1\n" * 60
    open_doc(client, uri, text)
    await _configure(client, steps=400, threshold=1.5, validate=False)  # one token a step: hundreds of steps
    try:
        before = await stats(client)
        client.drafts.clear()
        pending = asyncio.ensure_future(client.workspace_execute_command_async(_rewrite(uri, 1, text, 10, len(text))))
        await _denoising(client, uri)
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=2, uri=uri),
            [types.TextDocumentContentChangePartial(types.Range(types.Position(0, 0), types.Position(0, 0)), "#\n")]))
        with pytest.raises(JsonRpcException) as err:
            await asyncio.wait_for(pending, 30)  # a hang guard: 400 steps would take far longer than the edit
        assert err.value.code == CONTENT_MODIFIED
        after = await cancelled_after(client, before)
    finally:
        await _configure(client, steps=0, threshold=0, validate=True)
    assert after["cancelled"] == before["cancelled"] + 1 and after["last_cancelled_at_step"] >= 1
    assert applied == []


async def test_cancelling_a_long_rewrite_returns_promptly_and_stops_the_model(client, applied):
    text = "def f(x):\n" + "    y = x + 1\n" * 60

    async def attempt(i: int) -> bool:
        uri = f"file:///cancel-rewrite-{client.snapshot}-{i}.py"
        open_doc(client, uri, text)
        before = await stats(client)
        client.drafts.clear()
        msg_id = f"rewrite-{client.snapshot}-{i}"
        fut = client.protocol.send_request("workspace/executeCommand", _rewrite(uri, 1, text, 10, len(text)),
                                           msg_id=msg_id)
        await _denoising(client, uri)
        client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
        with pytest.raises(JsonRpcException) as err:
            await asyncio.wait_for(asyncio.wrap_future(fut), 30)  # a hang guard, not a latency limit
        assert err.value.code == REQUEST_CANCELLED
        after = await cancelled_after(client, before, 60)
        seen = {k: (before.get(k), after.get(k)) for k in ("jobs", "completed", "cancelled", "failed",
                                                           "last_cancelled_at_step")}
        if after["cancelled"] == before["cancelled"] and after["completed"] == before["completed"] + 1:
            return False   # the fill ended before the cancellation reached the server (a loaded machine)
        assert after["cancelled"] == before["cancelled"] + 1, seen
        assert 1 <= after["last_cancelled_at_step"] < 400, seen  # stopped mid-denoising, not run to the end
        assert applied == []
        return True

    await _configure(client, steps=400, threshold=1.5)  # one token a step: hundreds of steps
    try:
        await raced(attempt)
    finally:
        await _configure(client, steps=0, threshold=0)


def test_actions_are_tagged_as_generated_when_the_client_supports_it():
    from pytest_lsp import client_capabilities as snapshot

    from lsp_server.actions import REWRITE, ActionData, Actions

    class Server:
        client_capabilities = snapshot("visual-studio-code")

    whole = types.Range(types.Position(0, 0), types.Position(1, 0))
    data = ActionData(REWRITE, "file:///t.py", 1, whole, "Rewrite selection")
    assert Actions(Server())._format(data).tags is None
    Server.client_capabilities.text_document.code_action.tag_support = types.CodeActionTagOptions(
        value_set=[types.CodeActionTag.LlmGenerated])
    action = Actions(Server())._format(data)
    assert action.tags == [types.CodeActionTag.LlmGenerated] and action.data["version"] == 1
    Server.client_capabilities.text_document.code_action.resolve_support = None  # no lazy edits: a command
    assert Actions(Server())._format(data).command.command == "diffusion.runAction"


def test_an_offer_whose_surveyed_text_changed_at_the_same_version_offers_nothing(monkeypatch):
    """A didChange that does not raise the version (a client's versions going back) arriving while the offer's
    survey ran: the offer checked the version only, so it was made (and its fix computed) with spans found in the
    old text, stamped with the new text's generation. Now a new generation during the survey offers nothing."""
    from lsp_server import actions as actions_module
    from lsp_server.server import build_server

    server = build_server()
    monkeypatch.setattr(type(server), "client_capabilities", types.ClientCapabilities())   # not initialized here
    uri = "file:///same-version.py"
    server.documents.open(types.TextDocumentItem(uri=uri, language_id="python", version=5,
                                                 text="def f(x):\n    return (x +\n\nprint(1)\n"))
    real_survey = actions_module.survey

    def survey_then_edit(text, language, start, end):
        found = real_survey(text, language, start, end)
        server.documents.change(types.DidChangeTextDocumentParams(   # the same version, another text
            types.VersionedTextDocumentIdentifier(version=5, uri=uri),
            [types.TextDocumentContentChangeWholeDocument(text="x = 1\n\n\n\ny = 2\n")]), "utf-16")
        return found

    monkeypatch.setattr(actions_module, "survey", survey_then_edit)
    params = types.CodeActionParams(types.TextDocumentIdentifier(uri), types.Range(
        types.Position(0, 0), types.Position(3, 0)), types.CodeActionContext([], only=["refactor.rewrite"]))
    offered_before = asyncio.run(server.actions.offer(params))
    assert offered_before == []
    monkeypatch.setattr(actions_module, "survey", real_survey)   # the same request on a text left alone: offered
    assert [a.title for a in asyncio.run(server.actions.offer(params))]
