"""Positions <-> offsets in every encoding, with CRLF, tabs, emoji, empty files; incremental sync."""

import bisect
import json
import random

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


# -- incremental sync against a reference model of the spec ---------------------------------------------
# The reference holds the client's text as the spec sees it: UTF-16 code units when positions are UTF-16, else
# code points; a position's character is clamped to its line's length; a line past the last is an error (the
# whole notification is refused and the document waits for a full text). Text travels as JSON, so surrogate
# halves that meet are one character (the same text sent whole would be).

_PIECES = ["a", " ", "\t", "\n", "\r", "\r\n", "😀", "\ud800", "\udc00", "\ud83d", "\ude00", "e\u0301", "é", "中",
           "\u2028", "\x0c", ""]


def _wire(text: str) -> str:
    return json.loads(json.dumps(text))


def _units(text: str, enc) -> list[str]:
    if enc == UTF16:
        data = text.encode("utf-16-le", "surrogatepass")
        return [chr(data[i] | data[i + 1] << 8) for i in range(0, len(data), 2)]
    return list(text)


def _text(units: list[str]) -> str:
    return _wire("".join(units))  # JSON joins a high half followed by a low half


def _ref_lines(units: list[str]) -> list[tuple[int, int]]:
    """(start, end of content) of each line: breaks at \\r\\n, \\r, \\n."""
    out, start, i = [], 0, 0
    while i < len(units):
        if units[i] in "\r\n":
            brk = 2 if units[i:i + 2] == ["\r", "\n"] else 1
            out.append((start, i))
            i += brk
            start = i
        else:
            i += 1
    return out + [(start, len(units))]


def _ref_width(unit: str, enc) -> int:
    return len(unit.encode("utf-8", "surrogatepass")) if enc == UTF8 else 1


def _ref_offset(units: list[str], pos, enc) -> int:
    lines = _ref_lines(units)
    if pos.line >= len(lines):
        raise PositionError(pos)
    i, end, left = *lines[pos.line], pos.character
    while i < end and 0 < _ref_width(units[i], enc) <= left:
        left -= _ref_width(units[i], enc)
        i += 1
    return i


def _ref_position(units: list[str], offset: int, enc):
    line, (start, _) = max((n, s) for n, s in enumerate(_ref_lines(units)) if s[0] <= offset)
    return P(line, sum(_ref_width(u, enc) for u in units[start:offset]))


def _random_position(rng, units: list[str], enc):
    lines = _ref_lines(units)
    if rng.random() < 0.03:
        return P(len(lines) + rng.randrange(2), 0)              # past the last line
    line = rng.randrange(len(lines))
    start, end = lines[line]
    if rng.random() < 0.15:
        return P(line, rng.randrange(3 * (end - start) + 5))     # often past the line's end: clamped
    return _ref_position(units, rng.randrange(start, end + 1), enc)  # any unit (UTF-16: inside a pair too)


