"""Returns the enclosing function cannot take (engine/returns.py): Go and Rust fills that parse but would not
compile."""

import re

import pytest

from engine.languages import spec_for
from engine.returns import returns_check

GO = """package p

import "os"

// Open opens.
func Open(name string) (*os.File, error) {
	f, err := os.Open(name)
	if err != nil {
<>
	}
	return f, nil
}

func Close(f *os.File) error {
	return f.Close()
}
"""

GO_NAMED = """package p

func parse(s string) (n int, err error) {
	if s == "" {
<>
	}
	return len(s), nil
}
"""

GO_NONE = """package p

func run() {
	for {
<>
	}
}
"""

GO_LITERAL = """package p

func outer() (int, error) {
	go func() {
<>
	}()
	done := func() error {
		return nil
	}
	_ = done
	return 0, nil
}
"""

RUST = """use std::io;

pub struct S;

impl S {
    pub fn read(&self) -> io::Result<usize> {
        let n = 3;
<>
        Ok(n)
    }

    fn show(&self) {
        println!("s");
    }
}
"""

RUST_UNIT = """fn main() {
    let path = "x";
<>
    println!("{}", path);
}
"""

RUST_IMPL = """fn show<T: Default>(x: T) -> impl Debug {
<>
    x
}
"""

RUST_CLOSURE = """fn main() {
    let f = |x: i32| {
<>
    };
    f(1);
}
"""


def check(document: str, language: str):
    start = document.index("<>")
    text = document.replace("<>", "", 1)
    return returns_check(spec_for(language), text, start, start)


@pytest.mark.parametrize("fill, fits", [
    ("\t\treturn nil, err\n", True),
    ("\t\treturn err\n", False),                     # two results, one value
    ("\t\treturn\n", False),                         # results not named
    ("\t\treturn nil, nil, err\n", False),
    ("\t\treturn Open(name)\n", True),                # one call may return both
    ("\t\treturn (nil), err // wrapped\n", True),
    ("\t\tpanic(err)\n", True),                       # no return: nothing to check
    ("\t\tf.Close()\n", True),
])
def test_go_result_count(fill, fits):
    assert check(GO, "go")(fill) is fits


@pytest.mark.parametrize("document, fill, fits", [
    (GO_NAMED, "\t\treturn\n", True),                 # named results: a bare return is fine
    (GO_NAMED, "\t\treturn 0, nil\n", True),
    (GO_NAMED, "\t\treturn 0\n", False),
    (GO_NONE, "\t\treturn\n", True),
    (GO_NONE, "\t\treturn nil\n", False),             # no results at all
    (GO_LITERAL, "\t\treturn\n", True),               # the literal's own (no) results count
    (GO_LITERAL, "\t\treturn 0, nil\n", False),
])
def test_go_innermost_function(document, fill, fits):
    assert check(document, "go")(fill) is fits


@pytest.mark.parametrize("document, fill, fits", [
    (RUST, "        let m = self.len()?;\n", True),
    (RUST, "        return Ok(n);\n", True),
    (RUST, "        return;\n", False),               # the function returns a value
    (RUST_UNIT, "    let f = std::fs::read(path)?;\n", False),   # ? in a function that returns nothing
    (RUST_UNIT, "    return Ok(());\n", False),
    (RUST_UNIT, "    return 1;\n", False),
    (RUST_UNIT, "    return;\n", True),
    (RUST_UNIT, "    return helper();\n", True),     # may well return ()
    (RUST_CLOSURE, "        return x + 1;\n", True),  # a closure's type is inferred: not checked
    (RUST_IMPL, "    return;\n", True),               # () may be the impl Trait or the T
    (RUST_IMPL.replace("impl Debug", "T"), "    return;\n", True),
    (RUST_IMPL.replace("impl Debug", "u8"), "    return;\n", False),
    (RUST_CLOSURE, "        let y = g(x)?;\n", True),
])
def test_rust(document, fill, fits):
    assert check(document, "rust")(fill) is fits


def test_typed_head_counts():
    """The user typed ``return`` and the fill writes the rest: the line as a whole is checked."""
    document = GO.replace("<>", "\t\treturn <>")
    assert check(document, "go")("err\n") is False
    assert check(document, "go")("nil, err\n") is True


