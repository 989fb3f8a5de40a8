"""Invented names: the free names a fill uses that are defined nowhere in the document it goes into.

A fill that reads a name no code in the file binds, imports or receives (and that is no builtin) is almost always
wrong (`return row_row_row`). Python is checked on the filled document's syntax tree: a name counts as defined when
the document binds it (assignment, `def`, `class`, import, `global`/`nonlocal`, `except ... as`,
`for`/`with`/comprehension targets, `match` captures) at the module's level or inside a scope (function, lambda,
class, comprehension) that holds the fill or starts in it (a comprehension or lambda that any of the fill's code is
in: the fill may close it and go on, ``str({k: sel|`` + ``f[k] for k in self})``): a name bound only inside other
functions is their local, and parameters count only inside their own function or lambda (`return self` in a plain
function is invented);
`global`/`nonlocal` names count anywhere; a star import may define anything, and a global the user's own code already
reads (outside the fill, where it is neither a parameter nor another function's local: ``compute`` of ``y =
compute(2)`` in a file that never imports it) is the user's, not an invention. Attributes after `.` are never checked.
The other grammars compare the fill's identifiers with the document's other identifiers and the language's builtins,
keywords and prelude, leaving out the names that functions not holding the fill bind (their parameters and locals: a
real server offered `if (body.length === 0)` where only another function had a `body`); a name those functions only
read is still defined (another file's function, a test's `expect`). Whether a name binds is decided by its place in
its declaration (``const a = b``: ``a`` binds, ``b`` is read); a Go struct literal's keys are its fields, not checked;
a Rust macro's tokens, which tree-sitter leaves unparsed, are read as code (nothing after '.' or '::' is checked, a
closure's parameters, the names its items and ``let`` declare and a name before its type's ``:`` bind); a Rust enum's
variant names itself; a Rust lifetime (``'a``: an identifier in tree-sitter) is not checked; a Rust path's
lower-case root is a crate or a module (``memmap2::Mmap``: Rust needs no ``use`` for a crate), while a glob import
(``use rmp::decode::*``) does not stop the check (on the development set, skipping the check in files with one offered
6 more fills, none right): with the workspace, the items of the module file a glob names are ``defined``
(``engine.rustmods``), and an unresolved glob (an external crate's) defines nothing; the browser's and Node's globals
are in the JavaScript prelude (``Image``, ``indexedDB``), and in a test file (one that reads ``describe``, ``it``,
``test`` or ``suite``) its framework's globals (mocha's ``context``, jest's ``beforeAll``); JSX's lowercase tags
(``<div>``) are the page's elements, not names; a type the document names (a ``type_identifier``) is defined for a
fill that reads it as a value (Go's conversion ``TB(true)``, Rust's ``Meters(5)`` and ``E::B(1)``, ``new Foo()``).
A Go file reads the top-level names of its package's other files without an import: with the request's workspace
(``engine.worklines``) and the document's path there, the names the same directory's files with the same ``package``
clause define (``package_defines``: a scan of each file's lines as the workspace counts it, not a parse per fill; the
folder's Go files the workspace does not count, generated ones over its 200 KB per file, are scanned on disk) are not
invented (``defined``). The languages filled as plain text are read by their check grammars: Java's lower-case names as
JavaScript's; in C, C++ and Ruby only another function's local is invented (``_LOCALS_ONLY``), and a Ruby
instance variable nothing else in the document names (``_invented_ivars``); Lua and Perl as the other grammars, with
their hosts' globals and special variables as preludes (a Perl variable a ``use`` statement names is defined: ``use
Config`` gives ``%Config``, ``use vars qw($x)`` a ``$x``). A name counts as the fill's when any of it
is in the fill: one the user began before the cursor (``brea`` + ``ded_1(x)``) or one the fill ends inside (the rest
after the hole) is checked as the whole word the filled document holds (``breaded_1``), the word the user typed whole
before a fill that starts with ``(`` is not.
A Python document that does not parse (the user's own error elsewhere) is judged with the lines Python's errors name
masked (``pass`` or blank), a few at most; a document that still does not parse, or whose error is on the hole's
lines, reports nothing (nothing to compare).
"""

from __future__ import annotations

import ast
import bisect
import builtins
import functools
import keyword
import re
import sys
from collections.abc import Callable
from typing import Any

from . import memory, pyparse
from .languages import LanguageSpec, parse

_PY_BUILTINS = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | {
    "__name__", "__file__", "__doc__", "__spec__", "__loader__", "__package__", "__builtins__", "__class__",
    "__debug__", "__path__", "__annotations__", "__dict__", "__module__", "__qualname__"}

_JS = frozenset("""
    undefined null true false this super arguments globalThis window document console Math JSON Object Array
    String Number Boolean Symbol BigInt Date RegExp Error TypeError RangeError SyntaxError ReferenceError
    Promise Map Set WeakMap WeakSet Proxy Reflect Intl parseInt parseFloat isNaN isFinite NaN Infinity
    setTimeout clearTimeout setInterval clearInterval require module exports process Buffer fetch
    encodeURIComponent decodeURIComponent encodeURI decodeURI queueMicrotask structuredClone
    Uint8Array Int32Array Float64Array ArrayBuffer DataView TextEncoder TextDecoder URL
    any unknown never void string number boolean object symbol bigint keyof typeof readonly Record Partial
    Required Pick Omit ReturnType Readonly Exclude Extract NonNullable Awaited
    self global __dirname __filename eval Function Iterable AsyncIterable Iterator AsyncIterator Generator
    PromiseLike ArrayLike Parameters InstanceType ConstructorParameters ThisType Uppercase Lowercase Capitalize
    Uncapitalize NoInfer WeakRef FinalizationRegistry AggregateError EvalError URIError Atomics SharedArrayBuffer
    Int8Array Int16Array Uint16Array Uint32Array Uint8ClampedArray Float32Array BigInt64Array BigUint64Array
    URLSearchParams AbortController AbortSignal Blob File FileReader FormData Headers Request Response
    WebSocket Worker XMLHttpRequest EventTarget Event CustomEvent atob btoa navigator location history
    localStorage sessionStorage indexedDB performance crypto Image Audio Element HTMLElement Node NodeList
    MutationObserver IntersectionObserver ResizeObserver requestAnimationFrame cancelAnimationFrame
    getComputedStyle matchMedia alert confirm prompt""".split())
