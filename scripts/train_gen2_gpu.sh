#!/usr/bin/env bash
# The second-generation embedded model: three sizes trained at once on one GPU, on the code corpus
# (engine/training/codecorpus.py) with the retrained tokenizer (engine/training/gen2/tokenizer), in one
# prepared, resumable run. The corpus travels compressed in parts of <= 38 MiB (the device tool carries at most
# 64 MiB a call), the weights come back as float16 pieces of at most 15 MiB (8 files a call).
#
# Here, once:  bash scripts/build_corpus.sh     (corpus, tokenizer, runs/gen2-travel/part0, part1, ...)
# There, three calls back to back (a machine stays warm 30 s after a call; what a call leaves under
# $GEN2 outside the repository stays while it is warm):
#   1. carry runs/gen2-travel/part0:  bash scripts/train_gen2_gpu.sh stage runs/gen2-travel/part0
#   2. carry runs/gen2-travel/part1:  BUDGET_S=570 bash scripts/train_gen2_gpu.sh stage runs/gen2-travel/part1 train
#      (trains small, medium and large side by side; brings back small and medium and every log)
#   3. no carry:                      bash scripts/train_gen2_gpu.sh collect large
# Here, after the calls: bash scripts/gen2_home.sh <files_at of call 2> <files_at of call 3> (join, keep, commit)
#
# A call cut short (timeout) leaves each size's state.pt under $GEN2/runs: `train` again resumes them
# while the machine is warm. A later session goes on from the weights that came home
# (--init-from runs/gen2-home/SIZE/checkpoint, fresh optimizer). On the CPU, as a check of this script:
#   DEVICE=cpu SIZES="tiny" MINUTES=0.3 GEN2=/tmp/gen2 OUT=/tmp/gen2-out \
#     bash scripts/train_gen2_gpu.sh stage runs/gen2-travel/part0 stage runs/gen2-travel/part1 train
# BRING="SIZES" names the sizes `train` brings back (default: all but large; BRING="" none).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
GEN2=${GEN2:-/tmp/gen2}                 # outside the repository: kept between calls on a warm machine
OUT=${OUT:?OUT must be set (the device tool sets it)}
DEVICE=${DEVICE:-cuda}
MINUTES=${MINUTES:-6}
# BUDGET_S: the whole call's seconds (its timeout less a margin); training then gets what staging and tokenizing
# left, less RESERVE_S for the runs' last validation and export and for bringing the weights back (MINUTES unused)
BUDGET_S=${BUDGET_S:-}
RESERVE_S=${RESERVE_S:-150}
SIZES=${SIZES:-small medium large}
TOKENIZER=${TOKENIZER:-engine/training/gen2/tokenizer}
# name: hidden layers intermediate heads batch peak-lr (parameter counts in benchmarks/results/tokenizer-vocab.json)
declare -A SHAPE=(
  [tiny]="64 2 128 2 8 2e-3"
  [small]="192 6 384 3 256 3e-3"
  [medium]="384 6 768 6 256 2e-3"
  [large]="512 9 1024 8 256 1.5e-3"
)
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=true
mkdir -p "$GEN2/data" "$GEN2/runs" "$OUT"

stage() {   # copy one carried part of the corpus next to the others
  cp -r "$1"/. "$GEN2/data/"
  echo "staged $1: $(ls "$GEN2/data" | wc -l) files, $(du -sh "$GEN2/data" | cut -f1)"
}

prepare() {   # one tokenization of the corpus, shared by every size
  if [ ! -f "$GEN2/prepared/data.npz" ]; then
    "$PY" -m engine.training --out "$GEN2/prepared" --corpus "$GEN2/data" --tokenizer "$TOKENIZER" --data-only
  fi
  for s in $SIZES; do
    mkdir -p "$GEN2/runs/$s"
    [ -f "$GEN2/runs/$s/data.npz" ] || ln -f "$GEN2/prepared/data.npz" "$GEN2/runs/$s/data.npz"
    [ -d "$GEN2/runs/$s/tokenizer" ] || cp -r "$GEN2/prepared/tokenizer" "$GEN2/runs/$s/tokenizer"
    # the data record (what was read, per language) begins each size's log, as a run that tokenized it would
    [ -f "$GEN2/runs/$s/train.log" ] || cp "$GEN2/prepared/train.log" "$GEN2/runs/$s/train.log"
  done
}

train() {
  prepare
  if [ -n "$BUDGET_S" ]; then
    MINUTES=$(awk "BEGIN { m = ($BUDGET_S - $SECONDS - $RESERVE_S) / 60; f = ${MIN_MINUTES:-0.5};
                           printf \"%.2f\", (m < f ? f : m) }")
    echo "training for $MINUTES minutes: budget ${BUDGET_S} s, ${SECONDS} s used by staging and tokenizing," \
         "${RESERVE_S} s kept for the end"
  fi
  local n workers limit
  n=$(echo $SIZES | wc -w)
  workers=$(( ($(nproc) - n) / n )); [ "$workers" -ge 1 ] || workers=0
  limit=$(awk "BEGIN { print int($MINUTES * 60 + 90) }")   # SIGTERM ends a run cleanly, state saved
  for s in $SIZES; do
    read -r h l i a b lr <<<"${SHAPE[$s]}"
    timeout -s TERM -k 60 "$limit" "$PY" -m engine.training --out "$GEN2/runs/$s" --corpus "$GEN2/data" \
      --tokenizer "$TOKENIZER" --hidden-size "$h" --layers "$l" --intermediate-size "$i" --heads "$a" \
      --batch-size "$b" --peak-lr "$lr" --minutes "$MINUTES" --device "$DEVICE" --loader-workers "$workers" \
      --threads 1 --warmup-steps 300 --decay-fraction 0.3 --checkpoint-minutes 1 --p-infill 0.7 --max-holes 6 \
      > "$GEN2/runs/$s.out" 2>&1 &
  done
  wait || true
  for s in $SIZES; do tail -n 3 "$GEN2/runs/$s.out"; done
  tar -cf "$OUT/logs.tar" -C "$GEN2/runs" $(cd "$GEN2/runs" && ls -d */train.log *.out 2>/dev/null)
  local back=${BRING-$(echo $SIZES | tr ' ' '\n' | grep -v '^large$' || true)}
  for s in $back; do collect "$s"; done
}

collect() {   # one size's weights (float16 pieces) and its tokenizer, config and log to $OUT
  "$PY" -m engine.training.parts split "$GEN2/runs/$1/checkpoint" "$OUT" "$1" "$GEN2/runs/$1/train.log"
}

while [ $# -gt 0 ]; do
  case "$1" in
    stage) stage "$2"; shift 2 ;;
    train) train; shift ;;
    collect) collect "$2"; shift 2 ;;
    *) echo "unknown step $1 (stage DIR | train | collect SIZE)" >&2; exit 2 ;;
  esac
done
ls -la "$OUT"
