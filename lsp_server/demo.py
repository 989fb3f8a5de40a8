"""``diffusion-lsp demo``: a scripted editor session against a real server process over stdio.

Opens a file, asks for ghost text at the cursor with drafts on, and prints the suggestion developing
step by step (masked slots as ▒, doubtful tokens dimmed), then the final edit and its timing. Without
``--file`` it plays two built-in scenes in one session: code that repeats itself (a function written like
the one above it, where the engine offers the line the document already has), then new code (where the
small model's guess is usually withheld, and is shown with the bar off).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import NamedTuple

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from engine.languages import language_for_path

from .documents import Document

EXAMPLE = f'''import os


def count_lines(path):
    """Return the number of lines in the file at path."""
    with open(path) as f:
        return sum(1 for _ in f)


def largest_file(root):
    """Return the path of the largest file under root."""
    best, best_size = None, -1
    for dirpath, _, names in os.walk(root):
        for name in names:
            full = os.path.join(dirpath, name)
{" " * 12}
            if size > best_size:
                best, best_size = full, size
    return best
'''
EXAMPLE_CURSOR = (15, 12)  # 0-based: the end of the indented empty line inside the inner loop (12 spaces, spelt out
#                            so that no whitespace cleanup strips them and leaves the cursor past the line's end)

REPEATED = f'''import os


def largest_file(root):
    """Return the path of the largest file under root."""
    best, best_size = None, -1
    for dirpath, _, names in os.walk(root):
        for name in names:
            full = os.path.join(dirpath, name)
            size = os.path.getsize(full)
            if size > best_size:
                best, best_size = full, size
    return best


def smallest_file(root):
    """Return the path of the smallest file under root."""
    best, best_size = None, None
    for dirpath, _, names in os.walk(root):
        for name in names:
            full = os.path.join(dirpath, name)
{" " * 12}
            if best_size is None or size < best_size:
                best, best_size = full, size
    return best
'''
REPEATED_CURSOR = (21, 12)  # 0-based: the empty line in smallest_file's inner loop, as EXAMPLE_CURSOR


class Scene(NamedTuple):
    title: str   # "" for the user's own --file
    shown: str   # the document's name as printed
    doc: Document
    line: int    # the cursor, 0-based (line, character in the line)
    col: int


def scenes(args) -> list[Scene]:
    """What the demo plays: the user's ``--file`` at ``--at``, or the two built-in scenes."""
    if args.file:
        return [Scene("", args.file, *_source(args))]
    return [Scene("1. Code that repeats itself: smallest_file is written like largest_file above it",
                  "repeated.py (built in)", Document("file:///demo/repeated.py", "python", 1, REPEATED),
                  *REPEATED_CURSOR),
            Scene("2. New code: nothing in the file says how to get a file's size",
                  "example.py (built in)", Document("file:///demo/example.py", "python", 1, EXAMPLE),
                  *EXAMPLE_CURSOR)]


def _shade(tokens: list[dict], color: bool) -> str:
    if not color:
        return "".join(t["text"] for t in tokens)
    out = []
    for t in tokens:
        c = t["confidence"]
        style = "\033[2m" if t["text"] == "▒" else "\033[1m" if c >= 0.9 else "" if c >= 0.5 else "\033[33m"
        out.append(f"{style}{t['text']}\033[0m")
    return "".join(out)


def restart_line(attempt: int, slots: int, kind: str | None) -> str:
    """What the demo prints when a request's next attempt starts a new draft (docs/PROTOCOL.md: ``attempt``)."""
    size = f" with a {slots}-slot hole" if slots else ""
    why = (" (a one-line hole is filled at 8 and at 24 slots; the more confident valid fill wins)"
           if kind == "line" else "")
    return f"  -- the draft starts again: attempt {attempt + 1}{size}{why}; the steps go on counting"


