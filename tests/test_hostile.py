"""Hostile bytes and clients against real server processes (issue 18): broken framing, invalid JSON-RPC,
batches, requests after shutdown, a 2 MB single-line document, and TCP with two clients and a token."""

import json

import pytest

from tests.wire import INITIALIZE, StdioServer, TcpServer, frame, notification, request

STATS = "diffusion/stats"


@pytest.fixture
def stdio(tmp_path):
    server = StdioServer(tmp_path / "server.log")
    yield server
    server.close()


def _parse_error(m) -> bool:
    return isinstance(m, dict) and m.get("id") is None and m.get("error", {}).get("code") == -32700


BODY = json.dumps(request(7, STATS, {})).encode()


@pytest.mark.parametrize("header", [
    b"Content-Length: 100000000000\r\n\r\n",     # killed the server (MemoryError in the reader)
    b"Content-Length: 3000000000\r\n\r\n",       # left it waiting for 3 GB: silent for good
    b"Content-Length: 99999999999999999999999999999999999999999\r\n\r\n",
    b"Content-Length: -20\r\n\r\n",
    b"Content-Length: twenty\r\n\r\n",
    b"Content-Type: application/vscode-jsonrpc\r\n\r\n",  # no Content-Length at all
], ids=["100GB", "3GB", "40-digits", "negative", "non-numeric", "missing"])
def test_a_bad_header_is_answered_and_the_next_request_too(stdio, header):
    wire = stdio.wire
    wire.write(header + BODY + frame(request(8, STATS, {})))
    error = wire.wait_for(_parse_error)
    assert wire.answer(8)["result"]["state"] == "idle"
    assert stdio.proc.poll() is None
    assert "framing error" in stdio.log.read_text()
    assert not any(isinstance(m, dict) and m.get("id") == 7 for m in wire.messages)  # its body was skipped
    assert error["error"]["message"].startswith("Parse error")


def test_a_length_too_short_or_too_long_loses_only_that_message(stdio):
    wire = stdio.wire
    wire.write(b"Content-Length: 10\r\n\r\n" + BODY + frame(request(8, STATS, {})))
    wire.wait_for(_parse_error)
    assert "result" in wire.answer(8)
    # too long: the next two messages are swallowed into the body, then read again from their headers
    wire.write(b"Content-Length: %d\r\n\r\n" % (len(BODY) + 40) + BODY + frame(request(9, STATS, {}))
               + frame(request(10, STATS, {})))
    assert "result" in wire.answer(9) and "result" in wire.answer(10)
    assert sum(map(_parse_error, wire.messages)) == 2


def test_garbage_between_messages_is_skipped(stdio):
    wire = stdio.wire
    wire.write(frame(request(1, STATS, {})) + b"\x00\xffgarbage\r\nmore: garbage\r\n\r\n{]" + b"x" * 20000
               + frame(request(2, STATS, {})))
    assert "result" in wire.answer(1) and "result" in wire.answer(2)
    assert sum(map(_parse_error, wire.messages)) == 1


@pytest.mark.parametrize("body,rid", [
    (b'{"jsonrpc": "2.0", "id": 5, "method": ', None),           # not JSON
    (b"42", None),                                               # JSON, not a message
    (b'{"id": 5, "method": "diffusion/stats"}', 5),              # no "jsonrpc"
    (b'{"jsonrpc": "2.0", "id": 5, "method": 17}', 5),           # a method that is not a string
    (b'{"jsonrpc": "2.0", "id": [1], "method": "x"}', None),    # an id that is not an id
])
def test_invalid_messages_are_answered(stdio, body, rid):
    wire = stdio.wire
    wire.write(b"Content-Length: %d\r\n\r\n" % len(body) + body + frame(request(8, STATS, {})))
    answered = wire.wait_for(lambda m: isinstance(m, dict) and "error" in m and m["id"] == rid)
    assert answered["error"]["code"] in (-32700, -32600)
    assert "result" in wire.answer(8)


def test_a_batch_is_answered_with_an_error_per_request(stdio):
    wire = stdio.wire
    wire.send([request(10, STATS, {}), notification("initialized", {}), 5, request("x", STATS, {})])
    wire.send([])
    batch = wire.wait_for(lambda m: isinstance(m, list))
    assert sorted(str(a["id"]) for a in batch) == ["10", "None", "x"]  # the notification gets none
    assert {a["error"]["code"] for a in batch} == {-32600}
    assert "not supported" in batch[0]["error"]["message"]
    empty = wire.wait_for(lambda m: isinstance(m, dict) and m.get("id") is None and "error" in m)
    assert empty["error"]["code"] == -32600
    wire.send(request(11, STATS, {}))
    assert wire.answer(11)["result"]["state"] == "idle"  # nothing in the batch ran: no model was loaded


def test_requests_after_shutdown_get_invalid_request(stdio):
    wire = stdio.wire
    wire.send(request(1, "initialize", INITIALIZE))
    wire.answer(1)
    wire.send(request(2, "shutdown"))
    assert wire.answer(2)["result"] is None
    wire.send(request(3, STATS, {}))
    wire.send(request(4, "textDocument/hover", {"textDocument": {"uri": "file:///a.py"},
                                                "position": {"line": 0, "character": 0}}))
    for rid in (3, 4):
        assert wire.answer(rid)["error"]["code"] == -32600
    wire.send(notification("exit"))
    assert stdio.proc.wait(30) == 0


