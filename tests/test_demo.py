"""``diffusion-lsp demo``: the scripted session against the real server and the embedded model."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _scenes(stdout: str) -> list[str]:
    """The built-in demo's output, one string per scene (each starts at its numbered title)."""
    parts = stdout.split("\n1. Code that repeats itself")
    assert len(parts) == 2, stdout
    first, second = parts[1].split("\n2. New code")
    return [first, second]


def test_the_demo_says_when_the_draft_starts_again_for_the_second_length():
    # each built-in scene's cursor is on an empty line: a one-line hole, filled at 8 and then 24 slots
    out = subprocess.run([sys.executable, "-m", "lsp_server", "demo"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    for scene in _scenes(out.stdout):
        lines = scene.splitlines()
        restart = next(i for i, line in enumerate(lines) if "the draft starts again" in line)
        assert "attempt 2 with a 24-slot hole" in lines[restart] and "8 and at 24 slots" in lines[restart]
        steps = [int(line.split()[1]) for line in lines if line.strip().startswith("step ")]
        assert steps == sorted(steps) and len(steps) > 2
        assert lines[restart - 1].strip().startswith("step") and lines[restart + 1].strip().startswith("step")
        assert "ghost text for" in scene or "no suggestion passed validation" in scene
        assert "round trip" in scene
        if "nothing offered with the default settings" in scene:  # withheld: shown again with the rules off,
            # with the engine's estimate, and the second request's drafts not printed
            after = scene.split("nothing offered with the default settings", 1)[1]
            assert "step " not in after
            assert "likely exactly right" in after or "no suggestion passed validation" in after


def test_the_demos_first_scene_offers_the_line_the_code_already_has():
    """The demo showed only a fill the engine withheld (new code, where the small model guesses). Its first scene is
    now code that repeats itself, where the real engine offers the line the function above has, and says so; the
    second is the new code, withheld at the default bar and shown with the bar off."""
    out = subprocess.run([sys.executable, "-m", "lsp_server", "demo"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    repeated, new = _scenes(out.stdout)
    assert "ghost text for 22:13: 'size = os.path.getsize(full)'" in repeated, repeated
    assert "(line 10 of the document reads the same" in repeated
    assert "nothing offered with the default settings" not in repeated
    assert "ghost text for 16:13" in new and "line 10 of the document" not in new


def test_a_file_or_cursor_the_demo_cannot_use_is_one_line_before_a_server_starts(tmp_path):
    (tmp_path / "two.py").write_text("x = 1\ny = 2\n")
    (tmp_path / "binary.py").write_bytes(b"\xb7\x00\xff")
    for extra, says in ((["--file", str(tmp_path / "missing.py")], "cannot read"),
                        (["--file", str(tmp_path)], "cannot read"),
                        (["--file", str(tmp_path / "binary.py")], "cannot read"),
                        (["--file", str(tmp_path / "two.py"), "--at", "x"], "--at must be LINE:COL"),
                        (["--file", str(tmp_path / "two.py"), "--at", "9:1"], "LINE is 1..3")):
        out = subprocess.run([sys.executable, "-m", "lsp_server", "demo", *extra], cwd=ROOT, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 2 and "diffusion-lsp demo: " in out.stderr and says in out.stderr, out.stderr
        assert "Traceback" not in out.stderr and "loading model" not in out.stdout


def test_a_reader_that_goes_away_ends_the_demo_without_a_traceback():
    """`diffusion-lsp demo | head -3` printed a BrokenPipeError traceback once head had its lines."""
    r, w = os.pipe()
    os.close(r)
    try:
        out = subprocess.run([sys.executable, "-m", "lsp_server", "demo"], cwd=ROOT, stdout=w, stderr=subprocess.PIPE,
                             text=True, timeout=300)
    finally:
        os.close(w)
    assert out.returncode == 141 and out.stderr == "", out.stderr


def test_the_demo_counts_col_in_characters_as_infill_does_and_refuses_one_past_the_line(tmp_path):
    """--at's COL went to the server as a UTF-16 column and was never checked against the line: `--at 6:99` was shown
    as "cursor at line 6, column 99" while the fill went at the line's end, and after an emoji every COL was one
    unit early (the cursor inside the word before the end). Now COL counts characters, as `infill`'s does, and one
    past the line's end is refused before a server starts."""
    (tmp_path / "emoji.py").write_text("s = '😀'\n")
    (tmp_path / "cr.py").write_bytes(b"x = 1\ry = 2\r")
    for name, at, says in (("emoji.py", "1:9", "line 1 has 7 characters: COL is 1..8"),
                           ("cr.py", "2:7", "line 2 has 5 characters: COL is 1..6")):
        out = subprocess.run([sys.executable, "-m", "lsp_server", "demo", "--file", str(tmp_path / name), "--at", at],
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert out.returncode == 2 and says in out.stderr, out.stderr
        assert "Traceback" not in out.stderr and "loading model" not in out.stdout


def test_the_built_in_examples_cursor_is_on_its_line():
    """The example's cursor line lost its indentation to a whitespace cleanup: the cursor (16:13) lay past the end of
    an empty line, the server moved it to column 1, and the demo still said "column 13"."""
    from lsp_server.demo import EXAMPLE, EXAMPLE_CURSOR, REPEATED, REPEATED_CURSOR

    for text, (line, col) in ((EXAMPLE, EXAMPLE_CURSOR), (REPEATED, REPEATED_CURSOR)):
        assert text.split("\n")[line] == " " * col  # the end of the indented empty line in the inner loop