def _source(args) -> tuple[Document, int, int]:
    """``--file``'s document and the cursor (0-based line, character in the line); ValueError saying what is wrong
    with --file or --at. COL counts characters, as ``infill``'s does; the lines are the LSP lines (LF, CRLF or a lone
    CR)."""
    try:
        with open(args.file, encoding="utf-8", newline="") as f:
            text = f.read().removeprefix("\ufeff")  # a byte order mark is no character, as in an editor
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {args.file}: {exc}") from None
    try:
        line, col = (int(x) for x in (args.at or "1:1").split(":"))
    except ValueError:
        raise ValueError(f"--at must be LINE:COL (two integers), not {args.at!r}") from None
    doc = Document(Path(args.file).resolve().as_uri(), language_for_path(args.file), 1, text)
    starts = doc.line_starts()
    if not 1 <= line <= len(starts):
        raise ValueError(f"--at {args.at}: LINE is 1..{len(starts)}")
    width = _line(doc, line - 1)[1] - starts[line - 1]
    if not 1 <= col <= width + 1:
        raise ValueError(f"--at {args.at}: line {line} has {width} characters: COL is 1..{width + 1}")
    return doc, line - 1, col - 1


def _line(doc: Document, line: int) -> tuple[int, int]:
    """The offsets of the 0-based ``line``'s text, its line break left out."""
    return doc.line_starts()[line], doc._line_end(line)


async def _session(args, played: list[Scene]) -> int:
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    client = LanguageClient("diffusion-lsp-demo", "1")
    drafts: list[dict] = []
    ready = asyncio.Event()
    status: dict = {}
    echo = {"on": True}  # print drafts as they come

    @client.feature("diffusion/status")
    def _status(ls, params):
        status.update(state=params.state, message=params.message)
        if params.state in ("ready", "error"):
            ready.set()

    @client.feature("diffusion/draft")
    def _draft(ls, params):
        d = {"step": params.step, "done": params.done, "attempt": getattr(params, "attempt", None),
             "tokens": [{"text": t.text, "confidence": t.confidence} for t in params.tokens], "text": params.text,
             "estimate": getattr(params, "fillConfidence", None)}
        if not echo["on"]:
            drafts.append(d)
            return
        if d["attempt"] and drafts and drafts[-1]["attempt"] != d["attempt"]:
            print(restart_line(d["attempt"], getattr(params, "slots", 0), getattr(params, "kind", None)), flush=True)
        drafts.append(d)
        label = " (final)" if d["done"] else "        "
        print(f"  step {d['step']:>2}{label} | {_shade(d['tokens'], color) or d['text']}", flush=True)

    t0 = time.monotonic()
    await client.start_io(sys.executable, "-m", "lsp_server")
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(),
        initialization_options={"model": args.model, "drafts": True, "draftIntervalMs": 0, "threads": 1}))
    client.initialized(types.InitializedParams())
    print(f"diffusion-lsp demo: loading model '{args.model}' in a real server process ...", flush=True)
    await asyncio.wait_for(ready.wait(), 300)
    if status.get("state") != "ready":
        print(f"model failed to load: {status.get('message')}", file=sys.stderr)
        return 1
    print(f"ready in {time.monotonic() - t0:.1f} s.")
    for scene in played:
        drafts.clear()
        echo["on"] = True
        await _play(client, scene, drafts, echo)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return 0


