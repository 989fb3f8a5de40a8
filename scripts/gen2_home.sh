#!/usr/bin/env bash
# Step 5 of the gen2 GPU session (engine/training/gen2/README.md), in one command after the device calls:
# join every size that came back into a run directory (runs/gen2-home/SIZE), keep the sizes that can ship and
# the logs under training-state/gen2, and commit them at once, before anything is measured.
#   bash scripts/gen2_home.sh FILES_AT_OF_CALL_2 [FILES_AT_OF_CALL_3 ...]
#   KEEP="small medium" (sizes committed), COMMIT=0 (join and copy only), HOMEDIR, STATE (where they go)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
KEEP=${KEEP:-small medium}
COMMIT=${COMMIT:-1}
HOMEDIR=${HOMEDIR:-runs/gen2-home}
STATE=${STATE:-training-state/gen2}
[ $# -ge 1 ] || { echo "usage: $0 FILES_AT_OF_CALL_2 [FILES_AT_OF_CALL_3 ...]" >&2; exit 2; }
joined=()
for folder in "$@"; do
  [ -d "$folder" ] || { echo "gen2_home: $folder is not a folder" >&2; exit 2; }
  for meta in "$folder"/*.meta.tar; do
    [ -e "$meta" ] || continue
    size=$(basename "$meta" .meta.tar)
    "$PY" -m engine.training.parts join "$folder" "$size" "$HOMEDIR/$size"   # checks the sha256; status 1 if not
    joined+=("$size")
  done
done
[ ${#joined[@]} -gt 0 ] || { echo "gen2_home: no SIZE.meta.tar in $*: nothing came back" >&2; exit 1; }
mkdir -p "$STATE"
for folder in "$@"; do
  if [ -f "$folder/logs.tar" ]; then cp "$folder/logs.tar" "$STATE/logs.tar"; fi
done
kept=()
for s in $KEEP; do
  if [ -d "$HOMEDIR/$s" ]; then rm -rf "${STATE:?}/$s"; cp -r "$HOMEDIR/$s" "$STATE/$s"; kept+=("$s"); fi
done
echo "gen2_home: joined ${joined[*]}; kept under $STATE: ${kept[*]:-none}$([ -f "$STATE/logs.tar" ] && echo ' and logs.tar')"
if [ "$COMMIT" = 1 ]; then
  git add "$STATE"
  git commit -q -m "gen2 GPU run came home: ${kept[*]:-no size} (float16 run directories) and every log, kept before measuring" -- "$STATE" \
    && git log --oneline -1
fi
