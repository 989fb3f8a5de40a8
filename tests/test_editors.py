"""Real editors as clients: headless Neovim (Debian's 0.7.2) drives the real server; the VS Code
extension builds, lints, unit-tests, packages and runs against the real server with a stub editor API,
and its .vsix runs in a real VS Code (code-server in headless Chromium); Emacs (eglot, lsp-mode) and
Helix configurations are checked; scripts/link-editors.sh puts the server where editors look. Parts
whose editor or tool is missing are skipped, saying which."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _server() -> str:
    exe = Path(sys.executable).parent / "diffusion-lsp"
    return str(exe) if exe.exists() else shutil.which("diffusion-lsp") or ""


@pytest.mark.skipif(shutil.which("nvim") is None, reason="neovim is not installed (apt-get install neovim)")
def test_neovim_plugin_against_the_real_server():
    run = subprocess.run(["bash", str(ROOT / "editor-clients/neovim/tests/run.sh")], capture_output=True, text=True,
                         timeout=2400, env={**os.environ, "DIFFUSION_LSP": _server()})
    print(run.stdout[-4000:], run.stderr[-2000:])
    assert run.returncode == 0
    assert " 0 failed" in run.stdout


@pytest.mark.skipif(shutil.which("npm") is None, reason="node and npm are needed for the VS Code extension")
def test_all_editor_clients():
    # Neovim (above) and the real VS Code (below) run as their own tests.
    run = subprocess.run(["bash", str(ROOT / "editor-clients/test.sh")], capture_output=True, text=True,
                         timeout=1800, env={**os.environ, "DIFFUSION_LSP": _server(), "SKIP_REAL_VSCODE": "1",
                                           "SKIP_NEOVIM": "1" if shutil.which("nvim") else "0"})
    print(run.stdout[-6000:], run.stderr[-2000:])
    assert run.returncode == 0
    assert "editor-clients:" in run.stdout and " 0 failed" in run.stdout.splitlines()[-1]


@pytest.mark.skipif(shutil.which("npm") is None, reason="node and npm are needed for the VS Code extension")
def test_vscode_extension_in_a_real_vscode():
    """code-server + headless Chromium + playwright-core: open a file, type, ghost text, Tab, saved text."""
    run = subprocess.run(["bash", str(ROOT / "editor-clients/vscode/e2e/run.sh")], capture_output=True, text=True,
                         timeout=900, env={**os.environ, "DIFFUSION_LSP": _server()})
    print(run.stdout[-6000:], run.stderr[-3000:])
    if run.returncode == 3:
        pytest.skip(run.stdout.strip().splitlines()[-1])
    assert run.returncode == 0
    assert run.stdout.strip().splitlines()[-1].endswith(" 0 failed")


def test_setup_links_the_server_where_editors_look(tmp_path):
    """scripts/link-editors.sh (run by setup.sh): ~/.local/bin/diffusion-lsp -> this checkout's .venv."""
    target = ROOT / ".venv/bin/diffusion-lsp"
    if not target.exists():
        pytest.skip("no .venv/bin/diffusion-lsp in this checkout (bash scripts/setup.sh)")
    bin_dir = tmp_path / "bin"
    env = {**os.environ, "DIFFUSION_LSP_BIN_DIR": str(bin_dir), "PATH": "/usr/bin:/bin"}
    script = str(ROOT / "scripts/link-editors.sh")
    run = subprocess.run(["bash", script], capture_output=True, text=True, env=env, timeout=60)
    link = bin_dir / "diffusion-lsp"
    assert run.returncode == 0, run.stdout + run.stderr
    assert link.is_symlink() and os.readlink(link) == str(target), run.stdout
    assert "not on PATH" in run.stdout  # says what to do when the folder is not on PATH
    # A link to another checkout is left alone, a dangling one replaced.
    other = tmp_path / "other-diffusion-lsp"
    other.write_text("#!/bin/sh\n")
    link.unlink()
    link.symlink_to(other)
    run = subprocess.run(["bash", script], capture_output=True, text=True, env=env, timeout=60)
    assert os.readlink(link) == str(other) and "left as it is" in run.stdout, run.stdout
    other.unlink()
    run = subprocess.run(["bash", script], capture_output=True, text=True, env=env, timeout=60)
    assert os.readlink(link) == str(target), run.stdout
    run = subprocess.run(["bash", script], capture_output=True, text=True,
                         env={**env, "PATH": f"{bin_dir}:/usr/bin:/bin"}, timeout=60)
    assert "not on PATH" not in run.stdout
