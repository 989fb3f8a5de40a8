#!/usr/bin/env bash
# Build the second-generation corpus from the package list in one command, and everything after it:
#   1. fetch every package named in engine/training/sources/packages.toml (pip, npm, apt-get; resumable:
#      fetched packages are kept) and record the versions in sources/lock.tsv (LOCK=1: ask for those);
#   2. filter, deduplicate and split (engine/training/codecorpus.py) into $CORPUS_DIR/files;
#   3. train the tokenizer, measure 8k/16k/32k on held-out files (benchmarks/results/tokenizer-vocab.json);
#   4. count tokens per file: engine/training/gen2/corpus-manifest.jsonl.xz, data.json, DATA_CARD.md;
#   5. pack the corpus into xz parts for the GPU machine (runs/gen2-travel/part0, part1).
# CORPUS_DIR=runs/corpus (default; ignored by git). Needs apt-get, npm and network access to the registries.
#   bash scripts/build_corpus.sh            STEPS="fetch build tokenizer count pack" (default: all)
#   LOCK=1 STEPS="fetch build pack" bash scripts/build_corpus.sh
#       the committed corpus again on a new checkout, for the GPU run (tokenizer and manifest are committed; pack
#       keeps to the manifest's files): measured 2026-12-01 on 2 cores, fetch ~3 min, build 280 s, pack 323 s
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS_DIR=${CORPUS_DIR:-runs/corpus}
PY=${PYTHON:-.venv/bin/python}
STEPS=${STEPS:-fetch build tokenizer count pack}
[ -x "$PY" ] || bash scripts/setup.sh
mkdir -p "$CORPUS_DIR/logs"
LOGS=$CORPUS_DIR/logs
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-1} TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
has() { [[ " $STEPS " == *" $1 "* ]]; }
SECONDS=0

if has fetch; then
  # pip reads an sdist's metadata with its build backend: these, without build isolation (fast, offline)
  if [ ! -x "$CORPUS_DIR/fetchenv/bin/python" ]; then
    python3 -m venv "$CORPUS_DIR/fetchenv"
    "$CORPUS_DIR/fetchenv/bin/pip" install -q setuptools wheel hatchling hatch-vcs hatch-fancy-pypi-readme \
        flit-core poetry-core pdm-backend setuptools-scm
  fi
  [ "${SKIP_APT_UPDATE:-0}" = 1 ] || apt-get update -q >/dev/null
  LOCKARG=(); [ "${LOCK:-0}" = 1 ] && LOCKARG=(--lock)
  "$PY" -m engine.training.fetch --dest "$CORPUS_DIR/raw" --only venv "${LOCKARG[@]}" | tee "$LOGS/fetch-venv.log"
  FETCH_PYTHON="$CORPUS_DIR/fetchenv/bin/python" "$PY" -m engine.training.fetch --dest "$CORPUS_DIR/raw" \
      --only pypi "${LOCKARG[@]}" > "$LOGS/fetch-pypi.log" 2>&1 & pypi=$!
  "$PY" -m engine.training.fetch --dest "$CORPUS_DIR/raw" --only npm "${LOCKARG[@]}" > "$LOGS/fetch-npm.log" 2>&1 & npm=$!
  "$PY" -m engine.training.fetch --dest "$CORPUS_DIR/raw" --only debian > "$LOGS/fetch-debian.log" 2>&1 & deb=$!
  failed=""
  for job in pypi:$pypi npm:$npm debian:$deb; do wait "${job#*:}" || failed="$failed ${job%%:*}"; done
  if [ -n "$failed" ]; then   # fetched packages are kept: running it again resumes
    for f in $failed; do echo "== fetch $f failed; the end of $LOGS/fetch-$f.log:" >&2; tail -n 5 "$LOGS/fetch-$f.log" >&2; done
    exit 1
  fi
  [ "${LOCK:-0}" = 1 ] || "$PY" -m engine.training.fetch --dest "$CORPUS_DIR/raw" --write-lock
  echo "fetched in ${SECONDS}s: $(du -sh "$CORPUS_DIR/raw" | cut -f1)"
fi
if has build; then
  "$PY" -m engine.training.codecorpus --raw "$CORPUS_DIR/raw" --out "$CORPUS_DIR" > "$LOGS/build.log"
  tail -n 30 "$LOGS/build.log"
fi
if has tokenizer; then
  "$PY" -m engine.training.gen2data tokenizer --corpus "$CORPUS_DIR" | tee "$LOGS/tokenizer.log"
fi
if has count; then
  "$PY" -m engine.training.gen2data count --corpus "$CORPUS_DIR" | tee "$LOGS/count.log"
  "$PY" -m engine.training.card --data-card
fi
if has pack; then
  "$PY" -m engine.training.gen2data pack --corpus "$CORPUS_DIR" --dest runs/gen2-travel | tee "$LOGS/pack.log"
fi
echo "done in ${SECONDS}s"
