#!/usr/bin/env bash
# Creates .venv and installs diffusion-lsp with its test, benchmark and team-server (Ray Serve) extras, CPU-first:
# - torch already importable (a GPU user installed their own): kept as it is;
# - otherwise, with an NVIDIA GPU visible: the default torch from the package index;
# - otherwise: torch $TORCH_CPU_VERSION (2.13.0), the CPU wheel on these machines. Elsewhere set
#   PIP_EXTRA_INDEX_URL / TORCH_INDEX_URL to a CPU wheel index so pip does not fetch a CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_CPU_VERSION=${TORCH_CPU_VERSION:-2.13.0}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install -q --upgrade pip >/dev/null
if ! python -c "import torch" >/dev/null 2>&1; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    python -m pip install -q torch
  elif [ -n "${TORCH_INDEX_URL:-}" ]; then
    python -m pip install -q "torch==$TORCH_CPU_VERSION" --index-url "$TORCH_INDEX_URL"
  else
    python -m pip install -q "torch==$TORCH_CPU_VERSION"
  fi
fi
python -m pip install -q -e ".[test,bench,team]"  # team: Ray Serve, for `diffusion-lsp serve` and its tests
python -c "import torch, engine, lsp_server; print('diffusion-lsp ready: torch', torch.__version__)"

# Editors start `diffusion-lsp` by name: link it into ~/.local/bin (see scripts/link-editors.sh).
bash scripts/link-editors.sh
