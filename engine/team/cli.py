"""``diffusion-lsp serve``: the team server, on Ray Serve (replicas, batching, autoscaling) or, with ``--plain``,
as one process (the same protocol, batching by ``service.Collector``). Defined without heavy imports, so the
language server's command line can list it."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import ssl
import sys
import threading
from dataclasses import fields
from pathlib import Path
from typing import Any

from .. import memory
from ..backends.credentials import token_problem
from ..backends.remote.client import TOKEN_ENV
from ..requests import EngineError

log = logging.getLogger(__name__)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from .options import TeamOptions

    p.add_argument("--plain", action="store_true", help="one process with one model, no Ray")
    p.add_argument("--host", default="127.0.0.1", help="listen here (other than loopback only with a token)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--token-file", help=f"clients must send this file's token (default: ${TOKEN_ENV}, if set)")
    p.add_argument("--certfile", help="serve https with this certificate (PEM) ...")
    p.add_argument("--keyfile", help="... and this private key")
    p.add_argument("--ray-address", default=None, help="join this Ray cluster (default: start a local one)")
    for f in fields(TeamOptions):
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default)
        else:
            kind = {"int": int, "float": float}.get(str(f.type), str)
            p.add_argument(flag, type=kind, default=f.default)


def token_from_file(path: str) -> str:
    """The token a token file holds (stripped, a UTF-8 byte order mark too, as the clients read it); an empty file
    or a token no client could send is a ValueError naming the file."""
    token = Path(path).expanduser().read_text(encoding="utf-8-sig").strip()
    if not token:
        raise ValueError(f"{path} is empty")
    if problem := token_problem(token):   # no client could send it: every request would be refused
        raise ValueError(f"{path}: {problem}")
    return token


def _token(args) -> str | None:
    if args.token_file:
        return token_from_file(args.token_file)
    return os.environ.get(TOKEN_ENV) or None


def run(args) -> int:
    from .app import check_bind
    from .options import TeamOptions

    try:
        token = _token(args)
        check_bind(args.host, token)
        if bool(args.certfile) != bool(args.keyfile):
            raise ValueError("--certfile and --keyfile go together")
        if not 0 <= args.port <= 65535:
            raise ValueError(f"--port must be 0..65535, not {args.port}")
        if args.certfile:   # read here: a server thread that fails on them says only that it did not start
            try:
                ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(args.certfile, args.keyfile)
            except (OSError, ssl.SSLError) as exc:
                raise ValueError(f"cannot use --certfile {args.certfile} with --keyfile {args.keyfile}: "
                                 f"{exc.strerror or exc}") from None
    except (OSError, ValueError) as exc:
        raise SystemExit(f"diffusion-lsp serve: {exc}") from None
    options = TeamOptions(**{f.name: getattr(args, f.name) for f in fields(TeamOptions)})
    scheme = "https" if args.certfile else "http"
    if args.plain:
        return _plain(args, options, token, scheme)
    import ray
    from ray import serve

    from .ray_app import build, free_port
    signal.signal(signal.SIGTERM, _stopped)
    try:
        ray.init(address=args.ray_address, include_dashboard=False, log_to_driver=False)
        # ray.init put in its own SIGTERM handler (a stack dump, then abort: exit -6 with the replicas loading)
        signal.signal(signal.SIGTERM, _stopped)
        if not args.port:   # --port 0: Serve's proxy cannot report a port the system chose; one free now, named below
            args.port = free_port(args.host)
        serve.start(http_options={"host": args.host, "port": args.port, "ssl_certfile": args.certfile,
                                  "ssl_keyfile": args.keyfile})
        serve.run(build(options, token), name="diffusion-lsp", route_prefix="/")
    except _Stopped:   # stopped (systemctl stop, kill) while it started: Ray stopped too, nothing left behind
        print("diffusion-lsp serve: stopped while starting", file=sys.stderr, flush=True)
        with contextlib.suppress(Exception):
            serve.shutdown()
        ray.shutdown()
        return 0
    except RuntimeError as exc:   # the replicas did not start: Ray's message names no cause, its status does
        cause = _deployment_error(serve) or str(exc)
        serve.shutdown()
        ray.shutdown()
        raise SystemExit(f"diffusion-lsp serve: the deployment failed: {cause}") from None
    print(f"diffusion-lsp team server (Ray Serve) at {scheme}://{args.host}:{args.port}", flush=True)
    _wait()
    serve.shutdown()
    return 0


def _deployment_error(serve: Any) -> str:
    """The last line of each failed deployment's message (a replica constructor's exception), or ""."""
    try:
        app = serve.status().applications["diffusion-lsp"]
        lines = [d.message.strip().splitlines()[-1] for d in app.deployments.values() if d.message.strip()]
    except Exception:  # noqa: BLE001 (only a better message is lost)
        return ""
    return "; ".join(lines)


def _plain(args, options, token: str | None, scheme: str) -> int:
    from .app import PlainServer, make_app
    from .service import Collector, Denoiser

    try:
        denoiser = Denoiser.load(options.load())
    except (EngineError, ValueError, RuntimeError) as exc:   # a model not there or that does not load, a bad
                                                             # setting (torch: a device it does not know)
        raise SystemExit(f"diffusion-lsp serve: the model could not be loaded: {exc}") from None
    memory.freeze_after_loads()   # one model for the process' life: full collections skip it (engine/memory.py)
    memory.model_loaded()
    collector = Collector(denoiser, options.max_batch, options.batch_wait_ms)
    try:
        server = PlainServer(make_app(denoiser, token, collector.submit), args.host, args.port, token,
                             args.certfile, args.keyfile).start()
    except OSError as exc:   # the address is in use, or not this machine's
        raise SystemExit(f"diffusion-lsp serve: cannot listen on {args.host}:{args.port}: "
                         f"{exc.strerror or exc}") from None
    print(f"diffusion-lsp team server at {server.url}", flush=True)
    _wait()
    denoiser.close()    # the fills in flight end with an error their clients retry, before the server stops:
    collector.close()   # the model thread done, so the process ends cleanly (torch's threads ended before exit)
    server.stop()
    return 0


class _Stopped(BaseException):
    """SIGTERM while the Ray deployment starts (a BaseException: Ray's waits catch Exception)."""


def _stopped(*_: Any) -> None:
    raise _Stopped()


def _wait() -> None:
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m engine.team", description=__doc__)
    add_arguments(p)
    p.add_argument("-v", "--verbose", action="count", default=0)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    return run(args)
