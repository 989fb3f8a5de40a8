#!/usr/bin/env bash
# Installs what the real-VS-Code test (e2e/code-server.js) needs, from the npm registry, into a
# cache folder outside the repository (reused by later runs):
#   code-server $CODE_SERVER_VERSION (VS Code's workbench served to a browser; this release's
#   engines match Node 20) and playwright-core (drives an installed Chromium; downloads no browser).
# Chromium itself comes from the system (Debian: apt-get install chromium). code-server builds a
# few native modules on install: it needs a C++ toolchain, python3, pkg-config and libkrb5-dev,
# libxkbfile-dev, libsecret-1-dev (Debian package names). VS Code's @vscode/ripgrep downloads its
# binary from GitHub on install; without GitHub access the system's ripgrep (apt-get install
# ripgrep) is put where that download is cached, so nothing is fetched. Prints the prefix on success.
#
#   bash editor-clients/vscode/e2e/install.sh     # CODE_SERVER_PREFIX=... to choose the folder
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"
done_mark=$CODE_SERVER_PREFIX/.installed
if [ -f "$done_mark" ] && [ -x "$CODE_SERVER_PREFIX/node_modules/.bin/code-server" ] && \
   [ -f "$CODE_SERVER_PREFIX/node_modules/playwright-core/package.json" ]; then
  echo "$CODE_SERVER_PREFIX"
  exit 0
fi
mkdir -p "$CODE_SERVER_PREFIX"
# Seed @vscode/ripgrep's download cache with the system's rg (its postinstall then unpacks it).
if command -v rg >/dev/null 2>&1; then
  case "$(uname -m)" in
    x86_64) rg_target=x86_64-unknown-linux-musl ;;
    aarch64) rg_target=aarch64-unknown-linux-musl ;;
    *) rg_target= ;;
  esac
  if [ -n "$rg_target" ]; then
    for rg_pkg in 1.15.11 1.15.10 1.15.9; do # the versions code-server 4.100.x pins
      cache=${TMPDIR:-/tmp}/vscode-ripgrep-cache-$rg_pkg
      mkdir -p "$cache"
      staged=$(mktemp -d)
      cp "$(command -v rg)" "$staged/rg"
      tar -czf "$cache/ripgrep-v13.0.0-10-$rg_target.tar.gz" -C "$staged" rg
      rm -rf "$staged"
    done
  fi
fi
# The packages first, without their install scripts; then code-server's postinstall (it installs
# and builds VS Code's own dependencies) run here, so that a failure leaves what was done in place
# for the next try instead of npm rolling it all back.
npm install --no-audit --no-fund --no-save --ignore-scripts --prefix "$CODE_SERVER_PREFIX" \
  "code-server@$CODE_SERVER_VERSION" "playwright-core@$PLAYWRIGHT_CORE_VERSION" >&2
# postinstall.sh reads the package manager and Node version from npm's user agent; as root it
# wants unsafe-perm (npm >= 9 no longer has the option, the script only checks the variable);
# node-pty's build runs `npx node-gyp`, which must not stop to ask.
export npm_config_user_agent="npm/$(npm --version) node/$(node --version) $(uname -s | tr '[:upper:]' '[:lower:]') x64"
export npm_config_unsafe_perm=true npm_config_yes=true
(cd "$CODE_SERVER_PREFIX/node_modules/code-server" && sh ./postinstall.sh) >&2
# code-server's own native dependency (argon2) downloads a prebuilt binary from GitHub on install;
# build it from source instead.
(cd "$CODE_SERVER_PREFIX" && npm_config_build_from_source=true npm rebuild argon2) >&2
"$CODE_SERVER_PREFIX/node_modules/.bin/code-server" --version >&2
touch "$done_mark"
echo "$CODE_SERVER_PREFIX"
