"""Do code actions and completions ever damage code? The real server over stdio (``LspClient``), the embedded model,
held-out corpus files of every language (the files of the development set ``runs/conf/extra-dev.jsonl``, none of
the code-lines or action-functions test sets; for the languages filled as plain text, C, C++, Java, Ruby, Perl and
Lua, the files of their development sets ``runs/conf/other-dev.jsonl`` and ``other-dev-cpp.jsonl``, each judged by
its check grammar): at many positions every inline completion, completion item and code
action the server offers is applied as an editor would (UTF-16 positions) and checked:

- ``place``: the edit lies where it should (a cursor fill on the cursor's line, around the cursor, keeping the
  user's typed word and the rest of the line; an action's within its hole, body, selection's lines or the error's
  lines); edits do not overlap;
- ``eol``: a CRLF document keeps CRLF (no bare LF or CR inserted), an LF document gets no CR;
- ``parse``: tree-sitter's ERROR/MISSING count does not grow; a Python document that compiled still compiles;
- ``version``: an edit names the version it was asked on; a didChange sent right after the request leaves no
  cursor fill offered and no action edit for the new version;
- ``text``: no U+FFFD the document lacks, no lone surrogate;
- ``dup``: no code line made a copy of the code line next to it (a line the user did not have twice already).

Positions: line starts, mid-line, line ends, inside strings and comments, an empty line in a function, in a CRLF
copy (also one UTF-16 unit past the line's end: after its CR), in a tab-indented copy, after emoji, an empty file
and a one-line file without a line break.

    python -m benchmarks.action_safety --corpus runs/corpus --limit 300 [--out benchmarks/results/action-safety.json]
    python -m benchmarks.action_safety --corpus runs/corpus --languages c cpp java ruby perl lua --limit 300 \
        --out benchmarks/results/action-safety-plain.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.lsp_client import LspClient, LspError, LspResponseError, offset_at, position_at
from benchmarks.report import default_out, envelope, run_cli, write_result

ROOT = Path(__file__).resolve().parent.parent
LANGUAGES = ("python", "javascript", "typescript", "go", "rust")
PLAIN = ("c", "cpp", "java", "ruby", "perl", "lua")   # filled as plain text, judged by their check grammar
EXTENSIONS = {"python": "py", "javascript": "js", "typescript": "ts", "go": "go", "rust": "rs",
              "c": "c", "cpp": "cpp", "java": "java", "ruby": "rb", "perl": "pl", "lua": "lua"}
FUNCTIONS = {"python": {"function_definition"},
             "javascript": {"function_declaration", "method_definition"},
             "typescript": {"function_declaration", "method_definition"},
             "go": {"function_declaration", "method_declaration"},
             "rust": {"function_item"},
             "c": {"function_definition"}, "cpp": {"function_definition"},
             "java": {"method_declaration", "constructor_declaration"}, "ruby": {"method", "singleton_method"},
             "perl": {"subroutine_declaration_statement"},
             "lua": {"function_declaration", "function_definition"}}
ONE_LINERS = {"python": "import os", "javascript": "const x = 1;", "typescript": "let n: number = 1;",
              "go": "package main", "rust": "use std::io;", "c": "#include <stdio.h>", "cpp": "#include <vector>",
              "java": "package org.example;", "ruby": "require 'json'", "perl": "use strict;",
              "lua": "local x = 1"}
EMOJI_LINE = {"python": 's = "😀é😀"  # 🎉 x', "javascript": 'const s = "😀é😀"; // 🎉 x',
              "typescript": 'const s: string = "😀é😀"; // 🎉 x', "go": 's := "😀é😀" // 🎉 x',
              "rust": 'let s = "😀é😀"; // 🎉 x', "c": 'const char *s = "😀é😀"; // 🎉 x',
              "cpp": 'const char *s = "😀é😀"; // 🎉 x', "java": 'String s = "😀é😀"; // 🎉 x',
              "ruby": 's = "😀é😀"  # 🎉 x', "perl": 'my $s = "😀é😀";  # 🎉 x', "lua": 'local s = "😀é😀"  -- 🎉 x'}
STUB = {"python": "...", "javascript": "// TODO", "typescript": "// TODO", "go": "// TODO", "rust": "todo!()",
        "c": "// TODO", "cpp": "// TODO", "java": "// TODO", "ruby": "# TODO", "perl": "# TODO", "lua": "-- TODO"}
# a stub standing for one statement among others ("Fill holes" of a stub line: engine/oneline.py)
STUB_LINE = {**STUB, "python": "# TODO", "rust": "todo!();"}   # a deliberate ... or pass among code is no hole
for _table in (FUNCTIONS, EMOJI_LINE, STUB):
    _table["typescriptreact"] = _table["typescript"]   # type: ignore[index]
_BREAK = re.compile(r"\r\n|\r|\n")


# -- the files --------------------------------------------------------------------------------------------
def dev_files(corpus: Path, languages: tuple[str, ...]) -> dict[str, list[tuple[str, str]]]:
    """Per language, the held-out files of the development set (minus any file a test set uses), small first."""
    out = plain_files(corpus.parent / "conf", tuple(lang for lang in languages if lang in PLAIN))
    languages = tuple(lang for lang in languages if lang not in PLAIN)
    wanted: dict[str, set[str]] = {lang: set() for lang in languages}
    for line in open(corpus.parent / "conf" / "extra-dev.jsonl", encoding="utf-8"):
        lang, rest = json.loads(line)["task_id"].split(":", 1)
        if lang in wanted:
            wanted[lang].add(rest.rsplit(":", 1)[0])
    tests: set[str] = set()
    for name in ("code-lines.jsonl.gz", "action-functions.jsonl.gz"):
        path = ROOT / "benchmarks" / "data" / name
        if path.exists():
            with gzip.open(path, "rt", encoding="utf-8") as f:
                tests |= {json.loads(row)["task_id"].split(":", 1)[1].rsplit(":", 1)[0] for row in f}
    for lang in languages:
        rows = []
        with open(corpus / "files" / "valid" / f"{lang}.jsonl", encoding="utf-8") as f:
            for row in map(json.loads, f):
                if row["id"] in wanted[lang] and row["id"] not in tests and 800 <= len(row["text"]) <= 12_000:
                    rows.append((row["id"], row["text"]))
        out[lang] = sorted(rows)
    return out


def plain_files(conf: Path, languages: tuple[str, ...], shortest: int = 800, longest: int = 12_000
                ) -> dict[str, list[tuple[str, str]]]:
    """Per plain-text language, the files of its development holes (``benchmarks.other_lines``: a hole is its file
    cut at one line, so prompt + line + suffix is the file) of ``shortest`` to ``longest`` characters, by name."""
    out: dict[str, dict[str, str]] = {lang: {} for lang in languages}
    for name in ("other-dev.jsonl", "other-dev-cpp.jsonl"):
        if not languages or not (conf / name).exists():
            continue
        for row in map(json.loads, open(conf / name, encoding="utf-8")):
            lang, rest = row["task_id"].split(":", 1)
            text = row["prompt"] + row["canonical_solution"] + row["suffix"]
            if lang in out and shortest <= len(text) <= longest:
                out[lang].setdefault(rest.rsplit(":", 1)[0], text)
    return {lang: sorted(files.items()) for lang, files in out.items()}


def language_of(name: str, language: str) -> str:
    """The language id an editor sends for the file: a ``.tsx`` file is TypeScript with JSX."""
    return "typescriptreact" if name.endswith(".tsx") else language


SAMPLE = {"python": (  # a file of the synthetic run (no corpus: the smoke test)
    "import os\n\n\ndef walk(root):\n    found = []\n    for name in os.listdir(root):\n"
    "        path = os.path.join(root, name)\n        if os.path.isdir(path):\n"
    "            found.extend(walk(path))\n        else:\n            found.append(path)\n    return found\n")}


def sample_files(languages: tuple[str, ...]) -> dict[str, list[tuple[str, str]]]:
    out = {lang: [] for lang in languages}
    for lang, text in SAMPLE.items():
        if lang in out:
            out[lang].append((f"sample.{EXTENSIONS[lang]}", text))
    return out


# -- checks ------------------------------------------------------------------------------------------------
def judging_spec(language: str):
    """The grammar that parses ``language``'s documents here: its own, or its check grammar (plain text)."""
    from engine.languages import check_spec, has_grammar, spec_for
    spec = spec_for(language)
    return spec if has_grammar(spec) else check_spec(language)


