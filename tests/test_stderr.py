"""What a normal session writes on stderr: nothing. Editors log every stderr line of a language server (Neovim
as [ERROR]), so a progress bar or a library's chatter there reads as a failure. The real server, the
embedded model, the default verbosity."""

import sys

import pytest

from benchmarks.lsp_client import LspClient

SERVER = [sys.executable, "-m", "lsp_server"]  # no -v: what an editor starts


def test_a_normal_start_and_fill_write_nothing_on_stderr(tmp_path):
    stderr = tmp_path / "stderr.txt"
    with LspClient(SERVER, stderr_path=stderr) as client:
        client.initialize({"threads": 1})
        assert client.wait_ready(120)["state"] == "ready"
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": "file:///quiet.py", "languageId": "python", "version": 1,
            "text": "def add(a, b):\n    \n"}})
        answer = client.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": "file:///quiet.py"}, "position": {"line": 1, "character": 4},
            "context": {"triggerKind": 1}}, 60)
        assert "items" in answer
    assert client.proc.returncode == 0
    assert stderr.read_text() == ""


def test_requests_the_client_got_wrong_are_answered_and_write_nothing_on_stderr(tmp_path):
    """An unknown document, a position past the end, an unknown command: each is answered with its error, and
    nothing goes to stderr (pygls logged each with a traceback at error level, which editors show as the server
    failing)."""
    from benchmarks.lsp_client import LspResponseError
    stderr = tmp_path / "stderr.txt"
    with LspClient(SERVER, stderr_path=stderr) as client:
        client.initialize({"threads": 1})
        assert client.wait_ready(120)["state"] == "ready"
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": "file:///a.py", "languageId": "python", "version": 1, "text": "x = 1\n"}})
        wrong = [
            ("textDocument/inlineCompletion", {"textDocument": {"uri": "file:///unopened.py"},
                                               "position": {"line": 0, "character": 0}, "context": {"triggerKind": 1}},
             "unknown document"),
            ("textDocument/inlineCompletion", {"textDocument": {"uri": "file:///a.py"},
                                               "position": {"line": 9, "character": 0}, "context": {"triggerKind": 1}},
             "past the end"),
            ("textDocument/codeAction", {"textDocument": {"uri": "file:///a.py"},
                                         "range": {"start": {"line": 0, "character": 0},
                                                   "end": {"line": 5, "character": 0}}, "context": {"diagnostics": []}},
             "past the end"),
            ("workspace/executeCommand", {"command": "diffusion.nope", "arguments": []}, "unknown command"),
        ]
        for method, params, says in wrong:
            with pytest.raises(LspResponseError, match=says):
                client.request(method, params, 60)
    assert client.proc.returncode == 0
    assert stderr.read_text() == ""


def test_an_empty_answer_says_why_in_the_log(tmp_path):
    """The real model's fill after this emoji line is withheld as too unsure, so the answer is empty, and the
    server's log said nothing about why: with -v it now says so, and still nothing at the default verbosity (the
    test above). (Its fill here was once byte tokens that form no UTF-8, refused whatever the settings; the loop
    keeps byte tokens valid UTF-8 now, engine/backends/utf8.py, and tests/test_utf8_fills.py gets the fill
    with ``minConfidence`` 0.)"""
    stderr = tmp_path / "stderr.txt"
    line = '    s = "\U0001f600\U0001f600\u00e9" + '
    text = "def f(x):\n" + line + "\n    return s\n"
    with LspClient(SERVER + ["-v"], stderr_path=stderr) as client:
        client.initialize({"threads": 1})
        assert client.wait_ready(120)["state"] == "ready"
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": "file:///emoji.py", "languageId": "python", "version": 1, "text": text}})
        answer = client.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": "file:///emoji.py"}, "position": {"line": 1, "character": len(line) + 2},
            "context": {"triggerKind": 1}}, 60)
    if answer["items"]:
        pytest.skip("this model offers a fill here")
    log = stderr.read_text()
    assert "no fill for file:///emoji.py v1" in log and "withheld as too unsure" in log


def test_answers_to_a_document_that_moved_on_write_nothing_on_stderr(tmp_path):
    """A code action resolved after the user typed (ContentModified) is the protocol's ordinary answer, not a
    failure: answered, and nothing on stderr (pygls logged each with a 25-line traceback at error level: a
    multi-language storm of 300 operations wrote 13 of them)."""
    from benchmarks.lsp_client import LspResponseError
    from benchmarks.storm_ops import CAPABILITIES
    stderr = tmp_path / "stderr.txt"
    text = "def area(r):\n    pass\n\n\ndef main():\n    print(area(2))\n"
    with LspClient(SERVER, stderr_path=stderr) as client:
        client.request("initialize", {"processId": None, "rootUri": None, "capabilities": CAPABILITIES,
                                      "initializationOptions": {"threads": 1}})
        client.notify("initialized", {})
        assert client.wait_ready(120)["state"] == "ready"
        uri = "file:///moved.py"
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}})
        here = {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 4}}
        offered = client.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": here,
                                                             "context": {"diagnostics": []}}, 60)
        assert offered and all(action.get("data") for action in offered)
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
            {"range": {"start": {"line": 5, "character": 0}, "end": {"line": 5, "character": 0}}, "text": "    #\n"}]})
        for action in offered:
            with pytest.raises(LspResponseError, match="version 2"):
                client.request("codeAction/resolve", action, 60)
    assert client.proc.returncode == 0
    assert stderr.read_text() == ""
