"""Returns the enclosing function cannot take, and jumps with nowhere to go: a fill that parses but would not
compile (or run).

A neighbour's line or the model's fill is often a ``return`` from a function of another shape: ``return err``
where the function returns ``(T, error)``, ``return nil`` from a function with no results, ``return;`` from a
Rust function that returns a value, ``?`` in a Rust function that returns nothing. Each is a compile error the
parser does not see, and the fill is then not offered (``returns_check``, asked by ``infill._first_valid`` after
the parse, and for a code action's edits by ``validate.edits_keep_parsing``).

Go: a ``return`` with values in a function without results; a bare ``return`` where the results are not named;
a count of values that is not the count of results (one call may return several); a literal that its result's type
cannot be (``return 0`` from a ``bool`` function, ``nil`` for a ``string``, a string for ``[]byte``, ``false`` for an
``error``; a named type, whose underlying type is not known here, takes any). Rust: ``return;`` in a function
with a return type other than ``()``; ``?``, ``return Ok(..)``/``Err``/``Some``/``None`` or a literal in a function
without one. TypeScript: ``return;``, ``return undefined`` or ``return null`` where the declared return type surely
has no such value (``boolean``, ``string[]``, a type predicate, ``Promise<number>`` of an ``async`` function; not
a generator, a named type or a type parameter). Only the innermost function counts: in a Go function literal its own
results, in a Rust closure or ``async`` block nothing is checked (their types are inferred).

What else a fill writes that cannot compile, asked in the same parse: a comparison or ``!x`` returned for a Go
``string``, number or ``error``; in Rust a body's value or a ``return`` of a kind the declared type cannot be
(``Some(..)``, ``None``, a comparison or a literal for ``-> bool``, ``Ok(..)`` for an ``Option``), ``self`` in a
function without a ``self`` parameter (``fn new() -> Self { self }``), an attribute with nothing after it in its block
(``#[test]`` before the ``}``); in JavaScript and TypeScript a label on anything but a loop or a block
(``listHandlers: () => handlers``: an object's key written as a statement parses as a label).

``unfinished`` says whether a function's body ends without the value it declares (Go: no terminating statement at
its end, the compiler's "missing return"; Rust: a statement ending a body that declares a value): "Complete body",
written line by line, that stopped there keeps the stub after its lines (``oneline.fill_body``).

A ``break`` or ``continue`` outside every loop of its function (for ``break`` also a ``switch`` or ``select``, or
a label's block, in the languages that have them) is refused in Go, Rust, JavaScript and TypeScript: it parses, and
``continue`` at a Go function's level is a compile error, in JavaScript an early error. A labeled Rust ``break 'a``
is accepted (it may leave a labeled block). Python needs no such check here: its fills are compiled
(``validate.python_check``), and the compiler refuses a jump outside a loop.

The code around the hole is found by text, as gofmt, rustfmt and most JavaScript are laid out: from the nearest line
above that starts at the first column (a Go ``func``, a Rust ``fn``, ``impl`` or ``mod``, a ``function`` or ``class``)
to the first ``}`` at the first column below. That code alone is parsed with each fill that writes a ``return``
(``?``), ``break`` or ``continue`` (a few milliseconds at most where a large file takes tens), and the innermost
function around each decides. Whatever is not certain is accepted: no such code found (the hole at the top level),
a parse with any error, another language.

Two checks read the function around the hole by its grammar instead (a plain-text language's check grammar): a bare
``return`` among returns of a value (``bare_return_check``), and in Java, C and C++ a ``return`` of a value the
function cannot give (``value_return_check``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import tree_sitter

from .languages import LanguageSpec, parse

MAX_REGION = 20_000   # characters each side of the hole: code around it that reaches further is not checked
_LANGUAGES = frozenset({"go", "rust", "typescript", "tsx"})   # returns are checked; jumps in every one of ``_JUMPS``
_TS_FUNCTIONS = frozenset({"function_declaration", "function_expression", "function", "arrow_function",
                           "method_definition", "generator_function_declaration", "generator_function"})
_FUNCTIONS = {
    "go": frozenset({"function_declaration", "method_declaration", "func_literal"}),
    "rust": frozenset({"function_item", "closure_expression", "async_block"}),
    "typescript": _TS_FUNCTIONS,
    "tsx": _TS_FUNCTIONS,
}
_RETURNS = {"go": frozenset({"return_statement"}), "rust": frozenset({"return_expression", "try_expression"}),
            "typescript": frozenset({"return_statement"}), "tsx": frozenset({"return_statement"})}
_JS_JUMPS = (frozenset({"break_statement", "continue_statement"}),
             frozenset({"for_statement", "for_in_statement", "while_statement", "do_statement"}),
             frozenset({"switch_statement", "labeled_statement"}),
             frozenset({"function_declaration", "function_expression", "function", "arrow_function",
                        "method_definition", "generator_function_declaration", "generator_function",
                        "class_static_block", "class_body"}))
# per language: the jumps, the loops they may leave, what else a ``break`` may leave, where the search stops
_JUMPS = {
    "go": (frozenset({"break_statement", "continue_statement"}), frozenset({"for_statement"}),
           frozenset({"expression_switch_statement", "type_switch_statement", "select_statement"}), _FUNCTIONS["go"]),
    "rust": (frozenset({"break_expression", "continue_expression"}),
             frozenset({"loop_expression", "for_expression", "while_expression"}), frozenset(),
             _FUNCTIONS["rust"] | {"const_item", "static_item"}),
    "javascript": _JS_JUMPS,
    "typescript": _JS_JUMPS,
    "tsx": _JS_JUMPS,
}
_JUMP_WORD = re.compile(r"\b(?:break|continue)\b")
_RUST_VALUES = frozenset({"Ok", "Err", "Some"})
_RUST_LITERALS = frozenset({"integer_literal", "float_literal", "string_literal", "raw_string_literal",
                            "char_literal", "boolean_literal"})


def returns_check(spec: LanguageSpec, text: str, start: int, end: int) -> Callable[[str], bool] | None:
    """For a fill of ``text[start:end]`` in a function: does every ``return`` (and Rust ``?``) the fill writes fit
    the function it is in (Go and Rust), and has every ``break`` and ``continue`` it writes a loop (or switch) to
    leave? ``None``: nothing to check (another language, no code around)."""
    if spec.name not in _JUMPS:
        return None
    region = _top_level_around(text, start, end)
    if region is None:
        return None
    lo, hi = region
    typed = text[max(lo, text.rfind("\n", 0, start) + 1):start]   # the cursor line's code before the hole
    head = text[lo:start].encode("utf-8", "surrogatepass")
    tail = text[end:hi].encode("utf-8", "surrogatepass")
    line = len(head) - len(typed.encode("utf-8", "surrogatepass"))
    language = spec.name

    def fits(fill: str) -> bool:
        written = typed + fill
        returns = language in _LANGUAGES and ("return" in written or language == "rust" and "?" in written)
        jumps = _JUMP_WORD.search(written) is not None
        rust = language == "rust" and ("#[" in written or _SELF.search(written) is not None
                                       or written.rstrip()[-1:] not in ("", ";", "{", "}", ","))
        labels = language != "rust" and language != "go" and _LABELED.search(written) is not None
        if not returns and not jumps and not rust and not labels:
            return True
        added = fill.encode("utf-8", "surrogatepass")
        tree = parse(spec, head + added + tail)
        if tree is None or tree.root_node.has_error:
            return True
        root, hi_byte = tree.root_node, len(head) + len(added)
        if returns and not all(_fits(language, node) for node in _returns_in(root, language, line, hi_byte)):
            return False
        if rust and not _rust_written_fits(root, line, hi_byte):
            return False
        if labels and not all(_labels_a_loop(node) for node in _nodes_in(root, _LABELED_KINDS, line, hi_byte)):
            return False
        return not jumps or all(_jump_fits(language, node)
                                for node in _nodes_in(root, _JUMPS[language][0], line, hi_byte))
    return fits


_SELF = re.compile(r"\bself\b")
_LABELED = re.compile(r"(?m)^[ \t]*[A-Za-z_$][\w$]*[ \t]*:(?!:)")
_LABELED_KINDS = frozenset({"labeled_statement"})
_LABEL_TARGETS = frozenset({"for_statement", "for_in_statement", "while_statement", "do_statement",
                            "statement_block"})


def _labels_a_loop(labeled: tree_sitter.Node) -> bool:
    """A JavaScript label is written before a loop (``outer: for (...)``) or a block; on anything else
    (``listHandlers: () => handlers``, an object's key written as a statement) it is a mistake that parses."""
    body = labeled.child_by_field_name("body")
    if body is None:
        body = next((c for c in labeled.named_children if c.type != "statement_identifier"), None)
    return labeled.has_error or body is None or body.type in _LABEL_TARGETS


_SELF_PATHS = frozenset({"scoped_identifier", "scoped_type_identifier", "scoped_use_list", "use_declaration",
                         "use_list", "use_as_clause", "visibility_modifier", "use_wildcard"})


def _rust_written_fits(root: tree_sitter.Node, lo: int, hi: int) -> bool:
    """What a Rust fill wrote in ``[lo, hi)`` against the function it is in: an attribute with nothing after it in
    its block (``#[test]`` before the ``}``) is refused, ``self`` in a function without a ``self`` parameter (an
    associated ``fn new()``) too, and a block's value (the line without ``;`` that ends the function's body) of a
    kind the declared return type cannot be (``Some(..)`` for ``-> bool``, a comparison for ``-> u32``)."""
    for node in _nodes_in(root, frozenset({"attribute_item"}), lo, hi):
        following = node.next_named_sibling
        while following is not None and "comment" in following.type:
            following = following.next_named_sibling
        if following is None and node.parent is not None and node.parent.type == "block":
            return False
    for node in _nodes_in(root, frozenset({"self"}), lo, hi):
        if node.parent is None or node.parent.type in _SELF_PATHS:
            continue
        function = _innermost(node, frozenset({"function_item", "macro_definition", "impl_item", "trait_item"}))
        if function is not None and function.type == "function_item" and not _has_self(function):
            return False
    blocks = _nodes_in(root, frozenset({"block"}), lo, hi)
    for node in blocks + [b for b in _enclosing_blocks(root, lo) if b not in blocks]:
        function = node.parent
        if function is None or function.type != "function_item":
            continue
        value = node.named_children[-1] if node.named_children else None
        if value is not None and lo <= value.start_byte < hi and not _rust_value_fits(function, value):
            return False
    return True


def _enclosing_blocks(root: tree_sitter.Node, at: int) -> list[tree_sitter.Node]:
    """The blocks around byte ``at`` (the function's body a fill inside it ends)."""
    node = root.descendant_for_byte_range(at, at)
    found = []
    while node is not None:
        if node.type == "block":
            found.append(node)
        node = node.parent
    return found


def _innermost(node: tree_sitter.Node, kinds: frozenset[str]) -> tree_sitter.Node | None:
    node_ = node.parent
    while node_ is not None and node_.type not in kinds:
        node_ = node_.parent
    return node_


def _has_self(function: tree_sitter.Node) -> bool:
    """A ``self`` parameter: ``&mut self``, or one with its type (``self: Pin<&mut Self>``, ``mut self: Box<Self>``:
    a ``parameter`` whose pattern is ``self``)."""
    parameters = function.child_by_field_name("parameters")
    return parameters is not None and any(
        c.type == "self_parameter"
        or c.type == "parameter" and getattr(c.child_by_field_name("pattern"), "type", None) == "self"
        for c in parameters.named_children)


_RUST_NUMBERS = frozenset({"i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize",
                           "f32", "f64"})
_COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">=", "&&", "||"})   # a bool in Go and in Rust


