"""DiffusionGemma served by vLLM: the prefix as the prompt, each hole length one ``/v1/completions`` request
whose seed canvas pins the text after the holes.

A fill: tokenize the pieces with the checkpoint's own tokenizer (loaded locally, checked against the server's
``/tokenize`` at open); lay out one canvas per hole length (``canvas``); send every row at once, each with
``vllm_xargs`` = ``diffusion_seed_canvas``, ``diffusion_pinned``, ``diffusion_canvas_length``,
``diffusion_max_steps`` (vLLM turns ``vllm_xargs`` into ``SamplingParams.extra_args``); read each row's hole
slots back from the returned ``token_ids``, best mean log-probability first. The text the plan holds fixed
never comes from the server: vLLM returns its argmax at pinned positions too, and only hole slots are read.

Differences from the local backend, all from vLLM 0.32's code: the entropy bound and the temperatures are the
server's (``generation_config.json``; ``FillPlan.threshold`` is not sent); the log-probabilities are of each
committed token at the temperature of the step it converged on (the local backend's are untempered), so the
local ``confidence.json`` calibration does not apply (``model_dir`` is None: no estimate, nothing withheld);
no drafts (vLLM returns a canvas only when it commits); a fill reports its step budget as its steps.
"""

from __future__ import annotations

import concurrent.futures as cf
import ipaddress
import itertools
import json
import logging
import math
import os
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...config import LoadConfig
from ...requests import EngineError, ModelLoadError
from ..base import Candidate, Control, FillPlan, FillResult, HoleSpec
from ..canvas_text import Segment, TokenReader, best_first, split_plan
from .canvas import CanvasTooSmall, Row, layout
from .client import Aborted, Call, Client, Endpoint, HttpError, Unreachable

log = logging.getLogger(__name__)

TOKEN_ENV = "VLLM_API_KEY"     # the variable vLLM's own server reads for --api-key
POLL = 0.05                    # seconds between cancel checks while a fill waits for the server
RETRIES = 2                    # a fill retries a failed connection or a 502/503/504 this many times
BACKOFF = 0.25                 # seconds before the first retry, doubled for each next one
PROBE_TEXT = 'def f(x):\n    return {"a": x}  # ü€ 😀\n'


