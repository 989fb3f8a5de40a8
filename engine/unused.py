"""A local nothing reads: a fill that declares a variable its function never mentions again is not offered, where
the code after the hole needs a name nothing defines.

A fill that writes ``const delay = Date.now() - this.delay_;`` where nothing else in the function says ``delay``,
in a function whose next lines read a ``timeout`` nothing defines, is not the line that was taken out: that line
declared what the code after it reads. In Go such a fill does not compile ("declared and not used"); elsewhere
compilers and linters warn (Rust, Ruby, C, luacheck). Where nothing after the hole is missing, the user is writing
new code, whose readers are yet to come: nothing is judged (``names.invented_names`` on
the rest of the function, or of a Lua or Perl file at its top level; C, C++ and Ruby count another function's locals
only, as their names rule does).

On the development holes, with the records of the last runs (Python, JavaScript, TypeScript, Go and Rust typed and
whole, the plain-text sets six ways, C++ two), the check refuses 84 offered fills, none of them right; over the
4,933 lines of the development and code-lines sets put back in their holes it refuses none, and over 6,433 lines of
held-out files that may declare something (``_MAY_DECLARE``) it refused one, Perl's ``my $verbose = 1;`` in a file that
reads ``$Verbose`` (benchmarks/README.md).

``unused_local_check`` reads the code within ``returns.MAX_REGION`` characters each side of the hole with the
language's grammar (a plain-text language's check grammar), and only for a fill whose line may declare one
(``_MAY_DECLARE``). What counts as a declaration, per language (``_declared``): Python's and Ruby's assignment to a
plain name, JavaScript's and TypeScript's ``const``/``let``/``var``, Go's ``:=``, Rust's ``let``, Java's local
variable, C's and C++'s declaration in a function (C++ only of a built-in type or a pointer: a class's constructor
may hold a lock, ``std::lock_guard<std::mutex> lock(m);``), Lua's ``local``, Perl's ``my``. Its scope is the
innermost function around it (``returns.FUNCTIONS_OF``); a declaration in a class's body, or at a module's top level, is
not
judged (another file may read it), except Lua's and Perl's file-level locals, which nothing outside the file sees.
The name is read when any other word of its scope is that name (strings and comments too: Rust's ``"{x}"``; Perl
with any sigil, ``$x[0]`` of ``my @x``). Go refuses a declaration with any name unread; the others one whose names
are all unread. Not judged: a name that starts with ``_`` (an unused one on purpose), a declaration inside a syntax
error, a scope the region cuts, Perl's ``my $self = shift;`` (it takes an argument off ``@_``, read or not).
(Python's ``global x`` in the function is a word ``x``: read.)
"""

from __future__ import annotations

import re
from collections.abc import Callable

import tree_sitter

from .languages import LanguageSpec, parse
from .names import invented_names
from .returns import FUNCTIONS_OF, around, line_written

_FILE_SCOPED = frozenset({"lua", "perl"})   # a file-level ``local``/``my`` is the file's alone
# a class's body or another scope whose names others read: a declaration there is not judged
_STOPS = frozenset({"class_definition", "class_declaration", "class_body", "class", "module", "impl_item",
                    "interface_declaration", "struct_specifier", "enum_declaration", "record_declaration"})
# a line that may declare something, per language (a cheap test before any parse; Java's and C's declarations have
# no keyword of their own, and a statement's keyword starts none: ``return x;``)
_STATEMENT = r"(?!(?:return|throw|goto|case|else|delete|break|continue|yield|do)\b)"
_MAY_DECLARE = {
    "python": re.compile(r"[ \t]*[A-Za-z_]\w*[ \t]*(?::[^=]*)?=(?!=)"),
    "javascript": re.compile(r".*\b(?:const|let|var)\b"),
    "go": re.compile(r".*:="),
    "rust": re.compile(r".*\blet\b"),
    "java": re.compile(rf"[ \t]*{_STATEMENT}(?:final[ \t]+)?[A-Za-z_][\w<>\[\], .?]*[ \t]+[A-Za-z_]\w*[ \t]*[=;]"),
    "c": re.compile(rf"[ \t]*{_STATEMENT}[A-Za-z_][\w \t*&:<>,]*[ \t*&][A-Za-z_]\w*[ \t]*(?:\[[^\]]*\][ \t]*)*[=;,]"),
    "lua": re.compile(r".*\blocal\b"),
    "perl": re.compile(r".*\bmy\b"),
    "ruby": re.compile(r"[ \t]*[a-z_]\w*[ \t]*=(?![=~>])"),
}
_MAY_DECLARE.update(typescript=_MAY_DECLARE["javascript"], typescriptreact=_MAY_DECLARE["javascript"],
                    cpp=_MAY_DECLARE["c"])
