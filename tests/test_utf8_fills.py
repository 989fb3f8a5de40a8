"""Fills beside emoji and accents through a real server over stdio, on the embedded model: the model spells such
characters in byte tokens, and a fill whose bytes formed no UTF-8 was refused (no fill at all). UTF-16 positions."""

import re
import sys

from benchmarks.lsp_client import LspClient, offset_at, position_at

SERVER = [sys.executable, "-m", "lsp_server"]
LINE = '    s = "\U0001f600\U0001f600\u00e9" + '
TEXT = "def f(x):\n" + LINE + "\n    return s\n"


def test_a_line_after_emoji_gets_a_fill_in_whole_characters_at_its_utf16_column():
    """The real model's fill here was 12 byte tokens that form no UTF-8 then ``")``: refused, so no fill, with
    ``validate`` on or off. The loop now keeps every hole's byte tokens valid UTF-8 (engine/backends/utf8.py):
    a fill comes back, at the cursor's UTF-16 column (each emoji is two units), with no U+FFFD and no lone
    surrogate, and the document it makes keeps the user's line as it was."""
    at = TEXT.index(LINE) + len(LINE)
    position = position_at(TEXT, at)
    assert position == {"line": 1, "character": len(LINE) + 2}
    with LspClient(SERVER) as client:
        client.initialize({"threads": 1, "minConfidence": 0})
        assert client.wait_ready(120)["state"] == "ready"
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": "file:///emoji.py", "languageId": "python", "version": 1, "text": TEXT}})
        answer = client.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": "file:///emoji.py"}, "position": position, "context": {"triggerKind": 1}}, 120)
    assert answer["items"], "no fill after the emoji"
    for item in answer["items"]:
        fill = item["insertText"]
        assert "\ufffd" not in fill and not re.search("[\ud800-\udfff]", fill)
        assert item["range"]["start"] == item["range"]["end"] == position
        lo = offset_at(TEXT, item["range"]["start"])
        assert lo == at
        edited = TEXT[:lo] + fill + TEXT[offset_at(TEXT, item["range"]["end"]):]
        assert edited.split("\n")[1].startswith(LINE)