async def _play(client: LanguageClient, scene: Scene, drafts: list[dict], echo: dict) -> None:
    """One scene: the document opened, ghost text asked for at its cursor, the drafts printed as they come (by the
    client's handler, while ``echo`` is on), the answer; when nothing is offered, the same request once more with
    the bar and the names rule off (its drafts not printed), and the settings put back."""
    doc, line, col = scene.doc, scene.line, scene.col
    text, uri = doc.text, doc.uri
    at = doc.position_at(doc.line_starts()[line] + col)  # the cursor as LSP has it: UTF-16 units
    if scene.title:
        print(f"\n{scene.title}")
    print(f"Document {scene.shown}, cursor at line {line + 1}, column {col + 1}:\n")
    for i in range(max(0, line - 4), min(len(doc.line_starts()), line + 3)):
        print(f"  {i + 1:>4} {'>' if i == line else ' '} {text[slice(*_line(doc, i))]}")
    print("\nthe suggestion developing, one line per denoising step:")
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id=doc.language_id, version=1, text=text)))
    t1 = time.monotonic()
    items = await _ask(client, uri, at)
    elapsed = (time.monotonic() - t1) * 1000
    await asyncio.sleep(0.1)
    count = len(drafts)
    if not items:
        # Withheld by the confidence bar (minConfidence), or nothing valid: ask once more with no bar,
        # so the user sees what the model wrote and how sure the engine is of it.
        drafts.clear()
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"diffusionLsp": {"minConfidence": 0, "namesRule": False}}))
        print("\nnothing offered with the default settings, which withhold unsure fills (minConfidence) and "
              "fills using a name the file defines nowhere (namesRule); the same request with both off, "
              "drafts not shown:")
        echo["on"] = False
        withheld = await _ask(client, uri, at)
        await asyncio.sleep(0.1)
        _report(doc, withheld, drafts, "shown only with minConfidence 0 and namesRule off: ")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"diffusionLsp": {"minConfidence": None, "namesRule": True}}))
    else:
        _report(doc, items, drafts, "")
    print(f"round trip {elapsed:.0f} ms, {count} drafts")
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))


async def _ask(client: LanguageClient, uri: str, at: types.Position) -> list[types.InlineCompletionItem]:
    result = await client.text_document_inline_completion_async(types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri), position=at,
        context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked)))
    return list(result.items) if isinstance(result, types.InlineCompletionList) else list(result or ())


def _report(doc: Document, items: list[types.InlineCompletionItem], drafts: list[dict], prefix: str) -> None:
    """The answer: ghost text with its range and the engine's estimate that it is exactly right."""
    final = next((d for d in reversed(drafts) if d["done"]), None)
    estimate = final.get("estimate") if final else None
    sure = f" (estimated {estimate:.0%} likely exactly right)" if estimate is not None else ""
    r = items[0].range if items else None
    if not items or r is None:
        print("\nno suggestion passed validation here (the embedded model is small; try another spot)")
        return
    column = doc.offset_at(r.start) - doc.line_starts()[r.start.line] + 1  # in characters, as --at
    print(f"\n{prefix}ghost text for {r.start.line + 1}:{column}: {items[0].insert_text!r}{sure}")
    same = _same_line(doc, items[0])
    if same is not None:
        print(f"  (line {same + 1} of the document reads the same: the engine offered the line the code already "
              "has over the model's own draft)")
    for other in items[1:]:
        print(f"  alternative: {other.insert_text!r}")


def _same_line(doc: Document, item: types.InlineCompletionItem) -> int | None:
    """The 0-based line of the document, other than the one edited, whose code is the edited line's code once
    ``item`` is applied (None: none, or a fill of several lines)."""
    r = item.range
    text = item.insert_text if isinstance(item.insert_text, str) else item.insert_text.value
    if r is None or "\n" in text.rstrip("\n"):
        return None
    start, end = doc.offset_at(r.start), doc.offset_at(r.end)
    head = doc.text[doc.line_starts()[r.start.line]:start]
    tail = doc.text[end:_line(doc, r.end.line)[1]]
    code = (head + text.rstrip("\n") + tail).strip()
    return next((i for i in range(len(doc.line_starts())) if i != r.start.line
                 and doc.text[slice(*_line(doc, i))].strip() == code), None) if code else None


def run_demo(args) -> int:
    try:
        played = scenes(args)   # a file or cursor it cannot use: one line, before a server starts
    except ValueError as exc:
        print(f"diffusion-lsp demo: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(_session(args, played))
