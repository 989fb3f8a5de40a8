"""Returns the enclosing function cannot take: a fill that parses but would not compile, in Go and Rust.

A neighbour's line or the model's fill is often a ``return`` from a function of another shape: ``return err``
where the function returns ``(T, error)``, ``return nil`` from a function with no results, ``return;`` from a
Rust function that returns a value, ``?`` in a Rust function that returns nothing. Each is a compile error the
parser does not see, and the fill is then not offered (``returns_check``, asked by ``infill._first_valid`` after
the parse, and for a code action's edits by ``validate.edits_keep_parsing``).

Go: a ``return`` with values in a function without results; a bare ``return`` where the results are not named;
a count of values that is not the count of results (one call may return several). Rust: ``return;`` in a function
with a return type other than ``()``; ``?``, ``return Ok(..)``/``Err``/``Some``/``None`` or a literal in a function
without one. Only the innermost function counts: in a Go function literal its own results, in a Rust closure or
``async`` block nothing is checked (their types are inferred).

The code around the hole is found by text, as gofmt and rustfmt lay it out: from the nearest line above that
starts at the first column (a Go ``func``, a Rust ``fn``, ``impl`` or ``mod``) to the first ``}`` at the first column
below. That code alone is parsed with each fill (a few milliseconds at most where a large file takes tens), and the
innermost function around each ``return`` decides. Whatever is not certain is accepted: no such code found (the
hole at the top level), a parse with any error, another language.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import tree_sitter

from .languages import LanguageSpec, parse

MAX_REGION = 20_000   # characters each side of the hole: code around it that reaches further is not checked
_LANGUAGES = frozenset({"go", "rust"})
_FUNCTIONS = {
    "go": frozenset({"function_declaration", "method_declaration", "func_literal"}),
    "rust": frozenset({"function_item", "closure_expression", "async_block"}),
}
_RETURNS = {"go": frozenset({"return_statement"}), "rust": frozenset({"return_expression", "try_expression"})}
_RUST_VALUES = frozenset({"Ok", "Err", "Some"})
_RUST_LITERALS = frozenset({"integer_literal", "float_literal", "string_literal", "raw_string_literal",
                            "char_literal", "boolean_literal"})


def returns_check(spec: LanguageSpec, text: str, start: int, end: int) -> Callable[[str], bool] | None:
    """For a fill of ``text[start:end]`` in a Go or Rust function: does every ``return`` (and Rust ``?``) the
    fill writes fit the function it is in? ``None``: nothing to check (another language, no code around)."""
    if spec.name not in _LANGUAGES:
        return None
    region = _top_level_around(text, start, end)
    if region is None:
        return None
    lo, hi = region
    typed = text[max(lo, text.rfind("\n", 0, start) + 1):start]   # the cursor line's code before the hole
    head = text[lo:start].encode("utf-8", "surrogatepass")
    tail = text[end:hi].encode("utf-8", "surrogatepass")
    line = len(head) - len(typed.encode("utf-8", "surrogatepass"))

    def fits(fill: str) -> bool:
        written = typed + fill
        if "return" not in written and (spec.name != "rust" or "?" not in written):
            return True
        added = fill.encode("utf-8", "surrogatepass")
        tree = parse(spec, head + added + tail)
        if tree is None or tree.root_node.has_error:
            return True
        return all(_fits(spec.name, node)
                   for node in _returns_in(tree.root_node, spec.name, line, len(head) + len(added)))
    return fits


def _top_level_around(text: str, start: int, end: int) -> tuple[int, int] | None:
    """``[lo, hi)``: from the nearest line above ``start``'s line that starts at the first column with code (not a
    comment, a label or an attribute) to the end of the first line below ``end`` that is a ``}`` at the first
    column; None when the first such line above is itself a closing one (the hole is at the top level) or either
    is further than ``MAX_REGION``."""
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
_CLOSE = re.compile(r"^}[ \t]*(?://[^\n]*)?\r?$", re.M)


def _returns_in(node: tree_sitter.Node, language: str, lo: int, hi: int) -> list[tree_sitter.Node]:
    """The returns (and Rust ``?`` expressions) that start inside ``[lo, hi)``."""
    kinds = _RETURNS[language]
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
    function = node.parent
    while function is not None and function.type not in _FUNCTIONS[language]:
        function = function.parent
    if function is None or function.type in ("closure_expression", "async_block"):
        return True
    return _go_fits(function, node) if language == "go" else _rust_fits(function, node)


def _go_fits(function: tree_sitter.Node, ret: tree_sitter.Node) -> bool:
    results, named = _go_results(function.child_by_field_name("result"))
    values = [c for c in ret.named_children if c.type == "expression_list"]
    exprs = values[0].named_children if values else [c for c in ret.named_children if c.type != "comment"]
    if not exprs:
        return results == 0 or named
    if results == 0:
        return False
    if len(exprs) == results:
        return True
    return len(exprs) == 1 and exprs[0].type == "call_expression"   # f() may return several values


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
        return True
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
