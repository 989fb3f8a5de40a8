"""What a code action did, in one sentence for the user: "filled 2 of 3 holes; 1 had no fill that parses"."""

from __future__ import annotations

import re

from engine import Completion

from .action_specs import BODY as _BODY
from .action_specs import FILL as _FILL
from .action_specs import FIX as _FIX
from .action_specs import ActionSpec


_EOL = re.compile(r"\r\n?|\n")  # LSP's line breaks: a lone CR ends a line too


def _breaks(text: str, end: int | None = None) -> int:
    return len(_EOL.findall(text, 0, len(text) if end is None else end))


def describe(action: str, text: str, ranges: list[tuple[int, int]], completion: Completion) -> str:
    """The sentence for ``completion`` of ``action`` on ``text`` (``ranges``: the holes asked for)."""
    if action == _FILL:
        done = {f.start for f in completion.fills}
        filled = sum(1 for s, _ in ranges if s in done)
        missing = len(ranges) - filled
        head = f"filled {filled} of {len(ranges)} hole{'s' if len(ranges) != 1 else ''}"
        unsure = min(missing, completion.unsure)
        unparsed = missing - unsure
        return head + (f"; {unparsed} had no fill that parses" if unparsed else "") + \
            (f"; {unsure} had no fill likely enough to offer" if unsure else "")
    if action == _BODY:
        if not completion.fills:
            return "no body that parses was found"
        written = sum(_lines(f.text.strip("\r\n")) for f in completion.fills) - completion.stub_kept
        # written line by line (engine/oneline.py ``fill_body``): ``unsure``, the line after them was withheld
        return f"completed {written} line{'s' if written != 1 else ''} of the body" + \
            ("; the next line was not likely enough to offer" if completion.unsure else "") + \
            ("; it does not return yet, so its stub stays after them" if completion.stub_kept else "")
    if action == _FIX:
        return _fix(text, completion)
    lines = _changed(text, completion)
    return f"rewrote {lines} line{'s' if lines != 1 else ''}" if completion.fills else "nothing changed"


def nothing(spec: ActionSpec, completion: Completion) -> str:
    """What the user is told when ``completion`` of ``spec``'s action has no edit: the spec's "nothing that parses"
    sentence, or, when the quality gate withheld what the model wrote (``Completion.unsure``: a stutter, comments
    alone, tokens the model was unsure of), that nothing was likely enough to offer."""
    if completion.unsure and not completion.fills:
        what = {_FILL: "fill", _BODY: "body", _FIX: "fix"}.get(spec.name, "rewrite")
        return f"no {what} likely enough to offer was found (what the model wrote was repetitive or unsure)"
    return spec.nothing


def _fix(text: str, completion: Completion) -> str:
    if not completion.fills:
        return "no fix that parses was found"
    f = completion.fills[0]
    line = _breaks(text, f.start) + 1
    old = text[f.start:f.end]
    if not _breaks(old + f.text) and len(old) <= 3 and len(f.text) <= 3:
        if not old:
            return f"fixed the syntax error: inserted {f.text!r} on line {line}"
        if not f.text:
            return f"fixed the syntax error: deleted {old!r} on line {line}"
        return f"fixed the syntax error: replaced {old!r} with {f.text!r} on line {line}"
    changed = _changed(text, completion)
    return f"fixed the syntax error: rewrote {changed} line{'s' if changed != 1 else ''} from line {line}"


def _changed(text: str, completion: Completion) -> int:
    """The lines the edits touch: those each replaced or those it wrote, whichever are more (a rewrite or a fix that
    took a whole function away and wrote one line in its place rewrote every line it took away)."""
    return sum(max(_lines(text[x.start:x.end]), _lines(x.text)) for x in completion.fills)


def _lines(text: str) -> int:
    """The lines ``text`` spans (at least one; a final line break ends the last line, it starts no new one)."""
    return max(1, _breaks(text) + (0 if not text or text.endswith(("\n", "\r")) else 1))
