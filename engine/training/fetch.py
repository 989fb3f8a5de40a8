"""Fetch the packages named in ``sources/packages.toml`` with the ordinary package clients and unpack them.

    python -m engine.training.fetch --dest "$CORPUS_DIR/raw" [--only pypi|npm|debian] [--lock]

Each package lands in ``DEST/<ecosystem>/<name>/`` with a ``_meta.json`` beside its files: ecosystem,
name, version, the licence string as its metadata states it, and where in the unpacked tree its sources
are (``roots``). Names are taken from the list only (a name the registry does not know is logged and
skipped); nothing scans a registry. Already-fetched packages are kept (the build resumes).

- PyPI: the packages installed in this interpreter's environment (their installed files are their
  sources), then each listed project: ``pip download --no-deps --no-binary :all:`` (the sdist), or the
  wheel (``--only-binary :all:``) where no sdist builds its metadata here.
- npm: ``npm pack NAME[@VER]``.
- Debian: ``apt-get download NAME`` then ``dpkg-deb -x`` (run ``apt-get update`` once first).
"""

from __future__ import annotations

import argparse
import email.parser
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import zipfile
from pathlib import Path

SOURCES = Path(__file__).resolve().parent / "sources"
PACKAGES = SOURCES / "packages.toml"
LOCK = SOURCES / "lock.tsv"
ECOSYSTEMS = ("venv", "pypi", "npm", "debian")


def load_list(path: Path = PACKAGES) -> dict:
    return tomllib.loads(path.read_text())


def _lock_rows(path: Path = LOCK) -> list[list[str]]:
    """The lock's rows (ecosystem, name, version, licence as stated), the header left out."""
    if not path.is_file():
        return []
    return [line.split("\t") for line in path.read_text().splitlines()[1:] if line.count("\t") >= 2]


def read_lock(path: Path = LOCK) -> dict[tuple[str, str], str]:
    """(ecosystem, name) -> version of an earlier build (a version it could not read, "?", is left unpinned)."""
    return {(eco, name): version.strip() for eco, name, version, *_ in _lock_rows(path)
            if version.strip() not in ("", "?")}   # "?": the build that wrote the lock could not read the version


def locked_names(ecosystem: str, path: Path = LOCK) -> set[str]:
    """The names the lock holds for one ecosystem, whatever their version."""
    return {name for eco, name, *_ in _lock_rows(path) if eco == ecosystem}


def _log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def _write_meta(dest: Path, **meta) -> None:
    (dest / "_meta.json").write_text(json.dumps(meta, indent=1))


def _safe_extract_tar(archive: Path, dest: Path) -> None:
    with tarfile.open(archive) as tf:
        members = [m for m in tf.getmembers() if (m.isfile() or m.isdir()) and not m.name.startswith("/")
                   and ".." not in Path(m.name).parts]
        tf.extractall(dest, members=members, filter="data")