def errors_of(text: str, language: str) -> int:
    from engine.languages import error_count, parse
    return error_count(parse(judging_spec(language), text))


def compiles(text: str) -> bool:
    try:
        compile(text, "<doc>", "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError):
        return False


def line_span(text: str, offset: int) -> tuple[int, int]:
    """The line holding ``offset``: its start and its end (before its line break)."""
    start = max((m.end() for m in _BREAK.finditer(text, 0, offset) if m.end() <= offset), default=0)
    m = _BREAK.search(text, offset)
    return start, (m.start() if m else len(text))


def _code_lines(text: str) -> list[str]:
    return [ln.strip() for ln in _BREAK.split(text)]


def _adjacent_copies(text: str) -> Counter:
    lines = [ln for ln in _code_lines(text) if ln]
    return Counter(a for a, b in zip(lines, lines[1:])
                   if a == b and any(c.isalnum() for c in a) and not a.startswith(("#", "//", "@", "*")))


def apply_edits(text: str, edits: list[dict]) -> tuple[str, list[tuple[int, int, str]]]:
    """The text with ``edits`` (LSP TextEdits, UTF-16) applied as an editor does; their str spans (original)."""
    spans = sorted(((offset_at(text, e["range"]["start"]), offset_at(text, e["range"]["end"]), e["newText"])
                    for e in edits), key=lambda s: (s[0], s[1]))
    out, pos = [], 0
    for s, e, new in spans:
        if s < pos or e < s:
            raise ValueError(f"overlapping or inverted edits at {s}..{e}")
        out += [text[pos:s], new]
        pos = e
    return "".join(out) + text[pos:], spans


def check_result(before: str, after: str, language: str, spans: list[tuple[int, int, str]]) -> list[str]:
    """The invariants every edit keeps, whatever its kind: line ends, parse, text, copies."""
    bad = []
    inserted = "".join(new for _, _, new in spans)
    crlf = "\r\n" in before and not re.search(r"(?<!\r)\n", before)
    if crlf and (re.search(r"(?<!\r)\n", inserted) or re.search(r"\r(?!\n)", inserted)):
        bad.append("eol: bare LF/CR inserted in a CRLF document")
    if not crlf and "\r" not in before and "\r" in inserted:
        bad.append("eol: CR inserted in an LF document")
    if "\ufffd" in inserted and "\ufffd" not in before:
        bad.append("text: U+FFFD inserted")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in inserted):
        bad.append("text: lone surrogate inserted")
    if errors_of(after, language) > errors_of(before, language):
        bad.append(f"parse: tree-sitter errors {errors_of(before, language)} -> {errors_of(after, language)}")
    if language == "python" and compiles(before) and not compiles(after):
        bad.append("parse: Python compiled before, not after")
    grown = _adjacent_copies(after) - _adjacent_copies(before)
    if grown:
        bad.append(f"dup: line copied next to itself: {next(iter(grown))!r}")
    return bad


