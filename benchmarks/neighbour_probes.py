"""Offline probes behind an empty line's options (``doclines.neighbour_options``; benchmarks/README.md, "An empty
line's neighbours"). Development holes only.

``oracle DATA``: no model. For each whole-line hole, the lines seen right after its line above or right before its
line below, in the document (each side of the hole apart) and in the package's other corpus files: how often the
right line (stripped) is among them, and how often the most often seen is right (``both``: seen beside both).

``probe DATA OUT``: the engine on each hole (no bar, each hole's package as its workspace), recording every
candidate line with its first-forward score, prior, source and, for an empty line's options, the features of its
rank (``infill._best_copy`` and ``doclines.neighbour_features`` are wrapped to see them). ``sweep OUT``: replays
the ranking of those candidates offline for weights of the prior and a bonus for lines seen beside both
neighbours. ``rank OUT``: fits the empty line's rank (``doclines.RANK_WEIGHTS``) on them, with held-out figures.

``probe --pools DATA OUT`` adds two pools of lines to each empty line's options, for the probe only (their rank is
so low that the engine never takes one while another option validates): the ``POOL_LINES`` nearest distinct
code lines of the document that are not options (``document``), and for Python the lines of the document and the workspace that start by
binding a name the code below reads and nothing defines (``wanted``, ``engine.names._python``); each is scored by
the model on the first forward like the options, and recorded with the rank's features and ``pool_features``.
``pools OUT`` then fits the rank with and without each pool (and with the two-line context of ``pool_features``),
held out by file as ``rank`` does: whether a larger pool with its own features puts the right line first more
often.

``copies DATA SAMPLES``: the holes whose line above, line and line below appear together in another file of the
package (a copy of the same code, e.g. an npm package's second build), and the exact match of ``SAMPLES``
(``benchmarks.infill --samples``) on the holes with and without such a copy. ``DATA`` may be ``typed:FILE``
(``benchmarks.tasks.load_task_set``; ``probe`` too): the line is then the typed head with its rest.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import re
from collections.abc import Callable, Iterator

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


POOL_LINES = 120        # the ``document`` pool: the nearest distinct code lines, alternately above and below
POOL_MOST = 16          # ``wanted`` lines per hole, the most often seen first
WANTED_AFTER = 2000     # characters below the hole where a name read and defined nowhere is wanted
_NAME = re.compile(r"[A-Za-z_]\w*")


def pool_features(text: str, line_start: int, wanted: frozenset[str]) -> Callable[[str], list[float]]:
    """A candidate line's features beyond the rank's, for the empty line starting at ``line_start``: log(1 + its
    copies in the document); log(1 + the times it follows the two code lines above the hole, or precedes the two
    below, in the document); whether it binds a name of ``wanted`` (Python). The document is read once."""
    from engine import doclines

    before = [c for c, _, _ in doclines._code_lines(text, line_start, up=True)][:2]
    after = [c for c, _, _ in doclines._code_lines(text, _line_end(text, line_start), up=False)][:2]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    copies = collections.Counter(lines)
    context = collections.Counter(
        lines[i] for i in range(len(lines))
        if (len(before) == 2 and i >= 2 and lines[i - 1] == before[0] and lines[i - 2] == before[1])
        or (len(after) == 2 and i + 2 < len(lines) and lines[i + 1] == after[0] and lines[i + 2] == after[1]))

    def of(code: str) -> list[float]:
        binds = bool(wanted) and bool(_binds(code) & wanted)
        return [math.log1p(copies[code]), math.log1p(context[code]), float(binds)]
    return of


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at)
    return len(text) if end < 0 else end


def _binds(code: str) -> set[str]:
    """The names a Python line binds alone (``engine.names._bindings``; a block's header with a ``pass``)."""
    import ast

    from engine import names

    try:
        return names._bindings(ast.parse(code + (" pass" if code.endswith(":") else "")))[0]
    except (SyntaxError, ValueError):
        return set()


def _pool_lines(text: str, hole, rest_of_line: str, language: str | None, workspace, taken: set[str]
                ) -> tuple[list[tuple[str, str]], frozenset[str]]:
    """The ``document`` and ``wanted`` pools of an empty line (``probe --pools``): (stripped line, pool), and the
    names the code below wants."""
    from engine import doclines, names

    line_start = text.rfind("\n", 0, hole.start) + 1
    if not doclines.empty_line(hole, rest_of_line, line_start):
        return [], frozenset()
    out: list[tuple[str, str]] = []
    for line in doclines._nearby(text, line_start, _line_end(text, hole.end)):
        code = line.strip()
        if len(out) >= POOL_LINES:
            break
        if code and code not in taken and len(code) <= doclines.LONGEST and _NAME.search(code):
            taken.add(code)
            out.append((code, "document"))
    wanted: frozenset[str] = frozenset()
    if language == "python" and len(text) <= names.MAX_PARSED:
        wanted = frozenset(names._python(text, line_start, line_start + WANTED_AFTER))
    if wanted:
        starts = tuple(f"{name} = " for name in sorted(wanted))
        found: collections.Counter = collections.Counter(
            line.strip() for line in text.splitlines() if line.strip().startswith(starts))
        table = workspace.table(language) if workspace is not None else None
        for start in starts:
            for code, _ in table.starting_with(start, POOL_MOST) if table is not None else ():
                found[code] += 1
        for code, _ in found.most_common(POOL_MOST):
            if code not in taken and len(code) <= doclines.LONGEST:
                taken.add(code)
                out.append((code, "wanted"))
    return out, wanted


def probe(data: str, out: str, corpus_dir: str, pools: bool = False) -> None:
    from benchmarks.fillers import EngineFiller
    from engine import doclines, infill
    from engine.config import EngineConfig

    corpus = CorpusWorkspaces(corpus_dir)
    tasks = corpus.grouped(load_task_set(data))
    seen: list = []
    features: dict[str, tuple[float, ...]] = {}
    extras: dict[str, list[float]] = {}
    best_copy, neighbour_features = infill._best_copy, doclines.neighbour_features
    neighbour_options = doclines.neighbour_options

    def spy(candidates, *args, **kwargs):
        seen.extend((c.texts[0], c.score, prior, source, features.get(c.texts[0].strip()))
                    + ((extras.get(c.texts[0].strip()),) if pools else ())
                    for c, prior, source, _ in candidates)
        return best_copy(candidates, *args, **kwargs)

    def record(code, *args):
        features[code] = found = neighbour_features(code, *args)
        return found

    def widened(text, hole, rest_of_line, language=None, workspace=None, before_below=True):
        found = neighbour_options(text, hole, rest_of_line, language, workspace, before_below)
        options = {t.strip() for t in found.texts}
        added, wanted = _pool_lines(text, hole, rest_of_line, language, workspace, set(options))
        line_start = text.rfind("\n", 0, hole.start) + 1
        features_of = pool_features(text, line_start, wanted)
        for code in options:
            extras[code] = features_of(code)
        if not added:
            return found
        near, known = doclines.names_around(text, line_start)
        below = doclines._code_lines(text, _line_end(text, hole.end), up=False)
        above = doclines._code_lines(text, line_start, up=True)
        indent = below[0][2] if below else above[0][2] if above else ""
        texts = []
        for code, _ in added:
            record(code, False, 0, near, known)
            extras[code] = features_of(code)
            texts.append(indent + code + ("\n" if hole.keep_newline else ""))
        n = len(added)
        return doclines.LineOptions(found.texts + tuple(texts), found.priors + (None,) * n,
                                    found.sources + tuple(pool for _, pool in added),
                                    (found.ranks or (0.0,) * len(found.texts)) + (-1e9,) * n)

    infill._best_copy, doclines.neighbour_features = spy, record
    if pools:
        doclines.neighbour_options = widened
    try:
        with EngineFiller(EngineConfig.of(threads=1, min_confidence=0.0), workspaces=corpus) as filler, \
                open(out, "w", encoding="utf-8") as f:
            for task in tasks:
                seen.clear()
                features.clear()
                extras.clear()
                fill = filler.fill(task)
                f.write(json.dumps({"task_id": task.task_id, "language": task.language, "file": file_id(task),
                                    "right": task.canonical_solution, "got": fill.completion,
                                    "candidates": list(seen)}) + "\n")
    finally:
        infill._best_copy, doclines.neighbour_features = best_copy, neighbour_features
        doclines.neighbour_options = neighbour_options


def rank(out: str, folds: int = 5, l2: float = 1e-2) -> dict:
    """Fit an empty line's option rank (``doclines.RANK_SCORE``, ``RANK_WEIGHTS``) on ``probe``'s recording:
    a conditional logit over each hole's options (the right one's log-probability among them, on the holes where
    it is one), its features the first-forward score and ``doclines.neighbour_features``; held-out figures from
    ``folds`` parts by a hash of the file, against the shipped weights and the rank before them (seen beside both
    first, then the score + the prior)."""
    import torch

    from engine import doclines

    holes = []
    for line in open(out, encoding="utf-8"):
        r = json.loads(line)
        cands = [c for c in r["candidates"] if len(c) > 4 and c[4] is not None]
        if not cands:
            continue
        x = torch.tensor([[c[1], *c[4]] for c in cands], dtype=torch.float64)
        right = [i for i, c in enumerate(cands) if c[0].strip() == r["right"].strip()]
        holes.append((r, cands, x, right[0] if right else None))

    def fit(train: list) -> torch.Tensor:
        return _logit([(x, y) for _, _, x, y in train], holes[0][2].shape[1], l2)

    held: collections.Counter = collections.Counter()
    shipped: collections.Counter = collections.Counter()
    before: collections.Counter = collections.Counter()
    weights = torch.tensor([doclines.RANK_SCORE, *doclines.RANK_WEIGHTS], dtype=torch.float64)
    for k in range(folds):
        w = fit([h for h in holes if _part(h[0], folds) != k])
        for r, cands, x, y in (h for h in holes if _part(h[0], folds) == k):
            held[r["language"]] += y == int(torch.argmax(x @ w))
            shipped[r["language"]] += y == int(torch.argmax(x @ weights))
            before[r["language"]] += y == max(range(len(cands)), key=lambda i: cands[i][1] + (cands[i][2] or 0.0)
                                              + 100.0 * (cands[i][3] == "between"))
    w = fit(holes)
    return {"holes": len(holes), "right_among": sum(y is not None for *_, y in holes),
            "first_right_held_out": {"all": sum(held.values()), **held},
            "first_right_shipped_weights": {"all": sum(shipped.values()), **shipped},
            "first_right_before": {"all": sum(before.values()), **before},
            "weights_fitted_on_all": [round(float(v), 3) for v in w],
            "weights_shipped": [doclines.RANK_SCORE, *doclines.RANK_WEIGHTS]}


def _part(r: dict, folds: int) -> int:
    """The cross-validation part of a recorded hole: a hash of its file, so a file's holes stay together."""
    import zlib

    return zlib.crc32(r["file"].encode()) % folds


def _logit(holes: list, width: int, l2: float):
    """A conditional logit's weights: each hole's candidates ``x`` (rows) and the right one's index ``y`` (None:
    not among them, not fitted); the mean negative log-probability of the right ones plus ``l2`` x the squares."""
    import torch

    data = [(x, y) for x, y in holes if y is not None]
    w = torch.zeros(width, dtype=torch.float64, requires_grad=True)
    if not data:   # nothing to learn from in this part
        return w.detach()
    opt = torch.optim.LBFGS([w], max_iter=300)

    def closure():
        opt.zero_grad()
        loss = sum(-torch.log_softmax(x @ w, 0)[y] for x, y in data) / len(data) + l2 * (w ** 2).sum()
        loss.backward()
        return loss
    opt.step(closure)
    return w.detach()


POOL_VARIANTS = {   # name: (the sources among the candidates, the columns: score, rank features, pool features)
    "options": (("neighbour", "between"), ("score", "rank")),
    "options, two-line context": (("neighbour", "between"), ("score", "rank", "context")),
    "options + document pool": (("neighbour", "between", "document"),
                                ("score", "rank", "is_document", "copies", "context")),
    "options + wanted pool": (("neighbour", "between", "wanted"), ("score", "rank", "is_wanted", "binds")),
    "all": (("neighbour", "between", "document", "wanted"),
            ("score", "rank", "is_document", "is_wanted", "copies", "context", "binds")),
}


def pools(out: str, folds: int = 5, l2: float = 1e-2) -> dict:
    """``probe --pools``' recording: for each of ``POOL_VARIANTS``, the holes whose right line is among the
    candidates and the holes where a conditional logit over them (fitted on the other parts by a hash of the file)
    puts it first, per language, with the holes only it or only the first variant (the options alone) gets right
    and a two-sided sign test on them."""
    import torch

    from benchmarks.compare_considered import sign_p

    rows = [json.loads(line) for line in open(out, encoding="utf-8")]
    result: dict = {"holes": len(rows)}
    rights: dict[str, set[str]] = {}
    for name, (sources, columns) in POOL_VARIANTS.items():
        holes = []
        for r in rows:
            cands = [c for c in r["candidates"] if c[3] in sources and len(c) > 5 and c[4] is not None
                     and c[5] is not None]
            if not cands:
                continue
            x = torch.tensor([_pool_row(c, columns) for c in cands], dtype=torch.float64)
            right = [i for i, c in enumerate(cands) if c[0].strip() == r["right"].strip()]
            holes.append((r, x, right[0] if right else None))
        if not holes:
            continue
        held: collections.Counter = collections.Counter()
        right: set[str] = set()
        for k in range(folds):
            w = _logit([(x, y) for r, x, y in holes if _part(r, folds) != k],
                       holes[0][1].shape[1], l2)
            for r, x, y in holes:
                if _part(r, folds) == k and y == int(torch.argmax(x @ w)):
                    held[r["language"]] += 1
                    right.add(r["task_id"])
        rights[name] = right
        among = collections.Counter(r["language"] for r, _, y in holes if y is not None)
        first = rights[next(iter(rights))]   # the first variant's (the options alone): the holes only one got
        result[name] = {"right_among": {"all": sum(among.values()), **among},
                        "first_right_held_out": {"all": sum(held.values()), **held},
                        "against_options": {"only_options": len(first - right), "only_this": len(right - first),
                                            "sign_p": sign_p(len(first - right), len(right - first))},
                        "weights_fitted_on_all": [round(float(v), 3) for v in
                                                  _logit([(x, y) for _, x, y in holes], holes[0][1].shape[1], l2)],
                        "columns": list(columns)}
    return result


def _pool_row(c: list, columns: tuple[str, ...]) -> list[float]:
    copies, context, binds = c[5]
    values = {"score": [c[1]], "rank": list(c[4]), "is_document": [float(c[3] == "document")],
              "is_wanted": [float(c[3] == "wanted")], "copies": [copies], "context": [context], "binds": [binds]}
    return [v for column in columns for v in values[column]]


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
    probe_p.add_argument("--pools", action="store_true", help="add the document and wanted pools to the options")
    pools_p = sub.add_parser("pools")
    pools_p.add_argument("out")
    pools_p.add_argument("--result", default=None, help="also write the figures as a result file (JSON) here")
    pools_p.add_argument("--note", default="", help="the result file's note")
    sub.add_parser("sweep").add_argument("out")
    sub.add_parser("rank").add_argument("out")
    copies_p = sub.add_parser("copies")
    copies_p.add_argument("data")
    copies_p.add_argument("samples")
    copies_p.add_argument("--limit", type=int, default=None)
    args = p.parse_args()
    if args.command == "oracle":
        print(json.dumps(oracle(args.data, args.corpus), indent=1))
    elif args.command == "probe":
        probe(args.data, args.out, args.corpus, args.pools)
    elif args.command == "pools":
        found = pools(args.out)
        print(json.dumps(found, indent=1))
        if args.result:
            from benchmarks.report import envelope, write_result

            argv = ["pools", args.out, "--result", args.result]   # the note is the file's, not the command's
            write_result(args.result, {**envelope("neighbour-pools", "benchmarks.neighbour_probes", argv),
                                       "recording": args.out, "note": args.note, **found})
    elif args.command == "sweep":
        print(json.dumps(sweep(args.out), indent=1))
    elif args.command == "rank":
        print(json.dumps(rank(args.out), indent=1))
    else:
        print(json.dumps(copies(args.data, args.samples, args.corpus, args.limit), indent=1))


if __name__ == "__main__":
    main()