_GO = frozenset("""
    true false nil iota append cap close complex copy delete imag len make new panic print println real
    recover min max clear bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64
    rune string uint uint8 uint16 uint32 uint64 uintptr any comparable _""".split())
_RUST = frozenset("""
    self Self super crate true false Some None Ok Err Option Result Vec String Box Rc Arc RefCell Cell
    HashMap HashSet BTreeMap BTreeSet VecDeque println print eprintln eprint format vec panic assert
    assert_eq assert_ne unreachable todo unimplemented write writeln matches dbg Default Clone Copy Debug
    Iterator IntoIterator From Into ToString ToOwned PartialEq Eq PartialOrd Ord Hash Drop Fn FnMut FnOnce
    Send Sync Sized AsRef std core alloc i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool
    char str _ as async await break const continue dyn else enum extern fn for if impl in let loop match mod move
    mut pub ref return static struct trait type unsafe use where while""".split())
# the globals a JavaScript test framework (mocha, jest, jasmine, vitest with globals) gives its test files, which
# read one of ``_TEST_SUITES`` (``describe``, ``it``, ...) without importing it
_TEST_SUITES = frozenset({"describe", "suite", "it", "test"})
_JS_TESTS = _JS | _TEST_SUITES | frozenset("""
    context specify before after beforeEach afterEach beforeAll afterAll suiteSetup suiteTeardown setup teardown
    xdescribe xcontext xit xspecify xtest fdescribe fit expect jest vi spyOn jasmine pending fail""".split())
# Java (a plain-text language, read by its check grammar): a capitalised name is a class or a constant, which
# ``java.lang``, an import or a superclass may give (never checked); a method's name is never checked either (a
# superclass's ``initCause(cause)``), nor a field after '.'; what is checked is the lower-case names a fill reads, and
# none of them is a builtin (``this`` and ``super`` are keywords, an array's ``length`` comes after '.')
_JAVA: frozenset[str] = frozenset()
# C and C++ (plain text, read by their check grammars): what a header declares is not in the document, so only a name
# that another function binds (its parameter or local) and nothing outside it does is invented (``_LOCALS_ONLY``)
# Ruby (plain text, read by its check grammar): a bare name may call a method a superclass, a mixin or ``attr_reader``
# defines, so, as in C, only a name that another method binds (its parameter, ``x = ...``) is invented, and not when
# the document defines a method by that name (``def name``) or names it as a symbol (``attr_reader :name``)
_RUBY = frozenset({"self", "nil", "true", "false", "__method__", "__FILE__", "__LINE__", "__dir__", "__ENCODING__"})
# Lua (plain text, read by its check grammar): its standard globals and libraries (5.1 to 5.4, LuaJIT), and the
# globals the common hosts give a script: Neovim's ``vim``, LÖVE's ``love``, OpenResty's ``ngx``, Redis's ``KEYS``
# and ``ARGV``, the busted test framework's; and its keywords (a fill that leaves the code unfinished may have its
# ``end`` parsed as a name)
_LUA = frozenset("""
    and break do else elseif end false for function goto if in local nil not or repeat return then true until while
    _G _VERSION _ENV assert collectgarbage dofile error getmetatable ipairs load loadfile loadstring next pairs pcall
    print rawequal rawget rawlen rawset require select setmetatable tonumber tostring type xpcall unpack module
    setfenv getfenv gcinfo newproxy coroutine debug io math os package string table utf8 bit bit32 jit ffi arg self
    vim love ngx KEYS ARGV redis describe it context insulate expose before_each after_each setup teardown
    lazy_setup lazy_teardown strict_setup strict_teardown pending spy stub mock finally""".split())
# Perl (plain text, read by its check grammar): the variables Perl gives every program by name (``$_``, ``@ARGV``,
# ``$a`` and ``$b`` of ``sort``) and those a package sets for Exporter and ``use base``; a punctuation or digit
# variable (``$0``, ``$1``, ``$^W``, ``$@``) and a qualified one (``$Data::Dumper::Indent``) are not checked
_PERL = frozenset("""
    _ a b ARGV ARGVOUT ENV INC SIG STDIN STDOUT STDERR AUTOLOAD VERSION ISA EXPORT EXPORT_OK EXPORT_TAGS EXPORT_FAIL
    DB""".split())
# the variables ``use English`` names (``perldoc English``)
_PERL_ENGLISH = frozenset("""
    ARG LIST_SEPARATOR SUBSCRIPT_SEPARATOR SUBSEP ERRNO OS_ERROR EXTENDED_OS_ERROR EVAL_ERROR CHILD_ERROR PROCESS_ID
    PID PROGRAM_NAME REAL_USER_ID UID EFFECTIVE_USER_ID EUID REAL_GROUP_ID GID EFFECTIVE_GROUP_ID EGID
    OUTPUT_AUTOFLUSH OUTPUT_FIELD_SEPARATOR OFS OUTPUT_RECORD_SEPARATOR ORS INPUT_RECORD_SEPARATOR RS
    INPUT_LINE_NUMBER NR MATCH PREMATCH POSTMATCH LAST_PAREN_MATCH LAST_SUBMATCH_RESULT LAST_MATCH_START
    LAST_MATCH_END LAST_REGEXP_CODE_RESULT OSNAME PERL_VERSION OLD_PERL_VERSION BASETIME WARNING EXECUTABLE_NAME
    ACCUMULATOR FORMAT_NAME FORMAT_TOP_NAME FORMAT_PAGE_NUMBER FORMAT_LINES_PER_PAGE FORMAT_LINES_LEFT
    FORMAT_FORMFEED FORMAT_LINE_BREAK_CHARACTERS SYSTEM_FD_MAX INPLACE_EDIT DEBUGGING PERLDB COMPILING
    EXCEPTIONS_BEING_CAUGHT""".split())
