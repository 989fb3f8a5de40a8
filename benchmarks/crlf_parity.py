"""Do a CRLF document and its LF twin get the same fill? Each hole of a data file is opened twice in one real
``diffusion-lsp`` (stdio): as it is (LF) and with every line break as CRLF, with the cursor at the same place;
the inline completion's edit is applied to each, and the CRLF document's result, read back as LF, is compared with
the LF one's. Also counted: each twin's exact fills and CRLF edits that leave a bare LF or split a CRLF.

Measure on development sets only (runs/conf/extra-dev.jsonl), never on the reported test sets.

    python -m benchmarks.crlf_parity --data runs/conf/extra-dev.jsonl --sample 100 --out crlf.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from benchmarks.fillers import INVOKED, apply_edits, uri_for
from benchmarks.lsp_client import LspClient, LspResponseError, offset_at, position_at
from benchmarks.metrics import exact_match
from benchmarks.tasks import Task, load_tasks

_BARE_LF = re.compile(r"(?<!\r)\n")


def sample(tasks: list[Task], n: int) -> list[Task]:
    """``n`` tasks spread evenly over the file (every k-th), the same on every run."""
    if n >= len(tasks):
        return tasks
    step = len(tasks) / n
    return [tasks[int(i * step)] for i in range(n)]


def crlf_twin(task: Task) -> Task:
    return Task(task.task_id, task.prompt.replace("\n", "\r\n"), task.suffix.replace("\n", "\r\n"),
                task.canonical_solution.replace("\n", "\r\n"), language=task.language)


def fill(client: LspClient, task: Task, uri: str) -> tuple[str, str]:
    """The document after the first item's edit, and the item's text ('' when none)."""
    text = task.text
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": task.language_id, "version": 1, "text": text}})
    try:
        result = client.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": position_at(text, task.offset),
            "context": {"triggerKind": INVOKED}}, timeout=300)
    except LspResponseError as e:
        return text, f"<error: {e}>"
    finally:
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    items = result.get("items", []) if isinstance(result, dict) else (result or [])
    if not items:
        return text, ""
    item = items[0]
    inserted = item["insertText"] if isinstance(item["insertText"], str) else item["insertText"]["value"]
    here = position_at(text, task.offset)
    span = item.get("range") or {"start": here, "end": here}
    start, end = offset_at(text, span["start"]), offset_at(text, span["end"])
    return apply_edits(text, [(start, end, inserted)]), inserted


def completion_of(task: Task, document: str) -> str | None:
    """The text between the task's prompt and suffix in ``document`` (None: the edit changed them)."""
    p, s = task.prompt, task.suffix
    if len(document) >= len(p) + len(s) and document.startswith(p) and document.endswith(s):
        return document[len(p):len(document) - len(s)]
    return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="runs/conf/extra-dev.jsonl")
    p.add_argument("--sample", type=int, default=100)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--min-confidence", type=float, default=0.0, help="0: every fill offered (compared)")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    tasks = sample(load_tasks(args.data), args.sample)
    options = {"threads": args.threads, "minConfidence": args.min_confidence}
    rows, t0 = [], time.perf_counter()
    with LspClient() as client:
        client.initialize(options)
        client.wait_ready(300)
        for n, task in enumerate(tasks):
            twin = crlf_twin(task)
            lf_doc, lf_text = fill(client, task, uri_for(task, 2 * n))
            cr_doc, cr_text = fill(client, twin, uri_for(task, 2 * n + 1))
            lf_fill, cr_fill = completion_of(task, lf_doc), completion_of(twin, cr_doc)
            row = {"task_id": task.task_id, "lf": lf_fill, "crlf": cr_fill,
                   "differ": lf_doc != cr_doc.replace("\r\n", "\n"),
                   "bare_lf": bool(_BARE_LF.search(cr_doc)),    # the CRLF document got a line break of the model's
                   "exact_lf": lf_fill is not None and bool(lf_text) and exact_match(lf_fill, task.canonical_solution),
                   "exact_crlf": cr_fill is not None and bool(cr_text)
                   and exact_match(cr_fill.replace("\r\n", "\n"), task.canonical_solution)}
            rows.append(row)
            print(f"{n + 1:4d} differ={row['differ']:d} exact lf={row['exact_lf']:d} crlf={row['exact_crlf']:d} "
                  f"bare_lf={row['bare_lf']:d} {task.task_id}", file=sys.stderr, flush=True)
    summary = {"holes": len(rows), "differ": sum(r["differ"] for r in rows),
               "exact_lf": sum(r["exact_lf"] for r in rows), "exact_crlf": sum(r["exact_crlf"] for r in rows),
               "bare_lf": sum(r["bare_lf"] for r in rows),
               "offered_lf": sum(r["lf"] not in (None, "") for r in rows),
               "offered_crlf": sum(r["crlf"] not in (None, "") for r in rows),
               "seconds": round(time.perf_counter() - t0, 1), "data": args.data, "min_confidence": args.min_confidence}
    print(json.dumps(summary))
    if args.out:
        Path(args.out).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
