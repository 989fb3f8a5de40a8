"""Positions <-> offsets in every encoding, with CRLF, tabs, emoji, empty files; incremental sync."""

import bisect

import pytest
from lsprotocol import types

from lsp_server.documents import _BLOCK, UTF8, UTF16, UTF32, Document, DocumentStore, PositionError

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


# -- long lines: unit tables (one block scanned per conversion), checked against a plain count ----------

def _reference_units(ch: str, enc) -> int:
    if enc == UTF8:
        return len(ch.encode("utf-8", "surrogatepass"))
    return len(ch.encode("utf-16-le", "surrogatepass")) // 2 if enc == UTF16 else 1


LONG = {  # each line spans several of the tables' blocks
    "astral at block edges": "a" * (_BLOCK - 1) + "😀" + "b" * (_BLOCK - 2) + "😀😀" + "c" * 1500,
    "lone surrogates": ("x\ud800y\udfffé" * 700) + "\ud83d",
    "all ascii, CRLF after": "q" * 3000 + "\r\nnext",
    "lone CR after": "é" * 1600 + "\r" + "😀" * 400,
}


@pytest.mark.parametrize("name", sorted(LONG))
@pytest.mark.parametrize("enc", [UTF8, UTF16, UTF32])
def test_long_line_conversions_are_exact(name, enc):
    text = LONG[name]
    d = doc(text)
    end = d._line_end(0)
    cumulative = [0]
    for ch in text[:end]:
        cumulative.append(cumulative[-1] + _reference_units(ch, enc))
    total = cumulative[-1]
    for character in list(range(0, total + 3, 7)) + [total - 1, total, total + 1]:
        expected = bisect.bisect_right(cumulative, character) - 1  # the last offset not past ``character``
        assert d.offset_at(P(0, character), enc) == expected, character
    for off in list(range(0, end + 1, 5)) + [end]:
        assert d.position_at(off, enc) == P(0, cumulative[off]), off


@pytest.mark.parametrize("enc", [UTF8, UTF16])
def test_long_line_tables_follow_edits(enc):
    store = DocumentStore()
    text = "v = 1; " * 600
    store.open(types.TextDocumentItem("file:///l.py", "python", 1, text))
    d = store.get("file:///l.py")
    end = d.position_at(len(text), enc)
    assert d.offset_at(end, enc) == len(text)
    # an astral character near the start shifts every later unit; the table must be rebuilt
    store.change(change("file:///l.py", 2, types.TextDocumentContentChangePartial(
        types.Range(P(0, 3), P(0, 3)), "😀")), enc)
    new_end = d.position_at(len(d.text), enc)
    assert new_end.character == end.character + (4 if enc == UTF8 else 2)
    assert d.offset_at(new_end, enc) == len(d.text)
    # the old end's units now end 4 (UTF-8) or 2 (UTF-16) one-unit characters before the new end
    assert d.offset_at(end, enc) == len(d.text) - (4 if enc == UTF8 else 2)
    # a failed change restores the old text and its tables with it
    with pytest.raises(PositionError):
        store.change(change("file:///l.py", 3, types.TextDocumentContentChangePartial(
            types.Range(P(0, 0), P(0, 0)), "😀" * 3), types.TextDocumentContentChangePartial(
            types.Range(P(5, 0), P(5, 1)), "x")), enc)
    assert d.offset_at(new_end, enc) == len(d.text) and d.position_at(len(d.text), enc) == new_end


def test_incremental_starts_with_many_line_breaks_inserted():
    store = DocumentStore()
    store.open(types.TextDocumentItem("file:///m.py", "python", 1, "a\r\nb"))
    d = store.get("file:///m.py")
    d.line_starts()
    inserted = "x\r\ny\rz\n" * 1000 + "\r"
    store.change(change("file:///m.py", 2, types.TextDocumentContentChangePartial(
        types.Range(P(0, 1), P(0, 1)), inserted)), UTF16)  # the inserted CR meets the existing CRLF
    assert d.line_starts() == Document("u", "python", 1, d.text).line_starts()
