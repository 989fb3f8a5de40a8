"""Lines of the workspace's other files as fills for the rest of a typed line: counting, tables, the options, the
ranking, the server's index and its updates on save."""

import math
import os
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from engine import EngineState, FillRequest, InfillRequest, worklines
from engine.backends.base import Candidate, Control
from engine.config import FillOptions
from engine.confidence import features
from engine.context import decide_hole
from engine.doclines import COMMON, DOCUMENT, WORKSPACE, line_options
from engine.infill import PRIOR_OFFSET, PRIOR_WEIGHT, complete, copy_rank
from engine.languages import spec_for
from engine.requests import HoleFill, HoleKind
from tests.test_doclines import Scoring

PY = spec_for("python")


def test_a_line_counts_once_per_file_and_a_table_keeps_the_lines_in_enough_files():
    ws = worklines.Workspace(min_files=2)
    ws.update("a.py", "python", "from app.models import User\nx = 1\nx = 1\n\tlog = get_logger('😀')\r\n")
    ws.update("b.py", "python", "    from app.models import User\r\nlog = get_logger('😀')\ny\n")
    ws.update("c.ts", "typescript", "from app.models import User\n")
    assert ws.table("python") is None                       # nothing built before a refresh
    ws.refresh()
    t = ws.table("python")
    assert t.lines == ["from app.models import User", "log = get_logger('😀')"]   # in 2 files; x = 1 in one only
    assert list(t.files) == [2, 2]
    assert t.starting_with("from app") == [("from app.models import User", 0.0)]
    assert ws.table("typescript") is None and ws.table("typescriptreact") is None   # in one TS file only
    assert ws.files == 3
    every = worklines.Workspace()                                          # the default: a line of any file
    every.update("a.py", "python", "x = 1\nx = 1\nimport os\n")
    every.update("b.py", "python", "import os\n")
    every.refresh()
    assert every.table("python").lines == ["import os", "x = 1"] and list(every.table("python").files) == [2, 1]


def test_changed_and_removed_files_count_again_after_a_refresh_and_tsx_counts_with_typescript():
    ws = worklines.Workspace(min_files=2)
    ws.update("a.py", "python", "import numpy as np\n")
    ws.update("b.py", "python", "import numpy as np\n")
    ws.refresh()
    assert ws.table("python").lines == ["import numpy as np"]
    ws.update("b.py", "python", "import pandas as pd\n")   # changed: the old lines no longer count
    assert ws.table("python").lines == ["import numpy as np"]   # the last built table until the refresh
    ws.refresh()
    assert ws.table("python") is None
    ws.update("c.py", "python", "import pandas as pd\n")
    ws.remove("a.py")
    ws.remove("never-there.py")
    ws.refresh()
    assert ws.table("python").lines == ["import pandas as pd"] and ws.files == 2
    # the default table (every line) kept in order as files come and go after its first build
    every = worklines.Workspace()
    every.update("a.py", "python", "b = 2\nd = 4\n")
    every.refresh()
    every.update("b.py", "python", "a = 1\nc = 3\nb = 2\n")
    every.update("a.py", "python", "e = 5\n")
    every.refresh()
    assert every.table("python").lines == ["a = 1", "b = 2", "c = 3", "e = 5"]
    every.remove("b.py")
    every.refresh()
    assert every.table("python").lines == ["e = 5"]
    ws.update("x.ts", "typescript", "import { api } from './api';\n")
    ws.update("y.tsx", "typescriptreact", "import { api } from './api';\n")
    ws.refresh()
    assert ws.table("typescriptreact").lines == ["import { api } from './api';"]


def test_scan_counts_what_git_would_track_and_the_registry_names_it(tmp_path):
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("from pkg.util import frobnicate\n")
    (root / "pkg" / "b.py").write_text("from pkg.util import frobnicate\n")
    (root / "build").mkdir()
    (root / "build" / "c.py").write_text("from pkg.util import frobnicate\nignored_twice()\n")
    (root / "build" / "d.py").write_text("ignored_twice()\n")
    (root / ".gitignore").write_text("build/\n")
    (root / "notes.txt").write_text("from pkg.util import frobnicate\n")
    ws = worklines.scan(root)
    assert ws.files == 2
    assert list(ws.table("python").files) == [2] and ws.table("python").lines == ["from pkg.util import frobnicate"]
    worklines.register(str(root), ws)
    try:
        assert worklines.lookup(str(root)) is ws
        assert worklines.lookup(None) is None and worklines.lookup("/elsewhere") is None
    finally:
        worklines.unregister(str(root))
    assert worklines.lookup(str(root)) is None
    with pytest.raises(ValueError):
        worklines.scan(tmp_path / "missing")


def workspace_of(*texts: str, language: str = "python", suffix: str = ".py") -> worklines.Workspace:
    ws = worklines.Workspace()
    for i, text in enumerate(texts):
        ws.update(f"f{i}{suffix}", language, text)
    ws.refresh()
    return ws


def test_workspace_lines_come_after_the_documents_and_before_common_lines_with_their_sources():
    ws = workspace_of(*["import os.path\nimport otter_client as oc\n"] * 3, "import otter_client as oc\nimport oslo\n",
                      "import oslo\n")
    text = "import os.path\n\nimport o"
    hole = replace(decide_hole(PY, text, len(text)), start=len(text), heal="")
    got = line_options(text, hole, "", "python", ws.table("python"))
    assert got.texts[0] == "s.path\n" and got.sources[0] == DOCUMENT and got.priors[0] is None
    workspace = [t for t, s in zip(got.texts, got.sources) if s == WORKSPACE]
    assert workspace == ["tter_client as oc\n", "slo\n"]                # the most widespread first, no repeat
    priors = [p for p, s in zip(got.priors, got.sources) if s == WORKSPACE]
    assert priors == pytest.approx([math.log(4 / 9), math.log(2 / 9)])  # shares of "import o..." (os.path in 3)
    first_common = got.sources.index(COMMON)
    assert first_common > got.sources.index(WORKSPACE) and "s\n" in got.texts[first_common:]   # "import os"
    # inside an editor's closers the same rule as the document's lines: ends with them, stops before them
    ws2 = workspace_of("frob(a, b)\n", "frob(a, b)\n")
    text = "x = 1\nfrob()"
    hole = replace(decide_hole(PY, text, len(text) - 1), start=len(text) - 1, heal="")
    assert line_options(text, hole, ")", None, ws2.table("python")).texts == ("a, b",)


def test_a_workspace_line_ranks_by_its_score_and_prior_and_is_offered_with_its_prior():
    cand = Candidate(("x",), ((0.5,),), (((0, 1),),), -0.5)
    assert copy_rank(cand, -2.0) == pytest.approx(-0.5 + PRIOR_WEIGHT * -2.0 + PRIOR_OFFSET)   # as a common line
    assert copy_rank(cand, None) == -0.5
    ws = workspace_of("result = fetch_rows(db, query)\n", "result = fetch_rows(db, query)\n")
    worklines.register("test:rank", ws)
    try:
        text = "from rows import fetch_rows\n\ndef f(db, query):\n    result = fet"   # a name the file imports
        option = "ch_rows(db, query)\n"
        backend = Scoring("ch(x)", {option: 0.9})
        c = complete(backend, FillOptions(), InfillRequest(text + "\n", len(text), "python", workspace="test:rank"),
                     Control(lambda s: None))
        assert backend.plans[0].options[0] == option
        copy = next(f for f in c.considered if f.copied)
        assert copy.text == option.rstrip("\n") and copy.workspace == 0.0 and copy.common is None
        # workspaceLines off, or a request that names no workspace: not sent
        for options, name in ((FillOptions(workspace_lines=False), "test:rank"), (FillOptions(), None)):
            backend = Scoring("ch(x)", {option: 0.9})
            complete(backend, options, InfillRequest(text + "\n", len(text), "python", workspace=name),
                     Control(lambda s: None))
            assert option not in backend.plans[0].options
    finally:
        worklines.unregister("test:rank")


