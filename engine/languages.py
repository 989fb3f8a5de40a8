"""Language ids -> tree-sitter grammars (one wheel per grammar), the one parse (a parser per thread) and the
one walk over a tree's ERROR and MISSING nodes, and the few syntax facts the engine needs."""

from __future__ import annotations

import collections
import ctypes
import functools
import importlib
import re
import sys
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath

import tree_sitter


@dataclass(frozen=True)
class LanguageSpec:
    name: str
    module: str                       # grammar wheel module
    function: str = "language"        # its function returning the grammar pointer
    block_opener: str = ":"           # a line ending with this opens an indented body


_SPECS = {
    "python": LanguageSpec("python", "tree_sitter_python"),
    "javascript": LanguageSpec("javascript", "tree_sitter_javascript", block_opener="{"),
    "typescript": LanguageSpec("typescript", "tree_sitter_typescript", "language_typescript", "{"),
    "typescriptreact": LanguageSpec("typescriptreact", "tree_sitter_typescript", "language_tsx", "{"),
    "go": LanguageSpec("go", "tree_sitter_go", block_opener="{"),
    "rust": LanguageSpec("rust", "tree_sitter_rust", block_opener="{"),
}
_ALIASES = {"javascriptreact": "javascript", "js": "javascript", "jsx": "javascript", "ts": "typescript",
            "tsx": "typescriptreact", "py": "python", "python3": "python", "golang": "go", "rs": "rust"}
_EXTENSIONS = {".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
               ".jsx": "javascript", ".ts": "typescript", ".mts": "typescript", ".tsx": "typescriptreact",
               ".go": "go", ".rs": "rust"}

# Languages the engine fills as plain text whose files a workspace counts all the same, by extension: their lines are
# fills for a typed line and an empty line's neighbours, in tables of their own (``lines_name``; ``engine.worklines``).
# Measured on ``benchmarks.other_lines``' development holes, each package as its workspace (benchmarks/README.md).
_PLAIN_EXTENSIONS = {".c": "c", ".h": "c", ".java": "java", ".rb": "ruby", ".pl": "perl", ".pm": "perl",
                     ".lua": "lua", ".cpp": "cpp", ".cc": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp",
                     ".hxx": "cpp"}
# other clients' ids for them: eglot names a language after its major mode (``c++-mode``, ``cperl-mode``)
_PLAIN_ALIASES = {"c++": "cpp", "cperl": "perl"}

_local = threading.local()
PLAIN = LanguageSpec("plaintext", "", block_opener="")
# Grammars that only check the fills of a language the engine fills as plain text (no hole shapes, windows or rules
# of its own): ``validate.plain_syntax_check`` refuses a fill that adds a syntax error. Each measured on
# ``benchmarks.other_lines``' development holes of its language (benchmarks/README.md); an LSP id to its spec.
_CHECK_SPECS = {name: LanguageSpec(name, f"tree_sitter_{name}", block_opener="")
                for name in ("c", "cpp", "java", "ruby", "lua", "perl")}

# A line that opens a block of statements of its own (the body of an ``if``, a loop, a ``try``): "Complete body"
# may write one, then its lines (``engine/oneline.py``). Not a function or class, a ``match`` in Python (its cases),
# an object literal or a closure: their lines are not the function's statements.
_BLOCK_STATEMENT = {
    "python": re.compile(r"(?:if|elif|else|for|while|with|try|except|finally|async\s+(?:for|with))\b.*:$"),
    "braces": re.compile(r"(?:if|else|for|while|switch|try|catch|finally|do|select|loop|match|unsafe)\b.*\{$"),
}


def opens_block(spec: LanguageSpec, line: str) -> bool:
    """Whether ``line`` (one line of code) is a statement that opens a block of statements: ``if x:``,
    ``for (const a of b) {``, ``if err != nil {``, ``match x {``."""
    pattern = _BLOCK_STATEMENT.get("python" if spec.block_opener == ":" else "braces" if spec.block_opener else "")
    return pattern is not None and pattern.match(line.strip()) is not None


