"""The DiffusionGemma backend family: prompt KV cache, noise canvas with pinned text, entropy-bound sampler."""
