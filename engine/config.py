"""The engine's configuration in two halves: what loading the model depends on (a change reloads it) and the
fill options every request carries (a change applies to the next request, with no reload)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

EMBEDDED = "embedded"
EMBEDDED_DIR = Path(__file__).parent / "models" / "embedded"
ADAPT_MODES = ("off", "background")
EXPERTS = ("auto", "eager", "batched_mm", "grouped_mm")   # DiffusionGemma's mixture-of-experts matmuls
QUANTIZATIONS = ("auto", "none", "int8", "fp8", "int4")   # "auto": what the model directory states (serving.json)
SERVING_FILE = "serving.json"   # beside a checkpoint's weights: how it is meant to run ({"quantization": "int8"})


def model_dir(model: str) -> Path:
    """The checkpoint directory a ``model`` setting names (``embedded``: the shipped model)."""
    return EMBEDDED_DIR if model == EMBEDDED else Path(model).expanduser()


@dataclass(frozen=True)
class LoadConfig:
    """Everything the loaded backend is built from: changing any field reloads the model."""

    model: str = EMBEDDED             # "embedded" or a local checkpoint directory
    device: str = "auto"              # "auto" | "cpu" | "cuda" | "cuda:N" | "mps"
    dtype: str = "auto"               # "auto" | "float32" | "bfloat16" | "float16"
    device_map: str | None = None     # passed to from_pretrained for large checkpoints (e.g. "auto")
    threads: int = 1                  # torch intra-op threads on CPU (1 is fastest on 2 busy cores)
    order: str = "confidence"         # "confidence": parallel acceptance; "left_to_right": one token per step, in order
    kv_cache: bool = True             # masked LMs (ModernBERT): recompute only the hole between refreshes
    cache_refresh: int = 4            # recompute the holes and the text after them every N steps (0: never)
    t_min: float = 0.0                # DiffusionGemma temperature schedule end / start; 0 = generation_config
    t_max: float = 0.0
    experts: str = "auto"             # DiffusionGemma experts: "auto" | "eager" | "batched_mm" | "grouped_mm"
    quantization: str = "auto"        # "auto": the model directory's serving.json, else none | "none" | "int8"
                                      # (masked: int8 matmuls on the CPU; DiffusionGemma: torchao) | "fp8" | "int4"
    engine: str = ""                  # remote engine URL: http(s):// a team server, vllm+http(s):// vLLM; "" = local
    engine_token_file: str = ""       # the remote engine's bearer token ("": $DIFFUSION_LSP_ENGINE_TOKEN)
    engine_ca_file: str = ""          # PEM certificates to trust for an https engine besides the system's
    engine_timeout: float = 30.0      # seconds to connect, and the longest wait for the engine's next step
    engine_retries: int = 2           # a fill that failed before an answer is tried again this often (with backoff)
    adapt: str = "off"                # "off" | "background": learn the workspace's code in a low-priority process
                                      # (engine/adapt); its weights are used once they fill held-out lines better

    def model_dir(self) -> Path:
        return model_dir(self.model)


@dataclass(frozen=True)
class FillOptions:
    """What travels with each request: step budget, accept rule, hole and context budgets, validation."""

    steps: int = 0                    # denoising step budget per request; 0 = the backend's default
    threshold: float = 0.0            # accept rule (masked: confidence; DiffusionGemma: entropy bound); 0 = default
    max_hole_tokens: int = 64         # largest hole for cursor completion and a body (selections may be larger)
    prefix_tokens: int = 160          # context budget before the hole
    suffix_tokens: int = 64           # context budget after the hole
    validate: bool = True             # re-parse and reject fills that break the syntax
    min_confidence: float | None = None  # offer a cursor fill only at this estimated P(right); None: the
                                         # calibration's default (engine/confidence.py); 0: never withhold
    names_rule: bool = True           # rank fills with names the document defines nowhere last (engine/names.py)
    max_alternatives: int = 3         # distinct valid fills a cursor request offers, best first (1: the best only)
    document_lines: bool = True       # the rest of a line being typed may also come from a line the document
                                      # already has (engine/doclines.py), when the backend scores options
    workspace_lines: bool = True      # ... or from a line of the workspace's other files (engine/worklines.py; with
                                      # document_lines, for a request that names its workspace)
    common_lines: bool = True         # ... or from a line code often has (engine/commonlines.py; with document_lines)
    line_lengths: tuple[int, ...] = ()  # slot counts a one-line hole is tried at; (): the engine's (8, 24), or
                                        # the model's per-language choice (engine/decoding.py)


@dataclass(frozen=True)
class EngineConfig:
    """The model to load and the fill options used by requests that carry none of their own."""

    load: LoadConfig = field(default_factory=LoadConfig)
    fill: FillOptions = field(default_factory=FillOptions)

    def model_dir(self) -> Path:
        return self.load.model_dir()

    @classmethod
    def of(cls, **values: Any) -> EngineConfig:
        """From flat field names (``EngineConfig.of(model=..., steps=8)``); an unknown name is a TypeError."""
        halves: dict[type, dict[str, Any]] = {LoadConfig: {}, FillOptions: {}}
        for name, value in values.items():
            half = next((h for h in halves if name in {f.name for f in fields(h)}), None)
            if half is None:
                raise TypeError(f"EngineConfig has no setting {name!r}")
            halves[half][name] = value
        return cls(LoadConfig(**halves[LoadConfig]), FillOptions(**halves[FillOptions]))
