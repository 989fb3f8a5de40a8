#!/usr/bin/env bash
# Runs the Neovim plugin's tests in headless Neovim: test_unit.lua (no server) and
# test_server.lua (end to end against the real diffusion-lsp on its embedded model).
#
#   editor-clients/neovim/tests/run.sh            # all test files
#   editor-clients/neovim/tests/run.sh test_unit  # one file
#
# The server is $DIFFUSION_LSP, else the repository's .venv/bin/diffusion-lsp, else
# diffusion-lsp on PATH. Neovim is $NVIM or nvim. Exits non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
nvim_bin=${NVIM:-nvim}
if ! command -v "$nvim_bin" >/dev/null 2>&1; then
  echo "run.sh: $nvim_bin not found (apt-get install neovim)" >&2
  exit 1
fi
if [ -z "${DIFFUSION_LSP:-}" ]; then
  if [ -x ../../.venv/bin/diffusion-lsp ]; then
    DIFFUSION_LSP=$(cd ../../.venv/bin && pwd)/diffusion-lsp
  elif command -v diffusion-lsp >/dev/null 2>&1; then
    DIFFUSION_LSP=$(command -v diffusion-lsp)
  fi
fi
export DIFFUSION_LSP=${DIFFUSION_LSP:-}
"$nvim_bin" --version | head -n 1
echo "server: ${DIFFUSION_LSP:-not found}"

# Keep Neovim's state (LSP log, shada) out of the user's home.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export XDG_CONFIG_HOME=$scratch/config XDG_DATA_HOME=$scratch/data \
  XDG_STATE_HOME=$scratch/state XDG_CACHE_HOME=$scratch/cache

files=()
if [ $# -gt 0 ]; then
  for name in "$@"; do files+=("tests/${name%.lua}.lua"); done
else
  files=(tests/test_*.lua)
fi

passed=0
failed=0
skipped=0
for file in "${files[@]}"; do
  echo "== $file"
  output=$(timeout 1200 "$nvim_bin" --headless -u NONE -i NONE -n -c "luafile $file" 2>&1)
  status=$?
  echo "$output"
  summary=$(printf '%s\n' "$output" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
  if [ -n "$summary" ]; then
    read -r p _ f _ s _ <<<"$(echo "$summary" | tr -d ',')"
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + ${s:-0}))
  fi
  if [ $status -ne 0 ] && { [ -z "$summary" ] || [ "${f:-0}" -eq 0 ]; }; then
    echo "$file: Neovim exited with status $status"
    failed=$((failed + 1))
  fi
done
echo "neovim: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