_PRELUDES = {"javascript": _JS, "typescript": _JS, "typescriptreact": _JS, "go": _GO, "rust": _RUST, "java": _JAVA,
             "c": frozenset(), "cpp": frozenset({"this"}), "lua": _LUA, "perl": _PERL, "ruby": _RUBY}
# C, C++ and Ruby: only a name that another function binds (its parameter or local) and nothing outside it does is
# invented; Ruby's instance variables are checked apart (``_invented_ivars``). Lua and Perl are not among them: a
# global needs no declaration there, but a name a Lua or Perl file reads is nearly always named elsewhere in that file
# (``local x``, ``my $x``, ``our $x``, a global another function sets); a Lua global another file defines comes
# from a host's prelude (``_LUA``), and Perl's are package variables, qualified (``$Foo::x``) or declared (``our``).
# On the plain-text development holes, with each hole's package as the workspace, a Lua or Perl fill reading a name
# its document names nowhere else (``return result``, ``closedir($dh);``) was wrong 47 times of 47 (typed lines).
_LOCALS_ONLY = frozenset({"c", "cpp", "ruby"})
# the languages a large document's words are not compared in (``_words``): the other grammars' locals only, Perl's
# functions (``floor(...)`` from ``use POSIX``) and Lua's table keys, which look like the names a fill reads
_PARSED_ONLY = _LOCALS_ONLY | {"lua", "perl"}
# per language, the identifiers that are no name a fill reads (parent type -> the field they are in, None: any).
# Java: a method's (called, referenced or declared: ``E peek();``), a field after '.', a label, an annotation's, an
# annotation's key, a qualified name's parts; Lua: a field after '.' or ':', a table constructor's key, a label;
# Ruby: a method's name in a call (``list.each``, ``puts x``), an alias's names
_UNCHECKED = {
    "java": {"method_invocation": "name", "field_access": "field", "method_reference": None,
             "method_declaration": "name", "labeled_statement": None, "break_statement": None,
             "continue_statement": None, "marker_annotation": None, "annotation": None, "element_value_pair": "key",
             "scoped_identifier": None},
    "lua": {"dot_index_expression": "field", "method_index_expression": "method", "field": "name",
            "label_statement": None, "goto_statement": None},
    "ruby": {"call": "method", "alias": None, "undef": None},
}
# tree-sitter node types that are names read or written in an expression (fields after '.' have their own
# types: property_identifier, field_identifier); the shorthand patterns bind one (``function C({ name })``,
# Rust's ``let Point { x, y } = p``), and a Go import's alias is one (``import str "strings"``).
_ID_TYPES = frozenset({"identifier", "shorthand_property_identifier_pattern", "shorthand_field_identifier",
                       "package_identifier", "varname"})   # (Perl's: ``$x``'s ``x``)
_PATHS = ("scoped_identifier", "scoped_type_identifier")   # Rust's ``a::b``: ``b`` is read in ``a``, like a field
# the functions whose parameters and locals are theirs alone (JavaScript/TypeScript, Go, Rust)
_FUNCTIONS = frozenset({"function_declaration", "function_expression", "function", "arrow_function",
                        "method_definition", "generator_function", "generator_function_declaration",
                        "method_declaration", "func_literal", "function_item", "closure_expression",
                        "constructor_declaration", "lambda_expression",    # Java's (and C++'s lambda)
                        "function_definition",      # C's, C++'s and Lua's anonymous one (Python has its own)
                        "subroutine_declaration_statement", "anonymous_subroutine_expression"})   # Perl's
# per language where it differs: Ruby's methods (its blocks and lambdas see their method's locals; Perl has a node
# ``method``, a method's name in a call, so Ruby's types are its own)
_FUNCTIONS_OF = {"ruby": frozenset({"method", "singleton_method"})}
_JSX_TAGS = frozenset({"jsx_opening_element", "jsx_closing_element", "jsx_self_closing_element"})
_GO_VERSION = re.compile(r"v\d+")
MAX_PARSED = 200_000  # larger documents are not parsed per fill: a name is invented when no other word matches it
_WORD = re.compile(r"(?<![\w.])[A-Za-z_]\w*")


def invented_names(spec: LanguageSpec, text: str, start: int, fill: str, end: int | None = None,
                   defined: frozenset[str] = frozenset()) -> list[str]:
    """Names ``fill`` (replacing ``text[start:end]``, str offsets) uses that the document defines nowhere and that
    are not among ``defined`` (the names other files of the document's package define: ``package_defines``)."""
    found = _invented(spec, text, start, fill, start if end is None else end)
    return [name for name in found if name not in defined] if defined else found


def _invented(spec: LanguageSpec, text: str, start: int, fill: str, end: int) -> list[str]:
    document = text[:start] + fill + text[end:]
    if len(document) > MAX_PARSED:
        lo, hi = _word_bounds(document, start, start + len(fill))
        return _words(spec, document, lo, hi)
    if spec.name == "python":
        found = _python(document, start, start + len(fill))
        if found is None:   # the user's own error, anywhere in the document: judged with that line masked
            masked = _masked(text, start, end)
            if masked is not None:
                head, tail, lost = masked
                found = [name for name in _python(head + fill + tail, len(head), len(head) + len(fill)) or []
                         if name not in lost]   # a name on a masked line may be bound there (``y = max(x,``)
        return found or []
    if spec.name in _PRELUDES:
        return _tree_sitter(spec, document, start, start + len(fill))
    return []


