"""DiffusionGemma served by a vLLM (>= 0.32) server, reached over HTTP: ``open_backend("vllm+http://host:port[/model]")``.

The URL: ``vllm+http://HOST:PORT[/SERVED-MODEL-NAME][?timeout=SECONDS&canvas=TOKENS]`` (``vllm+https://`` for TLS).
The model name is the server's ``--served-model-name`` (default: the path it was started with; it may contain
``/``); left out, the server must serve exactly one model. ``timeout`` bounds one request (default 120 s);
``canvas`` is the served canvas when ``--diffusion-config`` changed it from the checkpoint's ``canvas_length``.
The ``model`` load setting names a local copy of the served checkpoint's config and tokenizer files (no weights).
The bearer token (the server's ``--api-key``) is the ``token`` argument, else ``$VLLM_API_KEY``. ``open_vllm`` is
what the ``engine`` setting opens (``engine.backends.open_remote``): the token from ``engineTokenFile`` (else
``$VLLM_API_KEY``) and an ``https`` server checked against ``engineCaFile`` besides the system's certificates.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable

from ...config import LoadConfig
from ..base import Backend
from ..credentials import read_token, tls_context


def open_backend(url: str, load: LoadConfig, token: str | None = None,
                 ssl_context: ssl.SSLContext | None = None,
                 reread_token: Callable[[], str | None] | None = None) -> Backend:
    """A backend that denoises on the vLLM server at ``url``; ModelLoadError when it cannot be used.
    ``reread_token``: where a token the server refuses is read again (a token rotated there is then sent)."""
    from .backend import VllmBackend

    return VllmBackend.open(url, load, token=token, ssl_context=ssl_context, reread_token=reread_token)


def open_vllm(url: str, load: LoadConfig) -> Backend:
    """The ``engine`` setting's opener for ``vllm+http(s)://`` URLs, with the load settings' token and CA file; the
    token file is read again when the server refuses its token (rotated on disk while the session runs)."""
    from .backend import TOKEN_ENV

    https = url.lower().startswith("vllm+https://")
    reread = (lambda: read_token(load, TOKEN_ENV)) if load.engine_token_file else None
    return open_backend(url, load, token=read_token(load, TOKEN_ENV), ssl_context=tls_context(load) if https else None,
                        reread_token=reread)


__all__ = ["open_backend", "open_vllm"]
