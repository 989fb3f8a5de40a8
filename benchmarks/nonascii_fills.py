"""One-line fills next to non-ASCII text (accents, emoji, German docstrings) through a real server: how often is
no fill offered because the model's candidates were byte tokens that form no UTF-8, and does any answer hold a
character the user never wrote (U+FFFD, a lone surrogate)?

Each line of the documents below that holds a non-ASCII character is cut twice: just before its first non-ASCII
character and just after it; the rest of the line is deleted and the server is asked for the line's rest
(textDocument/inlineCompletion, UTF-16 positions). The server runs with -v, so its log says why an answer is
empty ("N candidate(s) written in byte tokens that form no UTF-8").

    python -m benchmarks.nonascii_fills --out benchmarks/results/nonascii-fills.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.lsp_client import LspClient, offset_at, position_at

DOCS: dict[str, tuple[str, str]] = {
    "cafe.py": ("python", '''def greet(name):
    print("café")
    print(f"Bonjour {name}, ça va ?")
    return "naïve résumé"


MENU = {"café": 2.5, "crème brûlée": 6.0, "thé": 2.0}


def größe(wert):
    """Berechnet die Größe des Objekts.

    Gibt die Länge zurück, wenn möglich; sonst wird eine Ausnahme ausgelöst.
    """
    länge = len(wert)
    return länge
'''),
    "status.py": ("python", '''STATUS = {
    "ok": "✅ passed",
    "fail": "❌ failed",
    "skip": "⏭️ skipped",
}


def report(results):
    for name, ok in results.items():
        mark = "✅" if ok else "❌"
        print(f"{mark} {name}")
    print("🎉 done")
'''),
    "emoji.js": ("javascript", '''const reactions = {
  like: "👍",
  love: "❤️",
  laugh: "😂",
};

function celebrate(user) {
  console.log(`🎉 Congrats, ${user}!`);
  return "🚀 launched";
}

const greeting = "¡Hola, señor!";
const city = "São Paulo";
'''),
    "i18n.ts": ("typescript", '''export const messages = {
  de: "Schließen",
  fr: "Fermer la fenêtre",
  es: "Cerrar la ventana",
  ja: "閉じる",
  emoji: "🙈",
};

export function label(lang: string): string {
  // Übersetzung aus der Tabelle
  return messages[lang] ?? "—";
}
'''),
    "main.go": ("go", '''package main

import "fmt"

func main() {
	fmt.Println("Grüße aus München")
	fmt.Println("🐹 gopher")
	name := "José"
	fmt.Printf("¿Qué tal, %s?\\n", name)
}
'''),
    "lib.rs": ("rust", '''fn main() {
    let city = "Zürich";
    println!("Willkommen in {} 🇨🇭", city);
    let price = "12 €";
    println!("{}", price);
}
'''),
}


def cases() -> list[tuple[str, str, str, int, str]]:
    """(uri name, language, document with the line cut, cursor str offset, the line's deleted rest)."""
    out = []
    for name, (lang, text) in DOCS.items():
        pos = 0
        for line in text.splitlines(keepends=True):
            body = line.rstrip("\n")
            first = next((i for i, ch in enumerate(body) if ord(ch) > 127), None)
            if first is not None:
                for k, cut in enumerate((first, first + 1)):
                    doc = text[:pos + cut] + "\n" + text[pos + len(line):]
                    out.append((f"{Path(name).stem}-{len(out)}-{k}{Path(name).suffix}", lang, doc, pos + cut,
                                body[cut:]))
            pos += len(line)
    return out


def _foreign(s: str) -> bool:
    return "\ufffd" in s or re.search("[\ud800-\udfff]", s) is not None


def run(server: list[str], threads: int) -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        log_path = Path(tmp) / "server.log"
        with LspClient(server + ["-v"], stderr_path=log_path) as client:
            client.initialize({"threads": threads})
            client.wait_ready(300)
            for uri_name, lang, doc, at, rest in cases():
                uri = f"file:///{uri_name}"
                client.notify("textDocument/didOpen", {"textDocument": {
                    "uri": uri, "languageId": lang, "version": 1, "text": doc}})
                t0 = time.perf_counter()
                answer = client.request("textDocument/inlineCompletion", {
                    "textDocument": {"uri": uri}, "position": position_at(doc, at),
                    "context": {"triggerKind": 1}}, 120)
                ms = (time.perf_counter() - t0) * 1000
                items = answer["items"] if answer else []
                row = {"uri": uri, "cursor": at, "want": rest, "ms": round(ms), "fill": None, "line": None}
                if items:
                    item = items[0]
                    lo, hi = offset_at(doc, item["range"]["start"]), offset_at(doc, item["range"]["end"])
                    edited = doc[:lo] + item["insertText"] + doc[hi:]
                    line_start = doc.rfind("\n", 0, at) + 1
                    row["fill"] = item["insertText"]
                    row["line"] = edited[line_start:].split("\n", 1)[0]
                    row["exact"] = row["line"] == doc[line_start:at] + rest
                client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
                rows.append(row)
        log = log_path.read_text(errors="replace")
    for row in rows:
        said = [ln for ln in log.splitlines() if f"no fill for {row['uri']} " in ln]
        row["why_empty"] = said[-1].split("): ", 1)[-1] if said else None
        row["refused_not_utf8"] = bool(said and "byte tokens that form no UTF-8" in said[-1])
    n = len(rows)
    summary = {
        "holes": n,
        "filled": sum(r["fill"] is not None for r in rows),
        "empty": sum(r["fill"] is None for r in rows),
        "empty_with_not_utf8_refusals": sum(r["refused_not_utf8"] for r in rows),
        "fills_with_non_ascii": sum(r["fill"] is not None and any(ord(c) > 127 for c in r["fill"]) for r in rows),
        "exact_lines": sum(bool(r.get("exact")) for r in rows),
        "foreign_characters": sum(r["fill"] is not None and _foreign(r["fill"]) for r in rows),
    }
    return {"summary": summary, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    result = run([sys.executable, "-m", "lsp_server"], args.threads)
    result["command"] = " ".join(["python -m benchmarks.nonascii_fills"] + (argv or sys.argv[1:]))
    Path(args.out).write_text(json.dumps(result, indent=1, ensure_ascii=False))
    print(json.dumps(result["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
