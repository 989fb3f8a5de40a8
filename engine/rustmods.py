"""Rust glob imports resolved among the workspace's files: the names ``use crate::foo::*`` brings into a document.

A Rust file reads the items a glob import brings in (``use super::*;``, ``use crate::decode::*;``, a benchmark's
``use rmp::decode::*;``) without naming them, so the invented-names rule (``engine.names``) cannot tell them from
inventions by the document alone, and treating every glob like Python's star import (nothing is invented) offered
more wrong fills than right ones. Instead, when the workspace (``engine.worklines.Workspace``) has the file of the
module a glob names, that file's items are defined for the document (``glob_names``):

- each counted Rust file keeps the names of its module-level items (``scan``: a line scan, not a parse; an item
  at column 0, as rustfmt writes a module's items, or after attributes on its line (``#[cfg(x)] pub mod y;``),
  ``pub`` or not: ``fn``, ``struct``, ``enum``, ``union``,
  ``trait``, ``const``, ``static``, ``type``, ``mod``, ``extern crate``, ``macro_rules!``, and the names its
  ``use`` declarations import, ``pub use`` re-exports among them) and its own glob imports;
- the document's module comes from its path (``locate``): the crate is the nearest folder ``src`` (or ``tests``,
  ``benches``, ``examples``, ``src/bin``: each file there is a crate root of its own) above it; ``src/lib.rs`` and
  ``src/main.rs`` are the crate's root, ``src/a/b.rs`` and ``src/a/b/mod.rs`` module ``a::b``;
- a glob's path is resolved from there: ``crate::``, ``self::``, ``super::`` (the parent module's file), a child
  module (``use foo::*`` after ``mod foo;``), or the library by its name (from ``Cargo.toml`` when the folder is on
  disk, else the folder's name less a version: ``rmp-0.8.11``: ``rmp``) to ``src/lib.rs`` and its module files;
- the module's ``pub`` items count, and its private ones too for a glob from inside it (a test module's
  ``use super::*``); its own globs are followed the same way (``pub use self::sint::*``), a few levels deep.

A glob that names an external crate, an enum (``use Color::*``), an inline module or a file the workspace lacks
resolves to nothing: its names stay invented, as before. A glob inside a block (an inline ``mod tests``) is
resolved only when its path is absolute (``crate::``, the library's name): ``super`` there is the document's own
module.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Callable
from typing import NamedTuple

Path_ = tuple[str, ...]   # a use path's segments (``crate``, ``decode``)


class Items(NamedTuple):
    """A Rust file's module-level names (``scan``)."""
    public: frozenset[str]            # ``pub`` (any ``pub(...)``) items and re-exports: any module's glob sees them
    private: frozenset[str]           # the rest: only a glob from the module itself or inside it sees them
    globs: tuple[tuple[Path_, bool], ...]   # its own glob imports at column 0, each with whether it is ``pub``
    nested: tuple[Path_, ...] = ()    # glob imports inside a block (an inline module, a function)


# outer attributes before an item on its line (``#[cfg(feature = "std")] pub mod adapter;``, ``#[macro_use] mod
# macros;``): brackets inside one nest a level at most (``#[cfg(all(unix, feature = "x"))]``, ``#[doc = "[a]"]``)
_ATTRS = r"(?:#\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\][ \t]*)*"
_VIS = r"(pub(?:[ \t]*\([^)\n]*\))?[ \t]+)?"
_ITEM = re.compile(
    rf"^{_ATTRS}{_VIS}(?:(?:unsafe|async|const|default|auto|extern(?:[ \t]+\"\w*\")?)[ \t]+)*"
    r"(?:fn|struct|enum|union|trait|const|static(?:[ \t]+mut)?|type|mod)[ \t]+(?:r#)?(\w+)", re.M)
_EXTERN_CRATE = re.compile(rf"^{_ATTRS}{_VIS}extern[ \t]+crate[ \t]+(\w+)(?:[ \t]+as[ \t]+(\w+))?", re.M)
_MACRO = re.compile(rf"^{_ATTRS}macro_rules![ \t]*(\w+)", re.M)
_USE = re.compile(rf"^([ \t]*){_ATTRS}{_VIS}use[ \t]+([^;]{{1,4000}});", re.M)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_ALIAS = re.compile(r"(.*?)\s+as\s+(?:r#)?(\w+)", re.S)
DEPTH = 4   # globs followed through globs, at most


