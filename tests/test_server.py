"""End to end over stdio: the real diffusion-lsp process, the real engine, the embedded model."""

import asyncio
import time

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.lsp_session import cancelled_after, inline_params, open_doc, raced, stats

CODE = "import os\n\n\ndef list_python_files(root):\n    result = []\n    for name in os.listdir(root):\n        \n    return result\n"
CURSOR = (6, 8)  # the indented empty line inside the loop
BODY = "def f(x):\n" + "    y = x\n" * 200  # a body hole at (0, 9): 64 slots, many steps


async def first_draft(client, uri: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not any(d["uri"] == uri for d in client.drafts):
        assert time.monotonic() < deadline, "no draft arrived"
        await asyncio.sleep(0.002)


async def test_inline_completion_at_the_cursor(client):
    uri = f"file:///inline-{client.snapshot}.py"
    open_doc(client, uri, CODE)
    result = await client.text_document_inline_completion_async(inline_params(uri, *CURSOR))
    assert isinstance(result, types.InlineCompletionList) and len(result.items) <= 1
    for item in result.items:
        assert item.range.start == item.range.end == types.Position(*CURSOR)
        assert item.insert_text.strip() and "\n" not in item.insert_text.rstrip("\n")
        assert not item.insert_text.endswith("return result")


async def test_completion_fallback_item(client):
    uri = f"file:///completion-{client.snapshot}.py"
    open_doc(client, uri, CODE)
    result = await client.text_document_completion_async(types.CompletionParams(
        types.TextDocumentIdentifier(uri), types.Position(*CURSOR)))
    assert len(result.items) <= 1
    for item in result.items:
        assert item.detail.startswith("diffusion fill") and item.text_edit.new_text.strip()
        assert 0 <= item.data["confidence"] <= 1  # the estimate that it is exactly right
        assert item.text_edit.range.start == types.Position(*CURSOR)


async def test_drafts_arrive_in_order_and_end_with_the_final_text(client):
    uri = f"file:///drafts-{client.snapshot}.py"
    open_doc(client, uri, CODE)
    client.drafts.clear()
    result = await client.text_document_inline_completion_async(inline_params(uri, *CURSOR))
    await asyncio.sleep(0.2)
    drafts = [d for d in client.drafts if d["uri"] == uri]
    assert drafts and drafts[-1]["done"]
    steps = [d["step"] for d in drafts]
    assert steps == sorted(steps) and all(not d["done"] for d in drafts[:-1])
    final = result.items[0].insert_text if result.items else ""
    assert drafts[-1]["text"] == final
    assert all(0.0 <= t["confidence"] <= 1.0 for d in drafts for t in d["tokens"])


async def test_unknown_document_is_an_error(client):
    with pytest.raises(JsonRpcException, match="unknown document"):
        await client.text_document_inline_completion_async(inline_params("file:///nope.py", 0, 0))


async def test_position_past_the_end_is_an_error(client):
    uri = f"file:///past-{client.snapshot}.py"
    open_doc(client, uri, "x = 1\n")
    with pytest.raises(JsonRpcException, match="past the end"):
        await client.text_document_inline_completion_async(inline_params(uri, 40, 0))
    # a character past the line end means the line end (LSP rule): answered normally
    result = await client.text_document_inline_completion_async(inline_params(uri, 0, 99))
    assert isinstance(result, types.InlineCompletionList)


@pytest.mark.parametrize("language,text", [
    ("cobol", "IDENTIFICATION DIVISION.\n"),
    ("python", "\x00\x01\x02binary\xff\ufffd\n" * 50),
    ("python", ""),
    ("rust", "fn main() {\r\n    let x = 1;\r\n\t\r\n}\r\n"),
    ("javascript", "const s = '😀😀';\n"),
])
async def test_odd_documents_answer_and_keep_the_server_up(client, language, text):
    uri = f"file:///odd-{client.snapshot}-{language}-{len(text)}"
    open_doc(client, uri, text, language)
    lines = text.splitlines() or [""]
    result = await client.text_document_inline_completion_async(inline_params(uri, len(lines) - 1, 2))
    assert isinstance(result, types.InlineCompletionList)
    assert (await stats(client))["state"] == "ready"


async def test_five_megabyte_document_answers_within_seconds(client):
    uri = f"file:///big-{client.snapshot}.py"
    body = "".join(f"def f{i}(x):\n    return x * {i}\n\n" for i in range(170_000))
    assert len(body) > 5_000_000
    open_doc(client, uri, body)
    # How fast is measured in benchmarks.latency; here: answered at all, with a generous guard for a busy machine.
    result = await asyncio.wait_for(client.text_document_inline_completion_async(inline_params(uri, 250_000, 4)), 120)
    assert isinstance(result, types.InlineCompletionList)


async def test_superseded_request_returns_promptly_and_the_model_stops(client):
    async def attempt(i: int) -> bool:
        uri = f"file:///race-{client.snapshot}-{i}.py"
        open_doc(client, uri, BODY)  # a body hole: long enough to be mid-flight
        before = await stats(client)
        client.drafts.clear()
        first = asyncio.ensure_future(client.text_document_inline_completion_async(inline_params(uri, 0, 9)))
        await first_draft(client, uri)  # the first request is denoising now
        second = asyncio.ensure_future(client.text_document_inline_completion_async(inline_params(uri, 1, 9)))
        first_result = await asyncio.wait_for(first, 30)  # a hang guard, not a latency limit (benchmarks measure that)
        await asyncio.wait_for(second, 60)
        after = await stats(client)  # the engine counts a cancellation before the cancelled request returns
        if after["cancelled"] == before["cancelled"]:
            return False  # the first fill ended before the second request arrived: answered, nothing stopped
        assert after["cancelled"] == before["cancelled"] + 1
        assert not first_result.items  # superseded: answered with nothing, not with a stale fill
        assert after["last_cancelled_at_step"] >= 1  # stopped mid-denoising, not after finishing
        return True
    await raced(attempt)


async def test_cancel_request_stops_the_model_within_a_step(client):
    async def attempt(i: int) -> bool:
        uri = f"file:///cancel-{client.snapshot}-{i}.py"
        open_doc(client, uri, BODY)  # a body hole: 64 slots, many steps
        before = await stats(client)
        msg_id = f"cancel-me-{client.snapshot}-{i}"
        client.drafts.clear()
        fut = client.protocol.send_request("textDocument/inlineCompletion", inline_params(uri, 0, 9), msg_id=msg_id)
        await first_draft(client, uri)  # mid-denoising
        client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
        try:
            await asyncio.wait_for(asyncio.wrap_future(fut), 30)  # a hang guard, not a latency limit
        except JsonRpcException as err:
            assert err.code == -32800  # RequestCancelled
        else:  # answered before the cancellation arrived: the engine stopped nothing
            assert (await stats(client))["cancelled"] == before["cancelled"]
            return False
        after = await cancelled_after(client, before)  # the engine notices at its next step
        assert after["cancelled"] == before["cancelled"] + 1
        assert after["last_cancelled_at_step"] >= 1  # stopped mid-denoising, not after finishing
        return True
    await raced(attempt)


async def test_stale_version_is_never_answered(client):
    # the edit comes while the job is denoising (its first draft is out), not after a fixed sleep
    async def attempt(i: int) -> bool:
        uri = f"file:///stale-{client.snapshot}-{i}.py"
        open_doc(client, uri, BODY)
        before = await stats(client)
        client.drafts.clear()
        pending = asyncio.ensure_future(client.text_document_inline_completion_async(inline_params(uri, 0, 9)))
        await first_draft(client, uri)
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=2, uri=uri),
            [types.TextDocumentContentChangePartial(types.Range(types.Position(0, 0), types.Position(0, 0)), "# hi\n")]))
        result = await asyncio.wait_for(pending, 60)  # a hang guard, not a latency limit
        if result.items:  # answered before the edit arrived (rightly: the text was still version 1)
            assert (await stats(client))["cancelled"] == before["cancelled"]
            return False
        return True
    await raced(attempt)


