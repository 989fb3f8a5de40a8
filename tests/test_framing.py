"""Framing without I/O: every broken stream yields errors and then the messages after it, however the bytes
are split into reads."""

import json

import pytest

from lsp_server.framing import HEADER_LIMIT, Framer, FramingError


def frame(rid: int) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "m", "params": {"text": "Content-Length: 9"}}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


BODY = frame(1).split(b"\r\n\r\n", 1)[1]


def read(stream: bytes, chunk: int, limit: int = 1000) -> list:
    """Ids of the messages read (None for a body that is not JSON) and 'error' for each framing error."""
    framer, out = Framer(limit), []
    for i in range(0, len(stream), chunk):
        framer.feed(stream[i:i + chunk])
        while (item := framer.next()) is not None:
            if isinstance(item, FramingError):
                out.append("error")
                continue
            try:
                out.append(json.loads(item)["id"])
            except ValueError:
                out.append(None)
                framer.reject(item)
    return out


CASES = {
    "valid": (frame(1) + frame(2), [1, 2]),
    "over the limit": (b"Content-Length: 100000000000\r\n\r\n" + BODY + frame(2), ["error", 2]),
    "a 5,000-digit length": (b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n" + BODY + frame(2), ["error", 2]),
    "negative": (b"Content-Length: -5\r\n\r\n" + BODY + frame(2), ["error", 2]),
    "non-numeric": (b"Content-Length: 1e3\r\n\r\n" + BODY + frame(2), ["error", 2]),
    "no length": (b"Content-Type: x\r\n\r\n" + BODY + frame(2), ["error", 2]),
    "too short": (b"Content-Length: 10\r\n\r\n" + BODY + frame(2), [None, 2]),
    "too long": (b"Content-Length: %d\r\n\r\n" % (len(BODY) + 30) + BODY + frame(2) + frame(3), [None, 2, 3]),
    "garbage between": (frame(1) + b"\x00\xff junk\r\n\r\n" + frame(2), [1, "error", 2]),
    "endless garbage": (b"x" * (3 * HEADER_LIMIT) + frame(2), ["error", 2]),
    "a header name in the garbage": (b"Content-Length" * 2000 + frame(2), ["error", 2]),
    "headers in the garbage": (b"Content-Length:" * 2000 + frame(2), ["error", 2]),
    "invalid header blocks": (b"Content-Length: x\r\n\r\n" * 1000 + frame(2), ["error", 2]),
    "a header block too long": (b"Content-Length: 5\r\n" + b"X: y\r\n" * 3000 + b"\r\nhello" + frame(2),
                                ["error", 2]),
    "lower case, after garbage": (b"junk" + frame(1).replace(b"Content-Length", b"content-length"), ["error", 1]),
}


@pytest.mark.parametrize("chunk", [1, 5, 4096, 1 << 20])
@pytest.mark.parametrize("name", sorted(CASES))
def test_framing_recovers(name, chunk):
    stream, expected = CASES[name]
    assert read(stream, chunk) == expected


def test_headers_other_than_content_length_and_any_case_are_accepted():
    body = b'{"jsonrpc": "2.0", "id": 4, "method": "m"}'
    stream = b"content-type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length:%d\r\n\r\n" % len(body) + body
    assert read(stream, 3) == [4]


def test_an_error_is_reported_once_per_run_of_garbage():
    framer = Framer(100)
    framer.feed(b"junk\r\n\r\n" * 50 + frame(7))
    items = []
    while (item := framer.next()) is not None:
        items.append(item)
    assert len(items) == 2 and isinstance(items[0], FramingError) and json.loads(items[1])["id"] == 7
