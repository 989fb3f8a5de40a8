"""Do a CRLF document and its LF twin get the same code action edits? Held-out development files
(``benchmarks.action_safety``: the files of runs/conf/extra-dev.jsonl, none of a test set) are opened twice in one
real ``diffusion-lsp`` (stdio): as they are (LF) and with every line break as CRLF; at each action place
(``action_safety.action_places``: a selection, a cursor in a function, a stubbed body, a closer removed) every
action the server offers is resolved on both, its edits applied (UTF-16 positions), and the CRLF result, read back as
LF, compared with the LF one's. Also counted: CRLF results with a bare LF, edits that split a CRLF.

    python -m benchmarks.crlf_action_parity --corpus runs/corpus --per-language 6 --out crlf-actions.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from benchmarks.action_safety import CAPABILITIES, action_places, apply_edits, dev_files
from benchmarks.lsp_client import LspClient, LspError, offset_at, position_at

_BARE_LF = re.compile(r"(?<!\r)\n")


def crlf(text: str, offset: int) -> tuple[str, int]:
    return text.replace("\n", "\r\n"), offset + text[:offset].count("\n")


def splits_crlf(text: str, offset: int) -> bool:
    return 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n"


class Actions:
    def __init__(self, client: LspClient, timeout: float):
        self.client, self.timeout, self.n = client, timeout, 0

    def run(self, language: str, text: str, start: int, end: int) -> dict[str, dict]:
        """Per action offered (its title): the document after its edits, and whether an edit split a CRLF."""
        self.n += 1
        uri = f"file:///crlf-actions/{self.n}/doc"
        self.client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": language, "version": 1, "text": text}})
        out: dict[str, dict] = {}
        try:
            offered = self.client.request("textDocument/codeAction", {
                "textDocument": {"uri": uri},
                "range": {"start": position_at(text, start), "end": position_at(text, end)},
                "context": {"diagnostics": [], "triggerKind": 1}}, self.timeout) or []
            for action in offered:
                title = str((action.get("data") or {}).get("action", action.get("title")))
                try:
                    resolved = self.client.request("codeAction/resolve", action, self.timeout)
                except LspError as exc:
                    out[title] = {"doc": None, "error": str(exc)[:200], "split": False}
                    continue
                changes = ((resolved.get("edit") or {}).get("documentChanges") or [])
                edits = [e for c in changes for e in c["edits"]]
                split = any(splits_crlf(text, offset_at(text, e["range"][k])) for e in edits for k in ("start", "end"))
                try:
                    after, _ = apply_edits(text, edits) if edits else (text, [])
                except ValueError as exc:
                    out[title] = {"doc": None, "error": str(exc)[:200], "split": split}
                    continue
                out[title] = {"doc": after, "edits": len(edits), "split": split}
        except LspError as exc:
            out["<codeAction>"] = {"doc": None, "error": str(exc)[:200], "split": False}
        finally:
            self.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default="runs/corpus")
    p.add_argument("--languages", default="python,javascript,go")
    p.add_argument("--per-language", type=int, default=6, help="development files per language")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    languages = tuple(args.languages.split(","))
    files = dev_files(Path(args.corpus), languages)
    rows, t0 = [], time.perf_counter()
    with LspClient() as client:
        client.request("initialize", {"processId": None, "rootUri": None, "capabilities": CAPABILITIES,
                                      "initializationOptions": {"threads": args.threads, "minConfidence": 0}}, 120)
        client.notify("initialized", {})
        client.wait_ready(600)
        session = Actions(client, args.timeout)
        for language in languages:
            chosen = files[language]
            step = max(1, len(chosen) // max(1, args.per_language))
            for name, raw in chosen[::step][:args.per_language]:
                base = raw.replace("\r\n", "\n").replace("\r", "\n")
                for kind, text, start, end in action_places(base, language):
                    lf = session.run(language, text, start, end)
                    twin, cs = crlf(text, start)
                    _, ce = crlf(text, end)
                    cr = session.run(language, twin, cs, ce)
                    for title in sorted(set(lf) | set(cr)):
                        a, b = lf.get(title), cr.get(title)
                        a_doc = a["doc"] if a else None
                        b_doc = b["doc"] if b else None
                        row = {"doc": name, "language": language, "kind": kind, "action": title,
                               "offered_lf": a is not None, "offered_crlf": b is not None,
                               "changed_lf": a_doc is not None and a_doc != text,
                               "changed_crlf": b_doc is not None and b_doc != twin,
                               "differ": (a_doc is None) != (b_doc is None)
                               or (a_doc is not None and b_doc is not None and a_doc != b_doc.replace("\r\n", "\n")),
                               "errors": [x["error"] for x in (a, b) if x and x.get("error")],
                               "bare_lf": b_doc is not None and bool(_BARE_LF.search(b_doc)),
                               "split": bool(b and b["split"])}
                        rows.append(row)
                        print(f"{len(rows):4d} differ={row['differ']:d} bare_lf={row['bare_lf']:d} "
                              f"split={row['split']:d} err={row['errors']} {language} {kind} {title} {name}", file=sys.stderr, flush=True)
    summary = {"actions": len(rows), "differ": sum(r["differ"] for r in rows),
               "offered_lf": sum(r["offered_lf"] for r in rows), "offered_crlf": sum(r["offered_crlf"] for r in rows),
               "changed_lf": sum(r["changed_lf"] for r in rows), "changed_crlf": sum(r["changed_crlf"] for r in rows),
               "bare_lf": sum(r["bare_lf"] for r in rows), "errors": sum(bool(r["errors"]) for r in rows), "split": sum(r["split"] for r in rows),
               "documents": len({r["doc"] for r in rows}), "seconds": round(time.perf_counter() - t0, 1)}
    print(json.dumps(summary))
    if args.out:
        Path(args.out).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