def completion_params(uri: str, line: int, character: int) -> types.CompletionParams:
    return types.CompletionParams(types.TextDocumentIdentifier(uri), types.Position(line, character))


async def test_inline_and_completion_at_one_keystroke_share_one_job(client):
    # Some clients ask for ghost text and a completion item at each keystroke: one job answers both (before: the
    # completion request superseded the inline one, which came back empty, and the engine ran two jobs)
    uri = f"file:///pair-{client.snapshot}.py"
    open_doc(client, uri, BODY)
    before = await stats(client)
    inline = asyncio.ensure_future(client.text_document_inline_completion_async(inline_params(uri, 0, 9)))
    item = asyncio.ensure_future(client.text_document_completion_async(completion_params(uri, 0, 9)))
    inline_result, item_result = await asyncio.wait_for(asyncio.gather(inline, item), 60)  # a hang guard
    after = await stats(client)
    assert inline_result.items and item_result.items
    assert inline_result.items[0].insert_text == item_result.items[0].text_edit.new_text
    assert after["jobs"] == before["jobs"] + 1 and after["cancelled"] == before["cancelled"]


async def test_cancelling_one_of_two_identical_requests_leaves_the_other_its_answer(client):
    async def attempt(i: int) -> bool:
        uri = f"file:///pair-cancel-{client.snapshot}-{i}.py"
        open_doc(client, uri, BODY)
        before = await stats(client)
        msg_id = f"pair-cancel-{client.snapshot}-{i}"
        client.drafts.clear()
        inline = client.protocol.send_request("textDocument/inlineCompletion", inline_params(uri, 0, 9), msg_id=msg_id)
        item = asyncio.ensure_future(client.text_document_completion_async(completion_params(uri, 0, 9)))
        await first_draft(client, uri)  # mid-denoising, both waiting
        client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
        caught = True
        try:
            await asyncio.wait_for(asyncio.wrap_future(inline), 30)
            caught = False  # answered before the cancellation arrived
        except JsonRpcException as err:
            assert err.code == -32800  # RequestCancelled
        item_result = await asyncio.wait_for(item, 60)
        after = await stats(client)
        assert item_result.items  # the job ran on for the request still waiting
        assert after["jobs"] == before["jobs"] + 1 and after["cancelled"] == before["cancelled"]
        return caught
    await raced(attempt)