def _rust_value_fits(function: tree_sitter.Node, value: tree_sitter.Node) -> bool:
    """May the function's declared return type be ``value``'s kind? Only certain mismatches are refused: a
    primitive (``bool``, a number, ``char``) or ``()`` against a literal, a comparison, ``Some``/``None``/``Ok``/
    ``Err`` of another kind; an ``Option`` against ``Ok``/``Err``, a ``Result`` against ``Some``/``None``."""
    if value.has_error or value.type.endswith(("statement", "declaration", "item", "comment")) \
            or value.type in ("attribute_item", "macro_invocation", "empty_statement"):
        return True
    declared = _rust_kind(function.child_by_field_name("return_type"))
    made = _rust_made(value)
    if declared is None or made is None:
        return True
    if declared == "unit":
        return False
    return made == declared


def _rust_kind(result: tree_sitter.Node | None) -> str | None:
    """``unit``, ``bool``, ``number``, ``char``, ``option``, ``result``; None: anything else (not judged)."""
    if result is None or result.type == "unit_type":
        return "unit"
    if result.type == "primitive_type":
        name = (result.text or b"").decode()
        return "bool" if name == "bool" else "number" if name in _RUST_NUMBERS else "char" if name == "char" \
            else None
    if result.type == "generic_type":
        generic = result.child_by_field_name("type")
        text = (generic.text or b"").decode() if generic is not None else ""
        return "option" if text == "Option" else "result" if text == "Result" or text.endswith("::Result") else None
    return None