class VllmBackend:
    searches_lengths = True    # hole lengths are concurrent requests (vLLM batches them): the engine need not retry
    takes_instruction = False  # the model sees raw code, not a chat turn
    scores_text = False
    scores_options = False     # FillPlan.options are not scored
    adapts = False             # workspace adaptation changes local weights; these are on the server
    model_dir: Path | None = None  # the server's log-probabilities are tempered: the local calibration does not apply

    def __init__(self, client: Client, served: str, tokenizer, *, canvas_length: int, vocab_size: int,
                 max_model_len: int, default_steps: int, terminators: set[int], bos_id: int | None, pad_id: int):
        self.client = client
        self.served = served
        self.tokenizer = tokenizer
        self.canvas_length = canvas_length
        self.vocab_size = vocab_size
        self.max_model_len = max_model_len
        self.default_steps = default_steps
        self.reader = _Reader(tokenizer, terminators)
        self.bos_id = bos_id
        self.pad_id = pad_id
        self.name = f"diffusion_gemma@vllm:{served}"
        # prompt + canvas must fit the server's positions; twice the canvas keeps a multi-hole canvas within it
        self.max_positions = min(max_model_len, 2 * canvas_length)
        self.pool = cf.ThreadPoolExecutor(max_workers=8, thread_name_prefix="vllm-fill")
        self.counters = {"requests": 0, "retries": 0, "aborted": 0, "failed": 0, "canvas_tokens": 0}

    # -- loading ---------------------------------------------------------------------------------------------

    @classmethod
    def open(cls, url: str, load: LoadConfig, token: str | None = None,
             ssl_context: ssl.SSLContext | None = None,
             reread_token: Callable[[], str | None] | None = None) -> VllmBackend:
        try:
            endpoint = Endpoint.parse(url)
        except ValueError as exc:
            raise ModelLoadError(str(exc)) from None
        client = Client(endpoint, token if token is not None else os.environ.get(TOKEN_ENV) or None, ssl_context,
                        reread_token)
        if client.token and endpoint.scheme == "http" and not is_loopback(endpoint.host):
            log.warning("sending the vLLM bearer token to %s without TLS (use vllm+https://)", endpoint.host)
        local = LocalCheckpoint.read(load.model_dir())
        served, max_model_len = served_model(client, endpoint)
        check_diffusion(client, served, local.bos_or_pad)
        check_tokenizer(client, served, local.tokenizer, load.model_dir())
        canvas = endpoint.canvas or local.canvas_length
        backend = cls(client, served, local.tokenizer, canvas_length=canvas, vocab_size=local.vocab_size,
                      max_model_len=max_model_len, default_steps=local.steps, terminators=local.terminators,
                      bos_id=local.bos_id, pad_id=local.pad_id)
        log.info("using DiffusionGemma %r on vLLM at %s (canvas %d, %d positions, tokenizer from %s)",
                 served, endpoint.base, canvas, max_model_len, load.model_dir())
        return backend

    # -- the Backend protocol ------------------------------------------------------------------------------

    def load_weights(self, path: Path | None) -> None:
        raise NotImplementedError("a remote engine's weights are not replaced from here (adapts is False)")

    def count_tokens(self, text: str) -> int:
        return len(self.encode(text))

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False) if text else []

    def score_text(self, prefix: str, middle: str, suffix: str) -> float:
        raise NotImplementedError("DiffusionGemma on vLLM does not score text (scores_text is False)")

    def stats(self) -> dict[str, object]:
        return dict(self.counters)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)

    def fill(self, plan: FillPlan, control: Control) -> FillResult:
        prompt, segments = self.segments(plan)
        specs = [s.spec for s in segments if s.spec is not None]
        if not specs:
            return FillResult((), 0, 0, 0)
        control.check(0)
        room = self.max_model_len - len(prompt)
        try:
            rows = layout(segments, min(self.canvas_length, room), self.vocab_size)
        except CanvasTooSmall as exc:
            raise EngineError(f"{exc}; select less") from None
        answers = self.run([self.body(prompt, row, plan.steps) for row in rows], control)
        cands = self.candidates(rows, answers, specs)
        tokens = sum(len(c) for c in cands[0].confidences) if cands else 0
        return FillResult(tuple(cands), plan.steps, len(rows), tokens)

    # -- a fill's parts --------------------------------------------------------------------------------------

    def segments(self, plan: FillPlan) -> tuple[list[int], list[Segment]]:
        """The prompt ids (BOS, then the prefix) and the canvas pieces after it."""
        return split_plan(plan, self.encode, self.bos_id, self.pad_id)

    def body(self, prompt: list[int], row: Row, steps: int) -> dict[str, Any]:
        """One row's ``/v1/completions`` request (``CompletionRequest`` in vLLM's
        ``entrypoints/openai/completion/protocol.py``): one canvas, each slot back as an id with its log-prob."""
        xargs: dict[str, Any] = {"diffusion_seed_canvas": list(row.seed),
                                 "diffusion_canvas_length": row.width,
                                 "diffusion_max_steps": max(1, steps)}
        if row.pinned:
            xargs["diffusion_pinned"] = list(row.pinned)
        return {
            "model": self.served,
            "prompt": prompt,              # token ids: no second tokenization, BOS exactly as the local backend
            "max_tokens": row.width,       # one canvas, then the request ends
            "ignore_eos": True,            # an EOS in one hole must not cut the canvas (the holes after it)
            "logprobs": 0,                 # the committed token's log-probability at every slot
            "return_token_ids": True,
            "skip_special_tokens": False,
            "vllm_xargs": xargs,
        }

    def run(self, bodies: list[dict[str, Any]], control: Control) -> list[dict]:
        """Send every row at once; check for cancellation while waiting; abort them all on cancel or timeout."""
        calls = [self.client.call("POST", "/v1/completions", b) for b in bodies]
        futures = [self.pool.submit(self.attempt, c, control) for c in calls]
        deadline = time.monotonic() + self.client.timeout * (RETRIES + 1) + BACKOFF * 2 ** RETRIES
        try:
            while True:
                done, pending = cf.wait(futures, timeout=POLL, return_when=cf.FIRST_EXCEPTION)
                failed = next((f for f in done if f.exception() is not None), None)
                if failed is not None:
                    raise self.error(failed.exception())
                if not pending:
                    return [f.result() for f in futures]
                control.check(0)
                if time.monotonic() > deadline:
                    raise EngineError(f"vLLM at {self.client.endpoint.base} did not answer in time")
        except BaseException:
            self.counters["aborted"] += sum(1 for f in futures if not f.done())
            for c in calls:
                c.abort()
            for f in futures:
                f.cancel()
            raise

    def attempt(self, call: Call, control: Control) -> dict:
        """One row, retried after a failed connection or a gateway error, with backoff; a refused token is sent
        again once, at once, when the token file now holds another (``Client.token_refused``)."""
        reread = False
        for k in itertools.count():
            try:
                self.counters["requests"] += 1
                return call.run()
            except HttpError as exc:
                if exc.status != 401 or reread or not self.client.token_refused(call.token):
                    if not self._retry(exc, k):
                        raise
                    continue
                reread = True
            except Unreachable as exc:
                if not self._retry(exc, k):
                    raise
        raise AssertionError("unreachable")

    def _retry(self, exc: Unreachable | HttpError, k: int) -> bool:
        """Whether the ``k``-th failure ``exc`` is retried (after a backoff, slept here)."""
        retry = (isinstance(exc, Unreachable) and not exc.timed_out) or (
            isinstance(exc, HttpError) and exc.status in (502, 503, 504))
        if not retry or k >= RETRIES:
            return False
        self.counters["retries"] += 1
        time.sleep(BACKOFF * 2 ** k)  # the same Call again: an abort meanwhile stops the retry too
        return True

    def error(self, exc: BaseException | None) -> BaseException:
        base = self.client.endpoint.base
        self.counters["failed"] += 1
        if isinstance(exc, Unreachable):
            if exc.timed_out:
                return EngineError(f"vLLM at {base} did not answer: {exc}")
            return EngineError(f"vLLM at {base} is unreachable: {exc}")
        if isinstance(exc, HttpError):
            if exc.status == 401:
                return EngineError(f"vLLM at {base} refused the bearer token (HTTP 401): put the server's --api-key "
                                   f"in engineTokenFile (read again when refused)")
            return EngineError(f"vLLM at {base} rejected the fill: {exc}")
        if isinstance(exc, Aborted):
            return EngineError("the vLLM request was aborted")
        return exc if exc is not None else EngineError("unknown failure")

    def candidates(self, rows: list[Row], answers: list[dict], specs: list[HoleSpec]) -> list[Candidate]:
        """One candidate per row, best mean log-probability first; rows that read the same keep their best."""
        reads = []
        for row, answer in zip(rows, answers):
            ids, logp = canvas_of(answer, row.width, self.client.endpoint.base)
            self.counters["canvas_tokens"] += len(ids)
            reads.append([self.reader.read(ids[lo:hi], logp[lo:hi], spec) for (lo, hi), spec in zip(row.holes, specs)])
        return best_first(reads)


