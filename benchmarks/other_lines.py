"""Development holes in languages the engine has no grammar for: one-line statements of installed Debian packages'
C, Java, Ruby, Perl and Lua files, each the JSONL task format of ``benchmarks.infill`` (with its ``language``); C++
(``--languages cpp``) is kept apart, held out from every fit.

The engine fills these as plain text (``languages.PLAIN``: no parse check, no block opener), and the calibration
reads them as it reads Python (every language indicator 0). Are its estimates right there? These holes measure it;
nothing here is trained on. The files come from a curated list of named Debian packages (``SOURCES``: package,
files, licence), read where the packages install them; a package that is not installed is skipped with a message
(``apt-get install`` it by name).

    python -m benchmarks.other_lines --out runs/conf/other-dev.jsonl

A hole is a line that looks like one statement inside a body, found without a grammar: indented, 6 to 100
characters, its brackets balanced, not a comment, not a block's start or end (``_statement_line``), and with code
lines around it; at most ``--per-file`` per file, ``--per-language`` per language, seeded.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import random
import re
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Source:
    language: str      # the LSP language id the editor sends
    package: str       # the Debian package that installs the files
    files: str         # a glob of the installed files, or ``zip-path!glob-inside`` for a source archive
    licence: str


SOURCES = (
    Source("c", "zlib1g-dev", "/usr/share/doc/zlib1g-dev/examples/*.c*", "Zlib"),
    Source("c", "nettle-dev", "/usr/share/doc/nettle-dev/examples/*.c*", "LGPL-3.0-or-later OR GPL-2.0-or-later"),
    Source("c", "libxmlsec1-dev", "/usr/share/doc/libxmlsec1-dev/examples/*.c*", "MIT"),
    Source("c", "liblzma-dev", "/usr/share/doc/liblzma-dev/examples*/*.c*", "0BSD"),
    Source("c", "libtasn1-6-dev", "/usr/share/doc/libtasn1-6-dev/examples/*.c*", "LGPL-2.1-or-later"),
    Source("c", "libexpat1-dev", "/usr/share/doc/libexpat1-dev/examples/*.c*", "MIT"),
    Source("c", "libpng-dev", "/usr/share/doc/libpng-dev/examples/*.c*", "libpng-2.0"),
    Source("java", "openjdk-17-source", "/usr/lib/jvm/java-17-openjdk-amd64/lib/src.zip!java.base/java/util/*.java",
           "GPL-2.0-only WITH Classpath-exception-2.0"),
    Source("ruby", "libruby3.1", "/usr/lib/ruby/3.1.0/**/*.rb", "Ruby OR BSD-2-Clause"),
    Source("perl", "perl-modules-5.36", "/usr/share/perl/5.36/**/*.pm", "Artistic-1.0-Perl OR GPL-1.0-or-later"),
    Source("lua", "neovim-runtime", "/usr/share/nvim/runtime/lua/**/*.lua", "Apache-2.0 AND Vim"),
    # C++: a held-out language (not in the default set; ``--languages cpp``), its estimates never fitted on
    Source("cpp", "libgtest-dev", "/usr/src/googletest/**/*.cc", "BSD-3-Clause"),
    Source("cpp", "libfmt-dev", "/usr/include/fmt/*.h", "MIT"),
)
LANGUAGES = tuple(dict.fromkeys(s.language for s in SOURCES))
DEFAULT_LANGUAGES = tuple(lang for lang in LANGUAGES if lang != "cpp")   # the development set's; C++ held out
COMMENT = {"c": ("//", "/*", "*", "#"), "java": ("//", "/*", "*", "@"), "ruby": ("#", "=begin", "=end"),
           "perl": ("#", "=", "__END__"), "lua": ("--",)}
COMMENT["cpp"] = COMMENT["c"]
# lines that open, continue or close a block, by their first word (and Ruby's / Lua's `do` at the end)
BLOCK_WORDS = re.compile(r"(?:if|else|elsif|elif|unless|while|until|for|foreach|do|case|when|switch|try|catch|"
                         r"finally|begin|rescue|ensure|end|def|class|module|sub|function|local\s+function|repeat|"
                         r"then|package|import|use|require|return\s*$)\b")
_PAIRS = {")": "(", "]": "[", "}": "{"}


def _balanced(code: str) -> bool:
    stack: list[str] = []
    quote = ""
    for i, ch in enumerate(code):
        if quote:
            if ch == quote and code[i - 1] != "\\":
                quote = ""
        elif ch in "\"'`":
            quote = ch
        elif ch in "([{":
            stack.append(ch)
        elif ch in _PAIRS:
            if not stack or stack.pop() != _PAIRS[ch]:
                return False
    return not stack and not quote


def _statement_line(line: str, language: str) -> bool:
    """Does ``line`` look like one whole statement inside a body?"""
    code = line.strip()
    if not line[:1].isspace() or not 6 <= len(code) <= 100 or code.startswith(COMMENT[language]):
        return False
    if BLOCK_WORDS.match(code) or code.endswith(("{", "(", "[", ",", "\\", "do", "then", "|", "=", "&&", "||", "+")):
        return False
    if code.startswith(("}", ")", "]", ".", "?", ":", "<", "#")) or "/*" in code or "*/" in code:
        return False
    if language in ("c", "cpp", "java", "perl") and not code.endswith(";"):
        return False
    return _balanced(code)


def statement_rows(text: str, language: str) -> list[int]:
    """0-based rows of ``text`` that look like one statement (``_statement_line``) between two code lines."""
    lines = text.split("\n")
    return [i for i in range(1, len(lines) - 1) if _statement_line(lines[i], language)
            and lines[i - 1].strip() and lines[i + 1].strip()]


def _read(path: str) -> str | None:
    raw = gzip.open(path).read() if path.endswith(".gz") else Path(path).read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def source_files(source: Source) -> list[tuple[str, str]]:
    """``(name, text)`` of a source's files, sorted by name; names are ``package/path``."""
    out = []
    if "!" in source.files:
        archive, inside = source.files.split("!", 1)
        if not Path(archive).is_file():
            return []
        pattern = re.compile(re.escape(inside).replace(r"\*", "[^/]*"))
        with zipfile.ZipFile(archive) as z:
            for name in sorted(z.namelist()):
                if pattern.fullmatch(name):
                    out.append((f"{source.package}/{name}", z.read(name).decode("utf-8", "replace")))
        return out
    for path in sorted(glob.glob(source.files, recursive=True)):
        if not path.endswith((".c", ".c.gz", ".cc", ".h", ".java", ".rb", ".pm", ".lua")) \
                or Path(path).stat().st_size > 300_000:
            continue
        text = _read(path)
        if text is not None:
            out.append((f"{source.package}{path}", text))
    return out


