#!/usr/bin/env bash
# Links this checkout's .venv/bin/diffusion-lsp into ~/.local/bin (DIFFUSION_LSP_BIN_DIR), the
# usual per-user PATH directory, so that editors find `diffusion-lsp` by name. Run by
# scripts/setup.sh. A link to another checkout is replaced only when its target is gone (or with
# DIFFUSION_LSP_LINK=force); DIFFUSION_LSP_LINK=0 skips this. Without the link the clients still
# find this checkout's .venv/bin/diffusion-lsp (see the README's Editors section).
set -u
cd "$(dirname "$0")/.."
[ "${DIFFUSION_LSP_LINK:-1}" = 0 ] && exit 0
bin_dir=${DIFFUSION_LSP_BIN_DIR:-$HOME/.local/bin}
target=$PWD/.venv/bin/diffusion-lsp
link=$bin_dir/diffusion-lsp
if [ ! -x "$target" ]; then
  echo "editors: $target is missing (scripts/setup.sh makes it); nothing linked"
  exit 0
fi
if mkdir -p "$bin_dir" 2>/dev/null; then
  if [ -L "$link" ] && [ "$(readlink "$link")" = "$target" ]; then
    echo "editors: $link -> $target"
  elif [ ! -e "$link" ] || { [ -L "$link" ] && [ "${DIFFUSION_LSP_LINK:-}" = force ]; }; then
    ln -sfn "$target" "$link" && echo "editors: linked $link -> $target"
  else
    echo "editors: $link exists (-> $(readlink "$link" || echo 'not a link')); left as it is (DIFFUSION_LSP_LINK=force replaces a link)"
  fi
  case ":$PATH:" in
    *":$bin_dir:"*) ;;
    *) echo "editors: $bin_dir is not on PATH; add it (export PATH=\"$bin_dir:\$PATH\") or let the clients find $target" ;;
  esac
fi
