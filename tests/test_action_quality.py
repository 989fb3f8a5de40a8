"""Code actions' quality gate: a "Fill holes" / "Complete body" form that is the model's stutter (a name or a run of
tokens repeated over and over), comments alone where code goes, or written with low token confidence is not
offered; its shorter forms are tried in order, else the hole keeps its text. The detector on real model output and
real code, the fallback with the real fill_blanks, and the new-user trial's case through the real server."""

import sys

import pytest

from benchmarks.lsp_client import LspClient, position_at
from engine.config import FillOptions
from engine.languages import spec_for
from engine.multifill import geometric_mean
from engine.requests import FillRequest
from engine.targets import survey
from engine.validate import degenerate, writes_no_code
from tests.test_actions import ScriptedBackend, _run

# What the embedded model offered for "Fill holes" / "Complete body" on the actions' development set
# (runs/conf/action-dev.jsonl) and in the new-user trial (benchmarks/results/newuser-trial.md row 5)
STUTTERS = [
    "        return locket.lock_lock_lock_lock_lock_lock(locked,)",
    "    return collections.abc_abc.abc_abc_abc_abc_abc_abc_abc_abc",
    "    return self.hook_from_hooks_hookshook_hook_hooks__hookshook_hookshookhookhookhookhook",
    "    return test_cached_with_in_in_in_in_in_in_in_in___",
    "    maxDiff = self.maxDiffs.maxDiffs.max___",
    "    _check_version____________________________________________________",
    "    return x, x, y, y, y, y, y, y, y, y, y, y,",
    "    # T the the the the the class.\n    return _",
]
# Real code that repeats itself and is fine (the corpus's own lines; names the document has)
FINE = [
    "self.self_test = a.a", "def __init__(self):\n    super().__init__()", "x = [0, 0, 0, 0, 0, 0]",
    "row = (None, None, None, None)", 'path = mkstemp("tmpXXXXXX")', "return abc_abc(x) + bye_bye",
    "_objectSpread(_objectSpread(_objectSpread(a)))", "data = b'\\x00\\x00\\x00\\x00\\x00'",
    's := Sprintf("%v %v %v %v %v", a, b, c, d, e)', "# ____________________", "obj.__class__.__name__",
]


@pytest.mark.parametrize("fill", STUTTERS)
def test_the_models_stutters_are_degenerate(fill):
    assert degenerate(fill) is not None


@pytest.mark.parametrize("fill", FINE)
def test_code_that_repeats_itself_legitimately_is_not(fill):
    assert degenerate(fill) is None


def test_a_name_or_a_run_the_document_already_has_is_the_users():
    assert degenerate("    return _DotDotDot()") is not None
    assert degenerate("    return _DotDotDot()", "class _DotDotDot:\n    pass\n") is None
    row = "    return [Fill, Fill, Fill, Fill, Fill]"
    assert degenerate(row) is not None and degenerate(row, "ROW = [Fill, Fill, Fill]\n") is None


def test_comments_alone_write_no_code():
    py, js, rust = spec_for("python"), spec_for("javascript"), spec_for("rust")
    assert writes_no_code(py, "    #\n    #\n    #\n") and writes_no_code(js, "  // TODO:")
    assert writes_no_code(rust, "    /// docs\n    // more")
    assert not writes_no_code(py, "    # the area\n    return r * r") and not writes_no_code(rust, "    #[test]")
    assert not writes_no_code(js, "  return 1;  // one")


def test_geometric_mean():
    assert geometric_mean(()) == 1.0 and geometric_mean((0.5, 0.5)) == pytest.approx(0.5)
    assert geometric_mean((1.0, 0.0)) < 1e-4


DOC = "def area(r):\n    pass\n\n\nprint(area(2))\n"


def _hole(text=DOC):
    at = text.index("pass")
    return survey(text, "python", at, at).blanks


def _body(text=DOC) -> FillRequest:
    """"Complete body" of ``text``'s stub function."""
    at = text.index("pass")
    return FillRequest(text, "python", (survey(text, "python", at, at).body,), body=True)