_GO_PACKAGE = re.compile(r"^package[ \t]+(\w+)", re.M)
_GO_NAMES = r"(\w+(?:[ \t]*,[ \t]*\w+)*)"   # ``a`` or ``a, b``
_GO_TOP = re.compile(rf"^(?:func|type|var|const)[ \t]+{_GO_NAMES}", re.M)   # ``func (r T) m``: a method, not matched
_GO_GROUP = re.compile(r"^(?:var|const|type)[ \t]*\((.*?)^\)", re.M | re.S)
_GO_GROUPED = re.compile(rf"^\t{_GO_NAMES}", re.M)


def package_of(language: str, text: str) -> str | None:
    """The package whose other files' top-level names a file of ``language`` reads without importing them (Go: its
    ``package`` clause); None for a language without one (Rust, JavaScript and TypeScript import them by name, and
    the import binds; Python too)."""
    if language != "go":
        return None
    m = _GO_PACKAGE.search(text)
    return m.group(1) if m else None


def package_defines(language: str, text: str) -> tuple[str, frozenset[str]] | None:
    """The package of a file (``package_of``) and the names it defines at its top level (Go: its functions, types,
    variables and constants, grouped or not; a method is read after '.'), found by a scan of its lines, not a parse;
    None for a file without a package."""
    package = package_of(language, text)
    if package is None:
        return None
    found: set[str] = set()
    for m in _GO_TOP.finditer(text):
        found.update(m.group(1).replace(" ", "").replace("\t", "").split(","))
    for group in _GO_GROUP.finditer(text):
        for m in _GO_GROUPED.finditer(group.group(1)):
            found.update(m.group(1).replace(" ", "").replace("\t", "").split(","))
    found.discard("_")
    return package, frozenset(sys.intern(name) for name in found)


def _word_bounds(document: str, lo: int, hi: int) -> tuple[int, int]:
    """``lo`` and ``hi`` moved out to the edges of the words the fill (``document[lo:hi]``, not empty) begins or
    ends inside: the typed ``brea`` of ``brea`` + ``ded_1``, the rest of a word the fill ends in."""
    if lo >= hi:
        return lo, hi
    if lo > 0 and _word_char(document[lo - 1]) and _word_char(document[lo]):
        while lo > 0 and _word_char(document[lo - 1]):
            lo -= 1
    if hi < len(document) and _word_char(document[hi - 1]) and _word_char(document[hi]):
        while hi < len(document) and _word_char(document[hi]):
            hi += 1
    return lo, hi


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _words(spec: LanguageSpec, document: str, lo: int, hi: int) -> list[str]:
    """The cheap check for a large document: words of the fill (not after '.') that occur nowhere else."""
    known = _PY_BUILTINS if spec.name == "python" else _PRELUDES.get(spec.name)
    if known is None or spec.name in _PARSED_ONLY:   # (which function binds a word is not read here)
        return []
    invented: list[str] = []
    for m in _WORD.finditer(document, lo, hi):
        name = m.group()
        if name in known or name in invented:
            continue
        if spec.name == "java" and (name[:1].isupper() or document[m.end():m.end() + 1] == "("):
            continue   # a class, a constant or a method: not checked (``_UNCHECKED``)
        pattern = re.compile(rf"\b{re.escape(name)}\b")
        if not pattern.search(document, 0, lo) and not pattern.search(document, hi):
            invented.append(name)
    return invented


_MASKS = 4   # lines of a document that does not parse replaced, at most, to make it parse


@functools.lru_cache(maxsize=4)
def _parsing_mask(text: str) -> tuple[tuple[int, str], ...] | None:
    """For a Python document that does not parse, the lines (0-based, as ``ast`` counts them) that make it parse
    once replaced, each with its replacement: the line Python's error names, as ``pass`` at its indentation (a
    half-typed line, an unclosed bracket's line), else blank (an unexpected indent); None when ``_MASKS`` lines
    do not make it parse (each fill of a hole asks again for the same document: the answer is kept)."""
    starts = _line_starts(text)
    mask: dict[int, str] = {}
    for _ in range(_MASKS + 1):
        try:
            pyparse.parse(_replaced(text, starts, mask))
            return tuple(sorted(mask.items()))
        except SyntaxError as exc:
            i = (exc.lineno or 0) - 1
        except ValueError:
            return None
        if not 0 <= i < len(starts) or mask.get(i) == "" or len(mask) >= _MASKS and i not in mask:
            return None
        line = text[starts[i]:_line_end(text, starts, i)]
        mask[i] = "" if i in mask else line[:len(line) - len(line.lstrip(" \t"))] + "pass"
    return None


def _line_end(text: str, starts: list[int], i: int) -> int:
    """Where line ``i``'s text ends (before its line break)."""
    end = starts[i + 1] if i + 1 < len(starts) else len(text)
    while end > starts[i] and text[end - 1] in "\r\n":
        end -= 1
    return end


def _replaced(text: str, starts: list[int], mask: dict[int, str]) -> str:
    parts, pos = [], 0
    for i in sorted(mask):
        parts += [text[pos:starts[i]], mask[i]]
        pos = _line_end(text, starts, i)
    parts.append(text[pos:])
    return "".join(parts)


def _masked(text: str, start: int, end: int) -> tuple[str, str, set[str]] | None:
    """``text[:start]`` and ``text[end:]`` with ``_parsing_mask``'s lines replaced, and the words of the lines
    replaced; None when there is no mask or it replaces a line the hole is on (the error is the hole's to fix)."""
    mask = _parsing_mask(text)
    if not mask:
        return None
    starts = _line_starts(text)
    first, last = bisect.bisect_right(starts, start) - 1, bisect.bisect_right(starts, end) - 1
    if any(first <= i <= last for i, _ in mask):
        return None
    lines = dict(mask)
    lost = {word for i in lines for word in _WORD.findall(text, starts[i], _line_end(text, starts, i))}
    return (_replaced(text[:start], starts, {i: r for i, r in lines.items() if i < first}),
            _replaced(text, starts, {i: r for i, r in lines.items() if i > last})[end:], lost)