class _Reader(TokenReader):
    """Hole tokens read back (``canvas_text.TokenReader``): EOS and pad end a fill, as do ids past the tokenizer."""

    def __init__(self, tokenizer, terminators: set[int]):
        super().__init__(tokenizer)
        self.terminators, self.size = terminators, len(tokenizer)

    def is_terminator(self, token: int) -> bool:
        return token in self.terminators or token >= self.size


def canvas_of(answer: dict, width: int, base: str) -> tuple[list[int], list[float]]:
    """The committed canvas (``choices[0].token_ids``) and each slot's log-probability (``logprobs.token_logprobs``;
    0.0, i.e. confidence 1, where the server gives none)."""
    try:
        choice = answer["choices"][0]
        ids = [int(t) for t in choice["token_ids"]]
    except (KeyError, IndexError, TypeError, ValueError):
        raise EngineError(f"vLLM at {base} answered without the canvas's token_ids (is it vLLM >= 0.32?)") from None
    if len(ids) != width:
        raise EngineError(f"vLLM at {base} returned {len(ids)} canvas tokens, expected {width} "
                          "(is the served model a DiffusionGemma?)")
    lps = ((choice.get("logprobs") or {}).get("token_logprobs") or [])
    logp = [float(x) if isinstance(x, (int, float)) and math.isfinite(x) else 0.0 for x in lps[:width]]
    logp += [0.0] * (width - len(logp))
    return ids, logp


