"""Language ids -> tree-sitter grammars (one wheel per grammar) and the few syntax facts the engine needs."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import PurePath

import tree_sitter


@dataclass(frozen=True)
class LanguageSpec:
    name: str
    module: str                       # grammar wheel module
    function: str = "language"        # its function returning the grammar pointer
    line_comment: str = "#"
    block_opener: str = ":"           # a line ending with this opens an indented body
    compound: frozenset[str] = frozenset()  # statement types whose ':' / '{' opens a body


_PY_COMPOUND = frozenset({
    "function_definition", "class_definition", "if_statement", "elif_clause", "else_clause",
    "for_statement", "while_statement", "with_statement", "try_statement", "except_clause",
    "finally_clause", "match_statement", "case_clause", "decorated_definition",
})

_SPECS = {
    "python": LanguageSpec("python", "tree_sitter_python", compound=_PY_COMPOUND),
    "javascript": LanguageSpec("javascript", "tree_sitter_javascript", line_comment="//", block_opener="{"),
    "typescript": LanguageSpec("typescript", "tree_sitter_typescript", "language_typescript", "//", "{"),
    "typescriptreact": LanguageSpec("typescriptreact", "tree_sitter_typescript", "language_tsx", "//", "{"),
    "go": LanguageSpec("go", "tree_sitter_go", line_comment="//", block_opener="{"),
    "rust": LanguageSpec("rust", "tree_sitter_rust", line_comment="//", block_opener="{"),
}
_ALIASES = {"javascriptreact": "javascript", "js": "javascript", "jsx": "javascript", "ts": "typescript",
            "tsx": "typescriptreact", "py": "python", "python3": "python", "golang": "go", "rs": "rust"}
_EXTENSIONS = {".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
               ".jsx": "javascript", ".ts": "typescript", ".mts": "typescript", ".tsx": "typescriptreact",
               ".go": "go", ".rs": "rust"}

PLAIN = LanguageSpec("plaintext", "", line_comment="", block_opener="")


def spec_for(language_id: str) -> LanguageSpec:
    """The spec for an LSP language id; ``PLAIN`` (no grammar) for anything unknown."""
    key = (language_id or "").lower()
    return _SPECS.get(_ALIASES.get(key, key), PLAIN)


def language_for_path(path: str) -> str:
    return _EXTENSIONS.get(PurePath(path).suffix.lower(), "plaintext")


@functools.cache
def parser_for(name: str) -> tree_sitter.Parser | None:
    spec = _SPECS.get(name)
    if spec is None:
        return None
    module = __import__(spec.module)
    return tree_sitter.Parser(tree_sitter.Language(getattr(module, spec.function)()))


def parse(spec: LanguageSpec, text: str) -> tree_sitter.Tree | None:
    parser = parser_for(spec.name)
    return parser.parse(text.encode("utf-8", "surrogatepass")) if parser else None


def error_count(tree: tree_sitter.Tree) -> int:
    """ERROR and MISSING nodes in ``tree``."""
    return len(error_spans(tree))


def error_spans(tree: tree_sitter.Tree) -> list[tuple[int, int]]:
    """Byte ranges of the ERROR and MISSING nodes in ``tree`` (outermost ones)."""
    if not tree.root_node.has_error:
        return []
    spans, cursor, descend = [], tree.walk(), True
    while True:
        node = cursor.node
        if descend and (node.type == "ERROR" or node.is_missing):
            spans.append((node.start_byte, node.end_byte))
        if descend and node.has_error and cursor.goto_first_child():
            continue
        if cursor.goto_next_sibling():
            descend = True
            continue
        if not cursor.goto_parent():
            return spans
        descend = False