def spec_for(language_id: str) -> LanguageSpec:
    """The spec for an LSP language id; ``PLAIN`` (no grammar) for anything unknown."""
    key = (language_id or "").lower()
    return _SPECS.get(_ALIASES.get(key, key), PLAIN)


def grammar_languages() -> list[str]:
    """The language ids with a grammar (their aliases aside): every other id is filled as plain text."""
    return sorted(_SPECS)


def language_for_path(path: str) -> str:
    """The LSP language id of a file by its extension: a language with a grammar, one a workspace counts as plain
    text (``_PLAIN_EXTENSIONS``: ``c``, ``java``...), else ``plaintext``."""
    suffix = PurePath(path).suffix.lower()
    return _EXTENSIONS.get(suffix) or _PLAIN_EXTENSIONS.get(suffix, "plaintext")


def source_glob() -> str:
    """A glob of every source file a workspace counts (``**/*.{c,go,js,...}``), for file watchers."""
    return "**/*.{" + ",".join(sorted(ext.lstrip(".") for ext in {**_EXTENSIONS, **_PLAIN_EXTENSIONS})) + "}"


def lines_name(language_id: str) -> str:
    """The name a workspace keys a language's lines by (``engine.worklines``): a grammar's name (``spec_for``), or
    for a language filled as plain text whose files it counts (``_PLAIN_EXTENSIONS``) its own id: C's lines are
    not Ruby's. Any other language: ``plaintext``, which no counted file has."""
    spec = spec_for(language_id)
    if spec is not PLAIN:
        return spec.name
    key = _plain_id(language_id)
    return key if key in _PLAIN_EXTENSIONS.values() else PLAIN.name


def _plain_id(language_id: str) -> str:
    key = (language_id or "").lower()
    return _PLAIN_ALIASES.get(key, key)


@functools.cache
def grammar(name: str) -> tree_sitter.Language | None:
    """The tree-sitter grammar of a language name (or of a plain-text language's check, ``check_spec``); None for
    plain text, and for a check whose grammar wheel is not installed."""
    spec = _SPECS.get(name) or _CHECK_SPECS.get(name)
    if spec is None:
        return None
    try:
        module = importlib.import_module(spec.module)
        with warnings.catch_warnings():   # a wheel that hands its grammar over as an int (Perl's) still loads
            warnings.simplefilter("ignore", DeprecationWarning)
            return tree_sitter.Language(getattr(module, spec.function)())
    except (ImportError, AttributeError, TypeError, ValueError):
        if name in _SPECS:   # a grammar the engine is built on: its absence is an installation's fault
            raise
        return None   # a check's wheel not installed, or one this binding cannot load: no check


def checked_languages() -> list[str]:
    """The language ids filled as plain text whose fills a grammar checks (their check wheel installed)."""
    return sorted(name for name in _CHECK_SPECS if grammar(name) is not None)


def check_spec(language_id: str) -> LanguageSpec | None:
    """The spec whose grammar checks the fills of a language filled as plain text (``_CHECK_SPECS``); None for a
    language with a grammar of its own, one without a check, or one whose check's wheel is not installed."""
    if spec_for(language_id) is not PLAIN:
        return None
    check = _CHECK_SPECS.get(_plain_id(language_id))
    return check if check is not None and grammar(check.name) is not None else None


def has_grammar(spec: LanguageSpec) -> bool:
    return spec.name in _SPECS


def parse(spec: LanguageSpec, source: str | bytes, old_tree: tree_sitter.Tree | None = None,
          tick: Callable[[], None] | None = None) -> tree_sitter.Tree | None:
    """The syntax tree of ``source`` (str, or its UTF-8 bytes); None without a grammar. ``old_tree``: the tree of
    an earlier text, edited to match (``Tree.edit``), reparsed incrementally. Safe from any thread: each thread
    parses with its own parser (tree-sitter parsers are not shared across threads). ``tick()`` is called at each of
    tree-sitter's progress reports (about every 100 of its parse operations: a unit of work, for a job's
    cancellation or a search's budget; a source given a tick is read through callbacks whatever its size); what it
    raises halts the parse and is raised here."""
    parsers = _local.__dict__.setdefault("parsers", {})
    if spec.name not in parsers:
        language = grammar(spec.name)
        parsers[spec.name] = tree_sitter.Parser(language) if language is not None else None
    parser = parsers[spec.name]
    if parser is None:
        return None
    data = source.encode("utf-8", "surrogatepass") if isinstance(source, str) else source
    if len(data) <= _CHUNK and tick is None:
        return parser.parse(data) if old_tree is None else parser.parse(data, old_tree)
    return _parse_in_chunks(parser, data, old_tree, tick)


