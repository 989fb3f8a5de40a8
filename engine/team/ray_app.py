"""The team server on Ray Serve: replicas that each hold the model, ``@serve.batch`` gathering the fills of many
editors into one denoising batch (``MaskedBackend.fill_many``), autoscaling and health checks.

``diffusion-lsp serve`` deploys it (``engine/team/cli.py``); so does ``serve run engine.team.ray_app:app_builder
model=embedded replicas=2`` (arguments as in ``TeamOptions``). The HTTP protocol is ``app.handle``'s."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict
from typing import Any

from ray import serve
from starlette.requests import Request
from starlette.responses import Response

from .app import handle
from .options import TeamOptions
from .service import Denoiser, Job

log = logging.getLogger(__name__)
DEPLOYMENT = "diffusion-engine"


@serve.deployment(name=DEPLOYMENT)
class TeamEngine:
    """One replica: the model, its batch queue, the protocol."""

    def __init__(self, options: dict[str, Any], token: str | None):
        self.options = TeamOptions(**options)
        self.token = token
        self.denoiser = Denoiser.load(self.options.load())
        self._batched.set_max_batch_size(max(1, self.options.max_batch))  # type: ignore[attr-defined]
        self._batched.set_batch_wait_timeout_s(self.options.batch_wait_ms / 1000)  # type: ignore[attr-defined]
        log.info("replica ready: %s, batches of up to %d", self.options.model, self.options.max_batch)

    @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.005)
    async def _batched(self, jobs: list[Job]) -> list[None]:
        await asyncio.to_thread(self.denoiser.run_batch, jobs)
        return [None] * len(jobs)

    async def __call__(self, request: Request) -> Response:
        return await handle(request, self.denoiser, self.token, self._batched)

    def check_health(self) -> None:
        self.denoiser.check_health()


def build(options: TeamOptions, token: str | None = None) -> Any:
    """The Ray Serve application for ``options``."""
    autoscaling = None
    if options.max_replicas:
        autoscaling = {"min_replicas": options.min_replicas, "max_replicas": options.max_replicas,
                       "target_ongoing_requests": options.target_ongoing_requests}
    engine: Any = TeamEngine  # a ray.serve Deployment
    deployment = engine.options(
        num_replicas="auto" if autoscaling else options.replicas, autoscaling_config=autoscaling,
        ray_actor_options={"num_cpus": options.num_cpus, "num_gpus": options.num_gpus},
        max_ongoing_requests=options.max_ongoing_requests, health_check_period_s=options.health_check_period_s,
        health_check_timeout_s=60.0)
    return deployment.bind(asdict(options), token)


def app_builder(args: dict[str, Any]) -> Any:
    """For ``serve run engine.team.ray_app:app_builder KEY=VALUE ...``; the token comes from the environment
    (``DIFFUSION_LSP_ENGINE_TOKEN``) or ``token_file=PATH``."""
    import os

    from .cli import token_from_file

    args = dict(args)
    token_file = args.pop("token_file", None)
    token = token_from_file(token_file) if token_file else os.environ.get("DIFFUSION_LSP_ENGINE_TOKEN") or None
    return build(TeamOptions.parse(args), token)


def free_port(host: str) -> int:
    """A port free on ``host`` now, for Ray Serve's proxy, which binds the port it is given and cannot report one
    the system chose (``port=0``). Another process could take it before the proxy binds it: the proxy then fails
    to start, saying so; it is not silently served elsewhere."""
    import socket

    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def start_local(options: TeamOptions, host: str = "127.0.0.1", port: int = 0, num_cpus: int = 2,
                token: str | None = None) -> str:
    """Start Ray in this process (a local cluster of ``num_cpus``), deploy ``options`` and return its URL once every
    replica is ready (tests and benchmarks; ``stop_local`` ends it). ``port`` 0: a free one."""
    import ray

    port = port or free_port(host)
    ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False, configure_logging=False,
             ignore_reinit_error=True)
    serve.start(http_options={"host": host, "port": port})
    serve.run(build(options, token), name="diffusion-lsp", route_prefix="/")
    return f"http://{host}:{port}"


def stop_local() -> None:
    import ray

    serve.shutdown()
    ray.shutdown()