def check_cursor_edit(text: str, cursor: int, span: tuple[int, int, str]) -> list[str]:
    """A cursor fill: on the cursor's line, around the cursor, keeping what the user typed there."""
    s, e, new = span
    lo, hi = line_span(text, cursor)
    bad = []
    if not (lo <= s <= cursor <= e <= hi):
        bad.append(f"place: cursor fill at {s}..{e}, cursor {cursor} on line {lo}..{hi}")
    elif not (new.startswith(text[s:cursor]) and new.endswith(text[cursor:e])):
        bad.append(f"place: cursor fill replaces the user's {text[s:e]!r} with {new[:60]!r}")
    return bad


# -- the places --------------------------------------------------------------------------------------------
@dataclass
class Doc:
    name: str
    language: str
    text: str
    cursors: list[tuple[str, int]] = field(default_factory=list)            # (kind, str offset)
    actions: list[tuple[str, int, int]] = field(default_factory=list)       # (kind, start, end)
    past_cr: list[int] = field(default_factory=list)                        # lines asked one unit past their end


def _tree_nodes(text: str, language: str):
    from engine.languages import parse
    tree = parse(judging_spec(language), text)
    encoded = text.encode("utf-8")

    def at(b: int) -> int:
        return len(encoded[:b].decode("utf-8", "replace"))
    stack = [tree.root_node] if tree is not None else []
    while stack:
        node = stack.pop()
        yield node, at
        stack.extend(node.children)


