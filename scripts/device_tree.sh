#!/usr/bin/env bash
# Keep the working tree that travels to the GPU machine under its 64 MiB (tracked files, untracked files
# git does not ignore, and the carried paths): the embedded model's weights (and its optimizer state, where
# the checkout still has one) are not needed there, so they step aside for the device calls.
#   bash scripts/device_tree.sh aside [CARRIED...]   before the first call: moves them out, prints the sizes
#   bash scripts/device_tree.sh back                 after the last call
set -euo pipefail
cd "$(dirname "$0")/.."
ASIDE=${ASIDE:-/tmp/diffusion-lsp-aside}
BIG=(engine/models/embedded/model.safetensors training-state/embedded/state.pt)
case "${1:-}" in
  aside)
    shift
    mkdir -p "$ASIDE"
    for f in "${BIG[@]}"; do
      if [ -f "$f" ]; then mkdir -p "$ASIDE/$(dirname "$f")" && mv "$f" "$ASIDE/$f"; fi
    done
    tree=$( { git ls-files -z; git ls-files -z --others --exclude-standard; } | { xargs -0 du -cb 2>/dev/null || true; } | awk '/\ttotal$/ {s += $1} END {print s + 0}')
    carried=0
    for c in "$@"; do carried=$((carried + $(du -sb "$c" | cut -f1))); done
    mib() { awk "BEGIN { printf \"%.1f\", $1 / 1048576 }"; }
    echo "tree $(mib "$tree") MiB + carried $(mib "$carried") MiB = $(mib $((tree + carried))) MiB (limit 64)"
    [ $((tree + carried)) -lt $((64 * 1048576)) ] || { echo "over the limit" >&2; exit 1; } ;;
  back)
    for f in "${BIG[@]}"; do
      if [ -f "$ASIDE/$f" ]; then mv "$ASIDE/$f" "$f"; fi
    done
    git status --short -- "${BIG[@]}" ;;
  *) echo "usage: $0 aside [CARRIED...] | back" >&2; exit 2 ;;
esac