def test_workspace_line_features():
    text = "x = 1\nfrom app import \n"
    at = text.index(" \n") + 1
    copy = HoleFill(at, at, "models", (0.5,), copied=True, workspace=-0.5)
    feats = features(copy, [], text, PY, HoleKind.INLINE)
    assert feats["workspace"] == 1 and feats["workspace_prior"] == -0.5 and feats["common"] == 0
    assert features(replace(copy, workspace=None), [], text, PY, HoleKind.INLINE)["workspace"] == 0


def test_the_engine_offers_a_workspace_line_through_the_real_model(embedded_engine):
    ws = workspace_of("from zorblax.handlers import register_quux_handler\n",
                      "import os\nfrom zorblax.handlers import register_quux_handler\n")
    worklines.register("test:real", ws)
    try:
        text = "import sys\nfrom zorblax.h\n\n\ndef main():\n    register_quux_handler(sys.argv)\n"
        cursor = text.index("zorblax.h") + len("zorblax.h")
        c = embedded_engine.infill_sync(InfillRequest(text, cursor, "python", workspace="test:real"), timeout=60)
        assert c.fills and c.fills[0].text == "andlers import register_quux_handler"
        assert c.fills[0].workspace is not None
        off = embedded_engine.infill_sync(InfillRequest(text, cursor, "python"), timeout=60)
        assert not off.fills or off.fills[0].text != "andlers import register_quux_handler"
    finally:
        worklines.unregister("test:real")



def test_fill_holes_and_complete_body_take_the_workspaces_lines_through_the_real_model(embedded_engine):
    """A code action's lines are filled as the cursor's line is (engine/oneline.py): with the request's workspace,
    they take its files' lines as typing would (``FillRequest.workspace``)."""
    from engine.targets import survey

    head = "from zorblax import decode_zorblax_payload, respond\n\n\ndef handler(request):\n"
    body = "    payload = decode_zorblax_payload(request.body)\n    return respond(payload)\n"
    worklines.register("test:actions", workspace_of(head + body, "import os\n" + head + body))
    try:
        stubbed = head + "    ...\n"                       # the whole body a stub: "Fill 1 hole" and "Complete body"
        found = survey(stubbed, "python", stubbed.index("..."), stubbed.index("..."))
        todo = head + "    # TODO\n    return respond(payload)\n"   # a stub line among code: "Fill 1 hole"
        at = todo.index("# TODO")
        todo_found = survey(todo, "python", at, at)
        requests = [FillRequest(stubbed, "python", found.blanks), FillRequest(stubbed, "python", (found.body,),
                                                                              found.callers, body=True),
                    FillRequest(todo, "python", todo_found.blanks)]
        for request in requests:
            c = embedded_engine.infill_sync(replace(request, workspace="test:actions"), timeout=120)
            assert len(c.fills) == 1, c
            text = request.text
            filled = text[:c.fills[0].start] + c.fills[0].text + text[c.fills[0].end:]
            assert filled == head + body.rstrip("\n") + "\n" or filled == head + body, repr(filled)
            without = embedded_engine.infill_sync(request, timeout=120)
            assert all("decode_zorblax_payload(request.body)" not in f.text for f in without.fills)
    finally:
        worklines.unregister("test:actions")

def wait_until(predicate, timeout: float = 60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("timed out")


def start_watching_server(client, root) -> tuple[str, dict]:
    """Initialize a server on ``root`` as a client that registers file watchers dynamically, no bar: the glob it
    asks to watch and its stats once the workspace is counted."""
    watching = {"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}}}
    client.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": watching,
                                  "initializationOptions": {"threads": 1, "minConfidence": 0}})
    client.notify("initialized", {})
    client.wait_ready()
    registered = client.wait_for("client/registerCapability", timeout=30)["registrations"][0]
    assert registered["method"] == "workspace/didChangeWatchedFiles"
    stats = wait_until(lambda: (s := client.request("diffusion/stats", {}))["workspaceLines"]["state"] == "ready"
                       and s)
    return registered["registerOptions"]["watchers"][0]["globPattern"], stats


def inline_texts(client, uri: str, at: dict) -> list[str]:
    """The texts of the inline items the server offers at ``at`` in the document at ``uri``."""
    got = client.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": at, "context": {"triggerKind": 1}})
    items = got["items"] if isinstance(got, dict) else (got or [])
    return [i["insertText"] for i in items]


def test_the_server_indexes_its_workspace_and_counts_a_saved_document_again(tmp_path):
    from benchmarks.lsp_client import LspClient

    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    line = "from zorblax.handlers import register_quux_handler"
    for name in ("a.py", "b.py"):
        (root / name).write_text(f"import os\n{line}\n")
    (root / "c.py").write_text("from zorblax.settings import load_grault_config\n")
    doc = root / "main.py"
    text = "import sys\nfrom zorblax.\n\n\ndef main():\n    return sys.argv\n"
    doc.write_text(text)
    uri = doc.as_uri()
    with LspClient([sys.executable, "-m", "lsp_server"]) as client:
        glob, stats = start_watching_server(client, root)
        assert glob.startswith("**/*.{")
        assert stats["workspaceLines"]["files"] == 4
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                "text": text}})
        at = {"line": 1, "character": len("from zorblax.")}

        def offered():
            return inline_texts(client, uri, at)

        assert "handlers import register_quux_handler" in offered()
        # the user saves a new file: its lines count too
        other = root / "d.py"
        other.write_text("from zorblax.plumbus import fleeb_juice_factory\n")
        client.notify("textDocument/didOpen", {"textDocument": {"uri": other.as_uri(), "languageId": "python",
                                                                "version": 1, "text": other.read_text()}})
        client.notify("textDocument/didSave", {"textDocument": {"uri": other.as_uri()}})
        wait_until(lambda: client.request("diffusion/stats", {})["workspaceLines"]["files"] == 5)
        # a typed start only that line has
        edited = text.replace("from zorblax.\n", "from zorblax.p\n")
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                 "contentChanges": [{"text": edited}]})
        at = {"line": 1, "character": len("from zorblax.p")}
        assert "lumbus import fleeb_juice_factory" in offered()
        # outside the editor: a file written (a checkout) and one deleted, as the client's watcher reports them
        (root / "e.py").write_text("from zorblax.quorks import schwifty_mode\n")
        (root / "c.py").unlink()
        client.notify("workspace/didChangeWatchedFiles", {"changes": [
            {"uri": (root / "e.py").as_uri(), "type": 1}, {"uri": (root / "notes.txt").as_uri(), "type": 1},
            {"uri": (tmp_path / "elsewhere.py").as_uri(), "type": 1}]})
        wait_until(lambda: client.request("diffusion/stats", {})["workspaceLines"]["files"] == 6)   # e.py only
        client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": (root / "c.py").as_uri(), "type": 3}]})
        wait_until(lambda: client.request("diffusion/stats", {})["workspaceLines"]["files"] == 5)   # c.py gone
        edited = text.replace("from zorblax.\n", "from zorblax.q\n")
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3},
                                                 "contentChanges": [{"text": edited}]})
        at = {"line": 1, "character": len("from zorblax.q")}
        assert "uorks import schwifty_mode" in offered()



