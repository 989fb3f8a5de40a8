"""LSP position <-> str offset conversions on one long line (issue 18, item 5): how long one conversion
near the end of a 2 MB single-line document takes, per encoding, the first time on a text (cold: the
line's unit table is made) and again (warm), and what an incremental edit at the line's end costs;
then, through a real server (no model needed), how long a ``diffusion/stats`` request sent 20 ms after
an inline request near the end of that line waits for its answer (the event loop is not blocked when
this is about a millisecond).

    python -m benchmarks.positions --out benchmarks/results/positions.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time

from lsprotocol import types

from benchmarks.lsp_client import LspClient
from benchmarks.report import default_out, envelope, run_cli, write_result
from lsp_server.documents import UTF8, UTF16, UTF32, Document


def long_line(size: int) -> str:
    """``size`` characters of code on one line, with an emoji (2 UTF-16 units, 4 UTF-8 bytes) and an
    accented letter every 4 KB, and a lone surrogate near the end."""
    chunk = "x_value = compute(x_value, 'é') + 1; " * 110 + "s = '😀'; "
    text = (chunk * (size // len(chunk) + 1))[:size - 16]
    return text + "t = '\ud800'; y = "


def _ms(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000.0)
    return out


def measure(size: int, repeat: int) -> dict:
    text = long_line(size)
    rows = {}
    for enc in (UTF16, UTF8, UTF32):
        doc = Document("file:///long.py", "python", 1, text)
        end = doc.position_at(len(text), enc)
        near_end = doc.position_at(len(text) - 3, enc)  # inside the line's last block, not clamped to its end

        def edit_then_convert(doc=doc, enc=enc):
            at = doc.position_at(len(doc.text), enc)
            doc.apply(types.TextDocumentContentChangePartial(types.Range(at, at), "z"), enc)
            doc.offset_at(at, enc)

        cold = _ms(lambda: Document("file:///long.py", "python", 1, text).offset_at(end, enc), repeat)
        warm_offset = _ms(lambda: doc.offset_at(near_end, enc), repeat)
        warm_position = _ms(lambda: doc.position_at(len(text) - 3, enc), repeat)
        edit = _ms(edit_then_convert, repeat)
        assert doc.offset_at(end, enc) == len(text) and doc.offset_at(near_end, enc) == len(text) - 3
        rows[enc.value] = {"end_position": {"line": end.line, "character": end.character},
                     "first_offset_at_ms": round(statistics.median(cold), 3),
                     "offset_at_ms": round(statistics.median(warm_offset), 3),
                     "position_at_ms": round(statistics.median(warm_position), 3),
                     "edit_at_end_then_offset_at_ms": round(statistics.median(edit), 3)}
    return rows


def stats_behind_inline(size: int, repeat: int) -> dict:
    """Round trips of diffusion/stats, each sent 20 ms after an inline request near the end of the line."""
    text = long_line(size)
    end = len(text.encode("utf-16-le", "surrogatepass")) // 2
    waits = []
    with LspClient([sys.executable, "-m", "lsp_server"]) as client:  # this checkout's server
        client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                      "initializationOptions": {"threads": 1}})  # no `initialized`: no model
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": "file:///long.py", "languageId": "python", "version": 1, "text": text}})
        client.request("diffusion/stats", {})
        for i in range(repeat):
            inline = threading.Thread(target=client.request, args=("textDocument/inlineCompletion", {
                "textDocument": {"uri": "file:///long.py"}, "position": {"line": 0, "character": end - 3 - i},
                "context": {"triggerKind": 1}}))
            inline.start()
            time.sleep(0.02)
            waits.append(client.request_timed("diffusion/stats", {})[1])
            inline.join()
    return {"median_ms": round(statistics.median(waits), 1), "max_ms": round(max(waits), 1)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.positions", description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=2_000_000, help="characters on the line")
    p.add_argument("--repeat", type=int, default=9, help="runs per figure (the median is reported)")
    p.add_argument("--out", default=str(default_out("positions")))
    args = p.parse_args(argv)
    result = envelope("positions", "benchmarks.positions", argv)
    rows = measure(args.size, args.repeat)
    behind = stats_behind_inline(args.size, args.repeat)
    result.update({"line_chars": args.size, "repeat": args.repeat, "encodings": rows,
                   "stats_behind_inline_request": behind})
    write_result(args.out, result)
    for enc, row in rows.items():
        print(f"{enc}: first offset_at {row['first_offset_at_ms']} ms, then offset_at {row['offset_at_ms']} ms, "
              f"position_at {row['position_at_ms']} ms; edit at the end + offset_at "
              f"{row['edit_at_end_then_offset_at_ms']} ms")
    print(f"diffusion/stats sent 20 ms after an inline request near the end: median {behind['median_ms']} ms, "
          f"max {behind['max_ms']} ms")
    return 0


if __name__ == "__main__":
    run_cli(main)