def test_requests_before_initialize_get_server_not_initialized(stdio):
    """LSP's lifecycle: a completion sent before ``initialize`` was served (an empty answer, a code action
    "canceled"), a didOpen before it kept, ``shutdown`` before it accepted, a second ``initialize`` served again
    (its settings and folders replacing the first's) and a second ``initialized`` loaded a second model. Now a
    request before initialize gets ServerNotInitialized (-32002), a notification is dropped, a second initialize
    gets Invalid Request and a second initialized is dropped; ``diffusion/stats`` and ``exit`` are served at any
    time."""
    wire = stdio.wire
    at = {"textDocument": {"uri": "file:///early.py"}, "position": {"line": 1, "character": 4}}
    wire.send(notification("textDocument/didOpen", {"textDocument": {
        "uri": "file:///early.py", "languageId": "python", "version": 1, "text": "def f():\n    \n"}}))
    wire.send(request(1, "textDocument/completion", at))
    wire.send(request(2, "textDocument/inlineCompletion", {**at, "context": {"triggerKind": 1}}))
    wire.send(request(3, "textDocument/codeAction", {"textDocument": at["textDocument"], "range": {
        "start": at["position"], "end": at["position"]}, "context": {"diagnostics": []}}))
    wire.send(request(4, "shutdown"))
    wire.send(request(5, STATS, {}))
    for rid in (1, 2, 3, 4):
        error = wire.answer(rid)["error"]
        assert error["code"] == -32002 and "before initialize" in error["message"]
    assert wire.answer(5)["result"]["state"] == "idle"
    wire.send(request(6, "initialize", INITIALIZE))
    assert "capabilities" in wire.answer(6)["result"]
    wire.send(request(7, "initialize", {**INITIALIZE, "initializationOptions": {"threads": 1, "steps": 3}}))
    assert wire.answer(7)["error"]["code"] == -32600
    wire.send(notification("initialized", {}))
    wire.send(notification("initialized", {}))
    wire.send(request(8, "textDocument/completion", at))   # the didOpen sent before initialize was dropped
    assert "unknown document" in wire.answer(8)["error"]["message"]
    wire.send(request(9, STATS, {}))
    wire.answer(9)   # both initialized were handled by then: one load began, not two
    assert sum(isinstance(m, dict) and m.get("method") == "diffusion/status" and m["params"]["state"] == "loading"
               for m in wire.messages) == 1
    wire.send(request(10, "shutdown"))
    assert wire.answer(10)["result"] is None
    wire.send(notification("exit"))
    assert stdio.proc.wait(30) == 0


def test_exit_before_initialize_ends_the_process_with_1(stdio):
    stdio.wire.send(notification("exit"))
    assert stdio.proc.wait(30) == 1


def test_a_shutdown_while_a_request_to_the_client_is_unanswered_is_answered(stdio):
    """The server asks for the load's progress token right after ``initialized``; a shutdown before the client
    answered failed ("dictionary changed size during iteration"), so the client never sent ``exit``: VS Code's
    "Restart Server" twice in a row left the first server running."""
    wire = stdio.wire
    wire.send(request(1, "initialize", {**INITIALIZE, "capabilities": {"window": {"workDoneProgress": True}}}))
    wire.answer(1)
    wire.send(notification("initialized", {}))
    wire.wait_for(lambda m: isinstance(m, dict) and m.get("method") == "window/workDoneProgress/create")
    wire.send(request(2, "shutdown"))  # the token request is left unanswered
    answer = wire.answer(2)
    assert "error" not in answer and answer["result"] is None, answer
    wire.send(notification("exit"))
    assert stdio.proc.wait(30) == 0  # 0: exit after a shutdown that took


def test_the_message_size_limit_is_configurable(tmp_path):
    server = StdioServer(tmp_path / "server.log", "--max-message-size", "1K")
    try:
        wire = server.wire
        wire.send(notification("textDocument/didOpen", {"textDocument": {
            "uri": "file:///big.py", "languageId": "python", "version": 1, "text": "x = 1\n" * 400}}))
        wire.send(request(2, STATS, {}))
        assert "limit of 1024 bytes" in wire.wait_for(_parse_error)["error"]["message"]
        assert "result" in wire.answer(2)
    finally:
        server.close()


# -- a 2 MB single line ---------------------------------------------------------------------------------

def test_a_cursor_after_a_2mb_word_is_answered(tmp_path):
    """A cursor right after a 2 MB run of word characters (a minified line's identifier, a hex blob): the typed
    fragment was found by a regular expression anchored at the line's end, searched from every position of the
    run, and held the engine thread for minutes (found by hand: the server answered nothing after it)."""
    server = StdioServer(tmp_path / "server.log")
    try:
        wire = server.wire
        wire.send(request(1, "initialize", {**INITIALIZE, "initializationOptions": {"threads": 1}}))
        wire.answer(1)
        wire.send(notification("initialized", {}))
        wire.wait_for(lambda m: isinstance(m, dict) and m.get("method") == "diffusion/status"
                      and m["params"]["state"] == "ready", 120)
        for n, (text, language) in enumerate([("const x = foo.barBaz(1);\nblob = " + "Ab9_" * 500_000, "javascript"),
                                              ("y = f(" + "a" * 2_000_000, "python")]):
            uri = f"file:///blob{n}"
            wire.send(notification("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": language, "version": 1, "text": text}}))
            lines = text.split("\n")
            position = {"line": len(lines) - 1, "character": len(lines[-1])}
            wire.send(request(10 + n, "textDocument/inlineCompletion", {
                "textDocument": {"uri": uri}, "position": position, "context": {"triggerKind": 1}}))
            inline = wire.answer(10 + n, 300)
            for item in inline["result"]["items"]:
                assert item["range"]["start"]["line"] == position["line"]
        wire.send(request(3, STATS, {}))
        assert wire.answer(3)["result"]["state"] == "ready"
    finally:
        server.close()


