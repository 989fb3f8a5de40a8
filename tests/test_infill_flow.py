"""engine.infill.complete with a scripted backend: which holes are tried, in what order, and what is offered."""

import pytest

from engine.backends.base import Candidate, Control, FillResult
from engine.config import FillOptions
from engine.infill import complete
from engine.languages import spec_for
from engine.requests import InfillRequest

TEXT = "def f(values):\n    total = sum(values)\n    return tot"


class Scripted:
    """Answers each fill with ``answer(prefix)``; records the prefixes it was asked about."""

    name = "scripted"
    default_steps, max_positions = 16, 1024
    searches_lengths = takes_instruction = scores_text = scores_options = False
    model_dir = None

    def __init__(self, answer):
        self.answer, self.prefixes = answer, []

    def count_tokens(self, text: str) -> int:
        return (len(text) + 3) // 4

    def fill(self, plan, control) -> FillResult:
        prefix = plan.pieces[0]
        self.prefixes.append(prefix)
        text = self.answer(prefix)
        if control.draft is not None:  # one draft, at the last step
            control.draft(3, (text,), ((0.9,),), ((text,),))
        return FillResult((Candidate((text,), ((0.9,),), (((0, len(text)),),), 0.0),), 3, 3, 1)

    def stats(self) -> dict:
        return {}

    def close(self) -> None:
        pass


def _complete(backend, steps=None):
    return complete(backend, FillOptions(min_confidence=0.0), InfillRequest(TEXT, len(TEXT), "python", steps=steps),
                    Control(lambda s: None))


def test_a_typed_word_is_continued_as_typed_first():
    backend = Scripted(lambda prefix: "al")
    c = _complete(backend)
    assert [p.endswith("return tot") for p in backend.prefixes] == [True]     # one attempt, fragment kept
    assert c.fills[0].start == c.fills[0].end == len(TEXT) and c.fills[0].text == "al"


def test_the_healed_word_is_tried_when_the_typed_one_finds_nothing():
    backend = Scripted(lambda prefix: "al(((" if prefix.endswith("tot") else " total")
    c = _complete(backend)
    assert [p.endswith("return tot") for p in backend.prefixes] == [True, False]
    assert backend.prefixes[1].endswith("    return")                        # the fragment regenerated
    fill = c.fills[0]
    assert fill.start == fill.end == len(TEXT) and fill.text == "al"          # inserted after what was typed
    assert c.steps == 6 and c.forwards == 6 and c.rejected >= 1               # both attempts counted


def test_the_healed_attempt_keeps_within_the_step_budget():
    backend = Scripted(lambda prefix: "al(((")
    c = _complete(backend, steps=3)                                           # the first attempt spends it
    assert len(backend.prefixes) == 1 and not c.fills


def test_the_backends_default_budget_holds_for_typed_and_healed_together():
    # A backend that searches lengths itself (DiffusionGemma) declares its default budget like any other:
    # with no steps set, the typed attempt's 3 steps spend a default of 3 and no healed attempt follows
    # (DiffusionGemma once had no default_steps, and a typed-then-healed request spent its default twice).
    backend = Scripted(lambda prefix: "al(((")
    backend.default_steps, backend.searches_lengths = 3, True
    c = _complete(backend)
    assert len(backend.prefixes) == 1 and c.steps == 3 and not c.fills


# Alternatives: a one-line hole is tried at 8 and 24 slots; each length's valid fill is offered, best first.
LINE_DOC = "import os\n\nprint(os.sep)\n"   # the cursor on the empty line: a LINE hole


def _line_fill(text: str, max_alternatives: int = 3, drafts: list | None = None):
    from engine.config import LoadConfig
    from engine.requests import Draft
    from tests.scripted import ScriptedBackend

    offset = text.index("\n\n") + 1
    hook = None if drafts is None else (lambda step, *rest, **where: drafts.append(Draft(step, *rest, **where)))
    # no bar: these tests are about which fills compete and in what order (the shipped calibration's bar, which
    # changes with every refit, is tested with the real model in test_confidence.py)
    return offset, complete(ScriptedBackend(LoadConfig()), FillOptions(max_alternatives=max_alternatives,
                                                                       min_confidence=0.0),
                            InfillRequest(text, offset, "python"), Control(lambda s: None, hook))


def test_each_lengths_valid_fill_is_an_alternative_the_most_confident_first():
    from tests.scripted import LENGTHS_MARK

    offset, c = _line_fill(LENGTHS_MARK + LINE_DOC)       # "8" at 8 slots (confidence 0.25), "24" at 24 (0.75)
    assert [f.text for f in c.fills + c.alternatives] == ["24", "8"]
    assert all((f.start, f.end) == (offset, offset) for f in c.fills + c.alternatives)
    assert c.alternatives[0].confidences == (0.25,)


def test_the_same_fill_from_two_lengths_is_offered_once():
    _, c = _line_fill(LINE_DOC)                           # the scripted "0" at both lengths
    assert [f.text for f in c.fills] == ["0"] and c.alternatives == ()


def test_one_alternative_is_the_best_fill_alone():
    from tests.scripted import LENGTHS_MARK

    _, c = _line_fill(LENGTHS_MARK + LINE_DOC, max_alternatives=1)
    assert [f.text for f in c.fills] == ["24"] and c.alternatives == ()


def test_drafts_of_a_second_length_restart_the_text_and_keep_counting_steps():
    from tests.scripted import LENGTHS_MARK

    drafts: list = []
    offset, c = _line_fill(LENGTHS_MARK + LINE_DOC, drafts=drafts)
    assert [(d.attempt, d.slots) for d in drafts] == [(0, 8), (1, 24)]   # one step each: the budget of 2 shared
    assert [d.step for d in drafts] == [1, 2] and c.steps == 2
    assert all(d.kind.value == "line" and d.spans == ((offset, offset),) for d in drafts)


def test_a_healed_words_drafts_replace_the_fragment():
    # "return tot": the typed attempt finds nothing valid, the healed one regenerates the fragment; its
    # drafts replace the fragment (the typed attempt's go in at the cursor)
    drafts: list = []
    backend = Scripted(lambda prefix: "al(((" if prefix.endswith("tot") else " total")
    hook = lambda step, *rest, **where: drafts.append((step, rest[0], where))  # noqa: E731
    c = complete(backend, FillOptions(), InfillRequest(TEXT, len(TEXT), "python"), Control(lambda s: None, hook))
    fragment = len(TEXT) - len(" tot")
    assert [(step, texts, where["attempt"], where["spans"]) for step, texts, where in drafts] == [
        (3, ("al(((",), 0, ((len(TEXT), len(TEXT)),)),
        (6, (" total",), 1, ((fragment, len(TEXT)),))]
    assert c.fills[0].text == "al"                     # the answer: inserted after what was typed


def test_a_fill_with_a_replacement_character_the_document_lacks_is_not_offered():
    """The model's bytes that are no UTF-8 decode as U+FFFD (seen on the real server: a string after an emoji filled
    with a run of them): that is garbage in the user's file, not a fill; the document's own U+FFFD may be copied."""
    text = 'faces = ["😀", "'
    request = InfillRequest(text, len(text), "python")
    for answer, offered in (('\ufffd\ufffd"]', False), ('😢"]', True)):
        c = complete(Scripted(lambda prefix: answer), FillOptions(min_confidence=0.0), request, Control(lambda s: None))
        assert [f.text for f in c.fills] == ([answer] if offered else []), answer
    own = 'faces = ["\ufffd", "'
    c = complete(Scripted(lambda prefix: '\ufffd"]'), FillOptions(min_confidence=0.0),
                 InfillRequest(own, len(own), "python"), Control(lambda s: None))
    assert [f.text for f in c.fills] == ['\ufffd"]']


