"""The real server on a scripted engine (``build_server(engine_factory)``, no torch): settings, reloads,
action kinds and drafts over stdio, fast. The model's own behaviour is tested end to end elsewhere."""

from __future__ import annotations

import sys
import time

import pytest

from benchmarks.lsp_client import LspClient, LspResponseError
from engine.config import EMBEDDED_DIR, FillOptions, LoadConfig
from lsp_server.settings import setting_fields
from tests.scripted import ANSWER, BROKEN_ANSWER, BROKEN_MARK, INVENTED_ANSWER, INVENTED_MARK, LENGTHS_MARK

SCRIPTED = [sys.executable, "-m", "tests.scripted", "-v"]
# A changed, valid value for every setting (the defaults are the dataclasses').
CHANGED = {"model": str(EMBEDDED_DIR), "device": "cpu", "dtype": "float32", "deviceMap": "auto", "threads": 2,
           "kvCache": False, "cacheRefresh": 2, "tMin": 0.3, "tMax": 0.9, "steps": 3, "threshold": 0.5,
           "maxHoleTokens": 12, "prefixTokens": 4, "suffixTokens": 2, "validate": False, "maxAlternatives": 1,
           "debounceMs": 1, "drafts": True, "draftIntervalMs": 5, "minConfidence": 1.0, "namesRule": False,
           "engine": "http://127.0.0.1:9", "engineTokenFile": "token", "engineCaFile": "ca.pem", "engineTimeout": 5.0,
           "engineRetries": 3, "adapt": "background", "experts": "eager", "quantization": "int8",
           "documentLines": False, "workspaceLines": False, "commonLines": False}
LOAD = sorted(name for name, (group, _) in setting_fields().items() if group == "load")
FILL = sorted(name for name, (group, _) in setting_fields().items() if group == "fill")
DOC = "import os\n\n\ndef f(a, b):\n    x = a + b\n    return \n\n\ndef g():\n    pass\n"
LINES = LENGTHS_MARK + DOC  # at an empty line each hole length gives its own fill: "24" (more confident), "8"


def open_doc(client: LspClient, uri: str, text: str, version: int = 1) -> None:
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": version,
                                                            "text": text}})


def inline(client: LspClient, uri: str, line: int, character: int) -> list[dict]:
    return client.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
        "context": {"triggerKind": 1}}, 30)["items"]


def configure(client: LspClient, **settings) -> None:
    client.notify("workspace/didChangeConfiguration", {"settings": {"diffusionLsp": settings}})


def stats(client: LspClient) -> dict:
    return client.request("diffusion/stats", {}, 10)