def test_a_stuttering_form_falls_back_to_its_shorter_form(canvas):
    """The two-line fill's second line stutters: the one-line form is offered in its place."""
    backend = ScriptedBackend("a = r * r\n    return a.lock_lock_lock")
    completion = _run(_body(), backend)
    assert [f.text for f in completion.fills] == ["    a = r * r"]
    assert completion.unsure == 0                           # the hole got a fill
    backend = ScriptedBackend("return area_area_area(r)\n    x = 1")   # every form starts with the stutter
    withheld = _run(_body(), backend)
    assert withheld.fills == () and withheld.unsure == 1    # told "not likely enough", not "nothing parses"


def test_comments_alone_are_no_fill(canvas):
    assert _run(_body(), ScriptedBackend("#\n    #\n    #")).fills == ()


class Unsure(ScriptedBackend):
    """Every token at probability 0.1."""

    def fill(self, plan, control):
        result = super().fill(plan, control)
        (c,) = result.candidates
        return type(result)((type(c)(c.texts, tuple(tuple(0.1 for _ in t) for t in c.confidences),
                                     c.token_spans, c.score),), 1, 1, result.tokens)


def test_a_fill_the_model_is_unsure_of_is_withheld_unless_every_fill_is_asked_for(canvas):
    withheld = _run(_body(), Unsure("return r * r"))
    assert withheld.fills == () and withheld.unsure == 1
    offered = _run(_body(), Unsure("return r * r"), min_confidence=0.0).fills
    assert [f.text for f in offered] == ["    return r * r"]
    assert FillOptions().min_confidence is None


# distributed/diskutils.py (BSD-3-Clause), lines 141-190, with _purge_lock's body replaced by `pass`: the new-user
# trial's case, where "Fill 1 hole" wrote `return locket.lock_lock_lock_lock_lock_lock(locked,)`
DISKUTILS = '            # - os.getuid() does not exist in Windows\n            try_dirs.append(f"{base_dir}-{os.getuid()}")\n\n        for try_dir in try_dirs:\n            try:\n                os.makedirs(try_dir)\n            except FileExistsError:\n                try:\n                    with tempfile.TemporaryFile(dir=try_dir):\n                        pass\n                except PermissionError:\n                    continue\n            return try_dir\n\n        # If we reached this, we\'re likely in a containerized environment where /tmp\n        # has been shared between containers through a mountpoint, every container\n        # has an external $UID, but the internal one is the same for all.\n        return tempfile.mkdtemp(prefix=base_dir + "-")\n\n    def _global_lock(self, **kwargs):\n        return locket.lock_file(self._global_lock_path, **kwargs)\n\n    def _purge_lock(self, **kwargs):\n        pass\n\n    def _purge_leftovers(self):\n        if not is_locking_enabled():\n            return []\n\n        # List candidates with the global lock taken, to avoid purging\n        # a lock file that was just created but not yet locked\n        # (see WorkDir.__init__)\n        lock = self._global_lock(timeout=0)\n        try:\n            lock.acquire()\n        except locket.LockError:\n            # No need to waste time here if someone else is busy doing\n            # something on this workspace\n            return []\n        else:\n            try:\n                candidates = list(self._list_unknown_locks())\n            finally:\n                lock.release()\n\n        # No need to hold the global lock here, especially as purging\n        # can take time.  Instead take the purge lock to avoid two\n        # processes purging at once.\n        purged = []\n        lock = self._purge_lock(timeout=0)'


CAPABILITIES = {   # Neovim 0.7's for code actions: literals, data, edits resolved lazily
    "textDocument": {"codeAction": {
        "codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["", "quickfix", "refactor", "refactor.rewrite"]}},
        "dataSupport": True, "resolveSupport": {"properties": ["edit"]}}},
    "workspace": {"workspaceEdit": {"documentChanges": True}, "applyEdit": True}}