def functions(text: str, language: str) -> list[tuple[int, int, list[tuple[int, int]]]]:
    """Functions with 3..30 lines of body: their span and their body's statements (str offsets)."""
    out = []
    for node, at in _tree_nodes(text, language):
        if node.type in FUNCTIONS[language]:
            body = node.child_by_field_name("body")
            if body is not None and 3 <= body.end_point[0] - body.start_point[0] <= 30:
                inner = body.named_children
                if len(inner) == 1 and inner[0].type == "statement_list":   # Go's block holds its statements so
                    inner = inner[0].named_children
                stmts = [(at(c.start_byte), at(c.end_byte)) for c in inner if "comment" not in c.type]
                if len(stmts) >= 3:
                    out.append((at(node.start_byte), at(node.end_byte), stmts))
    return sorted(out)


def cursor_places(text: str, language: str, rng: random.Random, n: int) -> list[tuple[str, int]]:
    lines = [(m.start(), m.end()) for m in re.finditer(r"[^\r\n]+", text)]
    code = [(s, e) for s, e in lines if text[s:e].strip() and not text[s:e].lstrip().startswith(("#", "//", "/*", "*"))]
    places: list[tuple[str, int]] = []
    for s, e in rng.sample(code, min(len(code), n)):
        kind = rng.choice(("line_start", "indent", "mid_line", "line_end"))
        line = text[s:e]
        indent = s + len(line) - len(line.lstrip())
        if kind == "line_start":
            places.append((kind, s))
        elif kind == "indent":
            places.append((kind, indent))
        elif kind == "line_end":
            places.append((kind, e))
        else:
            cuts = [m.end() for m in re.finditer(r"\w+|[(.=,\[]", line)]
            places.append((kind, s + rng.choice(cuts) if cuts else e))
    strings = [(s, e) for node, at in _tree_nodes(text, language)
               if "string" in node.type and node.end_byte - node.start_byte > 4
               for s, e in [(at(node.start_byte), at(node.end_byte))] if "\n" not in text[s:e]]
    comments = [(s, e) for node, at in _tree_nodes(text, language) if "comment" in node.type
                for s, e in [(at(node.start_byte), at(node.end_byte))]]
    for kind, found in (("in_string", strings), ("in_comment", comments)):
        found = [(s, e) for s, e in found if e - s >= 3]
        for s, e in rng.sample(found, min(2, len(found))):
            places.append((kind, rng.randint(s + 1, e - 1)))
    return places


