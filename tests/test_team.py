"""The remote engine and the team server without Ray: the wire format, batched denoising, the protocol served by
the plain HTTP app in this process (same completions as a local model, drafts, cancellation, token, TLS, an
engine that goes away and comes back). The Ray Serve deployment runs the end-to-end suite (tests/conftest.py)."""

import asyncio
import datetime
import ipaddress
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("starlette", reason="the team server needs ray[serve] (starlette, uvicorn): pip install -e .[team]")
pytest.importorskip("uvicorn", reason="the team server needs ray[serve] (starlette, uvicorn): pip install -e .[team]")

from engine import (Cancelled, Engine, EngineChanged, EngineConfig, EngineError, EngineState, EngineUnreachable,
                    HoleKind, InfillRequest, ModelLoadError)
from engine.backends import open_remote
from engine.backends.base import Candidate, Control, FillPlan, FillResult, HoleSpec
from engine.backends.remote import wire
from engine.backends.remote.client import TOKEN_ENV
from engine.config import LoadConfig
from engine.team.app import PlainServer, check_bind, make_app
from engine.team.service import Collector, Denoiser, Job
from benchmarks.lsp_client import LspClient
from lsp_server.settings import parse_settings
from tests.ports import HeldPort

CODE = "import os\n\n\ndef list_python_files(root):\n    result = []\n    for name in os.listdir(root):\n        \n    return result\n"
CURSOR = CODE.index("        \n") + 8
SECRET = "zq_unmistakable_name"  # a document's text that must never reach a log
PLANS = [
    FillPlan(("def add(a, b):\n    ", HoleSpec(8, True), "\n\nprint(add(1, 2))\n"), 16, 0.0),
    FillPlan(("import os\n\nfor name in os.listdir('.'):\n    ", HoleSpec(24, True), "\n"), 16, 0.0,
             options=("print(name)\n", "import os\n", "x" * 300)),
    FillPlan(("class A:\n    def __init__(self, x):\n        ", HoleSpec(24), "\n\n    def get(self):\n        "
              "return self.x\n"), 12, 0.0),
    FillPlan(("x = [1, 2, 3]\ny = ", HoleSpec(8, True), "\nprint(y)\n", HoleSpec(8, True), "\n"), 8, 0.0),
]



def listening_port(proc: subprocess.Popen) -> int:
    """The port a ``serve --plain --port 0`` took, from the line it prints once it listens (a port chosen here,
    closed and handed over, could be taken by another process meanwhile)."""
    line = proc.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    assert found, proc.stderr.read() if proc.poll() is not None else line
    return int(found.group(1))

def never(step: int) -> None:
    return None


def same(a, b) -> bool:
    """The same fill: texts, spans and counts exactly; the per-token confidences (rounded to 4 places) and the mean
    log-confidence up to float rounding (a batched matmul sums in another order, which can put a confidence on
    the other side of a rounding boundary: 0.2383 against 0.2384)."""
    strip = [(c.texts, c.token_spans) for c in a.candidates]
    return (strip == [(c.texts, c.token_spans) for c in b.candidates]
            and all(len(p) == len(q) and all(abs(x - y) <= 2e-4 for x, y in zip(p, q))
                    for c, d in zip(a.candidates, b.candidates) for p, q in zip(c.confidences, d.confidences))
            and (a.steps, a.forwards, a.tokens) == (b.steps, b.forwards, b.tokens)
            and all(abs(x.score - y.score) < 1e-4 for x, y in zip(a.candidates, b.candidates))
            and same_options(a.options, b.options))


def same_options(a, b) -> bool:
    """The same scored options: texts and spans exactly, probabilities and scores up to float rounding."""
    if len(a) != len(b) or [o is None for o in a] != [o is None for o in b]:
        return False
    pairs = [(x, y) for x, y in zip(a, b) if x is not None]
    return all(x.texts == y.texts and x.token_spans == y.token_spans and abs(x.score - y.score) < 1e-4
               and all(abs(p - q) < 1e-4 for p, q in zip(x.confidences[0], y.confidences[0])) for x, y in pairs)


@pytest.fixture(scope="module")
def denoiser():
    import torch
    torch.set_num_threads(1)
    return Denoiser.load(LoadConfig())


@pytest.fixture(scope="module")
def server(denoiser):
    plain = PlainServer(make_app(denoiser)).start()
    yield plain
    plain.stop()


def engine_for(url: str, **settings) -> Engine:
    engine = Engine(EngineConfig.of(engine=url, min_confidence=0, **settings))
    try:
        engine.start().result(60)
    except (ModelLoadError, EngineUnreachable):
        pass
    return engine


def test_the_wire_format_round_trips_and_refuses_what_it_cannot_read():
    for plan in PLANS + [FillPlan(("a", HoleSpec(4, init="b = 1"), "c"), 3, 0.5, "make it shorter")]:
        assert wire.plan_from_json(wire.plan_json(plan)) == plan
    scored = Candidate(("x = 1\n",), ((0.5, 0.25),), (((0, 2), (2, 6)),), -1.04)
    result = FillResult((scored,), 3, 3, 2, (None, scored))
    assert wire.result_from_json(wire.result_json(result)) == result
    old = wire.plan_json(PLANS[0])
    del old["options"]                                    # a client from before options: none
    assert wire.plan_from_json(old).options == ()
    with pytest.raises(wire.WireError):
        wire.plan_from_json({**old, "options": ["a"] * (wire.MAX_OPTIONS + 1)})
    for bad in [None, {"pieces": "x", "steps": 1}, {"pieces": [{"hole": {"max_tokens": 0}}], "steps": 4},
                {"pieces": [{"text": 3}], "steps": 4}, {"pieces": [], "steps": True}, {"pieces": [], "steps": 0},
                {"pieces": [], "steps": 4, "options": "print(x)"}, {"pieces": [], "steps": 4, "options": [3]}]:
        with pytest.raises(wire.WireError):
            wire.plan_from_json(bad)
    with pytest.raises(wire.WireError):
        wire.result_from_json({"candidates": [{}]})


@pytest.mark.parametrize("kv_cache", [True, False])
def test_a_batch_of_plans_gives_what_each_gives_alone(denoiser, kv_cache):
    backend = denoiser.backend
    backend.kv_cache, kept = kv_cache, backend.kv_cache
    try:
        alone = []
        for plan in PLANS:
            backend._prefix = None  # no reuse of the previous fill's prefix: the batch starts fresh too
            alone.append(backend.fill(plan, Control(never)))
        together = backend.fill_many(PLANS, [Control(never) for _ in PLANS])
    finally:
        backend.kv_cache = kept
    assert all(same(t, a) for t, a in zip(together, alone)) and len(together) == len(alone)


def test_a_cancelled_plan_leaves_its_batch_and_the_others_finish(denoiser):
    backend = denoiser.backend

    def stop_at_3(step: int) -> None:
        if step >= 3:
            raise Cancelled(step)
    controls = [Control(never), Control(stop_at_3), Control(never)]
    results = backend.fill_many(PLANS[:3], controls)
    backend._prefix = None
    assert isinstance(results[1], Cancelled) and results[1].step == 3
    assert same(results[0], backend.fill(PLANS[0], Control(never)))


