"""What a normal session writes on stderr: nothing. Editors log every stderr line of a language server (Neovim
as [ERROR]), so a progress bar or a library's chatter there reads as a failure. The real server, the
embedded model, the default verbosity."""

import sys

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