def _python(document: str, lo: int, hi: int) -> list[str] | None:
    """The invented names of ``document[lo:hi]``; None when Python cannot parse the document."""
    with memory.collection_paused():   # the whole tree is made and walked: no collection meanwhile
        try:
            tree = pyparse.parse(document)
        except (SyntaxError, ValueError):
            return None
        lines = _line_starts(document)
        defined, star, reads, local = _scan(tree, _outside_fill(document, lines, lo, hi))
        del tree
    if star:
        return []
    ours: list[tuple[ast.Name, frozenset[str]]] = []
    users: set[str] = set()   # globals the user's own code reads (outside the fill, not a parameter there)
    for node, params in reads:
        line = lines[node.lineno - 1]
        # no character of the name is the fill's (a name begun before it counts whole); the name ends at most
        # ``end_col_offset`` characters into its line (only the names near the fill are placed exactly)
        if line >= hi or line + (node.end_col_offset or 0) <= lo or (at := line + _char_col(
                document, line, node.col_offset)) >= hi or \
                at < lo and line + _char_col(document, line, node.end_col_offset or 0) <= lo:
            if node.id not in params:
                users.add(node.id)
            continue
        ours.append((node, params))
    users -= local   # another function's local, read there, is not a global
    invented: list[str] = []
    for node, params in ours:
        if node.id in _PY_BUILTINS or node.id in defined or node.id in params or node.id in users:
            continue
        if node.id not in invented:
            invented.append(node.id)
    return invented


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)


def _scan(tree: ast.AST, elsewhere: Callable[[ast.AST], bool] = lambda node: False
          ) -> tuple[set[str], bool, list[tuple[ast.Name, frozenset[str]]], set[str]]:
    """The names bound (``_bind``), whether a star import is present, and the names read, each with the parameter
    names visible at it (its enclosing functions' and lambdas'), in document order (each node before its children,
    in field order): one walk of the tree, without a generator per level (a large file's tree is walked for each
    fill). A name bound only inside a scope (a function, lambda, class or comprehension) that ``elsewhere`` says
    neither holds nor starts in the fill is that scope's local, not defined for the fill (``global`` and
    ``nonlocal`` names count wherever they are): those are the fourth value."""
    names: set[str] = set()
    local: set[str] = set()   # the names bound in those scopes
    star = False
    reads: list[tuple[ast.Name, frozenset[str]]] = []
    stack: list[tuple[ast.AST, frozenset[str], bool]] = [(tree, frozenset(), False)]
    while stack:
        node, params, away = stack.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            reads.append((node, params))
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif not away:
            star = _bind(node, names) or star
        else:
            _bind(node, local)
        inner = away or isinstance(node, _SCOPES) and elsewhere(node)
        children = []
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, ast.AST):
                children.append(value)
            elif isinstance(value, list):
                children += [item for item in value if isinstance(item, ast.AST)]
        for child in reversed(children):
            stack.append((child, _with_params(child, params), inner))
    return names, star, reads, local


def _outside_fill(document: str, lines: list[int], lo: int, hi: int) -> Callable[[ast.AST], bool]:
    """Is a node (a scope) away from the fill ``document[lo:hi]``: neither holding it nor starting in it? (Placed
    on its lines only when they reach the fill's: a large file has thousands of functions.)"""
    code = document[lo:hi]
    first, last = lo + len(code) - len(code.lstrip()), lo + len(code.rstrip())   # the fill's code, not its spaces
    top, bottom = bisect.bisect_right(lines, lo), bisect.bisect_right(lines, max(lo, hi - 1))   # 1-based rows

    def away(scope: ast.AST) -> bool:
        node: Any = scope   # a statement or an expression: placed in the source
        row, end_row = node.lineno, node.end_lineno
        if end_row is None or end_row < top or row > bottom:
            return True
        start = lines[row - 1] + _char_col(document, lines[row - 1], node.col_offset)
        end = lines[end_row - 1] + _char_col(document, lines[end_row - 1], node.end_col_offset)
        if isinstance(node, _EXPRESSION_SCOPES):   # ends inside the fill: ``str({k: sel|`` + ``f[k] for k in self})``
            return not (start < last and first < end)
        return not (start <= first and last <= end or lo <= start < hi)
    return away


# scopes inside an expression, which a fill may end (their closer written by it) and then go on past
_EXPRESSION_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _bindings(tree: ast.AST) -> tuple[set[str], bool]:
    """Every name bound anywhere except as a parameter, and whether a star import is present (read by
    benchmarks/neighbour_probes.py)."""
    names: set[str] = set()
    star = False
    for node in ast.walk(tree):
        star = _bind(node, names) or star
    return names, star


def _bind(node: ast.AST, names: set[str]) -> bool:
    """Add the names ``node`` binds (not as a parameter) to ``names``; is it a star import?"""
    star = False
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        names.add(node.id)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names.add(node.name)
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            star = star or alias.name == "*"
            names.add(alias.asname or alias.name.split(".")[0])
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        names.update(node.names)
    elif isinstance(node, ast.ExceptHandler) and node.name:
        names.add(node.name)
    elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        names.add(node.name)
    elif isinstance(node, ast.MatchMapping) and node.rest:
        names.add(node.rest)
    return star


def _with_params(child: ast.AST, params: frozenset[str]) -> frozenset[str]:
    """The parameter names visible inside ``child`` (its parent's ``params``, and its own for a function)."""
    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = child.args
        return params | {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} | {
            x.arg for x in (a.vararg, a.kwarg) if x is not None}
    return params


_BREAK = re.compile(r"\r\n?|\n")


def _line_starts(text: str) -> list[int]:
    """Offsets where each line starts, as ``ast`` counts lines (``\\n``, ``\\r\\n`` and ``\\r`` end one)."""
    return [0] + [m.end() for m in _BREAK.finditer(text)]


