"""Each code action as one spec: its name, CodeAction kind, title, when it is offered, the engine request it
builds, and what "nothing found" says. Clients recognise an action by its kind or its ``data.action``
name, never by its title. Adding an action: a spec here, its engine request, its test."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from engine import FillRequest, FixRequest, Request, RewriteRequest
from engine.targets import Survey

REWRITE, FILL, BODY, FIX = "rewriteSelection", "fillHoles", "completeBody", "fixSyntax"
_REWRITE_KIND = types.CodeActionKind.RefactorRewrite.value  # "refactor.rewrite"; each action its own sub-kind


class JsonRpcRequestFailed(JsonRpcException):
    """LSP RequestFailed: the request was valid but nothing could be computed."""

    CODE = -32803
    MESSAGE = "Request Failed"


@dataclass(frozen=True)
class Target:
    """What an action is asked to work on: a document's text, the range (str offsets), what is there."""

    text: str
    language: str
    start: int
    end: int
    found: Survey | None        # None for actions that need no survey (a rewrite)
    instruction: str | None
    key: str
    workspace: str | None = None    # the workspace whose files' lines a line filled as the cursor's may take
    path: str | None = None         # (engine.FillRequest's)


Ranges = list[tuple[int, int]]  # the ranges the action's drafts stream (str offsets)


@dataclass(frozen=True)
class ActionSpec:
    name: str                                        # CodeAction.data.action and the draft's "action"
    kind: str                                        # CodeAction.kind
    label: str                                       # the title when nothing more is known
    offered: Callable[[Survey, int, int], bool]      # (survey, start, end): offer it here?
    build: Callable[[Target], tuple[Request, Ranges]]  # the engine request, or JsonRpcRequestFailed
    nothing: str                                     # told to the user when no fill was found
    title: Callable[[Survey], str] | None = None     # the title from what the survey found
    surveys: bool = True                             # needs the survey of the range to build its request
    streams: bool = True                             # streams drafts and progress while it runs
    computed_on_offer: bool = False                  # computed while offering, offered only when it found one
    preferred: bool = False                          # CodeAction.isPreferred

    def titled(self, found: Survey | None) -> str:
        return self.title(found) if self.title is not None and found is not None else self.label


def _rewrite(t: Target) -> tuple[Request, Ranges]:
    if t.end <= t.start:
        raise JsonRpcInvalidParams("select the code to rewrite")
    return RewriteRequest(t.text, t.language, t.start, t.end, t.instruction, key=t.key), [(t.start, t.end)]


def _fill(t: Target) -> tuple[Request, Ranges]:
    if t.found is None or not t.found.blanks:
        raise JsonRpcRequestFailed("no holes to fill here any more")
    blanks = t.found.blanks
    return FillRequest(t.text, t.language, blanks, key=t.key, workspace=t.workspace, path=t.path), \
        [(b.start, b.end) for b in blanks]


def _body(t: Target) -> tuple[Request, Ranges]:
    if t.found is None or t.found.body is None:
        raise JsonRpcRequestFailed("no function body here")
    body = t.found.body
    return FillRequest(t.text, t.language, (body,), t.found.callers, body=True, key=t.key, workspace=t.workspace,
                       path=t.path), [(body.start, body.end)]


def _fix(t: Target) -> tuple[Request, Ranges]:
    if t.found is None or not t.found.errors:
        raise JsonRpcRequestFailed("no syntax error here any more")
    return FixRequest(t.text, t.language, t.found.errors, key=t.key), []


def _holes_title(found: Survey) -> str:
    n = len(found.blanks)
    return f"Fill {n} hole{'s' if n != 1 else ''}"


SPECS: dict[str, ActionSpec] = {spec.name: spec for spec in (
    # The fix comes first: it is preferred when offered.
    ActionSpec(FIX, types.CodeActionKind.QuickFix.value, "Fix syntax error", lambda found, s, e: bool(found.errors),
               _fix, "no fix that parses was found", streams=False, computed_on_offer=True,
               preferred=True),
    ActionSpec(REWRITE, f"{_REWRITE_KIND}.{REWRITE}", "Rewrite selection",
               lambda found, s, e: e > s, _rewrite, "no rewrite that parses and changes something was found",
               surveys=False),
    ActionSpec(FILL, f"{_REWRITE_KIND}.{FILL}", "Fill holes",
               lambda found, s, e: bool(found.blanks), _fill, "no fill that parses was found", title=_holes_title),
    ActionSpec(BODY, f"{_REWRITE_KIND}.{BODY}", "Complete body",
               lambda found, s, e: found.body is not None, _body, "no body that parses was found",
               title=lambda found: f"Complete body of {found.function}"),
)}
