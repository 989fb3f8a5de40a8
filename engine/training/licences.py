"""Which licences the corpus accepts, read from the way packages state them.

Permissive, accepted: MIT (and MIT-0, X11, Expat), BSD-2-Clause, BSD-3-Clause, 0BSD, Apache-2.0, ISC,
the Python Software Foundation licence (PSF-2.0, Python-2.0), Unlicense, Zlib, BSL-1.0 (Boost), CC0-1.0,
public domain, the Unicode data licences (Unicode-DFS-2016, Unicode-3.0), and the Go licence (BSD-3-Clause text)
as Debian names it. An SPDX expression is accepted when it can be satisfied with accepted licences only:
``A OR B`` needs one side accepted, ``A AND B`` both. Everything else is kept out, including the weak
copyleft licences (MPL-2.0, LGPL, EPL: their terms follow the files, so we do not learn from them),
GPL/AGPL, the Creative Commons licences other than CC0, and any licence we cannot name (unknown).
"""

from __future__ import annotations

import fnmatch
import re

# Canonical name -> the spellings packages use (lower case, compared after normalisation).
_CANON = {
    "MIT": ("mit", "mit license", "the mit license", "mit licence", "expat", "expat license", "x11", "mit-0",
            "mit no attribution", "mit/x11", "mit-cmu", "hpnd"),
    "BSD-2-Clause": ("bsd-2-clause", "bsd 2-clause", "simplified bsd", "bsd-2", "freebsd", "bsd 2-clause license",
                     "bsd-2-clause license"),
    "BSD-3-Clause": ("bsd-3-clause", "bsd 3-clause", "new bsd", "new bsd license", "modified bsd", "bsd-3",
                     "bsd license", "bsd", "3-clause bsd", "bsd 3-clause license", "bsd-3-clause license",
                     "revised bsd", "3-clause bsd license", "go", "go license", "bsd-3-clause-google",
                     "bsd-3-clause~google", "bsd-3-clause-generic"),
    "0BSD": ("0bsd", "zero-clause bsd", "bsd-0-clause"),
    "Apache-2.0": ("apache-2.0", "apache 2.0", "apache license 2.0", "apache software license", "apache",
                   "apache license", "apache license, version 2.0", "apache 2", "apache2", "apache-2",
                   "apache license version 2.0", "apache software license 2.0", "apache-2.0 with llvm-exception",
                   "apache-2.0 with llvm exception", "apache 2.0 license"),
    "ISC": ("isc", "isc license", "isc license (iscl)"),
    "PSF-2.0": ("psf-2.0", "psf", "python software foundation license", "psfl", "python-2.0", "python-2.0.1",
                "psf license", "python software foundation", "matplotlib license", "psf-like"),
    "Unlicense": ("unlicense", "the unlicense", "the unlicense (unlicense)"),
    "Zlib": ("zlib", "zlib/libpng", "zlib license", "zlib/libpng license"),
    "BSL-1.0": ("bsl-1.0", "boost", "boost software license 1.0 (bsl-1.0)", "boost software license"),
    "CC0-1.0": ("cc0-1.0", "cc0", "cc0 1.0 universal", "cc0 1.0 universal (cc0 1.0) public domain dedication"),
    "public-domain": ("public domain", "public-domain"),
    "Unicode-DFS-2016": ("unicode-dfs-2016", "unicode-3.0", "unicode"),
}
PERMISSIVE = frozenset(_CANON)
_LOOKUP = {spelling: canon for canon, spellings in _CANON.items() for spelling in spellings}
_LOOKUP.update({c.lower(): c for c in _CANON})


def _norm(s: str) -> str:
    s = s.strip().strip("()").strip().lower()
    s = re.sub(r"\s+", " ", s)
    return s.removesuffix(" license").strip() if s.removesuffix(" license") in _LOOKUP and s not in _LOOKUP else s


def canonical(one: str) -> str | None:
    """The canonical name of one licence (no operators), or None when it is not an accepted one."""
    s = _norm(one)
    if s in _LOOKUP:
        return _LOOKUP[s]
    s = s.removeprefix("osi approved :: ").strip()
    return _LOOKUP.get(s)


def _split(expr: str, op: str) -> list[str]:
    """Split at a top-level operator (outside parentheses), case-insensitively."""
    parts, depth, cur, i = [], 0, "", 0
    pat = re.compile(rf"\s+{op}\s+", re.I)
    while i < len(expr):
        c = expr[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if depth == 0:
            m = pat.match(expr, i)
            if m:
                parts.append(cur)
                cur, i = "", m.end()
                continue
        cur += c
        i += 1
    parts.append(cur)
    return [p.strip() for p in parts]


def resolve(expr: str) -> str | None:
    """The accepted reading of a licence statement: the canonical name (or a permissive ``A AND B``),
    None when the statement is empty, unknown or needs a licence we keep out."""
    expr = (expr or "").strip()
    if not expr:
        return None
    while expr.startswith("(") and expr.endswith(")") and _balanced(expr[1:-1]):
        expr = expr[1:-1].strip()
    ors = _split(expr, "or")
    if len(ors) == 1:
        ors = [p for p in re.split(r"\s*/\s*|\s*,\s*(?=\S)", expr) if p] if canonical(expr) is None else [expr]
        if len(ors) > 1 and not all(canonical(p) for p in ors):  # "MIT/Apache-2.0", "MIT, Apache": either
            ors = [p for p in ors if canonical(p)] or [expr]
    if len(ors) > 1:
        for alt in ors:
            got = resolve(alt)
            if got:
                return got
        return None
    ands = _split(expr, "and")
    if len(ands) > 1:
        got = [resolve(a) for a in ands]
        return " AND ".join(dict.fromkeys(got)) if all(got) else None
    return canonical(expr)


def _balanced(s: str) -> bool:
    depth = 0
    for c in s:
        depth += c == "("
        depth -= c == ")"
        if depth < 0:
            return False
    return depth == 0


# ------------------------------------------------------------------- Debian machine-readable copyright

def dep5_stanzas(text: str) -> list[tuple[list[str], str]]:
    """(file globs, licence) per ``Files:`` stanza of a DEP-5 copyright file, in file order."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        fields, key = {}, None
        for line in block.splitlines():
            if line[:1] in (" ", "\t") and key:
                if key == "files":  # a licence's continuation lines are its text, not its name
                    fields[key] += " " + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                key = key.strip().lower()
                fields[key] = value.strip()
        if "files" in fields and "license" in fields:
            out.append((fields["files"].split(), fields["license"].strip()))
    return out


def dep5_licence(stanzas: list[tuple[list[str], str]], rel: str) -> str | None:
    """The licence the last matching stanza gives ``rel`` (DEP-5: the last match wins); None: no stanza."""
    found = None
    for globs, lic in stanzas:
        if any(fnmatch.fnmatchcase(rel, g) or fnmatch.fnmatchcase(rel.split("/")[-1], g) and "/" not in g
               for g in globs):
            found = lic
    return found


_COPYLEFT_HEADER = re.compile(
    r"GNU (Lesser |Library |Affero )?General Public License|Mozilla Public\s+License|\bSPDX-License-Identifier:\s*"
    r"(L?GPL|AGPL|MPL|EPL|CDDL)", re.I)


def copyleft_header(text: str) -> bool:
    """A file whose own header puts it under a licence we keep out (checked in its first 3,000 characters)."""
    return bool(_COPYLEFT_HEADER.search(text[:3000]))