def _char_col(text: str, line_start: int, byte_col: int) -> int:
    """``ast``'s UTF-8 byte column as a str column on the line starting at ``line_start``."""
    line = text[line_start:line_start + byte_col + 1]
    return len(line.encode("utf-8", "surrogatepass")[:byte_col].decode("utf-8", "ignore"))


def _tree_sitter(spec: LanguageSpec, document: str, lo: int, hi: int) -> list[str]:
    tree = parse(spec, document)
    if tree is None:
        return []
    data = document.encode("utf-8", "surrogatepass")
    blo, bhi = len(document[:lo].encode("utf-8", "surrogatepass")), len(document[:hi].encode("utf-8", "surrogatepass"))
    code = document[lo:hi]
    first = blo + len(code[:len(code) - len(code.lstrip())].encode("utf-8", "surrogatepass"))
    last = bhi - len(code[len(code.rstrip()):].encode("utf-8", "surrogatepass"))
    inside: list[tuple[int, str, bool]] = []
    outside: set[str] = set()
    local: set[str] = set()       # names bound inside functions that neither hold nor start in the fill
    elsewhere: set[str] = set()   # names only read there
    java, unchecked = spec.name == "java", _UNCHECKED.get(spec.name)
    functions, ruby = _FUNCTIONS_OF.get(spec.name, _FUNCTIONS), spec.name == "ruby"
    lua, perl = spec.name == "lua", spec.name == "perl"
    ivars = _Ivars()   # Ruby's instance variables and symbols
    stack = [(tree.root_node, False)]
    while stack:
        node, away = stack.pop()
        if node.type == "lifetime":
            continue   # Rust's ``'a``: a lifetime's name (an identifier in it) is no value's
        if ruby and node.type in _RUBY_OWN:
            _ruby_node(node, data, blo, bhi, ivars)
            if node.type in ("instance_variable", "simple_symbol"):
                continue
        if perl and node.type == "use_statement" and (node.end_byte <= blo or node.start_byte >= bhi):
            outside.update(_perl_imports(data[node.start_byte:node.end_byte].decode("utf-8", "replace")))
        if node.type in functions and not away:
            own = node.child_by_field_name("name")   # a function's name is its outer scope's
            if own is None and node.type == "function_definition":
                own = _c_function_name(node)          # C's, in its declarator (visited again inside: harmless)
            if own is not None:
                stack.append((own, away))
            away = not (node.start_byte <= first and last <= node.end_byte or blo <= node.start_byte < bhi)
            stack.extend((child, away) for child in node.children if child != own)
        else:
            stack.extend((child, away) for child in node.children)
        if node.type not in _ID_TYPES:
            if node.type == "type_identifier" and (node.end_byte <= blo or node.start_byte >= bhi):
                # a type the document names is defined for a fill that reads it as a value: Go's conversion
                # ``TB(true)``, Rust's tuple struct ``Meters(5)`` or enum ``E::B(1)``, TypeScript's ``new Foo()``
                outside.add(data[node.start_byte:node.end_byte].decode("utf-8", "replace"))
            continue
        name = data[node.start_byte:node.end_byte].decode("utf-8", "replace")
        if blo <= node.start_byte and node.end_byte <= bhi or node.start_byte < bhi and node.end_byte > blo:
            # in the fill, or begun before it (typed ``brea`` + ``ded_1``) or ended after it: checked whole
            parent = node.parent
            if unchecked is not None and (java and name[:1].isupper() or _unchecked(node, parent, unchecked)):
                continue
            if perl and (node.type != "varname" or not (name[:1].isalpha() or name[:1] == "_") or "::" in name
                         or parent is not None and parent.type in ("function", "glob")):
                continue   # Perl: a label; ``$0``, ``$1``, ``$^W``; a package's ``$Foo::x``; ``\&sub``, ``*FH``
            if parent is not None and parent.type in _PATHS and parent.child_by_field_name("name") == node:
                continue   # ``String::from``, ``Self::new``, ``std::cmp::max``: a path's segments after ``::``
            if parent is not None and parent.type in _PATHS and parent.child_by_field_name("path") == node and \
                    name[:1].islower():
                continue   # ``memmap2::Mmap``: a path's root in lower case is a crate or a module (no ``use``)
            if parent is not None and parent.type == "literal_element" and _struct_key(parent):
                continue   # Go's ``&parseError{Path: path}``: a struct's field, named like one after '.'
            if parent is not None and parent.type in _JSX_TAGS and (name[:1].islower() or "-" in name):
                continue   # JSX's ``<div>``, ``<my-el>``: an element of the page, not a name (``<Foo>`` is one)
            if parent is not None and parent.type == "token_tree":   # a Rust macro's tokens (``println!(...)``)
                role = _token_role(node, parent)
                if role is not None:
                    inside.append((node.start_byte, name, role))
                continue
            inside.append((node.start_byte, name, _binds(node) or lua and _lua_global_written(node)))
        elif not away:
            outside.add(name)
        else:
            (local if _binds(node) else elsewhere).add(name)
    # a name that occurs only inside other functions, read there, is defined in another file (a package's
    # function, a test's ``expect``); one that another function binds is that function's local
    outside |= elsewhere - local
    outside |= ivars.symbols   # ``attr_reader :name``: a method ``name``
    if spec.name == "go":
        outside |= _go_imports(tree.root_node, data)
    bound = {name for _, name, binds in inside if binds}
    prelude = _PRELUDES[spec.name]
    if prelude is _JS and not outside.isdisjoint(_TEST_SUITES):
        prelude = _JS_TESTS   # a test file: its framework's globals (mocha's ``context``, jest's ``beforeAll``)
    invented: list[str] = []
    for _, name, _ in sorted(inside):
        if name not in outside and name not in bound and name not in prelude and name not in invented:
            if spec.name in _LOCALS_ONLY and name not in local:
                continue   # C's headers define what the document does not show: only another function's local counts
            invented.append(name)
    if ruby and ivars.read:
        invented += _invented_ivars(tree.root_node, ivars, first, last)
    return invented


