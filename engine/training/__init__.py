"""Reproducible training of the embedded masked-diffusion code model (see ``python -m engine.training --help``)."""
