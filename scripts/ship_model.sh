#!/usr/bin/env bash
# Ship a training run as the embedded model and measure it: copy the checkpoint, write the model card
# and loss curve, fit the confidence calibration of the new weights on the development sets, run the
# quality and latency benchmarks, regenerate the README table, then rewrite the card with the fresh
# figures. Run with the CPU otherwise idle: about 45 minutes on 2 cores (two jobs at a time).
#   RUN=runs/embedded (default): a training run directory (train.log, checkpoint/), as `engine.training` writes
#     one and `engine.training.parts join` rebuilds one that came back from the GPU machine
#   QUANTIZATION=none (default) | int8: how the model is meant to run. int8 writes serving.json beside the weights
#     (the `quantization: auto` default follows it) and records every fill here with int8 weights, so the
#     calibration's bar is fitted on the fills the editor will get
#   TUNE_DECODING=1: first choose each language's line lengths and step budget on the development sets
#     (benchmarks.tune_decoding, about 20 minutes on 2 cores) and write what is adopted into serving.json, so the
#     calibration and every benchmark below run with it
#   QUICK=1 for small subsets (a check of this script, not figures): a RUN is shipped into a temporary
#     directory and measured there; without one, the embedded model is measured; nothing in the repository changes
#   STUDIES=1 also re-runs the threads, order and sweep studies (about 15 minutes more)
#   CONF=runs/conf holds the development sets' documents that are not committed (benchmarks/README.md,
#   "Per-language calibration"): extra-dev.jsonl is made here from the corpus at CORPUS_DIR (default runs/corpus)
#   when missing (benchmarks.code_lines --extra-dev), stdlib-compact.jsonl from the standard library
#   CORPUS_DIR is also every corpus hole's workspace (the other files of its package, --workspace-corpus), as the
#   committed development sets and code-lines results were recorded: the calibration is fitted on the fills the
#   editor gets in a workspace. It is required except with QUICK=1 (used there when present)
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${RUN:-runs/embedded}
PY=${PYTHON:-.venv/bin/python}
D=../shared/data/human-eval-infilling
R=benchmarks/results
CONF=${CONF:-runs/conf}
QUANTIZATION=${QUANTIZATION:-none}
LIMIT=(); ORDER_LIMIT=300; SWEEP_LIMIT=100; LAT=(); CODE_LIMIT=500; STDLIB_LIMIT=600; STDLIB_DEV=1200
MODEL_OUT=engine/models/embedded; MODEL=embedded
CORPUS_DIR=${CORPUS_DIR:-runs/corpus}
WS=(--workspace-corpus "$CORPUS_DIR")
if [ ! -d "$CORPUS_DIR/files/train" ]; then
  if [ "${QUICK:-0}" != 1 ]; then
    echo "ship_model: no code corpus at $CORPUS_DIR: the corpus holes' workspaces come from it" \
         "(LOCK=1 STEPS=\"fetch build\" bash scripts/build_corpus.sh, or CORPUS_DIR=...)" >&2; exit 2
  fi
  WS=()
fi
case "$QUANTIZATION" in none|int8) ;; *)
  echo "ship_model: QUANTIZATION must be none or int8 (not $QUANTIZATION)" >&2; exit 2 ;; esac
for f in HumanEval-SingleLineInfilling HumanEval-RandomSpanInfillingLight; do   # needed 30 minutes in: said now
  [ -f "$D/$f.jsonl.gz" ] || { echo "ship_model: $D/$f.jsonl.gz is missing (../shared/data holds HumanEval)" >&2; exit 2; }
done
IS_RUN=0
if [ -f "$RUN/train.log" ] && [ -f "$RUN/checkpoint/model.safetensors" ]; then IS_RUN=1; fi
if [ "${QUICK:-0}" != 1 ] && [ "$IS_RUN" = 0 ]; then
  echo "ship_model: $RUN is not a training run (it needs train.log and checkpoint/model.safetensors)" >&2; exit 2
fi
if [ "${QUICK:-0}" = 1 ]; then
  LIMIT=(--limit 20); ORDER_LIMIT=10; SWEEP_LIMIT=5; LAT=(--n 5 --cold-runs 1); CODE_LIMIT=20; STDLIB_LIMIT=20; STDLIB_DEV=20
  R=$(mktemp -d); MODEL_OUT=$R
  if [ "$IS_RUN" = 1 ]; then MODEL_OUT=$R/model; MODEL=$MODEL_OUT; fi
  for f in stdlib-compact stdlib-lines; do   # the first holes of sets built before, when there are any
    if [ -f "$CONF/$f.jsonl" ]; then head -n 20 "$CONF/$f.jsonl" > "$R/$f.jsonl"; fi
  done
  CONF=$R
