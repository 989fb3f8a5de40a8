"""A constructor's body gets the lines that store its parameters as candidate fills (engine/paramlines.py)."""

import pytest

from engine import InfillRequest
from engine.context import decide_hole
from engine.doclines import PARAMETER, LineOptions, line_options
from engine.languages import spec_for
from engine.paramlines import constructor_at, param_options, stored_lines


def options_at(marked: str, language: str = "python") -> LineOptions:
    """The parameter lines the engine gets at the ``|`` of ``marked``: an empty line's from ``param_options``, a typed
    line's from ``doclines.line_options`` (those of its options that are ``PARAMETER`` lines)."""
    at = marked.index("|")
    text = marked[:at] + marked[at + 1:]
    spec = spec_for(language)
    hole = decide_hole(spec, text, at)
    line_end = text.find("\n", hole.end)
    rest = text[hole.end:len(text) if line_end < 0 else line_end]
    found = constructor_at(text, hole, spec.name)
    lines = [] if found is None else stored_lines(text, hole.start, found, spec.name)
    empty = param_options(text, hole, rest, found, lines, spec.name)
    if empty.texts:
        return empty
    typed = line_options(text, hole, rest, stored=lines)
    kept = [k for k, source in enumerate(typed.sources) if source == PARAMETER]
    return LineOptions(tuple(typed.texts[k] for k in kept), tuple(typed.priors[k] for k in kept),
                       tuple(typed.sources[k] for k in kept))


def test_an_empty_line_of_init_gets_each_parameter_not_stored_yet_first_one_first():
    got = options_at("class A:\n    def __init__(self, builder, sequence, parent_step=None):\n        |\n"
                     "        self.sequence = sequence\n")
    assert got.texts == ("        self.builder = builder", "        self.parent_step = parent_step")
    assert got.sources == (PARAMETER, PARAMETER) and got.priors == (None, None)
    assert got.ranks[0] > got.ranks[1]   # the parameters' order


def test_a_multi_line_signature_with_annotations_defaults_stars_and_a_comment():
    got = options_at("class A:\n    def __init__(\n        self,  # the receiver\n        a: dict[str, int],\n"
                     "        *args,\n        b: str = 'x(,',\n        /,\n        **kw,\n    ) -> None:\n"
                     "        self._b = 1\n        |\n")
    # b is stored already (as the class spells it: self._b); *args, / and **kw store nothing by themselves
    assert got.texts == ("        self.a = a",)


def test_the_class_spelling_of_a_field_is_used_where_the_document_has_it():
    got = options_at("class A:\n    def __init__(self, path):\n        |\n\n    def read(self):\n"
                     "        return open(self._path).read()\n")
    assert got.texts == ("        self._path = path",)


def test_outside_a_constructor_or_typed_left_of_its_body_no_options():
    assert not options_at("class A:\n    def __init__(self, a):\n        self.a = a\n\n    def f(self, b):\n"
                          "        |\n").texts
    assert not options_at("def f(a, b):\n    |\n").texts
    assert not options_at("class A:\n    def __init__(self, a):\n        pass\n    |\n").texts
    assert not options_at("class A:\n    def __init__(self, a): self.x = 1\n|\n").texts
    assert not options_at("|", "python").texts   # an empty document


def test_a_typed_line_gets_the_rest_of_the_lines_that_start_as_typed():
    got = options_at("class A:\n    def __init__(self, path, mode):\n        path = Path(path)\n"
                     "        self.pa|\n")
    assert got.texts == ("path = path\n",) and not got.ranks   # from the typed fragment on: it is rewritten
    assert not options_at("class A:\n    def __init__(self, path):\n        x = self.pa|\n").texts


def test_javascript_this_with_semicolons_tabs_and_private_fields():
    js = ("class A {\n\tconstructor(controller, normalNode) {\n\t\t|\n\t}\n\tf() {\n\t\treturn 1;\n\t}\n}\n"
          "foo();\n")
    assert options_at(js, "javascript").texts == ("\t\tthis.controller = controller;",
                                                  "\t\tthis.normalNode = normalNode;")
    ts = ("export class Registry {\n  #idGenerator: IdGenerator;\n"
          "  constructor(idGenerator: IdGenerator, private readonly log: Log, cb: (a: A, b: B) => void,"
          " ...rest: R[]) {\n    |\n  }\n}\n")
    # a parameter property is TypeScript's to store; a rest parameter stores nothing by itself
    assert options_at(ts, "typescript").texts == ("    this.#idGenerator = idGenerator;", "    this.cb = cb;")
    bare = "class A {\n  constructor(x) {\n    |\n  }\n  f() {\n    g(1)\n    return this.x\n  }\n}\nh();\n"
    assert options_at(bare, "javascript").texts == ("    this.x = x",)   # more lines end bare than with ';'


