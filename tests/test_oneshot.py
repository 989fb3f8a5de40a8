"""``diffusion-lsp infill PATH:LINE:COL``: a place outside the file is a clear error, before any model loads."""

import json
import os
import signal
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


def test_a_place_past_the_end_is_refused_before_the_model_loads(tmp_path):
    path = tmp_path / "two.py"
    path.write_text("x = 1\ny = 2\n")
    out = subprocess.run([sys.executable, "-m", "lsp_server", "-v", "infill", f"{path}:40:1", "--json"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "has 3 lines, not 40" in out.stderr and out.stdout == ""
    assert "loaded" not in out.stderr  # -v logs "model embedded loaded (...)" once a model has loaded


def test_json_is_one_object_and_a_line_break_with_the_alternatives(tmp_path):
    path = tmp_path / "add.py"
    path.write_text("def add(a, b):\n    \n\n\nprint(add(1, 2))\n")
    out = subprocess.run([sys.executable, "-m", "lsp_server", "-v", "infill", f"{path}:2:5", "--json"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "loaded" in out.stderr                        # the same log line, when the model does load
    assert out.stdout.endswith("}\n") and out.stdout.count("\n") == 1
    answer = json.loads(out.stdout)
    assert isinstance(answer["alternatives"], list) and len(answer["alternatives"]) <= 2
    for alt in [answer, *answer["alternatives"]]:
        assert set(alt["start"]) == set(alt["end"]) == {"line", "character"}
    assert len({a["text"] for a in answer["alternatives"]} | {answer["text"]}) == 1 + len(answer["alternatives"])


def test_int8_fills_and_a_quantization_the_model_cannot_take_is_one_clear_line(tmp_path):
    path = tmp_path / "add.py"
    path.write_text("def add(a, b):\n    \n\n\nprint(add(1, 2))\n")
    ok = subprocess.run([sys.executable, "-m", "lsp_server", "-v", "infill", f"{path}:2:5", "--json",
                         "--quantization", "int8"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert "model embedded loaded (masked backend, int8 weights)" in ok.stderr
    assert set(json.loads(ok.stdout)) >= {"text", "start", "end", "alternatives"}
    for value, says in (("fp8", "is for DiffusionGemma (torchao); a masked model such as the embedded one takes "
                                "none or int8"), ("int9", "unknown quantization 'int9'")):
        bad = subprocess.run([sys.executable, "-m", "lsp_server", "infill", f"{path}:2:5", "--quantization", value],
                             cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert bad.returncode == 1 and says in bad.stderr and bad.stdout == ""
        assert "Traceback" not in bad.stderr


def test_with_a_workspace_a_typed_line_may_take_a_line_of_its_files(tmp_path):
    ws = tmp_path / "proj"
    ws.mkdir()
    (ws / "a.py").write_text("from zorblax.handlers import register_quux_handler\n")
    path = ws / "main.py"
    path.write_text("import sys\nfrom zorblax.h\n\n\ndef main():\n    return sys.argv\n")
    where = f"{path}:2:{len('from zorblax.h') + 1}"
    out = subprocess.run([sys.executable, "-m", "lsp_server", "infill", where, "--workspace", str(ws), "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["text"] == "andlers import register_quux_handler"   # offered (the bar's default)
    out = subprocess.run([sys.executable, "-m", "lsp_server", "infill", where, "--workspace", str(tmp_path / "no")],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "cannot read the workspace" in out.stderr and "not a directory" in out.stderr


def test_with_a_workspace_a_go_fill_may_call_a_function_another_file_of_the_package_defines(tmp_path):
    """The one-shot command names the file's real path with its workspace: a call of a function another Go file of
    the package defines is no invented name (engine/names.py), and the workspace's line calling it is offered."""
    ws = tmp_path / "proj"
    (ws / "sticky").mkdir(parents=True)
    (ws / "sticky" / "bit.go").write_text("package sticky\n\nfunc setStickyBit(name string) error {\n\treturn nil\n}\n")
    (ws / "sticky" / "mkdir.go").write_text(
        "package sticky\n\nfunc Mkdir(name string) error {\n\tsetStickyBit(name)\n\treturn nil\n}\n")
    path = ws / "sticky" / "chmod.go"
    path.write_text("package sticky\n\nfunc Chmod(name string) error {\n\tsetSt\n\treturn nil\n}\n")
    out = subprocess.run([sys.executable, "-m", "lsp_server", "infill", f"{path}:4:7", "--workspace", str(ws),
                          "--json"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["text"] == "ickyBit(name)"


def test_a_dtype_torch_does_not_have_is_one_clear_line(tmp_path):
    path = tmp_path / "add.py"
    path.write_text("def add(a, b):\n    \n")
    bad = subprocess.run([sys.executable, "-m", "lsp_server", "infill", f"{path}:2:5", "--dtype", "float64"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and "unknown dtype 'float64' (auto, float32, bfloat16, float16)" in bad.stderr
    assert "KeyError" not in bad.stderr and "Traceback" not in bad.stderr and bad.stdout == ""


@pytest.mark.parametrize("option, value, says", [
    ("--steps", "-3", "argument --steps: -3 is not in 0..512"),    # was run as a 1-step fill
    ("--steps", "many", "argument --steps: 'many' is not an integer"),
    ("--threads", "0", "argument --threads: 0 is not in 1..256"),  # was run on 1 thread
])
def test_a_step_or_thread_count_the_settings_refuse_is_refused_before_the_model_loads(tmp_path, option, value, says):
    path = tmp_path / "add.py"
    path.write_text("def add(a, b):\n    \n")
    out = subprocess.run([sys.executable, "-m", "lsp_server", "-v", "infill", f"{path}:2:5", option, value],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and says in out.stderr and out.stdout == ""
    assert "loaded" not in out.stderr


@pytest.mark.parametrize("device", ["cuda", "cuda:99", "mps", "meta"])
def test_a_device_torch_cannot_use_is_one_line_naming_it_and_what_there_is(tmp_path, device):
    """``--device cuda`` on a torch without CUDA said only 'AssertionError: Torch not compiled with CUDA enabled'
    (mps: 'RuntimeError: PyTorch is not linked with support for mps devices'; meta: an internal error at the first
    fill); the load fails naming the device and the devices this torch has, before any weights load."""
    import torch

    from engine.backends.loading import available_devices

    if device in available_devices():
        pytest.skip(f"{device} is available here")
    path = tmp_path / "add.py"
    path.write_text("def add(a, b):\n    \n")
    bad = subprocess.run([sys.executable, "-m", "lsp_server", "infill", f"{path}:2:5", "--device", device],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and f"diffusion-lsp: device {device!r} is not available (" in bad.stderr, bad.stderr
    assert f"available here: {', '.join(available_devices())}" in bad.stderr
    assert "cpu" in available_devices() and (torch.cuda.is_available() or "cuda" not in available_devices())
    assert "AssertionError" not in bad.stderr and "Traceback" not in bad.stderr and bad.stdout == ""


def test_a_language_without_a_grammar_is_named_as_not_supported_and_filled_as_plain_text(tmp_path):
    """``--language cobol`` (or a typo, ``pyhton``) said only 'no valid fill found', or printed a fill nothing had
    checked: the user is told the language is not supported and which are; the fill is plain text's, as README says
    of other languages."""
    from engine.languages import grammar_languages

    path = tmp_path / "sub.py"
    path.write_text("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a \n")
    from engine.languages import PLAIN, spec_for

    # which names are noted: a typo too, not plain text asked for by name (no fill needed to say)
    assert spec_for("pyhton") is PLAIN and spec_for("plaintext") is PLAIN and PLAIN.name == "plaintext"
    assert spec_for("py") is not PLAIN
    for language, noted in (("cobol", True), ("py", False), ("c", False)):   # end to end: the note, the fill, the JSON
        out = subprocess.run([sys.executable, "-m", "lsp_server", "infill", f"{path}:6:14", "--language", language,
                              "--json"], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0 and isinstance(json.loads(out.stdout)["text"], str), out.stderr
        note = (f"diffusion-lsp: language {language!r} is not supported: filled as plain text, without a syntax check "
                f"(supported: {', '.join(grammar_languages())}; as plain text with a syntax check: ")
        assert (note in out.stderr) == noted, out.stderr
        assert ("not supported" in out.stderr) == noted, out.stderr   # C is checked by its grammar: no note
    assert grammar_languages() == ["go", "javascript", "python", "rust", "typescript", "typescriptreact"]


@pytest.mark.parametrize("where, message", [
    ("2:7", "line 2 of {path} has 5 characters: COL is 1..6, not 7"),
    ("4:1", "{path} has 3 lines, not 4"),
])
def test_a_file_with_cr_only_line_ends_counts_its_lines_as_an_editor_does(tmp_path, where, message):
    """A file whose lines end in a lone CR (old Mac OS): LINE 2 is an LSP line, but the column check split the text
    at LF only, and `infill cr.py:2:5` ended in an IndexError traceback; now its lines are the LSP lines."""
    path = tmp_path / "cr.py"
    path.write_bytes(b"x = 1\ry = 2\r")
    out = subprocess.run([sys.executable, "-m", "lsp_server", "infill", f"{path}:{where}"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and message.format(path=path) in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""


def test_a_fill_in_a_file_with_cr_only_line_ends_is_placed_on_its_line(tmp_path):
    path = tmp_path / "cr.py"
    path.write_bytes(b"x = 1\ry = \r")
    out = subprocess.run([sys.executable, "-m", "lsp_server", "infill", f"{path}:2:5", "--json"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert answer["start"] == {"line": 1, "character": 4}


def test_a_byte_order_mark_is_not_a_column_of_the_first_line(tmp_path):
    """A UTF-8 file saved with a BOM (Windows editors): COL counted the invisible mark as line 1's first character,
    so `bom.py:1:7` was taken for the end of "x = 1" and `1:6` was one character early; editors do not count it."""
    path = tmp_path / "bom.py"
    path.write_bytes("\ufeffx = 1\ny = 2\n".encode())
    out = subprocess.run([sys.executable, "-m", "lsp_server", "infill", f"{path}:1:7"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "line 1 of" in out.stderr and "has 5 characters: COL is 1..6, not 7" in out.stderr
    assert out.stdout == ""


def test_a_reader_that_goes_away_or_a_full_disk_ends_it_with_a_status_not_a_traceback(tmp_path):
    """`infill ... | head -c1` (the reader gone before the answer) printed a BrokenPipeError traceback; with stdout on
    a full disk, an OSError traceback. Now: a closed pipe ends it silently with 141 (as SIGPIPE would), a write
    error is one line and status 1."""
    path = tmp_path / "add.py"
    path.write_text("def add(a, b):\n    \n")
    r, w = os.pipe()
    os.close(r)  # the reader has gone before anything is written
    try:
        gone = subprocess.run([sys.executable, "-m", "lsp_server", "infill", f"{path}:2:5", "--json"], cwd=ROOT,
                              stdout=w, stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(w)
    assert gone.returncode == 141 and gone.stderr == "", gone.stderr
    if not os.path.exists("/dev/full"):
        return
    with open("/dev/full", "w") as full:
        out = subprocess.run([sys.executable, "-m", "lsp_server", "infill", f"{path}:2:5", "--json"], cwd=ROOT,
                             stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
    assert out.returncode == 1 and out.stderr == "diffusion-lsp: [Errno 28] No space left on device\n", out.stderr


def test_ctrl_c_is_one_line_and_the_status_of_an_interrupt(tmp_path):
    """Ctrl-C while infill worked (loading, filling, reading) printed a KeyboardInterrupt traceback, and during the
    load waited for it to finish. The file here is a FIFO, so the command is known to be reading it when the
    interrupt comes."""
    fifo = tmp_path / "slow.py"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-m", "lsp_server", "infill", f"{fifo}:1:1"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    writer = os.open(fifo, os.O_WRONLY)  # returns once infill has opened the file to read it
    try:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(writer)
    assert proc.returncode == 130 and err == "diffusion-lsp: interrupted\n" and out == "", err


def test_a_fill_withheld_by_the_bar_is_not_called_no_valid_fill(tmp_path):
    """When every valid fill was withheld (the confidence bar, the names rule), the plain output said "no valid fill
    found", although --json listed the valid fills under 'considered'; it now says they were withheld, and why."""
    path = tmp_path / "add.py"
    path.write_text("def add(a, b):\n    \n\n\nprint(add(1, 2))\n")
    both = [subprocess.run([sys.executable, "-m", "lsp_server", "infill", f"{path}:2:5", *extra], cwd=ROOT,
                           capture_output=True, text=True, timeout=300) for extra in (["--json"], [])]
    assert all(out.returncode == 0 for out in both), both[0].stderr + both[1].stderr
    answer, plain = json.loads(both[0].stdout), both[1]
    if answer["text"] or not answer["considered"]:
        pytest.skip("this model offers a fill here, or finds none: nothing withheld to report")
    assert plain.stdout == "" and "no valid fill found" not in plain.stderr
    assert f"no fill offered: {len(answer['considered'])} valid fill(s) withheld" in plain.stderr
