"""A stand-in for ``vllm serve`` of a DiffusionGemma checkpoint, built from vLLM 0.32's own code and contracts.

What is vLLM's: the request schema (every body is checked against ``CompletionRequest``'s JSON schema, and its
keys must be fields of it), the admission checks (``tests/vllm_0_32/diffusion.py``, a verbatim copy of
``vllm/utils/diffusion.py``), the response shape (checked against ``CompletionResponse``'s schema), the auth
middleware's 401 on ``/v1`` paths, the ``/v1/models`` and ``/tokenize`` answers, the abort on a client
disconnect (``with_cancellation``), and the per-step semantics of ``_compiled_sample_step`` in
``vllm/model_executor/models/diffusion_gemma.py`` for one request: the canvas starts from the seed, pinned
positions take their seed id after every step, accepted free positions keep the sample and the others are
re-noised, the request converges when the argmax canvas is stable and confident or at ``diffusion_max_steps``,
and the emitted canvas is the ARGMAX canvas (the model's argmax at pinned positions too), with each slot's
log-probability under the step's tempered logits.

What is not: the network. A toy "model" scores each free position from ``writer`` (the text the test wants
written into each hole) and each pinned position one id past its pin (so a client that read pinned slots back
would see the difference, as it could on a real server).
"""

from __future__ import annotations

import json
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import torch

from tests.vllm_0_32.diffusion import validate_diffusion_sampling_params
from tests.vllm_0_32.exceptions import VLLMValidationError

HERE = Path(__file__).parent / "vllm_0_32"
REQUEST_SCHEMA = json.loads((HERE / "completion_request.schema.json").read_text())
RESPONSE_SCHEMA = json.loads((HERE / "completion_response.schema.json").read_text())

Writer = Callable[[list[int], list[tuple[int, int]]], list[int]]   # (prompt ids, hole spans) -> W ids


def runs(free: list[bool]) -> list[tuple[int, int]]:
    """The [start, end) runs of free positions: the holes as the server could see them."""
    spans, start = [], None
    for i, f in enumerate(free + [False]):
        if f and start is None:
            start = i
        elif not f and start is not None:
            spans.append((start, i))
            start = None
    return spans


