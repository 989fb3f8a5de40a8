"""A CRLF document's code action gets its LF twin's edits. "Fill holes", "Complete body", "Rewrite selection" and "Fix
syntax error" cut their windows (and a canvas's middles) with the model's token counts of the CRLF text, then turned
it into LF: each ``\\r`` is a token of the embedded tokenizer, so the model read less (or other) context than for the
same code saved with LF, and wrote other edits for it (5 of 28 actions on four development files). An action now
runs on the document read as LF (``engine.lines.LfText``, as a cursor fill does) and its edits are mapped back: the
LF twin's, with CRLF line ends, never inside a ``\\r\\n``, in UTF-16 positions over LSP."""

import re
import sys

import pytest

from benchmarks.lsp_client import LspClient, offset_at, position_at
from engine.backends.base import Control
from engine.config import FillOptions
from engine.requests import FillRequest, FixRequest, RewriteRequest
from engine.serve import serve
from engine.targets import survey
from tests.crlf_support import Recording, inside_crlf, real_backend


@pytest.fixture(scope="module")
def backend():
    return real_backend()


SERVER = [sys.executable, "-m", "lsp_server"]
_BARE_LF = re.compile(r"(?<!\r)\n")

# long enough before and after that every window is cut by the token budgets
PY = ("".join(f"K{i} = {i}  # the constant number {i}\n" for i in range(80))
      + "\n\ndef total(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n\n\n"
        "def mean(xs):\n    ...\n\n\n"
        "def spread(xs):\n    lo = min(xs)\n    hi = max(xs)\n    return hi - lo\n\n\n"
        "def middle(xs):\n    ys = sorted(xs)\n    return ys[len(ys) // 2]\n\n\n"
      + "".join(f"print(mean([{i}, {i + 1}]), spread([{i}]))\n" for i in range(60)))
JS = ("const T = {\n" + "".join(f"  a{i}: {i},  // entry {i}\n" for i in range(60)) + "};\n\n"
      "function sum(xs) {\n  let s = 0;\n  for (const x of xs) {\n    s += x;\n  }\n  return s;\n}\n\n"
      "function mean(xs) {\n  const n = xs.length;\n  // TODO\n}\n\n"
      "function spread(xs) {\n  const lo = Math.min(...xs);\n  const hi = Math.max(...xs);\n  return hi - lo;\n}\n\n"
      + "".join(f"console.log(mean([{i}, {i + 1}]), spread([{i}]));\n" for i in range(50)))
GO = ("package m\n\nconst (\n" + "".join(f"\tC{i} = {i} // constant {i}\n" for i in range(60)) + ")\n\n"
      "func Sum(xs []int) int {\n\ts := 0\n\tfor _, x := range xs {\n\t\ts += x\n\t}\n\treturn s\n}\n\n"
      "func Mean(xs []int) int {\n\tn := len(xs)\n\t// TODO\n}\n\n"
      "func Spread(lo, hi int) int {\n\tif hi < lo {\n\t\treturn lo - hi\n\t}\n\treturn hi - lo\n}\n\n"
      + "".join(f"var V{i} = Mean([]int{{{i}, {i + 1}}})\n" for i in range(50)))


def crlf(text: str, offset: int) -> tuple[str, int]:
    return text.replace("\n", "\r\n"), offset + text[:offset].count("\n")



def apply(text: str, fills) -> str:
    for f in sorted(fills, key=lambda f: f.start, reverse=True):
        text = text[:f.start] + f.text + text[f.end:]
    return text


# (language, text, what the action is asked on: a cursor after / a selection of ``at``, the action)
ACTIONS = [
    ("python", PY, "    ...\n", "fill"),
    ("python", PY, "    lo = min(xs)\n", "body"),
    ("python", PY, "    lo = min(xs)\n    hi = max(xs)\n", "rewrite"),
    ("python", PY.replace("return ys[len(ys) // 2]", "return ys[len(ys) // 2"), "return ys[len(ys)", "fix"),
    ("javascript", JS, "  // TODO", "fill"),
    ("javascript", JS, "  const lo = Math.min(...xs);\n", "rewrite"),
    ("javascript", JS.replace("Math.max(...xs);", "Math.max(...xs;"), "Math.max(...xs;", "fix"),
    ("go", GO, "\t// TODO", "fill"),
    ("go", GO, "\tif hi < lo {\n", "body"),
]


def request_for(language: str, text: str, start: int, end: int, action: str):
    """The engine request the server builds for ``action`` (lsp_server/action_specs.py)."""
    found = survey(text, language, start, end)
    if action == "fill":
        assert found.blanks
        return FillRequest(text, language, found.blanks)
    if action == "body":
        assert found.body is not None
        return FillRequest(text, language, (found.body,), found.callers, body=True)
    if action == "rewrite":
        return RewriteRequest(text, language, start, end)
    assert found.errors
    return FixRequest(text, language, found.errors)




def _run(backend, request):
    model = Recording(backend)
    drafts: list = []
    control = Control(lambda step: None, lambda step, texts, confs, pieces=None, **where: drafts.append(texts))
    return model.plans, serve(model, FillOptions(min_confidence=0.0), request, control), drafts