def scan(text: str) -> Items:
    """A Rust file's module-level item names, public and private, and its glob imports (see the module's doc)."""
    public: set[str] = set()
    private: set[str] = set()
    for m in _ITEM.finditer(text):
        (public if m.group(1) else private).add(m.group(2))
    for m in _EXTERN_CRATE.finditer(text):
        (public if m.group(1) else private).add(m.group(3) or m.group(2))
    public.update(m.group(1) for m in _MACRO.finditer(text))   # ``#[macro_export]`` or not: lenient
    globs: list[tuple[Path_, bool]] = []
    nested: list[Path_] = []
    for m in _USE.finditer(text):
        found: list[str] = []
        starred: list[Path_] = []
        _use_tree(_COMMENT.sub("", m.group(3)), (), found, starred)
        if m.group(1):   # inside a block: its names are not the module's
            nested.extend(starred)
            continue
        (public if m.group(2) else private).update(found)
        globs.extend((path, bool(m.group(2))) for path in starred)
    public.discard("_")
    private.discard("_")
    private -= public
    return Items(frozenset(sys.intern(n) for n in public), frozenset(sys.intern(n) for n in private),
                 tuple(globs), tuple(nested))


def _use_tree(tree: str, prefix: Path_, names: list[str], globs: list[Path_], depth: int = 0) -> None:
    """The names a use tree (``a::{b, c as d, e::*}``) imports and the paths it globs, under ``prefix``."""
    tree = tree.strip()
    if not tree or depth > 8:
        return
    brace = tree.find("{")
    if brace >= 0:
        close = tree.rfind("}")
        if close < brace:
            return
        base = prefix + _segments(tree[:brace].strip().removesuffix("::"))
        for part in _split(tree[brace + 1:close]):
            _use_tree(part, base, names, globs, depth + 1)
        return
    alias = _ALIAS.fullmatch(tree)
    path = prefix + _segments(alias.group(1) if alias else tree)
    if not path:
        return
    if path[-1] == "*":
        globs.append(path[:-1])
    elif alias:
        names.append(alias.group(2))
    elif path[-1] == "self":
        if len(path) > 1:
            names.append(path[-2])
    elif re.fullmatch(r"\w+", path[-1]):
        names.append(path[-1])


def _segments(path: str) -> Path_:
    if not path.strip():
        return ()
    return tuple(s.strip().removeprefix("r#") for s in path.split("::"))


def _split(inner: str) -> list[str]:
    """A use group's members: ``inner`` split at its commas outside nested braces."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    return parts


class Crate(NamedTuple):
    """Where a document's module sits: its crate's folder of module files, the crate root's file there (None:
    unknown, a test crate's module deeper down), the crate's package folder, and the document's module."""
    root: str
    top: str | None
    package: str
    module: Path_


_ROOTS = ("src", "tests", "benches", "examples")


def locate(path: str, has: Callable[[str], bool]) -> Crate | None:
    """The crate and module of the Rust file at ``path`` (see the module's doc); None when no folder above it is a
    crate's (``src``, ``tests``, ``benches``, ``examples``). ``has``: whether the workspace has a file."""
    folder, name = os.path.split(path)
    if not name.endswith(".rs"):
        return None
    stem = name[:-3]
    rel: list[str] = []
    here = folder
    for _ in range(64):
        base = os.path.basename(here)
        if base in _ROOTS:
            package = os.path.dirname(here)
            if base == "src" and rel[:1] == ["bin"]:   # src/bin/x.rs: a binary's crate root
                here, rel = os.path.join(here, "bin"), rel[1:]
            elif base == "src":
                if not rel and stem in ("lib", "main"):
                    return Crate(here, path, package, ())
                top = next((f for f in (os.path.join(here, "lib.rs"), os.path.join(here, "main.rs")) if has(f)), None)
                return Crate(here, top, package, tuple(rel) + (() if stem == "mod" else (stem,)))
            if not rel:    # tests/x.rs, benches/x.rs: a crate of its own
                return Crate(here, path, package, ())
            return Crate(here, None, package, tuple(rel) + (() if stem == "mod" else (stem,)))
        parent = os.path.dirname(here)
        if not base or parent == here:
            return None
        rel.insert(0, base)
        here = parent
    return None


def glob_names(path: str, text: str, items: Callable[[str], Items | None],
               library: Callable[[str], frozenset[str]]) -> frozenset[str]:
    """The names the glob imports of the Rust document at ``path`` (``text``: its current text) bring in from the
    files ``items`` knows (the workspace's: a path's ``Items``, None when it has no such file). ``library``: the
    names the library of a package folder goes by (``Cargo.toml``'s, the folder's)."""
    if "*" not in text:
        return frozenset()
    has = lambda p: p == path or items(p) is not None   # noqa: E731
    crate = locate(path, has)
    if crate is None:
        return frozenset()
    own = scan(text)
    found: set[str] = set()
    seen: set[str] = set()
    resolver = _Resolver(path, has, items, library)
    for glob, _ in own.globs:
        resolver.collect(crate, crate.module, glob, found, seen)
    for glob in own.nested:   # inside a block: only an absolute path (``super`` is the document's own module)
        if glob[:1] == ("crate",) or glob[:1] and glob[0] in library(crate.package):
            resolver.collect(crate, crate.module, glob, found, seen)
    return frozenset(found)