def test_the_servers_code_actions_take_the_workspaces_lines(tmp_path):
    """The server names the document's workspace in "Fill holes" and "Complete body" as in an inline request: a stub
    body gets the lines its workspace's files have there, written into the document as edits."""
    from benchmarks.lsp_client import LspClient, apply_workspace_edit, position_at
    from tests.test_action_quality import CAPABILITIES

    root = tmp_path / "ws"
    root.mkdir()
    head = "from zorblax import decode_zorblax_payload, respond\n\n\ndef handler(request):\n"
    body = "    payload = decode_zorblax_payload(request.body)\n    return respond(payload)\n"
    for name in ("a.py", "b.py"):
        (root / name).write_text(head + body)
    doc = root / "main.py"
    text = head + "    ...\n"
    doc.write_text(text)
    uri = doc.as_uri()
    at = position_at(text, text.index("..."))
    with LspClient([sys.executable, "-m", "lsp_server"]) as client:
        client.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": CAPABILITIES,
                                      "initializationOptions": {"threads": 1}}, 120)
        client.notify("initialized", {})
        client.wait_ready()
        wait_until(lambda: client.request("diffusion/stats", {})["workspaceLines"]["state"] == "ready")
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                "text": text}})
        offered = client.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": {
            "start": at, "end": at}, "context": {"diagnostics": [], "triggerKind": 1}}, 300) or []
        titles = {a["title"]: a for a in offered}
        for title in ("Fill 1 hole", "Complete body of handler"):
            resolved = client.request("codeAction/resolve", titles[title], 300)
            assert apply_workspace_edit(text, uri, resolved["edit"]) == head + body, (title, resolved)

def test_a_saved_document_over_the_size_cap_is_not_counted_as_the_listing_would_not(tmp_path):
    """The listing skips a file over MAX_FILE_BYTES (generated or data); saving one in the editor must not count it
    either (its lines would be offered in every file), and a counted file that grows past the cap is forgotten."""
    from benchmarks.lsp_client import LspClient
    from engine.adapt.files import MAX_FILE_BYTES

    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "a.py").write_text("import os\n")
    grows = root / "grows.py"
    grows.write_text("x = 1\n")
    big = "".join(f"GENERATED_{i} = {i}\n" for i in range(MAX_FILE_BYTES // 10))
    assert len(big) > MAX_FILE_BYTES
    with LspClient([sys.executable, "-m", "lsp_server"]) as client:
        client.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {},
                                      "initializationOptions": {"threads": 1}})
        client.notify("initialized", {})
        client.wait_ready()
        wait_until(lambda: (s := client.request("diffusion/stats", {}))["workspaceLines"]["state"] == "ready" and s)
        assert client.request("diffusion/stats", {})["workspaceLines"]["files"] == 2
        for path, text in ((root / "generated.py", big), (grows, big), (root / "small.py", "y = 2\n")):
            client.notify("textDocument/didOpen", {"textDocument": {"uri": path.as_uri(), "languageId": "python",
                                                                    "version": 1, "text": text}})
            client.notify("textDocument/didSave", {"textDocument": {"uri": path.as_uri()}})
        # one queue, in order: once a folder added after the saves is counted, the saves have been
        other = tmp_path / "other"
        other.mkdir()
        (other / "b.py").write_text("z = 3\n")
        client.notify("workspace/didChangeWorkspaceFolders", {"event": {
            "added": [{"uri": other.as_uri(), "name": "other"}], "removed": []}})
        stats = wait_until(lambda: (s := client.request("diffusion/stats", {}))["workspaceLines"]["folders"] == 2
                           and s)
        assert stats["workspaceLines"]["files"] == 3   # a.py, small.py and b.py: grows.py is forgotten


def test_a_saved_or_changed_file_the_listing_skips_is_not_counted_either(tmp_path):
    """The listing skips gitignored and vendored files (``node_modules``, ``.venv``...); saving one in the editor
    (didSave), or one changing on disk (didChangeWatchedFiles), counted it anyway: its lines were offered in every
    file. Both follow the listing's rules now (``engine.adapt.files.listed``)."""
    from benchmarks.lsp_client import LspClient

    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("build/\n")
    (root / "a.py").write_text("import os\n")
    vendored = root / "node_modules" / "pkg" / "index.js"
    vendored.parent.mkdir(parents=True)
    vendored.write_text("module.exports = 1;\n")
    with LspClient([sys.executable, "-m", "lsp_server"]) as client:
        client.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {},
                                      "initializationOptions": {"threads": 1}})
        client.notify("initialized", {})
        client.wait_ready()
        wait_until(lambda: (s := client.request("diffusion/stats", {}))["workspaceLines"]["state"] == "ready" and s)
        assert client.request("diffusion/stats", {})["workspaceLines"]["files"] == 1
        for path, language in ((root / "build" / "gen.py", "python"), (root / ".venv" / "lib" / "site.py", "python"),
                               (vendored, "javascript"), (root / "small.py", "python")):
            client.notify("textDocument/didOpen", {"textDocument": {"uri": path.as_uri(), "languageId": language,
                                                                    "version": 1, "text": "y = 2\n"}})
            client.notify("textDocument/didSave", {"textDocument": {"uri": path.as_uri()}})
        client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": vendored.as_uri(), "type": 2}]})
        # one queue, in order: once a folder added after the saves is counted, the saves have been
        other = tmp_path / "other"
        other.mkdir()
        (other / "b.py").write_text("z = 3\n")
        client.notify("workspace/didChangeWorkspaceFolders", {"event": {
            "added": [{"uri": other.as_uri(), "name": "other"}], "removed": []}})
        stats = wait_until(lambda: (s := client.request("diffusion/stats", {}))["workspaceLines"]["folders"] == 2
                           and s)
        assert stats["workspaceLines"]["files"] == 3   # a.py, small.py and b.py