def test_nothing_to_check():
    assert check("x = 1\n<>\n", "python") is None
    assert check("package p\n\nvar x = 1\n<>\n", "go") is None           # the top level
    assert check("package p\n\nfunc f() int {\n<>\n", "go") is None      # no closing brace below
    broken = GO.replace("func Open(name string) (*os.File, error) {", "func Open(name string) (*os.File, error {")
    assert check(broken, "go")("\t\treturn err\n") is True               # a parse error: no verdict


def test_crlf_tabs_and_unicode():
    document = GO.replace("\n", "\r\n").replace("f, err := os.Open(name)", "f, err := os.Open(\"😀\" + name)")
    document = document.replace("<>\r\n", "<>")
    fits = check(document, "go")
    assert fits is not None
    assert fits("\t\treturn err\r\n") is False
    assert fits("\t\treturn nil, fmt.Errorf(\"😀 \\ud800\")\r\n") is True
    lone = document.replace("// Open opens.", "// Open opens \ud800.")
    assert check(lone, "go")("\t\treturn err\r\n") is False


GO_JUMPS = """package p

func first(xs []int) int {
	for _, x := range xs {
		switch x {
		case 0:
<1>
		}
	}
<2>
	done := func() {
<3>
	}
	_ = done
	return 0
}
"""

JS_JUMPS = """export function first(xs) {
  for (const x of xs) {
    xs.forEach((y) => {
<3>
    });
<1>
  }
<2>
  return 0;
}
"""

RUST_JUMPS = """fn first(xs: &[i32]) -> i32 {
    for x in xs {
<1>
    }
<2>
    let f = || {
<3>
    };
    f();
    0
}
"""


def jump_check(document: str, marker: str, language: str):
    text, eol = document, "\r\n" if "\r\n" in document else "\n"
    for other in ("<1>", "<2>", "<3>"):
        if other != marker:
            text = text.replace(other + eol, "")
    start = text.index(marker)
    return returns_check(spec_for(language), text.replace(marker, "", 1), start, start)


@pytest.mark.parametrize("language, document, marker, fill, fits", [
    ("go", GO_JUMPS, "<1>", "\t\t\tbreak\n", True),              # leaves the switch
    ("go", GO_JUMPS, "<1>", "\t\t\tcontinue\n", True),           # the loop around the switch
    ("go", GO_JUMPS, "<2>", "\tcontinue\n", False),              # a real fill: the function's level, no loop
    ("go", GO_JUMPS, "<2>", "\tbreak\n", False),
    ("go", GO_JUMPS, "<3>", "\t\tbreak\n", False),               # a function literal has no loop of its own
    ("javascript", JS_JUMPS, "<1>", "    continue;\n", True),
    ("javascript", JS_JUMPS, "<2>", "  break;\n", False),
    ("javascript", JS_JUMPS, "<3>", "      continue;\n", False),   # a callback: `return` is what leaves it
    ("typescript", JS_JUMPS, "<3>", "      return;\n", True),
    ("rust", RUST_JUMPS, "<1>", "        continue;\n", True),
    ("rust", RUST_JUMPS, "<2>", "    break;\n", False),
    ("rust", RUST_JUMPS, "<3>", "        break;\n", False),       # a closure: no loop to leave
])
def test_a_jump_needs_a_loop_to_leave(language, document, marker, fill, fits):
    assert _both_line_ends(document, marker, language, fill) == (fits, fits)


def test_a_jump_in_broken_code_or_in_python_is_not_judged_here():
    broken = GO_JUMPS.replace("func first(xs []int) int {", "func first(xs []int int {")
    assert jump_check(broken, "<2>", "go")("\tcontinue\n") is True                 # a parse error: no verdict
    assert returns_check(spec_for("python"), "def f():\n    \n", 13, 13) is None   # Python's compiler judges it


def test_a_jump_in_a_function_a_javascript_file_closes_with_a_semicolon():
    """A real fill: ``continue;`` in jsdom's ``exports.install = (...) => {`` ... ``};`` (the function's closer at
    the first column is ``};``, which the search for the code around the hole now takes)."""
    document = ("exports.install = (globalObject, globalNames) => {\n  class Font {\n    get color() {\n<>\n"
                "      return 1;\n    }\n  }\n};\nconst Impl = require(\"./impl.js\");\n")
    fits = check(document, "javascript")
    assert fits is not None
    assert fits("      continue;\n") is False
    assert fits("      ceReactionsPreSteps(globalObject);\n") is True
    wrapped = "module.exports = wrap(() => {\n  function g() {\n<>\n    return 1;\n  }\n})\n"
    assert check(wrapped, "javascript")("    break;\n") is False
    assert check(wrapped.replace("return 1;", "for (;;) {\n<>\n    }", 1).replace("<>\n", "", 1),
                 "javascript")("      break;\n") is True


