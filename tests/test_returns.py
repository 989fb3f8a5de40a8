"""Returns the enclosing function cannot take (engine/returns.py): Go and Rust fills that parse but would not
compile."""

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
