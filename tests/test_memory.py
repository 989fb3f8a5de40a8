"""Memory held by the server per message (issue 18, item 1): what a storm of edits must not leave behind."""

import asyncio
import ctypes
import json
import time

import pytest

from engine import Engine, EngineConfig, InfillRequest
from engine.memory import HeapTrimmer, resident_bytes
from lsp_server import drafts
from lsp_server.server import build_server

URI = "file:///memory/doc.py"


def _feed(server, method: str, params: dict) -> None:
    protocol = server.protocol
    protocol.handle_message(protocol.structure_message({"jsonrpc": "2.0", "method": method, "params": params}))


def test_notifications_leave_no_request_futures_behind():
    """pygls filed a future per didOpen/didChange/didClose under a fresh id and never removed it."""
    server = build_server()
    _feed(server, "textDocument/didOpen",
          {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": "x = 1\r\n"}})
    for version in range(2, 202):
        _feed(server, "textDocument/didChange", {
            "textDocument": {"uri": URI, "version": version},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                                "text": "é"}]})
    assert server.documents.get(URI).text == "é" * 200 + "x = 1\r\n"
    _feed(server, "textDocument/didClose", {"textDocument": {"uri": URI}})
    assert server.documents.get(URI) is None
    assert server.protocol._request_futures == {}


def _fragment_heap(libc) -> int:
    """64 MiB written then freed in the middle of the heap (free() cannot give it back); returns the block
    left above them, to free afterwards."""
    size = 64 << 10                              # below glibc's mmap threshold: served from the heap
    blocks = [libc.malloc(size) for _ in range(1024)]
    for block in blocks:
        ctypes.memset(block, 1, size)
    keep = libc.malloc(size)
    for block in blocks:
        libc.free(block)
    return keep


@pytest.fixture
def libc():
    if not HeapTrimmer().available:
        pytest.skip("not glibc: no malloc_trim")
    lib = ctypes.CDLL(None)
    lib.malloc.restype, lib.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    lib.free.argtypes = [ctypes.c_void_p]
    return lib


def test_a_quiet_moment_after_jobs_returns_freed_heap_memory(libc):
    trimmer = HeapTrimmer()
    trimmer.job_done()
    keep = _fragment_heap(libc)
    before = resident_bytes()
    trimmer.quiet()
    after = resident_bytes()
    libc.free(keep)
    assert trimmer.trims == 1 and before - after > 32 << 20
    trimmer.quiet()                              # no job since: nothing to do
    assert trimmer.trims == 1 and trimmer.wait() is None


def test_between_jobs_it_trims_only_past_the_slack(libc):
    trimmer = HeapTrimmer(slack=16 << 20)
    trimmer.job_done()
    trimmer.busy()                               # the first time sets the floor
    trimmer.job_done()
    trimmer.busy()
    assert trimmer.trims == 1                    # nothing grew: no second trim
    keep = _fragment_heap(libc)
    trimmer.job_done()
    before = resident_bytes()
    trimmer.busy()
    after = resident_bytes()
    libc.free(keep)
    assert trimmer.trims == 2 and before - after > 32 << 20


def test_the_engine_trims_once_its_queue_is_quiet():
    engine = Engine(EngineConfig.of(model="embedded", threads=1))
    try:
        engine.start().result(timeout=120)
        engine.infill_sync(InfillRequest(text="def f(x):\n    return \n", offset=21, language="python"), timeout=120)
        for _ in range(200):                     # the quiet-moment trim comes half a second after the job
            if engine.stats()["heap_trims"] >= 1:
                break
            time.sleep(0.05)
        assert engine.stats()["heap_trims"] >= 1
    finally:
        engine.close()


class _Sent:
    """A writer for the protocol: keeps each message the server sends."""

    def __init__(self):
        self.messages: list[dict] = []

    def write(self, data: bytes) -> None:
        self.messages.append(json.loads(data))


