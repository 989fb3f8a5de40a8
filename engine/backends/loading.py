"""Device, dtype and thread settings shared by the backends' loaders; offline flags set before transformers loads,
and the libraries kept off stderr (no progress bars; their warnings go through the log)."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from pathlib import Path

    from ..config import LoadConfig

log = logging.getLogger(__name__)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # read when transformers is first imported

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def quiet_libraries() -> None:
    """No progress bars ("Loading weights" on stderr reads as an error in an editor's LSP log), and
    transformers' own warnings handed to Python logging (the server's log) instead of its stderr handler.
    For a transformers imported before this module set the environment."""
    import transformers.utils.logging as hf_logging
    from huggingface_hub.utils import disable_progress_bars

    disable_progress_bars()
    hf_logging.disable_progress_bar()
    hf_logging.disable_default_handler()
    hf_logging.enable_propagation()


def apply_threads(threads: int) -> None:
    """torch's intra-op threads on CPU, set before a model loads."""
    torch.set_num_threads(max(1, threads))


def _mps_available() -> bool:
    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def available_devices() -> list[str]:
    """The devices this torch can load a model on, as the ``device`` setting names them."""
    cuda = [f"cuda:{i}" for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
    return ["cpu", *(["cuda", *cuda] if cuda else []), *(["mps"] if _mps_available() else [])]


def resolve_device(name: str) -> torch.device:
    """``auto``: CUDA, else MPS, else the CPU. A device this torch cannot use (not compiled in, no GPU seen, an
    index past the last GPU) is a ``ModelLoadError`` naming it and the devices there are, before any weights load."""
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if _mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    from ..requests import ModelLoadError

    try:
        device = torch.device(name)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise ModelLoadError(f"unknown device {name!r} (available here: {', '.join(available_devices())})") from exc
    usable = {"cpu": True, "mps": _mps_available(),
              "cuda": torch.cuda.is_available() and (device.index or 0) < torch.cuda.device_count()}
    if not usable.get(device.type, False):
        built = torch.version.cuda is not None or getattr(torch.version, "hip", None) is not None   # ROCm: "cuda" too
        why = ("this torch is built without CUDA" if device.type == "cuda" and not built
               else "no such GPU" if device.type == "cuda" and torch.cuda.is_available()
               else "torch sees no GPU" if device.type == "cuda" else f"torch cannot use {device.type} here")
        raise ModelLoadError(f"device {name!r} is not available ({why}); available here: "
                             f"{', '.join(available_devices())}")
    return device


def native_cpu_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX): then bf16 matmuls are about
    twice as fast as fp32 (training autocasts to it; ``dtype: bfloat16`` opts the server in); elsewhere
    they are emulated and slower."""
    try:
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


MASKED_QUANTIZATIONS = ("none", "int8")


def check_masked_quantization(quantization: str, device: torch.device, dtype: torch.dtype) -> str | None:
    """Why a masked model (the embedded one, any ModernBERT/BERT checkpoint) cannot be loaded with this
    ``quantization``, or None when it can: only ``int8``, on the CPU, from float32 weights."""
    from ..config import QUANTIZATIONS

    if quantization not in QUANTIZATIONS:
        return f"unknown quantization {quantization!r} ({', '.join(QUANTIZATIONS)})"
    if quantization not in MASKED_QUANTIZATIONS:
        return (f"quantization {quantization!r} is for DiffusionGemma (torchao); a masked model such as the embedded "
                f"one takes {' or '.join(MASKED_QUANTIZATIONS)}")
    if quantization == "int8" and device.type != "cpu":
        return f"quantization 'int8' of a masked model runs on the CPU (torch's dynamic int8 matmuls), not on {device}"
    if quantization == "int8" and dtype != torch.float32:
        return f"quantization 'int8' quantizes float32 weights: leave dtype at auto or float32 (not {dtype})"
    return None


def stated_quantization(path: Path) -> str:
    """The quantization a model directory says it is meant to run with: ``serving.json``'s ``quantization``
    (``scripts/ship_model.sh`` writes it, with the confidence calibration fitted on fills of that quantization),
    ``none`` for a directory without the file. A file that does not parse or names an unknown value is a
    ``ModelLoadError``: the model directory is broken, and loading it some other way would hide that."""
    from ..config import QUANTIZATIONS, SERVING_FILE
    from ..decoding import read_serving
    from ..requests import ModelLoadError

    stated = read_serving(path).get("quantization", "none")
    if stated not in QUANTIZATIONS or stated == "auto":
        raise ModelLoadError(f"{path / SERVING_FILE} states quantization {stated!r}; it must be one of "
                             f"{', '.join(q for q in QUANTIZATIONS if q != 'auto')}")
    return str(stated)


def resolve_quantization(config: LoadConfig, masked: bool) -> str:
    """The quantization a load runs with. A value the user set is itself (a value that cannot run here fails the
    load with its reason). ``auto``: what the model directory states (``stated_quantization``); for a masked model
    only where it can run (int8: on the CPU, from float32 weights), else ``none``, and the log says why: a model
    shipped for int8 still loads on a GPU or in bfloat16."""
    if config.quantization != "auto":
        return config.quantization
    stated = stated_quantization(config.model_dir())
    if masked and stated != "none":
        device = resolve_device(config.device)
        reason = check_masked_quantization(stated, device, resolve_dtype(config.dtype, device))
        if reason:
            log.info("%s is meant to run with quantization %s; loading it without: %s", config.model_dir(), stated,
                     reason)
            return "none"
    return stated


def quantization_of(config: LoadConfig) -> str:
    """The quantization ``config`` loads its model with, without loading it (``auto`` resolved as the backend's
    load resolves it); a remote engine's weights are the server's: its setting as given."""
    if config.engine:
        return config.quantization
    from . import is_masked

    return resolve_quantization(config, masked=is_masked(config))


def int8_layers(model) -> set[str]:
    """The Linear layers ``int8`` runs in int8: those of the layer stack (the model's longest ModuleList) that do
    not narrow their input (in <= out features: the attention projections and the MLP's input projection), and
    the output projection onto the vocabulary (the decoder).
    Measured on the embedded model (top-1 agreement and KL with float32 at masked slots of development code): int8
    everywhere agrees on 85% of slots (KL 0.073). The MLP's output projection causes most of it: its inputs, the
    gated activations, have a range one int8 scale per call does not fit (agreement 88%, KL 0.038 even after
    smoothing its channels); the prediction head's dense layer most of the rest. This choice agrees on 92% (KL
    0.016) and keeps most of the speed: the decoder is the largest matmul of a hole-only forward with a 16k
    vocabulary (a 15M-parameter shape: 428 ms float32, 164 ms all int8, 277 ms without the decoder, 169 ms with it)."""
    from torch import nn

    stacks = [m for m in model.modules() if isinstance(m, nn.ModuleList)]
    stack = max(stacks, key=len, default=None)
    names = {id(m): n for n, m in model.named_modules()}
    picked = {names[id(m)] for layer in (stack or []) for m in layer.modules()
              if isinstance(m, nn.Linear) and m.in_features <= m.out_features}
    out = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if isinstance(out, nn.Linear):
        picked.add(names[id(out)])
    return picked


def quantize_masked(model, quantization: str):
    """``int8``: a copy of the model whose ``int8_layers`` run int8 matmuls (weights and activations quantized per
    tensor, the activations' scale per call: torch's dynamic quantization, CPU; per-channel weights were no closer
    and slower on hole-only forwards); everything else and the model passed in are untouched. ``none``: the model
    itself. A torch without int8 kernels here raises ``ModelLoadError``."""
    if quantization == "none":
        return model
    import warnings

    from torch.ao.quantization import quantize_dynamic

    from ..requests import ModelLoadError

    try:
        with warnings.catch_warnings():   # torch.ao.quantization points to torchao, which this path does not need
            warnings.simplefilter("ignore")
            return quantize_dynamic(model, int8_layers(model), dtype=torch.qint8)
    except (RuntimeError, AssertionError) as exc:   # no int8 kernels in this torch build or on this CPU
        raise ModelLoadError(f"quantization {quantization!r} is not available here (torch quantized engine "
                             f"{torch.backends.quantized.engine!r}): {exc}") from exc


def resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    """``auto``: bfloat16 on CUDA, float32 elsewhere (exact, and what every figure here was measured with)."""
    if name == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if name not in _DTYPES:
        from ..requests import ModelLoadError
        raise ModelLoadError(f"unknown dtype {name!r} (auto, {', '.join(_DTYPES)})")
    return _DTYPES[name]
