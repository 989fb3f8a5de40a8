"""Holes to fill (``...``/``pass`` bodies, TODO lines, not-implemented stubs, ``__``) and the tree-sitter
plumbing the action targets share: a parsed ``Source`` with byte <-> str offsets, body statements.
Tree-sitter bytes stay in here; callers get str offsets. Safe from any thread (``languages.parse``)."""

from __future__ import annotations

import bisect
import re
import threading

import tree_sitter

from .context import indent_unit
from .deliberate import is_deliberate
from .languages import LanguageSpec, document_tree, grammar
from .requests import Hole, HoleKind

MAX_HOLES = 16          # holes filled by one action
_FILE_REACH = 20_000    # chars either side of the cursor searched when the scope is a whole file


_QUERIES = {
    "python": """(pass_statement) @stub (expression_statement (ellipsis)) @stub (raise_statement) @raise
                 (comment) @comment ((identifier) @blank (#match? @blank "^__+$"))""",
    "javascript": """(throw_statement) @raise (comment) @comment ((identifier) @blank (#match? @blank "^__+$"))""",
    "go": """(expression_statement (call_expression)) @raise (comment) @comment
             ((identifier) @blank (#match? @blank "^__+$"))""",
    "rust": """(macro_invocation) @raise (line_comment) @comment ((identifier) @blank (#match? @blank "^__+$"))""",
}
_QUERIES["typescript"] = _QUERIES["typescriptreact"] = _QUERIES["javascript"]
# matched at the start of the statement's text: a statement that only mentions one (`todos.push(todo)`, a string,
# an `if` guarding a raise) is code, not a stub; a message saying so: "not implemented", or one that starts with a
# TODO marker ("TODO", "todo: ..."), not one about to-dos ("Todo not found", "invalid todo id")
_TODO_MESSAGE = r"""(?i:not\s*implemented|unimplemented)|["'`]\s*(?:TODO\b|todo\s*(?:[:!.\-]|["'`]))"""
_RAISE = {"python": re.compile(r"^raise\s+NotImplementedError\b"),
          "javascript": re.compile(rf"(?s)^throw\b.*?(?:{_TODO_MESSAGE})"),
          "go": re.compile(rf'^panic\(\s*(?:"[^"]*(?i:not implemented|unimplemented)|{_TODO_MESSAGE})'),
          "rust": re.compile(r"^(todo|unimplemented)!")}
_RAISE["typescript"] = _RAISE["typescriptreact"] = _RAISE["javascript"]
_TODO = re.compile(r"^(#|//)\s*(TODO|FIXME)\b")
_JS_FUNCTIONS = frozenset({"function_declaration", "function_expression", "generator_function_declaration",
                           "generator_function", "method_definition", "arrow_function"})
_FUNCTIONS = {"python": frozenset({"function_definition"}), "javascript": _JS_FUNCTIONS,
              "typescript": _JS_FUNCTIONS, "typescriptreact": _JS_FUNCTIONS,
              "go": frozenset({"function_declaration", "method_declaration", "func_literal"}),
              "rust": frozenset({"function_item"})}
_JS_CLASSES = frozenset({"class_declaration", "class"})
_CLASSES = {"python": frozenset({"class_definition"}), "javascript": _JS_CLASSES, "typescript": _JS_CLASSES,
            "typescriptreact": _JS_CLASSES, "go": frozenset(), "rust": frozenset({"impl_item", "trait_item"})}
_NO_STUB_BODY = frozenset({"except_clause", "finally_clause", "except_group_clause"})  # `except: pass` is idiom
_local = threading.local()