def action_places(text: str, language: str) -> list[tuple[str, str, int, int]]:
    """(kind, text, start, end): a selection (rewrite), a cursor in a function (complete body), a stubbed body
    (fill holes), one statement among others stubbed (fill holes of a stub line), a closer removed (fix syntax).
    A place may bring its own text."""
    fns = functions(text, language)
    if not fns:
        return []
    start, end, stmts = fns[len(fns) // 2]
    out = [("selection", text, stmts[1][0], stmts[min(3, len(stmts)) - 1][1]),
           ("cursor", text, stmts[0][0], stmts[0][0])]
    lo, hi = stmts[0][0], stmts[-1][1]
    out.append(("stubbed", text[:lo] + STUB[language] + text[hi:], lo, lo))
    one = next(((a, b) for a, b in stmts[1:-1] if "\n" not in text[a:b]), None)
    if one is not None:   # one statement among others replaced by a stub line
        out.append(("stubline", text[:one[0]] + STUB_LINE[language] + text[one[1]:], one[0], one[0]))
    closing = next((i for i in range(end - 1, start, -1) if text[i] == ")"), None)
    if closing is not None:
        line_lo, line_hi = line_span(text, closing)
        out.append(("broken", text[:closing] + text[closing + 1:], line_lo, line_lo))
    return out


def variants(name: str, language: str, text: str, rng: random.Random, cursors: int) -> list[Doc]:
    """The file as it is, a CRLF copy, a tab-indented copy (not Go: tabs already) and a copy with emoji."""
    docs = [Doc(name, language, text, cursor_places(text, language, rng, cursors))]
    crlf = _BREAK.sub("\r\n", text)
    doc = Doc(name + " [crlf]", language, crlf, cursor_places(crlf, language, rng, max(2, cursors // 2)))
    doc.past_cr = [m.start() for m in re.finditer(r"\S\r\n", crlf)][3:6]
    docs.append(doc)
    if language != "go":
        tabbed = re.sub(r"(?m)^((?:    )+)", lambda m: "\t" * (len(m.group(1)) // 4), text)
        if tabbed != text:
            docs.append(Doc(name + " [tabs]", language, tabbed, cursor_places(tabbed, language, rng, 3)))
    fns = functions(text, language)
    if fns:
        _, _, stmts = fns[0]
        at = stmts[1][0]
        lo, _ = line_span(text, at)
        indent = text[lo:at]
        emoji = text[:at] + EMOJI_LINE[language] + "\n" + indent + text[at:]
        line_lo, line_hi = line_span(emoji, at)
        after = emoji.index("😀", at) + 1
        docs.append(Doc(name + " [emoji]", language, emoji,
                        [("after_emoji", after), ("after_emoji", emoji.index("é", at) + 2), ("line_end", line_hi),
                         ("next_line", line_hi + 1 + len(indent))]))
    return docs


def synthetic(language: str) -> list[Doc]:
    one = ONE_LINERS[language]
    return [Doc(f"empty.{EXTENSIONS[language]}", language, "", [("empty", 0)]),
            Doc(f"one-line.{EXTENSIONS[language]}", language, one, [("line_end", len(one)), ("mid_line", 3)]),
            Doc(f"one-line-crlf.{EXTENSIONS[language]}", language, one + "\r\n", [("line_end", len(one)),
                                                                                   ("next_line", len(one) + 2)])]


# -- the session -------------------------------------------------------------------------------------------
CAPABILITIES = {
    "general": {"positionEncodings": ["utf-16"]},
    "textDocument": {
        "inlineCompletion": {"dynamicRegistration": False},
        "synchronization": {"dynamicRegistration": False},
        "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": [
            "", "quickfix", "refactor", "refactor.rewrite"]}}, "dataSupport": True,
            "resolveSupport": {"properties": ["edit"]}},
        "completion": {"completionItem": {"snippetSupport": False}},
    },
    "workspace": {"workspaceEdit": {"documentChanges": True}, "applyEdit": True},
    "window": {"workDoneProgress": False},
}


class Session:
    def __init__(self, client: LspClient, timeout: float):
        self.client, self.timeout = client, timeout
        self.uris = 0
        self.rows: list[dict] = []

    def open(self, doc_name: str, language: str, text: str) -> str:
        self.uris += 1
        uri = f"file:///safety/{self.uris}/{Path(doc_name.split(' ')[0]).name}"
        self.client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": language, "version": 1, "text": text}})
        return uri

    def close(self, uri: str) -> None:
        self.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    def row(self, **row: Any) -> None:
        self.rows.append(row)
        if row.get("violations"):
            print(f"VIOLATION {row['doc']} {row['kind']} {row['request']}: {row['violations']}", file=sys.stderr)

    # cursor fills: inline completion and completion items, asked together (the server shares one job)
    def cursor(self, doc: Doc, uri: str, kind: str, position: dict, version: int = 1) -> None:
        text = doc.text
        cursor = offset_at(text, position)
        td = {"textDocument": {"uri": uri}, "position": position}
        f_inline = self._send("textDocument/inlineCompletion", {**td, "context": {"triggerKind": 1}})
        f_items = self._send("textDocument/completion", {**td, "context": {"triggerKind": 1}})
        for request, future, key in (("inline", f_inline, "items"), ("completion", f_items, "items")):
            try:
                result = self._wait("textDocument/" + request, future)
            except LspError as exc:
                self.row(doc=doc.name, language=doc.language, kind=kind, request=request, error=str(exc)[:200],
                         violations=[] if isinstance(exc, LspResponseError) else [f"error: {exc}"])
                continue
            items = (result or {}).get(key) or []
            for item in items:
                edit = ({"range": item["range"], "newText": item["insertText"]} if request == "inline"
                        else item["textEdit"])
                self._check_cursor(doc, kind, request, cursor, edit)
            if not items:
                self.row(doc=doc.name, language=doc.language, kind=kind, request=request, edits=0, violations=[])

    def _check_cursor(self, doc: Doc, kind: str, request: str, cursor: int, edit: dict) -> None:
        text = doc.text
        try:
            after, spans = apply_edits(text, [edit])
        except ValueError as exc:
            self.row(doc=doc.name, language=doc.language, kind=kind, request=request, edits=1,
                     violations=[f"place: {exc}"])
            return
        bad = check_cursor_edit(text, cursor, spans[0]) + check_result(text, after, doc.language, spans)
        self.row(doc=doc.name, language=doc.language, kind=kind, request=request, edits=1, violations=bad,
                 cursor=cursor, new=edit["newText"][:200])

    def _send(self, method: str, params: Any):
        """Send a request without waiting: its id's future."""
        from concurrent.futures import Future
        c = self.client
        rid = next(c._ids)
        future: Future = Future()
        c._pending[rid] = future
        c._send({"id": rid, "method": method, "params": params})
        return future

    def _wait(self, method: str, future) -> Any:
        try:
            _, message = future.result(timeout=self.timeout)
        except TimeoutError as e:
            raise LspError(f"{method}: no answer within {self.timeout:g} s") from e
        if "error" in message:
            raise LspResponseError(f"{method}: {message['error'].get('message', message['error'])}")
        return message.get("result")

    # a cursor fill asked, then the document edited before the answer: nothing may be offered
    def cursor_race(self, doc: Doc, uri: str, kind: str, position: dict) -> None:
        f = self._send("textDocument/inlineCompletion", {"textDocument": {"uri": uri}, "position": position,
                                                         "context": {"triggerKind": 1}})
        self.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                      "contentChanges": [{"text": doc.text + " "}]})
        try:
            result = self._wait("textDocument/inlineCompletion", f)
        except LspResponseError as exc:
            self.row(doc=doc.name, language=doc.language, kind=kind, request="inline-race", edits=0,
                     violations=[], error=str(exc)[:200])
            return
        items = (result or {}).get("items") or []
        self.row(doc=doc.name, language=doc.language, kind=kind, request="inline-race", edits=len(items),
                 violations=[f"version: {len(items)} fill(s) offered for a version the document moved past"]
                 if items else [])

    # code actions: offered at a place, each resolved, its edit applied and checked
    def actions(self, name: str, language: str, kind: str, text: str, start: int, end: int, race: bool) -> None:
        uri = self.open(name, language, text)
        rng_json = {"start": position_at(text, start), "end": position_at(text, end)}
        try:
            offered = self.client.request("textDocument/codeAction", {
                "textDocument": {"uri": uri}, "range": rng_json,
                "context": {"diagnostics": [], "triggerKind": 1}}, self.timeout) or []
        except LspError as exc:
            self.row(doc=name, language=language, kind=kind, request="codeAction", error=str(exc)[:200],
                     violations=[] if isinstance(exc, LspResponseError) else [f"error: {exc}"])
            self.close(uri)
            return
        from engine.targets import survey
        found = survey(text, language, start, end)
        for action in offered:
            which = (action.get("data") or {}).get("action", action.get("title"))
            future = self._send("codeAction/resolve", action)
            if race:
                self.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                              "contentChanges": [{"text": text + " "}]})
            try:
                resolved = self._wait("codeAction/resolve", future)
            except LspError as exc:
                modified = isinstance(exc, LspResponseError)
                self.row(doc=name, language=language, kind=kind, request=f"action:{which}" + ("-race" if race else ""),
                         edits=0, error=str(exc)[:200], violations=[] if modified else [f"error: {exc}"])
                continue
            edit = resolved.get("edit")
            changes = (edit or {}).get("documentChanges") or []
            edits = [e for c in changes for e in c["edits"]]
            bad = []
            if race and edits and any(c["textDocument"]["version"] != 1 for c in changes):
                bad.append("version: an edit for the version the document moved to")
            if edit and not changes and (edit.get("changes") or {}):
                bad.append("version: edit without documentChanges")
            if edits and any(c["textDocument"]["version"] != 1 for c in changes) and not race:
                bad.append("version: edit names another version")
            if edits:
                try:
                    after, spans = apply_edits(text, edits)
                except ValueError as exc:
                    bad.append(f"place: {exc}")
                    spans, after = [], text
                if spans:
                    bad += self._action_place(text, which, start, end, found, spans)
                    bad += check_result(text, after, language, spans)
            self.row(doc=name, language=language, kind=kind, request=f"action:{which}" + ("-race" if race else ""),
                     edits=len(edits), violations=bad,
                     new=[e["newText"][:200] for e in edits], spans=[(s, e) for s, e, _ in spans] if edits else [])
        if not offered:
            self.row(doc=name, language=language, kind=kind, request="codeAction", edits=0, violations=[])
        self.close(uri)

    @staticmethod
    def _action_place(text: str, which: str, start: int, end: int, found, spans) -> list[str]:
        """Where each action may write: a rewrite on the selection's lines, a fill in its holes, a body in its
        body, a fix on the lines next to the error."""
        if which == "rewriteSelection":
            allowed = [(line_span(text, start)[0], line_span(text, end)[1] + 2)]
        elif which == "fillHoles":
            allowed = [(b.start, b.end) for b in found.blanks]
        elif which == "completeBody":
            allowed = [(found.body.start, found.body.end)] if found.body else []
        elif which == "fixSyntax":
            allowed = []
            for s, e in found.errors:
                lo = line_span(text, s)[0]
                for _ in range(2):
                    lo = line_span(text, max(0, lo - 1))[0]
                hi = line_span(text, e)[1]
                for _ in range(2):
                    hi = line_span(text, min(len(text), hi + 1))[1]
                allowed.append((lo, hi))
        else:
            return [f"place: unknown action {which}"]
        return [f"place: {which} edit at {s}..{e} outside {allowed}" for s, e, _ in spans
                if not any(lo <= s and e <= hi for lo, hi in allowed)]


