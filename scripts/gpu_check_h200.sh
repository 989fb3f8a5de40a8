#!/usr/bin/env bash
# Issue 20 on one H200 in one device command (at most 9.5 minutes, about 6 expected): the CUDA checks, the
# bf16 figures with the profile, then int8, fp8 and int4 weights (torchao, in memory). Everything lands in $OUT.
# Needs the wheels in .whl/ (transformers 5.24.0, torchao 0.18.0; benchmarks/gpu_check/README.md says how)
# and the device call's carry: [".whl"]. Each step has its own time limit, so a slow one cannot starve the rest;
# each JSON is rewritten after every section, so a step cut short still leaves what it measured.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the folder the results go to}
PY=${PYTHON:-python3}
QUANT=${QUANT:-"int8 fp8 int4"}
EXTRA=${EXTRA:-}                  # e.g. EXTRA=--tiny CHECKS="--device cpu": the same steps on a CPU, in seconds
CHECKS=${CHECKS:-}
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
if ls .whl/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "wheel install failed" >&2; exit 2; }
fi
"$PY" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__,
  torch.cuda.get_device_name() if torch.cuda.is_available() else "no CUDA")' 2>&1 | tee "$OUT/versions.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >>"$OUT/versions.txt" 2>&1
start=$SECONDS
step() {  # step NAME LIMIT_S ARGS...: one python run, its log in $OUT/NAME.log
  local name=$1 limit=$2; shift 2
  echo "== $name (limit ${limit}s, at $((SECONDS - start))s)"
  timeout -k 10 "$limit" "$PY" "$@" >"$OUT/$name.log" 2>&1
  echo "   exit $? after $((SECONDS - start))s"
}
# shellcheck disable=SC2086  # EXTRA and CHECKS are word lists
step checks 45 -m benchmarks.gpu_check.checks $CHECKS --out "$OUT/checks.json"
# shellcheck disable=SC2086
step bf16 240 -m benchmarks.gpu_check --profile --budget-s 170 $EXTRA --out "$OUT/gpu-check-h200.json"
for q in $QUANT; do
  step "$q" 90 -m benchmarks.gpu_check --quantization "$q" --sections canvases,same_canvas --budget-s 45 \
    --canvases 1x256,4x128 --repeats 2 $EXTRA --out "$OUT/gpu-check-h200-$q.json"
done
echo "total $((SECONDS - start))s"