@pytest.mark.parametrize("language,text,at,answer,offered", [
    # the code after the cursor would become a comment: it parses, and the user's `+ a` is lost
    ("python", "def f(a):\n    return  + a\n", "return ", "1  # one", False),
    ("javascript", "function f(a) {\n  return  + a;\n}\n", "return ", "1 // one", False),
    ("go", "package m\n\nfunc f(a int) int {\n\treturn  + a\n}\n", "return ", "1 /* one", False),
    ("rust", "fn f(a: i32) -> i32 {\n    1 + a\n}\n", "    1", " // one", False),
    ("python", "def f(a):\n    return  + a\n", "return ", "1", True),
    ("python", 'def f(a):\n    return  + a\n', "return ", '"#1"', True),          # in a string: no comment
    ("javascript", "function f(a) {\n  return 1; /* a */\n}\n", "1; ", "// one", True),   # was a comment already
    ("python", "def f(a):\n    return a\n", "return a", "  # the sum", True),            # nothing after it
    ("python", "x = 1  # a note\n", "# a", " new", True),                               # inside a comment
])
def test_a_fill_that_turns_the_code_after_the_cursor_into_a_comment_is_not_offered(language, text, at, answer, offered):
    cursor = text.index(at) + len(at)
    c = complete(Scripted(lambda prefix: answer), FillOptions(min_confidence=0.0),
                 InfillRequest(text, cursor, language), Control(lambda s: None))
    assert [f.text for f in c.fills] == ([answer] if offered else []), answer


TEMPLATE = "function url(base, id) {\n  return `${base}/items/${}`;\n}\n"


@pytest.mark.parametrize("language,text,at,answer,offered", [
    # the fill closes the substitution the user's `}` closes: that `}` is the template's text now
    ("javascript", TEMPLATE, "/items/${", "base}.{base}.{", False),
    ("typescript", TEMPLATE.replace("(base, id)", "(base: string, id: number)"), "/items/${", "id}.{", False),
    ("javascript", TEMPLATE, "/items/${", "id", True),
    ("javascript", TEMPLATE, "/items/${", "base}/${id", True),        # the user's `}` still closes one
    ("python", 'def f(a, b):\n    return f"{}"\n', 'f"{', "a", True),
    ("javascript", 'const s = "a}";\n', '"a', "b", True),           # a `}` in a string closes nothing
    ("go", "package m\n\nfunc f(xs []int) int {\n\treturn len(xs[])\n}\n", "xs[", "0", True),
])
def test_a_fill_that_leaves_the_users_closing_bracket_as_text_is_not_offered(language, text, at, answer, offered):
    cursor = text.index(at) + len(at)
    c = complete(Scripted(lambda prefix: answer), FillOptions(min_confidence=0.0),
                 InfillRequest(text, cursor, language), Control(lambda s: None))
    assert [f.text for f in c.fills] == ([answer] if offered else []), answer


@pytest.mark.parametrize("language,text,at,answer,result", [
    ("javascript", "function f(x) {\n\treturn x;\n}\n", "return", "\tx++;\n", "function f(x) {\n\tx++;\n\treturn x;\n}\n"),
    ("go", "package m\n\nfunc f(x int) int {\n\treturn x\n}\n", "return", "\tx++",
     "package m\n\nfunc f(x int) int {\n\tx++\n\treturn x\n}\n"),
    ("python", "def f(x):\n    return x\n", "return", "    y = x\n", "def f(x):\n    y = x\n    return x\n"),
    ("rust", "fn f(x: i32) -> i32 {\r\n    x\r\n}\r\n", "x\r\n}", "    let y = x;\n",
     "fn f(x: i32) -> i32 {\r\n    let y = x;\r\n    x\r\n}\r\n"),
])
def test_a_line_inserted_before_indented_code_leaves_that_code_indented(language, text, at, answer, result):
    """The cursor after a line's indentation, before its code: the hole regenerates the indentation and the fill is
    a whole line; the code after the cursor kept its indentation (it lost it: ``x++;`` then ``return x;`` at
    column 0, and Python's ``return`` outside its function, so never a fill)."""
    c = complete(Scripted(lambda prefix: answer), FillOptions(min_confidence=0.0),
                 InfillRequest(text, text.index(at), language), Control(lambda s: None))
    assert [text[:f.start] + f.text + text[f.end:] for f in c.fills] == [result]


@pytest.mark.parametrize("language,text,at,answer,result", [
    # an empty line in a body (the real model answered ``return x\n`` here: a copy of the line after the if, which
    # validate.repeats_neighbour now rejects)
    ("python", "def f(x):\n    if x is None:\n        \n    return x\n", "None:\n        ", "return 0\n",
     "def f(x):\n    if x is None:\n        return 0\n    return x\n"),
    # after the opener on its line, blank lines and indentation after the body dropped too
    ("python", "def f(x):\n    if x is None:\n    return x\n", "None:", "\n        return 0\n\n    \n",
     "def f(x):\n    if x is None:\n        return 0\n    return x\n"),
    ("python", "if __name__ == '__main__':\n", "'__main__':", "\n    main()\n\n",
     "if __name__ == '__main__':\n    main()\n"),
    ("javascript", "function f(x) {\n  if (x === null) {\n    \n  }\n}\n", "null) {\n    ", "return x;\n",
     "function f(x) {\n  if (x === null) {\n    return x;\n  }\n}\n"),
    ("go", "package m\r\n\r\nfunc f() error {\r\n\tif err != nil {\r\n\t}\r\n\treturn nil\r\n}\r\n", "nil {",
     "\n\t\treturn err\n",
     "package m\r\n\r\nfunc f() error {\r\n\tif err != nil {\r\n\t\treturn err\r\n\t}\r\n\treturn nil\r\n}\r\n"),
    # the rest of the line is blank but for spaces: they stay where they were, after the fill
    ("python", "def f(x):\n    if x:\n          \n    return x\n", "if x:\n        ", "x += 1\n",
     "def f(x):\n    if x:\n        x += 1  \n    return x\n"),
])
def test_a_block_fill_before_a_blank_rest_of_the_line_leaves_no_blank_line(language, text, at, answer, result):
    """A block fill ending in a line break, before the line's own break: inserted as sent (Emacs, Helix: Neovim's
    and VS Code's clients dropped it themselves) it left a blank line after the body, so the server drops it."""
    c = complete(Scripted(lambda prefix: answer), FillOptions(min_confidence=0.0, names_rule=False),
                 InfillRequest(text, text.index(at) + len(at), language), Control(lambda s: None))
    assert c.kind.value == "block"
    assert [text[:f.start] + f.text + text[f.end:] for f in c.fills] == [result]


@pytest.mark.parametrize("language,text,at,answer,result", [
    # after an opener: the engine read the file as one line, so never a block (the fill was cut at its first LF)
    ("python", "def f(x):\r    if x is None:\r    return x\r", "None:", "\n        x = 0\n        return 0\n",
     "def f(x):\r    if x is None:\r        x = 0\r        return 0\r    return x\r"),
    # tree-sitter read Go's `// c` as running to the end of the file: an unclosed string after `return b` was text in a
    # comment, and offered
    ("go", "package m\r\rfunc f(a int) int {\r\tb := a // c\r\treturn b\r}\r", "return b", '"', None),
    ("go", "package m\r\rfunc f(a int) int {\r\tb := a // c\r\treturn b\r}\r", "return b", " + 1",
     "package m\r\rfunc f(a int) int {\r\tb := a // c\r\treturn b + 1\r}\r"),
    # a lone CR in a CRLF file ends its line too (the fill is CRLF's)
    ("python", "def f(x):\r\n    if x is None:\r    return x\r\n", "None:", "\n        x = 0\n",
     "def f(x):\r\n    if x is None:\r\n        x = 0\r    return x\r\n"),
    # a typed line's rest in a CR-only file ends at the CR
    ("python", "def f(x):\r    return \r\r\rprint(f(1))\r", "return ", "x + 1\n    y = 2",
     "def f(x):\r    return x + 1\r\r\rprint(f(1))\r"),
])
def test_a_lone_cr_ends_a_line_and_a_cr_only_document_gets_cr_back(language, text, at, answer, result):
    """Old Mac line ends (a lone CR: a line end for LSP, the editor and Python) are read as LF and written back."""
    from engine.serve import serve
    c = serve(Scripted(lambda prefix: answer), FillOptions(min_confidence=0.0, names_rule=False),
              InfillRequest(text, text.index(at) + len(at), language), Control(lambda s: None))
    assert [text[:f.start] + f.text + text[f.end:] for f in c.fills] == ([] if result is None else [result])


