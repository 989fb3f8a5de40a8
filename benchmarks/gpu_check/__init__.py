"""DiffusionGemma on a GPU with random weights at the real layer shapes: ``python -m benchmarks.gpu_check --out F``.

See ``README.md`` beside this file for what it measures and how to read the JSON.
"""