GO_TYPED = """package p

type Flag bool

func contains(set uint64, tok int) bool {
<1>
}

func parse(s string) (n int, name string, b []byte, f Flag, err error) {
<2>
}
"""


@pytest.mark.parametrize("marker, fill, fits", [
    ("<1>", "\treturn 0\n", False),                        # a real fill: an int for a bool
    ("<1>", "\treturn set&(1<<tok) != 0\n", True),
    ("<1>", "\treturn false\n", True),
    ("<1>", "\treturn nil\n", False),
    ("<2>", "\treturn 0, \"\", nil, true, nil\n", True),  # a named bool type takes `true`
    ("<2>", "\treturn -1, `raw`, nil, false, nil\n", True),
    ("<2>", "\treturn 0, nil, nil, true, nil\n", False),   # nil for a string
    ("<2>", "\treturn 0, \"\", \"Whitespace\", true, nil\n", False),   # a string literal for []byte
    ("<2>", "\treturn true, \"\", nil, true, nil\n", False),
    ("<2>", "\treturn 0, \"\", nil, true, false\n", False),  # a bool for an error
    ("<2>", "\treturn n, name, b, f, err\n", True),         # names: not judged
])
def test_a_go_literal_returned_must_fit_its_result_type(marker, fill, fits):
    assert _both_line_ends(GO_TYPED, marker, "go", fill) == (fits, fits)


def _both_line_ends(document: str, marker: str, language: str, fill: str) -> tuple[bool, bool]:
    """The check's verdict on the fill at ``marker``, in the document as given and in its CRLF twin."""
    crlf = jump_check(document.replace("\n", "\r\n"), marker, language)(fill.replace("\n", "\r\n"))
    return jump_check(document, marker, language)(fill), crlf


TS_TYPED = """export function isClosePath(cmd: Command): cmd is ClosePath {
<1>
}

export class Poller {
  status(code: number): boolean | string {
<2>
  }

  async ready(): Promise<boolean> {
<3>
  }
}
"""


@pytest.mark.parametrize("marker, fill, fits", [
    ("<1>", "  return;\n", False),                          # a real fill: nothing for a type predicate
    ("<1>", "  return cmd.length == 1 && cmd[0] == 'z';\n", True),
    ("<2>", "    return;\n", False),
    ("<2>", "    return null;\n", False),
    ("<2>", "    return undefined;\n", False),
    ("<2>", "    return code > 400;\n", True),
    ("<3>", "    return;\n", False),                        # an async function's Promise<boolean>
    ("<3>", "    return true;\n", True),
])
def test_a_typescript_return_of_nothing_must_fit_the_declared_type(marker, fill, fits):
    assert _both_line_ends(TS_TYPED, marker, "typescript", fill) == (fits, fits)


@pytest.mark.parametrize("declared", ["void", "Promise<void>", "T", "Result", "number | undefined", "any",
                                      "asserts x is string"])
def test_a_typescript_return_of_nothing_where_the_type_may_be_empty_is_accepted(declared):
    """``void``, ``undefined`` in a union, a type parameter, a type the file names (an alias may hold undefined),
    an assertion; a generator may return nothing whatever it yields."""
    document = f"export async function f<T>(x: unknown): {declared} {{\n<>\n}}\n"
    assert check(document, "typescript")("  return;\n") is True
    generator = "export function* g(): Iterator<number> {\n<>\n}\n"
    assert check(generator, "typescript")("  return;\n") is True


GO_BOOLS = """package p

func name(tt int) string {
<1>
}

func has(tt int) bool {
<2>
}

func check(a int) error {
<3>
}
"""


@pytest.mark.parametrize("marker, fill, fits", [
    ("<1>", "\treturn tt&0x0200 != 0\n", False),           # a real fill: a comparison for a string
    ("<1>", "\treturn !ok\n", False),
    ("<1>", "\treturn names[tt]\n", True),
    ("<2>", "\treturn tt&0x0200 != 0\n", True),
    ("<2>", "\treturn tt > 1 && !done\n", True),
    ("<3>", "\treturn a == 1\n", False),                   # a bool for an error
    ("<3>", "\treturn nil\n", True),
])
def test_a_go_comparison_returned_is_a_bool(marker, fill, fits):
    assert _both_line_ends(GO_BOOLS, marker, "go", fill) == (fits, fits)


