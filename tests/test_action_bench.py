"""The actions benchmark's measures and its corpus-function data (benchmarks/actions.py, action_functions.py)."""

from __future__ import annotations

import random
from pathlib import Path

from benchmarks.action_functions import functions_of, stub
from benchmarks.actions import inject, lines_deleted, tokens_lost
from benchmarks.metrics import syntax_valid
from benchmarks.tasks import load_tasks

DATA = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "action-functions.jsonl.gz"


def test_tokens_lost_counts_the_users_tokens_a_fix_changed():
    original = "if x > 0:\n    return x\n"
    assert tokens_lost(original, original) == 0
    assert tokens_lost(original, "if x > 0:\n    return x)\n") == 0          # an insertion loses nothing
    assert tokens_lost(original, "if x == 0:\n    return x\n") == 1          # '>' replaced
    assert tokens_lost(original, "return x == 0\nreturn x == 0\n") > 3


def test_lines_deleted_counts_lines_away_from_the_error():
    broken = "a = 1\nif x > 0\n    y = 2\nb = 3\n"
    assert lines_deleted(broken, broken.replace("x > 0", "x > 0:"), {1}) == 0
    assert lines_deleted(broken, "a = 1\nif x > 0:\nb = 3\n", {1}) == 1       # '    y = 2' is gone
    assert lines_deleted(broken, "a = 1\nb = 3\n", {1}) == 1                  # the error's own line is not counted


def test_functions_of_a_file_and_their_stubs_parse():
    text = ("import os\n\n\ndef size(path):\n    \"\"\"Bytes.\"\"\"\n    st = os.stat(path)\n    n = st.st_size\n"
            "    return n\n\n\ndef tiny():\n    return 1\n")
    (task,) = functions_of("pkg/mod.py", text, "python")
    assert task["canonical_solution"] == "    st = os.stat(path)\n    n = st.st_size\n    return n\n"
    assert task["prompt"].endswith('    """Bytes."""\n') and task["language"] == "python"
    assert task["prompt"] + task["canonical_solution"] + task["suffix"] in text
    go = "package p\n\nfunc Add(a, b int) int {\n\ts := a\n\ts += b\n\treturn s\n}\n"
    (task,) = functions_of("p/add.go", go, "go")
    assert task["canonical_solution"] == "\ts := a\n\ts += b\n\treturn s\n" and task["suffix"].startswith("}")
    assert syntax_valid(task["prompt"] + stub("go", "\t", 0) + task["suffix"], "go")


def test_the_committed_functions_parse_and_break_where_injected():
    tasks = load_tasks(str(DATA))
    assert {t.language for t in tasks} == {"python", "javascript", "typescript", "go", "rust"}
    rng = random.Random(1)
    for t in tasks[:10]:
        assert syntax_valid(t.prompt + t.canonical_solution + t.suffix, t.language), t.task_id
        made = inject(t, rng, functions=True)
        if made:
            original, broken, at = made
            assert len(t.prompt) <= at < len(t.prompt) + len(t.canonical_solution) + 1
            assert not syntax_valid(broken, t.language)


def test_the_dev_set_leaves_out_the_committed_functions_and_their_text():
    """``action_functions --dev`` excludes every committed function, and any function sharing text with one."""
    from benchmarks.action_functions import Excluded

    excluded = Excluded([str(DATA)])
    (t,) = load_tasks(str(DATA))[:1]
    task = {"task_id": t.task_id, "prompt": t.prompt, "canonical_solution": t.canonical_solution, "suffix": t.suffix}
    assert task in excluded
    assert {**task, "task_id": "python:elsewhere.py:1"} in excluded                     # the same text elsewhere
    assert {**task, "task_id": "python:elsewhere.py:1", "canonical_solution": "    zq_never_seen = 7\n",
            "prompt": "def zq_f():\n", "suffix": "\n"} not in excluded


def test_an_offered_body_is_compared_with_the_original():
    from benchmarks.actions import lines_in_original, similarity

    original = "    x = f(a)\n    return x + 1\n"
    assert similarity(original, original) == 1.0 and lines_in_original(original, original) == 1.0
    assert similarity("        x = f(a)\n        return x + 1", original) == 1.0    # indentation aside
    assert 0 < similarity("    return f(a) + 1\n", original) < 1
    assert lines_in_original("    x = f(a)\n    return x\n", original) == 0.5
    assert similarity("    return lock_lock_lock\n", original) < 0.2


def test_with_workspace_corpus_a_functions_body_takes_its_packages_lines(tmp_path):
    """``benchmarks.actions --functions --workspace-corpus``: each function's workspace is the other files of its
    package, as the editor's folder is; the stubbed body is then written from the lines those files have there (the
    real embedded model), and without it is not."""
    import json

    from benchmarks.actions import main

    head = "package zorblax\n\nfunc handler(request *Request) Response {\n"
    body = "\tpayload := decodeZorblaxPayload(request.Body)\n\treturn respond(payload)\n"
    corpus = tmp_path / "corpus"
    rows = {"train": ["debian:zorblax/a.go", "debian:zorblax/b.go", "debian:zorblax/defs.go"],
            "valid": ["debian:zorblax/main.go"]}
    defs = ("package zorblax\n\ntype Request struct{ Body []byte }\ntype Response int\n\n"
            "func decodeZorblaxPayload(b []byte) []byte { return b }\n\nfunc respond(p []byte) Response { return 0 }\n")
    manifest = []
    for split, ids in rows.items():
        (corpus / "files" / split).mkdir(parents=True)
        (corpus / "files" / split / "go.jsonl").write_text("".join(
            json.dumps({"id": i, "text": defs if i.endswith("defs.go") else head + body + "}\n"}) + "\n" for i in ids))
        manifest += [{"id": i, "ecosystem": "debian", "package": "zorblax"} for i in ids]
    (corpus / "manifest.jsonl").write_text("".join(json.dumps(m) + "\n" for m in manifest))
    data = tmp_path / "functions.jsonl"
    data.write_text(json.dumps({"task_id": "go:debian:zorblax/main.go:4", "prompt": head, "canonical_solution": body,
                                "suffix": "}\n", "language": "go"}) + "\n")
    got = {}
    for name, extra in (("with", ["--workspace-corpus", str(corpus)]), ("without", [])):
        out = tmp_path / f"{name}.json"
        assert main(["--data", str(data), "--functions", "--limit", "0", "--fill-limit", "1", "--threads", "1",
                     "--out", str(out), *extra]) == 0
        got[name] = {r["action"]: r for r in json.loads(out.read_text())["records"]["fill"]}
    assert got["with"]["body"]["similarity"] == 1.0 and got["with"]["fill"]["similarity"] == 1.0, got["with"]
    assert all(r["offered"] is None or r.get("similarity", 0.0) < 1.0 for r in got["without"].values()), got["without"]