def _unparenthesized(value: tree_sitter.Node) -> tree_sitter.Node:
    """``value`` without the parentheses around it (``(0)``: ``0``)."""
    while value.type == "parenthesized_expression" and value.named_child_count == 1:
        value = value.named_children[0]
    return value


def _rust_made(value: tree_sitter.Node) -> str | None:
    """The kind a value surely has: a literal's, a comparison's (``bool``), ``Some``/``None`` (``option``),
    ``Ok``/``Err`` (``result``); None for anything else."""
    value = _unparenthesized(value)
    if value.type == "boolean_literal":
        return "bool"
    if value.type in ("integer_literal", "float_literal"):
        return "number"
    if value.type == "char_literal":
        return "char"
    if value.type in ("string_literal", "raw_string_literal"):
        return "string"
    if value.type == "binary_expression":
        operator = value.child_by_field_name("operator")
        return "bool" if operator is not None and operator.type in _COMPARISONS else None
    if value.type == "unary_expression" and (value.text or b"").startswith(b"!"):
        return None   # ``!x`` is a bool or a bitwise not of a number
    if value.type == "identifier" and value.text == b"None":
        return "option"
    if value.type == "call_expression":
        callee = value.child_by_field_name("function")
        name = (callee.text or b"").decode() if callee is not None and callee.type == "identifier" else ""
        return "option" if name == "Some" else "result" if name in ("Ok", "Err") else None
    return None


def _top_level_around(text: str, start: int, end: int) -> tuple[int, int] | None:
    """``[lo, hi)``: from the nearest line above ``start``'s line that starts at the first column with code (not a
    comment, a label or an attribute) to the end of the first line below ``end`` that is a ``}`` at the first
    column (``};``, ``})`` too: a JavaScript ``exports.f = () => {`` ends so); None when the first such line above
    is itself a closing one (the hole is at the top level) or either is further than ``MAX_REGION``."""
    pos = text.rfind("\n", 0, start) + 1
    floor = max(0, start - MAX_REGION)
    while pos > floor:
        prev = text.rfind("\n", 0, pos - 1) + 1
        line = text[prev:pos - 1].rstrip("\r")
        pos = prev
        if not line or line[0] in " \t" or line.startswith(("//", "/*", "*", "#")) or _LABEL.match(line):
            continue
        if line.startswith(("}", ")")):
            return None
        close = _CLOSE.search(text, end, min(len(text), end + MAX_REGION))
        return None if close is None else (prev, close.end())
    return None


_LABEL = re.compile(r"[A-Za-z_]\w*:\s*(?://.*)?$")
_CLOSE = re.compile(r"^}[)\];, \t]*(?://[^\n]*)?\r?$", re.M)   # `}`, `};`, `})`: a closer at the first column


def _returns_in(node: tree_sitter.Node, language: str, lo: int, hi: int) -> list[tree_sitter.Node]:
    """The returns (and Rust ``?`` expressions) that start inside ``[lo, hi)``."""
    return _nodes_in(node, _RETURNS[language], lo, hi)


def _nodes_in(node: tree_sitter.Node, kinds: frozenset[str], lo: int, hi: int) -> list[tree_sitter.Node]:
    """The nodes of ``kinds`` that start inside ``[lo, hi)``."""
    found: list[tree_sitter.Node] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.end_byte <= lo or n.start_byte >= hi:
            continue
        if n.type in kinds and lo <= n.start_byte < hi:
            found.append(n)
        stack.extend(n.children)
    return found


