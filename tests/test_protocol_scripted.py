"""The real server on a scripted engine (``build_server(engine_factory)``, no torch): settings, reloads,
action kinds and drafts over stdio, fast. The model's own behaviour is tested end to end elsewhere."""

from __future__ import annotations

import sys
import time

import pytest

from benchmarks.lsp_client import LspClient
from engine.config import EMBEDDED_DIR, FillOptions, LoadConfig
from lsp_server.settings import setting_fields
from tests.scripted import ANSWER, BROKEN_ANSWER, BROKEN_MARK, INVENTED_ANSWER, INVENTED_MARK

SCRIPTED = [sys.executable, "-m", "tests.scripted", "-v"]
# A changed, valid value for every setting (the defaults are the dataclasses').
CHANGED = {"model": str(EMBEDDED_DIR), "device": "cpu", "dtype": "float32", "deviceMap": "auto", "threads": 2,
           "kvCache": False, "cacheRefresh": 2, "tMin": 0.3, "tMax": 0.9, "steps": 3, "threshold": 0.5,
           "maxHoleTokens": 12, "prefixTokens": 4, "suffixTokens": 2, "validate": False, "debounceMs": 1,
           "drafts": True, "draftIntervalMs": 5, "minConfidence": 1.0, "namesRule": False}
LOAD = sorted(name for name, (group, _) in setting_fields().items() if group == "load")
FILL = sorted(name for name, (group, _) in setting_fields().items() if group == "fill")
DOC = "import os\n\n\ndef f(a, b):\n    x = a + b\n    return \n\n\ndef g():\n    pass\n"


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


@pytest.fixture(scope="module")
def server():
    with LspClient(SCRIPTED) as client:
        client.initialize({"threads": 1})
        client.wait_ready(60)
        yield client


def test_the_settings_are_the_dataclasses_fields():
    assert set(LOAD) | set(FILL) | {"debounceMs", "drafts", "draftIntervalMs"} == set(CHANGED)
    assert {n for n in LOAD} == {"model", "device", "dtype", "deviceMap", "threads", "kvCache", "cacheRefresh",
                                 "tMin", "tMax"}
    assert len(FILL) == len([f for f in vars(FillOptions()) if not f.startswith("_")])


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
    mark = {"namesRule": INVENTED_MARK, "minConfidence": ""}.get(name, BROKEN_MARK)
    text = ("x = 1\n" * 40) + DOC + mark + "y = \n"
    open_doc(server, uri, text)
    line = text.count("\n") - 1
    default = inline(server, uri, line, 4)
    before = stats(server)
    configure(server, **{name: CHANGED[name]})
    changed = inline(server, uri, line, 4)
    after = stats(server)
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
