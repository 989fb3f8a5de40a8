"""Build the table of lines code often has (``engine.commonlines``) from the training files of the code corpus.

    python -m engine.training.common_lines --corpus "$CORPUS_DIR" --out engine/data/common_lines

For each language: every line of the corpus's training split (``files/train``; the held-out files, which the
development and code-lines holes come from, are never read), stripped of its indentation, 2 to 200
characters, counted once per file; the lines found in at least ``--min-files`` files are kept, with that
count. Writes ``<language>.tsv.gz`` (``files<TAB>line``, sorted by line, the order ``engine.commonlines``
searches) and ``build.json`` (what was read and kept, the corpus's licences for those files). The corpus
keeps only permissively licensed files (``engine.training.codecorpus``); a kept line is in at least three of
them.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import sys
from pathlib import Path

from .gen2data import LANGUAGES, files_of, read_jsonl

MIN_FILES = 3        # on the development holes: files >= 3 covered more right lines than >= 5 or >= 2 packages
SHORTEST, LONGEST = 2, 200


def count_lines(corpus: Path, language: str) -> tuple[collections.Counter, int, collections.Counter]:
    """Per stripped line, the number of training files of ``language`` that have it; the files read; their
    licences (from the corpus manifest)."""
    licence = {}
    manifest = corpus / "manifest.jsonl"
    if manifest.exists():
        for r in read_jsonl(manifest):
            if r.get("split") == "train" and r.get("language") == language:
                licence[r["id"]] = r.get("licence", "unknown")
    counts: collections.Counter = collections.Counter()
    licences: collections.Counter = collections.Counter()
    n = 0
    for path in files_of(corpus, "train", language):
        for r in read_jsonl(path):
            n += 1
            licences[licence.get(r["id"], "unknown")] += 1
            counts.update({s for s in (line.strip() for line in r["text"].split("\n"))
                           if SHORTEST <= len(s) <= LONGEST})
    return counts, n, licences


def build(corpus: Path, out: Path, min_files: int = MIN_FILES) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    record: dict = {"corpus": str(corpus.name), "split": "train", "min_files": min_files,
                    "line_chars": [SHORTEST, LONGEST], "languages": {}}
    build_json = corpus / "build.json"
    if build_json.exists():
        record["corpus_files_kept"] = json.loads(build_json.read_text()).get("files_kept")
    for language in LANGUAGES:
        counts, n, licences = count_lines(corpus, language)
        kept = sorted((line, c) for line, c in counts.items() if c >= min_files)
        # mtime=0: the same corpus gives the same bytes
        with gzip.GzipFile(out / f"{language}.tsv.gz", "wb", mtime=0) as f:
            f.write("".join(f"{c}\t{line}\n" for line, c in kept).encode("utf-8"))
        record["languages"][language] = {"files_read": n, "distinct_lines": len(counts), "lines_kept": len(kept),
                                         "licences_of_files_read": dict(licences.most_common())}
        print(f"{language}: {n} files, {len(counts)} distinct lines, {len(kept)} kept", file=sys.stderr)
    (out / "build.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True, type=Path, help="the corpus directory (files/train/*.jsonl)")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--min-files", type=int, default=MIN_FILES)
    args = ap.parse_args(argv)
    if not any(files_of(args.corpus, "train", lang) for lang in LANGUAGES):
        print(f"no training files under {args.corpus}/files/train", file=sys.stderr)
        return 2
    build(args.corpus, args.out, args.min_files)
    return 0


if __name__ == "__main__":
    sys.exit(main())
