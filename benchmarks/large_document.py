"""Engine latency in a large document: where a window cut from the document refuses a fill, the whole document is
parsed (once per request, then incrementally; ``validate.document_parses``, not above 300,000 characters).

A TypeScript and a Go document of ``--chars`` characters are generated from one function repeated (each copy numbered),
and a cursor is put in the middle one: an empty line after a statement, then the same line with ``ret`` typed, then
with ``total = compute(tot`` typed (a line broken where it is typed: a fill that passes the other checks is checked
to finish it, on the whole document: ``finishes_line``). Each hole is filled ``--repeats`` times by the engine (the
embedded model, one thread; the first request is a warm-up and not counted); p50 and max of the rest are reported per
language and hole, with what the engine offered.

    python -m benchmarks.large_document --out benchmarks/results/large-document.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from .infill import engine_args, engine_config
from .report import envelope, write_result

FUNCTIONS = {
    "typescript": ("import { Request, Response } from 'express';\n\n",
                   "export function handle{i}(req: Request, res: Response): number {{\n"
                   "  const body = req.body as Payload;\n  if (!body.items) {{\n"
                   "    return res.status(400).json({{ error: 'no items' }});\n  }}\n  let total = 0;\n"
                   "  for (const item of body.items) {{\n    total += item.price * item.count;\n  }}\n"
                   "  return total + {i};\n}}\n\n", "let total = 0;", "  "),
    "go": ("package m\n\nimport (\n\t\"io\"\n\t\"net/http\"\n)\n\n",
           "func handle{i}(w http.ResponseWriter, r *http.Request) int {{\n\tbody, err := io.ReadAll(r.Body)\n"
           "\tif err != nil {{\n\t\treturn 0\n\t}}\n\ttotal := 0\n\tfor _, b := range body {{\n\t\ttotal += int(b)\n"
           "\t}}\n\treturn total + {i}\n}}\n\n", "total := 0", "\t"),
}
TYPED = (("empty line", ""), ("typed 'ret'", "ret"), ("typed into a call", "total = compute(tot"))


def document(language: str, chars: int) -> tuple[str, int]:
    """The generated document (at least ``chars`` characters) and the offset after the anchor line of its middle
    function, where the hole's line is inserted."""
    head, function, anchor, _ = FUNCTIONS[language]
    parts, n = [head], 0
    while sum(map(len, parts)) < chars:
        parts.append(function.format(i=n))
        n += 1
    text = "".join(parts)
    middle = text.index(function.format(i=n // 2).split("\n")[0])
    return text, text.index("\n", text.index(anchor, middle)) + 1


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.large_document", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the result JSON")
    p.add_argument("--chars", type=int, default=280_000, help="the documents' size (default 280,000 characters)")
    p.add_argument("--repeats", type=int, default=8, help="requests per hole, the first a warm-up (default 8)")
    engine_args(p)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from engine import Engine, InfillRequest

    args = parse_args(argv)
    if args.repeats < 2:
        print("--repeats must be at least 2 (the first request is a warm-up)", file=sys.stderr)
        return 2
    engine = Engine(engine_config(args))
    engine.start().result()
    rows = []
    try:
        for language, (_, _, _, indent) in FUNCTIONS.items():
            text, at = document(language, args.chars)
            for label, typed in TYPED:
                doc = text[:at] + indent + typed + "\n" + text[at:]
                cursor = at + len(indent) + len(typed)
                times, fills = [], []
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    c = engine.infill_sync(InfillRequest(text=doc, offset=cursor, language=language))
                    times.append((time.perf_counter() - t0) * 1000)
                    fills = [f.text for f in c.fills]
                counted = times[1:]
                rows.append({"language": language, "hole": label, "chars": len(doc), "requests": len(counted),
                             "p50_ms": round(statistics.median(counted), 1), "max_ms": round(max(counted), 1),
                             "offered": fills[:1], "rejected": c.rejected})
                print(f"{language} {len(doc)} chars, {label}: p50 {rows[-1]['p50_ms']} ms, max {rows[-1]['max_ms']} ms")
    finally:
        engine.close()
    result = envelope("large_document", "benchmarks.large_document", argv)
    result.update({"chars": args.chars, "repeats": args.repeats, "rows": rows})
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
