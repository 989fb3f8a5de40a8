#!/usr/bin/env bash
# Builds and tests every editor client:
#   VS Code  compile (tsc), lint (eslint), unit tests (node --test), package (.vsix with vsce),
#            smoke test of the bundle against the real server with a stub editor API, and the
#            .vsix in a real VS Code (code-server, headless Chromium, playwright-core: see
#            vscode/e2e/; skipped, saying what is missing, without them)
#   Neovim   headless tests against the real server (neovim/tests/run.sh)
#   Emacs    byte-compile diffusion-lsp.el; eglot and lsp-mode end to end when installed
#   Helix    languages.toml parses and wires the server
# Needs node >= 20 and npm; `npm ci` runs first when node_modules is missing or stale,
# everything after it is offline. Parts whose editor is not installed are skipped, saying so.
# Ends with "editor-clients: N passed, N failed" and exits non-zero on any failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# The server for the end-to-end checks: $DIFFUSION_LSP, the repository's .venv (this checkout's
# server, not another one a PATH link may point to), or PATH.
if [ -z "${DIFFUSION_LSP:-}" ]; then
  if [ -x "$here/../.venv/bin/diffusion-lsp" ]; then
    DIFFUSION_LSP=$(cd "$here/../.venv/bin" && pwd)/diffusion-lsp
  elif command -v diffusion-lsp >/dev/null 2>&1; then
    DIFFUSION_LSP=$(command -v diffusion-lsp)
  fi
fi
export DIFFUSION_LSP=${DIFFUSION_LSP:-}
passed=0
failed=0
note() { printf '\n== %s\n' "$*"; }
count() { # count NAME STATUS [PASSED FAILED]
  local name=$1 status=$2 p=${3:-} f=${4:-}
  if [ -z "$p" ]; then
    if [ "$status" -eq 0 ]; then p=1 f=0; else p=0 f=1; fi
  elif [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1
  fi
  passed=$((passed + p))
  failed=$((failed + f))
  echo "-- $name: $p passed, $f failed"
}

# --- VS Code -----------------------------------------------------------------------
note "VS Code extension"
cd "$here/vscode"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
npm run --silent compile
count "vscode compile" $?
npm run --silent lint
count "vscode lint" $?
log=$(mktemp)
node --test out/test/ 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
count "vscode unit tests" "$status" "$(sed -n 's/^# pass //p' "$log")" "$(sed -n 's/^# fail //p' "$log")"
rm -f "$log" diffusion-lsp.vsix
npm run --silent package >/dev/null
status=$?
if [ $status -eq 0 ]; then
  python3 - <<'PY'
import sys, zipfile
names = zipfile.ZipFile("diffusion-lsp.vsix").namelist()
missing = [n for n in ("extension/package.json", "extension/dist/extension.js") if n not in names]
print("vsix:", len(names), "files;", "missing " + ", ".join(missing) if missing else "manifest and bundle present")
sys.exit(1 if missing else 0)
PY
  status=$?
fi
count "vscode package (.vsix)" $status
if [ -n "$DIFFUSION_LSP" ]; then
  log=$(mktemp)
  timeout 900 node smoke/smoke.js 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1 | tr -d ',')
  rm -f "$log"
  read -r p _ f _ <<<"${summary:-0 x 0 x}"
  count "vscode extension smoke (stub editor, real server)" "$status" "$p" "$f"
else
  echo "skip: no diffusion-lsp found, VS Code smoke test not run"
fi

# --- VS Code, the real one ---------------------------------------------------------
note "VS Code extension in a real VS Code (code-server + headless Chromium)"
if [ "${SKIP_REAL_VSCODE:-0}" = 1 ]; then
  echo "skip: SKIP_REAL_VSCODE=1 (tests/test_editors.py runs it as its own test)"
else
  log=$(mktemp)
  E2E_KEEP_VSIX=1 bash "$here/vscode/e2e/run.sh" ${VSCODE_SCREENSHOT:+"$VSCODE_SCREENSHOT"} 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  if [ "$status" -ne 3 ]; then
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1 | tr -d ',')
    read -r p _ f _ <<<"${summary:-0 x 0 x}"
    count "vscode in code-server (real VS Code, real server)" "$status" "$p" "$f"
  fi
  rm -f "$log"
fi

# --- Neovim ------------------------------------------------------------------------
note "Neovim plugin"
if [ "${SKIP_NEOVIM:-0}" = 1 ]; then
  echo "skip: SKIP_NEOVIM=1 (tests/test_editors.py runs the Neovim tests as their own test)"
elif command -v "${NVIM:-nvim}" >/dev/null 2>&1; then
  log=$(mktemp)
  "$here/neovim/tests/run.sh" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  summary=$(grep -E '^neovim: [0-9]+ passed' "$log" | tail -n 1 | tr -d ',')
  rm -f "$log"
  read -r _ p _ f _ <<<"${summary:-x 0 x 0 x}"
  count "neovim" "$status" "$p" "$f"
else
  echo "skip: nvim is not installed (apt-get install neovim), Neovim tests not run"
fi

# --- Emacs -------------------------------------------------------------------------
note "Emacs"
if command -v emacs >/dev/null 2>&1; then
  cd "$here/emacs"
  out=$(emacs -Q --batch --eval '(setq byte-compile-error-on-warn t)' -f batch-byte-compile diffusion-lsp.el 2>&1)
  status=$?
  rm -f diffusion-lsp.elc
  echo "$out"
  count "emacs byte-compile" $status
  for client in eglot lsp-mode; do
    log=$(mktemp)
    timeout 600 emacs -Q --batch -l "test-$client.el" 2>&1 | grep -E '^(ok|FAIL|skip|[0-9]+ passed)' | tee "$log"
    status=${PIPESTATUS[0]}
    if grep -q '^skip:' "$log"; then
      echo "($client end-to-end skipped)"
    else
      summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1 | tr -d ',')
      read -r p _ f _ <<<"${summary:-0 x 0 x}"
      count "emacs $client end to end" "$status" "$p" "$f"
    fi
    rm -f "$log"
  done
else
  echo "skip: emacs is not installed, Emacs checks not run"
fi

# --- Helix -------------------------------------------------------------------------
note "Helix"
python3 - "$here/helix/languages.toml" <<'PY'
import sys, tomllib
config = tomllib.load(open(sys.argv[1], "rb"))
server = config["language-server"]["diffusion-lsp"]
assert server["command"] == "diffusion-lsp", server
wired = [lang["name"] for lang in config["language"]
         if any((s if isinstance(s, str) else s["name"]) == "diffusion-lsp" for s in lang["language-servers"])]
assert set(wired) >= {"python", "rust", "go", "javascript", "typescript", "c", "cpp", "java", "ruby", "perl", "lua"}, wired
print("languages.toml: diffusion-lsp wired for", ", ".join(wired))
PY
count "helix languages.toml" $?

echo
echo "editor-clients: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
