"""Real editors as clients: headless Neovim (Debian's 0.7.2) drives the real server; the VS Code
extension builds, lints, unit-tests, packages and runs against the real server with a stub editor API;
Emacs (eglot, lsp-mode) and Helix configurations are checked. Parts whose editor is missing say so."""

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
                         timeout=900, env={**os.environ, "DIFFUSION_LSP": _server()})
    print(run.stdout[-4000:], run.stderr[-2000:])
    assert run.returncode == 0
    assert " 0 failed" in run.stdout


@pytest.mark.skipif(shutil.which("npm") is None, reason="node and npm are needed for the VS Code extension")
def test_all_editor_clients():
    run = subprocess.run(["bash", str(ROOT / "editor-clients/test.sh")], capture_output=True, text=True,
                         timeout=900, env={**os.environ, "DIFFUSION_LSP": _server()})
    print(run.stdout[-6000:], run.stderr[-2000:])
    assert run.returncode == 0
    assert "editor-clients:" in run.stdout and " 0 failed" in run.stdout.splitlines()[-1]