def _fits(language: str, node: tree_sitter.Node) -> bool:
    if node.has_error:
        return True
    function = _innermost(node, _FUNCTIONS[language])
    if function is None or function.type in ("closure_expression", "async_block"):
        return True
    if language == "go":
        return _go_fits(function, node)
    return _rust_fits(function, node) if language == "rust" else _ts_fits(function, node)


def _jump_fits(language: str, jump: tree_sitter.Node) -> bool:
    """Has this ``break`` or ``continue`` a loop (a ``break`` also a switch, a select, a label's block) around it
    inside its function?"""
    _, loops, switches, stops = _JUMPS[language]
    if jump.has_error or language == "rust" and any(c.type == "label" for c in jump.children):
        return True
    breaking = jump.type.startswith("break")
    node = jump.parent
    while node is not None and node.type not in stops:
        if node.type in loops or breaking and node.type in switches:
            return True
        node = node.parent
    return False


def _go_fits(function: tree_sitter.Node, ret: tree_sitter.Node) -> bool:
    result = function.child_by_field_name("result")
    results, named = _go_results(result)
    values = [c for c in ret.named_children if c.type == "expression_list"]
    exprs = values[0].named_children if values else [c for c in ret.named_children if c.type != "comment"]
    if not exprs:
        return results == 0 or named
    if results == 0:
        return False
    if len(exprs) == results:
        return all(_go_takes(kind, _go_literal(expr)) for kind, expr in zip(_go_result_kinds(result), exprs))
    return len(exprs) == 1 and exprs[0].type == "call_expression"   # f() may return several values


_GO_NUMBERS = frozenset({"int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64",
                         "uintptr", "float32", "float64", "complex64", "complex128", "byte", "rune"})
_GO_NUMBER_LITERALS = frozenset({"int_literal", "float_literal", "imaginary_literal", "rune_literal"})
_GO_NILLABLE = frozenset({"slice_type", "map_type", "pointer_type", "channel_type", "function_type"})


def _go_result_kinds(result: tree_sitter.Node | None) -> list[str | None]:
    """Each result's kind as a literal sees it: ``bool``, ``string``, ``number``, ``error``, ``nillable`` (a slice,
    map, pointer, channel or function), ``value`` (an array or struct type), None where a literal may be anything
    (``any``, an interface, a named type whose underlying type is not known here: ``type Flag bool``)."""
    if result is None:
        return []
    if result.type != "parameter_list":
        return [_go_kind(result)]
    kinds: list[str | None] = []
    for declaration in result.named_children:
        if declaration.type != "parameter_declaration":
            continue
        kind = _go_kind(declaration.child_by_field_name("type"))
        kinds += [kind] * max(1, len(declaration.children_by_field_name("name")))
    return kinds


def _go_kind(node: tree_sitter.Node | None) -> str | None:
    if node is None:
        return None
    if node.type == "type_identifier":
        name = (node.text or b"").decode()
        return "bool" if name == "bool" else "string" if name == "string" else "number" if name in _GO_NUMBERS \
            else "error" if name == "error" else None
    return "nillable" if node.type in _GO_NILLABLE else "value" if node.type in ("array_type", "struct_type") \
        else None


def _go_literal(expr: tree_sitter.Node) -> str | None:
    """A literal's kind (``bool``, ``string``, ``number``, ``nil``), a comparison's or a ``!x``'s (``bool``); None for
    any other expression."""
    if expr.type in ("true", "false"):
        return "bool"
    if expr.type in ("interpreted_string_literal", "raw_string_literal"):
        return "string"
    if expr.type == "nil":
        return "nil"
    if expr.type == "binary_expression":   # a comparison or a logical operator: a bool
        operator = expr.child_by_field_name("operator")
        return "bool" if operator is not None and operator.type in _COMPARISONS else None
    if expr.type == "unary_expression" and (expr.text or b"").startswith(b"!"):
        return "bool"
    while expr.type == "unary_expression" and expr.named_child_count == 1 and (expr.text or b"")[:1] in (b"-", b"+"):
        expr = expr.named_children[0]
    return "number" if expr.type in _GO_NUMBER_LITERALS else None


def _go_takes(kind: str | None, literal: str | None) -> bool:
    """May a result of ``kind`` be this literal (``return 0`` from a ``bool`` function may not, ``return nil`` from a
    ``string`` one may not)?"""
    if kind is None or literal is None:
        return True
    if kind in ("error", "nillable"):
        return literal == "nil"
    return kind == literal


_TS_EMPTY = frozenset({"void", "undefined", "any", "unknown"})   # types a bare ``return;`` gives a value of
_TS_FULL = frozenset({"boolean", "number", "string", "bigint", "symbol", "object"})


def _ts_fits(function: tree_sitter.Node, ret: tree_sitter.Node) -> bool:
    """A TypeScript ``return;``, ``return undefined`` or ``return null`` against the function's declared return
    type: refused where the type surely has no such value (``boolean``, ``string[]``, a type predicate ``x is T``,
    ``Promise<number>`` of an ``async`` function); a generator, a type the file names (an alias may hold
    ``undefined``) or a type parameter is not judged. (With ``strictNullChecks`` off TypeScript lets ``undefined``
    through, but a declared ``boolean`` that gets nothing is still not what the author meant.)"""
    values = [c for c in ret.named_children if c.type != "comment"]
    value = values[0].type if values else "undefined"
    if value not in ("undefined", "null") or values and len(values) > 1 or function.type.startswith("generator") \
            or any(c.type == "*" for c in function.children):
        return True
    annotation = function.child_by_field_name("return_type")
    if annotation is None or annotation.type == "asserts_annotation":
        return True
    if annotation.type == "type_predicate_annotation":
        return False
    kinds = annotation.named_children
    if not kinds:
        return True
    kind = kinds[-1]
    if kind.type == "generic_type" and any(c.type == "async" for c in function.children):
        name = kind.child_by_field_name("name")
        arguments = kind.child_by_field_name("type_arguments")
        if name is None or name.text != b"Promise" or arguments is None or arguments.named_child_count != 1:
            return True
        kind = arguments.named_children[0]
    return not _ts_full(kind, value)


