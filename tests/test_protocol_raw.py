"""The wire itself: malformed messages, undecodable params, load failures, encodings, settings. These run the
real server on the scripted engine (tests/scripted.py): what is tested is the protocol, not the model."""

import json
import socket
import sys

import pytest

from benchmarks.lsp_client import LspClient, LspResponseError

SERVER = [sys.executable, "-m", "lsp_server"]
SCRIPTED = [sys.executable, "-m", "tests.scripted"]


def raw(client: LspClient, body: bytes) -> None:
    client.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    client.proc.stdin.flush()


def open_doc(client, uri, text, language="python"):
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": 1,
                                                            "text": text}})


def inline(client, uri, line, character, timeout=30):
    return client.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
        "context": {"triggerKind": 1}}, timeout)


@pytest.fixture(scope="module")
def server():
    with LspClient(SCRIPTED) as client:
        client.initialize({"threads": 1})
        client.wait_ready(120)
        yield client


def test_malformed_messages_do_not_kill_the_server(server):
    raw(server, b"{this is not json")
    raw(server, json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"bogus": 1}}).encode())
    raw(server, json.dumps({"jsonrpc": "2.0", "id": 999, "method": "no/such/method", "params": {}}).encode())
    assert server.request("diffusion/stats", {}, 10)["state"] == "ready"


@pytest.mark.parametrize("position", [{"line": 0, "character": -1}, {"line": -3, "character": 0},
                                      {"line": "zero", "character": 0}, None])
def test_undecodable_params_are_answered_with_invalid_params(server, position):
    open_doc(server, "file:///neg.py", "x = 1\n")
    params = {"textDocument": {"uri": "file:///neg.py"}, "context": {"triggerKind": 1}}
    if position is not None:
        params["position"] = position
    with pytest.raises(LspResponseError, match="invalid params"):
        server.request("textDocument/inlineCompletion", params, 10)
    assert server.request("diffusion/stats", {}, 10)["state"] == "ready"


def test_utf8_is_negotiated_when_offered():
    with LspClient(SCRIPTED) as client:
        result = client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {
            "general": {"positionEncodings": ["utf-8", "utf-16"]}}, "initializationOptions": {"threads": 1}}, 60)
        assert result["capabilities"]["positionEncoding"] == "utf-8"
        assert result["capabilities"]["inlineCompletionProvider"] is not None
        client.notify("initialized", {})
        client.wait_ready(120)
        open_doc(client, "file:///u8.py", "s = 'é😀'\nt = \n")
        # 't = ' ends at byte 4 of line 1; a completion there inserts at that exact position
        items = inline(client, "file:///u8.py", 1, 4)["items"]
        for item in items:
            assert item["range"]["start"] == {"line": 1, "character": 4}


def test_a_failed_load_is_reported_once_and_the_server_stays_up(tmp_path):
    with LspClient(SCRIPTED) as client:
        client.initialize({"threads": 1, "model": str(tmp_path / "missing"), "steps": "lots"})
        status = client.wait_for("diffusion/status", lambda p: p["state"] == "error", 60)
        assert "missing" in status["message"]
        open_doc(client, "file:///f.py", "def f():\n    \n")
        assert inline(client, "file:///f.py", 1, 4)["items"] == []
        assert inline(client, "file:///f.py", 1, 4)["items"] == []
        messages = [p["message"] for _, m, p in client.notifications if m == "window/showMessage"]
        assert sum("could not be loaded" in m for m in messages) == 1
        assert any("'steps'" in m for m in messages)  # the invalid setting was named
        # fixing the setting loads the model without a restart
        client.notify("workspace/didChangeConfiguration", {"settings": {"diffusionLsp": {"model": "embedded"}}})
        client.wait_for("diffusion/status", lambda p: p["state"] == "ready", 120)
        assert client.request("diffusion/stats", {}, 10)["state"] == "ready"


def test_a_device_torch_cannot_use_is_reported_as_the_device_and_cpu_then_loads():
    """The real server and model: ``device: cuda:99`` failed the load with torch's own words and the message told
    the user to point the 'model' setting to a valid checkpoint; it names the device and the devices there are,
    and switching the device loads the model without a restart."""
    with LspClient(SERVER) as client:
        client.initialize({"threads": 1, "device": "cuda:99"})
        status = client.wait_for("diffusion/status", lambda p: p["state"] == "error", 60)
        assert "device 'cuda:99' is not available" in status["message"] and "available here: cpu" in status["message"]
        shown = client.wait_for("window/showMessage", lambda p: "could not be loaded" in p["message"], 60)["message"]
        assert "could not be loaded: device 'cuda:99' is not available" in shown and "'model' setting" not in shown
        assert shown.endswith("Completions are off until the setting that fixes it changes (model, device, dtype, "
                              "quantization).")
        client.notify("workspace/didChangeConfiguration", {"settings": {"diffusionLsp": {"device": "cpu"}}})
        client.wait_for("diffusion/status", lambda p: p["state"] == "ready", 120)


