"""EngineConfig: which model, where it runs, and the sampler and context budgets."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

EMBEDDED = "embedded"
EMBEDDED_DIR = Path(__file__).parent / "models" / "embedded"


@dataclass(frozen=True)
class EngineConfig:
    model: str = EMBEDDED             # "embedded" or a local checkpoint directory
    device: str = "auto"              # "auto" | "cpu" | "cuda" | "cuda:N" | "mps"
    dtype: str = "auto"               # "auto" | "float32" | "bfloat16" | "float16"
    device_map: str | None = None     # passed to from_pretrained for large checkpoints (e.g. "auto")
    threads: int = 1                  # torch intra-op threads on CPU (1 is fastest on 2 busy cores)
    steps: int = 0                    # denoising step budget per request; 0 = the backend's default
    threshold: float = 0.0            # accept rule (masked: confidence; DiffusionGemma: entropy bound); 0 = default
    t_min: float = 0.0                # DiffusionGemma temperature schedule end / start; 0 = generation_config
    t_max: float = 0.0
    order: str = "confidence"         # "confidence": parallel acceptance; "left_to_right": one token per step, in order
    kv_cache: bool = True             # masked LMs (ModernBERT): recompute only the hole between refreshes
    cache_refresh: int = 4            # recompute the holes and the text after them every N steps (0: never)
    max_hole_tokens: int = 64         # largest hole for cursor completion (selections may be larger)
    prefix_tokens: int = 160          # context budget before the hole
    suffix_tokens: int = 64           # context budget after the hole
    validate: bool = True             # re-parse and reject fills that break the syntax
    min_confidence: float | None = None  # offer a cursor fill only at this estimated P(right); None: the
                                         # calibration's default (engine/confidence.py); 0: never withhold
    names_rule: bool = True           # rank fills with names the document defines nowhere last (engine/names.py)

    def model_dir(self) -> Path:
        return EMBEDDED_DIR if self.model == EMBEDDED else Path(self.model).expanduser()
