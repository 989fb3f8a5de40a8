#!/usr/bin/env bash
# Ship a training run as the embedded model and measure it: copy the checkpoint, write the model
# card and loss curve, run the quality, latency, order and sweep benchmarks, regenerate the README
# table, then rewrite the card with the fresh figures. Run with the CPU otherwise idle (~15 minutes).
#   RUN=runs/embedded (default)   QUICK=1 for small subsets (a check of this script, not figures)
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${RUN:-runs/embedded}
PY=${PYTHON:-.venv/bin/python}
D=../shared/data/human-eval-infilling
R=benchmarks/results
LIMIT=(); ORDER_LIMIT=300; SWEEP_LIMIT=100; LAT=()
if [ "${QUICK:-0}" = 1 ]; then
  LIMIT=(--limit 20); ORDER_LIMIT=10; SWEEP_LIMIT=5; LAT=(--n 5 --cold-runs 1); R=$(mktemp -d)
else
  "$PY" -m engine.training.card "$RUN"
fi
"$PY" -m benchmarks.infill --data $D/HumanEval-SingleLineInfilling.jsonl.gz "${LIMIT[@]}" \
    --samples $R/infill-single-line.samples.jsonl --out $R/infill-single-line.json
"$PY" -m benchmarks.infill --data $D/HumanEval-RandomSpanInfillingLight.jsonl.gz "${LIMIT[@]}" \
    --out $R/infill-random-span-light.json
"$PY" -m benchmarks.latency "${LAT[@]}" --out $R/latency.json
"$PY" -m benchmarks.threads --data $D/HumanEval-SingleLineInfilling.jsonl.gz --limit $SWEEP_LIMIT \
    --threads 1 2 --dtypes float32 bfloat16 --out $R/threads.json
"$PY" -m benchmarks.compare_order --data $D/HumanEval-SingleLineInfilling.jsonl.gz --limit $ORDER_LIMIT \
    --out $R/compare-order.json
"$PY" -m benchmarks.sweep --data $D/HumanEval-SingleLineInfilling.jsonl.gz --limit $SWEEP_LIMIT --out $R/sweep.json
if [ "${QUICK:-0}" != 1 ]; then
  "$PY" -m engine.training.card "$RUN"
  "$PY" -m benchmarks.table
fi
