"""One-line holes from held-out files, the way the development sets build them (``benchmarks.code_lines``):
a statement inside a function body that is its whole line (no bare strings), under 100 characters."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

from ..languages import parse, spec_for
from .files import SourceFile

FUNCTIONS = {
    "python": {"function_definition"},
    "javascript": {"function_declaration", "function_expression", "arrow_function", "method_definition",
                   "generator_function_declaration", "function"},
    "go": {"function_declaration", "method_declaration", "func_literal"},
    "rust": {"function_item", "closure_expression"},
}
STATEMENTS = {
    "python": {"expression_statement", "return_statement", "raise_statement", "assert_statement", "pass_statement",
               "break_statement", "continue_statement", "delete_statement", "global_statement",
               "nonlocal_statement", "import_statement", "import_from_statement"},
    "javascript": {"expression_statement", "lexical_declaration", "variable_declaration", "return_statement",
                   "throw_statement", "break_statement", "continue_statement"},
    "go": {"expression_statement", "short_var_declaration", "assignment_statement", "return_statement",
           "inc_statement", "dec_statement", "go_statement", "defer_statement", "var_declaration",
           "const_declaration", "send_statement", "break_statement", "continue_statement"},
    "rust": {"let_declaration", "expression_statement"},
}
for _ts in ("typescript", "typescriptreact"):
    FUNCTIONS[_ts], STATEMENTS[_ts] = FUNCTIONS["javascript"], STATEMENTS["javascript"]
_STRINGS = ("string", "template_string", "string_literal", "raw_string_literal", "interpreted_string_literal")


@dataclass(frozen=True)
class LineHole:
    name: str        # "path:line" (1-based)
    language: str
    prompt: str      # the text before the line
    suffix: str      # the text after it
    solution: str    # the line, newline included


def one_line_statements(text: str, language: str) -> list[int]:
    """0-based rows whose whole line is one statement inside a function body ([] when the file has errors)."""
    if language not in STATEMENTS:
        return []
    data = text.encode("utf-8")
    tree = parse(spec_for(language), data)
    if tree is None or tree.root_node.has_error:
        return []
    return statement_rows(tree.root_node, text, data, language)


def statement_rows(root, text: str, data: bytes, language: str) -> list[int]:
    """The walk of ``one_line_statements`` over a parsed tree (``data``: ``text`` as UTF-8), for callers with a
    parser of their own (``benchmarks.code_lines`` picks the grammar by file name)."""
    lines = text.splitlines(keepends=True)
    rows: set[int] = set()
    functions, statements = FUNCTIONS[language], STATEMENTS[language]
    stack = [(root, False)]
    while stack:
        node, in_fn = stack.pop()
        if node.type in statements and in_fn and node.start_point[0] == node.end_point[0] and not (
                node.type == "expression_statement" and node.named_child_count == 1
                and node.named_children[0].type in _STRINGS):
            row = node.start_point[0]
            line = lines[row] if row < len(lines) else ""
            segment = data[node.start_byte:node.end_byte].decode("utf-8", "replace").strip()
            if 0 < len(line) < 100 and line.strip() == segment:
                rows.add(row)
        for child in node.children:
            stack.append((child, in_fn or node.type in functions))
    return sorted(rows)


def line_holes(files: Iterable[SourceFile], per_file: int = 40, limit: int = 200, seed: int = 7) -> list[LineHole]:
    """At most ``per_file`` holes per file, ``limit`` in all, shuffled (seeded): the same set every run."""
    rng = random.Random(seed)
    holes: list[LineHole] = []
    for f in files:
        lines = f.text.splitlines(keepends=True)
        rows = one_line_statements(f.text, f.language)
        for i in sorted(rng.sample(rows, min(len(rows), per_file))):
            if "\r" in lines[i]:
                continue
            holes.append(LineHole(f"{f.path}:{i + 1}", f.language, "".join(lines[:i]), "".join(lines[i + 1:]),
                                  lines[i]))
    rng.shuffle(holes)
    return holes[:limit]