def test_every_workspace_folder_is_counted_and_a_document_gets_its_own_folders_lines(tmp_path):
    from benchmarks.lsp_client import LspClient

    folders = {}
    for name in ("alpha", "beta", "gamma"):
        folders[name] = root = tmp_path / name
        root.mkdir()
        (root / "lib.py").write_text(f"import os\nfrom zorblax.{name} import only_in_{name}\n")
    text = "import sys\nfrom zorblax.\n\n\ndef main():\n    return sys.argv\n"
    docs = {name: (folders[name] / "main.py").as_uri() for name in folders}

    def folder(name: str) -> dict:
        return {"uri": folders[name].as_uri(), "name": name}

    with LspClient([sys.executable, "-m", "lsp_server"]) as client:
        client.request("initialize", {"processId": os.getpid(), "rootUri": folders["alpha"].as_uri(),
                                      "workspaceFolders": [folder("alpha"), folder("beta")],
                                      "capabilities": {"workspace": {"workspaceFolders": True}},
                                      "initializationOptions": {"threads": 1, "minConfidence": 0}})
        client.notify("initialized", {})
        client.wait_ready()
        stats = wait_until(lambda: (s := client.request("diffusion/stats", {}))["workspaceLines"]["state"] == "ready"
                           and s["workspaceLines"]["folders"] == 2 and s)
        assert stats["workspaceLines"]["files"] == 2

        def offered(name: str) -> list[str]:
            client.notify("textDocument/didOpen", {"textDocument": {"uri": docs[name], "languageId": "python",
                                                                    "version": 1, "text": text}})
            got = client.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": docs[name]}, "position": {"line": 1, "character": len("from zorblax.")},
                "context": {"triggerKind": 1}})
            client.notify("textDocument/didClose", {"textDocument": {"uri": docs[name]}})
            items = got["items"] if isinstance(got, dict) else (got or [])
            return [i["insertText"] for i in items]

        in_beta = offered("beta")
        assert "beta import only_in_beta" in in_beta and not any("alpha" in t for t in in_beta)
        assert "alpha import only_in_alpha" in offered("alpha")
        # beta leaves the workspace, gamma joins: beta's document is outside every folder (the first one's lines)
        client.notify("workspace/didChangeWorkspaceFolders", {"event": {"added": [folder("gamma")],
                                                                        "removed": [folder("beta")]}})
        wait_until(lambda: (s := client.request("diffusion/stats", {})["workspaceLines"])["state"] == "ready"
                   and s["folders"] == 2 and "gamma import only_in_gamma" in offered("gamma"))
        assert not any("beta" in t for t in offered("beta")) and "alpha import only_in_alpha" in offered("beta")


def test_uris_that_name_no_local_file_are_no_files_and_never_fail_a_request(tmp_path):
    """A folder or document URI with a NUL byte (%00) names no file: it failed initialize outright (ValueError:
    embedded null byte, a server with no session), dropped the good folders added beside it and failed each
    inline request of its document. A ``file://host/...`` URI is another machine's file, not this one's."""
    from benchmarks.lsp_client import LspClient

    root = tmp_path / "ws"
    other = tmp_path / "other ünïcode"
    for folder in (root, other):
        folder.mkdir()
    (root / "a.py").write_text("import os\nfrom zorblax.alpha import only_in_alpha\n")
    (other / "b.py").write_text("from zorblax.beta import only_in_beta\n")
    nul = root.as_uri() + "/x%00y"
    with LspClient([sys.executable, "-m", "lsp_server"]) as client:
        client.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(),
                                      "workspaceFolders": [{"uri": nul, "name": "nul"},
                                                           {"uri": root.as_uri(), "name": "ws"}],
                                      "capabilities": {}, "initializationOptions": {"threads": 1, "minConfidence": 0}})
        client.notify("initialized", {})
        client.wait_ready()
        stats = lambda: client.request("diffusion/stats", {})["workspaceLines"]   # noqa: E731
        wait_until(lambda: stats()["state"] == "ready" and stats()["folders"] == 1)
        client.notify("workspace/didChangeWorkspaceFolders", {"event": {
            "added": [{"uri": nul + "z", "name": "nul"}, {"uri": other.as_uri() + "/", "name": "other"}],
            "removed": []}})
        wait_until(lambda: stats()["state"] == "ready" and stats()["folders"] == 2 and stats()["files"] == 2)
        text = "import sys\nfrom zorblax.\n"
        for uri in (root.as_uri() + "/main%00.py", "file://elsewhere" + str(root / "c.py")):
            client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                    "text": text}})
            got = client.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": uri}, "position": {"line": 1, "character": len("from zorblax.")},
                "context": {"triggerKind": 1}})
            items = got["items"] if isinstance(got, dict) else (got or [])
            assert "alpha import only_in_alpha" in [i["insertText"] for i in items]   # the first folder's lines
            client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri, "type": 1}]})
            client.notify("textDocument/didSave", {"textDocument": {"uri": uri}, "text": "from zorblax.g import x\n"})
        # a file changed after them (the queue is in order): counted, and the other machine's c.py was not
        (root / "d.py").write_text("from zorblax.delta import only_in_delta\n")
        client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": (root / "d.py").as_uri(), "type": 1}]})
        assert wait_until(lambda: stats()["files"] >= 3) and stats()["files"] == 3
        assert client.proc.poll() is None


def test_a_folder_and_files_named_in_bytes_that_are_not_utf8_are_counted_and_found(tmp_path):
    """A folder whose name is not UTF-8 (Latin-1 ``café``; Neovim's URI escapes its bytes: ``caf%E9``) was read as
    ``caf\ufffd``, a folder that does not exist: its lines were never counted ("not a directory") and its documents
    got the first folder's lines. Now the URI's bytes name the folder, as the listing's own names do, and a saved
    file there counts again; the log file writes the name escaped."""
    from urllib.parse import quote_from_bytes

    from benchmarks.lsp_client import LspClient

    first = tmp_path / "first"
    first.mkdir()
    (first / "a.py").write_text("import os\nfrom zorblax.alpha import only_in_alpha\n")
    latin = os.fsencode(tmp_path) + b"/caf\xe9"
    os.mkdir(latin)
    with open(latin + b"/n\xe9.py", "w") as handle:
        handle.write("import os\nfrom zorblax.latin import only_in_latin\n")
    uri = "file://" + quote_from_bytes(latin)
    log = tmp_path / "server.log"
    with LspClient([sys.executable, "-m", "lsp_server", "-v", "--log-file", str(log)]) as client:
        client.request("initialize", {"processId": os.getpid(), "rootUri": first.as_uri(),
                                      "workspaceFolders": [{"uri": first.as_uri(), "name": "first"},
                                                           {"uri": uri, "name": "latin"}],
                                      "capabilities": {}, "initializationOptions": {"threads": 1, "minConfidence": 0}})
        client.notify("initialized", {})
        client.wait_ready()
        stats = lambda: client.request("diffusion/stats", {})["workspaceLines"]   # noqa: E731
        wait_until(lambda: stats()["state"] in ("ready", "failed") and stats()["folders"] + bool(stats()["error"]) == 2)
        assert stats()["error"] is None and stats()["folders"] == 2 and stats()["files"] == 2
        doc, text = uri + "/main.py", "import sys\nfrom zorblax.\n"
        client.notify("textDocument/didOpen", {"textDocument": {"uri": doc, "languageId": "python", "version": 1,
                                                                "text": text}})
        got = client.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": doc}, "position": {"line": 1, "character": len("from zorblax.")},
            "context": {"triggerKind": 1}})
        items = got["items"] if isinstance(got, dict) else (got or [])
        assert "latin import only_in_latin" in [i["insertText"] for i in items]   # its own folder's lines
        client.notify("textDocument/didSave", {"textDocument": {"uri": doc}, "text": text})
        wait_until(lambda: stats()["files"] == 3)
    escaped = os.fsdecode(latin).encode("utf-8", "backslashreplace").decode()
    assert f"files of {escaped} counted" in log.read_text()
    assert "Logging error" not in log.read_text()


