"""What every remote backend reads the same way from the load settings: the bearer token (``engineTokenFile``,
else an environment variable) and the certificates an ``https`` engine is checked against (``engineCaFile``
besides the system's)."""

from __future__ import annotations

import os
import ssl
from pathlib import Path

from ..config import LoadConfig
from ..requests import ModelLoadError


def token_problem(token: str) -> str | None:
    """What makes ``token`` one that cannot travel as ``Authorization: Bearer ...``, or None: it must be one word of
    visible ASCII (http.client refuses a line break in a header and cannot encode most other characters)."""
    bad = next((c for c in token if not (c.isascii() and c.isprintable()) or c.isspace()), None)
    return None if bad is None else f"the token must be one word of visible ASCII characters, not {bad!r}"


def read_token(load: LoadConfig, env: str) -> str | None:
    """The token in ``load.engine_token_file`` (stripped, a UTF-8 byte order mark too; an unreadable or empty file,
    or a token that cannot be sent, is an error), else ``$env``."""
    if load.engine_token_file:
        path = Path(load.engine_token_file).expanduser()
        try:
            token = path.read_text(encoding="utf-8-sig").strip()
        except OSError as exc:
            raise ModelLoadError(f"cannot read engineTokenFile {path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise ModelLoadError(f"engineTokenFile {path} is not text (UTF-8)") from None
        if not token:
            raise ModelLoadError(f"engineTokenFile {path} is empty")
        if problem := token_problem(token):
            raise ModelLoadError(f"engineTokenFile {path}: {problem}")
        return token
    return os.environ.get(env) or None


def tls_context(load: LoadConfig) -> ssl.SSLContext:
    """The system's trust store, plus ``load.engine_ca_file`` when set (a team's self-signed certificate)."""
    context = ssl.create_default_context()
    if load.engine_ca_file:
        path = Path(load.engine_ca_file).expanduser()
        try:
            context.load_verify_locations(cafile=str(path))
        except (OSError, ssl.SSLError) as exc:
            raise ModelLoadError(f"cannot use engineCaFile {path}: {exc}") from None
    return context