def _safe_extract_zip(archive: Path, dest: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            if info.is_dir() or info.filename.startswith("/") or ".." in Path(info.filename).parts:
                continue
            zf.extract(info, dest)


# ---------------------------------------------------------------------------------------------- PyPI

def pkg_info_licence(meta: email.message.Message) -> str:
    """The licence as a distribution's core metadata states it: License-Expression, else the License field
    when short, else the licence classifiers joined with ' OR '."""
    expr = (meta.get("License-Expression") or "").strip()
    if expr:
        return expr
    field = (meta.get("License") or "").strip()
    classifiers = [c.split("::")[-1].strip() for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    if field and len(field) < 80 and field.upper() not in ("UNKNOWN", "NONE", ""):
        return field
    if classifiers:
        return " OR ".join(classifiers)
    return field[:200]


def fetch_venv(dest: Path, only: set[str] | None = None) -> None:
    """Every distribution importable here but the project itself: its installed ``.py`` files are the sources
    shipped. ``only`` (with --lock: the lock's venv names): those distributions alone, so a package installed here
    later (an optional extra) does not change a locked build."""
    from .codecorpus import is_own_project

    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if not name or is_own_project("venv", name) or (only is not None and name not in only):
            continue
        out = dest / "venv" / re.sub(r"[^A-Za-z0-9._-]", "_", name.lower())
        if (out / "_meta.json").is_file():
            continue
        files = [str(f) for f in dist.files or [] if str(f).endswith(".py")]
        base = Path(dist.locate_file(""))
        out.mkdir(parents=True, exist_ok=True)
        _write_meta(out, ecosystem="venv", name=name, version=dist.version, licence=pkg_info_licence(dist.metadata),
                    base=str(base), files=files)
    _log(f"venv: {sum(1 for _ in (dest / 'venv').iterdir())} distributions recorded")


def _pip(args: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
    python = os.environ.get("FETCH_PYTHON") or sys.executable  # an environment with the common build backends
    return subprocess.run([python, "-m", "pip", "download", "--no-deps", "-q", *args],
                          capture_output=True, text=True, timeout=timeout)


def fetch_pypi(name: str, version: str | None, dest: Path) -> None:
    out = dest / "pypi" / name
    if (out / "_meta.json").is_file():
        return
    spec = f"{name}=={version}" if version else name
    with tempfile.TemporaryDirectory() as tmp:
        kind = "sdist"
        try:
            r = _pip(["--no-binary", ":all:", "--no-build-isolation", "-d", tmp, spec])
        except subprocess.TimeoutExpired:
            r = None
        got = list(Path(tmp).iterdir())
        if r is None or r.returncode != 0 or not got:
            kind = "wheel"
            for f in got:
                f.unlink()
            r = _pip(["--only-binary", ":all:", "-d", tmp, spec])
            got = list(Path(tmp).iterdir())
            if r.returncode != 0 or not got:
                _log(f"pypi {spec}: not fetched ({(r.stderr or '').strip().splitlines()[-1:]})")
                return
        archive = got[0]
        shutil.rmtree(out, ignore_errors=True)
        (out / "src").mkdir(parents=True)
        if archive.suffix in (".whl", ".zip"):
            _safe_extract_zip(archive, out / "src")
        else:
            _safe_extract_tar(archive, out / "src")
    meta_file = next(iter(sorted((out / "src").glob("*/PKG-INFO"))), None) or \
        next(iter(sorted((out / "src").glob("*.dist-info/METADATA"))), None)
    meta = email.parser.Parser().parsestr(meta_file.read_text(errors="replace")) if meta_file else {}
    _write_meta(out, ecosystem="pypi", name=name, version=(meta.get("Version") if meta else None) or version or "?",
                licence=pkg_info_licence(meta) if meta else "", kind=kind, archive=archive.name)
    _log(f"pypi {name}: {kind} {archive.name}")


# ---------------------------------------------------------------------------------------------- npm

def npm_licence(pkg: dict) -> str:
    lic = pkg.get("license")
    if isinstance(lic, dict):
        lic = lic.get("type")
    if not lic and isinstance(pkg.get("licenses"), list):
        lic = " OR ".join(str(x.get("type", x) if isinstance(x, dict) else x) for x in pkg["licenses"])
    return str(lic or "")


def npm_pack(specs: list[str], tmp: str) -> dict[str, Path]:
    """``npm pack`` several packages in one call: spec -> the tarball (specs npm refuses are missing)."""
    r = subprocess.run(["npm", "pack", *specs, "--json", "--pack-destination", tmp], capture_output=True, text=True,
                       timeout=900, cwd=tmp)
    got = packed_tarballs(specs, r.stdout, Path(tmp))
    if not got and len(specs) > 1:   # one bad name fails the call: one by one then
        for spec in specs:
            got.update(npm_pack([spec], tmp))
    elif not got:
        _log(f"npm {specs[0]}: npm pack said {npm_error(r.stdout) or (r.stderr or '').strip()[-200:]}")
    return {k: v for k, v in got.items() if v.is_file()}


def packed_tarballs(specs: list[str], stdout: str, tmp: Path) -> dict[str, Path]:
    """spec -> tarball from ``npm pack --json``'s output: a list with one object per spec when every spec
    was packed; npm prints an object ``{"error": ...}`` instead when one failed (then nothing is taken)."""
    try:
        rows = json.loads(stdout or "[]")
    except json.JSONDecodeError:
        return {}
    if not isinstance(rows, list) or len(rows) != len(specs):
        return {}
    if not all(isinstance(row, dict) and isinstance(row.get("filename"), str) for row in rows):
        return {}
    return {spec: tmp / row["filename"].replace("/", "-").lstrip("@") for spec, row in zip(specs, rows)}


def npm_error(stdout: str) -> str:
    """npm's own summary of why ``npm pack --json`` failed ("" when it printed none)."""
    try:
        err = json.loads(stdout or "{}")
    except json.JSONDecodeError:
        return ""
    if isinstance(err, dict) and isinstance(err.get("error"), dict):
        return f"{err['error'].get('code', '')}: {err['error'].get('summary', '')}".strip(": ")
    return ""


def fetch_npm_all(names: list[str], pinned: dict, dest: Path, batch: int = 15) -> None:
    todo = [n for n in names if not (dest / "npm" / n.replace("/", "__") / "_meta.json").is_file()]
    for i in range(0, len(todo), batch):
        specs = {(f"{n}@{pinned[('npm', n)]}" if ("npm", n) in pinned else n): n for n in todo[i:i + batch]}
        with tempfile.TemporaryDirectory() as tmp:
            got = npm_pack(list(specs), tmp)
            for spec, name in specs.items():
                if spec not in got:
                    _log(f"npm {spec}: not fetched")
                    continue
                _unpack_npm(name, got[spec], dest)


def fetch_npm(name: str, version: str | None, dest: Path) -> None:
    out = dest / "npm" / name.replace("/", "__")
    if (out / "_meta.json").is_file():
        return
    spec = f"{name}@{version}" if version else name
    with tempfile.TemporaryDirectory() as tmp:
        got = npm_pack([spec], tmp)
        if spec not in got:
            _log(f"npm {spec}: not fetched")
            return
        _unpack_npm(name, got[spec], dest)


def _unpack_npm(name: str, tarball: Path, dest: Path) -> None:
    out = dest / "npm" / name.replace("/", "__")
    shutil.rmtree(out, ignore_errors=True)
    (out / "src").mkdir(parents=True)
    _safe_extract_tar(tarball, out / "src")
    archive = tarball.name
    # the tarball's one top folder is "package/" for most, the bare name for some (@types/*: "node/")
    pkg_file = next(iter(sorted((out / "src").glob("*/package.json"))), out / "src" / "package" / "package.json")
    pkg = json.loads(pkg_file.read_text(errors="replace")) if pkg_file.is_file() else {}
    _write_meta(out, ecosystem="npm", name=name, version=pkg.get("version", "?"), licence=npm_licence(pkg),
                archive=archive)
    _log(f"npm {name}: {archive}")


# ---------------------------------------------------------------------------------------------- Debian

def deb_copyright(root: Path, name: str) -> str:
    f = root / "usr" / "share" / "doc" / name / "copyright"
    return f.read_text(errors="replace") if f.is_file() else ""


def fetch_debian(names: list[str], dest: Path, batch: int = 40) -> None:
    """``apt-get download`` many names per call (names the package lists do not know are logged and
    left out first, since one unknown name fails the whole call), then ``dpkg-deb -x`` each."""
    todo = [n for n in names if not (dest / "debian" / n / "_meta.json").is_file()]
    if not todo:
        return
    shown = subprocess.run(["apt-cache", "show", "--no-all-versions", *todo], capture_output=True, text=True).stdout
    known = set(re.findall(r"^Package: (\S+)", shown, re.M))
    for n in todo:
        if n not in known:
            _log(f"debian {n}: not fetched (not in the package lists)")
    todo = [n for n in todo if n in known]
    for i in range(0, len(todo), batch):
        names_i = todo[i:i + batch]
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run(["apt-get", "download", "-q", *names_i], capture_output=True, text=True, timeout=1800,
                               cwd=tmp)
            if r.returncode != 0:
                _log(f"debian batch {names_i[0]}..: apt-get said {(r.stderr or '').strip().splitlines()[-1:]}")
            for deb in sorted(Path(tmp).glob("*.deb")):
                name = deb.name.split("_")[0]
                out = dest / "debian" / name
                shutil.rmtree(out, ignore_errors=True)
                (out / "src").mkdir(parents=True)
                subprocess.run(["dpkg-deb", "-x", str(deb), str(out / "src")], check=True)
                version = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], capture_output=True,
                                         text=True).stdout.strip()
                _write_meta(out, ecosystem="debian", name=name, version=version, licence="(debian/copyright)",
                            archive=deb.name, copyright=deb_copyright(out / "src", name))
                _log(f"debian {name}: {deb.name}")


def write_lock(dest: Path, path: Path = LOCK) -> int:
    rows = []
    for meta_file in sorted(dest.glob("*/*/_meta.json")):
        m = json.loads(meta_file.read_text())
        lic = m.get("licence", "").replace("\t", " ").replace("\n", " ")[:120]
        rows.append(f"{m['ecosystem']}\t{m['name']}\t{m['version']}\t{lic}")
    path.write_text("ecosystem\tname\tversion\tlicence as stated\n" + "\n".join(rows) + "\n")
    return len(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m engine.training.fetch", description=__doc__.splitlines()[0])
    p.add_argument("--dest", required=True, help="where the unpacked packages go")
    p.add_argument("--only", choices=ECOSYSTEMS, action="append", help="these ecosystems only (repeatable)")
    p.add_argument("--lock", action="store_true", help="ask for the versions in sources/lock.tsv")
    p.add_argument("--jobs", type=int, default=3, help="PyPI downloads at once")
    p.add_argument("--write-lock", action="store_true", help="write sources/lock.tsv from what DEST holds, then stop")
    args = p.parse_args(argv)
    dest = Path(args.dest)
    dest.mkdir(parents=True, exist_ok=True)
    if args.write_lock:
        print(f"{write_lock(dest)} packages -> {LOCK}")
        return 0
    lists = load_list()
    pinned = read_lock() if args.lock else {}
    only = set(args.only or ECOSYSTEMS)
    if "venv" in only and lists.get("pypi", {}).get("venv"):
        fetch_venv(dest, locked_names("venv") if args.lock else None)
    if "debian" in only:
        fetch_debian(lists.get("debian", {}).get("packages", []), dest)
    if "npm" in only:
        fetch_npm_all(lists.get("npm", {}).get("packages", []), pinned, dest)
    if "pypi" in only:
        from concurrent.futures import ThreadPoolExecutor

        def one(name: str) -> None:
            try:
                fetch_pypi(name, pinned.get(("pypi", name)), dest)
            except Exception as e:  # one package's failure never stops the build
                _log(f"pypi {name}: failed: {type(e).__name__}: {e}")

        with ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(one, lists.get("pypi", {}).get("packages", [])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