def _ts_full(kind: tree_sitter.Node, value: str) -> bool:
    """Has the type ``kind`` surely no ``value`` (``undefined`` or ``null``)?"""
    if kind.type == "union_type":
        return all(_ts_full(member, value) for member in kind.named_children)
    if kind.type == "parenthesized_type":
        return all(_ts_full(member, value) for member in kind.named_children)
    if kind.type == "predefined_type":
        name = (kind.text or b"").decode()
        return name in _TS_FULL or name == "never"
    if kind.type == "literal_type":
        return (kind.text or b"") not in (b"null", b"undefined")
    return kind.type in ("array_type", "tuple_type", "object_type", "function_type")


def _go_results(result: tree_sitter.Node | None) -> tuple[int, bool]:
    """How many values a Go function returns, and whether they are named."""
    if result is None:
        return 0, False
    if result.type != "parameter_list":
        return 1, False
    count, named = 0, False
    for declaration in result.named_children:
        if declaration.type not in ("parameter_declaration", "variadic_parameter_declaration"):
            continue
        names = [c for c in declaration.children_by_field_name("name")]
        named = named or bool(names)
        count += max(1, len(names))
    return count, named


def _rust_fits(function: tree_sitter.Node, node: tree_sitter.Node) -> bool:
    result = function.child_by_field_name("return_type")
    unit = result is None or result.type == "unit_type"
    if node.type == "try_expression":
        return not unit
    value = node.named_children[0] if node.named_children else None
    if value is None:   # ``return;`` gives ``()``: wrong unless ``()`` may be what the function returns
        return unit or result is None or result.type in ("never_type", "abstract_type") or _generic(function, result)
    if not unit:
        return _rust_value_fits(function, value)
    if value.type in _RUST_LITERALS:
        return False
    if value.type == "identifier" and value.text == b"None":
        return False
    if value.type == "call_expression":
        callee = value.child_by_field_name("function")
        return not (callee is not None and callee.type == "identifier"
                    and callee.text is not None and callee.text.decode() in _RUST_VALUES)
    return True


def _generic(function: tree_sitter.Node, result: tree_sitter.Node) -> bool:
    """Is the return type one of the function's type parameters (``-> T``: ``()`` may be it)?"""
    parameters = function.child_by_field_name("type_parameters")
    if parameters is None or result.type != "type_identifier":
        return False
    names = (p.child_by_field_name("name") for p in parameters.named_children if p.type == "type_parameter")
    return any(name is not None and name.text == result.text for name in names)


def unfinished(spec: LanguageSpec, text: str, at: int) -> bool:
    """Does the function whose body holds offset ``at`` declare a value and its body end without one? Go: results
    declared and the body's last statement not a terminating one (the spec's: a ``return``, a ``panic(..)``, an
    ``if`` with an ``else`` that both end so, a ``for`` without a condition or a ``break``, ...), a compile error
    ("missing return"). Rust: a return type other than ``()`` and ``!`` and the body ending in a statement (``x =
    y;``, ``let``, a ``while``) that neither gives nor leaves with a value ("expected T, found ()"). False where
    nothing is certain (another language, no code around, a parse error)."""
    if spec.name not in ("go", "rust"):
        return False
    region = _top_level_around(text, at, at)
    if region is None:
        return False
    lo, hi = region
    head = text[lo:at].encode("utf-8", "surrogatepass")
    tree = parse(spec, head + text[at:hi].encode("utf-8", "surrogatepass"))
    if tree is None or tree.root_node.has_error:
        return False
    node = tree.root_node.descendant_for_byte_range(len(head), len(head))
    while node is not None and node.type not in _FUNCTIONS[spec.name]:
        node = node.parent
    if node is None or node.type in ("closure_expression", "async_block"):
        return False
    body = node.child_by_field_name("body")
    if body is None:
        return False
    last = [c for c in body.named_children if "comment" not in c.type]
    if spec.name == "go":
        return _go_results(node.child_by_field_name("result"))[0] > 0 and not _go_terminates(body)
    result = node.child_by_field_name("return_type")
    if result is None or result.type in ("unit_type", "never_type"):
        return False
    return not last or _rust_gives_nothing(last[-1])