async def test_a_newer_position_supersedes_both_identical_requests(client):
    async def attempt(i: int) -> bool:
        uri = f"file:///pair-newer-{client.snapshot}-{i}.py"
        open_doc(client, uri, BODY)
        before = await stats(client)
        client.drafts.clear()
        inline = asyncio.ensure_future(client.text_document_inline_completion_async(inline_params(uri, 0, 9)))
        item = asyncio.ensure_future(client.text_document_completion_async(completion_params(uri, 0, 9)))
        await first_draft(client, uri)
        newer = asyncio.ensure_future(client.text_document_inline_completion_async(inline_params(uri, 1, 9)))
        inline_result, item_result = await asyncio.wait_for(asyncio.gather(inline, item), 30)
        await asyncio.wait_for(newer, 60)
        after = await stats(client)
        assert after["jobs"] == before["jobs"] + 2
        if after["cancelled"] == before["cancelled"]:  # the pair's fill ended before the newer request arrived
            assert inline_result.items and item_result.items
            return False
        assert not inline_result.items and not item_result.items
        assert after["cancelled"] == before["cancelled"] + 1
        return True
    await raced(attempt)


@pytest.mark.parametrize("queued", [False, True])
async def test_a_request_with_a_progress_token_joining_a_job_without_drafts_gets_its_progress(client, queued):
    # Drafts off: a completion request without a work-done token asks its job for no drafts; the inline request
    # at the same keystroke carries a token, and alone its progress reports each step. Before, it joined the
    # completion's job and got a progress begun and ended at the answer, with no step reported. ``queued``: the
    # pair's job waits behind another document's (started again before it reaches the model).
    uri = f"file:///pair-token-{client.snapshot}-{queued}.py"
    token = f"pair-token-{client.snapshot}-{queued}"
    open_doc(client, uri, BODY)
    client.progress_reports[token] = []   # the client's own token (pytest-lsp knows only those it created)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams({"diffusionLsp": {"drafts": False}}))
    try:
        ahead = None
        if queued:
            open_doc(client, f"{uri}.ahead.py", BODY)
            ahead = asyncio.ensure_future(client.text_document_inline_completion_async(
                inline_params(f"{uri}.ahead.py", 0, 9)))
        item = asyncio.ensure_future(client.text_document_completion_async(completion_params(uri, 0, 9)))
        params = inline_params(uri, 0, 9)
        params.work_done_token = token
        inline = asyncio.ensure_future(client.text_document_inline_completion_async(params))
        item_result, inline_result = await asyncio.wait_for(asyncio.gather(item, inline), 60)  # a hang guard
        if ahead is not None:
            assert (await asyncio.wait_for(ahead, 60)).items   # the other document's answer is its own
    finally:
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams({"diffusionLsp": {"drafts": True}}))
    assert inline_result.items and item_result.items   # both answered, with the same fill
    assert inline_result.items[0].insert_text == item_result.items[0].text_edit.new_text
    reports = client.progress_reports[token]
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and isinstance(reports[-1], types.WorkDoneProgressEnd)
    assert any(isinstance(r, types.WorkDoneProgressReport) for r in reports[1:-1]), reports