@pytest.mark.parametrize("language,text,at,answer,offered", [
    # the fill closes the user's bracket and opens one the user's closer then closes: it parses
    ("javascript", "function f(xs) {\n\tif (xs.length) {\n\t}\n\treturn xs;\n}\n", "(xs.length) {", "xs}\n\nops = {\n",
     False),
    ("javascript", "foo();\n", "foo(", "a), bar(b", False),
    ("go", "package m\n\nfunc f() {\n\tg(h())\n}\n", "g(h(", "1), k(2", False),
    ("typescriptreact", "const C = () => <p>{}</p>;\n", "<p>{", "1}{2", False),
    ("javascript", "foo();\n", "foo(", "a, bar(b)", True),                        # its own pair, inside
    ("javascript", "function f(xs) {\n\tif (xs.length) {\n\t}\n}\n", "(xs.length) {", "\n\t\tg({ a: [1] });", True),
    # the user is typing an unclosed call: its brackets pair only by the parser's recovery, and closing it is the
    # fill (two development holes' exact fills were rejected: ``t.Logf(`` -> ``"%s", out)``, ``_done(nu`` ->
    # ``ll, body);``)
    ("go", '\tout := buf.Bytes()\n\tif n != 4 {\n\t\tt.Errorf("found %d", n)\n\t\tt.Logf(\n\t}\n}\n\n'
     'func TestB(t *testing.T) {\n', "t.Logf(", '"%s", out)', True),
    ("typescript", "  app.addParser(\n    'json',\n    function (_, body, _done) {\n      _done(nu\n    },\n  );\n"
     "  app.removeParser('form');\n  app.addParser(\n", "_done(nu", "ll, body);", True),
    # so are an empty index or interpolation the user left to fill: closing it and opening another is a choice
    ("rust", "fn f(v: &[i32]) -> i32 {\n    v[]\n}\n", "v[", "0] + v[1", True),
    ("python", 'def f(a, b):\n    return f"{}"\n', 'f"{', "a}.{b", True),
])
def test_a_fill_that_regroups_the_brackets_around_the_cursor_is_not_offered(language, text, at, answer, offered):
    c = complete(Scripted(lambda prefix: answer), FillOptions(min_confidence=0.0, names_rule=False),
                 InfillRequest(text, text.index(at) + len(at), language), Control(lambda s: None))
    assert [f.text for f in c.fills] == ([answer] if offered else []), answer


@pytest.mark.parametrize("language,text,at,answer,offered", [
    # the editor closed the bracket typed (``chunk(|)``): a fill whose brackets pair among themselves keeps its own
    # closer (cut off as the user's, the call was never closed: 5 of 89 development holes lost their right line)
    ("python", "def f(arr, dims, n):\n    arr = arr.chunk()\n    return arr\n", "arr.chunk(",
     "dict(zip(dims, n))", "dict(zip(dims, n))"),
    ("go", "package m\n\nfunc f(out w, off int) {\n\tout.Write64()\n}\n", "Write64(", "uint64(off)", "uint64(off)"),
    ("rust", "fn f(v: &[i32]) -> i32 {\n    g()\n}\n", "g(", "v.len()", "v.len()"),
    # a fill that writes the user's closer again loses it
    ("javascript", "function f(xs) {\n  g();\n}\n", "g(", "h(xs));", "h(xs)"),
])
def test_a_fill_with_its_own_brackets_keeps_its_closer(language, text, at, answer, offered):
    c = complete(Scripted(lambda prefix: answer), FillOptions(min_confidence=0.0, names_rule=False),
                 InfillRequest(text, text.index(at) + len(at), language), Control(lambda s: None))
    assert [f.text for f in c.fills] == [offered], answer

_LATER = "".join(f"\tcount{i} := len(p) + {i}\n\tuse(count{i})\n" for i in range(12))   # past the window's suffix


@pytest.mark.parametrize("language,text,answer,offered", [
    # a header missing above its body: the window is cut before the function's closer, and without the header the
    # body's "}" closed the function there; the whole document, whose stray "}" the header pairs, decides
    ("go", "package m\n\nfunc f(p string) bool {\n\t_, err := stat(p)\n\t\n\t\twarn(err)\n\t}\n" + _LATER
     + "\treturn true\n}\n", "if err != nil {", True),
    ("typescript", "function f(p: string): boolean {\n  const err = stat(p);\n  \n    warn(err);\n  }\n"
     + _LATER.replace("\t", "  ").replace(":=", "=") + "  return true;\n}\n", "if (err) {", True),
    # where the user's body has its header, a header inserted above a statement leaves a block unclosed: refused
    ("go", "package m\n\nfunc f(p string) bool {\n\t_, err := stat(p)\n\t\n\twarn(err)\n" + _LATER
     + "\treturn true\n}\n", "if err != nil {", False),
])
def test_a_missing_header_is_judged_on_the_whole_document_when_the_window_cuts_its_closer(language, text, answer,
                                                                                          offered):
    at = text.index("\n\t\n" if language == "go" else "\n  \n") + 2 + (1 if language == "go" else 2)
    c = complete(Scripted(lambda prefix: answer), FillOptions(min_confidence=0.0, names_rule=False),
                 InfillRequest(text, at, language), Control(lambda s: None))
    assert [f.text.strip() for f in c.fills] == ([answer] if offered else []), answer


@pytest.mark.parametrize("language,text,at,answer,offered", [
    # an empty line's fill that copies the line above (they parse: development fills did this, never rightly)
    ("python", "class A:\n    def __init__(self, status):\n        self.status = status\n        \n", "= status\n        ",
     "self.status = status", False),
    ("go", "package m\n\nfunc f(xs []int) {\n\tfor _, x := range xs {\n\t\tuse(x)\n\t\t\n\t}\n}\n", "use(x)\n\t\t",
     "use(x)", False),
    # a line inserted before the same line
    ("javascript", "function f(a) {\n  \n  return a;\n}\n", "{\n  ", "return a;", False),
    # a different line is offered
    ("python", "def f(xs):\n    total = 0\n    for x in xs:\n        \n        total += x\n", "xs:\n        ",
     "x = x * 2", True),
])
def test_a_fill_that_copies_the_code_line_next_to_it_is_not_offered(language, text, at, answer, offered):
    c = complete(Scripted(lambda prefix: answer), FillOptions(min_confidence=0.0, names_rule=False),
                 InfillRequest(text, text.index(at) + len(at), language), Control(lambda s: None))
    assert bool(c.fills) is offered and all(answer in f.text for f in c.fills), [f.text for f in c.fills]



@pytest.mark.parametrize("language,text,at,answer,offered", [
    # the new-user trial's JavaScript comment at min_confidence 0: ` Just Just Just Just ..` was shown
    ("javascript", "// See\nfunction f(a) {\n  return a;\n}\n", "// See", " Just Just Just Just Just", False),
    ("python", "import copy\n\n", "\n\n", "copyreg = _copy_copy_copy", False),   # a development fill
    ("python", "def f(x):\n    \n", "(x):\n    ", "return max___", False),
    # what the document has is the user's, no stutter
    ("python", "FLAGS = [a, a, a, a]\n\ndef f(a):\n    \n", "(a):\n    ", "return [a, a, a, a]", True),
    ("python", "def f(x):\n    \n", "(x):\n    ", "return x * x", True),
])
def test_the_models_stutter_is_not_offered(language, text, at, answer, offered):
    c = complete(Scripted(lambda prefix: answer), FillOptions(min_confidence=0.0, names_rule=False),
                 InfillRequest(text, text.index(at) + len(at), language), Control(lambda s: None))
    assert bool(c.fills) is offered and all(answer in f.text for f in c.fills), [f.text for f in c.fills]
    assert offered or c.rejected

_MATCH = ("use std::env;\n\nfn main() {\n    let target = match env::var(\"TARGET\") {\n        Ok(target) => target,\n"
          "        Err(e) => {\n            println!(\n                \"cargo:warning={}: no TARGET: {}\",\n"
          "                env!(\"CARGO_PKG_NAME\"),\n                e\n            );\n            return;\n"
          "        }\n    };\n\n    // a comment about what follows\n    if target.starts_with(\"x\") {\n"
          "        println!(\"cargo:rustc-cfg=x\");\n    }\n}\n")
_RANGE = ("package m\n\nfunc f(cs []C) {\n\tfor i, c := range cs {\n\t\tif c.A == nil {\n\t\t\tif i > 0 {\n"
          "\t\t\t\tc.B = 1\n\t\t\t}\n\t\t}\n\t}\n\treturn\n}\n")