def run(args: argparse.Namespace) -> dict:
    rng = random.Random(args.seed)
    corpus = Path(args.corpus)
    files = dev_files(corpus, tuple(args.languages)) if (corpus / "files").is_dir() \
        else sample_files(tuple(args.languages))
    docs: list[Doc] = []
    picked_by_lang = {}
    for lang in args.languages:
        docs += synthetic(lang)
        picked = picked_by_lang[lang] = rng.sample(files[lang], min(args.files, len(files[lang])))
        for name, text in picked:
            docs += variants(name, language_of(name, lang), text, rng, args.cursors)
    action_docs = action_documents(picked_by_lang, args.action_files)
    # interleave languages so that --limit reaches every language
    options = {"threads": args.threads, "minConfidence": args.min_confidence}
    stats: dict[str, Any] = {"positions": 0, "action_places": 0}
    t0 = time.perf_counter()
    with LspClient(stderr_path=args.stderr) as client:
        client.request("initialize", {"processId": None, "rootUri": None, "capabilities": CAPABILITIES,
                                      "initializationOptions": options}, 120)
        client.notify("initialized", {})
        client.wait_ready(600)
        s = Session(client, args.timeout)
        by_lang = {lang: [d for d in docs if d.language in (lang, lang + "react")] for lang in args.languages}
        order = []
        while any(by_lang.values()):
            for lang in args.languages:
                if by_lang[lang]:
                    order.append(by_lang[lang].pop(0))
        for doc in order:
            if stats["positions"] >= args.limit:
                break
            uri = s.open(doc.name, doc.language, doc.text)
            for kind, offset in doc.cursors:
                s.cursor(doc, uri, kind, position_at(doc.text, offset))
                stats["positions"] += 1
            for line_end in doc.past_cr:  # one UTF-16 unit past the line's end: after its \r
                p = position_at(doc.text, line_end)
                s.cursor(doc, uri, "past_cr", {"line": p["line"], "character": p["character"] + 1})
                stats["positions"] += 1
            if doc.cursors and rng.random() < args.race:
                s.cursor_race(doc, uri, "race", position_at(doc.text, doc.cursors[0][1]))
                stats["positions"] += 1
            s.close(uri)
            print(f"[{time.perf_counter() - t0:.0f}s] {stats['positions']} positions, {len(s.rows)} rows: {doc.name}",
                  file=sys.stderr)
        for i, (name, lang, text) in enumerate(action_docs):
            for kind, place_text, start, end in action_places(text, lang):
                s.actions(name, lang, kind, place_text, start, end, race=(i % 5 == 4))
                stats["action_places"] += 1
            print(f"[{time.perf_counter() - t0:.0f}s] actions: {name}", file=sys.stderr)
        rows = s.rows
    return {**stats, **summary(rows), "seconds": round(time.perf_counter() - t0), "rows": rows}


