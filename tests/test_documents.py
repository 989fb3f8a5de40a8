"""Positions <-> offsets in every encoding, with CRLF, tabs, emoji, empty files; incremental sync."""

import pytest
from lsprotocol import types

from lsp_server.documents import UTF8, UTF16, UTF32, Document, DocumentStore, PositionError

P = types.Position


def doc(text: str) -> Document:
    return Document("file:///t.py", "python", 1, text)


@pytest.mark.parametrize("text,pos,enc,offset", [
    ("", P(0, 0), UTF16, 0),
    ("", P(0, 5), UTF16, 0),                       # past the line end: the end (LSP rule)
    ("ab\r\ncd", P(1, 1), UTF16, 5),
    ("ab\r\ncd", P(0, 9), UTF16, 2),               # never lands between \r and \n
    ("a\rb", P(1, 0), UTF16, 2),                   # lone CR is a line break
    ("\tx = 1\n", P(0, 1), UTF16, 1),              # a tab is one unit
    ("😀x\n", P(0, 2), UTF16, 1),                   # emoji: 2 UTF-16 units
    ("😀x\n", P(0, 1), UTF16, 0),                   # inside a surrogate pair: the character start
    ("😀x\n", P(0, 4), UTF8, 1),                    # emoji: 4 UTF-8 bytes
    ("😀x\n", P(0, 1), UTF32, 1),
    ("é=1", P(0, 2), UTF8, 1),
    ("a\x0cb\u2028c\nd", P(1, 0), UTF16, 6),        # form feed and U+2028 are not LSP line breaks
])
def test_offset_at(text, pos, enc, offset):
    assert doc(text).offset_at(pos, enc) == offset


@pytest.mark.parametrize("text", ["", "x", "a\r\nb\r\n", "😀\t😀\nz", "é\rü\n\n", "tail\n"])
@pytest.mark.parametrize("enc", [UTF8, UTF16, UTF32])
def test_round_trip_every_offset(text, enc):
    d = doc(text)
    for off in range(len(text) + 1):
        if text[off - 1:off + 1] == "\r\n":
            continue  # between CR and LF is not a position
        assert d.offset_at(d.position_at(off, enc), enc) == off


@pytest.mark.parametrize("pos", [P(3, 0), P(99, 0)])  # negatives cannot even be built: see the e2e test
def test_bad_positions_raise(pos):
    with pytest.raises(PositionError):
        doc("a\nb").offset_at(pos)


def change(uri, version, *changes):
    return types.DidChangeTextDocumentParams(types.VersionedTextDocumentIdentifier(version=version, uri=uri),
                                             list(changes))


def test_incremental_changes_with_emoji_and_crlf():
    store = DocumentStore()
    store.open(types.TextDocumentItem("file:///a.py", "python", 1, "x = '😀'\r\ny = 2\r\n"))
    # replace "2" (line 1, char 4) with "3", then insert after the emoji (UTF-16 char 7)
    store.change(change("file:///a.py", 2,
                        types.TextDocumentContentChangePartial(types.Range(P(1, 4), P(1, 5)), "3"),
                        types.TextDocumentContentChangePartial(types.Range(P(0, 7), P(0, 7)), "!")), UTF16)
    d = store.get("file:///a.py")
    assert d.text == "x = '😀!'\r\ny = 3\r\n" and d.version == 2


def test_bad_change_keeps_text_and_marks_out_of_sync():
    store = DocumentStore()
    store.open(types.TextDocumentItem("file:///a.py", "python", 1, "abc"))
    with pytest.raises(PositionError):
        store.change(change("file:///a.py", 2,
                            types.TextDocumentContentChangePartial(types.Range(P(9, 0), P(9, 1)), "x")), UTF16)
    d = store.get("file:///a.py")
    assert d.text == "abc" and d.out_of_sync
    store.change(change("file:///a.py", 3, types.TextDocumentContentChangeWholeDocument("new")), UTF16)
    assert d.text == "new" and not d.out_of_sync


def test_range_at_utf16():
    d = doc("a😀b\nc")
    r = d.range_at(3, 5)
    assert (r.start.line, r.start.character, r.end.line, r.end.character) == (0, 4, 1, 1)


def test_incremental_line_starts_match_a_full_rescan():
    import random
    rng = random.Random(7)
    alphabet = ["a", "b", "\n", "\r", "\r\n", "😀", " "]
    d = doc("".join(rng.choice(alphabet) for _ in range(200)))
    d.line_starts()
    for _ in range(500):
        lo = rng.randrange(len(d.text) + 1)
        hi = rng.randrange(lo, min(len(d.text), lo + 6) + 1)
        new = "".join(rng.choice(alphabet) for _ in range(rng.randrange(4)))
        start, end = d.position_at(lo, UTF32), d.position_at(hi, UTF32)
        if d.offset_at(start, UTF32) != lo or d.offset_at(end, UTF32) != hi:
            continue  # between CR and LF: not addressable as a position
        d.apply(types.TextDocumentContentChangePartial(types.Range(start, end), new), UTF32)
        assert d.line_starts() == doc(d.text).line_starts()
