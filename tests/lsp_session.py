"""Helpers for end-to-end tests: start the real server, record its notifications, wait for the model."""

from __future__ import annotations

import asyncio
import sys
import time

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "lsp_server", "-v"])
SNAPSHOTS = {"vscode": "visual-studio-code", "neovim": "neovim"}


def plain(value):
    """pygls decodes unknown messages into namedtuples; turn them back into dicts and lists."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


async def stats(client: LanguageClient) -> dict:
    return plain(await client.protocol.send_request_async("diffusion/stats", {}))


async def raced(attempt, tries: int = 6) -> None:
    """Run ``attempt(i)`` until it catches the model mid-fill. An attempt sends its interruption (a newer request, a
    cancellation, an edit) as soon as the first draft arrives; on a loaded machine the fill can still end before the
    server reads it, which is right too (the answer went out first). Such an attempt checks that outcome, returns
    False and is tried again on a fresh document; one that caught the fill checks what must follow and returns True."""
    for i in range(tries):
        if await attempt(i):
            return
    raise AssertionError(f"in {tries} tries every fill ended before its interruption reached the server")


async def cancelled_after(client: LanguageClient, before: dict, timeout: float = 30.0) -> dict:
    """Stats once the engine has counted one more cancellation (polled; a busy machine is slow)."""
    deadline = time.monotonic() + timeout
    while (after := await stats(client))["cancelled"] <= before["cancelled"] and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return after


def record_notifications(client: LanguageClient) -> None:
    client.statuses, client.drafts = [], []  # pytest-lsp keeps showMessage params in client.messages

    @client.feature("diffusion/status")
    def _status(ls, params):
        ls.statuses.append(plain(params))

    @client.feature("diffusion/draft")
    def _draft(ls, params):
        ls.drafts.append(plain(params))


async def start_session(client: LanguageClient, snapshot: str, options: dict | None = None,
                        encodings: list[str] | None = None) -> types.InitializeResult:
    # minConfidence 0: these sessions test how fills are made and delivered, not which are withheld
    capabilities = client_capabilities(SNAPSHOTS.get(snapshot, snapshot))
    if encodings is not None:
        capabilities.general = capabilities.general or types.GeneralClientCapabilities()
        capabilities.general.position_encodings = encodings
    return await client.initialize_session(types.InitializeParams(
        capabilities=capabilities, initialization_options={"threads": 1, "minConfidence": 0, **(options or {})}))


async def wait_state(client: LanguageClient, *states: str, timeout: float = 300.0) -> str:
    """Polls until the server reports one of ``states``; the deadline only bounds a hang (a loaded machine took
    over 60 s to load the model in a module's first server)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = (await stats(client))["state"]
        if state in states:
            return state
        await asyncio.sleep(0.1)
    raise TimeoutError(f"server never reached {states}")


def open_doc(client: LanguageClient, uri: str, text: str, language: str = "python", version: int = 1) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id=language, version=version, text=text)))


def inline_params(uri: str, line: int, character: int) -> types.InlineCompletionParams:
    return types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri), position=types.Position(line, character),
        context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked))
