"""What an action says it did (lsp_server/outcome.py) and the minConfidence setting (lsp_server/settings.py)."""

from engine.requests import Completion, HoleFill, HoleKind
from lsp_server.outcome import describe
from lsp_server.settings import parse_settings

TEXT = "def f(x):\n    if x > 0\n        pass\n\n\ndef g():\n    pass\n\n\ndef h():\n    ...\n"


def completion(*fills: HoleFill) -> Completion:
    return Completion(tuple(fills), HoleKind.SPAN, 1, 1, 1, 1.0, True)


def test_fill_holes_counts_what_it_filled_and_what_it_did_not():
    holes = [(TEXT.index("        pass"), TEXT.index("        pass") + 13), (TEXT.index("    pass\n\n\ndef h"), 0),
             (TEXT.index("    ..."), 0)]
    one = completion(HoleFill(holes[1][0], holes[1][0] + 9, "    return 1\n"))
    assert describe("fillHoles", TEXT, holes, one) == "filled 1 of 3 holes; 2 had no fill that parses"
    every = completion(*(HoleFill(s, s, "x\n") for s, _ in holes))
    assert describe("fillHoles", TEXT, holes, every) == "filled 3 of 3 holes"
    assert describe("fillHoles", TEXT, holes[:1], every) == "filled 1 of 1 hole"


def test_fix_names_the_token_it_inserted_or_deleted():
    at = TEXT.index(" > 0") + 4
    assert describe("fixSyntax", TEXT, [], completion(HoleFill(at, at, ":"))) == \
        "fixed the syntax error: inserted ':' on line 2"
    assert describe("fixSyntax", TEXT, [], completion(HoleFill(at - 1, at, ""))) == \
        "fixed the syntax error: deleted '0' on line 2"
    assert describe("fixSyntax", TEXT, [], completion()) == "no fix that parses was found"


def test_min_confidence_setting():
    settings, problems = parse_settings({"minConfidence": 0.5})
    assert problems == [] and settings.engine_config().fill.min_confidence == 0.5
    settings, problems = parse_settings({"minConfidence": None})
    assert problems == [] and settings.engine_config().fill.min_confidence is None
    settings, problems = parse_settings({"minConfidence": 2})
    assert settings.fill.min_confidence is None and "minConfidence" in problems[0]
    assert parse_settings({"namesRule": False})[0].engine_config().fill.names_rule is False


def test_fix_names_the_line_with_any_line_ending():
    """A lone CR ends a line (LSP): the fix on line 5 of a CR-only file was reported on line 1."""
    for eol in ("\n", "\r\n", "\r"):
        text = eol.join(["import os", "", "x = 1", "y = 2", "z = max(1, 2", "w = 3", ""])
        at = text.index("max(1, 2") + 8
        assert describe("fixSyntax", text, [], completion(HoleFill(at, at, ")"))) == \
            "fixed the syntax error: inserted ')' on line 5", repr(eol)
        body = completion(HoleFill(at, at, f"){eol}v = 4{eol}"))
        assert describe("fixSyntax", text, [], body) == "fixed the syntax error: rewrote 2 lines from line 5"
        assert describe("rewriteSelection", text, [], body) == "rewrote 2 lines"


def test_a_fix_that_replaces_more_lines_than_it_writes_counts_the_lines_it_replaced():
    """Seen with DiffusionGemma on a CRLF document: a fix that masked a whole function (3 lines, header included) and
    wrote `ro` in its place said "rewrote 1 line from line 1"."""
    for eol in ("\n", "\r\n"):
        text = eol.join(["def f(x:", "    y = x", "    return y", "", "print(f(1))", ""])
        whole = completion(HoleFill(0, text.index("    return y") + len("    return y"), "ro"))
        assert describe("fixSyntax", text, [], whole) == "fixed the syntax error: rewrote 3 lines from line 1"
        two = completion(HoleFill(0, text.index("    y"), f"def f(x):{eol}    z = 1{eol}"))
        assert describe("fixSyntax", text, [], two) == "fixed the syntax error: rewrote 2 lines from line 1"


def test_a_rewrite_that_replaces_more_lines_than_it_writes_counts_the_lines_it_replaced():
    """Seen over stdio: "Rewrite selection" on a whole 16-line CRLF file replaced every line with one and said
    "rewrote 1 line". A rewrite counts its lines as a fix does: those replaced or those written, whichever are more."""
    for eol in ("\n", "\r\n", "\r"):
        text = eol.join(["def f(x):", "    y = x", "    return y", "", "print(f(1))", ""])
        whole = completion(HoleFill(0, len(text), "f(x)" + eol))
        assert describe("rewriteSelection", text, [], whole) == "rewrote 5 lines", repr(eol)
        two = completion(HoleFill(text.index("    y"), text.index("    y"), f"    a = 1{eol}    b = 2{eol}"))
        assert describe("rewriteSelection", text, [], two) == "rewrote 2 lines"