_MODES = ("export default function wren(hljs) {\n  const FIELD = { scope: 'property' };\n  return {\n"
          "    name: 'Wren',\n    contains: [\n      hljs.C_LINE_COMMENT_MODE,\n      FIELD,\n      VARIABLE\n"
          "    ]\n  };\n}\n\nexport { wren as default };\n")


@pytest.mark.parametrize("language,text,at,answer,context", [
    # each window is cut inside a construct, so it has errors of its own; the fill absorbs or moves them (the
    # window's count stays), while the whole document, which had none, gets one at the fill
    ("rust", _MATCH, "return;\n        }", ";", 64),                   # `Err(e) => { .. };` inside a match
    ("go", _RANGE, "c.B = 1\n\t\t\t}", "{", 12),                        # an `{` opened after the closer
    ("javascript", _MODES, "VARIABLE\n    ]", ";", 24),               # `[ .. ];` inside an object literal
    ("javascript", _MODES, "  };\n", "  const X = {\n", 24),          # an object opened and never closed
])
def test_a_fill_that_breaks_the_document_is_not_offered_when_the_window_has_errors_of_its_own(
        language, text, at, answer, context):
    from engine.languages import error_count, parse, spec_for
    cursor = text.index(at) + len(at)
    assert error_count(parse(spec_for(language), text[:cursor] + answer + text[cursor:])) > 0
    c = complete(Scripted(lambda prefix: answer), FillOptions(min_confidence=0.0, prefix_tokens=context,
                                                              suffix_tokens=context),
                 InfillRequest(text, cursor, language), Control(lambda s: None))
    assert [f.text for f in c.fills] == []


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_a_comment_alone_is_no_line_fill_but_where_comments_border_it_or_in_a_rewrite_or_a_body(eol):
    """The model's comment on a line no comment borders is refused (``validate.comment_only``); inside a comment's
    lines it is offered; a rewrite (its selection may be a comment) and "Complete body" (a comment ends the body)
    take it as they did."""
    comment, code = "# 😀 The Coverage interface is used", "z = y + 1"
    for above, answer, offered in (("    y = x * 2", comment, False), ("    y = x * 2", code, True),
                                   ("    # 😀 first we double x,", comment, True)):
        text = f"def f(x):{eol}{above}{eol}    {eol}    return y{eol}"
        at = text.index(f"{eol}    {eol}") + len(eol) + 4
        c = complete(Scripted(lambda prefix: answer), FillOptions(min_confidence=0.0),
                     InfillRequest(text, at, "python"), Control(lambda s: None))
        assert bool(c.fills) is offered, (above, answer)
        if offered:
            assert c.fills[0].text == answer
    text = f"def f(x):{eol}    y = x * 2{eol}    # old note{eol}    return y{eol}"
    start = text.index("# old note")
    rewrite = complete(Scripted(lambda prefix: comment), FillOptions(min_confidence=0.0),
                       InfillRequest(text, start, "python", end=start + len("# old note"), rewrite=True),
                       Control(lambda s: None))
    assert [f.text for f in rewrite.fills] == [comment]
    body = f"def f(x):{eol}    y = x * 2{eol}    {eol}    return y{eol}"
    at = body.index(f"{eol}    {eol}") + len(eol) + 4
    ends = complete(Scripted(lambda prefix: comment), FillOptions(min_confidence=0.0),
                    InfillRequest(body, at, "python", ends_block=True), Control(lambda s: None))
    assert [f.text for f in ends.fills] == [comment]


_STATEMENTS = "".join(f"    editor.commands.insertContent('{i}')\n    expect(editor.getHTML()).toBe('<p>{i}</p>')\n"
                      for i in range(14))   # the ``it``'s closers past the window's suffix
_TEST_FILE = ("import { createEditor } from './helpers'\n\ndescribe('keymap', () => {\n"
              "  it('keeps the stored marks', () => {\n    const editor = createEditor('<p><b>bold</b> text</p>')\n\n"
              "    editor.commands.set})\n    editor.commands.deleteSelection()\n" + _STATEMENTS
              + "    expect(editor.state.storedMarks).toEqual(['bold'])\n  })\n})\n")


@pytest.mark.parametrize("answer,offered", [
    ("TextSelection({ from: 1, to: 5", True),
    ("TextSelection({ from: 1, to: [5", False),   # still open past the user's closers: the document breaks
    ("TextSelection(1, 5", False),                 # the user's ``}`` has nothing to close
])
def test_a_fill_that_takes_the_users_closers_is_judged_on_the_whole_document(answer, offered):
    """Typed to the middle of a line whose closers stay (``editor.commands.set|})``, a held-out tiptap test): before
    the fill the user's ``})`` closed the ``it(`` in a window cut before the ``it``'s own closers, so that window
    parsed; with the right fill its ``})`` close the fill's brackets and the window has the ``it(`` unclosed. The
    right line was refused; the whole document, which it makes parse, now decides (the window is cut)."""
    text = _TEST_FILE
    at = text.index("commands.set") + len("commands.set")
    backend = Scripted(lambda prefix: answer)
    c = complete(backend, FillOptions(min_confidence=0.0, names_rule=False, prefix_tokens=32),
                 InfillRequest(text, at, "typescript"), Control(lambda s: None))
    assert backend.prefixes[0].lstrip().startswith("it('keeps")   # the window starts at the ``it(``
    assert [f.text for f in c.fills] == ([answer] if offered else []), answer


_LOADER = ("class LoaderUtils {\n\n\tstatic extractUrlBase( url ) {\n\t\treturn url;\n\t}\n\n"
           "\t/** Resolves a relative URL against a path. */\n\t\n\t\t// Invalid URL\n"
           "\t\tif ( typeof url !== 'string' || url === '' ) return '';\n\n\t\treturn path + url;\n\n\t}\n\n}\n\n"
           "export { LoaderUtils };\n")
_MEMOPS = ("package m\n\nfunc f(x64 []int64, i int) int64 {\n\t// amd64: `MOVQ\\t8\\([A-Z]+\\)`\n"
           "\tif x64[i] < x64[0] {\n\t\treturn 0\n\t}\n\t// amd64: `MOVQ\\t8\\([A-Z]+[0-9]*\\)\\([A-Z]+\\*8\\)`\n"
           "\t\n\t\treturn 0\n\t}\n\treturn x64[i]\n}\n")


@pytest.mark.parametrize("language,text,answer,offered,context", [
    # a class member's header, the window cut to its comment and the statements below: alone at the window's top
    # level ``static`` is an error, in the document it is a method (three.js's LoaderUtils)
    ("javascript", _LOADER, "static resolveURL( url, path ) {", True, (12, 20)),
    ("javascript", _LOADER, "static resolveURL( url, path ) {{", False, (12, 20)),   # breaks the document too
    # an ``if`` above its body, the window cut before the block's closer (Go's memops test)
    ("go", _MEMOPS, "if x64[i+1] < x64[0] {", True, (12, 3)),
    ("go", _MEMOPS, "if x64[i+1] < {", False, (12, 3)),
])
def test_a_fill_a_clean_window_refuses_is_judged_on_the_whole_document_when_the_window_is_cut(language, text,
                                                                                               answer, offered,
                                                                                               context):
    """Held-out headers a window without errors refused because its cut left out what they need: the window parses
    without the fill and fails with it, while the whole document parses with it. The whole document now decides
    whenever the window is cut from it (it decided only where every error lay past the fill)."""
    at = text.index("\n\t\n") + 2
    backend = Scripted(lambda prefix: answer)
    c = complete(backend, FillOptions(min_confidence=0.0, names_rule=False, prefix_tokens=context[0],
                                      suffix_tokens=context[1]),
                 InfillRequest(text, at, language), Control(lambda s: None))
    assert not backend.prefixes[0].lstrip().startswith(("class", "package"))   # the window is cut
    assert [f.text.strip() for f in c.fills] == ([answer] if offered else []), answer