class _Ivars:
    """What a Ruby document's walk gathers besides its names: the instance variables the fill reads and binds, those
    outside it, the symbols outside it, and whether a class inherits or mixes in code (``class A < B``,
    ``include M``), which may set instance variables the document does not show."""

    def __init__(self) -> None:
        self.read: list[tuple[int, str]] = []
        self.bound: set[str] = set()
        self.outside: set[str] = set()
        self.symbols: set[str] = set()
        self.inherits = False


_RUBY_OWN = frozenset({"instance_variable", "simple_symbol", "superclass", "call"})
_MIXINS = frozenset({b"include", b"extend", b"prepend"})


def _ruby_node(node, data: bytes, blo: int, bhi: int, ivars: _Ivars) -> None:
    """Gather a Ruby node of ``_RUBY_OWN`` into ``ivars``."""
    if node.type == "superclass":
        ivars.inherits = True
        return
    if node.type == "call":   # (a slice of ``data``: a node's ``text`` costs tens of microseconds)
        method = node.child_by_field_name("method")
        if method is not None and data[method.start_byte:method.end_byte] in _MIXINS and \
                node.child_by_field_name("receiver") is None:
            ivars.inherits = True
        return
    text = data[node.start_byte:node.end_byte].decode("utf-8", "replace")
    if node.end_byte <= blo or node.start_byte >= bhi:   # outside the fill
        if node.type == "simple_symbol":   # ``attr_reader :name``, ``define_method(:name)``, ``ivar_get(:@x)``
            ivars.symbols.add(text[1:])
        else:
            ivars.outside.add(text)
    elif node.type == "instance_variable":
        if _binds(node):
            ivars.bound.add(text)
        else:
            ivars.read.append((node.start_byte, text))


def _invented_ivars(root, ivars: _Ivars, first: int, last: int) -> list[str]:
    """The instance variables a Ruby fill reads that nothing else in the document names (``@x``, ``:@x``,
    ``attr_accessor :x``), when the fill is in a class that neither inherits nor mixes in code (a module's method
    reads the instance variables of the class it is mixed into)."""
    if ivars.inherits:
        return []
    scope = root.descendant_for_byte_range(first, max(first, last))
    while scope is not None and scope.type not in ("class", "module", "singleton_class"):
        scope = scope.parent
    if scope is None or scope.type == "module":
        return []
    invented: list[str] = []
    for _, name in sorted(ivars.read):
        if name not in ivars.outside and name not in ivars.bound and name[1:] not in ivars.symbols and \
                name not in ivars.symbols and name not in invented:
            invented.append(name)
    return invented


def _c_function_name(definition):
    """The identifier a C or C++ function definition names itself by (``int *f(void)``: ``f``), or None (a
    ``A::f`` is a qualified name, not one of the document's)."""
    node = definition.child_by_field_name("declarator")
    while node is not None and node.type in ("pointer_declarator", "function_declarator", "reference_declarator",
                                               "parenthesized_declarator"):
        node = node.child_by_field_name("declarator") or (node.named_children[0] if node.named_children else None)
    return node if node is not None and node.type == "identifier" else None


def _unchecked(node, parent, unchecked: dict[str, str | None]) -> bool:
    """Is this identifier one no fill's names are checked by (``_UNCHECKED``): Java's method name, a field after '.',
    a label, an annotation's; Lua's field?"""
    if parent is None or parent.type not in unchecked:
        return False
    field = unchecked[parent.type]
    return field is None or parent.child_by_field_name(field) == node


def _go_imports(root, data: bytes) -> set[str]:
    """The package names a Go file's imports bring in without an alias: the path's last element (the one before
    a major version, ``github.com/x/y/v2``: ``y``; ``gopkg.in/yaml.v3``: ``yaml``)."""
    names: set[str] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "import_spec":
            path = node.child_by_field_name("path")
            if node.child_by_field_name("name") is None and path is not None:
                parts = data[path.start_byte:path.end_byte].decode("utf-8", "replace").strip('"`').split("/")
                last = parts[-2] if len(parts) > 1 and _GO_VERSION.fullmatch(parts[-1]) else parts[-1]
                names.add(re.sub(r"\.v\d+$", "", last).removeprefix("go-").replace("-", "_"))
        elif node.type in ("source_file", "import_declaration", "import_spec_list"):
            stack.extend(node.children)
    return names


# the field of a declaration that names what it introduces (the rest of it, its value or type, is read)
_BIND_FIELD = {
    "variable_declarator": "name", "for_in_statement": "left", "arrow_function": "parameter",   # JavaScript
    "catch_clause": "parameter", "class_declaration": "name", "function_declaration": "name",
    "generator_function_declaration": "name", "pair_pattern": "value",
    # a named function or class expression names itself (``ordinal: function ordinal(n) {``)
    "function_expression": "name", "generator_function": "name", "class": "name",
    "var_spec": "name", "const_spec": "name", "range_clause": "left",                            # Go
    "let_declaration": "pattern", "let_condition": "pattern", "for_expression": "pattern",      # Rust
    "function_item": "name", "const_item": "name", "static_item": "name",
    "enum_variant": "name",   # Rust: ``Struct { a: T }`` in an enum names its variant
    "enhanced_for_statement": "name", "resource": "name", "lambda_expression": "parameters",   # Java
    "declaration": "declarator",   # C: ``int n;`` (``int n = 1;``, ``int *p;``: their declarators bind)
    "for_numeric_clause": "name",   # Lua: ``for i = 1, n``
    "assignment": "left", "operator_assignment": "left", "for": "pattern"}   # Ruby: ``x = 1``, ``x ||= 1``, ``for x``
# the fields of a pattern or parameter that are read: a default value, a type, a guard, a tuple struct's name
_READ_FIELDS = frozenset({"value", "right", "type", "condition", "alternative", "body"})
_BINDERS = ("parameter", "pattern", "declarator", "import_clause", "namespace_import")


