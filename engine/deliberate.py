"""Deliberate stubs: a ``pass`` or ``...`` the code means, which "Fill holes" leaves alone unless selected.

An ``__exit__``/``__aexit__``/``__del__`` body, an ``except``/``finally`` body (already no hole), an abstract
method, an ``@overload``, a method of a ``Protocol`` class, and the body of an empty class (``class
Error(Exception): pass``) are written that way on purpose. Python only; other languages have no such idiom.
"""

from __future__ import annotations

import tree_sitter

_QUIET_METHODS = frozenset({"__exit__", "__aexit__", "__del__", "__init_subclass__", "__post_init__"})
_MARKERS = ("abstractmethod", "abstractproperty", "overload")


def is_deliberate(node: tree_sitter.Node) -> bool:
    """Is this ``pass``/``...`` statement (the whole body of its block) meant to stay?"""
    block = node.parent
    owner = block.parent if block is not None else None
    if owner is None:
        return False
    if owner.type == "class_definition":
        return True  # an empty class: an exception type, a marker, a namespace
    if owner.type != "function_definition":
        return False
    name = _text(owner.child_by_field_name("name"))
    if name in _QUIET_METHODS:
        return True
    decorated = owner.parent if owner.parent is not None and owner.parent.type == "decorated_definition" else None
    if decorated is not None and any(
            any(m in _text(d) for m in _MARKERS) for d in decorated.children if d.type == "decorator"):
        return True
    return _in_protocol(owner)


def _in_protocol(function: tree_sitter.Node) -> bool:
    """A method of a class whose bases name ``Protocol``."""
    node = function.parent
    while node is not None and node.type != "class_definition":
        if node.type == "function_definition":
            return False  # a nested function, not a method
        node = node.parent
    if node is None:
        return False
    bases = node.child_by_field_name("superclasses")
    return bases is not None and "Protocol" in _text(bases)


def _text(node: tree_sitter.Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""