def test_a_position_at_the_end_of_a_2mb_line(tmp_path):
    server = StdioServer(tmp_path / "server.log")
    try:
        wire = server.wire
        wire.send(request(1, "initialize", {**INITIALIZE, "initializationOptions": {
            "threads": 1, "drafts": True, "draftIntervalMs": 0}}))
        wire.answer(1)
        wire.send(notification("initialized", {}))
        wire.wait_for(lambda m: isinstance(m, dict) and m.get("method") == "diffusion/status"
                      and m["params"]["state"] == "ready", 120)
        text = ("total = add(total, 'é😀') + 1; " * 70_000)[:2_000_000] + "result = "
        end = len(text.encode("utf-16-le")) // 2
        uri = "file:///long.py"
        wire.send(notification("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}}))
        position = {"line": 0, "character": end}
        wire.send(request(2, "textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": position, "context": {"triggerKind": 1}}))
        wire.send(request(3, STATS, {}))
        inline, stats = wire.answer(2, 300), wire.answer(3)
        assert wire.index(stats) < wire.index(inline)  # not stuck behind the inline request
        assert stats["result"]["state"] == "ready"
        for item in inline["result"]["items"]:
            assert item["range"]["start"] == position
        final = wire.wait_for(lambda m: isinstance(m, dict) and m.get("method") == "diffusion/draft"
                              and m["params"].get("done"))
        assert final["params"]["range"]["start"] == position  # the offset, converted back, is where it was
    finally:
        server.close()


# -- TCP ------------------------------------------------------------------------------------------------

@pytest.fixture
def tcp(tmp_path, request):
    server = TcpServer(tmp_path / "server.log", *getattr(request, "param", ()))
    yield server
    server.close()


def _initialize(wire, rid=1, options=None):
    wire.send(request(rid, "initialize", {**INITIALIZE, "initializationOptions": {"threads": 1, **(options or {})}}))
    return wire.answer(rid)


def _inline(wire, rid, uri):
    wire.send(request(rid, "textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}, "context": {"triggerKind": 1}}))
    return wire.answer(rid)


def test_two_tcp_clients_each_have_their_own_session(tcp):
    a, b = tcp.connect(), tcp.connect()
    assert "result" in _initialize(a) and "result" in _initialize(b)
    a.send(notification("textDocument/didOpen", {"textDocument": {
        "uri": "file:///a.py", "languageId": "python", "version": 1, "text": "x = 1\n"}}))
    assert _inline(a, 2, "file:///a.py")["result"] == {"items": []}  # known to a (no model: no fill)
    assert "unknown document" in _inline(b, 2, "file:///a.py")["error"]["message"]  # b never opened it
    b.send(request(3, "shutdown"))
    b.answer(3)
    b.send(notification("exit"))
    b.wait_closed()  # exit ends b's connection, not the server
    a.send(request(4, STATS, {}))
    assert a.answer(4)["result"]["state"] == "idle"
    assert all(m.get("id") != 4 for m in b.messages)
    assert tcp.proc.poll() is None


def test_a_tcp_client_leaving_keeps_the_workspace_lines_of_another_on_the_same_folder(tcp, tmp_path):
    # the lines' registry is one per process: the session that left unregistered the folder for every session
    import subprocess
    import time

    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for name in ("a.py", "b.py"):
        (root / name).write_text("import os\nfrom zorblax.handlers import register_quux_handler\n")
    text = "import sys\nfrom zorblax.\n\n\ndef main():\n    return sys.argv\n"
    ids = iter(range(10, 10_000))

    def ask(wire, method, params):
        rid = next(ids)
        wire.send(request(rid, method, params))
        return wire.answer(rid, timeout=120)

    def start(wire, uri):
        assert "result" in ask(wire, "initialize", {**INITIALIZE, "rootUri": root.as_uri(),
                                                    "initializationOptions": {"threads": 1, "minConfidence": 0}})
        wire.send(notification("initialized", {}))
        wire.send(notification("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}}))
        deadline = time.monotonic() + 180
        while (s := ask(wire, STATS, {})["result"])["state"] != "ready" or s["workspaceLines"]["state"] != "ready":
            assert time.monotonic() < deadline, s
            time.sleep(0.2)

    def offered(wire, uri):
        got = ask(wire, "textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": {"line": 1, "character": len("from zorblax.")},
            "context": {"triggerKind": 1}})["result"]
        return [i["insertText"] for i in (got["items"] if isinstance(got, dict) else got or [])]

    a, b = tcp.connect(), tcp.connect()
    ua, ub = (root / "main.py").as_uri(), (root / "other.py").as_uri()
    start(a, ua)
    start(b, ub)
    assert "handlers import register_quux_handler" in offered(a, ua)
    assert "handlers import register_quux_handler" in offered(b, ub)
    b.close()
    tcp.wait_log("session has ended")
    assert "handlers import register_quux_handler" in offered(a, ua)


@pytest.mark.parametrize("tcp", [("--max-clients", "1")], indirect=True)
def test_a_client_over_the_limit_is_refused_clearly(tcp):
    a, b = tcp.connect(), tcp.connect()
    _initialize(a)
    refused = _initialize(b)
    assert refused["error"]["code"] == -32003 and "--max-clients" in refused["error"]["message"]
    b.wait_closed()
    a.close()  # no shutdown, no exit: the client just goes away
    tcp.wait_log("session has ended", count=2)  # b's, then a's
    c = tcp.connect()
    assert "result" in _initialize(c, 5)  # a's place was freed when it went away


@pytest.fixture
def token_file(tmp_path):
    path = tmp_path / "token"
    path.write_text("s3cret-token\n")
    path.chmod(0o600)
    return path


def test_tcp_with_a_token(tmp_path, token_file):
    server = TcpServer(tmp_path / "server.log", "--token-file", str(token_file))
    try:
        for options in ({}, {"token": "wrong"}, {"token": "s3cret-token\ud800"}, {"token": 12345}):
            wire = server.connect()
            refused = _initialize(wire, options=options)
            assert refused["error"]["code"] == -32001 and "token" in refused["error"]["message"]
            wire.wait_closed()
        notified = server.connect()
        notified.send(notification("initialized", {}))  # anything but initialize first: closed
        notified.wait_closed()
        wire = server.connect()
        assert "result" in _initialize(wire, options={"token": "s3cret-token"})
        wire.send(request(2, STATS, {}))
        assert wire.answer(2)["result"]["state"] == "idle"
        assert "s3cret-token" not in server.log.read_text()
    finally:
        server.close()


def test_a_token_file_saved_with_a_byte_order_mark_holds_the_token(tmp_path):
    # Windows editors save UTF-8 with a BOM: it is not part of the token, or no editor's token would ever match
    path = tmp_path / "token"
    path.write_bytes(b"\xef\xbb\xbfs3cret-token\r\n")
    path.chmod(0o600)
    server = TcpServer(tmp_path / "server.log", "--token-file", str(path))
    try:
        assert "result" in _initialize(server.connect(), options={"token": "s3cret-token"})
    finally:
        server.close()


@pytest.mark.parametrize("args", [["--host", "0.0.0.0"], ["--token-file", "/nonexistent/token"]])
def test_bad_tcp_options_are_refused(args):
    import subprocess

    from tests.wire import SERVER
    done = subprocess.run(SERVER + ["--tcp", "--port", "0", *args], capture_output=True, timeout=60)
    assert done.returncode == 2 and done.stderr.strip()


# -- lone surrogates near the cursor (the tokenizer took the raw text: TypeError, -32603) -----------------

_CAPS = {"textDocument": {"codeAction": {
    "codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "refactor", "refactor.rewrite"]}},
    "dataSupport": True, "resolveSupport": {"properties": ["edit"]}}}}


def _ready_server(tmp_path, capabilities=None, options=None) -> StdioServer:
    server = StdioServer(tmp_path / "server.log")
    wire = server.wire
    wire.send(request(1, "initialize", {**INITIALIZE, "capabilities": capabilities or {},
                                        "initializationOptions": {"threads": 1, **(options or {})}}))
    wire.answer(1)
    wire.send(notification("initialized", {}))
    wire.wait_for(lambda m: isinstance(m, dict) and m.get("method") == "diffusion/status"
                  and m["params"]["state"] == "ready", 120)
    return server


def _units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _position(text: str, offset: int) -> dict:
    line = text.count("\n", 0, offset)
    return {"line": line, "character": _units(text[text.rfind("\n", 0, offset) + 1:offset])}


@pytest.mark.parametrize("surrogate", ["\ud83d", "\ude00"], ids=["high", "low"])
def test_lone_surrogates_near_the_cursor_are_answered(tmp_path, surrogate):
    text = (f'def area(r):\n    ...\n\n\ndef g(x):\n    s = "{surrogate}"\n    y = (x + 1\n'
            f'    t = "{surrogate}" + {surrogate}\n    return \n')
    server = _ready_server(tmp_path, _CAPS)
    try:
        wire, uri, rid = server.wire, "file:///surrogates.py", 10
        wire.send(notification("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}}))
        first, last = text.index(surrogate), text.rindex(surrogate)
        cursors = [first, first + 1, last, last + 1, text.index("return ") + 7]  # before and after each
        for offset in cursors:
            for method in ("textDocument/inlineCompletion", "textDocument/completion"):
                rid += 1
                wire.send(request(rid, method, {"textDocument": {"uri": uri}, "position": _position(text, offset),
                                                "context": {"triggerKind": 1}}))
                assert "result" in wire.answer(rid, 120), (method, offset, wire.answer(rid))
        offered = set()
        for lo, hi in [(first, first), (last - 3, last + 1), (0, len(text)), (text.index("..."),) * 2,
                       (text.index("y = ("),) * 2]:
            rid += 1
            wire.send(request(rid, "textDocument/codeAction", {
                "textDocument": {"uri": uri}, "range": {"start": _position(text, lo), "end": _position(text, hi)},
                "context": {"diagnostics": [], "triggerKind": 1}}))
            actions = wire.answer(rid, 120)
            assert "result" in actions, actions
            for action in actions["result"]:
                rid += 1
                wire.send(request(rid, "codeAction/resolve", action))
                resolved = wire.answer(rid, 120)
                assert "result" in resolved, resolved  # an edit, or none with the reason shown
                offered.add(action["data"]["action"])
        assert offered >= {"rewriteSelection", "fillHoles", "completeBody"}  # and the fix, if the model found one
        wire.send(request(rid + 1, STATS, {}))
        stats = wire.answer(rid + 1)["result"]
        assert stats["failed"] == 0 and stats["jobs"] > 10  # the fix was tried while offering, and failed never
        assert "TypeError" not in server.log.read_text()
    finally:
        server.close()


# -- a code action too big for the model (the whole codeAction request failed) ---------------------------

def test_a_fix_too_big_is_left_out_and_the_other_actions_are_offered(tmp_path):
    text = "def area(r):\n    ...\n\n\n" + "x = f(" * 5000 + "\n"  # the fix's span: 30,000 characters on one line
    server = _ready_server(tmp_path, _CAPS)
    try:
        wire, uri = server.wire, "file:///parens.py"
        wire.send(notification("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}}))
        whole = {"start": {"line": 0, "character": 0}, "end": _position(text, len(text))}
        paren = {"start": _position(text, text.index("x = f(")), "end": _position(text, text.index("x = f("))}
        wire.send(request(2, "textDocument/codeAction", {"textDocument": {"uri": uri}, "range": whole,
                                                         "context": {"diagnostics": [], "triggerKind": 1}}))
        wire.send(request(3, "textDocument/codeAction", {"textDocument": {"uri": uri}, "range": paren,
                                                         "context": {"diagnostics": [], "only": ["quickfix"]}}))
        offered = wire.answer(2, 120)
        names = {a["data"]["action"] for a in offered["result"]}
        assert names >= {"rewriteSelection", "fillHoles"} and "fixSyntax" not in names, offered
        assert wire.answer(3, 120)["result"] == []  # the fix alone: too big, so not offered, and no error
        wire.send(request(4, STATS, {}))
        assert wire.answer(4)["result"]["failed"] == 0
    finally:
        server.close()


# -- a second didOpen of an open document (an answer for the old text came back with its range) -----------

_SLOW = {"steps": 400, "threshold": 1.5, "validate": False, "drafts": True, "draftIntervalMs": 0}  # a token a step
OLD = "def f(x):\n" + "    y = x + 1\n" * 60
NEW = "z = 2\n"  # the old text's ranges lie outside it


def _open(wire, uri, text, version=1):
    wire.send(notification("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": version, "text": text}}))


def _reopen(wire, uri, how):
    if how == "close-then-reopen":
        wire.send(notification("textDocument/didClose", {"textDocument": {"uri": uri}}))
    _open(wire, uri, NEW)  # new text at the same version


def _denoising(wire, uri, since):
    """Until a draft past step 1 for ``uri`` arrived after message ``since``: the job is on the model."""
    wire.wait_for(lambda m: isinstance(m, dict) and m.get("method") == "diffusion/draft"
                  and m["params"]["uri"] == uri and m["params"]["step"] >= 1 and wire.index(m) >= since, 120)


def _inside(rng, text):
    lines = text.split("\n")
    return all(p["line"] < len(lines) and p["character"] <= len(lines[p["line"]]) for p in (rng["start"], rng["end"]))


@pytest.mark.parametrize("how", ["reopen", "close-then-reopen"])
def test_a_reopen_during_an_inline_fill_never_answers_with_the_old_range(tmp_path, how):
    server = _ready_server(tmp_path, options=_SLOW)
    try:
        wire, uri = server.wire, "file:///reopened.py"
        _open(wire, uri, OLD)
        since = len(wire.messages)
        wire.send(request(2, "textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                  "position": {"line": 0, "character": 9}, "context": {"triggerKind": 1}}))  # a body: 64 slots
        _denoising(wire, uri, since)
        _reopen(wire, uri, how)
        wire.send(request(4, STATS, {}))  # answered once the reopen was handled (messages are handled in order)
        items = wire.answer(2, 120)["result"]["items"]
        assert all(_inside(item["range"], NEW) for item in items), items  # none for the old text
        assert items == []
        reopened = wire.index(wire.answer(4))
        assert not [m for m in wire.messages[reopened:] if isinstance(m, dict) and m.get("method") == "diffusion/draft"
                    and m["params"]["uri"] == uri and m["params"]["text"]]  # no draft of the old text after the reopen
        # either: only the final draft that clears those shown (empty, done)
        wire.send(request(3, STATS, {}))  # after the answer: the engine counted the job by then
        stats = wire.answer(3)["result"]
        assert stats["cancelled"] == 1 and stats["last_cancelled_at_step"] >= 1  # the model stopped too
    finally:
        server.close()


def test_a_reopen_during_a_rewrite_applies_nothing(tmp_path):
    server = _ready_server(tmp_path, options=_SLOW)
    try:
        wire, uri = server.wire, "file:///rewritten.py"
        _open(wire, uri, OLD)
        since = len(wire.messages)
        wire.send(request(2, "workspace/executeCommand", {"command": "diffusion.rewriteSelection", "arguments": [{
            "uri": uri, "version": 1, "range": {"start": {"line": 1, "character": 0},
                                                "end": {"line": 61, "character": 0}}}]}))
        _denoising(wire, uri, since)
        _reopen(wire, uri, "reopen")
        done = wire.wait_for(lambda m: isinstance(m, dict) and (m.get("id") == 2 and "method" not in m
                                                              or m.get("method") == "workspace/applyEdit"), 120)
        assert done.get("method") != "workspace/applyEdit", done  # the old text's edit was never sent
        assert done["error"]["code"] == -32801  # ContentModified
    finally:
        server.close()


@pytest.mark.parametrize("how", ["reopen", "close-then-reopen"])
def test_an_action_offered_before_a_reopen_is_not_computed_after_it(tmp_path, how):
    text = "def area(r):\n    ...\n\n\ndef g():\n    pass\n"
    server = _ready_server(tmp_path, _CAPS)
    try:
        wire, uri = server.wire, "file:///offered.py"
        _open(wire, uri, text)
        whole = {"start": {"line": 0, "character": 0}, "end": {"line": 5, "character": 0}}
        wire.send(request(2, "textDocument/codeAction", {"textDocument": {"uri": uri}, "range": whole,
                                                         "context": {"diagnostics": [], "triggerKind": 1}}))
        (fill,) = [a for a in wire.answer(2, 120)["result"] if a["data"]["action"] == "fillHoles"]
        if how == "close-then-reopen":
            wire.send(notification("textDocument/didClose", {"textDocument": {"uri": uri}}))
        _open(wire, uri, text.replace("area", "size").replace("pass", "..."))  # other text, the same version
        wire.send(request(3, "codeAction/resolve", fill))
        assert wire.answer(3, 120)["error"]["code"] == -32801  # ContentModified, not an edit for the old text
    finally:
        server.close()


# -- a request and the user's next keystroke in one read (the request was answered for the new text) ---------

@pytest.mark.parametrize("method", ["textDocument/inlineCompletion", "textDocument/completion",
                                    "textDocument/codeAction"])
def test_a_request_and_the_next_keystroke_in_one_read(tmp_path, method):
    """Both reach the server in one read: the handler used to start only after the didChange was applied, so
    the position sent for "    return " was read in "    return a" and the fill went in before the "a"
    ("    return  # ba"); the request is now read against its own text, and dropped as that text is gone."""
    server = _ready_server(tmp_path, _CAPS, {"minConfidence": 0})  # every fill, however unsure, is answered
    try:
        wire, uri = server.wire, "file:///typing.py"
        _open(wire, uri, "def add(a, b):\n    return \n")
        at = {"line": 1, "character": 11}
        params = {"textDocument": {"uri": uri}, "position": at, "context": {"triggerKind": 1}}
        if method == "textDocument/codeAction":
            params = {"textDocument": {"uri": uri}, "range": {"start": {"line": 1, "character": 4}, "end": at},
                      "context": {"diagnostics": [], "triggerKind": 1}}
        keystroke = notification("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                 "contentChanges": [{"range": {"start": at, "end": at}, "text": "a"}]})
        wire.write(frame(request(2, method, params)) + frame(keystroke))  # one write: one read
        answer = wire.answer(2, 120)["result"]
        assert (answer if method == "textDocument/codeAction" else answer["items"]) == [], answer
        # the same request sent after the keystroke is answered for the new text
        wire.send(request(3, method, params))
        assert "result" in wire.answer(3, 120)
    finally:
        server.close()


# -- an inline request's work-done progress when its fill is dropped (begun, never ended) -----------------

def _progress(wire, token):
    return [m["params"]["value"]["kind"] for m in wire.messages if isinstance(m, dict)
            and m.get("method") == "$/progress" and m["params"]["token"] == token]


@pytest.mark.parametrize("how", ["edit", "close", "cancel"])
def test_an_inline_progress_ends_when_its_fill_is_dropped(tmp_path, how):
    """A client's workDoneToken began with the first draft; an edit, a close or $/cancelRequest dropped the
    fill and the progress was never ended (an editor's spinner left running for good)."""
    server = _ready_server(tmp_path, {"window": {"workDoneProgress": True}}, _SLOW)
    try:
        wire, uri, token = server.wire, "file:///progress.py", "inline-1"
        _open(wire, uri, OLD)
        wire.send(request(2, "textDocument/inlineCompletion", {"textDocument": {"uri": uri}, "workDoneToken": token,
                  "position": {"line": 0, "character": 9}, "context": {"triggerKind": 1}}))
        wire.wait_for(lambda m: isinstance(m, dict) and m.get("method") == "$/progress"
                      and m["params"]["token"] == token, 120)
        if how == "edit":
            wire.send(notification("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                      "contentChanges": [{"range": {"start": {"line": 1, "character": 0},
                                                    "end": {"line": 1, "character": 0}}, "text": "#"}]}))
        elif how == "close":
            wire.send(notification("textDocument/didClose", {"textDocument": {"uri": uri}}))
        else:
            wire.send(notification("$/cancelRequest", {"id": 2}))
        answer = wire.answer(2, 120)
        if how == "cancel":
            assert answer["error"]["code"] == -32800, answer
        else:
            assert answer.get("result", {}).get("items") == [], answer
        for rid in range(3, 10_000):  # until the engine counted the stop: every draft it made is on the wire by then
            wire.send(request(rid, STATS, {}))
            if wire.answer(rid)["result"]["cancelled"] >= 1:
                break
        kinds = _progress(wire, token)
        assert kinds[0] == "begin" and kinds[-1] == "end" and kinds.count("begin") == kinds.count("end") == 1, kinds
    finally:
        server.close()


def _created(wire, since=0):
    """The server's next window/workDoneProgress/create request after message ``since`` (left unanswered)."""
    return wire.wait_for(lambda m: isinstance(m, dict) and m.get("method") == "window/workDoneProgress/create"
                         and wire.index(m) >= since, 120)


def test_an_action_progress_ends_when_the_document_changed_while_the_client_took_its_token(tmp_path):
    """An action's progress begins as soon as the client accepts the token; an edit made while the client took
    it answered the command with ContentModified, but the begun progress was never ended (a spinner for good)."""
    caps = {**_CAPS, "window": {"workDoneProgress": True}}
    server = StdioServer(tmp_path / "server.log")
    try:
        wire, uri = server.wire, "file:///taken.py"
        wire.send(request(1, "initialize", {**INITIALIZE, "capabilities": caps}))
        wire.answer(1)
        wire.send(notification("initialized", {}))
        wire.send({"jsonrpc": "2.0", "id": _created(wire)["id"], "result": None})   # the load's token
        wire.wait_for(lambda m: isinstance(m, dict) and m.get("method") == "diffusion/status"
                      and m["params"]["state"] == "ready", 120)
        _open(wire, uri, "def area(r):\n    ...\n\n\ndef g():\n    pass\n")
        whole = {"start": {"line": 0, "character": 0}, "end": {"line": 5, "character": 0}}
        wire.send(request(2, "textDocument/codeAction", {"textDocument": {"uri": uri}, "range": whole,
                                                         "context": {"diagnostics": [], "triggerKind": 1}}))
        (fill,) = [a for a in wire.answer(2, 120)["result"] if a["data"]["action"] == "fillHoles"]
        since = len(wire.messages)
        wire.send(request(3, "workspace/executeCommand", {"command": "diffusion.runAction",
                                                          "arguments": [fill["data"]]}))
        create = _created(wire, since)
        end = {"line": 5, "character": 0}
        wire.send(notification("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                          "contentChanges": [{"range": {"start": end, "end": end},
                                                                              "text": "#"}]}))
        wire.send(request(4, STATS, {}))
        wire.answer(4)  # the edit was applied before the client took the token
        wire.send({"jsonrpc": "2.0", "id": create["id"], "result": None})
        assert wire.answer(3, 120)["error"]["code"] == -32801  # ContentModified: nothing was edited
        wire.send(request(5, STATS, {}))
        wire.answer(5)
        assert _progress(wire, create["params"]["token"]) == ["begin", "end"]
    finally:
        server.close()


@pytest.mark.parametrize("answer", [None, {"error": {"code": -32603, "message": "no progress here"}}],
                         ids=["not-yet-answered", "refused"])
def test_the_load_progress_is_not_ended_unless_it_began(tmp_path, answer):
    """The model's load reported its end on a token the client refused, or had not yet accepted when the model
    was ready (a fast load): a $/progress end with no begin, on a token that was never created."""
    server = StdioServer(tmp_path / "server.log")
    try:
        wire = server.wire
        wire.send(request(1, "initialize", {**INITIALIZE, "capabilities": {"window": {"workDoneProgress": True}}}))
        wire.answer(1)
        wire.send(notification("initialized", {}))
        create = _created(wire)
        if answer is not None:
            wire.send({"jsonrpc": "2.0", "id": create["id"], **answer})
        wire.wait_for(lambda m: isinstance(m, dict) and m.get("method") == "diffusion/status"
                      and m["params"]["state"] == "ready", 120)
        if answer is None:   # accepted once the model is ready: it is not begun then either
            wire.send({"jsonrpc": "2.0", "id": create["id"], "result": None})
        wire.send(request(2, STATS, {}))
        assert wire.answer(2)["result"]["state"] == "ready"
        assert _progress(wire, create["params"]["token"]) == []
    finally:
        server.close()


# -- a didChange that cannot be decoded (dropped, and the next answer went where the client had other text) ---

@pytest.mark.parametrize("change", [
    {"version": None, "range": {"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": 11}}},
    {"version": 2, "range": {"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": -1}}},
    {"version": 2, "range": {"start": {"line": 9, "character": 0}, "end": {"line": 9, "character": 0}}},
], ids=["null-version", "negative-character", "past-the-end"])
def test_a_change_that_cannot_be_decoded_puts_the_document_out_of_sync(tmp_path, change):
    """The client typed "a" after "    return "; its didChange failed to decode (LSP 3.15 allowed a null
    version) and was dropped with a log line only, so the server kept the old text and answered the
    request at the end of "    return a" with a fill before the "a" ("    return  # add(a, b)a")."""
    server = _ready_server(tmp_path, options={"minConfidence": 0})
    try:
        wire, uri = server.wire, "file:///undecoded.py"
        _open(wire, uri, "def add(a, b):\n    return \n")
        wire.send(notification("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": change["version"]},
            "contentChanges": [{"range": change["range"], "text": "a"}]}))
        inline = {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 12}, "context": {"triggerKind": 1}}
        wire.send(request(2, "textDocument/inlineCompletion", inline))
        assert wire.answer(2, 120)["result"]["items"] == []  # no edit for text the client no longer has
        assert "out of sync until the next full-text change" in server.log.read_text()
        wire.send(notification("textDocument/didChange", {      # another one: logged, the user is not told again
            "textDocument": {"uri": uri, "version": change["version"]},
            "contentChanges": [{"range": change["range"], "text": "b"}]}))
        wire.send(request(4, "textDocument/inlineCompletion", inline))
        assert wire.answer(4, 120)["result"]["items"] == []
        told = [m["params"]["message"] for m in wire.messages
                if isinstance(m, dict) and m.get("method") == "window/showMessage" and "lost track" in m["params"]["message"]]
        assert len(told) == 1 and told[0].startswith(f"diffusion-lsp: lost track of {uri} (") \
            and told[0].endswith("no suggestions or edits for it until it is reopened"), told
        wire.send(notification("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3},
                                                          "contentChanges": [{"text": "def add(a, b):\n    return \n"}]}))
        wire.send(request(3, "textDocument/inlineCompletion", {**inline, "position": {"line": 1, "character": 11}}))
        assert wire.answer(3, 120)["result"]["items"]  # in sync again: answered
    finally:
        server.close()