def tasks_for(language: str, per_file: int, limit: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    tasks = []
    for source in (s for s in SOURCES if s.language == language):
        files = source_files(source)
        if not files:
            print(f"other_lines: {source.package} is not installed ({source.files}); skipped", file=sys.stderr)
        for name, text in files:
            text = text.replace("\r\n", "\n")
            lines = text.splitlines(keepends=True)
            rows = statement_rows(text, language)
            for i in rng.sample(rows, min(len(rows), per_file)):
                tasks.append({"task_id": f"{language}:{name}:{i + 1}", "prompt": "".join(lines[:i]),
                              "suffix": "".join(lines[i + 1:]), "canonical_solution": lines[i],
                              "language": language, "licence": source.licence})
    rng.shuffle(tasks)
    return tasks[:limit]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.other_lines", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="the JSONL to write (every language, interleaved)")
    p.add_argument("--per-language", type=int, default=300)
    p.add_argument("--per-file", type=int, default=4)
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--languages", nargs="*", default=list(DEFAULT_LANGUAGES), choices=LANGUAGES,
                   help="default: all but C++, which is held out (--languages cpp: its own file)")
    args = p.parse_args(argv)
    per = {lang: tasks_for(lang, args.per_file, args.per_language, args.seed) for lang in args.languages}
    out = [t for row in zip(*(per[lang] + [None] * (args.per_language - len(per[lang])) for lang in per))
           for t in row if t is not None]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        for t in out:
            f.write(json.dumps(t) + "\n")
    print(f"other_lines: {len(out)} holes ({', '.join(f'{k} {len(v)}' for k, v in per.items())}) -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
