import os

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from tests.lsp_session import SERVER, record_notifications, start_session, wait_state

# git as the tests run it (``git init`` in temporary folders, the servers' ``git ls-files``) is git with no
# settings of the user's: under a git hook (pre-commit, pre-push) GIT_DIR and GIT_INDEX_FILE name the hook's
# repository, so ``git -C tmp add`` staged the tests' files in it and the listings read its index; a global
# ``core.excludesFile`` hid files the listing tests expect. Set before any test or server starts (servers
# inherit the environment).
for _name in [name for name in os.environ if name.startswith("GIT_")]:
    del os.environ[_name]
os.environ.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")


@pytest.fixture
def child_processes(monkeypatch) -> list:
    """Each child process started (``subprocess.Popen``) during the test, in order."""
    import subprocess

    started: list = []

    class Recorded(subprocess.Popen):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self)
    monkeypatch.setattr(subprocess, "Popen", Recorded)
    return started


@pytest.fixture
def canvas(monkeypatch):
    """The multi-hole canvas for a body hole, as "Fill holes" has it for a stub on its header's line
    (``def f(): ...``) or more holes than ``oneline.MAX_LINE_HOLES``: "Complete body" itself is written line by
    line (engine/oneline.py ``fill_body``; its gates: tests/test_oneline_actions.py)."""
    monkeypatch.setattr("engine.serve.body_place", lambda request: None)


@pytest.fixture(scope="module")
def embedded_engine():
    """The engine on the embedded model, one thread, no confidence bar (started once per module)."""
    from engine import Engine, EngineConfig

    eng = Engine(EngineConfig.of(threads=1, min_confidence=0.0))
    eng.start().result(timeout=120)
    yield eng
    eng.close()


@pytest.fixture(scope="session")
def team_engine():
    """A real local Ray cluster with a Ray Serve team server: two replicas of the embedded model (started once)."""
    try:
        from engine.team.options import TeamOptions
        from engine.team.ray_app import start_local, stop_local
    except ImportError as exc:
        pytest.skip(f"Ray Serve is not installed ({exc}): pip install 'ray[serve]'")
    try:
        url = start_local(TeamOptions(replicas=2, num_cpus=0.5, max_batch=8))
    except Exception as exc:  # noqa: BLE001 (Ray cannot start here: say why)
        pytest.skip(f"Ray cannot start on this machine: {type(exc).__name__}: {exc}")
    yield url
    stop_local()


@pytest_lsp.fixture(config=SERVER, params=["vscode", "neovim", "remote"], scope="module")
async def client(request, lsp_client: LanguageClient):
    """A real server on the embedded model, under each editor's capability snapshot; "remote": the server's model
    is the Ray Serve team server's (the ``engine`` setting), under the VS Code snapshot."""
    record_notifications(lsp_client)
    remote = {"engine": request.getfixturevalue("team_engine")} if request.param == "remote" else {}
    snapshot = "vscode" if request.param == "remote" else request.param
    await start_session(lsp_client, snapshot, {"drafts": True, "draftIntervalMs": 0, **remote})
    await wait_state(lsp_client, "ready")
    lsp_client.snapshot, lsp_client.editor = request.param, snapshot
    yield
    await lsp_client.shutdown_session()