def _go_terminates(statement: tree_sitter.Node) -> bool:
    """Is ``statement`` a terminating statement (the Go specification's list)?"""
    kind = statement.type
    if kind in ("return_statement", "goto_statement"):
        return True
    if kind == "expression_statement":
        call = statement.named_children[0] if statement.named_children else None
        callee = call.child_by_field_name("function") if call is not None and call.type == "call_expression" else None
        return callee is not None and callee.type == "identifier" and callee.text == b"panic"
    if kind == "block":
        inner = [c for c in statement.named_children if "comment" not in c.type]
        if inner and inner[-1].type == "statement_list":
            inner = [c for c in inner[-1].named_children if "comment" not in c.type]
        return bool(inner) and _go_terminates(inner[-1])
    if kind == "if_statement":
        then, other = statement.child_by_field_name("consequence"), statement.child_by_field_name("alternative")
        return then is not None and other is not None and _go_terminates(then) and _go_terminates(other)
    if kind == "labeled_statement":
        inner = [c for c in statement.named_children if c.type != "label_name" and "comment" not in c.type]
        return bool(inner) and _go_terminates(inner[-1])
    if kind == "for_statement":
        clause = next((c for c in statement.named_children if c.type in ("for_clause", "range_clause")), None)
        condition = clause is None and any(c.type not in ("block", "comment") for c in statement.named_children)
        looping = clause is None and not condition or clause is not None and clause.type == "for_clause" \
            and clause.child_by_field_name("condition") is None
        return looping and not _breaks(statement)
    if kind in ("expression_switch_statement", "type_switch_statement", "select_statement"):
        cases = [c for c in statement.named_children if c.type.endswith(("case", "clause"))]
        if not any(c.type.startswith("default") for c in cases) and kind != "select_statement" or _breaks(statement):
            return False
        for case in cases:
            body = [c for c in case.named_children if c.type not in ("comment",)]
            lists = [c for c in body if c.type == "statement_list"]
            stmts = [c for c in (lists[-1].named_children if lists else []) if "comment" not in c.type]
            if not stmts or not (_go_terminates(stmts[-1]) or stmts[-1].type == "fallthrough_statement"):
                return False
        return True
    return False


def _breaks(statement: tree_sitter.Node) -> bool:
    """Has this loop, switch or select a ``break`` of its own (not an inner loop's, switch's or select's; a function
    literal's are its own)? A labeled ``break`` anywhere inside counts (it may name this one)."""
    stack = [(c, False) for c in statement.named_children]
    while stack:
        node, nested = stack.pop()
        if node.type == "break_statement":
            if node.named_child_count or not nested:
                return True
            continue
        if node.type != "func_literal":
            stack.extend((c, nested or node.type in _GO_BREAKABLE) for c in node.named_children)
    return False


_GO_BREAKABLE = frozenset({"for_statement", "expression_switch_statement", "type_switch_statement",
                           "select_statement"})
_RUST_DIVERGING = frozenset({"panic", "unreachable", "todo", "unimplemented", "bail"})


def _rust_gives_nothing(last: tree_sitter.Node) -> bool:
    """Does a Rust function body that ends with ``last`` end with no value (``()``), not leaving by a ``return``, a
    panic or a call to ``exit``?"""
    if last.type in ("let_declaration", "attribute_item") or last.type.endswith("_item"):
        return True
    if last.type != "expression_statement":
        return False   # an expression: the block's value
    inner = last.named_children[0] if last.named_children else None
    if inner is None:
        return True
    if not (last.text or b"").rstrip().endswith(b";"):
        return inner.type in ("while_expression", "for_expression")   # if, match, loop, a block: their value
    if inner.type in ("return_expression", "break_expression", "continue_expression", "loop_expression"):
        return False
    if inner.type == "macro_invocation":
        name = inner.child_by_field_name("macro")
        return (name.text or b"").decode().rsplit("::", 1)[-1] not in _RUST_DIVERGING if name is not None else False
    if inner.type == "call_expression":
        callee = inner.child_by_field_name("function")
        return (callee.text or b"").decode().rsplit("::", 1)[-1] not in ("exit", "abort") if callee else False
    return True


VALUE_RETURN = re.compile(r"[ \t]*return\b(?![ \t]*(?:;|$|//|#))")   # a line that returns a value (``None`` too)


def returns_no_value(typed: str) -> Callable[[str], bool]:
    """A check that passes a fill (after ``typed``, the code before it on its line) none of whose lines returns a
    value: for a function that takes none (a constructor, ``paramlines.constructor_check``; a Python test,
    ``returns_in_a_test``)."""
    def fits(fill: str) -> bool:
        return not any(VALUE_RETURN.match(line) for line in (typed + fill).split("\n"))
    return fits


_DEF = re.compile(r"(?:async[ \t]+)?def[ \t]+(\w+)")


def returns_in_a_test(spec: LanguageSpec, text: str, start: int) -> Callable[[str], bool] | None:
    """For a fill at ``start`` of ``text`` in a Python test (the function around the cursor's line is named
    ``test...``): ``returns_no_value``. A test returns nothing: pytest warns of a test that returns a value, unittest
    ignores the value, and the assertion the line should be is lost (on the development sets' holes 25 such fills
    were considered in tests, none right, and no test's line was such a return). None for another language."""
    if spec.name != "python":
        return None
    line_start = text.rfind("\n", 0, start) + 1
    head = text[line_start:start]
    no_value = returns_no_value(head)

    def enclosing(width: int) -> str | None:
        """The name of the function whose body has a line at ``width`` columns at the cursor (None: none)."""
        end = line_start
        for _ in range(400):   # lines read upwards, at most
            if end <= 0:
                return None
            begin = text.rfind("\n", 0, end - 1) + 1
            line = text[begin:end].rstrip("\r\n")
            end = begin
            code = line.lstrip(" \t")
            if not code or code.startswith("#") or len(line) - len(code) >= width:
                continue
            found = _DEF.match(code)
            if found:
                return found.group(1)
            if code.startswith(("class ", "class\t")) or len(line) == len(code):
                return None
            if code[0].isalpha() and code.rstrip().endswith(":"):   # a block around the line (``if x:``, ``with``):
                width = len(line) - len(code)                       # its function is further up
        return None

    def fits(fill: str) -> bool:
        if no_value(fill):
            return True
        line = (head + fill).split("\n", 1)[0]
        name = enclosing(len(line) - len(line.lstrip(" \t")))
        return name is None or not name.startswith("test")
    return fits