def _binds(node) -> bool:
    """Is this identifier the name a declaration, parameter or pattern introduces? Decided by its place in its parent:
    ``const a = b``, ``let a = b;``, ``a, b := c, d``, ``for (const a of b)``, ``for a in b``: ``a`` binds, ``b``
    is read."""
    parent = node.parent
    if parent is None:
        return False
    if node.type == "varname":   # Perl: ``my $x``, ``my ($a, $b)``, ``foreach my $i``: the container's place decides
        holder = parent.parent
        return holder is not None and (holder.type == "variable_declaration"
                                       or holder.type == "for_statement" and _field(holder, parent) == "variable")
    kind, field = parent.type, _field(parent, node)
    if kind == "variable_list":   # Lua: ``local a, b = ...`` and a ``for`` binds; ``a = 1`` writes a global
        grand = parent.parent
        return grand is not None and (grand.type in ("for_generic_clause", "variable_declaration")   # (``local t``)
                                      or grand.type == "assignment_statement" and grand.parent is not None
                                      and grand.parent.type == "variable_declaration")
    if kind == "left_assignment_list":   # Ruby: ``a, b = 1, 2``
        return True
    if kind == "expression_list":   # Go: ``a, b := ...``, ``for i, x := range ...``, ``switch v := x.(type)``
        grand = parent.parent
        return grand is not None and grand.type in ("short_var_declaration", "range_clause", "type_switch_statement") \
            and _field(grand, parent) in ("left", "alias")
    if kind in _BIND_FIELD:
        return field == _BIND_FIELD[kind]
    if kind == "import_specifier":   # ``import { a as b }``: b; ``import { a }``: a
        return field == "alias" or parent.child_by_field_name("alias") is None
    return field not in _READ_FIELDS and any(word in kind for word in _BINDERS)


def _perl_imports(statement: str) -> set[str]:
    """The variables a Perl ``use`` statement may import: the words it names (``use Config;``: ``%Config``;
    ``use FindBin qw($Bin);``, ``use vars qw($x @y);``), and English's long names with ``use English``."""
    words = set(re.findall(r"\w+", statement))
    return words | _PERL_ENGLISH if "English" in words else words


def _lua_global_written(node) -> bool:
    """Is this Lua identifier a global a plain assignment writes (``total = 0``)? A fill may set a new global; it is
    not one of the names it reads (``_binds`` leaves it out: another function's ``x = 1`` makes ``x`` no local)."""
    parent = node.parent
    return parent is not None and parent.type == "variable_list" and parent.parent is not None \
        and parent.parent.type == "assignment_statement"


def _struct_key(element) -> bool:
    """Is this Go ``literal_element`` the key of a keyed element in a struct's literal (a field's name), not in a
    map's (a key read: ``map[string]int{k: 1}``)?"""
    keyed = element.parent
    if keyed is None or keyed.type != "keyed_element" or keyed.child_by_field_name("key") != element:
        return False
    body = keyed.parent
    literal = body.parent if body is not None else None
    if literal is not None and literal.type == "composite_literal" and literal.child_by_field_name("body") == body:
        kind = literal.child_by_field_name("type")
        return kind is None or kind.type != "map_type"
    return True   # an elided type (``[]P{{Path: p}}``): a struct's, as a rule


# the keywords after which an identifier among a Rust macro's tokens is the name of what they declare
_DECLARES = frozenset({"fn", "struct", "enum", "union", "trait", "type", "mod", "const", "static", "let"})
# the tokens after which a ``|`` in a Rust macro's tokens opens a closure's parameters (after an operand it is ``or``)
_CLOSURE_BEFORE = frozenset({"(", "[", "{", ",", "=", "=>", ";"})


def _token_role(node, tree) -> bool | None:
    """An identifier among a Rust macro's tokens (``tree``: a ``token_tree``, which tree-sitter does not parse as
    code): None when it is no name read (a field or method after ``.``, a path's segment after ``::``, a macro
    variable after ``$``, a named argument before ``=``: ``format!("{n}", n = v.len())``), else whether it binds
    (a closure's parameter: ``assert!(v.iter().all(|&x| x > 0))``; the name an item or ``let`` declares,
    ``bitflags! { pub struct MapFlags: c_int {``, ``macro_rules!``' ``pub fn from_bytes(bytes: &[u8])``; a name with
    its type after ``:``, a parameter or a field)."""
    before, after = node.prev_sibling, node.next_sibling
    if before is not None and before.type in (".", "::", "$"):
        return None
    if after is not None and after.type == "=" and before is not None and before.type in ("(", ","):
        return None
    if before is not None and (before.type in _DECLARES or before.type == "mutable_specifier" and (
            before.prev_sibling is not None and before.prev_sibling.type == "let")):
        return True   # an item or a variable the macro's tokens declare: ``bitflags! { pub struct F: u32 {``
    if after is not None and after.type == ":":
        return True   # a parameter or a field with its type (``fn from_bytes(bytes: &[u8])``)
    child = node
    while tree is not None and tree.type == "token_tree":   # between a closure's ``|`` and ``|``, at any depth
        if _in_pipes(tree, child):
            return True
        child, tree = tree, tree.parent
    return False


def _in_pipes(tree, child) -> bool:
    """Is ``child`` (one of ``tree``'s tokens) between a closure's opening ``|`` and its closing one?"""
    inside, before = False, None
    for token in tree.children:
        if token == child:
            return inside
        if token.type == "|":
            opens = before is None or before.type in _CLOSURE_BEFORE or before.type == "identifier" and \
                before.text == b"move"
            inside = not inside if inside or opens else False
        before = token
    return False


def _field(parent, node) -> str | None:
    """The name of the field ``node`` (a child of ``parent``) fills, if any."""
    for i, child in enumerate(parent.children):
        if child == node:
            return parent.field_name_for_child(i)
    return None