def test_with_workspace_lines_off_the_server_reads_no_folder_and_a_bad_folder_fails_clearly(tmp_path):
    from benchmarks.lsp_client import LspClient

    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("import os\n")
    for options, state in (({"workspaceLines": False}, "off"), ({}, "failed")):
        with LspClient([sys.executable, "-m", "lsp_server"]) as client:
            uri = root.as_uri() if state == "off" else (tmp_path / "missing").as_uri()
            client.request("initialize", {"processId": os.getpid(), "rootUri": uri, "capabilities": {},
                                          "initializationOptions": {"threads": 1, **options}})
            client.notify("initialized", {})
            client.wait_ready()
            # the counting starts once the model is ready (a callback on the loop): until then the state is "off"
            waiting = ("indexing",) if state == "off" else ("off", "indexing")
            stats = wait_until(lambda: (s := client.request("diffusion/stats", {}))["workspaceLines"]["state"]
                               not in waiting and s)
            assert stats["workspaceLines"]["state"] == state and stats["workspaceLines"]["files"] == 0
            if state == "failed":
                assert "not a directory" in stats["workspaceLines"]["error"]


def test_a_benchmark_holes_workspace_is_its_packages_other_files(tmp_path):
    import json

    from benchmarks.tasks import Task
    from benchmarks.workspaces import INDEX, CorpusWorkspaces

    files = {"pypi:alpha/a.py": "import alpha.core as ac\nsecret_of_a()\n",
             "pypi:alpha/b.py": "import alpha.core as ac\n", "pypi:beta/c.py": "import beta_only\n"}
    rows = {"train": ["pypi:alpha/a.py", "pypi:beta/c.py"], "valid": ["pypi:alpha/b.py"]}
    manifest = []
    for split, ids in rows.items():
        (tmp_path / "files" / split).mkdir(parents=True)
        (tmp_path / "files" / split / "python.jsonl").write_text(
            "".join(json.dumps({"id": i, "text": files[i]}, ensure_ascii=False) + "\n" for i in ids))
        manifest += [{"id": i, "ecosystem": "pypi", "package": i.split(":")[1].split("/")[0]} for i in ids]
    (tmp_path / "manifest.jsonl").write_text("".join(json.dumps(m) + "\n" for m in manifest))
    ws = CorpusWorkspaces(tmp_path)
    assert (tmp_path / INDEX).is_file() and CorpusWorkspaces(tmp_path).offsets == ws.offsets   # kept, reused
    task = lambda fid: Task(f"python:{fid}:1", "", "", "")   # noqa: E731
    tasks = ws.grouped([task("pypi:beta/c.py"), task("pypi:alpha/b.py"), task("pypi:alpha/a.py")])
    assert [t.task_id for t in tasks] == ["python:pypi:beta/c.py:1", "python:pypi:alpha/a.py:1",
                                          "python:pypi:alpha/b.py:1"]
    key = ws.key(task("pypi:alpha/b.py"))
    assert key == "bench:pypi:alpha"
    table = worklines.lookup(key).table("python")
    assert table.lines == ["import alpha.core as ac", "secret_of_a()"]      # a.py only: b.py is the hole's
    ws.key(task("pypi:alpha/a.py"))
    assert worklines.lookup(key).table("python").lines == ["import alpha.core as ac"]   # b.py back, a.py out
    assert ws.key(task("pypi:beta/c.py")) == "bench:pypi:beta" and worklines.lookup(key) is None
    assert worklines.lookup("bench:pypi:beta").table("python") is None      # its one file is the hole's
    worklines.unregister("bench:pypi:beta")
    assert ws.key(task("pypi:gamma/none.py")) is None
    with pytest.raises(FileNotFoundError, match="no manifest"):   # a one-line error of the benchmarks' run_cli
        CorpusWorkspaces(tmp_path / "files")


def test_counting_waits_while_a_fill_runs(tmp_path):
    from lsp_server.workspace_lines import WorkspaceLines

    for name in ("a.py", "b.py", "c.go"):
        (tmp_path / name).write_text("x = 1\n" if name.endswith(".py") else "package c\n")
    calls = []
    ws = worklines.scan(tmp_path, pause=lambda: calls.append(1))
    assert ws.files == 3 and len(calls) >= 4       # at least before each file and before the tables (the walk too)

    class Server:   # what WorkspaceLines reads of the server
        settings = type("S", (), {"fill": FillOptions()})()
        engine = type("E", (), {"state": EngineState.READY})()
    lines = WorkspaceLines(Server())
    lines.roots = [str(tmp_path)]
    lines.fill_started()
    lines.fill_started()
    lines.start()
    time.sleep(0.3)
    assert lines.state == "indexing"                           # waiting for the fills
    lines.fill_finished()
    assert lines.state == "indexing" and not lines._quiet.is_set()
    lines.fill_finished()
    wait_until(lambda: lines.state == "ready", 30)
    key = lines.key()
    assert lines.files == 3 and worklines.lookup(key) is not None
    lines.close()
    assert worklines.lookup(key) is None