# A bare ``return`` where the function's other returns all give a value (``bare_return_check``): per language (its
# grammar, or a plain-text language's check grammar), the nodes that are a function of their own and the nodes that
# are a return. Go and Rust are not here: ``returns_check`` reads their signatures. Nor JavaScript and TypeScript:
# their callbacks leave early with a bare return after ``reject(err)`` in functions that return values (on the
# development holes typed to the first letters of ``return``, the check changed 4 of their fills: 1 right lost,
# none gained).
_OWN_FUNCTIONS = {
    "python": frozenset({"function_definition", "lambda"}),
    "java": frozenset({"method_declaration", "constructor_declaration", "lambda_expression", "static_initializer"}),
    "c": frozenset({"function_definition"}),
    "cpp": frozenset({"function_definition", "lambda_expression"}),
    "lua": frozenset({"function_declaration", "function_definition"}),
    "ruby": frozenset({"method", "singleton_method", "lambda"}),   # a block's ``return`` leaves its method
    "perl": frozenset({"subroutine_declaration_statement", "anonymous_subroutine_expression"}),
}
# every language's functions, whose bodies are their own scopes (``unused`` reads a local's scope by them)
FUNCTIONS_OF = {**_OWN_FUNCTIONS, **_FUNCTIONS, "javascript": _TS_FUNCTIONS, "typescriptreact": _TS_FUNCTIONS}
_RETURN_NODES = {"ruby": "return", "perl": "return_expression"}   # else ``return_statement``
BARE_RETURN = re.compile(r"[ \t]*return[ \t]*;?[ \t]*")


def bare_return_check(spec: LanguageSpec | None, text: str, start: int, end: int) -> Callable[[str], bool] | None:
    """For a fill of ``text[start:end]``: a check that refuses a fill that makes the cursor's line a bare ``return``
    (``return;``) in a function whose other returns all give a value, or as the last statement of the function's own
    body (``_ends_body``: it does nothing there). Among returns of a value it does not compile in Java and C, and in
    Python PEP 8 asks for all or none; on the development holes, typed to the first letters of ``return``, such a
    fill was rarely the line (the user was typing a return of a value). A function with another bare return, or with
    no other return, takes one before its last statement, and so does code outside every function. ``spec``: the
    grammar that reads ``text`` (a plain-text language's check grammar); None: nothing to check."""
    if spec is None or spec.name not in _OWN_FUNCTIONS:
        return None
    line_start, typed, rest, lo, hi = around(text, start, end)
    verdict: list[bool] = []   # the same for every bare return here: worked out once

    def fits(fill: str) -> bool:
        line = line_written(typed, fill, rest)
        if line is None or not BARE_RETURN.fullmatch(line):
            return True
        if not verdict:
            verdict.append(_bare_return_fits(spec, text[lo:start] + fill + text[end:hi], line_start - lo))
        return verdict[0]
    return fits