async def test_the_server_runs_jobs_as_one_batch(denoiser):
    loop = asyncio.get_running_loop()
    jobs = [Job(f"j{i}", plan, drafts=i == 0, loop=loop) for i, plan in enumerate(PLANS)]
    before = denoiser.stats()
    await asyncio.to_thread(denoiser.run_batch, jobs)
    after = denoiser.stats()
    assert after["largest_batch"] == len(PLANS) and after["batches"] == before["batches"] + 1
    finals = []
    for job in jobs:
        events = []
        while not events or events[-1]["event"] not in ("result", "error"):
            events.append(await job.events.get())
        assert all(e["event"] == "step" for e in events[:-1]) and len(events) > 1
        finals.append(wire.result_from_json(events[-1]["result"]))
    denoiser.backend._prefix = None
    assert same(finals[2], denoiser.backend.fill(PLANS[2], Control(never)))


def test_a_remote_engine_answers_as_the_local_model_does(server, caplog):
    caplog.set_level(logging.DEBUG)
    remote, local = engine_for(server.url), Engine(EngineConfig.of(min_confidence=0))
    local.start().result(60)
    try:
        assert remote.state is EngineState.READY, remote.error
        assert remote.backend.count_tokens(CODE) == local.backend.count_tokens(CODE)  # the tokenizer came along
        assert remote.backend.model_dir is not None  # and the calibration
        text = CODE.replace("root", SECRET)
        drafts = []
        got = remote.infill_sync(InfillRequest(text, CURSOR + len(text) - len(CODE), "python"), drafts.append)
        want = local.infill_sync(InfillRequest(text, CURSOR + len(text) - len(CODE), "python"))
        assert got.fills == want.fills and got.steps == want.steps and drafts
        assert [d.step for d in drafts] == sorted(d.step for d in drafts)
        # the document's lines are scored on the server too (engine/doclines.py)
        assert remote.backend.scores_options
        typed = "def f(path):\n    full = os.path.join(path, 'a.ini')\n    return full\n\n\ndef g(path):\n    full = os.pa"
        got = remote.infill_sync(InfillRequest(typed + "\n", len(typed), "python"))
        want = local.infill_sync(InfillRequest(typed + "\n", len(typed), "python"))
        copies = [(f.text, f.confidence) for f in want.considered if f.copied]
        assert copies and copies == [(f.text, f.confidence) for f in got.considered if f.copied]
    finally:
        remote.close()
        local.close()
    assert SECRET not in caplog.text  # no document text in the client's or the server's log