RUST_WRITTEN = """struct Builder { x: u8 }

impl Builder {
    pub fn new() -> Builder {
<1>
    }

    pub fn raw(&mut self) -> u8 {
<2>
    }

    fn lt(&self, other: &Builder) -> bool {
        let d = self.x;
<3>
    }
}

fn first(xs: &[u8]) -> Option<usize> {
    let n = xs.len();
<4>
}

fn set() {
    let n = 1;
<5>
}

fn open(p: &str) -> io::Result<File> {
<6>
}
"""


@pytest.mark.parametrize("marker, fill, fits", [
    ("<1>", "        self\n", False),                      # a real fill: `self` in an associated function
    ("<1>", "        Box::from_raw(self.ptr.as_ptr())\n", False),
    ("<1>", "        Builder { x: 0 }\n", True),
    ("<1>", "        Self::default()\n", True),
    ("<1>", "        self::make()\n", True),                # a module path, not the receiver
    ("<2>", "        self.x\n", True),
    ("<3>", "        Some(Ordering::Greater)\n", False),   # a real fill: an Option for a bool
    ("<3>", "        d < other.x\n", True),
    ("<3>", "        1\n", False),
    ("<3>", "        return None;\n", False),
    ("<4>", "        n == 0\n", False),
    ("<4>", "    Ok(n)\n", False),
    ("<4>", "    None\n", True),
    ("<4>", "    xs.iter().position(|&x| x == 0)\n", True),
    ("<4>", "    if n > 0 { Some(n) } else { None }\n", True),
    ("<5>", "    #[test]\n", False),                       # a real fill: an attribute with nothing after it
    ("<5>", "    #[allow(unused)]\n    let m = n;\n", True),
    ("<5>", "    n == 1\n", False),                        # a bool as the value of a function of `()`
    ("<5>", "    g(n)\n", True),
    ("<6>", "    File::open(p)\n", True),
    ("<6>", "    Ok(File::open(p)?)\n", True),
    ("<6>", "    None\n", False),
])
def test_what_a_rust_fill_writes_must_fit_its_function(marker, fill, fits):
    assert _both_line_ends(RUST_WRITTEN, marker, "rust", fill) == (fits, fits)


def test_a_rust_fill_before_more_code_is_no_value_and_emoji_count_in_bytes():
    document = "fn f(s: &str) -> bool {\n    let t = \"😀\u00e9\";\n<>\n    s == t\n}\n"
    fits = check(document, "rust")
    assert fits("    #[allow(unused)]\n") is True       # the attribute is the next statement's
    assert fits("    Some(t);\n") is True               # a statement, not the function's value
    assert fits("    self.t;\n") is False


JS_LABELS = """export function define(handlers) {
  const events = new Emitter();
<>
  return { handlers, events };
}
"""


@pytest.mark.parametrize("language, fill, fits", [
    ("typescript", "  listHandlers: () => ReadonlyArray<AnyHandler>\n", False),   # a real fill: an object's key
    ("javascript", "  events: emitter\n", False),
    ("javascript", "  outer: for (const h of handlers) {\n    continue outer;\n  }\n", True),
    ("typescript", "  block: {\n    break block;\n  }\n", True),
    ("javascript", "  const o = { events: emitter };\n", True),
    ("javascript", "  switch (handlers.length) {\n    case 0:\n      break;\n    default:\n  }\n", True),
])
def test_a_javascript_label_is_written_before_a_loop_or_a_block(language, fill, fits):
    assert _both_line_ends(JS_LABELS, "<>", language, fill) == (fits, fits)


RUST_RECEIVER = """impl<Fut: Future> MaybeDone<Fut> {
    #[inline]
<>
        unsafe { self.get_unchecked_mut().output() }
    }
}
"""


@pytest.mark.parametrize("fill, fits", [
    # a receiver with its type is a `self` parameter: futures' `fn poll(self: Pin<&mut Self>, ..)` headers were
    # refused as `self` written in a function without one
    ("    pub fn output_mut(self: Pin<&mut Self>) -> Option<&mut Fut::Output> {\n", True),
    ("    fn into_output(mut self: Box<Self>) -> Option<Fut::Output> {\n", True),
    ("    fn output_mut(&mut self) -> Option<&mut Fut::Output> {\n", True),
])
def test_a_rust_receiver_with_its_type_is_a_self_parameter(fill, fits):
    assert check(RUST_RECEIVER, "rust")(fill) is fits