_PERL_ARGUMENTS = re.compile(r"=\s*(?:shift\b\s*(?:\(\s*@_\s*\)|@_)?|@_)\s*;?\s*$")   # ``my $self = shift;``


def unused_local_check(spec: LanguageSpec | None, text: str, start: int, end: int) -> Callable[[str], bool] | None:
    """For a fill of ``text[start:end]``: a check that refuses a fill whose line declares a local its function never
    reads (above). ``spec``: the grammar that reads ``text`` (a plain-text language's check grammar); None, or a
    language without the rule: nothing to check."""
    if spec is None or spec.name not in _MAY_DECLARE:
        return None
    line_start, typed, rest, lo, hi = around(text, start, end)
    may_declare = _MAY_DECLARE[spec.name]
    whole = lo == 0 and hi == len(text)
    missing: dict[int, bool] = {}   # per end of a function: whether the code after the hole reads a missing name

    def fits(fill: str) -> bool:
        line = line_written(typed, fill, rest)
        if line is None or not may_declare.match(line):
            return True
        region = text[lo:start] + fill + text[end:hi]
        scope_end = _unread_in(spec, region, line_start - lo, line, whole)
        if scope_end is None:
            return True
        stop = lo + scope_end - len(fill) + end - start   # where that scope ends in ``text`` (the fill taken out)
        if stop not in missing:
            missing[stop] = stop > end and bool(invented_names(spec, text, end, text[end:stop], stop))
        # with nothing missing after it: new code, whose readers the user has yet to write
        return not missing[stop]
    return fits


def _unread_in(spec: LanguageSpec, region: str, line_start: int, line: str, whole: bool) -> int | None:
    """Where (a character offset in ``region``) the scope of a declaration on the line at ``line_start`` of
    ``region`` ends, when that declaration's names are unread (Go: any of them); None when every declaration there
    is read, or none is judged (``whole``: the region is the whole document; else a scope it cuts is not judged)."""
    tree = parse(spec, region)
    if tree is None:
        return None
    data = region.encode("utf-8", "surrogatepass")
    first = len(region[:line_start].encode("utf-8", "surrogatepass"))
    last = first + len(line.encode("utf-8", "surrogatepass"))
    language = spec.name
    if language == "perl" and _PERL_ARGUMENTS.search(line):
        return None   # ``my $self = shift;``: the argument is taken off ``@_`` whether or not it is read
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.end_byte <= first or node.start_byte >= last:
            continue
        stack.extend(node.children)
        if node.start_byte < first:
            continue
        names = _declared(language, node, data)
        if not names or any(n.start_byte >= last for n in names):
            continue
        scope = _scope(language, node)
        if scope is None:
            continue
        if not whole and (scope.type == _ROOT.get(language) or scope.end_byte >= len(data)):
            continue   # the region cuts the scope: what reads the name may be past it
        spans = [(n.start_byte, n.end_byte) for n in names]
        unread = [n for n in names if not _read(language, data, scope, n, spans)]
        if unread and (language == "go" or len(unread) == len(names)):
            return len(data[:scope.end_byte].decode("utf-8", "surrogatepass"))
    return None


_ROOT = {"lua": "chunk", "perl": "source_file"}