def _fuzz_one(seed: int, enc) -> None:
    rng = random.Random(seed)
    piece = lambda n: _wire("".join(rng.choice(_PIECES) for _ in range(n)))  # noqa: E731
    store, uri = DocumentStore(), "file:///fuzz.py"
    d = store.open(types.TextDocumentItem(uri, "python", 1, piece(rng.randrange(30))))
    ref = _units(d.text, enc)
    if seed % 2:
        d.line_starts()  # the starts are then kept up to date edit by edit
    for version in range(2, 50):
        changes, expected = [], list(ref)
        for _ in range(rng.randrange(1, 4)):  # one notification, several changes applied in turn
            if rng.random() < 0.1:
                changes.append(types.TextDocumentContentChangeWholeDocument(piece(rng.randrange(12))))
                if expected is not None:
                    expected = _units(changes[-1].text, enc)
                continue
            a, b = sorted([_random_position(rng, expected or ref, enc) for _ in range(2)],
                          key=lambda p: (p.line, p.character))
            changes.append(types.TextDocumentContentChangePartial(types.Range(a, b), piece(rng.randrange(5))))
            if expected is not None:
                try:
                    lo, hi = _ref_offset(expected, a, enc), _ref_offset(expected, b, enc)
                    expected = _units(_text(expected[:lo] + _units(changes[-1].text, enc) + expected[hi:]), enc)
                except PositionError:
                    expected = None  # the reference refuses the notification
        params = types.DidChangeTextDocumentParams(types.VersionedTextDocumentIdentifier(version=version, uri=uri),
                                                   changes)
        where = f"seed {seed}, {enc}, v{version}, {changes} on {d.text!r}"
        if expected is None:
            before = d.text
            with pytest.raises(PositionError):
                store.change(params, enc)
            assert d.text == before and d.out_of_sync, where
            text = piece(rng.randrange(20))
            store.change(change(uri, version, types.TextDocumentContentChangeWholeDocument(text)), enc)
            ref = _units(text, enc)
            continue
        store.change(params, enc)
        ref = expected
        assert d.text == _text(ref) and not d.out_of_sync, where
        assert d.line_starts() == doc(d.text).line_starts(), where
        units = 0  # every str offset's position (as answers are made), and back, against the reference's
        for off in range(len(d.text) + 1):
            pos = _ref_position(ref, units, enc)
            assert d.position_at(off, enc) == pos, (where, off)
            if d.text[off - 1:off + 1] != "\r\n":
                assert d.offset_at(pos, enc) == off, (where, off)
            units += len(_units(d.text[off:off + 1], enc))


@pytest.mark.parametrize("enc", [UTF16, UTF8, UTF32])
def test_incremental_sync_matches_a_reference_of_the_spec(enc):
    for seed in range(60):
        _fuzz_one(seed, enc)


@pytest.mark.parametrize("text,start,end,new,expected", [
    ("😀", P(0, 1), P(0, 2), "", "\ud83d"),                   # deleting the low half keeps the high one
    ("😀", P(0, 0), P(0, 1), "", "\ude00"),
    ("😀b", P(0, 1), P(0, 1), "x", "\ud83dx\ude00b"),         # inserting between the halves
    ("😀😀", P(0, 1), P(0, 3), "", "😀"),                     # the two halves left meet: one emoji again
    ("\ud83d", P(0, 1), P(0, 1), "\ude00", "😀"),            # halves that meet are one character
    ("\ude00x\ud83d", P(0, 1), P(0, 2), "", "\ude00\ud83d"),  # a low then a high half are two lone ones
])
def test_utf16_edits_between_surrogate_halves(text, start, end, new, expected):
    store = DocumentStore()
    d = store.open(types.TextDocumentItem("file:///s.py", "python", 1, text))
    store.change(change("file:///s.py", 2, types.TextDocumentContentChangePartial(types.Range(start, end), new)), UTF16)
    assert d.text == _wire(expected) and len(d.text) == len(_wire(expected))
    assert d.position_at(len(d.text), UTF8).character == len(d.text.encode("utf-8", "surrogatepass"))


def test_a_range_reversed_inside_a_surrogate_pair_is_refused():
    store = DocumentStore()
    d = store.open(types.TextDocumentItem("file:///r.py", "python", 1, "😀"))
    with pytest.raises(PositionError):
        store.change(change("file:///r.py", 2, types.TextDocumentContentChangePartial(
            types.Range(P(0, 1), P(0, 0)), "x")), UTF16)
    assert d.text == "😀" and d.out_of_sync


@pytest.mark.parametrize("versions", [(3, 5, 3), (3, 5, 4), (3, 3)], ids=["back-to-it", "back", "same"])
def test_a_version_that_does_not_increase_is_a_new_text(versions):
    """LSP versions only increase; a client whose version went back to the one a result was computed for made
    that result look fresh for another text (an action offered for v3 was computed on the new v3)."""
    store = DocumentStore()
    d = store.open(types.TextDocumentItem("file:///v.py", "python", versions[0], "a = 1\n"))
    computed_for = (d.generation, d.version)
    for n, version in enumerate(versions[1:]):
        store.change(change("file:///v.py", version, types.TextDocumentContentChangeWholeDocument(f"b = {n}\n")), UTF16)
    assert d.version == versions[-1]
    assert store.moved_on("file:///v.py", *computed_for)
    assert not store.moved_on("file:///v.py", d.generation, d.version)  # the text now is fresh at its version