def test_an_inline_progress_cancel_button_stops_the_fill(tmp_path):
    """Its begin says cancellable, but window/workDoneProgress/cancel for a client's inline token reached
    nothing (only an action's server-made token was wired): the fill ran on to its answer, and pygls kept the
    token's cancel future for good, one per such request."""
    server = _ready_server(tmp_path, {"window": {"workDoneProgress": True}}, _SLOW)
    try:
        wire, uri, token = server.wire, "file:///button.py", "inline-cancel"
        _open(wire, uri, OLD)
        wire.send(request(2, "textDocument/inlineCompletion", {"textDocument": {"uri": uri}, "workDoneToken": token,
                  "position": {"line": 0, "character": 9}, "context": {"triggerKind": 1}}))
        begun = wire.wait_for(lambda m: isinstance(m, dict) and m.get("method") == "$/progress"
                              and m["params"]["token"] == token, 120)
        assert begun["params"]["value"]["cancellable"] is True
        wire.send(notification("window/workDoneProgress/cancel", {"token": token}))
        assert wire.answer(2, 120)["error"]["code"] == -32800  # RequestCancelled: the model was stopped
        kinds = _progress(wire, token)
        assert kinds[0] == "begin" and kinds[-1] == "end" and kinds.count("end") == 1, kinds
        # the same token again (a client may reuse one): a new progress, not one cancelled at its start
        wire.send(request(3, "textDocument/inlineCompletion", {"textDocument": {"uri": uri}, "workDoneToken": token,
                  "position": {"line": 1, "character": 0}, "context": {"triggerKind": 1}}))
        assert "result" in wire.answer(3, 120)
    finally:
        server.close()


