#!/usr/bin/env bash
# Continue training the embedded model where the last session left it (resume, never restart):
# rebuilds runs/embedded from the committed training state when it is missing, then trains.
#   MINUTES=120 (default) THREADS=1 bash scripts/resume_training.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=runs/embedded
if [ ! -f "$RUN/state.pt" ]; then
  mkdir -p "$RUN/tokenizer"
  cp training-state/embedded/state.pt "$RUN/state.pt"
  cp engine/models/embedded/tokenizer.json engine/models/embedded/tokenizer_config.json "$RUN/tokenizer/"
  cp engine/models/embedded/train.log "$RUN/train.log"   # the log goes on; data.npz is rebuilt (same tokenizer)
fi
exec .venv/bin/python -m engine.training --out "$RUN" --minutes "${MINUTES:-120}" --threads "${THREADS:-1}" \
    --p-infill 0.7 --p-library 0.7 --max-holes 6 --warmup-steps 50