def test_a_parameter_the_body_passes_on_is_not_offered():
    # to super(): the base class stores it; into a field under another name or in an expression
    py = ("class A(B):\n    def __init__(self, config, bias, dist, layer):\n        super().__init__(config)\n"
          "        self.proj = nn.Linear(4, 4, bias=bias)\n        self.distance = dist\n        |\n")
    assert options_at(py).texts == ("        self.layer = layer",)
    js = "class B extends A {\n  constructor(page, x) {\n    super(page);\n    |\n  }\n}\nf();\ng();\n"
    assert options_at(js, "javascript").texts == ("    this.x = x;",)
    # stored by a tuple assignment; put in an item of a field or passed as a keyword argument to a call is no store
    py = ("class A:\n    def __init__(self, logits, key, value, scale, masks):\n"
          "        (self.logits,) = broadcast_all(logits)\n        self.cache[key] = value[0]\n"
          "        self.layer.init(self.w, scale=scale)\n        self.masks: list[str] = masks\n        |\n")
    assert options_at(py).texts == ("        self.key = key", "        self.value = value",
                                    "        self.scale = scale")
    js = "class B {\n  constructor(a, b) {\n    [this.x, this.y] = [a, b];\n    |\n  }\n}\nf();\ng();\n"
    assert not options_at(js, "javascript").texts
    # a parameter rebound before it is stored is still offered
    assert options_at("class A:\n    def __init__(self, path):\n        path = Path(path)\n        |\n").texts == (
        "        self.path = path",)


def test_a_line_inserted_before_the_code_of_the_cursors_line_counts_that_code_and_takes_its_indentation():
    # the cursor at the start of ``self.b = b`` (a line goes in before it): b is stored already, and the line is
    # indented as the code it goes before, not as the deeper block below it
    got = options_at("class A:\n    def __init__(self, a, b, c):\n        self.a = a\n|        self.b = b\n")
    assert got.texts == ("        self.c = c\n",)
    got = options_at("class P:\n    def __init__(self, device, args):\n|        if self.__class__ == P:\n"
                     "            raise NotImplementedError\n")
    assert got.texts == ("        self.device = device\n", "        self.args = args\n")
    # the cursor inside the indentation, deeper than the header: the line takes the code's whole indentation (the
    # part before the cursor goes back after the line's newline)
    got = options_at("class A:\n    def __init__(self, a, b):\n      |  self.b = b\n")
    assert got.texts == ("        self.a = a\n",)
    # before the class's next method (at the header's indentation): the body above decides, as before
    got = options_at("class A:\n    def __init__(self, a, b):\n        self.a = a\n|    def f(self):\n"
                     "        self.b = 1\n")
    assert got.texts == ("        self.b = b\n",)
    js = "class A {\n  constructor(x, y) {\n|    this.y = y;\n    this.z = 0;\n  }\n}\n"
    assert options_at(js, "javascript").texts == ("    this.x = x;\n",)


def test_a_derived_class_uses_this_only_after_super():
    before = "class B extends A {\n  constructor(x) {\n    |\n  }\n}\n"
    after = "class B extends A {\n  constructor(x) {\n    super();\n    |\n  }\n}\n"
    assert not options_at(before, "javascript").texts
    assert options_at(after, "javascript").texts == ("    this.x = x;",)


def test_crlf_emoji_and_lone_surrogates_leave_the_lines_as_the_document_has_them():
    # the engine reads a CRLF document as LF (engine/serve.py); a non-ASCII default or comment is no parameter
    got = options_at("class A:\n    def __init__(self, mark='😀', tag='\ud800'):  # é\n        |\n")
    assert got.texts == ("        self.mark = mark", "        self.tag = tag")


def test_other_languages_get_none():
    assert not options_at("type A struct{ x int }\nfunc New(x int) *A {\n\t|\n}\n", "go").texts
    assert not options_at("impl A {\n    fn new(x: i32) -> Self {\n        |\n    }\n}\n", "rust").texts


@pytest.mark.parametrize("crlf", [False, True])
def test_the_engine_considers_the_parameter_line_through_the_real_model(embedded_engine, crlf):
    text = ("class Node:\n    def __init__(self, builder, sequence):\n        \n        self.sequence = sequence\n\n"
            "    def build(self):\n        return self.builder.build(self.sequence)\n")
    cursor = text.index("        \n") + 8
    if crlf:
        text, cursor = text.replace("\n", "\r\n"), cursor + 2
    c = embedded_engine.infill_sync(InfillRequest(text, cursor, "python"), timeout=60)
    copies = [f.text for f in c.considered if f.copied]
    assert copies == ["self.builder = builder"]
    assert c.fills and c.fills[0].text == "self.builder = builder"


def _check(text: str, at: int, language: str):
    from engine.paramlines import constructor_check

    spec = spec_for(language)
    return constructor_check(text, at, constructor_at(text, decide_hole(spec, text, at), spec.name))