_CHUNK = 1 << 16     # bytes: a source up to this long is parsed in one call; a longer one is read in chunks
_SHARED_KEEP = 2     # large documents whose trees ``document_tree`` keeps
_shared: dict[tuple[str, bytes], tree_sitter.Tree] = {}
_shared_lock = threading.Lock()


def document_tree(spec: LanguageSpec, source: str | bytes, tick: Callable[[], None] | None = None
                  ) -> tree_sitter.Tree | None:
    """``parse(spec, source)``, kept across threads for a source over ``_CHUNK`` bytes: the last ``_SHARED_KEEP``
    such documents' trees. A code action's survey parses the document on a thread of its own, and the engine's job
    for that action (a fix's search, the whole-document check of its edits) had to parse it again: 1.2-1.5 s each at
    5 MB. Each caller gets its own copy (``Tree.copy``: shared, not parsed again), which it may edit."""
    data = source.encode("utf-8", "surrogatepass") if isinstance(source, str) else source
    if len(data) <= _CHUNK:
        return parse(spec, data, tick=tick)
    key = (spec.name, data)
    with _shared_lock:
        tree = _shared.pop(key, None)
        if tree is not None:
            _shared[key] = tree
            return tree.copy()
    tree = parse(spec, data, tick=tick)
    if tree is not None:
        with _shared_lock:
            _shared[key] = tree
            while len(_shared) > _SHARED_KEEP:
                del _shared[next(iter(_shared))]
        tree = tree.copy()
    return tree
_PROGRESS = True     # tree-sitter takes a progress callback (>= 0.25)


def _parse_in_chunks(parser: tree_sitter.Parser, data: bytes, old_tree: tree_sitter.Tree | None,
                     tick: Callable[[], None] | None = None) -> tree_sitter.Tree | None:
    """Parse ``data`` through a read callback (``_CHUNK`` bytes at a time) and a progress callback: both are Python
    calls, between which other threads take the interpreter's lock. Parsing bytes is one C call that holds it
    throughout: a 5 MB document's survey (a code action, on a thread of its own) held the event loop, every
    request and cancel, for 1.5 to 3.2 s on a loaded 2-core machine; read in chunks, its longest hold was 36-41 ms
    (with the read callback alone, as tree-sitter 0.24 takes no progress callback: 0.2 to 0.5 s). ``tick``: called
    from the progress callback (not with tree-sitter 0.24); what it raises halts the parse, and is raised once the
    parser is reset (a halted parser resumes its parse at its next call, whatever text it is given)."""
    global _PROGRESS

    read = _Reader(data)

    raised: list[BaseException] = []

    def go_on(_offset: int, _has_error: bool) -> bool:
        if tick is not None:   # else never halt: the call itself is the point (another thread may run)
            try:
                tick()
            except BaseException as exc:   # noqa: BLE001 (raised below, once tree-sitter has returned)
                raised.append(exc)
                return True
        return False

    try:
        if _PROGRESS:   # (tree-sitter takes no None for ``old_tree``: it is passed only when there is one)
            try:
                if old_tree is None:
                    return parser.parse(read, progress_callback=go_on)
                return parser.parse(read, old_tree, progress_callback=go_on)
            except TypeError as exc:   # tree-sitter 0.24: no progress callback
                if "progress_callback" not in str(exc):
                    raise
                _PROGRESS = False
            except ValueError:   # "Parsing failed": halted by the progress callback
                if not raised:
                    raise
            finally:
                if raised:
                    parser.reset()
            if raised:
                raise raised[0]
        return parser.parse(read) if old_tree is None else parser.parse(read, old_tree)
    finally:
        read.done()


