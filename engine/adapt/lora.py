"""Low-rank adapters (LoRA, through peft) for large checkpoints: instead of fine-tuning every weight, train a pair of
small matrices A (r x in) and B (out x r) beside each Linear layer of the encoder's layers, publish only those
(``adapter.safetensors`` and ``adapter.json``: rank, alpha, scale, the adapted modules) and, when the server adopts
them, merge them into the base weights in place (W += scale * B @ A; the masked backend's ``load_weights``).

The adapted modules are found the same way for any transformers masked LM: every ``nn.Linear`` inside the model's
stack of layers (its largest ``nn.ModuleList``), never the embeddings or the MLM head.

Training side: ``choose`` (full or LoRA), ``wrap`` (peft's layers injected in place, only theirs trainable),
``save_adapter``. Loading side (no peft needed): ``is_adapter``, ``read_adapter`` (checked against the model before
anything changes), ``merge`` and ``restore`` (the adapted modules' original weights, kept on the CPU).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..requests import ModelLoadError
from .store import ADAPTER, ADAPTER_CONFIG

METHODS = ("auto", "full", "lora")
AUTO_LORA_PARAMETERS = 60_000_000   # "auto": LoRA above this many parameters (the embedded model, ~5M, trains fully)
FORMAT = "diffusion-lsp-lora"
_ADAPTER_NAME = "default"            # peft's name for the one adapter


def parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def choose(model: nn.Module, method: str, threshold: int | None = None) -> str:
    """``full`` or ``lora`` for ``method`` (``auto``: LoRA when the model has more than ``threshold`` parameters,
    ``AUTO_LORA_PARAMETERS`` by default)."""
    if method not in METHODS:
        raise ValueError(f"adaptation method must be one of {', '.join(METHODS)}, not {method!r}")
    if method != "auto":
        return method
    limit = AUTO_LORA_PARAMETERS if threshold is None else threshold
    return "lora" if parameters(model) > limit else "full"


def layer_stack(model: nn.Module) -> str:
    """The name of the model's stack of transformer layers: its largest ``nn.ModuleList`` holding Linear layers."""
    best, size = "", 0
    for name, module in model.named_modules():
        if isinstance(module, nn.ModuleList) and any(isinstance(m, nn.Linear) for m in module.modules()):
            n = parameters(module)
            if n > size:
                best, size = name, n
    if not size:
        raise ValueError(f"{type(model).__name__}: no stack of layers with Linear modules to adapt")
    return best


def targets(model: nn.Module) -> list[str]:
    """The modules LoRA adapts: every ``nn.Linear`` inside the layer stack (attention and MLP), by full name."""
    stack = layer_stack(model)
    return [name for name, m in model.named_modules() if name.startswith(stack + ".") and isinstance(m, nn.Linear)]


def wrap(model: nn.Module, rank: int, alpha: int) -> list[str]:
    """Inject peft's LoRA layers into ``model`` in place (B starts at zero: the model is unchanged) and make only
    their parameters trainable; the adapted module names."""
    from peft import LoraConfig, inject_adapter_in_model

    names = targets(model)
    config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=0.0, bias="none", target_modules=names)
    inject_adapter_in_model(config, model, adapter_name=_ADAPTER_NAME)
    for name, p in model.named_parameters():
        p.requires_grad_(".lora_A." in name or ".lora_B." in name)
    return names


def is_wrapped(model: nn.Module) -> bool:
    return any(n.endswith(".lora_A." + _ADAPTER_NAME + ".weight") for n, _ in model.named_parameters())