def test_a_body_over_the_limit_is_refused_unread_with_413(server):
    """A huge body (a client's bug, or anyone's) was read whole into memory, then tokenized under the model's lock
    (a 12 MB text held every client's fills for 48 s and the server's memory grew by gigabytes). A body over
    ``wire.MAX_BODY`` is refused with 413 and a message, whether its length is declared or it comes chunked."""
    import http.client

    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as s:
        s.sendall(b"POST /v1/tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000000\r\n\r\n{\"text\": \"")
        answer = b""
        while b"}" not in answer and (part := s.recv(4096)):
            answer += part
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413")
    assert json.loads(body) == {"error": f"a body of 100,000,000,000 bytes is over the {wire.MAX_BODY:,} a request may "
                                         f"have"}

    def chunks():
        yield b'{"text": "'
        for _ in range(wire.MAX_BODY // (1 << 20) + 1):
            yield b"x" * (1 << 20)
        yield b'"}'

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    conn.request("POST", "/v1/tokenize", body=chunks(), encode_chunked=True)
    response = conn.getresponse()
    assert response.status == 413
    assert json.loads(response.read()) == {"error": f"a body over the {wire.MAX_BODY:,} bytes a request may have"}
    conn.close()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    conn.request("POST", "/v1/tokenize", json.dumps({"text": "x = 1\n"}))
    assert json.loads(conn.getresponse().read())["count"] > 0   # and the server serves on
    conn.close()


def test_a_score_in_a_huge_document_sends_only_the_context_the_engine_reads(server, denoiser):
    """A fix-syntax repair is scored in its whole document: the client sent all of it to /v1/score (a 5 MB file:
    5 MB per candidate scored, and 11 s of the server's model lock for each, while another editor's 0.3 s fill
    waited 10.4 s). Only the windows the scorer reads travel now, and the score is the whole document's."""
    from engine.backends.remote.client import RemoteBackend

    block = "".join(f"def helper_{i}(values, offset):\n    total = sum(values) + offset * {i}\n    return total\n\n\n"
                    for i in range(100))
    text = block * (1_000_000 // len(block))
    at = text.index("def helper_", len(text) // 2)
    prefix, middle, suffix = text[:at], "def broken(x):", "\n    return x\n" + text[at:]
    remote = RemoteBackend(server.url, LoadConfig(engine=server.url))
    sent: list[int] = []
    call = remote._call
    remote._call = lambda method, path, body=None, check=None: sent.append(len(json.dumps(body))) or call(
        method, path, body, check)
    try:
        got = remote.score_text(prefix, middle, suffix)
    finally:
        remote.close()
    assert len(sent) == 1 and sent[0] < 20_000, sent   # before: 1,048,756 bytes (the whole document)
    assert abs(got - denoiser.score(prefix, middle, suffix)) < 1e-3


def test_a_repair_on_a_line_longer_than_the_positions_is_ranked_by_the_parser_as_with_a_local_model(server):
    """A syntax repair on a line over the model's positions: a local model raises TextTooLong and the parser's order
    stands (the fix is offered). The team server answered /v1/score with HTTP 500 "Internal Server Error" (a
    traceback in its log), the client raised a plain EngineError, and the fix was not offered at all. The server
    now answers 422 with the reason, and the client raises TextTooLong, as a local backend does."""
    from engine.repair import Repair, rank
    from engine.requests import TextTooLong

    line = "    if x > " + " + ".join(["1"] * 3000)
    text = "def f(x):\n" + line + "\n        return x\n"
    at = len("def f(x):\n") + len(line)
    repairs = [Repair(at - 1, at - 1, ")", 1), Repair(at, at, ":", 1, hinted=True)]
    remote = open_remote(server.url, LoadConfig(engine=server.url))
    try:
        with pytest.raises(TextTooLong, match="exceeds the model's 1024 positions"):
            remote.score_text("", line, "")
        assert rank(text, repairs, remote.score_text) == rank(text, repairs) == repairs[::-1]
        assert remote.score_text("x = 1\n", "y = x\n", "") < 0   # and it scores on
    finally:
        remote.close()


def test_a_body_nested_too_deeply_is_refused_with_400_and_the_server_serves_on(server, caplog):
    """``[`` 100,000 times (a client's bug, or anyone's) made Python's JSON decoder recurse past its limit: every POST
    endpoint answered HTTP 500 with a traceback in the server's log. It is a 400 saying why, and nothing is logged."""
    import http.client

    deep = 100_000
    for path in ("fill", "score", "tokenize", "cancel"):
        for body in ("[" * deep, "[" * deep + "]" * deep, '{"version": 1, "id": ' + "[" * deep + "]" * deep + "}"):
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
            conn.request("POST", f"/v1/{path}", body)
            response = conn.getresponse()
            answer = response.read().decode()
            conn.close()
            assert response.status == 400, (path, body[:20], answer)
            assert json.loads(answer) == {"error": "the body is not JSON this server reads: it is nested too deeply"}
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    conn.request("POST", "/v1/tokenize", json.dumps({"text": "x = 1\n"}))
    assert json.loads(conn.getresponse().read())["count"] > 0   # and the server serves on
    conn.close()


def test_a_plan_the_model_cannot_run_is_refused_up_front_naming_the_field(server):
    """A plan with no hole was answered 200 and then an 'invalid' event leaking "min() arg is an empty sequence"; a
    canvas over the model's positions was accepted and then failed; a NaN, infinite or negative threshold was run.
    Each is refused with HTTP 400 before the stream starts, naming the field, and a client says the server's words."""
    import http.client

    hole = {"hole": {"max_tokens": 4}}
    for plan, says in (({"pieces": [{"text": "x = "}], "steps": 4}, "plan.pieces has no hole"),
                       ({"pieces": [{"text": "x = 1\n" * 2000}, hole], "steps": 4},
                        "over the model's 1024 positions"),
                       ({"pieces": [{"text": "x = "}, hole], "steps": 4, "threshold": float("nan")},
                        "plan.threshold must be a finite number >= 0, not nan"),
                       ({"pieces": [{"text": "x = "}, hole], "steps": 4, "threshold": float("inf")},
                        "plan.threshold must be a finite number >= 0, not inf"),
                       ({"pieces": [{"text": "x = "}, hole], "steps": 4, "threshold": 10 ** 400},
                        "plan.threshold must be a finite number >= 0"),
                       ({"pieces": [{"text": "x = "}, hole], "steps": 4, "threshold": -0.5},
                        "plan.threshold must be a finite number >= 0, not -0.5")):
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        conn.request("POST", "/v1/fill", json.dumps({"version": wire.VERSION, "id": "bad", "plan": plan}))
        response = conn.getresponse()
        answer = response.read().decode()
        conn.close()
        assert response.status == 400 and says in json.loads(answer)["error"], (plan.get("threshold"), answer)
    backend = open_remote(server.url, LoadConfig())
    try:
        with pytest.raises(EngineError) as refused:
            backend.fill(FillPlan(("x = 1\n" * 2000, HoleSpec(8)), 4, 0.0), Control(never))
        assert str(refused.value) == (f"the engine at {server.url} answered HTTP 400: plan: its texts and holes take "
                                      f"8000 tokens or more, over the model's 1024 positions")
        assert backend.fill(FillPlan(("x = ", HoleSpec(4), "\n"), 4, 0.0), Control(never)).steps > 0
    finally:
        backend.close()


def test_a_cancelled_job_stops_on_the_server(server, denoiser):
    engine = engine_for(server.url)
    before = denoiser.stats()["cancelled"]
    first = []
    job = engine.submit(InfillRequest(CODE, CURSOR, "python", steps=400, max_tokens=64), first.append)
    deadline = time.monotonic() + 60
    while not first and time.monotonic() < deadline:
        time.sleep(0.01)
    job.cancel()
    with pytest.raises(Cancelled):
        job.future.result(60)
    while denoiser.stats()["cancelled"] == before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert denoiser.stats()["cancelled"] == before + 1 and denoiser.stats()["running"] == 0
    engine.close()


def test_a_token_is_required_and_accepted(denoiser, tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    guarded = PlainServer(make_app(denoiser, "s3cret-token"), token="s3cret-token").start()
    try:
        refused = engine_for(guarded.url)
        assert refused.state is EngineState.FAILED and "token" in refused.error
        token_engine = engine_for(guarded.url, engine_token_file=str(token))
        assert token_engine.state is EngineState.READY
        assert token_engine.infill_sync(InfillRequest(CODE, CURSOR, "python")).steps > 0
        token_engine.close()
    finally:
        guarded.stop()


def test_a_token_rotated_in_its_file_while_the_session_runs_is_used_without_a_restart(denoiser, tmp_path):
    """The team's token was changed (the server restarted with a new one, the file rewritten): the client kept
    sending the token it read at connect, and every request failed with "refused the token (set engineTokenFile)"
    although engineTokenFile already held the right one, until the editor restarted. A refused token is now read
    again from the file and the request sent once more with it."""
    token = tmp_path / "token"
    token.write_text("first-token\n")
    held = HeldPort()
    first = PlainServer(make_app(denoiser, "first-token"), token="first-token", sock=held.socket()).start()
    engine = engine_for(first.url, engine_token_file=str(token), engine_retries=0)
    try:
        assert engine.state is EngineState.READY, engine.error
        assert engine.infill_sync(InfillRequest(CODE, CURSOR, "python")).steps > 0
        first.stop()
        held.down()
        again = PlainServer(make_app(denoiser, "second-token"), token="second-token", sock=held.socket()).start()
        try:
            with pytest.raises(EngineError, match="refused the token"):   # the file not rewritten yet
                engine.infill_sync(InfillRequest(CODE, CURSOR, "python"))
            token.write_text("second-token\n")
            assert engine.infill_sync(InfillRequest(CODE, CURSOR, "python")).steps > 0
            assert engine.state is EngineState.READY
        finally:
            again.stop()
    finally:
        engine.close()
        held.close()


def _self_signed(tmp_path):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    certfile, keyfile = tmp_path / "cert.pem", tmp_path / "key.pem"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return str(certfile), str(keyfile)


def test_a_token_file_with_a_byte_order_mark_works_and_one_that_cannot_be_sent_says_so(denoiser, tmp_path):
    """A token file saved with a UTF-8 BOM (Windows editors) holds the token, on both sides; a file whose token could
    never travel in a header (two lines, not text) is an error naming the file, never 'the engine is unreachable'."""
    bom, plain, lines, binary = (tmp_path / n for n in ("bom", "plain", "lines", "binary"))
    bom.write_bytes(b"\xef\xbb\xbfs3cret-token\r\n")
    plain.write_text("s3cret-token\n")
    lines.write_text("s3cret\ntoken\n")
    binary.write_bytes(b"\xb7\x00\xff")
    guarded = PlainServer(make_app(denoiser, "s3cret-token"), token="s3cret-token").start()
    try:
        engine = engine_for(guarded.url, engine_token_file=str(bom))
        assert engine.state is EngineState.READY, engine.error
        assert engine.infill_sync(InfillRequest(CODE, CURSOR, "python")).steps > 0
        engine.close()
        for path, says in ((lines, "one word of visible ASCII"), (binary, "is not text")):
            engine = engine_for(guarded.url, engine_token_file=str(path))
            assert engine.state is EngineState.FAILED and says in engine.error and str(path) in engine.error
            assert "unreachable" not in engine.error
            engine.close()
    finally:
        guarded.stop()
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV} | {"OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-m", "lsp_server", "serve", "--plain", "--port", "0", "--token-file",
                          str(lines)], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode != 0 and "one word of visible ASCII" in out.stderr and "Traceback" not in out.stderr
    proc = subprocess.Popen([sys.executable, "-m", "lsp_server", "serve", "--plain", "--port", "0",
                             "--token-file", str(bom)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    try:
        port = listening_port(proc)
        engine = engine_for(f"http://127.0.0.1:{port}", engine_token_file=str(plain))
        assert engine.state is EngineState.READY, engine.error    # the server's token is the file's, BOM or not
        engine.close()
    finally:
        proc.terminate()
        proc.wait(60)


def test_tls_with_a_certificate_the_client_is_told_to_trust(denoiser, tmp_path):
    certfile, keyfile = _self_signed(tmp_path)
    tls = PlainServer(make_app(denoiser), certfile=certfile, keyfile=keyfile).start()
    try:
        assert tls.url.startswith("https://")
        untrusted = engine_for(tls.url, engine_retries=0)
        assert untrusted.state is EngineState.FAILED and "certificate" in untrusted.error
        trusted = engine_for(tls.url, engine_ca_file=certfile)
        assert trusted.state is EngineState.READY
        assert trusted.infill_sync(InfillRequest(CODE, CURSOR, "python")).steps > 0
        trusted.close()
    finally:
        tls.stop()


def test_a_fill_cancelled_while_the_engine_sends_nothing_stops_without_waiting_for_the_timeout(denoiser):
    """An engine whose queue holds the fill (a replica's batch queue full) sends nothing after its start event: a
    cancel must end the wait (and the job on the server) there and then, not after engine_timeout per attempt, while
    the user's next requests queue behind it on the engine thread."""
    import threading

    arrived: list[Job] = []
    got = threading.Event()

    async def held(job: Job) -> None:   # the job is taken and never run: the stream waits, as behind a full queue
        arrived.append(job)
        got.set()

    server = PlainServer(make_app(denoiser, submit=held)).start()
    engine = engine_for(server.url, engine_timeout=300, engine_retries=2)
    try:
        assert engine.state is EngineState.READY, engine.error
        job = engine.submit(InfillRequest(CODE, CURSOR, "python", key="doc"))
        assert got.wait(60)
        job.cancel()
        with pytest.raises(Cancelled):
            job.future.result(120)   # a guard against a hang, not a timing: the timeout is 300 s per attempt
        assert arrived[0].cancelled.wait(60)   # the server saw its client go
        stats = engine.stats()
        assert stats["remote_cancels"] == 1 and stats["remote_retries"] == 0 and stats["remote_failures"] == 0
        assert engine.state is EngineState.READY
    finally:
        engine.close()
        server.stop()


@pytest.mark.parametrize("event", [
    {"event": "step", "step": "three"},
    {"event": "step", "step": 1, "texts": 5, "confidences": [], "pieces": []},
    {"event": "result", "result": "a text, not a result"},
    {"event": "result", "result": {"candidates": [{"texts": ["x"]}], "steps": 1, "forwards": 1, "tokens": 1}},
])
def test_an_event_the_engine_garbles_is_its_error_not_an_internal_one(denoiser, event, caplog):
    """A malformed event is the engine's fault, said once as such: not 'internal error' with a traceback in the
    editor's log, as a bug of this client would be; the engine stays ready for the next fill."""
    async def garbled(job: Job) -> None:
        job.finish(event)

    server = PlainServer(make_app(denoiser, submit=garbled)).start()
    engine = engine_for(server.url, engine_retries=0)
    try:
        assert engine.state is EngineState.READY, engine.error
        with caplog.at_level(logging.ERROR, logger="engine"):
            with pytest.raises(EngineError) as raised:
                engine.infill_sync(InfillRequest(CODE, CURSOR, "python"), on_draft=lambda d: None)
        assert "sent a malformed event" in str(raised.value) and "internal error" not in str(raised.value)
        assert not [r for r in caplog.records if r.exc_info]
        assert engine.state is EngineState.READY
    finally:
        engine.close()
        server.stop()


def test_an_engine_that_goes_away_is_reported_and_comes_back(denoiser):
    held = HeldPort()   # the port stays this test's while no server listens on it
    first = PlainServer(make_app(denoiser), sock=held.socket()).start()
    engine = engine_for(first.url, engine_retries=1)
    states = []
    engine.on_state(lambda state, error: states.append((state, error)))
    assert engine.state is EngineState.READY
    first.stop()
    held.down()
    with pytest.raises(EngineUnreachable, match="unreachable"):
        engine.infill_sync(InfillRequest(CODE, CURSOR, "python"))
    assert engine.state is EngineState.UNREACHABLE and engine.stats()["remote_retries"] >= 1
    again = PlainServer(make_app(denoiser), sock=held.socket()).start()
    try:
        assert engine.infill_sync(InfillRequest(CODE, CURSOR, "python")).steps > 0
        assert engine.state is EngineState.READY
        assert [s for s, _ in states] == [EngineState.UNREACHABLE, EngineState.READY]
    finally:
        engine.close()
        again.stop()
        held.close()


def test_the_first_request_after_the_engine_restarted_is_not_an_outage(denoiser):
    """The client sent its first request after a team server restart on the connection the old server had closed:
    with engineRetries 0 it failed as 'unreachable (BrokenPipeError ...)' and the editor was told of an outage while
    the engine was up (with retries, it cost a backoff and a counted retry). A kept-alive connection the engine
    closed is now replaced before it is used."""
    held = HeldPort()
    first = PlainServer(make_app(denoiser), sock=held.socket()).start()
    engine = engine_for(first.url, engine_retries=0)
    try:
        assert engine.infill_sync(InfillRequest(CODE, CURSOR, "python")).steps > 0
        first.stop()
        held.down()
        again = PlainServer(make_app(denoiser), sock=held.socket()).start()
        try:
            assert engine.infill_sync(InfillRequest(CODE, CURSOR, "python")).steps > 0
            assert engine.state is EngineState.READY and engine.stats()["remote_failures"] == 0
        finally:
            again.stop()
    finally:
        engine.close()
        held.close()


def test_a_team_server_that_now_serves_another_model_is_engine_changed_and_info_is_read_again(denoiser):
    """What a client read from /v1/info at connect (tokenizer, positions, calibration, decoding, model) was kept for
    good, whatever the server at that address served later. Each request now carries the digest the client
    connected to: a server serving another refuses it (HTTP 409), a stream's first event and an answer state theirs,
    and the client raises EngineChanged; the engine fails that job, reads /v1/info again before the next, and says
    what the server now serves, once."""
    import http.client
    import threading

    held = HeldPort()
    first = PlainServer(make_app(denoiser), sock=held.socket()).start()
    remote = open_remote(first.url, LoadConfig(engine_retries=0))
    engine = engine_for(first.url, engine_retries=0)
    notices: list[str] = []
    engine.on_notice(notices.append)
    other = Denoiser(denoiser.backend, "another-model")   # the same weights, another name: another digest
    other.lock = denoiser.lock
    try:
        info = _get(first.url + "/v1/info")
        assert remote.digest == info["digest"] == wire.info_digest(info) == engine.stats()["remote_digest"]
        assert other.info()["digest"] != info["digest"]
        assert engine.infill_sync(InfillRequest(CODE, CURSOR, "python")).steps > 0
        first.stop()
        held.down()
        again = PlainServer(make_app(other), sock=held.socket()).start()
        try:
            with pytest.raises(EngineChanged, match="now serves another-model, not the model it served when this "
                                                    "editor connected \\(embedded\\)") as changed:
                remote.fill(PLANS[0], Control(never))
            assert changed.value.model == "another-model"
            with pytest.raises(EngineChanged):
                remote.score_text("def f():\n", "    return 1\n", "")
            remote.digest = None   # connected to a server from before digests: nothing sent to refuse, and the
            with pytest.raises(EngineChanged):   # stream's first event states another digest
                remote.fill(PLANS[0], Control(never))
            # an old client, which sends no digest, is served as before
            conn = http.client.HTTPConnection("127.0.0.1", again.port, timeout=120)
            conn.request("POST", "/v1/fill", json.dumps({"version": wire.VERSION, "id": "old",
                                                         "plan": wire.plan_json(PLANS[0])}))
            events = [json.loads(line) for line in conn.getresponse().read().splitlines()]
            assert events[0]["digest"] == other.info()["digest"] and events[-1]["event"] == "result"
            conn.close()

            ready = threading.Event()
            engine.on_state(lambda state, error: state is EngineState.READY and ready.set())
            with pytest.raises(EngineChanged):   # the job that met the change fails: it ran on the old info
                engine.infill_sync(InfillRequest(CODE, CURSOR, "python"))
            assert ready.wait(120) and engine.state is EngineState.READY
            assert engine.stats()["remote_model"] == "another-model"
            assert engine.stats()["remote_digest"] == other.info()["digest"]
            assert engine.infill_sync(InfillRequest(CODE, CURSOR, "python")).steps > 0
            assert notices == [f"the team server at {first.url} now serves another-model"]
            assert engine.stats()["failed"] == 1
        finally:
            again.stop()
    finally:
        remote.close()
        engine.close()
        held.close()


def test_an_engine_that_never_answers_is_an_outage_with_a_clear_message():
    """Unreachable at its load: the engine is ``unreachable`` (each job tries the load again), not failed."""
    held = HeldPort()   # a port nobody listens on (for the whole test: released, anyone could listen there)
    engine = engine_for(held.url, engine_retries=1, engine_timeout=2)
    try:
        assert engine.state is EngineState.UNREACHABLE and "unreachable" in engine.error and "127.0.0.1" in engine.error
        with pytest.raises(EngineUnreachable, match="127.0.0.1"):
            engine.infill_sync(InfillRequest(CODE, CURSOR, "python"))
        assert engine.state is EngineState.UNREACHABLE
    finally:
        engine.close()
        held.close()


def test_an_engine_url_that_is_some_other_web_server_says_so_at_once():
    """A URL that answers 200 with a web page (a dev server on the port, a proxy's login page) is not 'unreachable':
    it is refused as not a team server, with what it sent, and not retried."""
    import http.server
    import threading

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"<!doctype html><title>dev server</title>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        engine = engine_for(f"http://127.0.0.1:{web.server_address[1]}", engine_retries=2)
        assert engine.state is EngineState.FAILED
        assert "answered /v1/info with something other than JSON" in engine.error and "<!doctype html>" in engine.error
        assert "unreachable" not in engine.error
        engine.close()
    finally:
        web.shutdown()


def test_an_engine_url_or_info_it_cannot_use_is_a_load_error_naming_what_is_wrong():
    """'http://host:notaport' said only "ValueError: Port could not be cast to integer value as 'notaport'"; an
    /v1/info with a field of the wrong type said "ValueError: invalid literal for int()" (a number) or was taken
    ("false" read as true); each is a load error naming the URL and what is wrong."""
    import http.server
    import threading

    for url, says in (("http://host:notaport", "engine URL 'http://host:notaport': the port must be a number 0..65535"),
                      ("http://host:99999", "engine URL 'http://host:99999': the port must be a number 0..65535"),
                      ("http://[::1", "engine URL 'http://[::1': Invalid IPv6 URL")):
        engine = engine_for(url, engine_retries=0)
        assert engine.state is EngineState.FAILED and says in engine.error and "ValueError" not in engine.error
        engine.close()

    served: dict = {}
    posted: dict = {}   # what /v1/tokenize and /v1/score answer

    class Info(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.do_GET(posted)

        def do_GET(self, answer=None):
            body = json.dumps(served if answer is None else answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Info)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    info = {"version": 1, "name": "masked", "default_steps": 8, "max_positions": 512, "searches_lengths": True,
            "takes_instruction": False, "scores_text": True, "scores_options": True, "model": "embedded"}
    try:
        for change, says in (({"default_steps": "eight"}, "sent default_steps 'eight' in /v1/info, which must be an "
                                                          "integer"),
                             ({"max_positions": 512.5}, "sent max_positions 512.5 in /v1/info, which must be an integer"),
                             ({"scores_text": "false"}, "sent scores_text 'false' in /v1/info, which must be true or "
                                                        "false"),
                             ({"calibration": [1]}, "sent calibration [1] in /v1/info, which must be an object"),
                             ({"default_steps": 0}, "sent default_steps 0 in /v1/info, which must be at least 1"),
                             ({"tokenizer": "not a tokenizer"}, "sent a tokenizer this client cannot read"),
                             ({"digest": 5}, "sent digest 5 in /v1/info, which must be a string")):
            served.clear()
            served.update(info | change)
            engine = engine_for(f"http://127.0.0.1:{web.server_address[1]}", engine_retries=0)
            assert engine.state is EngineState.FAILED and says in engine.error, (change, engine.error)
            assert "ValueError" not in engine.error and "Exception" not in engine.error
            engine.close()
        served.clear()
        served.update(info | {"tokenizer": None, "calibration": None})   # null: the server has none
        engine = engine_for(f"http://127.0.0.1:{web.server_address[1]}", engine_retries=0)
        assert engine.state is EngineState.READY and engine.backend.scores_text is True
        for answer, says in (({"counted": 3}, "answered /v1/tokenize without a number 'count'"),
                             ({"count": "3"}, "answered /v1/tokenize without a number 'count'")):
            posted.clear()
            posted.update(answer)   # a fill counts its window's tokens there (no tokenizer in /v1/info)
            with pytest.raises(EngineError, match=says) as failed:
                engine.infill_sync(InfillRequest(CODE, CURSOR, "python"))
            assert "internal error" not in str(failed.value)
        posted.clear()
        posted.update({"score": None})
        with pytest.raises(EngineError, match="answered /v1/score without a number 'score'"):
            engine.backend.score_text("a = ", "1", "\n")
        engine.close()
    finally:
        web.shutdown()


def test_an_unauthenticated_engine_binds_loopback_only():
    for host in ("127.0.0.1", "::1", "localhost"):
        check_bind(host, None)
    check_bind("0.0.0.0", "a-token")
    with pytest.raises(ValueError, match="loopback"):
        check_bind("0.0.0.0", None)
    out = subprocess.run([sys.executable, "-m", "lsp_server", "serve", "--plain", "--host", "0.0.0.0"],
                         capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in os.environ.items() if k != TOKEN_ENV})
    assert out.returncode != 0 and "loopback" in out.stderr


def test_engine_settings_are_checked_and_schemes_dispatched():
    settings, problems = parse_settings({"engine": "http://team:8000", "engineRetries": 3, "engineTimeout": 5})
    assert not problems and settings.load.engine == "http://team:8000" and settings.load.engine_retries == 3
    _, problems = parse_settings({"engine": "ftp://team"})
    assert problems and "engine" in problems[0]
    with pytest.raises(ModelLoadError, match="must start with"):
        open_remote("ftp://team", LoadConfig())
    try:
        import engine.backends.vllm  # noqa: F401 (the vLLM backend, where this build has it)
    except ImportError:
        with pytest.raises(ModelLoadError, match="engine.backends.vllm"):
            open_remote("vllm+http://127.0.0.1:1", LoadConfig())


def test_deployment_options_parse_like_serve_run_arguments():
    from engine.team.options import TeamOptions

    options = TeamOptions.parse({"model": "embedded", "replicas": "3", "kv_cache": "false", "max-batch": "1",
                                 "target_ongoing_requests": "2.5"})
    assert (options.replicas, options.kv_cache, options.max_batch, options.target_ongoing_requests) == (3, False, 1,
                                                                                                          2.5)
    assert options.load().kv_cache is False and options.load().quantization == "auto"   # the model's serving.json
    assert TeamOptions.parse({"quantization": "int8"}).load().quantization == "int8"
    with pytest.raises(ValueError, match="unknown option"):
        TeamOptions.parse({"replics": "2"})


def test_the_serve_command_runs_a_plain_team_server(tmp_path):
    """``diffusion-lsp serve --plain``: the same protocol from the command line; a client with the token fills."""
    token = tmp_path / "token"
    token.write_text("cli-token\n")
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV} | {"OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "lsp_server", "serve", "--plain", "--port", "0",
                             "--token-file", str(token), "--max-batch", "4"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        port = listening_port(proc)
        engine = engine_for(f"http://127.0.0.1:{port}", engine_token_file=str(token))
        assert engine.state is EngineState.READY, engine.error
        assert engine.infill_sync(InfillRequest(CODE, CURSOR, "python")).steps > 0
        engine.close()
    finally:
        proc.terminate()
        assert proc.wait(60) == 0


def test_the_serve_command_stopped_with_fills_in_flight_ends_them_with_an_error_to_retry_and_exits_cleanly():
    """SIGTERM while fills ran (and others queued) aborted the process (exit -6, "terminate called without an active
    exception": torch still running on the batch thread at exit) after uvicorn's cancelled streams' tracebacks, and
    each client saw its stream cut. Now each fill ends with an 'unavailable' error event (the client retries it),
    the batch thread ends first, and the command exits 0 without a traceback."""
    import http.client
    import signal
    import threading

    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV} | {"OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "lsp_server", "serve", "--plain", "--port", "0",
                             "--max-batch", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    port = listening_port(proc)
    finals: dict[int, object] = {}
    started = threading.Semaphore(0)

    def fill(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        plan = wire.plan_json(FillPlan(("def f(a):\n    ", HoleSpec(512), "\n"), 4000, 0.0))
        conn.request("POST", "/v1/fill", json.dumps({"version": wire.VERSION, "id": f"j{i}", "plan": plan}))
        response = conn.getresponse()
        finals[i] = "cut"
        while line := response.readline():
            event = json.loads(line)
            if event["event"] == "start":
                started.release()
            finals[i] = event
        conn.close()

    try:
        clients = [threading.Thread(target=fill, args=(i,)) for i in range(3)]   # one runs, two wait their turn
        for c in clients:
            c.start()
        for _ in clients:
            assert started.acquire(timeout=120)
        time.sleep(0.5)   # not a timing the test depends on: the fills run or wait either way
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(120) == 0, proc.stderr.read()
        for c in clients:
            c.join(120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert all(finals[i] == {"event": "error", "kind": "unavailable", "message": "the team server is shutting down"}
               for i in range(3)), finals
    assert "Traceback" not in proc.stderr.read()


def test_the_serve_command_refuses_what_it_cannot_serve_in_one_line(tmp_path):
    """A model that is not there, a dtype or certificate it cannot use, a port that is taken or no port: one
    line naming the cause and a non-zero exit, never a traceback (and never a server that half started)."""
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV} | {"OMP_NUM_THREADS": "1"}
        for extra, says in ((["--model", str(tmp_path / "missing")], "no checkpoint at"),
                            (["--dtype", "float64"], "unknown dtype 'float64'"),
                            (["--device", "cuda:99"], "device 'cuda:99' is not available"),
                            (["--certfile", str(garbage), "--keyfile", str(garbage)], "cannot use --certfile"),
                            (["--certfile", str(tmp_path / "no.pem"), "--keyfile", str(tmp_path / "no.key")],
                             "cannot use --certfile"),
                            (["--port", "99999"], "--port must be 0..65535"),
                            (["--port", port], f"cannot listen on 127.0.0.1:{port}")):
            out = subprocess.run([sys.executable, "-m", "lsp_server", "serve", "--plain", *extra],
                                 capture_output=True, text=True, timeout=120, env=env)
            assert out.returncode != 0 and says in out.stderr, (extra, out.stderr)
            assert "Traceback" not in out.stderr and "team server at" not in out.stdout


def test_a_ray_deployment_whose_replicas_cannot_load_the_model_says_why():
    """On Ray Serve the model loads in the replicas: when it cannot, the command ends with the replicas' cause (Ray's
    own error says only 'Failed to update the deployments'), not a traceback."""
    pytest.importorskip("ray.serve")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV} | {"OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-m", "lsp_server", "serve", "--model", "/nonexistent/checkpoint",
                          "--replicas", "1", "--port", str(port)], capture_output=True, text=True, timeout=300,
                         env=env)
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "diffusion-lsp serve: the deployment failed: " in out.stderr
    assert "no checkpoint at /nonexistent/checkpoint (config.json not found)" in out.stderr


def _descendants(root: int) -> set[int]:
    table = subprocess.run(["ps", "-eo", "pid,ppid"], capture_output=True, text=True).stdout.split()[2:]
    children: dict[int, list[int]] = {}
    for pid, ppid in zip(table[::2], table[1::2]):
        children.setdefault(int(ppid), []).append(int(pid))
    found, todo = set(), [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            found.add(pid)
            todo.append(pid)
    return found


def test_the_ray_serve_command_stopped_while_its_replicas_start_exits_cleanly_leaving_nothing():
    """SIGTERM (systemctl stop, kill) while the deployment started (the replicas loading the model, minutes for a
    large one) met Ray's own handler: a native stack dump ("*** SIGTERM received ...") and an abort (exit -6), or
    exit 15 during serve.start. It now stops Serve and Ray, says so in one line and exits 0, and the Ray processes
    it started (gcs_server, raylet, the replicas) are gone."""
    pytest.importorskip("ray.serve")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV} | {"OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "lsp_server", "serve", "--replicas", "1", "--threads", "1",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=env)
    try:
        seen = []
        for line in proc.stderr:   # Serve started: the replica is being created and loads the model now
            seen.append(line)
            if "Started Serve" in line:
                break
        assert proc.poll() is None, "".join(seen)[-2000:]
        started = _descendants(proc.pid)
        assert started, "no Ray processes"
        proc.send_signal(signal.SIGTERM)
        err = "".join(seen) + proc.stderr.read()
        assert proc.wait(120) == 0, err[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "stopped while starting" in err and "SIGTERM received" not in err, err[-2000:]
    for _ in range(60):   # Ray's processes end as Ray shuts down: polled, not timed
        if not any(os.path.exists(f"/proc/{pid}") for pid in started):
            break
        time.sleep(1)
    left = [open(f"/proc/{pid}/cmdline").read().replace("\0", " ")[:80] for pid in started
            if os.path.exists(f"/proc/{pid}")]
    assert not left, left
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))   # and the port is free


def test_the_editor_is_told_when_the_engine_is_unreachable_and_when_it_is_back(denoiser):
    from benchmarks.lsp_client import LspClient, LspResponseError

    held = HeldPort()
    first = PlainServer(make_app(denoiser), sock=held.socket()).start()
    uri = "file:///unreachable.py"
    params = {"textDocument": {"uri": uri}, "position": {"line": 6, "character": 8}, "context": {"triggerKind": 1}}
    with LspClient([sys.executable, "-m", "lsp_server", "-v"]) as client:
        client.initialize({"engine": first.url, "engineRetries": 0, "minConfidence": 0, "threads": 1})
        assert client.wait_ready(120)["model"] == first.url
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                "text": CODE}})
        client.request("textDocument/inlineCompletion", params, 120)
        first.stop()
        held.down()
        with pytest.raises(LspResponseError, match="unreachable"):
            client.request("textDocument/inlineCompletion", params, 120)
        down = client.wait_for("diffusion/status", lambda p: p["state"] == "error", 60)
        assert "unreachable" in down["message"] and down["model"] == first.url
        client.wait_for("window/showMessage", lambda p: "unreachable" in p["message"], 60)
        again = PlainServer(make_app(denoiser), sock=held.socket()).start()
        try:
            client.request("textDocument/inlineCompletion", params, 120)
            states = [p["state"] for _, m, p in list(client.notifications) if m == "diffusion/status"]
            assert states[-2:] == ["error", "ready"]
        finally:
            again.stop()
            held.close()


def test_an_engine_down_when_the_editor_starts_is_an_outage_that_ends_when_it_answers(denoiser):
    """A team server not yet up (or restarting) when the editor starts was a load error: suggestions stayed off
    until a setting changed. It is an outage now: told once, and the first request after it is up loads it."""
    from benchmarks.lsp_client import LspClient, LspResponseError

    held = HeldPort()   # a port nothing listens on, until the server below does
    url = held.url
    uri = "file:///late.py"
    params = {"textDocument": {"uri": uri}, "position": {"line": 6, "character": 8}, "context": {"triggerKind": 1}}
    with LspClient([sys.executable, "-m", "lsp_server"]) as client:
        client.initialize({"engine": url, "engineRetries": 0, "minConfidence": 0, "threads": 1})
        down = client.wait_for("diffusion/status", lambda p: p["state"] == "error", 120)
        assert "unreachable" in down["message"] and "each new request tries it again" in down["message"], down
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                "text": CODE}})
        with pytest.raises(LspResponseError, match="unreachable"):
            client.request("textDocument/inlineCompletion", params, 120)
        server = PlainServer(make_app(denoiser), sock=held.socket()).start()
        try:
            client.request("textDocument/inlineCompletion", params, 120)
            told = [(m, p.get("state")) for _, m, p in list(client.notifications)
                    if m in ("diffusion/status", "window/showMessage")]
            assert told == [("diffusion/status", "loading"), ("diffusion/status", "error"),
                            ("window/showMessage", None), ("diffusion/status", "ready")], told
            stats = client.request("diffusion/stats", {}, 60)
            assert stats["state"] == "ready" and stats["completed"] == 1, stats
        finally:
            server.stop()
            held.close()


