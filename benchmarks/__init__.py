"""Benchmarks of quality (HumanEval-infilling), latency through the LSP, decoding order and sampler sweeps."""
