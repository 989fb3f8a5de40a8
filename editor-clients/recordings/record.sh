#!/usr/bin/env bash
# Regenerates the recordings in this folder from real runs of the real server:
#
#   bash editor-clients/recordings/record.sh
#
#   neovim-frames.txt, neovim-*.png, neovim.gif   Neovim + editor-clients/neovim in tmux: a suggestion
#                                                 developing (drafts), the ghost text, <Tab> accepting it
#   demo.txt, demo.png                            `diffusion-lsp demo` on the same file and cursor
#   vscode-drafts.txt                             the VS Code extension's draft decorations (stub editor API)
#
# Needs: tmux, nvim (0.7+), the server (`diffusion-lsp`: $DIFFUSION_LSP, PATH, or the repository's
# .venv), Pillow in the server's Python environment, the DejaVu fonts (fonts-dejavu-core); node and
# the built extension for the VS Code part (skipped, saying so, without them).
# Environment: RECORD_MODEL (default embedded: rerun after shipping a better model),
# RECORD_VALIDATE=1 (keep the server's validation; off by default so the weak embedded model's
# text shows), RECORD_HOLD_MS (default 100), RECORD_ONLY=neovim,demo,vscode.
# Takes well under two minutes; exits non-zero when a part fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

if [ -z "${DIFFUSION_LSP:-}" ]; then
  if [ -x "$repo/.venv/bin/diffusion-lsp" ]; then
    DIFFUSION_LSP=$repo/.venv/bin/diffusion-lsp
  elif command -v diffusion-lsp >/dev/null 2>&1; then
    DIFFUSION_LSP=$(command -v diffusion-lsp)
  else
    echo "record.sh: diffusion-lsp not found: install the server (pip install .) or set DIFFUSION_LSP" >&2
    exit 1
  fi
fi
if [ ! -x "$DIFFUSION_LSP" ]; then
  echo "record.sh: DIFFUSION_LSP=$DIFFUSION_LSP is not an executable" >&2
  exit 1
fi
export DIFFUSION_LSP
# The Python of the server's environment (it has the server's packages; Pillow renders the images).
python=$(dirname "$(readlink -f "$DIFFUSION_LSP")")/python
[ -x "$python" ] || python=$(sed -n '1s/^#!//p' "$DIFFUSION_LSP")
[ -x "$python" ] || python=python3
for tool in tmux nvim; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "record.sh: $tool not found (Debian: apt-get install $([ "$tool" = nvim ] && echo neovim || echo "$tool"))" >&2
    exit 1
  fi
done
exec timeout 300 "$python" "$here/record.py"