# A bare return in a function whose other returns give a value (``bare_return_check``): ``‸`` is the cursor, the
# fill is typed there. Plain-text languages are read by their check grammar.
@pytest.mark.parametrize("language, text, fill, fits", [
    ("perl", "sub f {\n  my $x = shift;\n  ret‸\n  return $x + 1;\n}\n", "urn;", False),
    ("perl", "sub f {\n  ret‸\n  return unless $y;\n  return $x + 1;\n}\n", "urn;", True),   # one bare already
    ("perl", "sub f {\n  my $x = shift;\n  ret‸\n  print $x;\n}\nsub g { return 1; }\n", "urn;", True),  # g's is g's
    ("perl", "sub f {\n  ret‸\n  my $g = sub { return 2; };\n}\n", "urn;", True),             # so is a closure's
    ("perl", "sub f {\n  my $x = shift;\n  ret‸\n  return $x + 1;\n}\n", "urn $x;", True),    # a value
    ("ruby", "def f(x)\n  re‸\n  return x\nend\n", "turn", False),
    ("ruby", "def f(x)\n  re‸\n  return if x\n  x\nend\n", "turn", True),
    ("ruby", "def f(xs)\n  xs.each do |x|\n    re‸\n  end\n  return xs\nend\n", "turn", False),   # a block's leaves f
    ("lua", "local function f(x)\n  if x then\n    ret‸\n  end\n  return x\nend\n", "urn", False),
    ("java", "class A {\n  int f(int x) {\n    if (x > 0) {\n      retu‸\n    }\n    return x;\n  }\n}\n",
     "rn;", False),
    ("java", "class A {\n  void f(int x) {\n    if (x > 0) {\n      ‸\n    }\n    Runnable r = () -> { return 1; };\n"
             "  }\n}\n", "return;", True),                                                    # the lambda's
    ("c", "int f(int x) {\n  if (x)\n    r‸\n  return x;\n}\n", "eturn;", False),
    ("cpp", "int f(int x) {\n  if (x)\n    r‸\n  return x;\n}\n", "eturn;", False),
    ("python", "def f(x):\n    if x:\n        ret‸\n    return x\n", "urn", False),
    ("python", "def f(x):\n    if x:\n        ret‸\n    print(x)\n", "urn", True),               # no other return
    ("python", "def f(x):\n    if x:\n        ret‸\n    return x\n", "urn None", True),
    ("python", "def f(x):\n    if x:\n        ret‸  # done\n    return x\n", "urn", True),    # more on the line
    ("python", "x = 1\nret‸\n", "urn", True),                                               # no function
    ("python", "ret‸", "urn", True),                                                        # the whole document
    ("java", "class A {\n  int f(int x) {\n    if (x > 0) {\n      ret‸\n    }\n    return x; // 😀\n  }\n}\n",
     "urn;", False),
    ("java", "class A {\n  int f(int x) {\n    if (x > 0) {\n      ret‸\n    }\n    return x;\n  }\n}\n",
     "urn;\n      x++;", True),                                                         # a fill of two lines
    ("python", "def f(x):\n    if x:\n        ret‸\n    return '\ud800'\n", "urn", False),  # a lone surrogate
    # a whole line inserted (the fill ends its line; the next line is not the fill's)
    ("lua", "local function f(x)\n  if x then\n‸    y()\n  end\n  return x\nend\n", "    return\n", False),
    ("lua", "local function f(x)\n  if x then\n‸    y()\n  end\n  return x\nend\n", "    return x\n", True),
    # the last statement of the function's own body: it does nothing there
    ("perl", "sub f {\n  my ($self, $man) = @_;\n  $man =~ s,/+,.,g;\n  ret‸\n}\n", "urn;", False),
    ("perl", "sub f {\n  my $x = shift;\n  ret‸ # done\n}\n", "urn;", True),              # more on the line
    ("perl", "sub f {\n  for (@_) {\n    ret‸\n  }\n}\n", "urn;", True),                 # a loop's, not the body's
    ("python", "def f(x):\n    print(x)\n    ret‸\n\n\ndef g():\n    pass\n", "urn", False),
    ("python", "def f(x):\n    print(x)\n    ret‸\n    # the end\n", "urn", False),      # comments aside
    ("python", "def f(x):\n    if x:\n        ret‸\n    print(x)\n", "urn", True),         # an early return
    ("java", "class A {\n  A(int x) {\n    this.x = x;\n‸  }\n}\n", "    return;\n", False),   # a whole line
    ("c", "void f(int x)\n{\n  g(x);\n  ret‸\n}\n", "urn;", False),
    ("ruby", "def f(x)\n  puts x\n  ret‸\nend\n", "urn", False),
    ("lua", "local function f(x)\n  print(x)\n  ret‸\nend\n", "urn", False),
    ("python", "ret‸\n", "urn", True),                                                     # no function
])
def test_a_bare_return_among_returns_of_a_value_is_no_fill(language, text, fill, fits):
    from engine.languages import check_spec
    from engine.returns import bare_return_check
    at = text.index("‸")
    for eol in ("\n", "\r\n"):
        doc = text.replace("‸", "").replace("\n", eol)
        cursor = at + text[:at].count("\n") * (len(eol) - 1)
        check = bare_return_check(check_spec(language) or spec_for(language), doc, cursor, cursor)
        assert check is not None and check(fill.replace("\n", eol)) is fits, (language, text, fill, eol)