def test_a_quantization_the_model_cannot_take_is_reported_and_int8_then_loads(tmp_path):
    """The real server and model: ``quantization: fp8`` is DiffusionGemma's; for the embedded model the load fails
    with a message saying what it takes, and switching to ``int8`` loads it without a restart."""
    with LspClient(SERVER) as client:
        client.initialize({"threads": 1, "quantization": "fp8"})
        status = client.wait_for("diffusion/status", lambda p: p["state"] == "error", 60)
        assert "takes none or int8" in status["message"]
        client.notify("workspace/didChangeConfiguration", {"settings": {"diffusionLsp": {"quantization": "int8"}}})
        client.wait_for("diffusion/status", lambda p: p["state"] == "ready", 120)
        open_doc(client, "file:///q.py", "def add(a, b):\n    \n\n\nprint(add(1, 2))\n")
        for item in inline(client, "file:///q.py", 1, 4, timeout=60)["items"]:
            assert item["range"]["start"] == {"line": 1, "character": 4}


def test_configuration_change_is_honoured(server):
    server.notify("workspace/didChangeConfiguration", {"settings": {"diffusionLsp": {"steps": 3, "threads": 1}}})
    open_doc(server, "file:///cfg.py", "def f(a, b):\n    \n")
    before = server.request("diffusion/stats", {}, 10)
    inline(server, "file:///cfg.py", 1, 4)
    after = server.request("diffusion/stats", {}, 10)
    assert after["jobs"] == before["jobs"] + 1
    assert after["steps"] - before["steps"] <= 3


def test_tcp_transport_and_log_file(tmp_path):
    # Port 0 and the port the server's log names (tests/wire.py): a port picked here, closed and given to the server
    # could be taken meanwhile, and polling connect() for 10 s failed under load (the server listened after 12 s).
    from tests.wire import TcpServer

    log = tmp_path / "server.log"
    server = TcpServer(log, "-v")   # waits until the log says where it listens: logs go to the file
    try:
        conn = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                           "params": {"processId": None, "rootUri": None, "capabilities": {},
                                      "initializationOptions": {"threads": 1}}}).encode()
        conn.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        data = b""
        while b"inlineCompletionProvider" not in data:
            chunk = conn.recv(65536)
            assert chunk, "connection closed"
            data += chunk
        conn.close()
    finally:
        server.proc.kill()
        out, err = server.proc.communicate(timeout=30)
    assert out == b""  # stdout belongs to the protocol; nothing else is ever printed there
    assert log.read_text().strip()  # logs went to the file


def test_a_tcp_port_it_cannot_listen_on_is_one_line_and_a_non_zero_exit():
    import socket
    import subprocess

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for given, says in ((port, "address already in use"), (99999, "port must be 0-65535")):
            out = subprocess.run([sys.executable, "-m", "lsp_server", "--tcp", "--port", str(given)],
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
            assert out.returncode != 0 and f"diffusion-lsp: cannot listen on 127.0.0.1:{given}: " in out.stderr
            assert says in out.stderr and "Traceback" not in out.stderr


def test_an_invalid_pushed_value_keeps_the_value_held_and_the_warning_says_so():
    """docs/PROTOCOL.md, Settings: an invalid value is not applied; the key keeps what the server holds (here the
    3 steps pushed before, not the default), and the warning names the value used instead of claiming a default."""
    with LspClient(SCRIPTED) as client:
        client.initialize({"threads": 1, "steps": 3})
        client.wait_ready(120)
        client.notify("workspace/didChangeConfiguration", {"settings": {"diffusionLsp": {"steps": "lots"}}})
        warning = client.wait_for("window/showMessage", lambda p: "'steps'" in p["message"], 30)["message"]
        assert "using 3" in warning and "default" not in warning
        open_doc(client, "file:///held.py", "def f(a, b):\n    \n")
        before = client.request("diffusion/stats", {}, 10)
        inline(client, "file:///held.py", 1, 4)
        after = client.request("diffusion/stats", {}, 10)
        assert after["jobs"] == before["jobs"] + 1 and 0 < after["steps"] - before["steps"] <= 3


@pytest.mark.parametrize("section,warning", [(None, None), ("fast", "'diffusionLsp' must be an object, got str"),
                                             ([{"steps": 2}], "'diffusionLsp' must be an object, got list")])
def test_a_pushed_section_that_is_not_an_object_keeps_the_settings_held(section, warning):
    """``{"diffusionLsp": null}`` (a client with nothing set for this server) was warned about as "unknown
    setting 'diffusionLsp'", naming the server's own section as a typo; other values of the section too."""
    with LspClient(SCRIPTED) as client:
        client.initialize({"threads": 1, "steps": 3})
        client.wait_ready(120)
        client.notify("workspace/didChangeConfiguration", {"settings": {"diffusionLsp": section}})
        client.notify("workspace/didChangeConfiguration", {"settings": {"diffusionLsp": {"drafts": True}}})
        client.wait_for("diffusion/status", lambda p: p["state"] == "ready", 30)
        assert client.request("diffusion/stats", {}, 10)["state"] == "ready"   # both pushes were handled
        shown = [p["message"] for _, m, p in client.notifications if m == "window/showMessage"]
        assert not any("unknown setting" in m for m in shown), shown
        assert [m for m in shown if "invalid settings" in m] == ([f"diffusion-lsp: invalid settings, not applied: "
                                                                  f"{warning}"] if warning else [])
        open_doc(client, "file:///kept.py", "def f(a, b):\n    \n")
        before = client.request("diffusion/stats", {}, 10)
        inline(client, "file:///kept.py", 1, 4)
        after = client.request("diffusion/stats", {}, 10)
        assert 0 < after["steps"] - before["steps"] <= 3   # the steps set at start are still in force