fi
if [ "$IS_RUN" = 1 ]; then
  "$PY" -m engine.training.card "$RUN" "$MODEL_OUT"   # the weights, tokenizer, log and card into place
fi
mkdir -p "$MODEL_OUT"
if [ "$QUANTIZATION" = none ]; then rm -f "$MODEL_OUT/serving.json"
else printf '{"quantization": "%s"}\n' "$QUANTIZATION" > "$MODEL_OUT/serving.json"; fi
M=(--model "$MODEL" --quantization "$QUANTIZATION")   # every fill below as the editor will get it
mkdir -p "$CONF"
if [ ! -f "$CONF/extra-dev.jsonl" ] && [ "${QUICK:-0}" != 1 ]; then   # the calibration's extra holes, from the corpus
  [ -d "$CORPUS_DIR/files/valid" ] || {
    echo "ship_model: $CONF/extra-dev.jsonl is missing and there is no corpus at $CORPUS_DIR to build it from" \
         "(LOCK=1 STEPS=\"fetch build\" bash scripts/build_corpus.sh)" >&2; exit 2; }
  "$PY" -m benchmarks.code_lines --corpus "$CORPUS_DIR" --extra-dev --out "$CONF/extra-dev.jsonl"
fi
[ -f "$CONF/stdlib-compact.jsonl" ] || "$PY" -m benchmarks.stdlib_lines --compact --limit "$STDLIB_DEV" --out "$CONF/stdlib-compact.jsonl"
[ -f "$CONF/stdlib-lines.jsonl" ] || "$PY" -m benchmarks.stdlib_lines "${LIMIT[@]}" --out "$CONF/stdlib-lines.jsonl"
both() {  # wait for the two jobs started before; fail if either failed
  local a=0 b=0
  wait "$1" || a=$?
  wait "$2" || b=$?
  [ "$a" = 0 ] && [ "$b" = 0 ] || { echo "ship_model: a benchmark failed ($a, $b)" >&2; exit 1; }
}

# 0. Decoding per language (optional): chosen on extra-dev, confirmed on code-lines (other held-out files).
if [ "${TUNE_DECODING:-0}" = 1 ]; then
  TUNE_EXTRA=$CONF/extra-dev.jsonl
  [ "${QUICK:-0}" = 1 ] && TUNE_EXTRA=benchmarks/data/code-lines.jsonl.gz
  "$PY" -m benchmarks.tune_decoding "${M[@]}" --tune "$TUNE_EXTRA" --confirm benchmarks/data/code-lines.jsonl.gz \
      --per-language "$([ "${QUICK:-0}" = 1 ] && echo 3 || echo 150)" --write "$MODEL_OUT" --out "$R/tune-decoding.json"
fi

# 1. The calibration: every valid fill the new weights consider per development hole (HumanEval reported only;
#    code-lines, a reported set, is not recorded for it).
considered() {  # NAME DATA ARGS...: a fresh considered set, compressed into the results
  local name=$1 data=$2; shift 2
  rm -f "$CONF/$name.considered.jsonl"
  "$PY" -m benchmarks.confidence_set --data "$data" "${LIMIT[@]}" --min-confidence 0 "${M[@]}" "$@" \
      --out "$CONF/$name.considered.jsonl"
  gzip -9 -n -c "$CONF/$name.considered.jsonl" > "$R/confidence-$name.considered.jsonl.gz"
}
EXTRA=$CONF/extra-dev.jsonl
[ "${QUICK:-0}" = 1 ] && EXTRA=benchmarks/data/code-lines.jsonl.gz
{ considered extra-dev "$EXTRA" "${WS[@]}"
  considered extra-dev-typed "$EXTRA" --typed "${WS[@]}"; } & one=$!
{ considered dev "$CONF/stdlib-compact.jsonl"
  considered humaneval $D/HumanEval-SingleLineInfilling.jsonl.gz --tests; } & two=$!
both $one $two
# code-lines is reported (benchmarks.infill), so the calibration never sees it
"$PY" -m benchmarks.calibrate_languages \
    --dev "$R/confidence-extra-dev.considered.jsonl.gz=$EXTRA" \
    --dev "$R/confidence-extra-dev-typed.considered.jsonl.gz=typed:$EXTRA" \
    --dev "$R/confidence-dev.considered.jsonl.gz=$CONF/stdlib-compact.jsonl" \
    --humaneval "$R/confidence-humaneval.considered.jsonl.gz=$D/HumanEval-SingleLineInfilling.jsonl.gz" \
    --quantization "$QUANTIZATION" --model-out "$MODEL_OUT/confidence.json" --out "$R/confidence-languages.json"
