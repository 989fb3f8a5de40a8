"""Offline probes behind an empty line's options (``doclines.neighbour_options``; benchmarks/README.md, "An empty
line's neighbours"). Development holes only.

``oracle DATA``: no model. For each whole-line hole, the lines seen right after its line above or right before its
line below, in the document (each side of the hole apart) and in the package's other corpus files: how often the
right line (stripped) is among them, and how often the most often seen is right (``both``: seen beside both).

``probe DATA OUT``: the engine on each hole (no bar, each hole's package as its workspace), recording every
candidate line with its first-forward score, prior and source (``infill._best_copy`` is wrapped to see them).
``sweep OUT``: replays the ranking of those candidates offline for weights of the prior and a bonus for lines seen
beside both neighbours.

``copies DATA SAMPLES``: the holes whose line above, line and line below appear together in another file of the
package (a copy of the same code, e.g. an npm package's second build), and the exact match of ``SAMPLES``
(``benchmarks.infill --samples``) on the holes with and without such a copy. ``DATA`` may be ``typed:FILE``
(``benchmarks.tasks.load_task_set``; ``probe`` too): the line is then the typed head with its rest.
"""

from __future__ import annotations

import argparse
import collections
import json
from collections.abc import Iterator

from benchmarks.metrics import exact_match
from benchmarks.tasks import CLOSED_PREFIX, TYPED_PREFIX, Task, load_task_set, load_tasks
from benchmarks.workspaces import CorpusWorkspaces, file_id


def code_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def pairs(text: str) -> list[tuple[str, str]]:
    lines = code_lines(text)
    return list(zip(lines, lines[1:]))


def by_package(corpus: CorpusWorkspaces, tasks: list[Task]) -> Iterator[tuple[Task, dict[str, str]]]:
    """Each task with its package's files (id -> text), the tasks grouped so that a package is read once."""
    loaded, files = None, {}
    for task in corpus.grouped(tasks):
        package = corpus.package.get(file_id(task))
        if package != loaded:
            loaded = package
            files = {i: text for i, text, _ in corpus._read(corpus.members[package])} if package else {}
        yield task, files


def oracle(data: str, corpus_dir: str) -> dict:
    corpus = CorpusWorkspaces(corpus_dir)
    stats: collections.Counter = collections.Counter()
    after: dict = {}
    before: dict = {}
    own: dict[str, set] = {}
    loaded = None
    for task, files in by_package(corpus, load_tasks(data)):
        target = task.canonical_solution.strip()
        if "\n" in target or not target:
            continue
        if id(files) != loaded:   # a new package: its pairs, counted once per file
            loaded = id(files)
            after, before = collections.defaultdict(collections.Counter), collections.defaultdict(collections.Counter)
            own = {i: set(pairs(text)) for i, text in files.items()}
            for found in own.values():
                for a, b in found:
                    after[a][b] += 1
                    before[b][a] += 1
        above = next(iter(reversed(code_lines(task.prompt))), None)
        below = next(iter(code_lines(task.suffix)), None)
        document = pairs(task.prompt) + pairs(task.suffix)
        doc_after = collections.Counter(b for a, b in document if a == above)
        doc_before = collections.Counter(a for a, b in document if b == below)
        ws_after = collections.Counter(after.get(above, {}))
        ws_before = collections.Counter(before.get(below, {}))
        for a, b in own.get(file_id(task), ()):   # the hole's own file is the document, not the workspace
            if a == above:
                ws_after[b] -= 1
            if b == below:
                ws_before[a] -= 1
        ws_after, ws_before = +ws_after, +ws_before
        beside = set(doc_before) | set(ws_before)
        both = collections.Counter({k: v for k, v in (doc_after + ws_after).items() if k in beside})
        stats[task.language, "n"] += 1
        for name, seen in (("document_after", doc_after), ("document_before", doc_before),
                           ("workspace_after", ws_after), ("workspace_before", ws_before),
                           ("any", doc_after + doc_before + ws_after + ws_before), ("both", both)):
            stats[task.language, name + "_among"] += target in seen
            stats[task.language, name + "_first"] += bool(seen) and seen.most_common(1)[0][0] == target
    return _per_language(stats)


def _per_language(stats: collections.Counter) -> dict:
    out: dict = collections.defaultdict(dict)
    for (language, name), n in sorted(stats.items()):
        out[language][name] = n
        out["all"][name] = out["all"].get(name, 0) + n
    return dict(out)


