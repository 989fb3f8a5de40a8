"""Memory held by the server per message (issue 18, item 1): what a storm of edits must not leave behind."""

from lsp_server.server import build_server

URI = "file:///memory/doc.py"


def _feed(server, method: str, params: dict) -> None:
    protocol = server.protocol
    protocol.handle_message(protocol.structure_message({"jsonrpc": "2.0", "method": method, "params": params}))


def test_notifications_leave_no_request_futures_behind():
    """pygls filed a future per didOpen/didChange/didClose under a fresh id and never removed it."""
    server = build_server()
    _feed(server, "textDocument/didOpen",
          {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": "x = 1\r\n"}})
    for version in range(2, 202):
        _feed(server, "textDocument/didChange", {
            "textDocument": {"uri": URI, "version": version},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                                "text": "é"}]})
    assert server.documents.get(URI).text == "é" * 200 + "x = 1\r\n"
    _feed(server, "textDocument/didClose", {"textDocument": {"uri": URI}})
    assert server.documents.get(URI) is None
    assert server.protocol._request_futures == {}
