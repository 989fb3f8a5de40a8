"""Do code actions leave real files parsing? (issue 18 item 7) On real files (ten Python modules of installed
packages, the repository's own JavaScript), every action offered at a few places is run on the embedded model
through the engine's own path (survey, the action's spec, ``Engine``: the whole-document check included), its
edits applied, and the file parsed again: Python by Python's parser, others by tree-sitter.

Places per file: a selection of a few statements of a function (rewrite), a cursor in a function (complete
body), the same function with its body made ``...`` (fill holes, complete body), and a line of it with a
closing bracket removed (fix syntax error).

    python -m benchmarks.actions_parse [--out benchmarks/results/actions-parse.json]
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.report import default_out, envelope, run_cli, write_result
from engine import Engine, EngineConfig
from engine.languages import error_count, parse, spec_for
from engine.requests import EngineError, HoleFill
from engine.targets import survey
from lsp_server.action_specs import SPECS, Target

PYTHON_MODULES = ("click.core", "jinja2.lexer", "attr._make", "idna.core", "dateutil.rrule", "markupsafe",
                  "fsspec.spec", "h11._connection", "pygls.workspace.text_document", "cattrs.converters")
JAVASCRIPT = ("editor-clients/vscode/smoke/smoke.js", "editor-clients/vscode/e2e/code-server.js")
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Place:
    name: str
    text: str
    start: int
    end: int


def parses(text: str, language: str) -> bool:
    if language == "python":
        try:
            ast.parse(text)
            return True
        except (SyntaxError, ValueError):
            return False
    return error_count(parse(spec_for(language), text)) == 0


def apply(text: str, fills: tuple[HoleFill, ...]) -> str:
    for f in sorted(fills, key=lambda f: f.start, reverse=True):
        text = text[:f.start] + f.text + text[f.end:]
    return text


def _function(text: str, language: str) -> tuple[int, int, list[tuple[int, int]]] | None:
    """The function nearest the middle of the file with 3 to 30 lines of body: its span and its body's lines."""
    tree = parse(spec_for(language), text)
    if tree is None:
        return None
    kinds = {"function_definition"} if language == "python" else {"function_declaration", "method_definition"}
    found, stack = [], [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type in kinds:
            body = node.child_by_field_name("body")
            if body is not None and 3 <= body.end_point[0] - body.start_point[0] <= 30 \
                    and len(body.named_children) >= 3:
                found.append((node, body))
        stack.extend(node.children)
    if not found:
        return None
    middle = len(text.encode()) // 2
    node, body = min(found, key=lambda nb: abs(nb[0].start_byte - middle))
    encoded = text.encode()

    def at(b: int) -> int:
        return len(encoded[:b].decode())
    lines = [(at(c.start_byte), at(c.end_byte)) for c in body.named_children if "comment" not in c.type]
    return at(node.start_byte), at(node.end_byte), lines


def places(text: str, language: str) -> list[Place]:
    fn = _function(text, language)
    if fn is None:
        return []
    start, end, stmts = fn
    out = [Place("rewrite", text, stmts[1][0], stmts[min(3, len(stmts)) - 1][1]),
           Place("cursor", text, stmts[0][0], stmts[0][0])]
    if language == "python":
        lo, hi = stmts[0][0], stmts[-1][1]
        stubbed = text[:lo] + "..." + text[hi:]
        out.append(Place("stubbed", stubbed, lo, lo))
    else:
        lo, hi = stmts[0][0], stmts[-1][1]
        stubbed = text[:lo] + "// TODO" + text[hi:]
        out.append(Place("stubbed", stubbed, lo, lo))
    closing = next((i for i in range(end - 1, start, -1) if text[i] == ")"), None)
    if closing is not None:
        broken = text[:closing] + text[closing + 1:]
        out.append(Place("broken", broken, closing, closing))
    return out


def run_place(engine: Engine, path: str, language: str, place: Place) -> list[dict]:
    found = survey(place.text, language, place.start, place.end)
    rows = []
    for spec in SPECS.values():
        if not spec.offered(found, place.start, place.end):
            continue
        t0 = time.perf_counter()
        try:
            request, _ = spec.build(Target(place.text, language, place.start, place.end, found, None, "bench"))
            completion = engine.infill_sync(request, timeout=600)
        except (EngineError, Exception) as exc:  # noqa: BLE001 (a failure is a row, the run goes on)
            rows.append({"file": path, "place": place.name, "action": spec.name, "error": str(exc)})
            continue
        row = {"file": path, "place": place.name, "action": spec.name, "edits": len(completion.fills),
               "rejected": completion.rejected, "ms": round((time.perf_counter() - t0) * 1000)}
        if completion.fills:
            row["parses"] = parses(apply(place.text, completion.fills), language)
            row["parsed_before"] = parses(place.text, language)
        rows.append(row)
        print(f"{path} {place.name:8s} {spec.name:16s} edits {row['edits']} parses {row.get('parses', '-')}",
              file=sys.stderr)
    return rows


def files() -> list[tuple[str, str, str]]:
    out = []
    for module in PYTHON_MODULES:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.origin:
            out.append((module, "python", Path(spec.origin).read_text(encoding="utf-8")))
    for rel in JAVASCRIPT:
        path = ROOT / rel
        if path.exists():
            out.append((rel, "javascript", path.read_text(encoding="utf-8")))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(default_out("actions-parse")))
    args = parser.parse_args(argv)
    result = envelope("actions-parse", "benchmarks.actions_parse", argv)
    engine = Engine(EngineConfig())
    engine.start().result(300)
    rows = []
    try:
        for name, language, text in files():
            for place in places(text, language):
                rows.extend(run_place(engine, name, language, place))
    finally:
        engine.close()
    result.update(summary(rows))
    result["rows"] = rows
    write_result(args.out, result)
    print(f"{result['leave_the_file_parsing']} of {result['counted']} actions with edits leave the file parsing "
          f"({len(rows)} run on {len(result['files'])} files, {result['errors']} errors)")
    return 0


def summary(rows: list[dict]) -> dict:
    """Counted: every action that returned edits on a file that parsed, and every fix (its file did not parse:
    the fix must make it). Other actions on the broken file keep the user's own error and are not counted."""
    counted = [r for r in rows if r.get("edits") and (r["parsed_before"] or r["action"] == "fixSyntax")]
    return {"files": sorted({r["file"] for r in rows}), "actions_run": len(rows), "counted": len(counted),
            "leave_the_file_parsing": sum(r["parses"] for r in counted),
            "errors": sum("error" in r for r in rows),
            "by_action": {name: {"run": sum(r["action"] == name for r in rows),
                                 "counted": sum(r["action"] == name for r in counted),
                                 "parsing": sum(r["action"] == name and r["parses"] for r in counted)}
                          for name in SPECS}}


if __name__ == "__main__":
    sys.exit(run_cli(main))