_HALF_TYPED = [
    # a string the user opened on the line: a fill that leaves it open leaves the line broken
    ("python", 'def check(unit):\n    if unit is None:\n        raise ValueError("no unit\n    return unit\n',
     '"no unit', [(", unit)", False), (' given")', True)]),
    # a Rust statement without its ``;``, a call without its ``)`` before the line's own ``;``
    ("rust", "impl Reader {\n    fn next(&mut self) -> u8 {\n        let ret = sel\n        self.pos += 1;\n"
             "        ret\n    }\n}\n", "= sel", [("f.source, 1", False), ("f.data[self.pos];", True)]),
    ("javascript", "function f(kind) {\n  return isPunctuator(kin;\n}\n", "tor(kin",
     [("d", False), ("d)", True), ("d) && kind", True)]),
    ("go", "package m\n\nimport \"os\"\n\nfunc f(code int) {\n\tos.Exit(co\n}\n", "Exit(co",
     [("de", False), ("de)", True)]),
    # the closer of the function the user is writing, missing at the document's end, is not the line's to write
    ("go", "package m\n\nfunc b(w http.ResponseWriter) {\n\th := w.Header().Se\n", "().Se",
     [('t("Content-Type", "application/json")', True), ('t("Content-Type"', False)]),
    # the user's line has no error of its own (the document's is further down): it need not change
    ("rust", "fn f(value: u8) -> u8 {\n    let x = va;\n    x\n}\n\nfn g( {\n}\n", "x = va",
     [("lue", True), ("lue + 1", True)]),
    # a string the user opened, left open by the fill: it runs to the next line's quote and breaks the code there
    ("rust", 'fn main() {\n    trace::log(11, "Second mes\n    let n = LOGS.load(Ordering::SeqCst);\n'
             '    assert_eq!(n, 2, "{}", n);\n}\n', '"Second mes',
     [("sage: &str) {", False), ('sage from rusqlite");', True)]),
    ("javascript", "function f(error, filename) {\n\tif (error) {\n\t\terror.message = `Failed to ana\n"
                   "\t}\n\tthrow error;\n}\nconst t = `x`;\n", "Failed to ana",
     [("lyse.", False), ("lyse ${filename} \U0001F600`;", True)]),
    # a call the user opened, left open while the next statement starts at the line's indentation
    ("typescript", "function f(c: C, out: O) {\n    c.worldWitness1(scr\n    out.witness1 = 2;\n}\n",
     "Witness1(scr", [("atchBuffer,", False), ("atchBuffer);", True)]),
    # inside the closer an editor put after the cursor: the line's ``;`` comes after it, where no fill reaches
    ("rust", "fn compute(v: &[u8], n: u8) -> u8 {\n    n\n}\n\nfn main() {\n    let items = vec![1];\n"
             "    let total = compute()\n    println!(\"{}\", total);\n}\n", "total = compute(",
     [("&items, 3", True), ("&items, 3 {", False)]),
    # a template over several lines is the code's own: the error below is another one (on the next statement,
    # not on a closer of the lines the template's line heads)
    ("javascript", "const q = `SELECT a\n  FROM t`;\nfunction g( {\n}\n", "SELECT a", [(", b", True)]),
]


def _offered(language: str, text: str, cursor: int, answer: str) -> list[str]:
    """The fills ``complete`` offers at ``cursor`` where the model writes ``answer`` (no confidence bar, no names
    rule: only the checks decide)."""
    c = complete(Scripted(lambda prefix: answer), FillOptions(min_confidence=0.0, names_rule=False),
                 InfillRequest(text, cursor, language), Control(lambda s: None))
    return [f.text for f in c.fills]


@pytest.mark.parametrize("language,text,at,answers", _HALF_TYPED)
def test_a_fill_that_leaves_the_half_typed_line_broken_is_not_offered(language, text, at, answers):
    """A line the user left broken where they typed it (a string opened, a statement without its end, a call
    without its ``)``) gets no fill that leaves it broken: ``raise ValueError("no unit, unit)`` parses no better
    than what was typed. A line with no error of its own keeps the fills it had."""
    cursor = text.index(at) + len(at)
    for answer, offered in answers:
        assert _offered(language, text, cursor, answer) == ([answer] if offered else []), answer


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_a_fill_ending_with_the_closer_after_the_cursor_gets_its_other_reading(eol):
    """A fill that ends with the closer after the cursor had it cut as the model's repeat of the user's: where the
    fill's own brackets need it (``getattr(dbapi, "v", None)`` before the user's ``)``), the cut left the line open
    and nothing was offered. The other reading is tried next: the fill as written after the cut one, and the cut
    one after a fill whose brackets pair (``se_data(path)`` before the user's ``)`` doubles it). A repeat the parse
    refuses either way is not offered."""
    text = ('import util\n\n\ndef load(path):\n    # \U0001F600\tdata\n    return util.par)\n\n\n'
            'def test():\n    assert load("a")\n').replace("\n", eol)
    cursor = text.index("util.par") + len("util.par")
    for answer, offered in (('se_version_string(getattr(dbapi, "v", None)', 'se_version_string(getattr(dbapi, "v", None)'),
                            ("se_data(path", "se_data(path"), ("se_data(path)", "se_data(path"),
                            ("ams)", None), (")", None)):
        assert _offered("python", text, cursor, answer) == ([offered] if offered else []), answer
    js = 'function f(a) {\n  return g(h(a\u00e9, "\U0001F600")\n}\n'.replace("\n", eol)   # the line's ``h(`` is open
    cursor = js.index('\U0001F600"') + 2
    assert _offered("javascript", js, cursor, ", 1)") == [", 1)"]


def test_finishes_line_reads_the_users_own_line_only():
    from engine.languages import spec_for
    from engine.validate import document_parses
    rust = spec_for("rust")
    text = "fn f(a: u8) -> u8 {\n    let b = a\n    b\n}\n"
    at = text.index("= a") + 3
    check = document_parses(rust, text, at, at)
    assert not check.finishes_line("") and check.finishes_line(" + 1;")   # its MISSING ``;`` stays, or not
    clean = "fn f(a: u8) -> u8 {\n    let b = a;\n    b\n}\n"
    at = clean.index("= a") + 3
    check = document_parses(rust, clean, at, at)   # no error on the user's line: any fill finishes it
    assert check.finishes_line("") and check.finishes_line(" + 1")


def test_finishes_line_refuses_a_bracket_or_string_the_user_opened_and_the_fill_leaves_open():
    """A bracket the user opened on the line, still open at its end while the next statement starts at the line's
    indentation, or a string they opened that now runs into the next line: the fill left the line unfinished. A
    call continued on a deeper line, or closed by the next line's closer, and a template over several lines with
    no error where it ends, are the code's own."""
    from engine.languages import spec_for
    from engine.validate import document_parses
    ts = spec_for("typescript")
    text = "function f(c, out) {\n\tc.world(scr\n\tout.w = 2;\n}\n"
    at = text.index("(scr") + 4
    check = document_parses(ts, text, at, at)
    assert not check.finishes_line("atchBuffer,") and not check.finishes_line("atchBuffer, \U0001F600")
    assert check.finishes_line("atchBuffer);")
    deeper = "function f(c, out) {\n\tc.world(scr\n\t\tout);\n}\nfunction g( {\n}\n"
    assert document_parses(ts, deeper, at, at).finishes_line("atchBuffer,")
    tests = 'describe("a", () => {\n  it("b"\n  });\n});\nfunction g( {\n}\n'
    at = tests.index('"b"') + 3
    assert document_parses(ts, tests, at, at).finishes_line(", () => {")
    rust = 'fn main() {\n    log(11, "Second mes\n    let n = load();\n    assert_eq!(n, 2, "{}", n);\n}\n'
    at = rust.index("mes") + 3
    check = document_parses(spec_for("rust"), rust, at, at)
    assert not check.finishes_line("sage: &str) {") and check.finishes_line('sage \U0001F600");')
    sql = "const q = `SELECT a\n  FROM t`;\nfunction g( {\n}\n"
    at = sql.index("SELECT a") + 8
    assert document_parses(spec_for("javascript"), sql, at, at).finishes_line(", b")


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_a_half_typed_line_with_an_emoji_and_a_tab_is_judged_the_same_with_crlf(eol):
    """The line's errors are found by byte offsets: an emoji (4 UTF-8 bytes) and a tab before the cursor, and a CRLF
    document (judged as its LF twin), move nothing."""
    text = 'def check(unit):\n    if unit is None:\n        raise ValueError("no \U0001F600 \t unit\n    return unit\n'
    text = text.replace("\n", eol)
    cursor = text.index("unit" + eol + "    return") + len("unit")
    for answer, offered in ((", unit)", False), (' given")', True)):
        assert _offered("python", text, cursor, answer) == ([answer] if offered else []), answer