def test_a_bare_return_is_left_to_the_signature_in_go_and_rust_and_unread_without_a_grammar():
    from engine.languages import check_spec
    from engine.returns import bare_return_check
    js = "function f(x) {\n  if (x) {\n    reject(x)\n    ret\n  }\n  return x\n}\n"   # a callback's early exit
    assert bare_return_check(spec_for("javascript"), js, js.index("ret\n") + 3, js.index("ret\n") + 3) is None
    assert bare_return_check(spec_for("go"), "func f() int {\n\tret\n\treturn 1\n}\n", 18, 18) is None
    assert bare_return_check(spec_for("rust"), "fn f() -> u8 {\n    ret\n    return 1;\n}\n", 22, 22) is None
    assert bare_return_check(None, "sub f {\n  ret\n  return 1;\n}\n", 13, 13) is None
    assert check_spec("python") is None   # a grammar language is read by its own grammar (infill: ``check or spec``)


def test_a_bare_return_is_judged_in_the_code_around_it_in_a_large_document():
    from engine.languages import check_spec
    from engine.returns import MAX_REGION, bare_return_check
    filler = "".join(f"sub g{i} {{\n  return {i};\n}}\n" for i in range(4000))   # about 80,000 characters
    assert len(filler) > 2 * MAX_REGION
    for body, fits in (("  my $x = shift;\n  ret\n  return $x;\n", False), ("  ret\n  return;\n", True)):
        doc = filler + "sub f {\n" + body + "}\n" + filler
        at = doc.index("  ret\n") + 5
        assert bare_return_check(check_spec("perl"), doc, at, at)("urn;") is fits


# A return of a value its function cannot give, in Java, C and C++ (``value_return_check``): ``‸`` is the cursor.
JAVA_TYPES = """class A<T> implements Comparable<A<T>> {
    private final int[] counts;   // 😀
    A(int size) {
        counts = new int[size];
        <ctor>
    }
    static {
        <static>
    }
    void reset() {
        <void>
    }
    int size() {
        <int>
    }
    boolean isEmpty() {
        <boolean>
    }
    java.util.Comparator<T> order() {
        <generic>
    }
    Integer boxed() {
        <boxed>
    }
    String name() {
        <string>
    }
    int[] all() {
        <array>
    }
    T first() {
        <param>
    }
    Runnable task = () -> { <lambda> };
}
"""