# the correction for languages without a grammar (C, Java, Ruby, Perl, Lua from installed Debian packages), fitted
# on the new calibration's estimates: whole lines and typed ones, each filled alone and with their package's other
# files as the workspace
[ -f "$CONF/other-dev.jsonl" ] || "$PY" -m benchmarks.other_lines --out "$CONF/other-dev.jsonl"
if [ -s "$CONF/other-dev.jsonl" ]; then
  { considered other-dev "$CONF/other-dev.jsonl"
    considered other-dev-typed "$CONF/other-dev.jsonl" --typed; } & one=$!
  { considered other-dev-ws "$CONF/other-dev.jsonl" --workspace-packages
    considered other-dev-typed-ws "$CONF/other-dev.jsonl" --typed --workspace-packages; } & two=$!
  both $one $two
  "$PY" -m benchmarks.calibrate_plain --considered "$R/confidence-other-dev.considered.jsonl.gz" \
      --considered "$R/confidence-other-dev-ws.considered.jsonl.gz" \
      --considered "$R/confidence-other-dev-typed.considered.jsonl.gz" \
      --considered "$R/confidence-other-dev-typed-ws.considered.jsonl.gz" --model "$MODEL_OUT" \
      --model-out "$MODEL_OUT/confidence.json" --out "$R/confidence-plain.json"
else
  echo "ship_model: no plain-text development holes (none of benchmarks.other_lines' packages is installed):" \
       "the calibration has no plain-text correction" >&2
fi

# 2. Quality and latency with the new calibration (two at a time).
{ "$PY" -m benchmarks.infill --data $D/HumanEval-SingleLineInfilling.jsonl.gz "${LIMIT[@]}" "${M[@]}" \
      --samples $R/infill-single-line.samples.jsonl --out $R/infill-single-line.json
  "$PY" -m benchmarks.infill --data $D/HumanEval-SingleLineInfilling.jsonl.gz --typed "${LIMIT[@]}" "${M[@]}" \
      --out $R/infill-single-line-typed.json
  "$PY" -m benchmarks.infill --data $D/HumanEval-SingleLineInfilling.jsonl.gz --typed --auto-close "${LIMIT[@]}" \
      "${M[@]}" --out $R/infill-single-line-typed-closed.json
  "$PY" -m benchmarks.infill --data $D/HumanEval-RandomSpanInfillingLight.jsonl.gz "${LIMIT[@]}" "${M[@]}" \
      --out $R/infill-random-span-light.json
  "$PY" -m benchmarks.latency "${LAT[@]}" "${M[@]}" --out $R/latency.json; } & one=$!
{ "$PY" -m benchmarks.infill --data benchmarks/data/code-lines.jsonl.gz --limit $CODE_LIMIT --no-tests "${M[@]}" \
      "${WS[@]}" --out $R/infill-code-lines.json
  "$PY" -m benchmarks.infill --data benchmarks/data/code-lines.jsonl.gz --typed --limit $CODE_LIMIT --no-tests \
      "${M[@]}" "${WS[@]}" --out $R/infill-code-lines-typed.json
  "$PY" -m benchmarks.infill --data benchmarks/data/code-lines.jsonl.gz --typed --auto-close --limit $CODE_LIMIT \
      --no-tests "${M[@]}" "${WS[@]}" --out $R/infill-code-lines-typed-closed.json
  "$PY" -m benchmarks.infill --data "$CONF/stdlib-lines.jsonl" --limit $STDLIB_LIMIT "${M[@]}" \
      --out $R/infill-stdlib-lines.json; } & two=$!
both $one $two
if [ "${STUDIES:-0}" = 1 ] || [ "${QUICK:-0}" = 1 ]; then
  "$PY" -m benchmarks.threads --model "$MODEL" --data $D/HumanEval-SingleLineInfilling.jsonl.gz --limit $SWEEP_LIMIT \
      --threads 1 2 --dtypes float32 bfloat16 --out $R/threads.json
  "$PY" -m benchmarks.compare_order --model "$MODEL" --data $D/HumanEval-SingleLineInfilling.jsonl.gz --limit $ORDER_LIMIT \
      --out $R/compare-order.json
  "$PY" -m benchmarks.sweep --model "$MODEL" --data $D/HumanEval-SingleLineInfilling.jsonl.gz --limit $SWEEP_LIMIT --out $R/sweep.json
fi
if [ "${QUICK:-0}" != 1 ]; then
  "$PY" -m engine.training.card "$RUN" "$MODEL_OUT"
  "$PY" -m benchmarks.table
fi
echo "ship_model: $RUN shipped to $MODEL_OUT (quantization $QUANTIZATION), results in $R"
