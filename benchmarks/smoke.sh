#!/usr/bin/env bash
# CI smoke run of every benchmark on a few tasks, end to end (engine, sandbox, a real diffusion-lsp,
# plots, table), so the harness cannot rot. Well under 2 minutes on 2 CPU cores.
# Writes only to a temporary directory: the results in benchmarks/results/ are left alone.
#   MODEL=embedded (default) or a checkpoint directory; KEEP=1 keeps the output directory.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL="${MODEL:-embedded}"
DATA=../shared/data/human-eval-infilling
SINGLE="$DATA/HumanEval-SingleLineInfilling.jsonl.gz"
OUT="$(mktemp -d -t bench-smoke-XXXXXX)"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$OUT"' EXIT
PY="${PYTHON:-python}"
start=$SECONDS

"$PY" -m benchmarks.infill --data "$SINGLE" --model "$MODEL" --limit 3 \
    --samples "$OUT/samples.jsonl" --out "$OUT/results/infill-smoke.json"
"$PY" -m benchmarks.infill --data "$DATA/HumanEval-MultiLineInfilling.jsonl.gz" --model "$MODEL" --limit 2 \
    --via-lsp --out "$OUT/results/infill-smoke-lsp.json"
"$PY" -m benchmarks.compare_order --data "$SINGLE" --model "$MODEL" --limit 2 --out "$OUT/results/compare-order.json"
"$PY" -m benchmarks.sweep --data "$SINGLE" --model "$MODEL" --limit 2 --steps-grid 2 8 --thresholds 0.5 1.0 \
    --out "$OUT/results/sweep.json"
"$PY" -m benchmarks.latency --model "$MODEL" --n 2 --cold-runs 1 --holes single-line multi-line \
    --out "$OUT/results/latency.json"
"$PY" -m benchmarks.threads --data "$SINGLE" --model "$MODEL" --limit 2 --threads 1 --dtypes float32 bfloat16 \
    --out "$OUT/results/threads.json"

test "$(wc -l < "$OUT/samples.jsonl")" -eq 3
for f in infill-smoke infill-smoke-lsp compare-order sweep latency threads; do test -s "$OUT/results/$f.json"; done
for f in compare-order sweep; do test -s "$OUT/results/$f.png"; done
"$PY" -m benchmarks.table --print --results "$OUT/results" --readme "$OUT/README.md" > "$OUT/table.md"
grep -q "### Quality" "$OUT/table.md"
echo "benchmark smoke run passed in $((SECONDS - start)) s (output: $OUT)"