def test_an_outage_is_told_once_however_many_requests_fail_during_it(denoiser):
    """Every request that failed while the team server was down sent the editor another identical 'error' status
    (and another window/showMessage whenever the failure's words changed: a stream cut, then a refused connection):
    an outage is now said once, and its end once."""
    from benchmarks.lsp_client import LspClient, LspResponseError

    held = HeldPort()
    first = PlainServer(make_app(denoiser), sock=held.socket()).start()
    uri = "file:///outage.py"
    params = {"textDocument": {"uri": uri}, "position": {"line": 6, "character": 8}, "context": {"triggerKind": 1}}
    with LspClient([sys.executable, "-m", "lsp_server"]) as client:
        client.initialize({"engine": first.url, "engineRetries": 0, "minConfidence": 0, "threads": 1})
        client.wait_ready(120)
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                "text": CODE}})
        first.stop()
        held.down()
        for _ in range(3):
            with pytest.raises(LspResponseError, match="unreachable"):
                client.request("textDocument/inlineCompletion", params, 120)
        again = PlainServer(make_app(denoiser), sock=held.socket()).start()
        try:
            client.request("textDocument/inlineCompletion", params, 120)
            client.request("textDocument/inlineCompletion", params, 120)
            told = [(m, p.get("state")) for _, m, p in list(client.notifications)
                    if m in ("diffusion/status", "window/showMessage")]
            assert told == [("diffusion/status", "loading"), ("diffusion/status", "ready"),
                            ("diffusion/status", "error"), ("window/showMessage", None),
                            ("diffusion/status", "ready")], told
        finally:
            again.stop()
            held.close()


