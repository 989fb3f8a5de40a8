#!/usr/bin/env bash
# Runs the extension in a real VS Code (code-server.js): finds code-server, Chromium and
# playwright-core (see install.sh), packages the .vsix when there is none, and runs the test
# against the real server. Exits 0 / 1 on pass / fail, and 3 after printing "skip: <reason>" when
# a tool is missing.
#
#   bash editor-clients/vscode/e2e/run.sh [screenshot.png]
# Environment: DIFFUSION_LSP (else the repository's .venv, else PATH), CODE_SERVER, CHROMIUM,
# PLAYWRIGHT_CORE_DIR, CODE_SERVER_PREFIX (see versions.sh), E2E_KEEP_VSIX=1 (use the .vsix there).
set -u
here=$(cd "$(dirname "$0")" && pwd)
ext=$(cd "$here/.." && pwd)
repo=$(cd "$ext/../.." && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"
server=${DIFFUSION_LSP:-}
[ -z "$server" ] && [ -x "$repo/.venv/bin/diffusion-lsp" ] && server=$repo/.venv/bin/diffusion-lsp
[ -z "$server" ] && server=$(command -v diffusion-lsp || true)
code_server=${CODE_SERVER:-}
[ -z "$code_server" ] && [ -f "$CODE_SERVER_PREFIX/.installed" ] && code_server=$CODE_SERVER_PREFIX/node_modules/.bin/code-server
[ -z "$code_server" ] && code_server=$(command -v code-server || true)
chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
playwright=${PLAYWRIGHT_CORE_DIR:-$CODE_SERVER_PREFIX}
missing=()
command -v node >/dev/null 2>&1 || missing+=("node")
[ -z "$code_server" ] && missing+=("code-server (bash editor-clients/vscode/e2e/install.sh)")
[ -z "$chromium" ] && missing+=("chromium (apt-get install chromium)")
[ -f "$playwright/node_modules/playwright-core/package.json" ] || missing+=("playwright-core (bash editor-clients/vscode/e2e/install.sh)")
[ -z "$server" ] && missing+=("diffusion-lsp (bash scripts/setup.sh)")
if [ ${#missing[@]} -gt 0 ]; then
  printf 'skip: the real-VS-Code test needs %s\n' "$(printf '%s; ' "${missing[@]}" | sed 's/; $//')"
  exit 3
fi
cd "$ext"
# A fresh package of the working tree, unless the caller just made one (E2E_KEEP_VSIX=1).
if [ "${E2E_KEEP_VSIX:-0}" != 1 ] || [ ! -f diffusion-lsp.vsix ]; then
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund >&2 || exit 1
  fi
  rm -f diffusion-lsp.vsix
  npm run --silent package >/dev/null || { echo "FAIL packaging the .vsix"; exit 1; }
fi
shot=${1:-}
exec timeout 600 node "$here/code-server.js" --code-server "$code_server" --chromium "$chromium" \
  --playwright "$playwright" --vsix diffusion-lsp.vsix --server "$server" ${shot:+--screenshot "$shot"}