def action_documents(picked: dict[str, list[tuple[str, str]]], per_language: int) -> list[tuple[str, str, str]]:
    """(name, language id, text): the first ``per_language`` picked files of each language, as they are and as a
    CRLF copy."""
    out = []
    for lang, files in picked.items():
        for name, text in files[:per_language]:
            out.append((name, language_of(name, lang), text))
            out.append((name + " [crlf]", language_of(name, lang), _BREAK.sub("\r\n", text)))
    return out


def summary(rows: list[dict]) -> dict:
    violations = Counter(v.split(":", 1)[0] for r in rows for v in r.get("violations", []))
    by_request = Counter(r["request"] for r in rows if r.get("edits"))
    return {"requests": len(rows), "edits_offered": sum(r.get("edits", 0) for r in rows),
            "edits_by_request": dict(by_request), "errors": sum("error" in r for r in rows),
            "violations": dict(violations),
            "violating_rows": sum(bool(r.get("violations")) for r in rows)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.action_safety", description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default=str(ROOT / "runs" / "corpus"), help="the built corpus (its files/valid)")
    p.add_argument("--limit", type=int, default=300, help="cursor positions at most")
    p.add_argument("--files", type=int, default=6, help="files per language for cursor positions")
    p.add_argument("--action-files", type=int, default=3, help="files per language for code actions")
    p.add_argument("--cursors", type=int, default=6, help="code-line positions per file")
    p.add_argument("--race", type=float, default=0.3, help="share of documents also asked with a didChange after")
    p.add_argument("--languages", nargs="*", default=list(LANGUAGES))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--min-confidence", type=float, default=0.0,
                   help="0: every valid fill is offered and checked (the checks hold whatever the bar)")
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--stderr", default="/dev/null", help="the server's log")
    p.add_argument("--out", default=str(default_out("action-safety")))
    args = p.parse_args(argv)
    result = envelope("action-safety", "benchmarks.action_safety", argv)
    result.update(run(args))
    write_result(args.out, result)
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
