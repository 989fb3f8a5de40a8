"""Lines a constructor's parameters suggest, as fills of a line in its body: ``self.channel = channel``.

A constructor mostly stores its parameters: Python's ``__init__(self, builder, sequence)`` writes ``self.builder =
builder``, a JavaScript or TypeScript ``constructor(controller)`` writes ``this.controller = controller;``. The
embedded model seldom writes that line exactly (``self.mode = builder``, ``return path``, the same assignment three
times) and the document has no such line to copy yet. So a line of a constructor's body (an empty line, a line
inserted before the code of the cursor's line, or a typed one whose code starts such a line) gets, for each parameter
the body does not store yet (the code after such a cursor counted as the body's), the line that stores it
(``stored_lines``, for the constructor ``constructor_at`` finds; an empty line's options from ``param_options``, a
typed line's from ``doclines.line_options``): the field as the class spells it where it does (``self._path``,
``this.#idGenerator``), else the parameter's name; with ``;`` where more lines around end with it than without. They
are plan options like the document's lines (``engine.doclines``): scored on the fill's first forward, the best that
validates joins the fills as a copy, and the confidence estimate decides whether it is offered.

Found from the text (no parse): the nearest constructor header above the cursor (Python ``def __init__(``,
JavaScript and TypeScript ``constructor(``; within ``SCAN_LINES``), its parameters read to the matching ``)``, and
the cursor inside its body (every code line between the signature and the cursor deeper than the header); what is
read around it is bounded (``BODY_LINES``, ``CLASS_SPAN``), so a large file costs what a small one does. Skipped:
the receiver (Python's first parameter), ``*args``/``**kwargs``, ``/`` and ``*``, a rest or destructured parameter, a
TypeScript parameter property (``private readonly x: X``: TypeScript assigns it itself), a parameter the body
passes on already (to ``super(``, or into a field under another name, in an expression or in a tuple:
``this.distance = dist``, ``self.proj = nn.Linear(4, 4, bias=bias)``, ``(self.logits,) = broadcast_all(logits)``:
on the 1,900 whole-line development holes this left 54 holes with options instead of 78, 24 of them with the right
line among the options instead of 26); and in a derived
JavaScript or TypeScript class, every parameter until the body has called ``super(``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from .context import Hole
from .context import indent_unit as _indent_unit
from .context import semicolons
from .doclines import LineOptions, NONE, PARAMETER, empty_line, names_around, neighbour_rank
from .returns import returns_no_value
from .worklines import indent_width

SCAN_LINES = 300       # lines read above the cursor for the constructor's header
SIGNATURE_CHARS = 4000  # a signature longer than this is not read
BODY_LINES = 2000      # lines of the body read below the cursor (what it stores already)
CLASS_SPAN = 20_000    # characters each side of the signature read for the class's spelling of a field
MOST = 8               # parameter lines per hole, in the parameters' order
ORDER_STEP = 0.5       # an empty line's option ranks this much lower than the one of the parameter before it
_HEADERS = {
    "python": re.compile(r"[ \t]*(?:async[ \t]+)?def[ \t]+__init__[ \t]*\("),
    "javascript": re.compile(r"[ \t]*constructor[ \t]*\("),
    "typescript": re.compile(r"[ \t]*(?:(?:public|private|protected)[ \t]+)?constructor[ \t]*\("),
}
_HEADERS["typescriptreact"] = _HEADERS["typescript"]
_HEADERS["javascriptreact"] = _HEADERS["javascript"]
_NAME = re.compile(r"[A-Za-z_$][\w$]*")
_MODIFIERS = re.compile(r"(?:public|private|protected|readonly|override)\b")
_COMMENT = re.compile(r"(?:#|//)[^\n]*|/\*.*?\*/", re.S)   # in a parameter's text: after its name, or before it
_DECORATOR = re.compile(r"@[\w$.]+(?:\([^()]*\))?\s*")
_OPEN, _CLOSE = "([{", ")]}"
_BODY_OPENER = re.compile(r"[^:{\n;]*[:{]|[^:{;]*?\n[^:{;]*[{:]")   # after ``)``: a return type, then ``:``/``{``
_NESTED = re.compile(r"\bdef\b|\bfunction\b|=>|\blambda\b")   # a function inside the constructor's body
_CLASS = re.compile(r"(?m)^[ \t]*(?:export[ \t]+)?(?:default[ \t]+)?(?:abstract[ \t]+)?"
                    r"class\b([^\n{]*\bextends\b)?[^\n{]*\{")


class Constructor(NamedTuple):
    """A constructor around a line of its body (``constructor_at``)."""

    params: list[str]   # the parameters' names ("" for one that stores nothing by itself; Python's first: the receiver)
    body_start: int     # the offset after the signature's opener (``:`` or ``{``)
    indent: str         # the header's indentation
    receiver: str = ""  # ``self`` (Python's first parameter) or ``this``
    body: str = ""      # the body's text around the hole, the hole's own line left out (``_body``)


def constructor_at(text: str, hole: Hole, language: str) -> Constructor | None:
    """The constructor (Python ``__init__``, JavaScript/TypeScript ``constructor``) whose body holds ``hole``'s line;
    None elsewhere, or when what is typed before the hole on its line is at or left of the header's indentation."""
    header = _HEADERS.get(language)
    if header is None:
        return None
    line_start = text.rfind("\n", 0, hole.start) + 1
    found = _constructor(text, line_start, header)
    typed = text[line_start:hole.end]
    own = typed[:len(typed) - len(typed.lstrip(" \t"))]
    if found is None or own and indent_width(own) <= indent_width(found.indent):
        return None
    params = found.params
    receiver = (params[0] if params and params[0] else "self") if language == "python" else "this"
    return found._replace(receiver=receiver, body=_body(text, found.body_start, line_start, hole.end, found.indent))