def wait_loads(client: LspClient, loads: int) -> dict:
    """Stats once the engine has loaded ``loads`` times and is ready again."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        now = stats(client)
        if now["state"] == "ready" and now["loads"] >= loads:
            return now
        time.sleep(0.02)
    raise AssertionError(f"never reloaded: {stats(client)}")


WORKSPACE_LINE = "z = from_the_workspace()"   # the workspace folder's one line: a "z = " line gets it as an option


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("workspace")
    (root / "lib.py").write_text(WORKSPACE_LINE + "\n")
    with LspClient(SCRIPTED) as client:
        client.initialize({"threads": 1}, root_uri=root.as_uri())
        client.wait_ready(60)
        end = time.monotonic() + 60
        while stats(client)["workspaceLines"]["state"] != "ready":
            assert time.monotonic() < end, stats(client)
            time.sleep(0.05)
        yield client


def test_the_settings_are_the_dataclasses_fields():
    assert set(LOAD) | set(FILL) | {"debounceMs", "drafts", "draftIntervalMs"} == set(CHANGED)
    assert {n for n in LOAD} == {"model", "device", "dtype", "deviceMap", "threads", "kvCache", "cacheRefresh",
                                 "tMin", "tMax", "engine", "engineTokenFile", "engineCaFile", "engineTimeout",
                                 "engineRetries", "adapt", "experts", "quantization"}
    internal = {"line_lengths"}   # the model's, per language (engine/decoding.py): no client sets it
    assert len(FILL) == len([f for f in vars(FillOptions()) if not f.startswith("_") and f not in internal])


@pytest.mark.parametrize("name", LOAD)
def test_changing_a_load_setting_reloads_the_model(server, name):
    before = stats(server)
    configure(server, **{name: CHANGED[name]})
    after = wait_loads(server, before["loads"] + 1)
    snake = next(f for f in vars(LoadConfig()) if f.replace("_", "") == name.lower())
    assert after["loaded"][snake] == CHANGED[name]


@pytest.mark.parametrize("name", FILL)
def test_changing_a_fill_setting_applies_to_the_next_request_without_a_reload(server, name):
    uri = f"file:///fill-{name}.py"
    mark = {"namesRule": INVENTED_MARK, "minConfidence": "", "documentLines": "y = 2\n",
            "commonLines": ""}.get(name, BROKEN_MARK)
    text = ("x = 1\n" * 40) + DOC + mark + ("z = \n" if name == "workspaceLines" else "y = \n")
    line, character = text.count("\n") - 1, 4
    if name == "maxAlternatives":
        text, line, character = LINES, 2, 0
    # these two are about the rule and the count, not the bar: no bar (the calibration's moves with each refit)
    unbarred = name in ("namesRule", "maxAlternatives")
    if unbarred:
        configure(server, minConfidence=0)
    open_doc(server, uri, text)
    default = inline(server, uri, line, character)
    before = stats(server)
    configure(server, **{name: CHANGED[name]})
    changed = inline(server, uri, line, character)
    after = stats(server)
    if unbarred:
        configure(server, minConfidence=None)
    configure(server, **{name: getattr(FillOptions(), next(f for f in vars(FillOptions())
                                                              if f.replace("_", "") == name.lower()))})
    assert after["loads"] == before["loads"] and after["state"] == "ready"
    plan, old = after["last_plan"], before["last_plan"]
    if name == "steps":
        assert plan["steps"] == 3 and old["steps"] != 3
    elif name == "threshold":
        assert plan["threshold"] == 0.5 and old["threshold"] == 0.0
    elif name == "maxHoleTokens":
        assert max(plan["slots"]) <= 12 < max(old["slots"])
    elif name == "prefixTokens":
        assert plan["prefix"] < old["prefix"]
    elif name == "suffixTokens":
        assert plan["suffix"] <= old["suffix"]
    elif name == "minConfidence":  # no estimate reaches 1.0: the fill offered by default is withheld
        assert [i["insertText"] for i in default] == [ANSWER] and changed == []
    elif name == "namesRule":  # a name the document defines nowhere: withheld, unless the rule is off
        assert default == [] and [i["insertText"] for i in changed] == [INVENTED_ANSWER]
    elif name == "maxAlternatives":
        assert [i["insertText"] for i in default] == ["24", "8"] and [i["insertText"] for i in changed] == ["24"]
    elif name == "documentLines":  # "y = 2" above starts as "y = " does: offered to the backend, unless off
        assert old["options"] > 0 and plan["options"] == 0
    elif name == "commonLines":  # no line of the document starts as "y = " does, but many in the corpus do
        assert old["options"] > 0 and plan["options"] == 0
    elif name == "workspaceLines":  # the workspace's "z = from_the_workspace()" is one more option, unless off
        assert old["options"] == plan["options"] + 1
    else:  # validate: the scripted answer after the mark never parses; unchecked, it is offered
        assert name == "validate" and default == [] and [i["insertText"] for i in changed] == [BROKEN_ANSWER]


def test_a_cursor_fill_comes_back_with_drafts(server):
    configure(server, drafts=True, draftIntervalMs=0)
    uri = "file:///drafts.py"
    open_doc(server, uri, DOC)
    items = inline(server, uri, 5, 11)
    assert [i["insertText"] for i in items] == [ANSWER]
    drafts = [p for _, m, p in server.notifications if m == "diffusion/draft" and p["uri"] == uri]
    assert drafts and drafts[-1]["done"] and drafts[-1]["text"] == ANSWER
    assert "action" not in drafts[-1] and all(not d["done"] for d in drafts[:-1])


def test_alternatives_are_offered_best_first_each_with_its_range(server):
    uri = "file:///alternatives.py"
    configure(server, minConfidence=0)   # both lengths' fills, whatever the shipped calibration's bar
    open_doc(server, uri, LINES)
    at = {"line": 2, "character": 0}  # the empty line after "import os"
    items = inline(server, uri, 2, 0)
    assert [i["insertText"] for i in items] == ["24", "8"]
    assert all(i["range"] == {"start": at, "end": at} for i in items)
    listed = server.request("textDocument/completion", {"textDocument": {"uri": uri}, "position": at}, 30)["items"]
    assert [(i["textEdit"]["newText"], i["sortText"]) for i in listed] == [("24", "0"), ("8", "1")]
    # the same fill at both lengths is offered once
    open_doc(server, "file:///one.py", DOC)
    assert [i["insertText"] for i in inline(server, "file:///one.py", 1, 0)] == [ANSWER]
    configure(server, minConfidence=None)


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_a_completion_item_takes_in_the_word_typed_before_it(server, eol):
    """Clients filter completion items by the word before the cursor (Helix, eglot): the fill ``0`` after ``x`` was an
    item labelled ``0`` that they never showed (eglot: "No match"). The item now replaces ``x`` with ``x0`` (a range in
    UTF-16 units: the emoji before it is two)."""
    configure(server, minConfidence=0)
    uri = f"file:///typed-word-{len(eol)}.py"
    open_doc(server, uri, f'x0 = 5{eol}y = "😀" + x{eol}')
    at = {"line": 1, "character": 12}
    assert [(i["insertText"], i["range"]) for i in inline(server, uri, 1, 12)] == [("0", {"start": at, "end": at})]
    items = server.request("textDocument/completion", {"textDocument": {"uri": uri}, "position": at}, 30)["items"]
    assert [(i["label"], i["textEdit"]) for i in items] == [
        ("x0", {"range": {"start": {"line": 1, "character": 11}, "end": at}, "newText": "x0"})]
    # plain text: Helix parses the text of an item of kind Snippet (15) as a snippet, whatever its insertTextFormat
    # (a fill's `${x}` or `$1` became a placeholder, a `\\` an escape)
    assert [(i["kind"], i.get("insertTextFormat", 1)) for i in items] == [(1, 1)]
    configure(server, minConfidence=None)


def test_drafts_say_their_hole_kind_attempt_and_range_and_never_go_back_a_step(server):
    # the last draft is the answer: no bar, whatever the shipped calibration's (the bar is tested with the model)
    configure(server, drafts=True, draftIntervalMs=0, minConfidence=0)
    uri = "file:///draft-attempts.py"
    open_doc(server, uri, LINES)
    inline(server, uri, 2, 0)
    drafts = [p for _, m, p in server.notifications if m == "diffusion/draft" and p["uri"] == uri]
    at = {"line": 2, "character": 0}
    assert len({d["id"] for d in drafts}) == 1 and drafts[-1]["done"]
    steps = [d["step"] for d in drafts]
    assert steps == sorted(steps)
    assert all(d["kind"] == "line" and d["range"] == {"start": at, "end": at} for d in drafts)
    # a one-line hole is tried at 8 and 24 slots: the second attempt restarts the text, the steps go on
    assert [(d["attempt"], d["slots"], d["text"]) for d in drafts[:-1]] == [(0, 8, "8"), (1, 24, "24")]
    assert drafts[-1]["text"] == "24" and "attempt" not in drafts[-1]
    configure(server, minConfidence=None)


def test_a_status_names_state_and_model_apart_and_its_message_does_not_repeat_them(server):
    # :DiffusionStatus once printed "ready embedded embedded ready": the message was the model and the state again
    statuses = [p for _, m, p in server.notifications if m == "diffusion/status"]
    assert [s["state"] for s in statuses[:2]] == ["loading", "ready"]
    assert statuses[0]["message"] == "Suggestions start when it has loaded."
    assert statuses[1]["message"].startswith("Loaded in ") and statuses[1]["message"].endswith("; suggestions are on.")
    for status in statuses:
        assert set(status) - {"instructions", "adapt"} == {"state", "model", "message"}  # adapt: setting on
        assert status["model"] not in status["message"] and status["state"] not in status["message"].lower()
    assert statuses[1]["instructions"] is False  # no backend follows instructions: clients ask for none


def test_actions_carry_kinds_and_names_clients_match_on(server):
    uri = "file:///kinds.py"
    open_doc(server, uri, DOC)
    at = {"line": 9, "character": 4}
    actions = server.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": at, "end": at}, "context": {"diagnostics": []}}, 30)
    # This client has no codeAction literal support: the actions come as commands with their data.
    names = {a["arguments"][0]["action"]: a["command"] for a in actions}
    assert names == {"fillHoles": "diffusion.runAction", "completeBody": "diffusion.runAction"}
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 10, "character": 0}}
    only = server.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": whole,
        "context": {"diagnostics": [], "only": ["refactor.rewrite.rewriteSelection"]}}, 30)
    assert [a["arguments"][0]["action"] for a in only] == ["rewriteSelection"]


def test_an_action_offered_before_the_version_went_back_is_not_run_on_the_new_text(server):
    """LSP versions only increase; a client whose version went 3 -> 4 -> 3 had an action offered for the first
    version 3 computed on the second one's text, and its edit sent for it."""
    uri = "file:///backwards.py"
    open_doc(server, uri, DOC, version=3)
    at = {"line": 9, "character": 4}
    offered = server.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": at, "end": at}, "context": {"diagnostics": []}}, 30)
    (fill,) = [a for a in offered if a["arguments"][0]["action"] == "fillHoles"]
    for version, text in ((4, "x = 1\n"), (3, DOC.replace("def g", "def h"))):
        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                 "contentChanges": [{"text": text}]})
    sent = len(server.notifications)
    with pytest.raises(LspResponseError, match="version went back"):
        server.request("workspace/executeCommand", {"command": fill["command"], "arguments": fill["arguments"]}, 30)
    assert not [m for _, m, _ in server.notifications[sent:] if m == "workspace/applyEdit"]


def test_an_apply_edit_answer_that_cannot_be_read_still_answers_the_command(server, monkeypatch):
    """A client that answers ``workspace/applyEdit`` with ``null``, which is not an ApplyWorkspaceEditResult: pygls
    logged it and the command waiting for it was never answered (an editor's command left running for good).
    (LspClient answers it as the protocol has it; here it is made to answer null.)"""
    answer = server._answer
    monkeypatch.setattr(server, "_answer", lambda method, params: {"result": None}
                        if method == "workspace/applyEdit" else answer(method, params))
    uri = "file:///null-answer.py"
    open_doc(server, uri, DOC)
    at = {"line": 9, "character": 4}
    offered = server.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": at, "end": at}, "context": {"diagnostics": []}}, 30)
    (fill,) = [a for a in offered if a["arguments"][0]["action"] == "fillHoles"]
    with pytest.raises(LspResponseError, match="answer to a request of the server could not be read"):
        server.request("workspace/executeCommand", {"command": fill["command"], "arguments": fill["arguments"]}, 60)
    assert any(m == "workspace/applyEdit" for _, m, _ in server.notifications)
    assert stats(server)["state"] == "ready"