def test_a_fill_the_document_check_judged_is_not_parsed_again_for_its_line(monkeypatch):
    """``_first_valid`` asks the whole document's check, then ``finishes_line``, on the same fill: one reparse."""
    from engine import validate
    from engine.languages import spec_for
    parses = []
    real = validate._parse_anew
    monkeypatch.setattr(validate, "_parse_anew", lambda *a, **k: parses.append(1) or real(*a, **k))
    text = "fn f(a: u8) -> u8 {\n    let b = a\n    b\n}\n"
    at = text.index("= a") + 3
    check = validate.document_parses(spec_for("rust"), text, at, at)
    assert check(" + 1;", confirm=True) and check.finishes_line(" + 1;") and len(parses) == 1
    assert not check.finishes_line("") and len(parses) == 2   # another fill: its own reparse


_HEADS = [
    # a function's header typed to a word, its body below: a fill that does not open the body leaves its closer
    # broken (Go parses a header without a body, and statements at the top level)
    ("go", "package m\n\nfunc (d *DFA) get(pre\n\tif precedence < 0 {\n\t\treturn nil\n\t}\n\treturn d.s0\n}\n\n"
           "func g() {}\n", "get(pre", [("cedence)", False), ("cedence int) *DFAState {", True)]),
    # an object's fields below a constructor's call: ``new AMO`` parses alone, its fields do not without the ``({``
    ("typescript", "describe(\"a\", () => {\n\tit(\"b\", () => {\n\t\tconst amOsc = new AMO\n\t\t\tharmonicity: 3,\n"
                   "\t\t\ttype: \"sine\",\n\t\t});\n\t\tamOsc.dispose();\n\t});\n});\n", "new AMO",
     [("scillator();", False), ("scillator({", True)]),
    # ``} else {`` is the closer line too
    ("typescript", "function f(x: number, y: number) {\n  if (x > y\n    g(1.0);\n  } else {\n    g(2.0);\n  }\n}\n",
     "(x > y", [(", 1.0);", False), (") {", True)]),
    # the lines below are a continuation of the call the fill leaves open: no error there, no refusal
    ("javascript", "function f(a, b) {\n  return g(a\n    b);\n}\n", "g(a", [(",", True)]),
    # an ``if``'s header where the line above ends a statement: a deeper statement there parses, and the ``}`` below
    # closes the function instead (fabric's controlRendering.ts)
    ("javascript", "function draw(ctx, stroke) {\n\tctx.fill();\n\n\t\tctx.stroke();\n\t}\n}\n", "fill();\n",
     [("\t\tctx.lineTo(1, 2);\n", False), ("\tif (stroke) {\n", True)]),
    # a comment between them is not the line above: its depth says nothing
    ("javascript", "function draw(ctx, stroke) { // \U0001F600\n\tctx.fill();\n\t\t// the outline\n\n\t\tctx.stroke();\n"
                   "\t}\n}\n", "outline\n", [("\t\tctx.lineTo(1, 2);\n", False), ("\tif (stroke) {\n", True)]),
    # an object's key where its fields follow, deeper than the key above (viem's chain definitions)
    ("typescript", "export const c = defineChain({\n  id: 1,\n\n    name: 'Ether',\n    decimals: 18,\n  },\n})\n",
     "id: 1,\n", [("    symbol: 'ETH',\n", False), ("  nativeCurrency: {\n", True)]),
    ("go", "package m\n\nfunc f(x int) int {\n\tx++\n\n\t\treturn 1\n\t}\n\treturn x\n}\n", "x++\n",
     [("\t\tx--\n", False), ("\tif x > 2 {\n", True)]),
    # a field at the depth of a block's body, right under the outer block's header: ``    },`` below then closes the
    # outer block (viem's ``blockExplorers: {`` without its ``default: {``)
    ("typescript", "export const c = defineChain({\n  id: 1,\n  blockExplorers: {\n\n      name: 'Scan',\n"
                   "      url: 'https://x',\n    },\n  },\n})\n", "blockExplorers: {\n",
     [("      decimals: 18,\n", False), ("    default: {\n", True)]),
    # a block's own statement and a struct's own field: the closer below pairs at its own depth
    ("javascript", "function f(a) {\n  if (a) {\n    b();\n\n  }\n  return a;\n}\nfunction g( {\n}\n", "b();\n",
     [("    c();\n", True)]),
    ("rust", "fn f(sh: S) -> H {\n    H {\n        a: 1,\n\n    }\n}\nfn g( {\n}\n", "a: 1,\n", [("        b: 2,\n", True)]),
    # a block's opener above with a comment after it: the line is the block's first (an error of the user's below
    # is theirs)
    ("javascript", "function f(a) {\n  if (a) { // check \U0001F600\n\n    b();\n    h(a;\n  }\n}\n", "\U0001F600\n",
     [("    g(a);\n", True)]),
    # a continuation of the line above (an error further down is another statement's): offered
    ("javascript", "function f(a, b) {\n  const s = a +\n\n    b;\n  return s;\n}\nfunction g( {\n}\n", "a +\n",
     [("    a * 2 +\n", True)]),
]


@pytest.mark.parametrize("language,text,at,answers", _HEADS)
def test_a_fill_that_leaves_the_lines_its_line_heads_broken_is_not_offered(language, text, at, answers):
    """A line the user is writing above deeper lines (a function's body, an object's fields) heads them: a fill
    that parses on its own line but leaves an error in those lines or at their closer did not open what they need
    (``func (d *DFA) get(precedence)`` above the body: Go takes a header without a body, and its ``}`` breaks). A
    whole line indented deeper than the code line above it, where that line opens nothing, is in a block whose header
    is missing (or continues that line): the lines below it, down to the closer at the upper line's depth, are headed
    from there. Nor is a line offered whose first shallower line below is a closer paired with a line shallower than
    it (the line sits where a block's header goes, and that closer now closes the outer block)."""
    cursor = text.index(at) + len(at)
    for answer, offered in answers:   # (a whole line's fill is offered without its line break)
        assert _offered(language, text, cursor, answer) == ([answer.rstrip("\n")] if offered else []), answer


@pytest.mark.parametrize("text,wrong,right", [
    # an object's first line: a statement there leaves its fields and their closer broken
    ("function options() {\n\t\n\t\tweekStartsOn: 1,\n\t\tfirstWeek: 4,\n\t};\n\treturn o;\n}\n",
     "return null;", "const o = {"),
    # an ``if``'s header inside a function: its body parses without it, and its ``}`` closes the function instead
    # (the error is reported at the document's end; eslint's eqeqeq.js)
    ("function kind(node) {\n\t\n\t\treturn \"string\";\n\t}\n\n\treturn null;\n}\n", "return null;",
     "if (isTemplate(node)) {"),
])
def test_a_whole_line_above_a_body_must_open_it(text, wrong, right):
    """An empty line where a block's or an object's first line stood, its lines below deeper: a line that opens
    nothing is not offered there, the one that opens them is."""
    at = text.index("\t\n") + 1
    assert _offered("javascript", text, at, wrong) == []
    assert [f.strip() for f in _offered("javascript", text, at, right)] == [right]


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_the_lines_a_line_heads_are_found_by_bytes_with_an_emoji_a_tab_and_crlf(eol):
    text = ("package m\n\nfunc (d *DFA) get(pre\n\tif p < 0 { // \U0001F600\n\t\treturn nil\n\t}\n\treturn d.s0\n}\n"
            "\nfunc g() {}\n").replace("\n", eol)
    cursor = text.index("get(pre") + len("get(pre")
    for answer, offered in (("cedence)", False), ("cedence \U0001F600int) *DFAState {", False),
                            ("cedence int) *DFAState {", True)):
        assert _offered("go", text, cursor, answer) == ([answer] if offered else []), answer