def stored_lines(text: str, at: int, found: Constructor, language: str) -> list[str]:
    """The lines (no indentation) that store the parameters of ``found`` its body does not store or pass on yet,
    first parameter first, at most ``MOST``; none in a derived JavaScript or TypeScript class before the body has
    called ``super(`` (``at``: the cursor's offset, on a line of the body)."""
    line_start = text.rfind("\n", 0, at) + 1
    params, body_start, _, receiver, body = found
    if language != "python" and _derived(text, body_start) and "super(" not in text[body_start:line_start]:
        return []   # a derived class's constructor calls super() before it may use ``this``
    python = language == "python"
    semicolon = "" if python else semicolons(text, line_start) or ""
    lines: list[str] = []
    for name in (p for p in (params[1:] if python else params) if p):
        fields = _fields(text[max(0, body_start - CLASS_SPAN):body_start + CLASS_SPAN], receiver, name, python)
        if any(re.search(rf"(?<![\w$.]){re.escape(receiver)}\.{re.escape(f)}\s*=(?!=)", body) for f in fields) \
                or _used(body, name, receiver):
            continue   # the body stores it already, or passes it on
        lines += [f"{receiver}.{f} = {name}{semicolon}" for f in fields]
    return lines[:MOST]


def param_options(text: str, hole: Hole, rest_of_line: str, found: Constructor | None, lines: list[str],
                  language: str) -> LineOptions:
    """``stored_lines`` as the options of an empty line of the constructor's body: each indented as typed, else as
    the body's first code line, with its rank (``doclines.neighbour_rank``, as a line seen beside both neighbours,
    ``ORDER_STEP`` lower per parameter before it). (A typed line gets them from ``doclines.line_options``.)"""
    line_start = text.rfind("\n", 0, hole.start) + 1
    if found is None or not lines or not empty_line(hole, rest_of_line, line_start):
        return NONE
    # a line that goes in before the code of the cursor's line is indented as that code is, where that is the body's
    ahead = hole.heal + rest_of_line
    code = ahead[:len(ahead) - len(ahead.lstrip(" \t"))] if ahead.strip() else ""
    deeper = code if indent_width(code) > indent_width(found.indent) else ""
    indent = deeper or hole.heal or _body_indent(text, found.body_start, line_start, found.indent, language)
    near, known = names_around(text, line_start)
    tail = "\n" if hole.keep_newline else ""
    out: dict[str, float] = {}
    for k, code in enumerate(lines):   # the parameters in order: the first not stored yet comes first
        out.setdefault(indent + code + tail, neighbour_rank(code, True, 0, near, known) - ORDER_STEP * k)
    return LineOptions(tuple(out), (None,) * len(out), (PARAMETER,) * len(out), tuple(out.values()))


