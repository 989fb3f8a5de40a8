"""DiffusionGemma served by a vLLM (>= 0.32) server, reached over HTTP: ``open_backend("vllm+http://host:port[/model]")``.

The URL: ``vllm+http://HOST:PORT[/SERVED-MODEL-NAME][?timeout=SECONDS&canvas=TOKENS]`` (``vllm+https://`` for TLS).
The model name is the server's ``--served-model-name`` (default: the path it was started with; it may contain
``/``); left out, the server must serve exactly one model. ``timeout`` bounds one request (default 120 s);
``canvas`` is the served canvas when ``--diffusion-config`` changed it from the checkpoint's ``canvas_length``.
The ``model`` load setting names a local copy of the served checkpoint's config and tokenizer files (no weights).
The bearer token (the server's ``--api-key``) is the ``token`` argument, else ``$VLLM_API_KEY``.
"""

from __future__ import annotations

from ...config import LoadConfig
from ..base import Backend


def open_backend(url: str, load: LoadConfig, token: str | None = None) -> Backend:
    """A backend that denoises on the vLLM server at ``url``; ModelLoadError when it cannot be used."""
    from .backend import VllmBackend

    return VllmBackend.open(url, load, token=token)


__all__ = ["open_backend"]