def test_heads_broken_lines_counts_only_errors_the_line_can_have_caused():
    """The rule reads the user's document: where it has an error before the line, the errors below may be theirs
    (not the line's), and the fill is judged as before; an error at the document's end is the closer of a block
    not written yet; lines no deeper than the fill's line are not headed by it."""
    from engine.languages import spec_for
    from engine.validate import document_parses
    go = spec_for("go")
    text = "package m\n\nfunc (d *DFA) get(pre\n\tif p < 0 {\n\t\treturn nil\n\t}\n\treturn d.s0\n}\n"
    at = text.index("(pre") + 4
    assert not document_parses(go, text, at, at).finishes_line("cedence)")
    assert document_parses(go, text, at, at).finishes_line("cedence int) *DFAState {")
    broken_above = "package m\n\nfunc a( {\n}\n\n" + text[len("package m\n\n"):]
    at = broken_above.index("(pre") + 4
    assert document_parses(go, broken_above, at, at).finishes_line("cedence)")
    unclosed = "package m\n\nfunc (d *DFA) get(pre\n\tif p < 0 {\n\t\treturn nil\n\t}\n\treturn d.s0\n"
    at = unclosed.index("(pre") + 4
    assert document_parses(go, unclosed, at, at).finishes_line("cedence int) *DFAState {")


@pytest.mark.parametrize("language,text,at,answer,offered", [
    # the model closed one bracket too many at the line's end: offered without it (a typed TypeScript line of the
    # new-user trial: ``return retry({ error: err`` + `` as Error }))``)
    ("typescript", "function f(err: unknown) {\n  return retry({ error: err\n}\n", "error: err", " as Error }))",
     " as Error })"),
    ("python", "def f(xs):\n    total = sum(len(x\n    return total\n", "sum(len(x", ")))", "))"),
    ("go", "package m\n\nfunc f(p string) {\n\tuse(strings.TrimSpace(p\n}\n", "TrimSpace(p", "))))", "))"),
    ("rust", "fn f(v: &[i32]) -> usize {\n    g(v.len(\n}\n", "v.len(", ")));", "));"),
    # CRLF, a tab and an emoji before the cursor: the same cut, the line's break kept as the document has it
    ("python", "def f(xs):\r\n\ttotal = sum(len('😀' + x\r\n\treturn total\r\n", "+ x", ")))", "))"),
    # its ``;`` stays after the closers kept
    ("javascript", "function f(xs) {\n  g(h(xs\n}\n", "h(xs", ")));", "));"),
    # a fill that parses as written is never cut; nor one whose extra closer is not at its end
    ("python", "def f(xs):\n    total = sum(\n        len(x) for x in xs\n    return total\n", "for x in xs", ")",
     ")"),
    ("python", "def f(xs):\n    return g(xs\n", "g(xs", ")) + h(xs)", None),
    # the closers in a string are the string's; a closer of the wrong kind is not cut to one that pairs
    ("python", "def f(xs):\n    return g(xs\n", "g(xs", ', ")"))', ', ")")'),
    ("python", "def f(xs):\n    return g(xs\n", "g(xs", "]", None),
])
def test_a_fill_with_one_closer_too_many_at_the_lines_end_is_offered_without_it(language, text, at, answer, offered):
    cursor = text.index(at) + len(at)
    assert _offered(language, text, cursor, answer) == ([] if offered is None else [offered]), answer


@pytest.mark.parametrize("before,fill,trimmed", [
    ("  return retry({ error: err", " as Error }))", " as Error })"),
    ("    foo(", "a));", "a);"),
    ("    foo(", "a),", None),         # nothing to cut: it pairs
    ("    foo(", "a, b", None),        # no closer at its end
    ("    x = f(", "a) + g(b))", "a) + g(b)"),
    ("    x = f(", "a)) + g(b)", None),   # the surplus closer is not at the end
    ("    x = ')' + f(", "a))", "a)"),    # a closer in the user's string is not counted
    ("    x = 1", "  # f(a))", None),      # a comment
    ("    x = a // f(", "b))", "b)"),      # Python's floor division is no comment
    ("    b)", ")", None),               # the user's own line closes what a line above opened
    ("    const vSigma", "X );", None),   # no closer of the run closes anything: no call of its own
    ("    f(", "a)\n)", None),           # more than a line
])
def test_without_surplus_closers(before, fill, trimmed):
    from engine.validate import without_surplus_closers
    assert without_surplus_closers(spec_for("python"), before, fill) == trimmed


def test_without_surplus_closers_reads_the_languages_comments():
    from engine.validate import without_surplus_closers
    js = spec_for("javascript")
    assert without_surplus_closers(js, "  this.#emit(f(", "a)));") == "a));"   # a private field, no comment
    assert without_surplus_closers(js, "  g(a); // f(", "a))") is None


_SEMIS = "function a() {\n  const x = f();\n  g(x);\n  h();\n"   # a document whose statements end with ``;``
_BARE = "function a() {\n  const x = f()\n  g(x)\n  h()\n"        # one whose statements do not


@pytest.mark.parametrize("language,prefix,suffix,fill,ended", [
    # the model's fill ends the statement without the ``;`` the document's statements have (the new-user trial's
    # kind of line, typed to its middle: ``const now = Dat`` + ``e.now()``)
    ("typescript", _SEMIS + "  const now = Dat", "\n  use(now);\n}\n", "e.now()", "e.now();"),
    ("javascript", _SEMIS + "  el.setAttribute('title', ful", "\n});\n", "lName)\n", "lName);\n"),
    ("rust", "fn main() {\n    println!(\"A={}\", A);\n    println!(\"B={}\", B", "\n    run();\n}\n", ")",
     ");"),
    # and the one they do not have is left out (JavaScript and TypeScript only)
    ("typescript", _BARE + "  const parts: str", "\n  use(parts)\n}\n", "ing[] = [];", "ing[] = []"),
    ("typescript", _BARE + "  const now = Dat", "\n  use(now)\n}\n", "e.now()", None),   # as the document has it
    ("typescript", _SEMIS + "  const now = Dat", "\n  use(now);\n}\n", "e.now();", None),
    ("typescript", "function f(x) {\n  if (x === null) {\n    ret", "\n  }\n}\n", "urn x;", None),   # no habit shown
    ("typescript", "function f(x) {\n  if (x === null) {\n    ret", "\n  }\n}\n", "urn x", None),
    ("go", "func f() {\n\tx := g()\n\tnow := time.No", "\n\tuse(now)\n}\n", "w()", None),   # Go has none
    ("python", "def f():\n    now = time.ti", "\n    use(now)\n", "me()", None),
    # not a whole statement: brackets left open, a block's header, a decorator, a comment, a string left open
    ("typescript", _SEMIS + "  const now = f(Dat", "\n  );\n}\n", "e.now()", None),
    ("typescript", _SEMIS + "  if (Dat", "\n    run();\n}\n", "e.now())", None),
    ("typescript", _SEMIS + "  @Inp", "\n  name: string;\n}\n", "ut()", None),
    ("typescript", _SEMIS + "  g(x) // then", "\n  h();\n}\n", " f()", None),
    ("typescript", _SEMIS + "  g('a", "\n  h();\n}\n", ")", None),
    # the statement goes on above or below: an argument, a chain, an operator
    ("typescript", _SEMIS + "  g(a,\n    Dat", "\n  );\n}\n", "e.now()", None),
    ("typescript", _SEMIS + "  const p = fet", "\n    .then(r => r);\n}\n", "ch(url)", None),
    ("typescript", _SEMIS + "  const p = fet", "\n    + 1;\n}\n", "ch(url)", None),
    ("typescript", _SEMIS + "  const p = a +\n    fet", "\n  h();\n}\n", "ch(url)", None),
    # Rust: a line before the block's ``}`` is its value, whose ``;`` would make it ``()``
    ("rust", "fn f() -> Option<u8> {\n    let x = 1;\n    Some(", "\n}\n", "x)", None),
    # the cursor's line has more after it; a fill of more than one line
    ("typescript", _SEMIS + "  const now = Dat", " + 1\n}\n", "e.now()", None),
    ("typescript", _SEMIS + "  const now = Dat", "\n}\n", "e.now()\n  g()", None),
    # CRLF: the line's break stays as the fill has it
    ("typescript", _SEMIS.replace("\n", "\r\n") + "  const now = Dat", "\r\n  use(now);\r\n}\r\n", "e.now()\r\n",
     "e.now();\r\n"),
])
def test_statement_end_follows_the_documents_semicolons(language, prefix, suffix, fill, ended):
    from engine.validate import statement_end
    assert statement_end(spec_for(language), prefix, suffix, fill) == ended