def constructor_check(text: str, start: int, found: Constructor | None) -> Callable[[str], bool] | None:
    """For a fill at ``start`` in the body of the constructor ``found``: does it return no value (a line
    ``return x``: Python's ``__init__`` raises TypeError for anything but None, TypeScript refuses it, and
    JavaScript's ``new`` drops a primitive; ``return None`` and ``return undefined;`` say nothing a bare ``return``
    does not), and does no line of it store a field exactly as a line of the body (``found.body``: the hole's own
    lines are not the body's, so a rewrite may keep its line) does already, or as another of
    its own lines (``self._config = config`` again, ``this.maxZoom = Infinity;`` copied from the line below: on the
    1,900 whole-line development holes 11 offered fills were such a line, none right, and no right line was one)?
    ``None``: nothing to check (no constructor, or a function nested in it above the cursor)."""
    line_start = text.rfind("\n", 0, start) + 1
    if found is None or _NESTED.search(text, found.body_start, line_start):
        return None
    typed = text[line_start:start]
    no_value = returns_no_value(typed)
    field = _field(found.receiver)
    stored = {line.strip() for line in found.body.split("\n") if _assigns(line, field)}

    def fits(fill: str) -> bool:
        stores = [line.strip() for line in (typed + fill).split("\n") if _assigns(line, field)]
        return no_value(fill) and len(set(stores)) == len(stores) and not stored.intersection(stores)
    return fits


def _constructor(text: str, line_start: int, header: re.Pattern[str]) -> Constructor | None:
    """The constructor whose body holds the line starting at ``line_start`` (a parameter that stores nothing by
    itself: ``*args``, a destructured or rest parameter, a parameter property, is ""); None when the nearest
    constructor header above (within ``SCAN_LINES``) does not hold the line: a code line between its signature and
    the line is not deeper than the header."""
    end = line_start
    for _ in range(SCAN_LINES):
        if end <= 0:
            return None
        lo = text.rfind("\n", 0, end - 1) + 1
        line = text[lo:end].rstrip("\r\n")
        end = lo
        m = header.match(line)
        if m is None:
            continue
        signature = _signature(text, lo + m.end() - 1)
        if signature is None:
            return None
        params, after = signature
        indent = line[:len(line) - len(line.lstrip(" \t"))]
        if after > line_start or not _inside(text, after, line_start, indent_width(line)):
            return None
        return Constructor(params, after, indent)
    return None


def _derived(text: str, at: int) -> bool:
    """Is the nearest ``class`` header before ``at`` one that ``extends`` another class?"""
    lo = max(0, at - 20_000)
    heads = list(_CLASS.finditer(text, lo, at))
    return bool(heads) and heads[-1].group(1) is not None


def _signature(text: str, opener: int) -> tuple[list[str], int] | None:
    """The parameters of the list whose ``(`` is at ``opener`` and the offset after the body's opener (``:`` or
    ``{``) that follows the matching ``)`` (a return type between them allowed); None when it is not closed within
    ``SIGNATURE_CHARS`` or no opener follows."""
    depth, quote, start, parts = 0, "", opener + 1, []
    limit = min(len(text), opener + SIGNATURE_CHARS)
    i = opener
    while i < limit:
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'`":
            quote = c
        elif c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
            if depth == 0:
                parts.append(text[start:i])
                m = _BODY_OPENER.match(text, i + 1)
                return ([_param(p) for p in parts], m.end()) if m is not None else None
        elif c == "," and depth == 1:
            parts.append(text[start:i])
            start = i + 1
        elif c == "#" and text[i - 1] in " \t\n(,":
            nl = text.find("\n", i)   # a Python comment in the signature
            i = limit if nl < 0 else nl
            continue
        i += 1
    return None


def _param(part: str) -> str:
    """A parameter's name, or "" when it stores nothing by itself (see ``_constructor``)."""
    p = _DECORATOR.sub("", _COMMENT.sub("", part)).strip()
    if not p or p[0] in "*/{[." or _MODIFIERS.match(p):
        return ""
    m = _NAME.match(p)
    return "" if m is None else m.group()


def _inside(text: str, after: int, line_start: int, width: int) -> bool:
    """Every code line from the one after the signature's opener to the cursor's line deeper than ``width``."""
    rest = text[after:line_start]
    first = rest.split("\n", 1)
    lines = first[1].split("\n") if len(first) > 1 else []
    if first[0].strip() and not first[0].strip().startswith(("#", "//")):
        return False   # code on the header's line after the opener: a one-line body
    return all(not line.strip() or indent_width(line) > width for line in lines)