@dataclass
class FakeVllm:
    tokenizer: object
    served: str = "tiny-diffusion-gemma"
    canvas_length: int = 48
    vocab_size: int = 512
    max_model_len: int = 512
    generation: dict = field(default_factory=lambda: {"max_denoising_steps": 12, "t_min": 0.3, "t_max": 0.9,
                                                      "stability_threshold": 1, "confidence_threshold": 0.005,
                                                      "sampler_config": {"entropy_bound": 0.2}})
    api_key: str | None = None
    diffusion: bool = True                 # False: a plain LLM that ignores the diffusion_* arguments
    logprobs: bool = True                  # False: answer without log-probabilities
    hold: bool = False                     # True: never finish; wait for the client to go away
    tls: tuple[Path, Path] | None = None   # (certificate, key): serve https
    sock: socket.socket | None = None       # a bound socket to listen on (tests/ports.py's HeldPort), not port 0
    writer: Writer | None = None
    tokenize: Callable[[str], list[int]] | None = None
    bodies: list[dict] = field(default_factory=list)
    answers: list[dict] = field(default_factory=list)
    exchanges: list[tuple[dict, dict]] = field(default_factory=list)  # (body, answer) of each fill answered
    started: threading.Event = field(default_factory=threading.Event)   # a fill request began denoising
    aborted: threading.Event = field(default_factory=threading.Event)   # a client disconnect aborted one
    steps_run: list[int] = field(default_factory=list)

    # -- the server ------------------------------------------------------------------------------------------

    def __enter__(self) -> FakeVllm:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                self.route("GET")

            def do_POST(self):
                self.route("POST")

            def route(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.path.startswith("/v1") and fake.api_key is not None:
                    if self.headers.get("Authorization") != f"Bearer {fake.api_key}":
                        return self.answer(401, {"error": "Unauthorized"})
                body = json.loads(raw) if raw else None
                if method == "GET" and self.path == "/v1/models":
                    return self.answer(200, fake.models())
                if method == "POST" and self.path == "/tokenize":
                    return self.answer(200, fake.tokenize_answer(body))
                if method == "POST" and self.path == "/v1/completions":
                    try:
                        status, payload = fake.complete(body, self.connection)
                    except AssertionError as exc:  # a contract the client broke: say so in the answer
                        status, payload = 500, {"error": {"message": f"fake vLLM: {exc}", "type": "AssertionError",
                                                          "param": None, "code": 500}}
                    if status is None:
                        return None  # the client went away: nothing to answer
                    return self.answer(status, payload)
                return self.answer(404, {"detail": "Not Found"})

            def answer(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        if self.sock is None:
            self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        else:
            self.httpd = ThreadingHTTPServer(self.sock.getsockname(), Handler, bind_and_activate=False)
            self.httpd.socket.close()
            self.httpd.socket = self.sock
            self.httpd.server_activate()
        self.httpd.daemon_threads = True
        if self.tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*map(str, self.tls))
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def url(self, query: str = "", model: bool = True) -> str:
        scheme = "vllm+https" if self.tls else "vllm+http"
        return f"{scheme}://127.0.0.1:{self.port}" + (f"/{self.served}" if model else "") + query

    # -- endpoints -------------------------------------------------------------------------------------------

    def models(self) -> dict:
        return {"object": "list", "data": [{"id": self.served, "object": "model", "created": 0, "owned_by": "vllm",
                                            "root": self.served, "parent": None,
                                            "max_model_len": self.max_model_len, "permission": []}]}

    def tokenize_answer(self, body: dict) -> dict:
        text = body["prompt"]
        ids = self.tokenize(text) if self.tokenize else self.tokenizer.encode(
            text, add_special_tokens=body.get("add_special_tokens", True))
        return {"count": len(ids), "max_model_len": self.max_model_len, "tokens": ids, "token_strs": None}

    def error(self, exc: Exception, param: str | None = None) -> tuple[int, dict]:
        return 400, {"error": {"message": str(exc), "type": "BadRequestError", "param": param, "code": 400}}

    def complete(self, body: dict, conn: socket.socket) -> tuple[int | None, dict]:
        self.bodies.append(body)
        try:
            jsonschema.validate(body, REQUEST_SCHEMA)
        except jsonschema.ValidationError as exc:
            return 400, {"detail": [{"msg": exc.message, "loc": list(exc.path)}]}
        unknown = set(body) - set(REQUEST_SCHEMA["properties"])
        assert not unknown, f"not CompletionRequest fields (vLLM would only log and drop them): {unknown}"
        prompt = body["prompt"]
        assert isinstance(prompt, list) and all(isinstance(t, int) for t in prompt), "the client sends token ids"
        xargs = dict(body.get("vllm_xargs") or {})
        max_tokens = body.get("max_tokens", 16)
        if len(prompt) + max_tokens > self.max_model_len:
            return self.error(ValueError(f"This model's maximum context length is {self.max_model_len} tokens"))
        if not self.diffusion:  # a plain LLM: vllm_xargs is ignored, a completion comes back
            ids = [5] * max_tokens
            return 200, self.response(prompt, ids, [-1.0] * len(ids), body)
        params = SimpleNamespace(extra_args=xargs, max_tokens=max_tokens, ignore_eos=body.get("ignore_eos", False),
                                 logprob_token_ids=body.get("logprob_token_ids"))
        try:  # vLLM's admission check, as InputProcessor runs it for a diffusion model
            validate_diffusion_sampling_params(params, canvas_length=self.canvas_length, vocab_size=self.vocab_size)
        except VLLMValidationError as exc:
            return self.error(exc, exc.parameter)
        width = xargs.get("diffusion_canvas_length") or self.canvas_length
        seed = xargs.get("diffusion_seed_canvas")
        pins = set(xargs.get("diffusion_pinned") or [])
        assert seed is not None, "the client always seeds its canvas"
        assert params.max_tokens == width and params.ignore_eos, "one canvas, the whole canvas"
        steps = min(int(xargs.get("diffusion_max_steps") or 10 ** 9), self.generation["max_denoising_steps"])
        out = self.denoise(prompt, list(seed), pins, steps, conn)
        if out is None:
            return None, {}
        ids, logp = out
        answer = self.response(prompt, ids, logp, body)
        self.exchanges.append((body, answer))
        return 200, answer

    # -- one request's denoising, as _compiled_sample_step does it ------------------------------------------

    def logits(self, prompt: list[int], seed: list[int], pins: set[int]) -> torch.Tensor:
        W = len(seed)
        free = [i not in pins for i in range(W)]
        holes = runs(free)
        want = self.writer(prompt, holes) if self.writer else [1] * W
        target = [(seed[i] + 1) % self.vocab_size if i in pins else want[i] for i in range(W)]
        logits = torch.zeros(W, self.vocab_size)
        logits[torch.arange(W), torch.tensor(target)] = 12.0
        return logits

    def denoise(self, prompt, seed, pins, max_steps, conn) -> tuple[list[int], list[float]] | None:
        g = self.generation
        st = g["stability_threshold"] + 1
        T = g["max_denoising_steps"]
        W = len(seed)
        pin = torch.zeros(W, dtype=torch.bool)
        pin[list(pins)] = True
        seed_t = torch.tensor(seed)
        canvas = seed_t.clone()                  # apply_seed_canvases: the seed replaces the random canvas
        gen = torch.Generator().manual_seed(len(self.bodies))
        history: list[torch.Tensor] = []
        self.started.set()
        step = 0
        while True:
            if self.gone(conn):                  # with_cancellation: http.disconnect cancels the handler; abort
                self.aborted.set()
                return None
            if self.hold:
                time.sleep(0.01)
                continue
            logits = self.logits(prompt, canvas.tolist(), pins)
            temp = g["t_min"] + (g["t_max"] - g["t_min"]) * max(T - step, 1) / T
            scaled = logits / temp
            logprobs = scaled.log_softmax(-1)
            entropy = -(logprobs.exp() * logprobs).sum(-1)
            argmax = scaled.argmax(-1)
            gumbel = -torch.log(-torch.log(torch.rand(scaled.shape, generator=gen).clamp_min(1e-20)))
            sample = (scaled + gumbel).argmax(-1)
            sorted_ent, order = entropy.sort()
            accept = torch.zeros(W, dtype=torch.bool)
            accept[order] = (sorted_ent.cumsum(0) - sorted_ent.cummax(0).values) <= g["sampler_config"]["entropy_bound"]
            noise = torch.randint(0, self.vocab_size, (W,), generator=gen)
            canvas = torch.where(pin, seed_t, torch.where(accept, sample, noise))
            step += 1
            history = (history + [argmax])[-st:]
            stable = len(history) >= st and all(torch.equal(history[0], h) for h in history[1:])
            confident = bool(entropy.mean() < g["confidence_threshold"])
            if (stable and confident) or step >= max_steps:
                self.steps_run.append(step)
                lp = logprobs.gather(-1, argmax[:, None]).squeeze(-1)
                return argmax.tolist(), lp.tolist()

    @staticmethod
    def gone(conn: socket.socket) -> bool:
        readable, _, _ = select.select([conn], [], [], 0)
        if not readable:
            return False
        if isinstance(conn, ssl.SSLSocket):  # the client sends nothing more before the answer: readable is gone
            return True
        try:
            return conn.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def response(self, prompt: list[int], ids: list[int], logp: list[float], body: dict) -> dict:
        tokens = [self.tokenizer.decode([t]) for t in ids]
        logprobs = None
        if body.get("logprobs") is not None:
            offsets = [0]
            for t in tokens[:-1]:
                offsets.append(offsets[-1] + len(t))
            logprobs = {"text_offset": offsets, "tokens": tokens,
                        "token_logprobs": [x if self.logprobs else None for x in logp],
                        "top_logprobs": [{tok: x} if self.logprobs else None for tok, x in zip(tokens, logp)]}
        answer = {
            "id": f"cmpl-{len(self.bodies)}", "object": "text_completion", "created": 0, "model": self.served,
            "choices": [{"index": 0, "text": "".join(tokens), "logprobs": logprobs, "finish_reason": "length",
                         "stop_reason": None, "prompt_logprobs": None,
                         "token_ids": ids if body.get("return_token_ids") else None,
                         "prompt_token_ids": prompt if body.get("return_token_ids") else None,
                         "routed_experts": None}],
            "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(ids),
                      "total_tokens": len(prompt) + len(ids), "prompt_tokens_details": None},
        }
        jsonschema.validate(answer, RESPONSE_SCHEMA)
        self.answers.append(answer)
        return answer


def hole_writer(tokenizer, texts: list[str], eos: int) -> Writer:
    """A writer that puts ``texts[k]`` (then EOS) into the k-th hole of every canvas."""
    def write(prompt: list[int], holes: list[tuple[int, int]]) -> list[int]:
        width = max((hi for _, hi in holes), default=0)
        out = [eos] * (width + 4096)
        for (lo, hi), text in zip(holes, texts):
            ids = tokenizer.encode(text, add_special_tokens=False)[:hi - lo]
            out[lo:lo + len(ids)] = ids
        return out
    return write