def save_adapter(model: nn.Module, path: Path) -> None:
    """Write the LoRA matrices of a ``wrap``ped model to ``path`` (safetensors: ``<module>.lora_A.weight``,
    ``<module>.lora_B.weight``) and their description to ``adapter.json`` beside it."""
    from peft.tuners.lora import LoraLayer
    from safetensors.torch import save_file

    tensors: dict[str, torch.Tensor] = {}
    names, ranks, alphas, scales = [], set(), set(), set()
    for name, module in model.named_modules():
        if not isinstance(module, LoraLayer) or _ADAPTER_NAME not in module.lora_A:
            continue
        layer: Any = module
        names.append(name)
        tensors[f"{name}.lora_A.weight"] = layer.lora_A[_ADAPTER_NAME].weight.detach().float().cpu().contiguous()
        tensors[f"{name}.lora_B.weight"] = layer.lora_B[_ADAPTER_NAME].weight.detach().float().cpu().contiguous()
        ranks.add(layer.r[_ADAPTER_NAME])
        alphas.add(layer.lora_alpha[_ADAPTER_NAME])
        scales.add(layer.scaling[_ADAPTER_NAME])
    if not names or len(ranks) != 1 or len(scales) != 1:
        raise ValueError("the model carries no LoRA adapter of one rank and scale to save")
    save_file(tensors, str(path), metadata={"format": FORMAT})
    description = {"format": FORMAT, "version": 1, "rank": ranks.pop(), "alpha": alphas.pop(),
                   "scale": scales.pop(), "targets": names}
    (path.parent / ADAPTER_CONFIG).write_text(json.dumps(description, indent=2), "utf-8")


# -- loading: merge into the base weights, and restore them ------------------------------------------------------
def is_adapter(path: Path) -> bool:
    """Whether ``path`` names a published adapter (rather than a full set of weights)."""
    return Path(path).name == ADAPTER


@dataclass
class Adapter:
    """A published adapter, checked against a model: per adapted module its Linear weight, A and B."""

    path: Path
    scale: float
    layers: list[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor]]   # (name, weight, A, B)


def read_adapter(path: Path, model: nn.Module) -> Adapter:
    """Read ``path`` and ``adapter.json`` beside it and check them against ``model`` (format, every tensor there and
    none more, each target a Linear of the model, shapes, finite values). Raises ``ModelLoadError``; reads only."""
    from safetensors.torch import load_file

    path = Path(path)
    try:
        meta = json.loads((path.parent / ADAPTER_CONFIG).read_text("utf-8"))
        tensors = load_file(str(path), device="cpu")
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"cannot read the adapter {path}: {exc}") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelLoadError(f"{path.parent / ADAPTER_CONFIG}: not a {FORMAT} description")
    rank, scale, names = meta.get("rank"), meta.get("scale"), meta.get("targets")
    if not (isinstance(rank, int) and rank > 0 and isinstance(scale, int | float) and math.isfinite(scale)
            and isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
        raise ModelLoadError(f"{path.parent / ADAPTER_CONFIG}: rank, scale or targets missing or invalid")
    expected = {f"{n}.lora_{m}.weight" for n in names for m in "AB"}
    if set(tensors) != expected:
        missing, unexpected = sorted(expected - set(tensors))[:3], sorted(set(tensors) - expected)[:3]
        raise ModelLoadError(f"{path}: tensors do not match its targets (missing {missing}, unexpected {unexpected})")
    modules = dict(model.named_modules())
    layers = []
    for name in names:
        module = modules.get(name)
        if not isinstance(module, nn.Linear):
            raise ModelLoadError(f"{path}: this model has no Linear layer {name!r} to adapt")
        a, b = tensors[f"{name}.lora_A.weight"], tensors[f"{name}.lora_B.weight"]
        if tuple(a.shape) != (rank, module.in_features) or tuple(b.shape) != (module.out_features, rank):
            raise ModelLoadError(f"{path}: {name}: A {tuple(a.shape)} and B {tuple(b.shape)} do not fit a rank {rank} "
                                 f"adapter of a {module.in_features} -> {module.out_features} layer")
        if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
            raise ModelLoadError(f"{path}: {name}: values that are not finite")
        layers.append((name, module.weight, a, b))
    return Adapter(path, float(scale), layers)


@torch.no_grad()
def merge(adapter: Adapter) -> dict[str, torch.Tensor]:
    """W += scale * B @ A for every adapted layer, in place; the layers' original weights (CPU copies, by name) for
    ``restore``."""
    originals: dict[str, torch.Tensor] = {}
    for name, weight, a, b in adapter.layers:
        originals[name] = weight.detach().to("cpu", copy=True)
        delta = (b.to(weight.device, torch.float32) @ a.to(weight.device, torch.float32)) * adapter.scale
        weight.add_(delta.to(weight.dtype))
    return originals


@torch.no_grad()
def restore(model: nn.Module, originals: dict[str, torch.Tensor]) -> None:
    """Put the original weights ``merge`` kept back (bit for bit)."""
    modules = dict(model.named_modules())
    for name, original in originals.items():
        weight: Any = modules[name].weight
        weight.copy_(original.to(weight.device))