class _Reader:
    """``_parse_in_chunks``' read callback: ``_CHUNK`` bytes of ``data`` from the offset asked. tree-sitter's Python
    binding (0.26.1) keeps one reference to every object a read callback returns during a parse and never gives it
    back, so every chunk stayed in memory for good: a parse leaked about the document's size (10 MB for a 5 MB
    Python file), and Perl's grammar, whose scanner asks for a chunk about 5,000 times in a 148 KB file (36,000 in a
    130 KB one of short subs), 320 MB to 1.6 GB (a server editing ``CPAN.pm`` grew by that at each request). Where the
    binding is measured to leak so (``_leaks_reads``), that reference to a chunk is given back at the next read
    (tree-sitter reads a chunk only until it asks for the next: the binding's own assumption), and to the last one
    by ``done()`` once the parse is over. The tree may call the callback again for its nodes' text after the parse:
    those calls are not kept (the binding frees what they return)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.parsing = _leaks_reads()   # (a binding that does not leak: nothing to give back)
        self.last: bytes | None = None

    def __call__(self, offset: int, _point: object) -> bytes:
        chunk = self.data[offset:offset + _CHUNK]
        if self.parsing:
            self._give_back()
            self.last = chunk
        return chunk

    def done(self) -> None:
        self._give_back()
        self.parsing = False

    def _give_back(self) -> None:
        last, self.last = self.last, None
        if last is not None:
            _DECREF(last)


_DECREF = ctypes.pythonapi.Py_DecRef
_DECREF.argtypes = [ctypes.py_object]
_DECREF.restype = None
_LEAKS: bool | None = None
_LEAKS_LOCK = threading.Lock()


def _leaks_reads() -> bool:
    """Does this tree-sitter binding keep one reference to each chunk its read callback returns, for good? Measured
    once: a small parse through a callback, each chunk a new object, its reference count read after the parse and
    its tree are gone. Exactly one more for every chunk returned: it leaks so (0.26.1). Anything else (none more, as
    in the bindings that free the chunk at the next read): nothing to give back."""
    global _LEAKS
    if _LEAKS is not None:   # (measured: no lock for each parse after the first)
        return _LEAKS
    with _LEAKS_LOCK:
        if _LEAKS is None:
            _LEAKS = _measure_leak()   # (set once measured: another thread never reads a guess)
        return _LEAKS


def _measure_leak() -> bool:
    language = grammar("python")
    if language is None:
        return False
    data = b"def f(x):\n    return x + 1\n" * 4
    chunks: list[bytes] = []

    def read(offset: int, _point: object) -> bytes:
        chunk = bytes(bytearray(data[offset:offset + 16]))   # a new object, even for b""
        chunks.append(chunk)
        return chunk

    tree_sitter.Parser(language).parse(read)   # (the tree and parser freed at once: no cycles)
    counts = collections.Counter(map(id, chunks))
    # each: the list's references, getrefcount's own, and the binding's if it keeps them (by index: a loop variable
    # would hold one more; b"" and one-byte chunks are shared objects, not counted)
    return len(chunks) > 1 and all(sys.getrefcount(chunks[i]) - 1 - counts[id(chunks[i])] == counts[id(chunks[i])]
                                   for i in range(len(chunks)) if len(chunks[i]) > 1)


def error_count(tree: tree_sitter.Tree | None) -> int:
    """ERROR and MISSING nodes in ``tree``, nested ones included (0 without a tree)."""
    return 0 if tree is None else len(error_spans(tree))


def error_spans(tree: tree_sitter.Tree, nested: bool = True) -> list[tuple[int, int]]:
    """Byte ranges of the ERROR and MISSING nodes in ``tree``, in document order; ``nested=False``: the
    outermost ones only (what an error covers, not what is inside it)."""
    spans: list[tuple[int, int]] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            spans.append((node.start_byte, node.end_byte))
            if not nested:
                continue
        if node.has_error:
            stack.extend(reversed(node.children))
    return spans