@pytest.mark.parametrize("language,text,at,answer,offered", [
    ("typescript", _SEMIS + "  const now = Dat\n  use(now);\n}\n", "= Dat", "e.now()", "e.now();"),
    ("typescript", _BARE + "  const parts: str\n  use(parts)\n}\n", ": str", "ing[] = [];", "ing[] = []"),
    ("rust", "fn main() {\n    let a = 1;\n    println!(\"{}\", a\n    run();\n}\n", "\", a", ")", ");"),
    # a Rust statement left without its ``;`` (which leaves the line broken: not offered as written) gets it
    ("rust", "impl Reader {\n    fn next(&mut self) -> u8 {\n        let ret = sel\n        self.pos += 1;\n"
             "        ret\n    }\n}\n", "= sel", "f.source", "f.source;"),
    # a ``;`` that does not parse is not added: the fill is offered as the model wrote it (an object's last member)
    ("typescript", _SEMIS + "  const o = {\n    a: f(\n  };\n}\n", "a: f(", ")", ")"),
])
def test_a_fill_ending_a_statement_is_offered_with_the_documents_semicolon(language, text, at, answer, offered):
    cursor = text.index(at) + len(at)
    assert _offered(language, text, cursor, answer) == [offered], answer


class _Copier(Scripted):
    """Writes ``answer`` and scores each of the document's lines it is offered alike (so the best-ranked copy wins)."""

    scores_options = True

    def fill(self, plan, control) -> FillResult:
        result = super().fill(plan, control)
        options = tuple(Candidate((o,), ((0.9,) * 2,), (((0, len(o)),),), -0.1) for o in plan.options)
        return FillResult(result.candidates, result.steps, result.forwards, result.tokens, options)


def test_a_copy_of_a_document_line_is_never_cut_only_the_models_own_fill():
    # the document's ``total = sum(len(x)))`` (broken there) is no line to copy cut to one closer fewer: a copy
    # offered is the line the document has; the model's own ``len(x)))`` is cut
    text = "def f(xs):\n    total = sum(len(x)))\n    total = sum(\n    return total\n"
    cursor = text.index("sum(\n") + 4
    junk = complete(_Copier(lambda prefix: "$$"), FillOptions(min_confidence=0.0, names_rule=False),
                    InfillRequest(text, cursor, "python"), Control(lambda s: None))
    assert all(not f.text.startswith("len(x))") for f in junk.fills + junk.considered)
    own = complete(_Copier(lambda prefix: "len(x)))"), FillOptions(min_confidence=0.0, names_rule=False),
                   InfillRequest(text, cursor, "python"), Control(lambda s: None))
    assert [f.text for f in own.fills] == ["len(x))"]


def test_the_models_fill_that_makes_a_copys_edit_is_that_copy():
    # date-fns' ``return _d`` + ``ate``: with the document's ``;`` the model's fill is ``ate;``, the rest of the
    # document's ``return _date;``: one fill, the copy (estimated as a copy is), not the model's and the copy dropped
    text = ("function a(_date) {\n  const x = f();\n  g(x);\n  return _date;\n}\n"
            "function b(_date) {\n  h();\n  return _d\n}\n")
    cursor = text.index("return _d\n") + len("return _d")
    c = complete(_Copier(lambda prefix: "ate"), FillOptions(min_confidence=0.0, names_rule=False),
                 InfillRequest(text, cursor, "javascript"), Control(lambda s: None))
    assert [(f.text, f.copied) for f in c.fills] == [("ate;", True)]
    assert [f.text for f in c.considered] == ["ate;"]


def test_the_rest_of_another_line_copied_from_nearby_is_cut_to_the_closers_this_line_needs():
    # the new-user trial's typescript_1.ts: the rest after ``err`` on the line above closes that line's ``(await``
    # too; after ``return retry({ error: err`` one ``)`` of it is too many
    text = ("async function f(err: unknown, count: number) {\n  if (await shouldRetry({ count, error: err as Error }))\n"
            "    return 1;\n  return retry({ error: err\n}\n")
    cursor = text.rindex("err\n") + 3
    c = complete(_Copier(lambda prefix: "$$"), FillOptions(min_confidence=0.0, names_rule=False),
                 InfillRequest(text, cursor, "typescript"), Control(lambda s: None))
    assert [f.text for f in c.fills] == [" as Error })"]


JAVA = ("class E extends Exception {\n    private final char c;\n\n    public E(String s) {\n        super(s);\n    }\n\n"
        "    public E(char c) {\n        \n    }\n\n    int count(java.util.List<String> xs) {\n        return 0;\n"
        "    }\n}\n")


@pytest.mark.parametrize("answer, names_rule, offered", [
    ("this.s = s;", True, False),    # ``s`` is only the other constructor's parameter: invented, withheld alone
    ("this.s = s;", False, True),
    ("this.c = c;", True, True),     # its own parameter
    ("return;", True, False),        # the constructor's last statement: a bare return there does nothing
])
def test_a_java_fill_has_its_names_read_by_javas_grammar(answer, names_rule, offered):
    """Java is filled as plain text: the names rule reads its fills with its check grammar, as the fits do."""
    at = JAVA.index("(char c) {\n        ") + len("(char c) {\n        ")
    c = complete(Scripted(lambda prefix: answer), FillOptions(min_confidence=0.0, names_rule=names_rule),
                 InfillRequest(JAVA, at, "java"), Control(lambda s: None))
    assert [f.text for f in c.fills] == ([answer] if offered else [])


def test_a_bare_return_is_refused_where_its_methods_other_returns_give_a_value():
    text = JAVA.replace("        return 0;\n", "        if (xs == null) {\n            ret\n        }\n"
                                             "        return xs.size();\n")
    at = text.index("ret\n") + 3
    for answer, offered in (("urn;", False), ("urn 0;", True)):
        c = complete(Scripted(lambda prefix, answer=answer: answer), FillOptions(min_confidence=0.0),
                     InfillRequest(text, at, "java"), Control(lambda s: None))
        assert [f.text for f in c.fills] == ([answer] if offered else []), answer


@pytest.mark.parametrize("answer, offered", [
    ("return -1;", False),        # a constructor returns no value
    ("this.c = c;", True),
])
def test_a_return_of_a_value_is_refused_where_the_method_cannot_give_it(answer, offered):
    at = JAVA.index("(char c) {\n        ") + len("(char c) {\n        ")
    c = complete(Scripted(lambda prefix: answer), FillOptions(min_confidence=0.0),
                 InfillRequest(JAVA, at, "java"), Control(lambda s: None))
    assert [f.text for f in c.fills] == ([answer] if offered else [])
    text = JAVA.replace("        return 0;\n", "        ret\n")   # ``int count(...)``: a number, not a boolean
    at = text.index("ret\n") + 3
    for fill, fits in (("urn false;", False), ("urn xs.size();", True)):
        c = complete(Scripted(lambda prefix, fill=fill: fill), FillOptions(min_confidence=0.0),
                     InfillRequest(text, at, "java"), Control(lambda s: None))
        assert [f.text for f in c.fills] == ([fill] if fits else []), fill


@pytest.mark.parametrize("language, text, answer, offered", [
    ("javascript", "function f(a) {\n  \n  return b + a;\n}\n", "const c = a * 2;", False),   # ``b`` is missing
    ("javascript", "function f(a) {\n  \n  return b + a;\n}\n", "const b = a * 2;", True),
    ("javascript", "function f(a) {\n  const b = a;\n  \n}\n", "const c = a * 2;", True),   # new code
    ("lua", "local function f(a)\n  \n  return b\nend\n", "local c = a", False),          # plain text too
])
def test_a_declared_local_nothing_reads_is_not_offered_where_the_code_after_needs_a_name(language, text, answer,
                                                                                        offered):
    at = text.index("\n  \n") + 3
    c = complete(Scripted(lambda prefix: answer), FillOptions(min_confidence=0.0),
                 InfillRequest(text, at, language), Control(lambda s: None))
    assert [f.text for f in c.fills] == ([answer] if offered else [])