class Source:
    """A document parsed once, with str <-> byte offsets (tree-sitter counts UTF-8 bytes)."""

    def __init__(self, spec: LanguageSpec, text: str):
        self.spec, self.text = spec, text
        self.data = text.encode("utf-8", "surrogatepass")
        self.tree = document_tree(spec, self.data)   # the engine's job for the action reads it too
        self._chars: list[int] = []   # str index of each non-ASCII character
        self._bytes: list[int] = []   # its byte offset
        self._extra: list[int] = []   # extra bytes up to and including it
        if len(self.data) != len(text):
            extra = 0
            for m in re.finditer(r"[^\x00-\x7f]", text):
                self._chars.append(m.start())
                self._bytes.append(m.start() + extra)
                extra += len(m.group().encode("utf-8", "surrogatepass")) - 1
                self._extra.append(extra)
        self.eol = "\r\n" if "\r\n" in text[:4096] else "\n"

    def to_str(self, byte: int) -> int:
        k = bisect.bisect_left(self._bytes, byte)
        return byte - (self._extra[k - 1] if k else 0)

    def to_byte(self, offset: int) -> int:
        k = bisect.bisect_left(self._chars, offset)
        return offset + (self._extra[k - 1] if k else 0)

    def span(self, node: tree_sitter.Node) -> tuple[int, int]:
        return self.to_str(node.start_byte), self.to_str(node.end_byte)

    def comment_span(self, node: tree_sitter.Node) -> tuple[int, int]:
        """A comment's span without the CR of a CRLF (Python's, Go's and Rust's line comments end after it)."""
        s, e = self.span(node)
        while e > s and self.text[e - 1] == "\r":
            e -= 1
        return s, e

    def line_start(self, offset: int) -> int:
        return self.text.rfind("\n", 0, offset) + 1

    def line_end(self, offset: int) -> int:
        end = self.text.find("\n", offset)
        end = len(self.text) if end < 0 else end
        return end - 1 if end > 0 and self.text[end - 1] == "\r" else end

    def indent_at(self, offset: int) -> str:
        lo = self.line_start(offset)
        line = self.text[lo:self.line_end(lo)]
        return line[:len(line) - len(line.lstrip(" \t"))]

    def indent_unit(self, at: int) -> str:
        """One level of indentation near ``at`` (``context.indent_unit``: its code lines, no comment's), else the
        language's usual one (``context.DEFAULT_INDENT``)."""
        return indent_unit(self.text, at, self.spec.name)


def found_hole(start: int, end: int, label: str, inline: bool = False, indent: str = "", lead: str = "",
               tail: str = "", context: str = "") -> Hole:
    """A hole found in the code: an expression (``inline``, one line) or statements."""
    kind = HoleKind.INLINE if inline else HoleKind.BLOCK
    return Hole(start, end, kind, stop_at_newline=inline, label=label, indent=indent, lead=lead, tail=tail,
                context=context)


def _node_text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _query(spec: LanguageSpec) -> tree_sitter.Query | None:
    cache = _local.__dict__.setdefault("queries", {})
    if spec.name not in cache:
        language = grammar(spec.name)
        source = _QUERIES.get(spec.name)
        cache[spec.name] = tree_sitter.Query(language, source) if language is not None and source else None
    return cache[spec.name]