def test_the_folders_of_initialize_and_one_byte_cap_for_all_the_folders(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from lsprotocol import types

    from lsp_server import workspace_lines
    from lsp_server.adapting import workspace_folders
    from lsp_server.settings import Settings

    a, b, c = (tmp_path / n for n in ("a", "b", "c"))
    for root, line in ((a, "alpha_line = 1\n" * 3), (b, "beta_line = 2\n" * 3), (c, "gamma_line = 3\n")):
        root.mkdir()
        (root / "x.py").write_text(line)
    link = tmp_path / "a-link"
    link.symlink_to(a)
    folder = lambda p: types.WorkspaceFolder(uri=p.as_uri(), name=p.name)   # noqa: E731
    params = SimpleNamespace(workspace_folders=[folder(a), folder(link), folder(b)], root_uri=c.as_uri())
    assert workspace_folders(params) == [str(a.resolve()), str(b.resolve())]      # real paths, each once
    assert workspace_folders(SimpleNamespace(workspace_folders=None, root_uri=c.as_uri())) == [str(c.resolve())]
    assert workspace_folders(SimpleNamespace(workspace_folders=[], root_uri=None, root_path=None)) == []

    # a's file fills the cap: b cannot be counted, and says why; a document in b gets a's lines
    monkeypatch.setattr(workspace_lines, "MAX_TOTAL_BYTES", len("alpha_line = 1\n" * 3))
    lines = workspace_lines.WorkspaceLines(SimpleNamespace(settings=Settings(),
                                                           engine=SimpleNamespace(state=EngineState.READY)))
    lines.roots = workspace_folders(params)
    lines.start()
    try:
        wait_until(lambda: lines.state == "ready", timeout=30)
        assert lines.stats()["folders"] == 1 and lines.stats()["files"] == 1
        assert "bytes counted at most" in lines.stats()["error"] and str(b.resolve()) in lines.stats()["error"]
        a_key = lines.key((b / "main.py").as_uri())
        assert a_key == lines.key("") and a_key.endswith(str(a.resolve()))
        assert worklines.lookup(a_key).table("python").lines == ["alpha_line = 1"]
        # a leaves: b is counted now (the whole cap is its own), and every document gets b's lines
        lines.folders_changed([], [folder(a)])
        wait_until(lambda: lines.state == "ready" and lines.stats()["folders"] == 1
                   and (lines.key((a / "x.py").as_uri()) or "").endswith(str(b.resolve())), timeout=30)
        assert worklines.lookup(a_key) is None and lines.stats()["error"] is None
        b_key = lines.key("")
        assert worklines.lookup(b_key).table("python").lines == ["beta_line = 2"]
    finally:
        lines.close()
    assert worklines.lookup(b_key) is None


def test_files_created_changed_or_saved_after_the_count_stay_within_the_byte_cap(tmp_path, monkeypatch):
    """The 30 MB cap for all the folders held for the count only: files a checkout created afterwards, or saved
    ones, were all counted, whatever their bytes. Now one that does not fit is not counted (or no longer)."""
    from types import SimpleNamespace

    from lsprotocol import types

    from lsp_server import workspace_lines
    from lsp_server.settings import Settings

    first, fits = "alpha_line = 1\n" * 3, "beta_line = 2\n" * 2
    (tmp_path / "a.py").write_text(first)
    monkeypatch.setattr(workspace_lines, "MAX_TOTAL_BYTES", len(first) + len(fits))
    lines = workspace_lines.WorkspaceLines(SimpleNamespace(settings=Settings(),
                                                           engine=SimpleNamespace(state=EngineState.READY)))
    lines.roots = [str(tmp_path)]
    lines.start()

    def changed(name: str, kind: types.FileChangeType = types.FileChangeType.Created) -> None:
        lines.files_changed([types.FileEvent(uri=(tmp_path / name).as_uri(), type=kind)])

    try:
        wait_until(lambda: lines.state == "ready", timeout=30)
        (tmp_path / "b.py").write_text(fits)
        changed("b.py")
        wait_until(lambda: lines.files == 2, timeout=30)
        (tmp_path / "c.py").write_text("gamma_line = 3\n")
        changed("c.py")                                               # no room left: neither is counted
        lines.saved((tmp_path / "d.py").as_uri(), "delta_line = 4\n")
        (tmp_path / "a.py").unlink()
        changed("a.py", types.FileChangeType.Deleted)                 # handled after them (the queue is in order)
        wait_until(lambda: lines.files != 2, timeout=30)
        assert lines.files == 1 and worklines.lookup(lines.key()).table("python").lines == ["beta_line = 2"]
        (tmp_path / "b.py").write_text(fits * 3)                      # grows past the cap: forgotten
        changed("b.py", types.FileChangeType.Changed)
        wait_until(lambda: lines.files == 0, timeout=30)
        changed("c.py", types.FileChangeType.Changed)                 # room again
        wait_until(lambda: lines.files == 1, timeout=30)
        assert worklines.lookup(lines.key()).table("python").lines == ["gamma_line = 3"]
    finally:
        lines.close()


def test_a_document_saved_at_each_keystroke_while_fills_run_waits_once_with_its_last_text(tmp_path):
    """Counting waits while a fill runs, and the queue kept every save's text meanwhile: typing with auto-save and
    inline fills held one text per keystroke (up to 200 KB each) and counted each of them in turn once the fills
    stopped. A file now waits once, with its last text."""
    from types import SimpleNamespace

    from lsp_server.settings import Settings
    from lsp_server.workspace_lines import WorkspaceLines

    (tmp_path / "a.py").write_text("alpha_line = 1\n")
    (tmp_path / "b.py").write_text("beta_line = 2\n")
    lines = WorkspaceLines(SimpleNamespace(settings=Settings(), engine=SimpleNamespace(state=EngineState.READY)))
    lines.roots = [str(tmp_path)]
    lines.start()
    try:
        wait_until(lambda: lines.state == "ready", timeout=30)
        lines.fill_started()                                 # the user types; each keystroke's fill runs
        body = "".join(f"padding_{i} = {i}\n" for i in range(400))
        for k in range(300):                                 # and the editor saves at each keystroke
            lines.saved((tmp_path / "a.py").as_uri(), f"{body}typed_{k} = {k}\n")
            lines.saved((tmp_path / "b.py").as_uri(), f"beta_line = {k}\n")
        assert lines._queue.qsize() <= 2 and len(lines._pending) == 2   # one each, not 300 texts each
        lines.fill_finished()
        wait_until(lambda: lines._queue.empty() and not lines._pending and lines.state == "ready", timeout=30)
        wait_until(lambda: "typed_299 = 299" in worklines.lookup(lines.key()).table("python").lines, timeout=30)
        table = worklines.lookup(lines.key()).table("python").lines
        assert "beta_line = 299" in table and not any(line.startswith("typed_") and line != "typed_299 = 299"
                                                      for line in table)
    finally:
        lines.close()


def test_a_storm_of_watched_file_events_is_resolved_on_the_thread_not_the_event_loop(tmp_path, monkeypatch):
    """``workspace/didChangeWatchedFiles`` resolved each event (URI, real path, folder, language) in its handler, on
    the event loop: 20,000 events for files a checkout deleted held every request behind them for 0.7-2.7 s. The
    handler now queues the notification as one item; the thread resolves it, each file once."""
    import threading
    from types import SimpleNamespace

    from lsprotocol import types

    from lsp_server import workspace_lines
    from lsp_server.settings import Settings

    (tmp_path / "kept.py").write_text("kept_line = 1\n")
    (tmp_path / "gone.py").write_text("gone_line = 2\n")
    lines = workspace_lines.WorkspaceLines(SimpleNamespace(settings=Settings(),
                                                           engine=SimpleNamespace(state=EngineState.READY)))
    lines.roots = [str(tmp_path)]
    lines.start()
    resolved_on: list[int] = []
    path_of = workspace_lines.path_of
    monkeypatch.setattr(workspace_lines, "path_of",
                        lambda uri: resolved_on.append(threading.get_ident()) or path_of(uri))
    try:
        wait_until(lambda: lines.state == "ready", timeout=30)
        (tmp_path / "gone.py").unlink()
        (tmp_path / "new.py").write_text("new_line = 3\n")
        event = lambda path, kind: types.FileEvent(uri=path.as_uri(), type=kind)   # noqa: E731
        storm = [event(tmp_path / "ghosts" / f"d{i // 100}" / f"f{i}.py", types.FileChangeType.Deleted)
                 for i in range(20_000)]
        storm += [event(tmp_path / "new.py", types.FileChangeType.Changed)] * 5_000
        storm += [event(tmp_path / "gone.py", types.FileChangeType.Deleted), event(tmp_path / "new.py", 1)]
        lines.fill_started()             # the thread waits while a fill runs: what the caller did is all done now
        lines.files_changed(storm)
        assert threading.get_ident() not in resolved_on   # no event resolved on the caller's thread (the loop)
        assert lines._queue.qsize() <= 1 and not lines._pending   # one item for the notification, nothing pending
        lines.fill_finished()
        wait_until(lambda: sorted(worklines.lookup(lines.key()).table("python").lines)
                   == ["kept_line = 1", "new_line = 3"], timeout=60)
        assert lines.files == 2 and len(resolved_on) == len(storm)
    finally:
        lines.close()


def test_a_folder_inside_another_has_its_files_counted_once(tmp_path, monkeypatch):
    """A workspace folder nested in another (a package of a monorepo opened beside it) had its files counted in
    both: twice in ``files`` and twice toward the one 30 MB cap, so a nested folder could find the cap taken by
    its own files. Each file now counts in the innermost folder that holds it (where its saves and changes go),
    also after the inner folder is removed (the outer counts them again) or added back."""
    from types import SimpleNamespace

    from lsprotocol import types

    from lsp_server import workspace_lines
    from lsp_server.settings import Settings

    outer, inner = tmp_path / "outer", tmp_path / "outer" / "pkg"
    inner.mkdir(parents=True)
    alpha, beta = "alpha_line = 1\n" * 3, "beta_line = 2\n" * 3
    (outer / "a.py").write_text(alpha)
    (inner / "b.py").write_text(beta)
    monkeypatch.setattr(workspace_lines, "MAX_TOTAL_BYTES", len(alpha) + len(beta))   # room for each file once
    lines = workspace_lines.WorkspaceLines(SimpleNamespace(settings=Settings(),
                                                           engine=SimpleNamespace(state=EngineState.READY)))
    lines.roots = [str(outer), str(inner)]
    folder = lambda p: types.WorkspaceFolder(uri=p.as_uri(), name=p.name)   # noqa: E731
    table = lambda key: sorted(worklines.lookup(key).table("python").lines)   # noqa: E731
    lines.start()
    try:
        wait_until(lambda: lines.state == "ready", timeout=30)
        assert lines.stats() | {"seconds": None} == {"state": "ready", "files": 2, "seconds": None, "error": None,
                                                     "folders": 2}
        in_inner = lines.key((inner / "main.py").as_uri())
        assert in_inner.endswith(str(inner)) and table(in_inner) == ["beta_line = 2"]
        assert table(lines.key((outer / "main.py").as_uri())) == ["alpha_line = 1"]
        # the inner folder leaves: its files are the outer's now
        lines.folders_changed([], [folder(inner)])
        wait_until(lambda: lines.state == "ready" and lines.stats()["folders"] == 1
                   and table(lines.key((inner / "main.py").as_uri())) == ["alpha_line = 1", "beta_line = 2"],
                   timeout=30)
        assert lines.files == 2 and lines.error is None
        # and back: the outer gives them up again
        lines.folders_changed([folder(inner)], [])
        wait_until(lambda: lines.state == "ready" and lines.stats()["folders"] == 2
                   and table(lines.key((outer / "main.py").as_uri())) == ["alpha_line = 1"], timeout=30)
        assert lines.files == 2 and lines.error is None
        assert table(lines.key((inner / "main.py").as_uri())) == ["beta_line = 2"]
    finally:
        lines.close()


def test_a_large_folders_lines_are_sorted_in_runs_that_let_other_threads_run(monkeypatch):
    """The first refresh sorted a language's counted lines with one ``sorted``: one C call, which holds the
    interpreter's lock throughout (441,000 lines of site-packages: 0.7-1.3 s on a loaded 2-core machine, and every
    LSP request on the event loop waited that long). They are sorted in runs, merged in Python code between whose
    steps other threads run; the order is ``sorted``'s."""
    import random

    rng = random.Random(7)
    pieces = ["x", "é", "😀", "\ud800", "_", "0", "Z", " "]
    texts = ["\n".join(f"v{f}_{i} = " + "".join(rng.choices(pieces, k=6)) for i in range(12_000))
             for f in range(5)]
    ws = worklines.Workspace()
    for f, text in enumerate(texts):
        ws.update(f"/w/f{f}.py", "python", text)
    calls: list[int] = []
    real_sorted = sorted
    monkeypatch.setattr(worklines, "sorted", lambda items, **kw: calls.append(len(items)) or real_sorted(items, **kw),
                        raising=False)
    ws.refresh()
    counted = set().union(*(worklines.lines_of(text) for text in texts))
    assert len(counted) == 60_000 and ws.table("python").lines == real_sorted(counted)
    assert calls and max(calls) <= 20_000   # before: one call of 60,000
    assert worklines.sorted_lines(["b", "a"] * 40_000) == real_sorted(["b", "a"] * 40_000)


def test_a_workspaces_keys_and_ids_are_made_distinct_by_a_sort_not_numpys_hash_path(monkeypatch):
    """numpy 2.4's ``np.unique`` without counts hashes: on a folder's neighbour keys and line ids 40-100 times
    slower than a sort (30 MB of site-packages: 0.5 s of CPU against 6-13 ms), holding the interpreter's lock
    throughout, so the first refresh's ``_compact`` held every LSP request for 0.3-0.5 s. ``distinct`` sorts; the
    neighbours found are as before."""
    import numpy as np

    rng = np.random.default_rng(3)
    values = rng.integers(0, 1 << 62, 5_000)
    for sample in (values, values[:1], values[:0], np.repeat(values[:50], 7), np.array([5, 5, 5])):
        assert np.array_equal(worklines.distinct(sample), np.unique(sample))
    hashed: list[int] = []
    real_unique = np.unique

    def unique(values, *args, **kwargs):   # counts what takes the hash path; the real np.unique runs
        if not kwargs.get("return_counts"):
            hashed.append(len(values))
        return real_unique(values, *args, **kwargs)
    monkeypatch.setattr(worklines.np, "unique", unique)
    ws = worklines.Workspace()
    for f in range(40):   # ids past _COMPACT_FROM: the first refresh compacts them
        ws.update(f"/w/f{f}.go", "go", "".join(f"if err{f}_{i} != nil {{\n\treturn err\n}}\n" for i in range(150)))
    ws.refresh()
    after, before = ws.neighbours("go", "if err3_7 != nil {", "}")
    assert after == [("return err", 1, 1)] and before[0] == ("return err", 1, 40)
    assert not hashed   # before: every file's keys and the compaction's ids went through np.unique's hash path


def test_a_go_documents_package_names_are_those_its_directorys_files_of_the_same_package_define():
    """Go reads the functions of a package's other files (its directory's, same ``package`` clause) without an
    import: a right fill calling ``setStickyBit`` (os/file_unix.go; defined in os/sticky_bsd.go) was reported as
    inventing it. The workspace keeps each Go file's top-level names by directory and package."""
    ws = worklines.Workspace()
    ws.update("/p/os/sticky.go", "go", "package os\n\nfunc setStickyBit(name string) error { return nil }\n")
    ws.update("/p/os/stat.go", "go", "package os\n\ntype fileStat struct{}\n\nconst (\n\tmodeMask = 1\n)\n")
    ws.update("/p/os/os_test.go", "go", "package os_test\n\nfunc testHelper() {}\n")    # another package
    ws.update("/p/os/exec/exec.go", "go", "package exec\n\nfunc lookPath() {}\n")       # another directory
    ws.update("/p/os/file_unix.go", "go", "package os\n\nfunc ownOld() {}\n")           # the document's saved text
    ws.update("/p/os/x.py", "python", "def setup(): pass\n")
    doc = "package os\n\nfunc Chmod(name string) error {\n\treturn nil\n}\n"
    assert ws.defined("go", "/p/os/file_unix.go", doc) == {"setStickyBit", "fileStat", "modeMask"}
    assert ws.defined("go", "/p/os/file_unix.go", doc.replace("package os", "package os_test")) == {"testHelper"}
    assert ws.defined("go", None, doc) == set() and ws.defined("python", "/p/os/y.py", "def f(): pass\n") == set()
    ws.update("/p/os/sticky.go", "go", "package os\n\nfunc setStickyBits() {}\n")   # changed
    ws.remove("/p/os/stat.go")
    assert ws.defined("go", "/p/os/file_unix.go", doc) == {"setStickyBits"}
    ws.remove("/p/os/sticky.go")
    ws.remove("/p/os/file_unix.go")
    assert ws.defined("go", "/p/os/file_unix.go", doc) == set() and ("/p/os", "os") not in ws._packages


def test_the_server_offers_a_call_of_a_function_another_file_of_the_go_package_defines(tmp_path):
    """A Go fill calling ``setStickyBit``, defined in another file of the document's package (os/file_unix.go
    calls os/sticky_bsd.go's), was reported as inventing a name and withheld: the real server, its workspace
    counted, now offers it (the workspace's line that calls it, for the typed ``setSt``)."""
    from benchmarks.lsp_client import LspClient

    root = tmp_path / "ws"
    (root / "sticky").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "sticky" / "bit.go").write_text("package sticky\n\nfunc setStickyBit(name string) error {\n\treturn nil\n}\n")
    (root / "sticky" / "mkdir.go").write_text(
        "package sticky\n\nfunc Mkdir(name string) error {\n\tsetStickyBit(name)\n\treturn nil\n}\n")
    doc = root / "sticky" / "chmod.go"
    text = "package sticky\n\nfunc Chmod(name string) error {\n\tsetSt\n\treturn nil\n}\n"
    doc.write_text(text)
    with LspClient([sys.executable, "-m", "lsp_server"]) as client:
        client.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {},
                                      "initializationOptions": {"threads": 1, "minConfidence": 0}})
        client.notify("initialized", {})
        client.wait_ready()
        wait_until(lambda: client.request("diffusion/stats", {})["workspaceLines"]["state"] == "ready")
        client.notify("textDocument/didOpen", {"textDocument": {"uri": doc.as_uri(), "languageId": "go", "version": 1,
                                                                "text": text}})
        got = client.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": doc.as_uri()}, "position": {"line": 3, "character": len("\tsetSt")},
            "context": {"triggerKind": 1}})
        items = got["items"] if isinstance(got, dict) else (got or [])
        assert [i["insertText"] for i in items][:1] == ["ickyBit(name)"]