class _Resolver(NamedTuple):
    path: str
    has: Callable[[str], bool]
    items: Callable[[str], Items | None]
    library: Callable[[str], frozenset[str]]

    def resolve(self, crate: Crate, module: Path_, glob: Path_) -> tuple[Crate, Path_] | None:
        """The crate and module a glob's path (``glob``, read in ``module`` of ``crate``) names; None: not one of
        the workspace's module files (an external crate's, an enum's, an inline module's)."""
        if not glob or not glob[0]:
            return None
        first = glob[0]
        if first == "crate":
            return crate, glob[1:]
        if first in ("self", "super"):
            mod, i = list(module), 1 if first == "self" else 0
            while i < len(glob) and glob[i] == "super":
                if not mod:
                    return None
                mod.pop()
                i += 1
            return crate, tuple(mod) + glob[i:]
        if self.file(crate, module + glob) is not None:   # a child module (``mod foo;`` ... ``use foo::*``)
            return crate, module + glob
        if first in self.library(crate.package):
            src = os.path.join(crate.package, "src")
            lib = os.path.join(src, "lib.rs")
            if self.has(lib):
                return Crate(src, lib, crate.package, ()), glob[1:]
        return None

    def file(self, crate: Crate, module: Path_) -> str | None:
        if not module:
            return crate.top
        if any(not re.fullmatch(r"\w+", s) for s in module):
            return None
        base = os.path.join(crate.root, *module)
        return next((f for f in (base + ".rs", os.path.join(base, "mod.rs")) if self.has(f)), None)

    def collect(self, crate: Crate, importer: Path_, glob: Path_, found: set[str], seen: set[str]) -> None:
        """Add to ``found`` the names the glob ``glob``, read in module ``importer`` of ``crate``, brings in."""
        target = self.resolve(crate, importer, glob)
        if target is not None:
            self.take(target[0], target[1], crate.root, importer, found, seen, 0)

    def take(self, where: Crate, module: Path_, root: str, importer: Path_, found: set[str], seen: set[str],
             depth: int) -> None:
        """Add to ``found`` the names of ``module`` of ``where`` that module ``importer`` (of the crate whose module
        files are under ``root``) sees: its public ones, all of them when the importer is inside it; then those of
        the modules its own globs name, as seen from the importer."""
        file = self.file(where, module)
        if file is None or file == self.path or file in seen:
            return   # the document's own module: its names are the document's
        seen.add(file)
        items = self.items(file)
        if items is None:
            return
        inside = where.root == root and importer[:len(module)] == module
        found.update(items.public)
        if inside:
            found.update(items.private)
        if depth < DEPTH:
            for sub, public in items.globs:
                if public or inside:
                    nested = self.resolve(where, module, sub)   # read in that module
                    if nested is not None:
                        self.take(nested[0], nested[1], root, importer, found, seen, depth + 1)


_CARGO_NAME = re.compile(r"^\s*name\s*=\s*[\"']([^\"']+)[\"']", re.M)
_VERSIONED = re.compile(r"-v?\d+(?:\.\d+)*(?:[-+.][\w.]*)?$")
_cargo_lock = threading.Lock()
_cargo: dict[str, tuple[int, frozenset[str]]] = {}   # Cargo.toml path -> (mtime_ns, names), a few hundred at most


def library_names(package: str, disk: str | None) -> frozenset[str]:
    """The names the library of the package folder ``package`` goes by in a path: its ``Cargo.toml``'s ``[lib]`` and
    ``[package]`` names (``disk``: the folder on disk, when it is one; read again when it changes) and the folder's
    name less a version (``rmp-0.8.11``: ``rmp``), with '-' as '_'."""
    names = {_VERSIONED.sub("", os.path.basename(package)).replace("-", "_")}
    if disk:
        cargo = os.path.join(disk, "Cargo.toml")
        try:
            mtime = os.stat(cargo).st_mtime_ns
        except OSError:
            mtime = -1
        if mtime >= 0:
            with _cargo_lock:
                known = _cargo.get(cargo)
            if known is None or known[0] != mtime:
                known = (mtime, _cargo_names(cargo))
                with _cargo_lock:
                    if len(_cargo) > 512:
                        _cargo.clear()
                    _cargo[cargo] = known
            names |= known[1]
    names.discard("")
    return frozenset(names)


def _cargo_names(cargo: str) -> frozenset[str]:
    """The ``name`` of a ``Cargo.toml``'s ``[package]`` and ``[lib]`` sections, as a path names it."""
    try:
        with open(cargo, encoding="utf-8", errors="replace") as f:
            text = f.read(200_000)
    except OSError:
        return frozenset()
    found = set()
    for section in re.split(r"^\s*\[", text, flags=re.M)[1:]:
        head = section.split("]", 1)[0].strip()
        if head in ("package", "lib"):
            m = _CARGO_NAME.search(section)
            if m:
                found.add(m.group(1).replace("-", "_"))
    return frozenset(found)