async def test_progress_tokens_refused_or_never_answered_leave_no_request_behind(monkeypatch):
    """An action's progress token is asked for with window/workDoneProgress/create; pygls kept the result type of
    each one the client refused (an error answer) and the future and result type of each one it never answered
    (the server stops waiting after 2 s), for good; one answered after the server stopped waiting raised
    InvalidStateError."""
    monkeypatch.setattr(drafts, "_CREATE_TIMEOUT", 0.05)
    server = build_server()
    protocol, sent = server.protocol, _Sent()
    protocol.set_writer(sent, include_headers=False)
    server.status.client_supports_progress = True
    _feed(server, "textDocument/didOpen",
          {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": "x = 1\n"}})

    async def offer_one():
        return await drafts.DraftStream.for_action(server, URI, 1, "fill", "Fill", [])

    for cycle in range(30):
        asked = len(sent.messages)
        task = asyncio.ensure_future(offer_one())
        while len(sent.messages) == asked:
            await asyncio.sleep(0)
        create = sent.messages[-1]
        assert create["method"] == "window/workDoneProgress/create"
        if cycle % 3 == 0:    # refused
            protocol.handle_message(protocol.structure_message(
                {"jsonrpc": "2.0", "id": create["id"], "error": {"code": -32603, "message": "no progress here"}}))
        assert await task is None          # refused or never answered: no token, and no drafts asked for
        if cycle % 3 == 1:    # answered after the server stopped waiting
            protocol.handle_message(protocol.structure_message(
                {"jsonrpc": "2.0", "id": create["id"], "result": None}))
    assert protocol._request_futures == {} and protocol._result_types == {}
    assert server.work_done_progress.tokens == {}


def test_a_closed_engine_lets_its_model_go():
    """A closed engine kept its backend: over --tcp each ended session's model (and a remote engine's downloaded
    tokenizer directory) stayed until the Engine itself was collected, which a session's reference cycles put off
    to a full collection (22 MiB a session with the embedded model, a 26B model's weights on a GPU)."""
    engine = Engine(EngineConfig.of(model="embedded", threads=1))
    engine.start().result(timeout=120)
    backend = engine.backend
    engine.infill_sync(InfillRequest(text="def f(x):\n    return \n", offset=21, language="python"), timeout=120)
    engine.close()
    assert engine.state.value == "closed" and engine.backend is None and backend.model is None


def test_a_long_lived_server_freezes_its_model_out_of_full_collections():
    """A full collection walked the loaded model's ~360,000 objects: 370-400 ms, a stall in whatever fill ran.
    With ``freeze_after_loads`` (the stdio server, the plain team server) they are frozen after each load; a
    reload thaws them first, so the model left is collected (its cycles too), and closing thaws everything."""
    import gc
    import weakref

    from engine import memory

    assert gc.get_freeze_count() == 0
    memory.freeze_after_loads()
    try:
        collections: list[int] = []
        gc.callbacks.append(counted := lambda phase, info: collections.append(info["generation"])
                            if phase == "start" else None)
        try:
            engine = Engine(EngineConfig.of(model="embedded", threads=1))
            engine.start().result(timeout=120)
        finally:
            gc.callbacks.remove(counted)
        assert collections.count(2) == 1   # none while loading (paused), one full before the freeze (other threads
        # of a long test run may make young ones meanwhile)
        assert gc.get_freeze_count() > 100_000       # the model, torch's and the engine's objects
        first = weakref.ref(engine.backend)
        engine.reconfigure(EngineConfig.of(model="embedded", threads=1, steps=8), force=True).result(timeout=120)
        assert gc.get_freeze_count() > 100_000
        gc.collect()
        assert first() is None                         # the model left was not kept frozen
        completion = engine.infill_sync(InfillRequest(text="def f(x):\n    return \n", offset=21,
                                                      language="python"), timeout=120)
        assert completion.steps <= 8                   # the reloaded model serves
        engine.close()
        assert gc.get_freeze_count() == 0
    finally:
        memory.freeze_after_loads(False)
        gc.unfreeze()
    assert memory._freezing == [False]


PERL_SUB = '''sub f%d {
    my ($self, %%args) = @_;
    my $x = $args{name} // "none";
    print "value: $x\\n" if $self->{debug};
    return $self->{items}[0] =~ s/^\\s+//r;
}
'''


@pytest.mark.parametrize("language, text", [
    ("perl", "".join(PERL_SUB % i for i in range(800))),       # 129 KB: its scanner asks for ~36,000 chunks
    ("python", "def f(x):\n    # a comment\n    return x + 1\n" * 6000),   # 264 KB: 5 chunks
])
def test_a_document_parsed_in_chunks_leaves_none_of_them_behind(language, text):
    """tree-sitter's binding (0.26.1) kept every chunk its read callback returned, for good: each parse of a Perl
    file of this size left 1.7 GB behind, and one of any language about its own size (``languages._Reader``)."""
    import gc
    import tracemalloc

    import tree_sitter

    from engine.languages import check_spec, grammar, parse, spec_for

    spec = check_spec(language) or spec_for(language)
    if grammar(spec.name) is None:
        pytest.skip(f"tree_sitter_{language} is not installed")
    data = text.encode()
    whole = tree_sitter.Parser(grammar(spec.name)).parse(data)   # one call, no chunks
    parse(spec, data)   # (the binding's first-use costs, and the leak's measure, out of the count)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(3):
            tree = parse(spec, data)
            assert str(tree.root_node) == str(whole.root_node)
            last = tree.root_node.children[-1]
            assert last.text == data[last.start_byte:last.end_byte]
            del tree, last
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < len(data) // 4, kept
