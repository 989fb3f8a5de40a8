"""``diffusion-lsp infill PATH:LINE:COL``: a place outside the file is a clear error, before any model loads."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("where, message", [
    ("9:1", "has 3 lines, not 9"),                                  # "x = 1\ny = 2\n": 2 lines and an empty third
    ("1:40", "line 1 of {path} has 5 characters: COL is 1..6, not 40"),
    ("2:-3", "LINE and COL are 1-based"),
])
def test_a_place_outside_the_file_is_refused(tmp_path, where, message):
    path = tmp_path / "two.py"
    path.write_text("x = 1\ny = 2\n")
    out = subprocess.run([sys.executable, "-m", "lsp_server", "infill", f"{path}:{where}"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and message.format(path=path) in out.stderr
    assert out.stdout == ""


def test_columns_count_characters_not_utf16_units(tmp_path):
    # COL counts characters: "s = '😀'" has 7, so 8 is the end of the line (not a UTF-16 or byte count)
    path = tmp_path / "emoji.py"
    path.write_text("s = '😀'\n")
    out = subprocess.run([sys.executable, "-m", "lsp_server", "infill", f"{path}:1:9"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "has 7 characters: COL is 1..8, not 9" in out.stderr
