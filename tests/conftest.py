import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from tests.lsp_session import SERVER, record_notifications, start_session, wait_state


@pytest_lsp.fixture(config=SERVER, params=["vscode", "neovim"], scope="module")
async def client(request, lsp_client: LanguageClient):
    """A real server on the embedded model, under each editor's capability snapshot."""
    record_notifications(lsp_client)
    await start_session(lsp_client, request.param, {"drafts": True, "draftIntervalMs": 0})
    await wait_state(lsp_client, "ready")
    lsp_client.snapshot = request.param
    yield
    await lsp_client.shutdown_session()