def test_a_constructor_returns_no_value():
    js = "class P {\n  constructor(x) {\n    \n  }\n  norm() {\n    return Math.hypot(this.x);\n  }\n}\n"
    fits = _check(js, js.index("    \n") + 4, "javascript")
    assert fits is not None and not fits("return Math.hypot(this.x);") and not fits("this.x = x;\n    return this")
    assert fits("this.x = x;") and fits("if (!x) return;") and fits("return;") and fits("return // none")
    assert not fits("return undefined;") and not fits("return null;")
    py = "class A:\n    def __init__(self, x):\n        \n"
    fits = _check(py, py.index("        \n") + 8, "python")
    assert fits is not None and not fits("return x") and not fits("return None") and fits("return")
    assert fits("self.x = x") and fits("return  # done")
    # a function nested in the constructor above the cursor may return: not checked; nor outside a constructor
    nested = "class A:\n    def __init__(self, x):\n        def key(v):\n            \n"
    assert _check(nested, nested.index("            \n") + 12, "python") is None
    assert _check("def f(x):\n    \n", 14, "python") is None
    assert _check("func f() {\n\t\n}\n", 12, "go") is None


def test_a_constructor_stores_a_field_once_as_a_line_of_its_body_does():
    py = ("class A:\n    def __init__(self, a, b, c):\n        self._a = a\n        \n        self._b = b\n"
          "        if c:\n            self.c = c\n\n    def f(self):\n        self.d = 1\n")
    fits = _check(py, py.index("        \n") + 8, "python")
    assert fits is not None
    assert not fits("self._b = b") and not fits("self._a = a") and not fits("self.c = c")   # stored already
    assert fits("self._c = c") and fits("self._b = b + 1") and fits("self.d = 1")   # another line; another method's
    assert not fits("self._c = c\n        self._c = c")   # its own line twice
    # typed to the line's middle, the line is what is typed and the fill
    typed = py.replace("        \n", "        self._\n", 1)
    fits = _check(typed, typed.index("self._\n") + 6, "python")
    assert not fits("b = b") and fits("c = c")
    js = ("class P {\n  constructor(x) {\n    this.maxZoom = Infinity;\n    \n  }\n}\n")
    fits = _check(js, js.index("    \n") + 4, "javascript")
    assert not fits("this.maxZoom = Infinity;") and fits("this.minZoom = 0;") and fits("this.x = x;")
    # a rewrite of the line itself (the hole's own text is not the body's)
    from engine.paramlines import constructor_check

    text = "class A:\n    def __init__(self, a):\n        self.a = a\n"
    start = text.index("self.a")
    hole = decide_hole(spec_for("python"), text, start, start + len("self.a = a"))
    found = constructor_at(text, hole, "python")
    assert constructor_check(text, start, found)("self.a = a")


@pytest.fixture(scope="module")
def backend():
    from tests.crlf_support import real_backend

    return real_backend()


@pytest.mark.parametrize("language, text, marker, body", [
    ("python", "class Node:\n    def __init__(self, builder, sequence, parent=None):\n        pass\n\n"
               "    def build(self):\n        return self.builder.build(self.sequence, self.parent)\n", "pass",
     "        self.builder = builder\n        self.sequence = sequence\n        self.parent = parent"),
    ("typescript", "export class CallbackRegistry {\n  #callbacks = new Map<number, Callback>();\n"
                   "  #idGenerator: () => number;\n\n  constructor(idGenerator: () => number) {\n    // TODO\n  }\n\n"
                   "  create(label: string): number {\n    const id = this.#idGenerator();\n    return id;\n  }\n}\n",
     "// TODO", "    this.#idGenerator = idGenerator;"),
    # CRLF and tabs; the model's next line was the method's `return Math.hypot(this.x, this.y);`: refused now
    ("javascript", "class Point {\r\n\tconstructor(x, y) {\r\n\t\t// TODO: implement\r\n\t}\r\n\r\n\tnorm() {\r\n"
                   "\t\treturn Math.hypot(this.x, this.y);\r\n\t}\r\n}\r\n", "// TODO",
     "\t\tthis.x = x;\r\n\t\tthis.y = y;"),
])
def test_complete_body_of_a_constructor_stores_its_parameters_with_the_real_model(backend, language, text, marker,
                                                                                   body):
    from engine.backends.base import Control
    from engine.config import FillOptions
    from engine.requests import FillRequest
    from engine.serve import serve
    from engine.targets import survey

    at = text.index(marker) + 1
    found = survey(text, language, at, at)
    request = FillRequest(text, language, (found.body,), found.callers, body=True)
    completion = serve(backend, FillOptions(), request, Control(lambda step: None))   # the calibrated bar
    assert [f.text for f in completion.fills] == [body]


def test_a_constructor_in_a_large_file_reads_only_around_it():
    # 60,000 methods before and after the constructor: what the body stores is read within BODY_LINES, the class's
    # spelling of a field within CLASS_SPAN (self._far beyond it is not seen: the parameter's own name is used)
    methods = "".join(f"    def m{i}(self, a):\n        return a + {i}\n\n" for i in range(60_000))
    text = ("class A:\n    def g(self):\n        return self._far\n\n" + methods
            + "    def __init__(self, far, near):\n        |\n        self.n = 1\n\n    def h(self):\n"
            "        return self._near\n\n" + methods)
    assert len(text) > 4_000_000
    assert options_at(text).texts == ("        self.far = far", "        self._near = near")
