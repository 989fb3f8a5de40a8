"""What a team-server deployment is made from: ``diffusion-lsp serve`` options and ``serve run`` arguments."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ..config import LoadConfig


@dataclass(frozen=True)
class TeamOptions:
    """What a deployment is made from (``diffusion-lsp serve`` options, ``serve run`` arguments)."""

    model: str = "embedded"          # "embedded" or a checkpoint directory on every node
    device: str = "auto"
    dtype: str = "auto"
    quantization: str = "auto"       # auto: the model's serving.json; "int8": a masked model's int8 layers on the
                                     # CPU; DiffusionGemma: torchao
    threads: int = 1                 # torch threads per replica
    kv_cache: bool = True
    replicas: int = 2                # fixed replica count (when min_replicas == max_replicas == 0)
    min_replicas: int = 0            # autoscaling between these (0, 0: a fixed ``replicas``)
    max_replicas: int = 0
    target_ongoing_requests: float = 4.0   # autoscaling's target of requests in flight per replica
    num_cpus: float = 1.0            # Ray CPUs reserved per replica
    num_gpus: float = 0.0            # Ray GPUs per replica (a DiffusionGemma replica wants 1)
    max_batch: int = 8               # fills denoised together (1: batching off)
    batch_wait_ms: float = 5.0       # how long a batch waits for more fills
    max_ongoing_requests: int = 64   # per replica (queued fills wait in the replica's batch queue)
    health_check_period_s: float = 10.0

    def load(self) -> LoadConfig:
        return LoadConfig(model=self.model, device=self.device, dtype=self.dtype, threads=self.threads,
                          kv_cache=self.kv_cache, quantization=self.quantization)

    @classmethod
    def parse(cls, args: dict[str, Any]) -> TeamOptions:
        """From ``serve run`` key=value strings (or typed values); an unknown key is a ValueError."""
        kinds: dict[str, Any] = {f.name: type(f.default) for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in args.items():
            key = key.replace("-", "_")
            if key not in kinds:
                raise ValueError(f"unknown option {key!r}")
            kind = kinds[key]
            if kind is bool and isinstance(value, str):
                value = value.lower() in ("1", "true", "yes", "on")
            values[key] = kind(value)
        return cls(**values)