def around(text: str, start: int, end: int) -> tuple[int, str, str, int, int]:
    """For a hole ``text[start:end]``: where its line starts, the line's text before and after it, and the region
    read around it: the lines within ``MAX_REGION`` characters each side (a function that reaches further: its code
    there is not read)."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    typed, rest = text[line_start:start], text[end:len(text) if line_end < 0 else line_end]
    lo = 0 if start <= MAX_REGION else text.find("\n", start - MAX_REGION, line_start) + 1
    hi = text.rfind("\n", end, end + MAX_REGION) if len(text) - end > MAX_REGION else len(text)
    return line_start, typed, rest, lo, len(text) if hi < 0 else hi


def _return_at(spec: LanguageSpec, text: str, line_start: int) -> tuple[tree_sitter.Node, tree_sitter.Node] | None:
    """The return on the line at ``line_start`` of ``text`` and the function it returns from (``_OWN_FUNCTIONS``),
    or None (no grammar, no return there, or none around it)."""
    tree = parse(spec, text)
    if tree is None:
        return None
    code = line_start + len(text[line_start:]) - len(text[line_start:].lstrip(" \t"))
    at = len(text[:code].encode("utf-8", "surrogatepass"))
    kind, functions = _RETURN_NODES.get(spec.name, "return_statement"), _OWN_FUNCTIONS[spec.name]
    node: tree_sitter.Node | None = tree.root_node.descendant_for_byte_range(at, at)
    while node is not None and not (node.is_named and node.type == kind):   # (Ruby's keyword is a ``return`` too)
        node = node.parent
    own = node
    while node is not None and node.type not in functions:
        node = node.parent
    return None if own is None or node is None else (own, node)


def line_written(typed: str, fill: str, rest: str) -> str | None:
    """The one line of code a fill writes at the cursor: the line typed before it, the fill, and the rest of the line
    after it unless the fill ends its own line (a whole line inserted: ``    return -1;\n``); None when it writes
    several lines of code or none."""
    written = typed + fill if fill.endswith("\n") else typed + fill + rest
    lines = [line for line in written.split("\n") if line.strip()]
    return lines[0].rstrip("\r") if len(lines) == 1 else None


def _bare_return_fits(spec: LanguageSpec, text: str, line_start: int) -> bool:
    """Whether the bare return on the line at ``line_start`` of ``text`` fits its function: one of its other returns
    is bare too, or none gives a value (returns in functions inside it are theirs); and it is not the last statement
    of the function's own body, where it does nothing (the function ends there anyway: on the plain-text development
    holes, six ways, none of the 48 such bare returns offered was the line)."""
    found = _return_at(spec, text, line_start)
    if found is None:
        return True
    own, node = found
    if _ends_body(own, node):
        return False
    kind, functions = _RETURN_NODES.get(spec.name, "return_statement"), _OWN_FUNCTIONS[spec.name]
    valued = bare = 0
    stack = list(node.children)
    while stack:
        child = stack.pop()
        if child.type in functions:
            continue
        if child.is_named and child.type == kind and child.start_byte != own.start_byte:
            if any(c.type != "comment" for c in child.named_children):
                valued += 1
            else:
                bare += 1
        stack.extend(child.children)
    return bare > 0 or valued == 0


def _ends_body(statement: tree_sitter.Node, function: tree_sitter.Node) -> bool:
    """Is ``statement`` (a return, or Perl's inside its expression statement) the last statement, comments aside, of
    ``function``'s own body (not of a block inside it: an ``if``'s early return)?"""
    if statement.parent is not None and statement.parent.type == "expression_statement":
        statement = statement.parent
    body = statement.parent
    if body is None or body != function and body.parent != function:
        return False
    return not any(c.start_byte > statement.start_byte and "comment" not in c.type for c in body.named_children)


# A ``return`` of a value its function cannot give, in Java, C and C++ (their check grammars read the function's
# declared type): any value from a ``void`` function or a Java constructor or static initializer; in Java, a literal
# of another kind than the declared type (``return false;`` from ``String getKey()``, ``return null;`` from an ``int``
# method, ``return -1;`` from a ``Comparator<T>`` one). On the plain-text development holes, whole lines filled in a
# workspace, 62 of Java's 65 constant returns offered were wrong, many of them of a kind the method cannot return.
_VOID_ONLY = frozenset({"constructor_declaration", "static_initializer"})   # Java's: a value never
_BOXES_ANY = frozenset({"Object", "Comparable", "Serializable", "Constable", "ConstantDesc"})
_BOXES_NUMBER = frozenset({"Integer", "Long", "Short", "Byte", "Character", "Double", "Float", "Number"}) | _BOXES_ANY
_BOXES_BOOLEAN = frozenset({"Boolean"}) | _BOXES_ANY
_JAVA_LITERALS = {**dict.fromkeys(("decimal_integer_literal", "hex_integer_literal", "octal_integer_literal",
                                    "binary_integer_literal", "decimal_floating_point_literal",
                                    "hex_floating_point_literal", "character_literal"), "number"),
                  "true": "boolean", "false": "boolean", "null_literal": "null", "string_literal": "string",
                  "text_block": "string"}   # a literal's node type -> its kind (a character is a number)


def value_return_check(spec: LanguageSpec | None, text: str, start: int, end: int) -> Callable[[str], bool] | None:
    """For a fill of ``text[start:end]`` in Java, C or C++ (``spec``: the language's check grammar): a check that
    refuses a fill that makes the cursor's line a ``return`` of a value its function cannot give (above). Read as
    ``bare_return_check`` reads its function: within ``MAX_REGION`` characters each side, parsed only for a fill
    whose line is such a return; whatever is not certain is accepted (a lambda, a parse with an error there, a named
    type Java may box into). None: another language."""
    if spec is None or spec.name not in ("java", "c", "cpp"):
        return None
    line_start, typed, rest, lo, hi = around(text, start, end)

    def fits(fill: str) -> bool:
        line = line_written(typed, fill, rest)
        if line is None or not VALUE_RETURN.match(line):
            return True
        return _value_return_fits(spec, text[lo:start] + fill + text[end:hi], line_start - lo)
    return fits


def _value_return_fits(spec: LanguageSpec, text: str, line_start: int) -> bool:
    found = _return_at(spec, text, line_start)
    if found is None or found[0].has_error:
        return True
    node, function = found
    value = next((c for c in node.named_children if c.type != "comment"), None)
    if value is None:
        return True
    if spec.name != "java":   # C, C++: a ``void`` function's (not a ``void *`` one's)
        kind, declarator = function.child_by_field_name("type"), function.child_by_field_name("declarator")
        return not (kind is not None and kind.type == "primitive_type" and kind.text == b"void"
                    and declarator is not None and declarator.type == "function_declarator")
    if function.type in _VOID_ONLY:
        return False
    if function.type != "method_declaration":
        return True   # a lambda's type is inferred
    declared = function.child_by_field_name("type")
    if declared is None:
        return True
    if declared.type == "void_type":
        return False
    made = _java_literal(value)
    if made is None:
        return True
    if declared.type == "boolean_type":
        return made == "boolean"
    if declared.type in ("integral_type", "floating_point_type"):
        return made == "number"
    if declared.type == "array_type":
        return made == "null"
    base = declared.named_children[0] if declared.type == "generic_type" and declared.named_children else declared
    if base.type not in ("type_identifier", "scoped_type_identifier"):
        return True   # an annotated type (``@Nullable Integer``), another kind: not judged
    name = (base.text or b"").decode().rsplit(".", 1)[-1]   # ``java.lang.Integer``, ``Comparable<T>``: the class
    if made == "number":
        return name in _BOXES_NUMBER
    if made == "boolean":
        return name in _BOXES_BOOLEAN
    if made == "string":
        return name not in _BOXES_NUMBER - _BOXES_ANY and name != "Boolean"
    return True   # ``null`` for a reference


def _java_literal(value: tree_sitter.Node) -> str | None:
    """The kind of a Java literal value: ``number`` (a character too), ``boolean``, ``null``, ``string``; None for
    anything else."""
    value = _unparenthesized(value)
    if value.type == "unary_expression" and value.named_child_count == 1 and (value.text or b"")[:1] in (b"-", b"+"):
        value = value.named_children[0]
    return _JAVA_LITERALS.get(value.type)
