"""Load-time choices for DiffusionGemma: how the mixture-of-experts layers multiply, and quantized weights.

Experts (``LoadConfig.experts``) are transformers' own implementations of its fused 3-D expert
parameters (``@use_experts_implementation``): ``eager`` loops over the experts a batch routes to
(one small matmul pair each, and a read-back of which experts were hit), ``batched_mm`` gathers each
token-expert pair's weights and runs one ``bmm`` (no loop, but a copy of the weights per pair: about
8 MB per pair at the 26B shapes, so only for a few tokens), ``grouped_mm`` sorts the pairs by expert
and runs torch's grouped GEMM (``torch.nn.functional.grouped_mm``: CUDA SM80+, and CPU with torch 2.9+;
transformers falls back to a per-expert loop elsewhere). All three give the same fills on the tiny
checkpoint (tests). ``auto`` is ``grouped_mm`` (transformers' default for this model), or ``eager``
with quantized weights: torchao's quantized tensors implement indexing and ``linear`` but not ``bmm``
or the grouped GEMM (measured with int8 on CPU).

Quantization (``LoadConfig.quantization``) maps to transformers' ``TorchAoConfig`` (torchao, the
maintained PyTorch library): ``int8`` and ``fp8`` weight-only (both run on CPU too, in the tests;
fp8 matmul kernels need compute capability 8.9+), ``int4`` weight-only (torchao's CUDA kernels). Two
things the defaults get wrong for this model, both handled here:
- transformers skips every tied parameter by default, and DiffusionGemma ties all of its encoder's
  layer weights to the decoder's: a plain ``TorchAoConfig(Int8WeightOnlyConfig())`` quantizes only the
  vision tower and the self-conditioning block. The skip list is therefore given explicitly.
- the quantizer converts ``nn.Linear`` weights only; the experts are ``nn.Parameter`` of shape
  (experts, out, in), about 90 % of the weights. An ``FqnToConfig`` entry names them, and torchao
  quantizes the 3-D tensors (per expert row, as for a Linear weight).
bitsandbytes (``BitsAndBytesConfig``) replaces ``nn.Linear`` modules only, so it would leave the
experts in bf16; transformers' ``FineGrainedFP8Config`` does convert ``.experts`` modules, but its
kernels come from the Hub (``kernels`` package), which an offline install cannot fetch.
"""

from __future__ import annotations

import torch

from ...config import EXPERTS, QUANTIZATIONS

EXPERT_PARAMS = r"re:(.*\.)?experts\.(gate_up_proj|down_proj)"                 # (experts, out, in) parameters
LINEARS = r"re:(.*\.)?(self_attn\.[qkvo]_proj|mlp\.(gate|up|down)_proj|self_conditioning\.(gate|up|down)_proj)"
# Not named above, so kept in full precision: the output projection (tied to the embeddings), the router's
# logits (a small matrix whose rounding would move tokens between experts), the vision tower (unused for code).
# transformers' own skip list must still be replaced (its default skips every tied weight).
NOT_QUANTIZED = ["lm_head", r".*vision_tower", r".*embed_vision"]


class OptionError(ValueError):
    """An experts or quantization choice that cannot be honoured here (unknown, or its library missing)."""


def experts_implementation(name: str, quantization: str = "none") -> str:
    if name not in EXPERTS:
        raise OptionError(f"unknown experts implementation {name!r} ({', '.join(EXPERTS)})")
    if name == "auto":
        return "grouped_mm" if quantization == "none" else "eager"
    return name


def torchao_config(quantization: str):
    """The torchao config (an ``AOBaseConfig``) of a ``quantization`` value, or None for ``none``."""
    if quantization not in QUANTIZATIONS:
        raise OptionError(f"unknown quantization {quantization!r} ({', '.join(QUANTIZATIONS)})")
    if quantization == "none":
        return None
    try:
        from torchao.quantization import Float8WeightOnlyConfig, Int4WeightOnlyConfig, Int8WeightOnlyConfig
    except ImportError as exc:
        raise OptionError(f"quantization {quantization!r} needs torchao (pip install torchao): {exc}") from exc
    if quantization == "int8":
        return Int8WeightOnlyConfig()
    if quantization == "fp8":
        return Float8WeightOnlyConfig()
    return Int4WeightOnlyConfig(group_size=128)


def fqn_config(quantization: str):
    """torchao's per-name config: the attention, dense MLP and self-conditioning Linear weights, and the experts'
    3-D parameters."""
    from torchao.quantization import FqnToConfig

    config = torchao_config(quantization)
    return FqnToConfig({LINEARS: config, EXPERT_PARAMS: config})


def quantization_config(quantization: str):
    """``from_pretrained``'s ``quantization_config`` for a ``quantization`` value (None: full precision)."""
    if torchao_config(quantization) is None:
        return None
    from transformers import TorchAoConfig

    return TorchAoConfig(fqn_config(quantization), modules_to_not_convert=list(NOT_QUANTIZED))


def quantize_in_memory(model, quantization: str) -> None:
    """Quantize a model built in memory (benchmarks.gpu_check's random one) as ``quantization_config`` does at load:
    the decoder in place, then the encoder's layers re-tied to it (one quantized copy, as in a loaded model)."""
    if torchao_config(quantization) is None:
        return
    from torchao.quantization import quantize_

    decoder = model.model.decoder
    quantize_(decoder, fqn_config(quantization), filter_fn=None)
    model.tie_weights()
    if next(decoder.parameters()).device.type == "cuda":
        torch.cuda.empty_cache()


def is_quantized(param: torch.Tensor) -> bool:
    """Whether a parameter holds a torchao quantized tensor (not a plain float tensor)."""
    return type(param) not in (torch.Tensor, torch.nn.Parameter)