def _scope(language: str, node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The function whose local ``node`` declares (Lua's and Perl's file, at their top level), or None: a class's
    body, a module's top level, a syntax error on the way."""
    parent = node.parent
    while parent is not None:
        if parent.type == "ERROR" or parent.type in _STOPS:
            return None
        if parent.type in FUNCTIONS_OF[language]:
            return parent
        if parent.parent is None:
            return parent if language in _FILE_SCOPED else None
        parent = parent.parent
    return None


def _read(language: str, data: bytes, scope: tree_sitter.Node, name: tree_sitter.Node,
          spans: list[tuple[int, int]]) -> bool:
    """Is ``name`` (a declared name's node) another word of ``scope`` (the declaration's other names aside)?"""
    word = data[name.start_byte:name.end_byte].decode("utf-8", "replace")
    if word.startswith("_"):
        return True   # unused on purpose (``_``, ``_unused``)
    if language == "perl":
        pattern = re.compile(rb"[$@%](?:#)?\{?\s*" + re.escape(word.encode()) + rb"\b")   # ``$x``, ``@x``, ``$#x``
    else:
        pattern = re.compile(rb"(?<![\w$])" + re.escape(word.encode()) + rb"(?![\w$])")
    for match in pattern.finditer(data, scope.start_byte, scope.end_byte):
        at = match.end() - len(word.encode())   # where the word starts (after Perl's sigil)
        if not any(lo <= at < hi for lo, hi in spans):
            return True   # (Python's ``global x`` or ``nonlocal x`` is such a word)
    return False


def _declared(language: str, node: tree_sitter.Node, data: bytes) -> list[tree_sitter.Node]:
    """The names ``node`` declares, if it is a declaration of a local (see the module's docstring), else []."""
    kind = node.type
    found: list[tree_sitter.Node] = []
    if language in ("python", "ruby"):
        if kind == "assignment":
            left = node.child_by_field_name("left")
            return [left] if left is not None and left.type == "identifier" else []
        return []
    if language in ("javascript", "typescript", "typescriptreact", "java"):
        if kind not in ("lexical_declaration", "variable_declaration", "local_variable_declaration"):
            return []
        for declarator in node.named_children:
            name = declarator.child_by_field_name("name") if declarator.type == "variable_declarator" else None
            if name is not None and name.type == "identifier":
                found.append(name)
        return found
    if language == "go":
        if kind != "short_var_declaration":
            return []
        left = node.child_by_field_name("left")
        return [] if left is None else [c for c in left.named_children if c.type == "identifier"]
    if language == "rust":
        if kind != "let_declaration":
            return []
        pattern = node.child_by_field_name("pattern")
        if pattern is not None and pattern.type == "mut_pattern":
            pattern = pattern.named_children[0] if pattern.named_children else None
        return [pattern] if pattern is not None and pattern.type == "identifier" else []
    if language in ("c", "cpp"):
        if kind != "declaration" or node.parent is None or node.parent.type != "compound_statement":
            return []
        kind_node = node.child_by_field_name("type")
        for top in node.children_by_field_name("declarator"):
            pointer = False
            part: tree_sitter.Node | None = top
            while part is not None and part.type != "identifier":
                if part.type == "function_declarator":
                    return []   # a function's prototype
                pointer = pointer or part.type == "pointer_declarator"
                value = part.child_by_field_name("value") if part.type == "init_declarator" else None
                if language == "cpp" and value is not None and value.type in ("argument_list", "initializer_list"):
                    return []   # ``T name(args);``, ``T name{args};``: a constructor runs
                part = part.child_by_field_name("declarator")
            if part is None:
                return []
            if language == "cpp" and not pointer and (kind_node is None or kind_node.type != "primitive_type"):
                return []   # a class's object: its constructor and destructor may be the point (a lock's guard)
            found.append(part)
        return found
    if language == "lua":
        if kind != "variable_declaration":
            return []
        stack = list(node.children)
        while stack:
            child = stack.pop()
            if child.type == "identifier" and child.parent is not None and \
                    child.parent.type in ("variable_list", "variable_declaration", "attribute_name_list"):
                found.append(child)
            elif child.type in ("assignment_statement", "variable_list", "attribute_name_list"):
                stack.extend(child.children)
        return found
    if language == "perl":
        if kind != "variable_declaration" or not data[node.start_byte:node.end_byte].startswith(b"my"):
            return []
        stack = list(node.children)
        while stack:
            child = stack.pop()
            if child.type == "varname":
                found.append(child)
            elif child.type in ("scalar", "array", "hash"):
                stack.extend(child.children)
        return found
    return []