@pytest.mark.parametrize("language,text,at,action", ACTIONS, ids=[f"{a[0]}-{a[3]}-{a[2][:14]!r}" for a in ACTIONS])
def test_a_crlf_documents_action_gets_its_lf_twins_canvas_and_edits(backend, language, text, at, action):
    """Before: the CRLF twin's canvas held less context for every action here (its windows cut by the token count
    of the ``\\r``s); now the model reads the same plans and the edits are the LF twin's with CRLF."""
    start = text.index(at)           # a selection to rewrite; a cursor before ``at`` (fill, body), after it (fix)
    end = start + len(at)
    if action != "rewrite":
        start = end = start if action in ("fill", "body") else end
    lf_plans, lf, _ = _run(backend, request_for(language, text, start, end, action))
    crlf_text, crlf_start = crlf(text, start)
    _, crlf_end = crlf(text, end)
    cr_plans, cr, drafts = _run(backend, request_for(language, crlf_text, crlf_start, crlf_end, action))
    assert lf_plans
    assert cr_plans == lf_plans                     # the model read the same canvases, the same options
    assert "\\r" not in repr(cr_plans)                 # no CR in any text the model read
    assert len(cr.fills) == len(lf.fills)
    after = apply(crlf_text, cr.fills)
    assert after.replace("\r\n", "\n") == apply(text, lf.fills)   # the LF twin's edits
    assert not _BARE_LF.search(after) and "\r" not in after.replace("\r\n", "")
    for f in cr.fills:
        assert not inside_crlf(crlf_text, f.start) and not inside_crlf(crlf_text, f.end)
        assert not _BARE_LF.search(f.text)
    assert all(not _BARE_LF.search(t) for texts in drafts for t in texts)   # drafts stream with CRLF too


def test_over_lsp_a_crlf_documents_actions_are_its_lf_twins():
    """The real server over stdio: every action offered on a CRLF document (a non-ASCII line before it, so UTF-16
    columns differ from str offsets) resolves to its LF twin's edits, in UTF-16 ranges of the CRLF text."""
    capabilities = {
        "general": {"positionEncodings": ["utf-16"]},
        "textDocument": {"synchronization": {"dynamicRegistration": False}, "codeAction": {
            "codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["", "quickfix", "refactor",
                                                                         "refactor.rewrite"]}},
            "dataSupport": True, "resolveSupport": {"properties": ["edit"]}}},
        "workspace": {"workspaceEdit": {"documentChanges": True}, "applyEdit": True},
        "window": {"workDoneProgress": False},
    }
    # mean's stub after spread: "Fill 1 hole" on a stub body is the cursor's line (engine/oneline.py), and after total
    # the model's `return s` would copy total's last line (refused): here it writes a line, an edit to compare
    py = PY.replace("def mean(xs):\n    ...\n\n\n", "").replace("def middle(xs):",
                                                             "def mean(xs):\n    ...\n\n\ndef middle(xs):")
    text = "# 😀 é naïve\n" + py
    stub = text.index("    ...\n")               # a cursor in a stubbed body: "Fill 1 hole", "Complete body"
    chosen = text.index("    lo = min(xs)\n")    # a selection: "Rewrite selection", "Complete body"
    places = [(stub, stub), (chosen, chosen + len("    lo = min(xs)\n    hi = max(xs)\n"))]
    with LspClient(SERVER) as client:
        client.request("initialize", {"processId": None, "rootUri": None, "capabilities": capabilities,
                                      "initializationOptions": {"threads": 1, "minConfidence": 0}}, 120)
        client.notify("initialized", {})
        assert client.wait_ready(300)["state"] == "ready"
        n = 0

        def actions(doc: str, lo: int, hi: int) -> dict:
            nonlocal n
            n += 1
            uri = f"file:///crlf-actions/{n}/doc.py"
            client.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "python", "version": 1, "text": doc}})
            offered = client.request("textDocument/codeAction", {
                "textDocument": {"uri": uri}, "range": {"start": position_at(doc, lo), "end": position_at(doc, hi)},
                "context": {"diagnostics": [], "triggerKind": 1}}, 300) or []
            out = {}
            for action in offered:
                resolved = client.request("codeAction/resolve", action, 300)
                changes = (resolved.get("edit") or {}).get("documentChanges") or []
                out[action["data"]["action"]] = [e for c in changes for e in c["edits"]]
            client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
            return out

        crlf_text = crlf(text, 0)[0]
        lf, cr = {}, {}
        for start, end in places:
            lf |= {(start, name): edits for name, edits in actions(text, start, end).items()}
            cr |= {(start, name): edits for name, edits in actions(crlf_text, crlf(text, start)[1],
                                                                   crlf(text, end)[1]).items()}
        assert {name for _, name in lf} == {"fillHoles", "completeBody", "rewriteSelection"} and set(cr) == set(lf)
        assert lf[(stub, "fillHoles")] and lf[(stub, "completeBody")]   # edits to compare
        for name, lf_edits in lf.items():
            cr_edits = cr[name]
            assert [e["newText"].replace("\r\n", "\n") for e in cr_edits] == [e["newText"] for e in lf_edits]
            assert [e["range"]["start"]["line"] for e in cr_edits] == [e["range"]["start"]["line"] for e in lf_edits]
            doc = crlf_text
            for e in sorted(cr_edits, key=lambda e: offset_at(crlf_text, e["range"]["start"]), reverse=True):
                lo, hi = offset_at(crlf_text, e["range"]["start"]), offset_at(crlf_text, e["range"]["end"])
                assert not inside_crlf(crlf_text, lo) and not inside_crlf(crlf_text, hi)
                assert not _BARE_LF.search(e["newText"])
                doc = doc[:lo] + e["newText"] + doc[hi:]
            lf_doc = text
            for e in sorted(lf_edits, key=lambda e: offset_at(text, e["range"]["start"]), reverse=True):
                lo, hi = offset_at(text, e["range"]["start"]), offset_at(text, e["range"]["end"])
                lf_doc = lf_doc[:lo] + e["newText"] + lf_doc[hi:]
            assert doc.replace("\r\n", "\n") == lf_doc and not _BARE_LF.search(doc)
        assert client.proc.poll() is None
