"""The server's memory while a large document is edited: one real ``diffusion-lsp`` (embedded model, stdio), one
generated document per language, and ``--rounds`` rounds of what typing in it sends: a character typed at the end of
a line (``didChange`` with the whole text, as some clients send it), ``textDocument/inlineCompletion`` after it, and an
invoked ``textDocument/codeAction`` there. The server's VmRSS is read after each round; a server that keeps something
of each parse grows round after round (tree-sitter's binding kept every chunk of a parse read in chunks:
``languages._Reader``).

The documents: Perl (a sub repeated and numbered: its grammar's scanner asks for a chunk tens of thousands of times a
parse), Python and C, each about ``--chars`` characters: over the 64 KiB that ``languages.parse`` reads in chunks,
under the 150,000 of the plain-text check (``validate.PLAIN_CHECK_LIMIT``).

    python -m benchmarks.edit_memory --out benchmarks/results/edit-memory.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .lsp_client import LspClient, position_at
from .report import envelope, write_result
from .tasks import EXTENSIONS

UNITS = {
    "perl": "sub handle{i} {{\n    my ($self, %args) = @_;\n    my $name = $args{{name}} // \"none\";\n"
            "    print \"value: $name\\n\" if $self->{{debug}};\n"
            "    return $self->{{items}}[{i}] =~ s/^\\s+//r;\n}}\n\n",
    "python": "def handle{i}(request, items):\n    total = 0\n    for item in items:\n"
              "        total += item.price * item.count\n    return request.respond(total + {i})\n\n\n",
    "c": "int handle{i}(const struct item *items, int n) {{\n    int total = 0;\n    for (int k = 0; k < n; k++) {{\n"
         "        total += items[k].price * items[k].count;\n    }}\n    return total + {i};\n}}\n\n",
}

def document(language: str, chars: int) -> str:
    unit = UNITS[language]
    parts, size, i = [], 0, 0
    while size < chars:
        parts.append(unit.format(i=i))
        size += len(parts[-1])
        i += 1
    return "".join(parts)


def resident_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def run_language(language: str, chars: int, rounds: int, command: list[str] | None) -> dict:
    text = document(language, chars)
    uri = f"file:///edit-memory/doc{EXTENSIONS[language]}"
    with LspClient(command=command) as client:
        client.initialize({})
        client.wait_ready()
        client.notify("textDocument/didOpen",
                      {"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}})
        opened = resident_mb(client.pid)
        after, offered = [], 0
        lines = text.split("\n")
        for k in range(rounds):
            row = len(lines) // 4 + 7 * k   # a line in the first half, a new one each round
            at = sum(len(line) + 1 for line in lines[:row]) + len(lines[row])
            text = text[:at] + " " + text[at:]
            lines = text.split("\n")
            client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": k + 2},
                                                     "contentChanges": [{"text": text}]})
            position = position_at(text, at + 1)
            answer = client.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": uri}, "position": position, "context": {"triggerKind": 1}})
            items = answer.get("items", []) if isinstance(answer, dict) else answer or []
            offered += bool(items)
            client.request("textDocument/codeAction", {
                "textDocument": {"uri": uri}, "range": {"start": position, "end": position},
                "context": {"diagnostics": [], "triggerKind": 1}})
            after.append(resident_mb(client.pid))
    growth = round((after[-1] - after[0]) / max(1, rounds - 1), 1)
    print(f"{language} {len(text)} chars: {opened} MB open, {after[0]} after the first round, {after[-1]} after "
          f"{rounds} ({growth} MB a round)")
    return {"language": language, "chars": len(text), "rounds": rounds, "opened_mb": opened, "after_mb": after,
            "growth_mb_per_round": growth, "rounds_offered": offered}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.edit_memory", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the result JSON")
    p.add_argument("--chars", type=int, default=130_000, help="each document's size (default 130,000 characters)")
    p.add_argument("--rounds", type=int, default=12, help="edits, each with its requests (default 12)")
    p.add_argument("--languages", nargs="+", default=list(UNITS), choices=list(UNITS))
    p.add_argument("--module", action="store_true",
                   help="start the server as `python -m lsp_server` from the working directory (a worktree's code), "
                        "not the installed `diffusion-lsp`")
    p.add_argument("--note", default="", help="recorded with the result")
    args = p.parse_args(argv)
    if args.rounds < 2:
        print("--rounds must be at least 2", file=sys.stderr)
        return 2
    command = [sys.executable, "-m", "lsp_server"] if args.module else None
    rows = [run_language(language, args.chars, args.rounds, command) for language in args.languages]
    result = envelope("edit_memory", "benchmarks.edit_memory", argv)
    result.update({"chars": args.chars, "rounds": args.rounds, "rows": rows, "note": args.note})
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
