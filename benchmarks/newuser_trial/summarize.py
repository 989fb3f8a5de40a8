"""Turns the trial's results*.json into a markdown table with a verdict per case.

Checks done by the script (any failing one makes the case "damaging"): the typed text reached the buffer
as typed; after <Tab> exactly the cursor line changed (the text before the cursor kept, the shown text
inserted at the cursor), no ghost extmark left, no carriage return, nothing in :messages but the server's
own notes. Acceptable = the line as the original file has it, or a judgement recorded in JUDGED (by hand,
with its reason). Everything else shown is "harmless wrong".

    python benchmarks/newuser_trial/summarize.py TRIAL_DIR/results.json [...]
"""
from __future__ import annotations

import json
import sys

# Hand judgements of shown fills that are not the original text, by the case's source file, what was typed and what
# was shown (a case file's name, typescript_3.ts, names another case whenever the cases are picked again): (verdict,
# why).
JUDGED = {
    ("Synth.ts", "str", "ing"): ("acceptable",
                                 "'string' completes the type the user was typing; the initializer is left to type"),
}


def verdict(r: dict) -> tuple[str, str]:
    problems = []
    if r["kind"] == "line":
        if r.get("typed_ok") is False:
            problems.append("typed text not in the buffer as typed")
        if r.get("shown") is None:
            return "none shown", ""
        before = r["removed"]
        cut = r["col"] + len(r["typed"].encode())
        expected_after = [before[0][:cut] + r["shown"] + before[0][cut:]] if before else None
        if len(before) != 1 or r["inserted"] != expected_after:
            problems.append(f"buffer change {before} -> {r['inserted']} is not the shown text at the cursor")
        if r.get("marks_left"):
            problems.append("ghost text left behind")
        if r.get("cr"):
            problems.append("carriage return in the buffer")
    else:
        if not r["inserted"] and not r["removed"]:
            return "none shown", "; ".join(r.get("listed") or []) + " -> " + r["messages"].strip()
        if any("\r" in line for line in r["inserted"]):
            problems.append("carriage return in the buffer")
    for line in r["messages"].splitlines():
        if line.strip() and "diffusion-lsp: " not in line:
            problems.append("message: " + line.strip())
    if problems:
        return "damaging", "; ".join(problems)
    if r["kind"] == "line" and r["shown"] == r["expected"]:
        return "acceptable", "exactly the original"
    if r["kind"] == "action" and [x.strip() for x in r["inserted"]] == [r["expected"]]:
        return "acceptable", "exactly the original"
    judged = (r["source"].rsplit("/", 1)[-1], r["typed"], r.get("shown"))
    if judged in JUDGED:
        return JUDGED[judged]
    return "harmless wrong", ""


def main() -> None:
    for path in sys.argv[1:]:
        results = json.load(open(path))
        print(f"\n### {path.rsplit('/', 1)[-1]}\n")
        print("| # | file (source) | line:col | typed | shown / applied | expected | verdict |")
        print("|--:|---|---|---|---|---|---|")
        totals: dict[str, int] = {}
        for r in results:
            v, why = verdict(r)
            totals[v] = totals.get(v, 0) + 1
            shown = r.get("shown") if r["kind"] == "line" else " ⏎ ".join(x.strip() for x in r["inserted"])
            typed = r["typed"] if r["kind"] == "line" else f"code action on `{r['typed']}`: first of {r.get('listed')}"
            cell = lambda s: "`" + str(s).replace("|", "\\|").replace("`", "'") + "`" if s not in (None, "") else "-"  # noqa: E731
            print(f"| {r['i']} | {r['file']} ({r['source'].split(':', 1)[0]}:…/{r['source'].rsplit('/', 1)[-1]}) | {r['row']}:{r['col']} | {cell(typed) if r['kind'] == 'line' else typed.replace('|', '/')} "
                  f"| {cell(shown)} | {cell(r['expected'])} | {v}{': ' + why if why else ''} |")
        print("\nTotals: " + ", ".join(f"{k} {totals.get(k, 0)}" for k in
                                      ("acceptable", "harmless wrong", "none shown", "damaging")))


if __name__ == "__main__":
    main()