def _one_by_one(text: str, changes: list, enc) -> str | None:
    """``changes`` sent as one notification each (the path a single change takes); None if one is refused."""
    store = DocumentStore()
    d = store.open(types.TextDocumentItem("file:///one.py", "python", 1, text))
    try:
        for n, c in enumerate(changes):
            store.change(change("file:///one.py", n + 2, c), enc)
    except PositionError:
        return None
    return d.text


@pytest.mark.parametrize("enc", [UTF16, UTF8, UTF32])
def test_many_changes_in_one_notification_are_those_changes_applied_one_by_one(enc):
    """A notification with several changes applies each to the lines it touches and joins the text once; what it
    makes is what the same changes make sent one by one, at CRLF, lone CR, surrogate halves, clamped columns and
    past-the-end lines (refused, the text kept)."""
    for seed in range(150):
        _batch_one(seed, enc)


def _batch_one(seed: int, enc) -> None:
    rng = random.Random(seed)
    piece = lambda n: _wire("".join(rng.choice(_PIECES) for _ in range(n)))  # noqa: E731
    text = piece(rng.randrange(80))
    changes, current = [], _units(text, enc)
    for _ in range(rng.randrange(2, 40)):
        if rng.random() < 0.04:
            changes.append(types.TextDocumentContentChangeWholeDocument(piece(rng.randrange(30))))
            current = _units(changes[-1].text, enc)
            continue
        refusable = seed % 4 == 0   # a line past the last, a reversed range: in a quarter of the notifications
        while True:
            a, b = sorted([_random_position(rng, current, enc) for _ in range(2)],
                          key=lambda p: (p.line, p.character))
            if refusable or b.line < len(_ref_lines(current)):
                break
        if refusable and rng.random() < 0.05:
            a, b = b, a   # refused when it ends before it starts
        changes.append(types.TextDocumentContentChangePartial(types.Range(a, b), piece(rng.randrange(6))))
        expected = _one_by_one(text, changes, enc)
        if expected is None:
            break
        current = _units(expected, enc)
    expected = _one_by_one(text, changes, enc)
    store = DocumentStore()
    d = store.open(types.TextDocumentItem("file:///all.py", "python", 1, text))
    where = f"seed {seed}, {enc}: {changes} on {text!r}"
    if expected is None:
        with pytest.raises(PositionError):
            store.change(change("file:///all.py", 2, *changes), enc)
        assert d.text == text and d.out_of_sync, where
    else:
        store.change(change("file:///all.py", 2, *changes), enc)
        assert d.text == expected and not d.out_of_sync, where
        assert d.line_starts() == doc(expected).line_starts(), where


def test_each_change_of_a_long_notification_is_applied_to_its_lines_not_the_whole_text(monkeypatch):
    """Each change of a notification was applied to the whole text (copied, every line start after it shifted):
    5,000 changes in one didChange of a 10 MB file (a replace-all) held the event loop, every request and cancel
    behind it, for 36 s. Now each is applied to the lines it touches (and one on each side)."""
    line = "    value = compute(alpha, beta)  # 😀\r\n"
    text = line * 5_000
    sizes: list[int] = []
    apply = Document.apply
    monkeypatch.setattr(Document, "apply",
                        lambda self, c, enc=UTF16: sizes.append(len(self.text)) or apply(self, c, enc))
    changes = [types.TextDocumentContentChangePartial(types.Range(P(n * 7 % 4_900 + 5, 4), P(n * 7 % 4_900 + 6, 9)),
                                                      f"v{n}\n") for n in range(1_000)]
    store = DocumentStore()
    d = store.open(types.TextDocumentItem("file:///big.py", "python", 1, text))
    store.change(change("file:///big.py", 2, *changes), UTF16)
    assert len(sizes) == len(changes) and max(sizes) <= 6 * len(line)   # a few lines each, never the text
    monkeypatch.setattr(Document, "apply", apply)
    assert d.text == _one_by_one(text, changes, UTF16) and d.line_starts() == doc(d.text).line_starts()