class LocalCheckpoint:
    """What the client reads from the local copy of the served checkpoint: config, generation config, tokenizer."""

    def __init__(self, config: dict, generation: dict, tokenizer):
        text = config.get("text_config") or {}
        self.tokenizer = tokenizer
        self.canvas_length = int(config.get("canvas_length") or 256)
        self.vocab_size = int(text.get("vocab_size") or len(tokenizer))
        self.steps = int(generation.get("max_denoising_steps") or 48)
        self.pad_id = first_id(tokenizer.pad_token_id, text.get("pad_token_id"), tokenizer.eos_token_id, 0)
        self.bos_id = first_id(tokenizer.bos_token_id, text.get("bos_token_id"))
        ids = set(tokenizer.all_special_ids) | {self.pad_id}
        for eos in (text.get("eos_token_id"), generation.get("eos_token_id"), tokenizer.eos_token_id):
            ids |= set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        self.terminators = {int(i) for i in ids if i is not None}

    @property
    def bos_or_pad(self) -> int:
        return self.bos_id if self.bos_id is not None else self.pad_id

    @classmethod
    def read(cls, path: Path) -> LocalCheckpoint:
        hint = ("the vLLM engine needs the model setting to name a local copy of the served checkpoint's "
                "config.json, generation_config.json and tokenizer files (the weights are not needed)")
        try:
            config = json.loads((path / "config.json").read_text())
        except FileNotFoundError:
            raise ModelLoadError(f"no config.json at {path}: {hint}") from None
        except (OSError, ValueError) as exc:
            raise ModelLoadError(f"unreadable {path / 'config.json'}: {exc}") from None
        if config.get("model_type") != "diffusion_gemma":
            raise ModelLoadError(f"{path} is a {config.get('model_type')!r} checkpoint, not DiffusionGemma: {hint}")
        try:
            generation = json.loads((path / "generation_config.json").read_text())
        except FileNotFoundError:
            generation = {}
        except (OSError, ValueError) as exc:
            raise ModelLoadError(f"unreadable {path / 'generation_config.json'}: {exc}") from None
        try:
            from transformers import AutoTokenizer
            tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True, trust_remote_code=False)
        except Exception as exc:  # the library fails in many ways on a broken directory; report each the same
            raise ModelLoadError(f"cannot load the tokenizer at {path}: {exc}") from exc
        return cls(config, generation, tokenizer)


def served_model(client: Client, endpoint: Endpoint) -> tuple[str, int]:
    """The served model's name and ``max_model_len`` from ``GET /v1/models``."""
    try:
        models = client.get("/v1/models")
    except Unreachable as exc:
        raise ModelLoadError(f"vLLM at {endpoint.base} is unreachable: {exc}") from None
    except HttpError as exc:
        if exc.status == 401:
            raise ModelLoadError(f"vLLM at {endpoint.base} wants a bearer token (its --api-key): set the token, "
                                 f"or {TOKEN_ENV}" if not client.token else
                                 f"vLLM at {endpoint.base} refused the bearer token (HTTP 401)") from None
        raise ModelLoadError(f"vLLM at {endpoint.base}: GET /v1/models failed: {exc}") from None
    cards = [c for c in models.get("data") or [] if isinstance(c, dict) and c.get("id")]
    names = [str(c["id"]) for c in cards]
    if endpoint.model is None and len(names) == 1:
        card = cards[0]
    else:
        card = next((c for c in cards if c["id"] == endpoint.model), {})
        if not card:
            raise ModelLoadError(f"vLLM at {endpoint.base} serves {names}, not {endpoint.model!r}: "
                                 "name one in the URL (vllm+http://host:port/NAME)" if endpoint.model else
                                 f"vLLM at {endpoint.base} serves {names}: name one in the URL")
    return str(card["id"]), int(card.get("max_model_len") or 2 ** 31)


def check_diffusion(client: Client, served: str, token_id: int) -> None:
    """A DiffusionGemma server rejects ``diffusion_canvas_length: 0`` at admission (``vllm/utils/diffusion.py``,
    called by the input processor when ``model_config.is_diffusion``); any other model ignores it and answers."""
    body = {"model": served, "prompt": [token_id], "max_tokens": 1, "vllm_xargs": {"diffusion_canvas_length": 0}}
    base = client.endpoint.base
    try:
        client.post("/v1/completions", body)
    except Unreachable as exc:
        raise ModelLoadError(f"vLLM at {base} is unreachable: {exc}") from None
    except HttpError as exc:
        if exc.status == 400 and "diffusion_canvas_length" in exc.message:
            return
        raise ModelLoadError(f"vLLM at {base}: the DiffusionGemma check failed: {exc}") from None
    raise ModelLoadError(f"the model {served!r} served by vLLM at {base} is not a DiffusionGemma "
                         "(it ignored the diffusion_* arguments)")


def check_tokenizer(client: Client, served: str, tokenizer, path: Path) -> None:
    """The local tokenizer must split text exactly as the server's (``POST /tokenize``)."""
    base = client.endpoint.base
    try:
        answer = client.post("/tokenize", {"model": served, "prompt": PROBE_TEXT, "add_special_tokens": False})
    except (Unreachable, HttpError) as exc:
        raise ModelLoadError(f"vLLM at {base}: POST /tokenize failed: {exc}") from None
    local = tokenizer.encode(PROBE_TEXT, add_special_tokens=False)
    if answer.get("tokens") != local:
        raise ModelLoadError(f"the tokenizer at {path} does not match the model served by vLLM at {base} "
                             f"({len(local)} tokens here, {len(answer.get('tokens') or [])} there for the same text)")


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def first_id(*ids):
    return next((int(i) for i in ids if i is not None), None)