def statements(block: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The statements of a body (comments left out; Go's statement_list flattened)."""
    out = []
    for child in block.named_children:
        if child.type == "statement_list":
            out.extend(statements(child))
        elif "comment" not in child.type:
            out.append(child)
    return out


def is_docstring(node: tree_sitter.Node) -> bool:
    return (node.type == "expression_statement" and node.named_child_count == 1
            and node.named_children[0].type == "string")


def _sole_body(node: tree_sitter.Node) -> bool:
    """Is ``node`` the whole body of its block (a docstring before it allowed)?"""
    block = node.parent
    if block is None or block.type != "block" or (block.parent is not None and block.parent.type in _NO_STUB_BODY):
        return False
    rest = [s for s in statements(block) if not is_docstring(s)]
    return rest == [node]


def header_blank(src: Source, opener_end: int, end: int, label: str) -> Hole:
    """A body on its header's line (``def f(): ...``, ``{ todo!() }``) moves to its own line."""
    indent = src.indent_at(opener_end)
    unit = src.indent_unit(opener_end)
    if src.spec.block_opener == "{":
        return found_hole(opener_end, end, label, indent=indent + unit, lead=src.eol, tail=src.eol + indent)
    return found_hole(opener_end, end, label, indent=indent + unit, lead=src.eol)


def statement_blank(src: Source, start: int, end: int, label: str) -> Hole | None:
    """The blank for statements ``[start, end)`` alone on their line(s), or alone after their header's opener."""
    lo = src.line_start(start)
    before = src.text[lo:start]
    if not before.strip():
        return found_hole(lo, end, label, indent=before)
    head = before.rstrip()
    if src.spec.block_opener and head.endswith(src.spec.block_opener):
        if src.spec.block_opener == "{":
            close = src.text.find("}", end)
            if close < 0 or src.text[end:close].strip() not in ("", ";"):
                return None
            end = close
        return header_blank(src, lo + len(head), end, label)
    return None


def is_stub(src: Source, node: tree_sitter.Node) -> bool:
    """``pass``, ``...``, ``raise NotImplementedError`` and the other languages' not-implemented stubs."""
    if node.type == "pass_statement" or (node.type == "expression_statement" and node.named_child_count == 1
                                         and node.named_children[0].type == "ellipsis"):
        return True
    raise_re = _RAISE.get(src.spec.name)
    text = _node_text(node)
    return raise_re is not None and node.type != "comment" and bool(raise_re.search(text))


def is_stub_text(spec: LanguageSpec, text: str) -> bool:
    """Is the one statement or comment ``text`` a stub ``find_blanks`` takes for a hole: ``pass``, ``...``, a
    not-implemented raise (``todo!()``, ``panic("not implemented")``), a ``TODO`` / ``FIXME`` comment?"""
    raise_re = _RAISE.get(spec.name)
    code = text.strip().rstrip(";").strip()
    return code in ("pass", "...") and spec.name == "python" or bool(_TODO.match(code)) \
        or raise_re is not None and bool(raise_re.search(code))


def is_todo(comment: str) -> bool:
    """Is the comment a TODO / FIXME marker (``# TODO``, ``// FIXME: ...``), the stub's own line?"""
    return bool(_TODO.match(comment))


def find_blanks(src: Source, start: int, end: int, deliberate: bool = False) -> list[Hole]:
    """Every hole within ``[start, end)``, in document order (a TODO line and the stub right after it merge).
    A deliberate ``pass``/``...`` (engine/deliberate.py) is a hole only with ``deliberate`` (a selection)."""
    query = _query(src.spec)
    if query is None or src.tree is None:
        return []
    cursor = tree_sitter.QueryCursor(query)
    cursor.set_byte_range(src.to_byte(start), src.to_byte(end))
    blanks: list[Hole] = []
    raise_re = _RAISE.get(src.spec.name)
    for name, nodes in cursor.captures(src.tree.root_node).items():
        for node in nodes:
            text = _node_text(node)
            blank = None
            if name == "stub" and _sole_body(node) and (deliberate or not is_deliberate(node)):
                blank = statement_blank(src, *src.span(node), "pass" if node.type == "pass_statement" else "...")
            elif name == "raise" and raise_re is not None and raise_re.search(text):
                target = node.parent if node.parent is not None and node.parent.type == "expression_statement" else node
                blank = statement_blank(src, *src.span(target), "raise")
            elif name == "comment" and _TODO.match(text):
                s, e = src.comment_span(node)
                lo = src.line_start(s)
                if not src.text[lo:s].strip():  # a comment line, not a comment after code
                    blank = found_hole(lo, e, "TODO", indent=src.text[lo:s], context=src.text[lo:e] + src.eol)
            elif name == "blank" and _read(node):
                s, e = src.span(node)
                blank = found_hole(s, e, "__", inline=True)
            if blank is not None and start <= blank.start and blank.end <= end:
                blanks.append(blank)
    return _merge(src.text, sorted(set(blanks), key=lambda b: (b.start, b.end)))


_BINDS = frozenset({"name", "pattern", "alias", "parameters", "parameter"})  # fields that bind a name
_ASSIGNS = frozenset({"assignment", "augmented_assignment", "for_statement", "for_in_clause", "for_in_statement",
                      "assignment_expression", "augmented_assignment_expression", "short_var_declaration",
                      "range_clause", "assignment_statement"})  # their ``left`` binds (a binary operator's reads)
_BINDERS = frozenset({"parameters", "formal_parameters", "lambda_parameters", "parameter_list", "import_statement",
                      "import_from_statement", "import_specifier", "import_clause", "use_declaration",
                      "as_pattern_target"})
_READS = frozenset({"right", "value", "arguments", "argument", "body", "condition", "subscript", "index", "object",
                    "operand"})


def _field(parent: tree_sitter.Node, child: tree_sitter.Node) -> str | None:
    for i, c in enumerate(parent.children):
        if c.id == child.id:
            return parent.field_name_for_child(i)
    return None


def _read(node: tree_sitter.Node) -> bool:
    """Is this ``__`` read as a value (a placeholder)? Not when it is called (``__('Save')``: a translation
    function), imported, a parameter, or bound by an assignment, a declaration or a loop (a throwaway name)."""
    child, parent = node, node.parent
    if parent is not None and parent.type in ("call", "call_expression") and _field(parent, node) == "function":
        return False
    for _ in range(3):
        if parent is None:
            return True
        if parent.type in _BINDERS:
            return False
        field = _field(parent, child)
        if field in _BINDS or field == "left" and parent.type in _ASSIGNS:
            return False
        if field in _READS:
            return True
        child, parent = parent, parent.parent
    return True


def _merge(text: str, blanks: list[Hole]) -> list[Hole]:
    """A TODO line directly above a stub becomes one hole with the TODO as its context; overlaps drop."""
    out: list[Hole] = []
    for b in blanks:
        prev = out[-1] if out else None
        if prev is not None and prev.label == "TODO" and not b.inline and not b.lead \
                and not text[prev.end:b.start].strip() and b.indent == prev.indent:
            out[-1] = found_hole(prev.start, b.end, b.label, indent=b.indent, context=prev.context)
        elif prev is None or b.start >= prev.end:
            out.append(b)
    return out


def enclosing(src: Source, offset: int, types: frozenset[str]) -> list[tree_sitter.Node]:
    """Nodes of ``types`` containing ``offset``, innermost first."""
    if src.tree is None:
        return []
    b = src.to_byte(offset)
    node, found = src.tree.root_node.descendant_for_byte_range(b, b), []
    while node is not None:
        if node.type in types:
            found.append(node)
        node = node.parent
    return found


def scoped_blanks(src: Source, start: int, end: int, whole_file: bool = False) -> tuple[tuple[int, int], list[Hole]]:
    """The holes of a selection (deliberate stubs included: they were selected); with none selected, of
    the innermost function or class around the cursor; of the file around the cursor (the nearest
    ``MAX_HOLES``) only when ``whole_file`` is asked for. Never a hole outside that scope."""
    if end > start:
        return (start, end), find_blanks(src, start, end, deliberate=True)[:MAX_HOLES]
    if whole_file:
        lo = src.line_start(max(0, start - _FILE_REACH))
        hi = src.line_end(min(len(src.text), start + _FILE_REACH))
        return (lo, hi), _nearest(find_blanks(src, lo, hi), start)
    types = _FUNCTIONS.get(src.spec.name, frozenset()) | _CLASSES.get(src.spec.name, frozenset())
    for node in enclosing(src, start, types)[:1]:
        s, e = src.span(node)
        return (s, e), _nearest(find_blanks(src, s, e), start)
    return (start, end), []


def _nearest(blanks: list[Hole], offset: int) -> list[Hole]:
    if len(blanks) <= MAX_HOLES:
        return blanks
    keep = sorted(blanks, key=lambda b: min(abs(b.start - offset), abs(b.end - offset)))[:MAX_HOLES]
    return sorted(keep, key=lambda b: b.start)


def function_types(spec: LanguageSpec) -> frozenset[str]:
    return _FUNCTIONS.get(spec.name, frozenset())