def _body(text: str, body_start: int, line_start: int, hole_end: int, header_indent: str) -> str:
    """The body's text from its opener to its last line deeper than the header, the hole's lines (from
    ``line_start`` to the end of the line of ``hole_end``) left out; but where only indentation is before the
    hole's end, the code after it is the body's when it is deeper than the header (the line goes in before it: at
    the start of ``self.b = b``, ``b`` is stored already), else the body ends above the hole's line (the line goes
    in before the next method: what follows is not the body's)."""
    line_end = text.find("\n", hole_end)
    line_end = len(text) if line_end < 0 else line_end
    end, width = line_end, indent_width(header_indent)
    line = text[line_start:line_end]
    own = ""
    if not text[line_start:hole_end].strip() and line.strip():
        if indent_width(line) <= width:
            return text[body_start:line_start]   # the line goes in before the code after the body
        own = text[hole_end:line_end]
    for _ in range(BODY_LINES):
        if end >= len(text):
            break
        nxt = text.find("\n", end + 1)
        nxt = len(text) if nxt < 0 else nxt
        line = text[end + 1:nxt]
        if line.strip() and indent_width(line) <= width:
            break
        end = nxt
    return text[body_start:line_start] + own + text[line_end:end]


def _body_indent(text: str, body_start: int, line_start: int, header_indent: str, language: str) -> str:
    """The indentation of the body's first code line (other than the cursor's), else the header's one unit deeper."""
    width = indent_width(header_indent)
    below = text[line_start:line_start + 4000].split("\n", 1)[-1]
    for line in (text[body_start:line_start] + below).split("\n")[1:]:
        if line.strip():
            if indent_width(line) > width:
                return line[:len(line) - len(line.lstrip(" \t"))]
            break
    return header_indent + (_indent_unit(text, line_start, language) or "    ")


_ASSIGN = re.compile(r"(?<![=!<>:+\-*/%&|^@.])=(?![=>])")   # a line's first plain ``=`` (not ``==``, ``+=``, ``=>``)


def _field(receiver: str) -> re.Pattern[str]:
    """A field of ``receiver`` (``self.x``, ``this.#x``)."""
    return re.compile(rf"(?<![\w$.]){re.escape(receiver)}\.[\w$#]+")


def _assigns(line: str, field: re.Pattern[str]) -> re.Match[str] | None:
    """The ``=`` of ``line``'s assignment where a ``field`` is its target, alone, annotated or in a tuple
    (``self.x = ``, ``self.x: int = ``, ``(self.x,) = ``; not an item of it, ``self.x[k] = ``, nor an argument of a
    call, ``f(self.x, k=``); else None."""
    m = _ASSIGN.search(line)
    if m is None:
        return None
    target = line[:m.start()].split(":", 1)[0]
    return m if not any(c in target.lstrip().lstrip("([") for c in "([") and field.search(target) else None


def _used(body: str, name: str, receiver: str) -> bool:
    """Does the body pass the parameter on already: to ``super(`` (the base class stores it) or into a field of the
    receiver under another name or in an expression (``this.distance = dist``, ``self.dropout = nn.Dropout(p)``,
    ``(self.logits,) = broadcast_all(logits)``)?"""
    word = re.compile(rf"(?<![\w$.]){re.escape(name)}(?![\w$])")
    field = _field(receiver)

    def stores(line: str) -> bool:   # a field the target of the line's assignment, the name on its right
        m = _assigns(line, field)
        return m is not None and bool(word.search(line, m.end()))
    return any(re.search(rf"\bsuper\b.*\(.*{word.pattern}", line) or stores(line) for line in body.split("\n"))


def _fields(text: str, receiver: str, name: str, python: bool) -> list[str]:
    """The fields a parameter may be stored in: those of its spellings ``text`` (the code around the class) uses
    with ``receiver`` or declares (``name``, ``_name``, and ``#name`` in JavaScript or TypeScript), else ``name``."""
    spellings = [name, "_" + name] if python else [name, "#" + name, "_" + name]
    used = [f for f in spellings if re.search(rf"(?<![\w$.]){re.escape(receiver)}\.{re.escape(f)}(?![\w$])", text)
            or not python and re.search(rf"(?m)^[ \t]*(?:(?:private|protected|public|readonly|static|declare)\s+)*"
                                        rf"{re.escape(f)}[?!]?\s*[:=;]", text)]
    return used or [name]