# -- TCP admission: the first message's time limit is for the whole message -------------------------------------

async def test_a_tcp_client_trickling_its_first_message_is_closed_at_the_limit(monkeypatch):
    # the limit applied to each read: a byte every so often kept an unadmitted connection open for ever
    import asyncio

    from lsp_server import tcp
    from lsp_server.server import build_server
    from lsp_server.transport import DEFAULT_MAX_MESSAGE

    monkeypatch.setattr(tcp, "FIRST_MESSAGE_TIMEOUT", 1.0)
    gate = tcp.Gate(None, 4)
    listener = await asyncio.start_server(
        lambda r, w: tcp._session(build_server, gate, DEFAULT_MAX_MESSAGE, r, w), "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection(*listener.sockets[0].getsockname()[:2])
    try:
        closed = False
        for byte in (b"Content-Length: 99999\r\n\r\n" * 4)[:100]:   # a byte every 0.2 s or more, 100 of them
            try:
                writer.write(bytes([byte]))
                await writer.drain()
                closed = await asyncio.wait_for(reader.read(1), 0.2) == b""
            except TimeoutError:
                continue
            except ConnectionError:
                closed = True
            if closed:
                break
        assert closed and gate.sessions == 0
    finally:
        writer.close()
        listener.close()
        await listener.wait_closed()


# -- drafts of a request that ends without an answer (a draft left painted in the editor) --------------------

HOLES = "def area(r):\n    ...\n\n\ndef perimeter(r):\n    ...\n\n\ndef volume(r):\n    ...\n"


def _drafts_of(wire, rid):
    return [m["params"] for m in wire.messages if isinstance(m, dict) and m.get("method") == "diffusion/draft"
            and m["params"]["id"] == rid]


@pytest.mark.parametrize("how", ["cancel", "superseded", "action-cancel", "shutdown"])
def test_the_drafts_of_a_request_ended_without_an_answer_are_cleared(tmp_path, how):
    """A cancelled, superseded or shut-down request had its drafts painted by the client and never sent the final
    (``done``) draft that clears them: VS Code kept an action's draft on screen until the next edit."""
    server = _ready_server(tmp_path, _CAPS, _SLOW)
    try:
        wire, uri = server.wire, "file:///ended.py"
        _open(wire, uri, HOLES if how == "action-cancel" else OLD)
        since = len(wire.messages)
        if how == "action-cancel":
            whole = {"start": {"line": 0, "character": 0}, "end": {"line": 10, "character": 0}}
            wire.send(request(9, "textDocument/codeAction", {"textDocument": {"uri": uri}, "range": whole,
                                                             "context": {"diagnostics": [], "triggerKind": 1}}))
            (fill,) = [a for a in wire.answer(9, 120)["result"] if a["data"]["action"] == "fillHoles"]
            since = len(wire.messages)
            wire.send(request(2, "codeAction/resolve", fill))
        else:
            wire.send(request(2, "textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                      "position": {"line": 0, "character": 9}, "context": {"triggerKind": 1}}))
        _denoising(wire, uri, since)
        first = next(m["params"] for m in wire.messages[since:] if isinstance(m, dict)
                     and m.get("method") == "diffusion/draft")
        if how == "superseded":  # a newer request for the same document: the older one is dropped
            wire.send(request(3, "textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                      "position": {"line": 1, "character": 0}, "context": {"triggerKind": 1}}))
        elif how == "shutdown":
            wire.send(request(3, "shutdown", None))
        else:
            wire.send(notification("$/cancelRequest", {"id": 2}))
        answer = wire.answer(2, 120)
        if how == "superseded":
            assert answer["result"]["items"] == [], answer
        else:  # a shutdown cancels what is running, as $/cancelRequest does
            assert answer["error"]["code"] == -32800, answer
        final = wire.wait_for(lambda m: isinstance(m, dict) and m.get("method") == "diffusion/draft"
                              and m["params"]["id"] == first["id"] and m["params"]["done"], 60)["params"]
        drafts = _drafts_of(wire, first["id"])
        assert drafts[-1] is final and [d["done"] for d in drafts].count(True) == 1  # the last one, once
        assert final["text"] == "" and final["uri"] == uri and final["version"] == 1
        assert final["step"] >= max(d["step"] for d in drafts)  # a request's steps never go back
        if how == "action-cancel":
            assert final["action"] == "fillHoles" and final["holes"] == []
    finally:
        server.close()


def test_drafts_turned_off_during_a_request_still_end_with_the_final_draft(tmp_path):
    """The user turned ``drafts`` off while a fill denoised: its drafts stopped, and so did its final draft, which
    alone clears the one still painted (VS Code kept an action's, Neovim an inline one for its stale timer)."""
    server = _ready_server(tmp_path, options=_SLOW)
    try:
        wire, uri = server.wire, "file:///turned-off.py"
        _open(wire, uri, OLD)
        since = len(wire.messages)
        wire.send(request(2, "textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                  "position": {"line": 0, "character": 9}, "context": {"triggerKind": 1}}))
        _denoising(wire, uri, since)
        wire.send(notification("workspace/didChangeConfiguration", {"settings": {"diffusionLsp": {"drafts": False}}}))
        wire.send(request(3, STATS, {}))
        off = wire.index(wire.answer(3))  # the setting is in force from here on
        wire.answer(2, 120)
        rid = next(m["params"]["id"] for m in wire.messages[since:] if isinstance(m, dict)
                   and m.get("method") == "diffusion/draft")
        drafts = _drafts_of(wire, rid)
        assert drafts[-1]["done"], drafts[-1]  # the one painted is cleared (or replaced by the answer)
        assert not [m for m in wire.messages[off:] if isinstance(m, dict) and m.get("method") == "diffusion/draft"
                    and not m["params"]["done"]]  # and no draft after the setting went off
    finally:
        server.close()


async def test_an_ended_tcp_session_leaves_nothing_of_it_alive():
    """pygls cached each message type with ``lru_cache`` on the protocol's method, keyed by the protocol too: the
    last 128 (session, method) pairs kept their sessions alive, and with them each ended session's server,
    documents, engine and model (22 MiB each with the embedded model: 30 sessions of a --tcp server, 1.1 GB)."""
    import asyncio
    import gc
    import weakref

    from lsp_server import tcp
    from lsp_server.server import build_server
    from lsp_server.transport import DEFAULT_MAX_MESSAGE

    sessions = []

    def new_session():
        server = build_server()
        sessions.append(weakref.ref(server))
        return server

    gate = tcp.Gate(None, 4)
    listener = await asyncio.start_server(
        lambda r, w: tcp._session(new_session, gate, DEFAULT_MAX_MESSAGE, r, w), "127.0.0.1", 0)
    try:
        for k in range(6):
            reader, writer = await asyncio.open_connection(*listener.sockets[0].getsockname()[:2])
            writer.write(frame(request(1, "initialize", INITIALIZE)) + frame(notification(
                "textDocument/didOpen", {"textDocument": {"uri": f"file:///s/{k}.py", "languageId": "python",
                                                          "version": 1, "text": "x = 1\n" * 1000}}))
                         + frame(request(2, STATS, {})) + frame(request(3, "shutdown")))
            answers = b""
            while answers.count(b'"id": 3') + answers.count(b'"id":3') == 0:
                answers += await asyncio.wait_for(reader.read(65536), 30)
            writer.close()
        for _ in range(100):   # each session's end runs once the server saw its client go
            if len(sessions) == 6 and gate.sessions == 0:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.1)
        gc.collect()
        assert len(sessions) == 6 and [ref() for ref in sessions] == [None] * 6
    finally:
        listener.close()
        await listener.wait_closed()


@pytest.mark.parametrize("field,value", [("version", True), ("version", 1.0), ("line", "0"), ("character", 1.7),
                                         ("character", False), ("generation", "1")])
def test_an_action_argument_that_is_not_a_json_integer_is_invalid_params(stdio, field, value):
    """``int()`` read ``true``, ``1.0``, ``"0"`` and ``1.7`` as integers: a forged ``diffusion.runAction`` with
    ``"version": true`` edited version 1, and a character of 1.7 was taken as 1. Each is InvalidParams now."""
    wire, uri = stdio.wire, "file:///forged.py"
    wire.send(request(1, "initialize", INITIALIZE))
    wire.answer(1)
    wire.send(notification("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": "def f(x):\n    ...\n"}}))
    data = {"action": "fillHoles", "uri": uri, "version": 1,
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 0}}}
    if field == "generation":
        data["generation"] = value
    elif field == "version":
        data["version"] = value
    else:
        data["range"]["start"][field] = value
    wire.send(request(2, "workspace/executeCommand", {"command": "diffusion.runAction", "arguments": [data]}))
    wire.send(request(3, "codeAction/resolve", {"title": "Fill 1 hole", "data": data}))
    for rid in (2, 3):
        error = wire.answer(rid)["error"]
        assert error["code"] == -32602 and "not a diffusion-lsp action argument" in error["message"], error