def _slow(denoiser: Denoiser, seconds: float):
    """A team server's submit whose jobs wait ``seconds`` before each step (a loaded or distant server)."""
    collector = Collector(denoiser)

    async def submit(job: Job) -> None:
        check = job.check

        def slowly(step: int) -> None:
            time.sleep(seconds)
            check(step)
        job.check = slowly  # type: ignore[method-assign]
        await collector.submit(job)
    return submit


def _send(client, method: str, params):
    """A request sent without waiting for its answer: (its id, the future of its answer)."""
    from concurrent.futures import Future

    rid = next(client._ids)
    answer: Future = Future()
    client._pending[rid] = answer
    client._send({"id": rid, "method": method, "params": params})
    return rid, answer


def test_a_fill_running_when_the_engine_setting_changes_is_dropped_not_answered_from_the_old_engine(denoiser):
    """The user pointed ``engine`` at another team server while a fill streamed from the first: the fill ran on to
    its end on the old server (seconds on a slow one) and its answer was sent after the status had already said the
    new engine was loading, as if it came from there. A reload now cancels the jobs running and queued: the old
    server stops the job, the request answers nothing, and the next one is the new engine's."""
    import urllib.request

    before, after = Denoiser(denoiser.backend, "embedded"), Denoiser(denoiser.backend, "embedded")
    before.lock = after.lock = denoiser.lock   # counters of their own, the model used by one batch at a time
    old = PlainServer(make_app(before, submit=_slow(before, 0.3))).start()
    new = PlainServer(make_app(after)).start()
    uri = "file:///switch.py"
    params = {"textDocument": {"uri": uri}, "position": {"line": 6, "character": 8}, "context": {"triggerKind": 1}}

    def stats(url: str) -> dict:
        with urllib.request.urlopen(url + "/v1/stats", timeout=30) as response:
            return json.loads(response.read())
    try:
        with LspClient([sys.executable, "-m", "lsp_server"]) as client:
            client.initialize({"engine": old.url, "minConfidence": 0, "threads": 1, "drafts": True,
                               "draftIntervalMs": 0})
            client.wait_ready(120)
            client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                                    "version": 1, "text": CODE}})
            _, answer = _send(client, "textDocument/inlineCompletion", params)
            client.wait_for("diffusion/draft", timeout=120)    # the fill streams from the old server
            client.notify("workspace/didChangeConfiguration", {"settings": {"diffusionLsp": {"engine": new.url}}})
            _, message = answer.result(120)
            assert message["result"] == {"items": []}, message
            deadline = time.monotonic() + 60
            while stats(old.url)["cancelled"] == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert stats(old.url)["cancelled"] == 1 and stats(old.url)["completed"] == 0
            client.wait_for("diffusion/status", lambda p: p["state"] == "ready" and p["model"] == new.url, 120)
            assert client.request("textDocument/inlineCompletion", params, 120)["items"]
            assert stats(new.url)["completed"] >= 1 and stats(old.url)["completed"] == 0
    finally:
        old.stop()
        new.stop()


