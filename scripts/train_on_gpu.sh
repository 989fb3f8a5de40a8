#!/usr/bin/env bash
# Train the shipped embedded model further on one GPU, in one prepared run, then bring the state home.
# The corpus is the standard library of the interpreter that builds the data, so the data is built
# here, on the machine whose stdlib the model is trained on, and carried to the GPU machine:
#   here:  .venv/bin/python -m engine.training --out runs/gpu --init-from engine/models/embedded \
#              --p-library 0.7 --data-only
#   there: MINUTES=5.5 SPLIT_TO=$OUT bash scripts/train_on_gpu.sh
#   here:  cat OUT/state.pt.part* > runs/gpu/state.pt; cp OUT/train.log runs/gpu/  (then resume or ship)
# Same model shape as the CPU runs (the shipped model must keep its CPU speed); a larger batch and a
# higher peak rate; --keep-best keeps the state that validates best, the starting one included.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
RUN=${RUN:-runs/gpu}
MINUTES=${MINUTES:-5.5}
[ -f "$RUN/data.npz" ] || { echo "$RUN/data.npz is missing: build it with --data-only (see the top of $0)" >&2; exit 2; }
if [ ! -f "$RUN/state.pt" ]; then   # the shipped model's log goes on (not the --data-only run's lone line)
  cp engine/models/embedded/train.log "$RUN/train.log"
fi
LIMIT=$(awk "BEGIN { print int($MINUTES * 60 + 120) }")   # SIGTERM ends a run cleanly, state saved
timeout -s TERM -k 60 "$LIMIT" "$PY" -m engine.training --out "$RUN" --minutes "$MINUTES" \
    --init-from engine/models/embedded --keep-best --device "${DEVICE:-cuda}" --loader-workers "${WORKERS:-10}" \
    --threads 4 --batch-size "${BATCH:-256}" --peak-lr "${LR:-2.5e-3}" --warmup-steps 500 --decay-fraction 0.5 \
    --checkpoint-minutes 0.5 --p-infill 0.7 --p-library 0.7 --max-holes 6 || echo "training exited with $?" >&2
if [ -n "${SPLIT_TO:-}" ]; then   # the device tool brings back files of at most 16 MiB
  split -b 15M -d "$RUN/state.pt" "$SPLIT_TO/state.pt.part"
  cp "$RUN/train.log" "$SPLIT_TO/train.log"
fi
