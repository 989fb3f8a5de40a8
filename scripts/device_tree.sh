#!/usr/bin/env bash
# Keep the working tree that travels to the GPU machine under its 64 MiB (tracked files, untracked files
# git does not ignore, and the carried paths): the embedded model's weights (and its optimizer state, where
# the checkout still has one), the benchmarks' results and their data files are not needed there (the GPU
# runs write to $OUT; the figures are made here), so they step aside for the device calls.
#   bash scripts/device_tree.sh aside [CARRIED...]   before the first call: moves them out, prints the sizes
#   bash scripts/device_tree.sh back                 after the last call
set -euo pipefail
cd "$(dirname "$0")/.."
ASIDE=${ASIDE:-/tmp/diffusion-lsp-aside}
BIG=(engine/models/embedded/model.safetensors training-state/embedded/state.pt benchmarks/results benchmarks/data)
case "${1:-}" in
  aside)
    shift
    for f in "${BIG[@]}"; do   # nothing is moved over what an earlier aside left there
      if [ -e "$f" ] && [ -e "$ASIDE/$f" ]; then
        echo "$ASIDE/$f is there from an earlier aside: run '$0 back' first" >&2; exit 1
      fi
    done
    mkdir -p "$ASIDE"
    for f in "${BIG[@]}"; do
      if [ -e "$f" ]; then mkdir -p "$ASIDE/$(dirname "$f")" && mv "$f" "$ASIDE/$f"; fi
    done
    tree=$( { git ls-files -z; git ls-files -z --others --exclude-standard; } | { xargs -0 du -cb 2>/dev/null || true; } | awk '/\ttotal$/ {s += $1} END {print s + 0}')
    carried=0
    for c in "$@"; do carried=$((carried + $(du -sb "$c" | cut -f1))); done
    mib() { awk "BEGIN { printf \"%.1f\", $1 / 1048576 }"; }
    echo "tree $(mib "$tree") MiB + carried $(mib "$carried") MiB = $(mib $((tree + carried))) MiB (limit 64)"
    [ $((tree + carried)) -lt $((64 * 1048576)) ] || { echo "over the limit" >&2; exit 1; } ;;
  back)
    for f in "${BIG[@]}"; do
      if [ -e "$ASIDE/$f" ]; then
        if [ -e "$f" ]; then echo "$f is in the tree and aside ($ASIDE/$f): left both" >&2; exit 1; fi
        mv "$ASIDE/$f" "$f"
      fi
    done
    git status --short -- "${BIG[@]}" ;;
  *) echo "usage: $0 aside [CARRIED...] | back" >&2; exit 2 ;;
esac