@pytest.mark.parametrize("marker, fill, fits", [
    ("ctor", "return -1;", False), ("ctor", "return this;", False), ("ctor", "return;", True),
    ("static", "return 0;", False),
    ("void", "return counts;", False), ("void", "return;", True), ("void", "counts[0] = 1;", True),
    ("int", "return counts.length;", True), ("int", "return 'c';", True), ("int", "return -1; // none", True),
    ("int", "return null;", False), ("int", "return false;", False), ("int", "return \"0\";", False),
    ("boolean", "return true;", True), ("boolean", "return (0);", False), ("boolean", "return null;", False),
    ("generic", "return -1;", False), ("generic", "return true;", False), ("generic", "return null;", True),
    ("generic", "return Comparator.naturalOrder();", True),
    ("boxed", "return 0;", True), ("boxed", "return null;", True), ("boxed", "return \"0\";", False),
    ("string", "return \"a\";", True), ("string", "return false;", False), ("string", "return 0;", False),
    ("array", "return counts;", True), ("array", "return 0;", False), ("array", "return null;", True),
    ("param", "return -1;", False), ("param", "return null;", True),
    ("lambda", "return 1;", True),                  # a lambda's type is inferred
])
def test_a_java_return_must_fit_its_methods_type(marker, fill, fits):
    from engine.languages import check_spec
    from engine.returns import value_return_check
    text = re.sub(r"<(?!%s>)[a-z]+>" % marker, "", JAVA_TYPES)
    for eol in ("\n", "\r\n"):
        doc = text.replace("\n", eol)
        at = doc.index(f"<{marker}>")
        doc = doc.replace(f"<{marker}>", "")
        assert value_return_check(check_spec("java"), doc, at, at)(fill) is fits, (marker, fill, eol)


@pytest.mark.parametrize("language, text, fill, fits", [
    ("c", "static void f(int x)\n{\n    if (x)\n        ret‸\n}\n", "urn 0;", False),
    ("c", "static void f(int x)\n{\n    if (x)\n        ret‸\n}\n", "urn;", True),
    ("c", "static void *f(int x)\n{\n    if (x)\n        ret‸\n}\n", "urn NULL;", True),   # a pointer
    ("c", "int f(int x)\n{\n    if (x)\n        ret‸\n}\n", "urn -1;", True),
    ("cpp", "void Foo::run(int x) {\n  if (x) {\n‸  }\n}\n", "    return x;\n", False),   # a whole line
    ("cpp", "int main() {\n  auto f = [](int x) { ret‸ };\n}\n", "urn x;", True),      # a lambda's
    ("java", "class A {\n  void f(int x) {\n    if (x > 0) {\n‸    }\n  }\n}\n", "      return x;\n", False),
    ("java", "class A {\n  void f(int x) {\n    if (x > 0) {\n‸    }\n  }\n}\n", "      return;\n", True),
    ("java", "class A {\n  void f(int x) {\n    ret‸\n  }\n}\n", "urn x;\n    x++;", True),   # two lines
    ("java", "class A {\n  int f(String s) {\n    ret‸\n  }\n}\n", "urn s.length() + \"\ud800\";", True),
    ("java", "class A<T> {\n  Comparable<T> f() {\n    ret‸\n  }\n}\n", "urn 0;", True),        # a box's class
    ("java", "class A {\n  java.lang.Integer f() {\n    ret‸\n  }\n}\n", "urn \"s\";", False),
    ("java", "class A {\n  java.lang.Integer f() {\n    ret‸\n  }\n}\n", "urn 0;", True),
    ("java", "class A {\n  java.util.List<String> f() {\n    ret‸\n  }\n}\n", "urn 0;", False),
])
def test_a_c_or_java_return_must_fit_its_function(language, text, fill, fits):
    from engine.languages import check_spec
    from engine.returns import value_return_check
    at = text.index("‸")
    for eol in ("\n", "\r\n"):
        doc = text.replace("‸", "").replace("\n", eol)
        cursor = at + text[:at].count("\n") * (len(eol) - 1)
        check = value_return_check(check_spec(language), doc, cursor, cursor)
        assert check is not None and check(fill.replace("\n", eol)) is fits, (language, text, fill, eol)


def test_a_return_of_a_value_is_judged_only_in_java_c_and_cpp_and_near_the_cursor():
    from engine.languages import check_spec
    from engine.returns import MAX_REGION, value_return_check
    assert value_return_check(check_spec("perl"), "sub f {\n  ret\n}\n", 13, 13) is None
    assert value_return_check(None, "void f() {\n  ret\n}\n", 15, 15) is None
    assert value_return_check(spec_for("python"), "def f():\n    ret\n", 16, 16) is None
    filler = "".join(f"static int g{i}(void) {{ return {i}; }}\n" for i in range(2500))
    assert len(filler) > MAX_REGION
    doc = filler + "void f(void)\n{\n  ret\n}\n" + filler
    at = doc.index("  ret\n") + 5
    assert value_return_check(check_spec("c"), doc, at, at)("urn 1;") is False
    assert value_return_check(check_spec("c"), "", 0, 0)("return 1;") is True   # an empty document: no function