def test_a_cancelled_job_stops_on_its_ray_serve_replica(team_engine):
    """Through Ray Serve's proxy: the client going away cancels the job on the replica that runs it."""
    import json
    import urllib.request

    def replicas(want: int = 2) -> dict:
        """Each replica's stats (the router spreads the polls over the idle replicas)."""
        seen: dict = {}
        deadline = time.monotonic() + 60
        while len(seen) < want and time.monotonic() < deadline:
            with urllib.request.urlopen(team_engine + "/v1/stats", timeout=30) as response:
                stats = json.loads(response.read())
            seen[stats["replica"]] = stats
        return seen
    engine = engine_for(team_engine)
    before = {name: stats["cancelled"] for name, stats in replicas().items()}
    first = []
    job = engine.submit(InfillRequest(CODE, CURSOR, "python", steps=400, max_tokens=64), first.append)
    deadline = time.monotonic() + 120
    while not first and time.monotonic() < deadline:
        time.sleep(0.01)
    serving = engine.backend.replica
    job.cancel()
    with pytest.raises(Cancelled):
        job.future.result(60)
    while (now := replicas()[serving])["cancelled"] == before[serving] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert now["cancelled"] == before[serving] + 1 and now["running"] == 0
    engine.close()


def test_with_int8_weights_each_plan_of_a_batch_is_its_fill_alone():
    """int8's activation scale is set per forward, so a padded batch would change a row's fill: the backend runs
    an int8 batch one plan after another, each the fill it is alone; a cancelled one still stops alone."""
    from engine.backends import load_backend
    from engine.config import LoadConfig

    backend = load_backend(LoadConfig(device="cpu", threads=1, quantization="int8"))
    alone = []
    for plan in PLANS:
        backend._prefix = None
        alone.append(backend.fill(plan, Control(never)))
    backend._prefix = None
    together = backend.fill_many(PLANS, [Control(never) for _ in PLANS])
    assert len(together) == len(PLANS) and all(same(t, a) for t, a in zip(together, alone))

    def stop_at_2(step: int) -> None:
        if step >= 2:
            raise Cancelled(step)
    backend._prefix = None
    results = backend.fill_many(PLANS[:2], [Control(stop_at_2), Control(never)])
    assert isinstance(results[0], Cancelled) and same(results[1], alone[1])