def _go_package_with_a_generated_table(root):
    """A real Go package folder: two small files and a generated one over the listing's 200 KB per file."""
    from engine.adapt.files import MAX_FILE_BYTES

    pkg = root / "ssa"
    pkg.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (pkg / "op.go").write_text("package ssa\n\ntype Op int32\n\nfunc (o Op) String() string { return \"\" }\n")
    (pkg / "rewrite.go").write_text("package ssa\n\nfunc rewriteITab(v int) Op {\n\treturn OpITab\n}\n")
    rows = "".join(f"\tOpGenerated{i}\n" for i in range(MAX_FILE_BYTES // 14 + 100))
    (pkg / "opGen.go").write_text("// Code generated. DO NOT EDIT.\n\npackage ssa\n\nconst (\n\tOpInvalid Op = iota\n"
                                  f"\tOpITab\n{rows})\n\nvar opcodeTable = [...]int{{}}\n")
    (pkg / "gen_test.go").write_text("package ssa_test\n\nfunc genHelper() {}\n" + "// pad\n" * 40_000)
    assert (pkg / "opGen.go").stat().st_size > MAX_FILE_BYTES
    return pkg


def test_a_go_packages_names_in_a_file_the_workspace_does_not_count_are_defined(tmp_path):
    """The Go files of the document's folder that the workspace does not count (over its 200 KB per file: generated
    code, tables) define names its package reads: ssa/decompose.go's ``OpITab`` (opGen.go, 1 MB) was reported as
    invented by a right fill. They are read from disk, the document's folder's only, and kept until they change."""
    from engine.names import invented_names

    pkg = _go_package_with_a_generated_table(tmp_path)
    ws = worklines.scan(tmp_path)
    assert ws.size(str(pkg / "opGen.go")) == 0 and ws.size(str(pkg / "op.go")) > 0   # not counted
    doc = "package ssa\n\nfunc decompose(v int) Op {\n\treturn <>\n}\n"
    start, text = doc.index("<>"), doc.replace("<>", "")
    path = str(pkg / "decompose.go")
    defined = ws.defined("go", path, text)
    assert {"Op", "rewriteITab", "OpITab", "OpInvalid", "opcodeTable"} <= defined and "genHelper" not in defined
    go = spec_for("go")
    assert invented_names(go, text, start, "OpITab") == ["OpITab"]
    assert invented_names(go, text, start, "OpITab", defined=defined) == []
    assert invented_names(go, text, start, "OpITabz", defined=defined) == ["OpITabz"]
    # the other package's file, and a key that is no path on disk, read nothing; a changed file is read again
    assert "genHelper" in ws.defined("go", str(pkg / "x_test.go"), text.replace("package ssa", "package ssa_test"))
    assert ws.defined("go", "bench:ssa/decompose.go", text) == set()
    (pkg / "opGen.go").write_text((pkg / "opGen.go").read_text().replace("OpITab", "OpITable"))
    defined = ws.defined("go", path, text)
    assert "OpITable" in defined and "OpITab" not in defined


def test_the_server_offers_names_from_a_rust_glob_import_and_a_go_file_too_large_to_count(tmp_path):
    """A real server over stdio, its workspace counted: a Rust bench's call of ``read_int``, which its
    ``use minipack::decode::*;`` brings in from the crate's src/decode/mod.rs, and a Go call of ``OpITab``, defined in
    the package's generated opGen.go (over the 200 KB the workspace counts), were withheld as inventing a name; both
    are offered now (the workspace's lines that read them, for the typed starts)."""
    from benchmarks.lsp_client import LspClient

    root = tmp_path / "ws"
    crate = root / "minipack"
    for rel, text in {
        "Cargo.toml": '[package]\nname = "minipack"\nversion = "0.1.0"\n',
        "src/lib.rs": "pub mod decode;\n",
        "src/decode/mod.rs": "pub fn read_int(rd: &mut &[u8]) -> Option<i64> {\n    Some(rd[0] as i64)\n}\n",
        "src/lookup.rs": "fn lookup(buf: &[u8]) {\n    let res = crate::decode::read_int(&mut &buf[..]);\n"
                         "    let res = read_int(&mut &buf[..]);\n}\n",
    }.items():
        (crate / rel).parent.mkdir(parents=True, exist_ok=True)
        (crate / rel).write_text(text)
    pkg = _go_package_with_a_generated_table(root)
    rust_doc = crate / "benches" / "bench.rs"
    rust_text = "use minipack::decode::*;\n\nfn bench() {\n    let buf = [1u8];\n    let res = read_i\n}\n"
    go_doc = pkg / "decompose.go"
    go_text = "package ssa\n\nfunc decompose(v int) Op {\n\treturn OpIT\n}\n"
    rust_doc.parent.mkdir()
    rust_doc.write_text(rust_text)
    go_doc.write_text(go_text)
    with LspClient([sys.executable, "-m", "lsp_server"]) as client:
        client.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {},
                                      "initializationOptions": {"threads": 1, "minConfidence": 0}})
        client.notify("initialized", {})
        client.wait_ready()
        wait_until(lambda: client.request("diffusion/stats", {})["workspaceLines"]["state"] == "ready")
        offered = []
        for doc, language, text, line, typed in ((rust_doc, "rust", rust_text, 4, "    let res = read_i"),
                                                 (go_doc, "go", go_text, 3, "\treturn OpIT")):
            client.notify("textDocument/didOpen", {"textDocument": {"uri": doc.as_uri(), "languageId": language,
                                                                    "version": 1, "text": text}})
            got = client.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": doc.as_uri()}, "position": {"line": line, "character": len(typed)},
                "context": {"triggerKind": 1}})
            items = got["items"] if isinstance(got, dict) else (got or [])
            offered.append([i["insertText"] for i in items][:1])
        assert offered == [["nt(&mut &buf[..]);"], ["ab"]]