def _fill_and_body(text: str) -> tuple[dict, list[str], list[str], list[str]]:
    """The real server, the embedded model, default settings: "Fill 1 hole" and "Complete body of _purge_lock" on
    the stub's ``pass`` in ``text``, resolved. (The "Fill 1 hole" result, its edits, what the user was told, and the
    body's edits.)"""
    at = text.index("        pass\n\n    def _purge_leftovers") + 8
    with LspClient([sys.executable, "-m", "lsp_server"]) as client:
        client.request("initialize", {"processId": None, "rootUri": None, "capabilities": CAPABILITIES,
                                      "initializationOptions": {"threads": 1}}, 120)
        client.notify("initialized", {})
        assert client.wait_ready(300)["state"] == "ready"
        uri = "file:///quality/diskutils.py"
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}})
        offered = client.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": {"start": position_at(text, at), "end": position_at(text, at)},
            "context": {"diagnostics": [], "triggerKind": 1}}, 300) or []
        (fill,) = [a for a in offered if a["title"] == "Fill 1 hole"]
        (body,) = [a for a in offered if a["title"] == "Complete body of _purge_lock"]
        resolved = client.request("codeAction/resolve", fill, 300)
        written = [e["newText"] for change in (resolved.get("edit") or {}).get("documentChanges") or []
                   for e in change["edits"]]
        told = [params["message"] for _, method, params in client.notifications if method == "window/showMessage"]
        completed = client.request("codeAction/resolve", body, 300)
        bodies = [e["newText"] for change in (completed.get("edit") or {}).get("documentChanges") or []
                  for e in change["edits"]]
    return resolved, written, told, bodies


def test_the_trials_stutter_is_not_offered_through_the_server():
    """Before: "Fill 1 hole" wrote `return locket.lock_lock_lock_lock_lock_lock(locked,)` (the canvas). Then the stub
    body became the cursor's line, whose calibrated confidence withheld what the model writes. Now the line is
    parallel code: `_global_lock`'s `return locket.lock_file(self._global_lock_path, **kwargs)` beside the header
    one word apart (`global` -> `purge`), so the original line is written. "Complete body" writes no stutter."""
    resolved, written, told, bodies = _fill_and_body(DISKUTILS)
    assert written == ["        return locket.lock_file(self._purge_lock_path, **kwargs)"], written
    assert resolved["data"]["result"]["summary"].startswith("filled 1 of 1 hole")
    assert not any(degenerate(text, DISKUTILS) for text in bodies), bodies
    # without the parallel method, the model's own fill is withheld, and the user is told so, not that nothing parsed
    alone = DISKUTILS.replace("    def _global_lock(self, **kwargs):\n"
                              "        return locket.lock_file(self._global_lock_path, **kwargs)\n\n", "")
    resolved, written, told, bodies = _fill_and_body(alone)
    assert written == [] and \
        resolved["data"]["result"]["summary"] == "filled 0 of 1 hole; 1 had no fill likely enough to offer"
    assert told and "likely enough to offer" in told[-1], told
    assert not any(degenerate(text, alone) for text in bodies), bodies


def test_what_the_user_is_told_when_the_gate_withheld_a_fill():
    from engine import Completion, HoleFill, HoleKind
    from lsp_server.action_specs import BODY, FILL, REWRITE, SPECS
    from lsp_server.outcome import describe, nothing

    def completion(fills=(), unsure=0):
        return Completion(tuple(fills), HoleKind.BLOCK, 1, 1, 1, 1.0, True, unsure=unsure)

    text = "def f():\n    pass\n\ndef g():\n    pass\n"
    holes = [(13, 17), (31, 35)]
    one = HoleFill(13, 17, "return 1")
    assert describe(FILL, text, holes, completion([one], unsure=1)) == \
        "filled 1 of 2 holes; 1 had no fill likely enough to offer"
    assert describe(FILL, text, holes, completion([one])) == "filled 1 of 2 holes; 1 had no fill that parses"
    assert describe(FILL, text, holes, completion(unsure=1)) == \
        "filled 0 of 2 holes; 1 had no fill that parses; 1 had no fill likely enough to offer"
    assert nothing(SPECS[BODY], completion()) == "no body that parses was found"
    assert nothing(SPECS[BODY], completion(unsure=1)).startswith("no body likely enough to offer was found")
    assert nothing(SPECS[REWRITE], completion(unsure=1)).startswith("no rewrite likely enough")