def test_a_remote_engine_runs_the_served_models_decoding_per_language(tmp_path):
    """The served model's serving.json decoding travels in /v1/info: the client's engine tries a Go line at the
    lengths the model states, as the server's own engine would (and not its quantization: that is the server's)."""
    from engine.config import EMBEDDED_DIR

    model = tmp_path / "model"
    model.mkdir()
    for f in EMBEDDED_DIR.iterdir():
        (model / f.name).symlink_to(f)
    (model / "serving.json").write_text(json.dumps({"quantization": "none",
                                                    "decoding": {"go": {"line_lengths": [16]}}}))
    served = PlainServer(make_app(Denoiser.load(LoadConfig(model=str(model), threads=1)))).start()
    remote = engine_for(served.url)
    try:
        assert remote.state is EngineState.READY, remote.error
        assert remote.decoding == {"go": {"line_lengths": (16,)}}
        assert json.loads((remote.backend.model_dir / "serving.json").read_text()) == {
            "decoding": {"go": {"line_lengths": [16]}}}
        go = "package main\n\nfunc add(a, b int) int {\n\t\n}\n"
        slots: set[int] = set()
        remote.infill_sync(InfillRequest(go, go.index("\t\n") + 1, "go", kind=HoleKind.LINE),
                           lambda d: slots.add(d.slots))
        assert slots - {0} == {16}
    finally:
        remote.close()
        served.stop()