def probe(data: str, out: str, corpus_dir: str) -> None:
    from benchmarks.fillers import EngineFiller
    from engine import infill
    from engine.config import EngineConfig

    corpus = CorpusWorkspaces(corpus_dir)
    tasks = corpus.grouped(load_task_set(data))
    seen: list = []
    best_copy = infill._best_copy

    def spy(candidates, *args, **kwargs):
        seen.extend((c.texts[0], c.score, prior, source) for c, prior, source in candidates)
        return best_copy(candidates, *args, **kwargs)

    infill._best_copy = spy
    try:
        with EngineFiller(EngineConfig.of(threads=1, min_confidence=0.0), workspaces=corpus) as filler, \
                open(out, "w", encoding="utf-8") as f:
            for task in tasks:
                seen.clear()
                fill = filler.fill(task)
                f.write(json.dumps({"task_id": task.task_id, "language": task.language,
                                    "right": task.canonical_solution, "got": fill.completion,
                                    "candidates": list(seen)}) + "\n")
    finally:
        infill._best_copy = best_copy


def sweep(out: str) -> dict:
    rows = [json.loads(line) for line in open(out, encoding="utf-8")]
    for r in rows:   # the first recording named them "cands"
        r.setdefault("candidates", r.pop("cands", []))

    def same(a: str, b: str) -> bool:
        return a.rstrip("\n") == b.rstrip("\n")

    def first_right(weight: float, bonus: float) -> int:
        return sum(bool(r["candidates"]) and same(max(
            r["candidates"], key=lambda c: c[1] + weight * (c[2] or 0.0) + bonus * (c[3] == "between"))[0],
            r["right"]) for r in rows)

    return {"holes": len(rows), "with_candidates": sum(bool(r["candidates"]) for r in rows),
            "right_among": sum(any(same(c[0], r["right"]) for c in r["candidates"]) for r in rows),
            "right_among_stripped": sum(any(c[0].strip() == r["right"].strip() for c in r["candidates"])
                                        for r in rows),
            "engine_exact": sum(r["got"] is not None and same(r["got"], r["right"]) for r in rows),
            "first_right": {f"weight {w}, between bonus {b}": first_right(w, b)
                            for w in (0, 0.5, 0.75, 1, 1.25, 1.5, 2, 3) for b in (0, 1, 2, 4, 8, 100)}}


def copies(data: str, samples: str, corpus_dir: str, limit: int | None) -> dict:
    got = {r["task_id"]: r["completion"] for r in map(json.loads, open(samples, encoding="utf-8"))}
    stats: collections.Counter = collections.Counter()
    loaded, triples = None, {}
    typed = data.startswith((TYPED_PREFIX, CLOSED_PREFIX))
    for task, files in by_package(CorpusWorkspaces(corpus_dir), load_task_set(data)[:limit]):
        if id(files) != loaded:
            loaded = id(files)
            triples = collections.defaultdict(set)
            for i, text in files.items():
                lines = code_lines(text)
                for key in zip(lines, lines[1:], lines[2:]):
                    triples[key].add(i)
        before, after, line = task.prompt, task.suffix, task.canonical_solution
        if typed:   # the hole's line is the typed head, its rest and what an editor closed after the cursor
            cut = before.rfind("\n") + 1
            rest, _, after = after.partition("\n")
            before, line = before[:cut], before[cut:] + line + rest
        above = next(iter(reversed(code_lines(before))), None)
        below = next(iter(code_lines(after)), None)
        kind = "copy" if triples.get((above, line.strip(), below), set()) - {file_id(task)} else "no_copy"
        fill = got.get(task.task_id)
        stats[task.language, kind + "_n"] += 1
        stats[task.language, kind + "_offered"] += bool(fill)
        stats[task.language, kind + "_right"] += bool(fill) and exact_match(fill, task.canonical_solution)
    return _per_language(stats)


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.neighbour_probes", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", default="runs/corpus", help="the code corpus (its manifest and files/)")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("oracle").add_argument("data")
    probe_p = sub.add_parser("probe")
    probe_p.add_argument("data")
    probe_p.add_argument("out")
    sub.add_parser("sweep").add_argument("out")
    copies_p = sub.add_parser("copies")
    copies_p.add_argument("data")
    copies_p.add_argument("samples")
    copies_p.add_argument("--limit", type=int, default=None)
    args = p.parse_args()
    if args.command == "oracle":
        print(json.dumps(oracle(args.data, args.corpus), indent=1))
    elif args.command == "probe":
        probe(args.data, args.out, args.corpus)
    elif args.command == "sweep":
        print(json.dumps(sweep(args.out), indent=1))
    else:
        print(json.dumps(copies(args.data, args.samples, args.corpus, args.limit), indent=1))


if __name__ == "__main__":
    main()
