"""Device, dtype and thread settings shared by the backends' loaders; offline flags set before transformers loads,
and the libraries kept off stderr (no progress bars; their warnings go through the log)."""

from __future__ import annotations

import os

import torch

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


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    return torch.device(name)


def native_cpu_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX): then bf16 matmuls are about
    twice as fast as fp32 (training autocasts to it; ``dtype: bfloat16`` opts the server in); elsewhere
    they are emulated and slower."""
    try:
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    """``auto``: bfloat16 on CUDA, float32 elsewhere (exact, and what every figure here was measured with)."""
    if name == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    return _DTYPES[name]