def test_ray_serves_app_builder_reads_its_token_file_as_the_serve_command_does(tmp_path):
    """``serve run engine.team.ray_app:app_builder token_file=PATH`` (the README's Ray CLI line): a UTF-8 BOM is not
    part of the token (the clients strip it, so every request was refused), and a file with no token or one that
    cannot be sent is an error naming it, never a server without a token."""
    pytest.importorskip("ray.serve", reason="needs ray[serve]: pip install -e .[team]")
    from engine.team.ray_app import app_builder

    bom, empty, lines = (tmp_path / n for n in ("bom", "empty", "lines"))
    bom.write_bytes(b"\xef\xbb\xbfs3cret-token\r\n")
    empty.write_text("\n")
    lines.write_text("s3cret\ntoken\n")
    app = app_builder({"model": "embedded", "replicas": "1", "token_file": str(bom)})
    assert app._bound_deployment.init_args[1] == "s3cret-token"
    for path, says in ((empty, "is empty"), (lines, "one word of visible ASCII")):
        with pytest.raises(ValueError, match=says) as raised:
            app_builder({"model": "embedded", "token_file": str(path)})
        assert str(path) in str(raised.value)


def _get(url: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(url, timeout=60) as response:
        return json.loads(response.read())


def test_a_team_server_restarted_with_another_model_is_reloaded_and_the_editor_told_once(denoiser, tmp_path):
    """The team server was restarted on the same port with another model (a tiny BERT: another tokenizer, 128
    positions): the language server kept the /v1/info it read at connect, so its windows were cut with the old
    tokenizer and positions (the new server refused the plans as over its positions), diffusion/stats still named
    the old model, and nothing told the user. The server now states a digest of what it serves; the fill that
    meets another one fails, the engine reads /v1/info again before the next job, the user is told once, and the
    next fills are the new model's. (Both servers run in this process, on a port the test holds between them: a
    ``serve --plain`` process stopped and another started on its port left the port free for seconds.)"""
    from tests.bert_checkpoint import write_tiny_bert

    texts = ["def add(a, b):\n    return a + b\n", "for x in range(10):\n    print(x)\n"] * 50
    bert = write_tiny_bert(tmp_path / "tiny-bert", texts, hidden=32, layers=1, intermediate=64, max_positions=128)
    held = HeldPort()
    url = held.url
    # a document whose window, cut for the embedded model, is far over the tiny BERT's 128 positions
    code = "".join(f"def helper_{i}(values, offset):\n    total = sum(values) + offset * {i}\n    return total\n\n\n"
                   for i in range(12)) + CODE
    uri = "file:///restarted.py"
    line = code[:code.index("        \n")].count("\n")
    params = {"textDocument": {"uri": uri}, "position": {"line": line, "character": 8}, "context": {"triggerKind": 1}}
    team, other = PlainServer(make_app(denoiser), sock=held.socket()).start(), None
    try:
        with LspClient([sys.executable, "-m", "lsp_server"]) as client:
            client.initialize({"engine": url, "minConfidence": 0, "threads": 1})
            client.wait_ready(120)
            client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                    "text": code}})
            client.request("textDocument/inlineCompletion", params, 120)
            assert client.request("diffusion/stats", {}, 60)["remote_model"] == "embedded"
            team.stop()
            held.down()
            other = Denoiser.load(LoadConfig(model=str(bert)))
            team = PlainServer(make_app(other), sock=held.socket()).start()
            served = _get(url + "/v1/info")
            assert served["max_positions"] == 128 and served["model"] == str(bert)
            # the first request meets the change: it answers nothing (or the new model's fill), never an error
            client.request("textDocument/inlineCompletion", params, 120)
            told = client.wait_for("window/showMessage", lambda p: "now serves" in p["message"], 120)
            assert str(bert) in told["message"]
            status = client.wait_for("diffusion/status", lambda p: "now serves" in p.get("message", ""), 120)
            assert status["state"] == "ready" and str(bert) in status["message"]
            for _ in range(2):   # the next fills complete on the new model, with its tokenizer and positions
                client.request("textDocument/inlineCompletion", params, 120)
            stats = client.request("diffusion/stats", {}, 60)
            assert stats["state"] == "ready" and stats["remote_model"] == str(bert)
            assert stats["remote_digest"] == served["digest"] and stats["failed"] == 1, stats
            team_stats = _get(url + "/v1/stats")
            assert team_stats["completed"] >= 2 and team_stats["failed"] == 0, team_stats
            notes = [(m, p) for _, m, p in list(client.notifications)
                     if m in ("diffusion/status", "window/showMessage") and "now serves" in p.get("message", "")]
            assert sorted(m for m, _ in notes) == ["diffusion/status", "window/showMessage"], notes   # told once
    finally:
        team.stop()
        held.close()
        if other is not None:
            other.close()


def test_serve_port_0_with_ray_takes_a_free_port_it_can_name():
    """``serve --port 0`` printed ``127.0.0.1:0``: Serve's proxy binds the port it is given and cannot report one the
    system chose. The command now takes a port free on the host (``ray_app.free_port``) and names that one."""
    pytest.importorskip("ray.serve")
    from engine.team.ray_app import free_port

    for host in ("127.0.0.1", "::1") if socket.has_ipv6 else ("127.0.0.1",):
        try:
            port = free_port(host)
        except OSError:   # no IPv6 loopback here
            continue
        assert 0 < port < 65536
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.bind((host, port))   # free: Serve can bind it
