"""Workspace adaptation (engine/adapt, lsp_server/adapting.py): which files it learns from, the held-out gate,
the cache, pausing, the engine's weight swap and the server's setting. The real embedded model throughout,
with a few training steps at most."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine import Engine, EngineConfig, InfillRequest
from engine.adapt import store
from engine.adapt.files import held_out, workspace_files
from engine.adapt.holes import line_holes
from engine.adapt.run import AdaptConfig, Gate, adapt, split
from engine.adapt.store import AdaptRecord, Score, improves
from engine.config import EMBEDDED_DIR, LoadConfig
from lsp_server.settings import parse_settings

REPO = Path(__file__).resolve().parent.parent
FUNC = '''import os


def handler_{i}(request, limit):
    total = 0
    for item in request.items:
        total += item.weight
    if total > limit:
        raise ValueError("too heavy")
    return total + {i}
'''


def make_workspace(root: Path, n: int = 60) -> Path:
    """A small Python project: ``n`` modules of one function each (enough held-out holes to measure)."""
    (root / "pkg").mkdir(parents=True)
    for i in range(n):
        (root / "pkg" / f"mod_{i:03d}.py").write_text(FUNC.format(i=i))
    return root


def snapshot(root: Path) -> dict[str, tuple[int, float]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime) for p in sorted(root.rglob("*"))}


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    home = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


# -- file selection ----------------------------------------------------------------------------------------------
def _tree(root: Path) -> None:
    files = {
        "a.py": "x = 1\n", "b.go": "package b\n", "c.ts": "let c = 1;\n", "notes.md": "# notes\n", "data.txt": "1\n",
        "build/gen.py": "y = 2\n", "sub/keep.py": "z = 3\n", "sub/skip.py": "w = 4\n", "sub/deep/also.rs": "fn f() {}\n",
        "big.py": "# " + "x" * 300 + "\n", "bad.py": b"\xff\xfe not utf-8\n", "empty.py": "",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "sub" / ".gitignore").write_text("skip.py\n")


EXPECTED = ["a.py", "b.go", "c.ts", "sub/deep/also.rs", "sub/keep.py"]


def test_files_follow_gitignore_languages_and_size_cap(tmp_path):
    _tree(tmp_path)
    got = workspace_files(tmp_path, max_file_bytes=200)
    assert [f.path for f in got] == EXPECTED
    assert {f.path: f.language for f in got}["c.ts"] == "typescript"
    assert [f.path for f in workspace_files(tmp_path, max_file_bytes=200, max_total_bytes=20)] == ["a.py", "b.go"]
    with pytest.raises(ValueError, match="not a directory"):
        workspace_files(tmp_path / "a.py")


def test_the_walk_without_git_lists_a_bounded_number_of_files(tmp_path):
    from engine.adapt.files import _walk_files

    _tree(tmp_path)
    everything = _walk_files(tmp_path)
    assert len(everything) > 3 and _walk_files(tmp_path, most=3) == everything[:3]   # a home directory stops early


@pytest.mark.parametrize("git", [False, True])
def test_the_listing_takes_a_bounded_number_of_files_with_git_too(tmp_path, monkeypatch, git):
    """The walk stops at MAX_WALKED files (a home directory is not a project); git's listing had no such cap, so a
    home directory or a monorepo under git listed (and stat'ed, one by one) every file it has. Now both stop at
    the same count: git's first by path."""
    from engine.adapt import files

    if git and shutil.which("git") is None:
        pytest.skip("git is not installed")
    for name in ("a.py", "b.py", "c.py", "d/e.py", "d/f.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    if git:
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        subprocess.run(["git", "-C", str(tmp_path), "add", "d/f.py"], check=True)   # tracked and untracked alike
    assert len(workspace_files(tmp_path)) == 5
    monkeypatch.setattr(files, "MAX_WALKED", 3)
    assert [f.path for f in workspace_files(tmp_path)] == ["a.py", "b.py", "c.py"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_in_a_git_work_tree_the_files_are_what_git_lists(tmp_path):
    _tree(tmp_path)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "a.py"], check=True)  # tracked; the rest untracked
    (tmp_path / ".git" / "info" / "exclude").write_text("c.ts\n")               # git's own exclude file
    got = [f.path for f in workspace_files(tmp_path, max_file_bytes=200)]
    assert got == [p for p in EXPECTED if p != "c.ts"]


@pytest.mark.parametrize("git", [False, True])
def test_one_path_is_taken_or_not_by_the_listings_rules(tmp_path, git):
    """``listed``: the listing's rules for given paths (documents saved in the editor), the same as the listing's
    verdict for every file of the tree, git's (a tracked file whatever the patterns) or the walk's."""
    from engine.adapt.files import listed

    if git and shutil.which("git") is None:
        pytest.skip("git is not installed")
    _tree(tmp_path)
    for rel in ("node_modules/left-pad/index.js", ".venv/lib/site.py", "sub/deep/target/x.rs"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    (tmp_path / "sub" / "deep" / ".gitignore").write_text("target/\n")
    if git:
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        subprocess.run(["git", "-C", str(tmp_path), "add", "-f", "build/gen.py"], check=True)   # tracked, ignored
    taken = {f.path for f in workspace_files(tmp_path)}
    every = [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file() and ".git" not in p.parts]
    every = [rel for rel in every if rel not in ("bad.py", "empty.py")]   # not UTF-8, empty: the reader's rules
    assert listed(tmp_path, every) == taken
    assert ("build/gen.py" in taken) == git and "sub/keep.py" in taken and "node_modules/left-pad/index.js" not in taken
    assert listed(tmp_path, ["build/new.py", "sub/new.py", "sub/deep/target/new.rs", "sub/skip.py"]) == {"sub/new.py"}
    assert listed(tmp_path, []) == set() and listed(tmp_path, ["notes.md"]) == set()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_listing_a_git_workspace_runs_no_program_its_own_git_config_names(tmp_path):
    """A workspace's .git/config is the workspace's (an unpacked archive, a shared folder): a ``core.fsmonitor``
    program there must not run when the server or the adapter lists the folder, and nothing is written in it."""
    from engine.adapt.files import listed

    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "a.py"], check=True)
    marker = tmp_path / "ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\necho ran >> '{marker}'\n")
    hook.chmod(0o755)
    subprocess.run(["git", "-C", str(root), "config", "core.fsmonitor", str(hook)], check=True)
    before = snapshot(root)
    assert [f.path for f in workspace_files(root)] == ["a.py"]
    assert listed(root, ["a.py", "b.py"]) == {"a.py", "b.py"}
    assert not marker.exists()
    assert snapshot(root) == before


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_listing_lists_the_folder_not_the_repository_the_editors_environment_names(tmp_path, monkeypatch):
    """An editor started from a git hook or alias has GIT_DIR set: git would list that repository's index over the
    folder (its tracked secret.py read, though the folder's own .gitignore excludes it), not the folder's."""
    root, other = tmp_path / "ws", tmp_path / "other"
    for repo, name in ((root, "mine.py"), (other, "secret.py")):
        repo.mkdir()
        (repo / name).write_text("x = 1\n")
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        subprocess.run(["git", "-C", str(repo), "add", name], check=True)
    (root / ".gitignore").write_text("secret.py\n")      # the folder's own rule: its secret.py is not read
    (root / "secret.py").write_text('TOKEN = "hunter2"\n')
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))   # (git then takes the current folder as the work tree)
    assert [f.path for f in workspace_files(root)] == ["mine.py"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_listing_never_reads_out_of_the_folder_through_a_linked_directory(tmp_path):
    """git lists the index's paths whatever the disk holds now: a tracked ``lib/x.py`` whose ``lib`` became a link
    to a directory elsewhere (a home directory's secrets) must not be read through it; nor a linked file."""
    outside = tmp_path / "outside"
    (outside / "lib").mkdir(parents=True)
    (outside / "lib" / "x.py").write_text('SECRET_TOKEN = "hunter2"\n')
    (outside / "secret.py").write_text('API_KEY = "hunter3"\n')
    root = tmp_path / "ws"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "x.py").write_text("x = 1\n")
    (root / "a.py").write_text("a = 1\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "lib", "a.py"], check=True)
    shutil.rmtree(root / "lib")
    (root / "lib").symlink_to(outside / "lib")
    (root / "secret.py").symlink_to(outside / "secret.py")
    (root / "up").symlink_to(tmp_path)   # a link to the folder above: the walk must not go there either
    before = snapshot(root)
    assert [(f.path, f.text) for f in workspace_files(root)] == [("a.py", "a = 1\n")]
    assert snapshot(root) == before
    shutil.rmtree(root / ".git")   # the walk
    assert [(f.path, f.text) for f in workspace_files(root)] == [("a.py", "a = 1\n")]


def test_a_file_is_read_only_as_a_regular_file_within_the_cap_as_it_is_read(tmp_path):
    """What was listed may be replaced before it is read: a FIFO answers None at once (no writer is waited for),
    a link is not followed, and a file larger than the cap when read (it grew) is not read past it."""
    from engine.adapt.files import read_text

    fifo = tmp_path / "x.py"
    os.mkfifo(fifo)
    got: list = []
    reader = threading.Thread(target=lambda: got.append(read_text(fifo)), daemon=True)
    reader.start()
    reader.join(60)
    assert not reader.is_alive() and got == [None]
    (tmp_path / "a.py").write_text("a = 1\n")
    (tmp_path / "link.py").symlink_to(tmp_path / "a.py")
    assert read_text(tmp_path / "a.py") == "a = 1\n" and read_text(tmp_path / "link.py") is None
    assert read_text(tmp_path / "a.py", max_bytes=5) is None and read_text(tmp_path / "a.py", max_bytes=6) == "a = 1\n"
    (tmp_path / "bad.py").write_bytes(b"\xff\xfe")
    assert read_text(tmp_path / "bad.py") is None and read_text(tmp_path / "gone.py") is None


@pytest.mark.parametrize("git", [False, True])
def test_the_walk_reads_gitignore_files_as_git_does(tmp_path, git):
    """Without git, the walk decides as git would: a .gitignore saved with a byte order mark and CRLF line ends
    (Windows editors) still ignores its first pattern's files, and a ``!name`` in a subdirectory's .gitignore takes
    back what the one above excluded (the innermost .gitignore with a matching pattern decides)."""
    from engine.adapt.files import listed

    if git and shutil.which("git") is None:
        pytest.skip("git is not installed")
    (tmp_path / ".gitignore").write_bytes("\ufeffbuild/\r\n*.gen.py\r\n".encode())
    for rel in ("a.py", "build/b.py", "x.gen.py", "sub/keep.gen.py", "sub/other.gen.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    (tmp_path / "sub" / ".gitignore").write_text("!keep.gen.py\n")
    if git:   # git's own verdict: the reference
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    expected = ["a.py", "sub/keep.gen.py"]
    assert [f.path for f in workspace_files(tmp_path)] == expected
    assert listed(tmp_path, ["a.py", "build/b.py", "x.gen.py", "sub/keep.gen.py", "sub/other.gen.py"]) == set(expected)


def test_a_fifo_named_gitignore_does_not_block_the_walk(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.py").write_text("a = 1\n")
    fifo = tmp_path / "sub" / ".gitignore"
    os.mkfifo(fifo)
    got: list = []
    walker = threading.Thread(target=lambda: got.append([f.path for f in workspace_files(tmp_path)]), daemon=True)
    walker.start()
    walker.join(60)
    if walker.is_alive():   # blocked opening the FIFO: a writer that closes at once lets it go
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert not walker.is_alive() and got == [["sub/a.py"]]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize("where", ["sub/.gitignore", ".git/info/exclude"])
def test_a_fifo_git_would_read_does_not_block_the_listing_in_a_git_work_tree(tmp_path, where):
    """git reads each .gitignore (and info/exclude) with a plain open(): a FIFO there held ``git ls-files`` (and
    ``git check-ignore`` for a saved file's path) until their 120 s timeout, the workspace lines and the adapter
    waiting with them. Now the listing sees the FIFO first and walks the folder; a saved file's verdict is the
    walk's."""
    from engine.adapt.files import listed

    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("a = 1\n")
    (tmp_path / "sub" / "b.py").write_text("b = 1\n")
    (tmp_path / ".gitignore").write_text("skip.py\n")
    (tmp_path / "skip.py").write_text("s = 1\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "a.py"], check=True)
    fifo = tmp_path / where
    fifo.parent.mkdir(parents=True, exist_ok=True)
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    got: list = []

    def listing() -> None:
        got.append([f.path for f in workspace_files(tmp_path)])
        got.append(listed(tmp_path, ["a.py", "skip.py", "sub/b.py"]))

    lister = threading.Thread(target=listing, daemon=True)
    lister.start()
    lister.join(60)   # half of git's timeout: the listing does not wait for it
    blocked = lister.is_alive()
    while lister.is_alive():   # let git go: a writer that closes at once ends its read
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:   # no reader yet
            pass
        lister.join(0.1)
    assert not blocked
    assert got == [["a.py", "sub/b.py"], {"a.py", "sub/b.py"}]


def test_a_workspace_with_names_that_are_not_utf8_is_adapted(tmp_path, cache):
    """One file or folder name that is not UTF-8 (Latin-1 ``café.py``; the listing keeps its bytes as surrogates)
    failed the whole adaptation at once: "adapt: 'utf-8' codec can't encode character '\\udce9'" (the held-out
    hash of its path, then the cache key of the folder). Now both hash the name's own bytes: the same hash as
    before for every UTF-8 name."""
    ws = make_workspace(Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9")), n=20)
    (ws / "pkg" / os.fsdecode(b"caf\xe9.py")).write_text(FUNC.format(i=99))
    proc = subprocess.run([sys.executable, "-m", "engine.adapt", str(ws), "--max-steps", "1", "--holes", "5",
                           "--priority", "normal"], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "XDG_CACHE_HOME": str(cache)}, timeout=600)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0, proc.stderr
    files = next(e for e in events if e["event"] == "files")
    assert files["train_files"] + files["held_out_files"] == 21   # the file named in Latin-1 too
    assert events[-1]["event"] == "done"


def test_the_look_for_a_fifo_before_git_stops_where_the_listing_would(tmp_path):
    """The look for an exclude file git would block on walks the folder before git lists it: it stops after as
    many files as the listing takes (MAX_WALKED), as the walk does; a folder larger than that is git's to list."""
    from engine.adapt.files import _blocking_excludes

    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text("x = 1\n")
    (tmp_path / "z").mkdir()
    os.mkfifo(tmp_path / "z" / ".gitignore")
    assert _blocking_excludes(tmp_path, []) == str(tmp_path / "z" / ".gitignore")
    assert _blocking_excludes(tmp_path, [], most=3) is None


def test_the_held_out_slice_is_chosen_by_path():
    paths = [f"pkg/mod_{i:03d}.py" for i in range(400)]
    out = [p for p in paths if held_out(p)]
    assert out == [p for p in paths if held_out(p)]          # the same every time
    assert 0.05 < len(out) / len(paths) < 0.2                  # about 12%


# -- the gate ----------------------------------------------------------------------------------------------------
def test_the_gate_wants_strictly_more_exact_lines_on_the_same_holes():
    assert improves(Score(100, 40, 5), Score(100, 40, 6))
    assert not improves(Score(100, 40, 5), Score(100, 60, 5))   # same exact count: no gain
    assert not improves(Score(100, 40, 5), Score(100, 40, 4))
    assert not improves(Score(100, 40, 5), Score(90, 40, 9))    # different holes: not comparable
    assert not improves(Score(0, 0, 0), Score(0, 0, 0))


def test_exact_match_has_no_bar_and_precision_counts_only_offered_fills():
    s = Score(holes=100, offered=40, exact=9, offered_exact=6)
    assert s.exact_match == 0.09                                 # the model's best fill, offered or not
    assert s.precision == 6 / 40                                 # right among what the editor would show
    assert s.summary()["offered_exact"] == 6


def test_training_fields_are_set_by_name_with_their_types():
    from engine.adapt.__main__ import with_fields

    cfg = with_fields(AdaptConfig(), ["lr=1e-3", "batch_size=8", "p_infill=0.9"])
    assert (cfg.lr, cfg.batch_size, cfg.p_infill) == (1e-3, 8, 0.9) and isinstance(cfg.batch_size, int)
    for bad in ("lr", "nope=1", "batch_size=eight", "minutes=3"):
        with pytest.raises(ValueError, match="--set"):
            with_fields(AdaptConfig(), [bad])


def test_a_no_op_adaptation_is_rejected_and_nothing_is_written_into_the_workspace(tmp_path, cache):
    ws = make_workspace(tmp_path / "ws")
    before = snapshot(ws)
    events: list[dict] = []
    record = adapt(ws, LoadConfig(), AdaptConfig(minutes=0, holes=12), progress=events.append)
    assert record.steps == 0 and record.before == record.after and record.before["holes"] == 12
    assert not record.accepted and "not filled better" in record.reason
    entry = store.entry_dir(ws, EMBEDDED_DIR)
    assert entry.parent == cache / "diffusion-lsp" / "adapt"
    assert store.read_record(entry) is not None and store.accepted_weights(entry) is None
    assert snapshot(ws) == before
    assert [e["event"] for e in events][:3] == ["files", "measure", "measured"] and events[-1]["event"] == "done"


def test_too_few_held_out_lines_are_not_measured_and_never_adopted(tmp_path, cache):
    ws = make_workspace(tmp_path / "ws", n=3)
    record = adapt(ws, LoadConfig(), AdaptConfig(max_steps=1))
    assert not record.accepted and "too few" in record.reason and record.steps == 0


def test_the_held_out_holes_are_one_line_statements_of_held_out_files(tmp_path):
    ws = make_workspace(tmp_path / "ws")
    train, held = split(workspace_files(ws))
    holes = line_holes(held, per_file=40, limit=1000)
    assert train and held and {h.name.split(":")[0] for h in holes} <= {f.path for f in held}
    for h in holes:
        assert h.solution.endswith("\n") and "\n" not in h.solution[:-1] and h.solution.startswith("    ")


# -- the cache ---------------------------------------------------------------------------------------------------
def test_the_cache_key_is_the_workspace_and_the_model_digest(tmp_path, cache):
    model = tmp_path / "model"
    shutil.copytree(EMBEDDED_DIR, model)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    assert store.entry_dir(a, EMBEDDED_DIR) == store.entry_dir(a, model)     # same weights, same digest
    assert store.entry_dir(a, EMBEDDED_DIR) != store.entry_dir(b, EMBEDDED_DIR)
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "note": "changed"}))
    assert store.entry_dir(a, EMBEDDED_DIR) != store.entry_dir(a, model)


def adopted_entry(ws: Path) -> Path:
    """A cache entry the gate accepted, holding the embedded model's own weights as the adapted ones."""
    from safetensors.torch import save_model
    from transformers import AutoModelForMaskedLM

    model = AutoModelForMaskedLM.from_pretrained(str(EMBEDDED_DIR), local_files_only=True)
    entry = store.entry_dir(ws, EMBEDDED_DIR)
    record = AdaptRecord(str(ws.resolve()), str(EMBEDDED_DIR), store.model_digest(EMBEDDED_DIR),
                         before={"holes": 50, "offered": 10, "exact": 2, "exact_match": 0.04, "precision": 0.2},
                         after={"holes": 50, "offered": 12, "exact": 4, "exact_match": 0.08, "precision": 0.33},
                         accepted=True, steps=100)
    store.publish(entry, record, lambda path: save_model(model, str(path)))
    return entry


def test_remove_deletes_the_workspace_entries_only(tmp_path, cache):
    ws, other = make_workspace(tmp_path / "ws", n=1), make_workspace(tmp_path / "other", n=1)
    entry, kept = adopted_entry(ws), adopted_entry(other)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    out = subprocess.run([sys.executable, "-m", "lsp_server", "adapt", "--remove", str(ws)], cwd=REPO, env=env,
                         capture_output=True, text=True, check=True)
    assert "removed 1" in out.stdout and not entry.exists() and store.accepted_weights(kept) is not None


def test_remove_deletes_an_entry_whose_record_cannot_be_read(tmp_path, cache):
    """A broken record (a crash while writing, a disk filled) says nothing of its workspace, but the entry's path
    does: ``adapt --remove`` for the model in question deletes it too."""
    ws = make_workspace(tmp_path / "ws", n=1)
    entry = adopted_entry(ws)
    (entry / store.RECORD).write_text("{not json")
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    out = subprocess.run([sys.executable, "-m", "lsp_server", "adapt", "--remove", str(ws)], cwd=REPO, env=env,
                         capture_output=True, text=True, check=True)
    assert "removed 1" in out.stdout and not entry.exists()


def test_a_model_that_is_not_a_checkpoint_is_one_clear_line_and_nothing_is_kept(tmp_path, cache):
    ws = make_workspace(tmp_path / "ws")             # enough held-out holes: the model is loaded
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "config.json").write_text("not json{")
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    for model, says in ((tmp_path / "missing", "no checkpoint at"), (ws / "pkg" / "mod_000.py", "no checkpoint at"),
                        (garbage, "config.json")):
        out = subprocess.run([sys.executable, "-m", "lsp_server", "adapt", str(ws), "--model", str(model),
                              "--minutes", "0.01"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 2 and "adapt: " in out.stderr and says in out.stderr, out.stderr
        assert "Traceback" not in out.stderr
    assert not (cache / "diffusion-lsp" / "adapt").exists() or not any((cache / "diffusion-lsp" / "adapt").iterdir())


# -- pausing -----------------------------------------------------------------------------------------------------
def test_the_adapter_waits_while_paused_and_goes_on_when_resumed(tmp_path, cache):
    ws = make_workspace(tmp_path / "ws")
    gate, events, result = Gate(), [], {}

    def on_event(event: dict) -> None:
        events.append(event)
        if event["event"] == "measured":
            gate.pause()                     # a fill started: the next step must wait

    worker = threading.Thread(target=lambda: result.update(r=adapt(ws, LoadConfig(), AdaptConfig(
        max_steps=2, holes=10, batch_size=2, seq_len=128), gate, on_event, store=False)))
    worker.start()
    assert gate.waiting.wait(600)
    assert [e["event"] for e in events] == ["files", "measure", "measured"]   # no training step ran
    gate.resume()
    worker.join(600)
    assert result["r"].steps == 2 and events[-1]["event"] == "done"


def test_the_adapter_process_obeys_pause_and_resume_on_stdin(tmp_path, cache):
    ws = make_workspace(tmp_path / "ws")
    proc = subprocess.Popen([sys.executable, "-m", "engine.adapt", str(ws), "--max-steps", "1", "--holes", "10",
                             "--no-store", "--priority", "normal", "--commands"], cwd=REPO, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ, "XDG_CACHE_HOME": str(cache)})
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("pause\n")
    proc.stdin.flush()
    seen = []
    for line in proc.stdout:
        seen.append(json.loads(line)["event"])
        if seen[-1] == "paused":
            proc.stdin.write("resume\n")
            proc.stdin.flush()
        if seen[-1] == "done":
            break
    proc.stdin.close()
    assert proc.wait(120) == 0
    assert "paused" in seen and seen.index("resumed") > seen.index("paused") and seen[-1] == "done"


# -- the engine's swap and the server ----------------------------------------------------------------------------
def test_the_engine_swaps_weights_between_requests(tmp_path, cache):
    entry = adopted_entry(make_workspace(tmp_path / "ws", n=1))
    engine = Engine(EngineConfig.of(threads=1))
    try:
        engine.start().result(300)
        request = InfillRequest(text=FUNC.format(i=1), offset=FUNC.format(i=1).index("    return"), language="python")
        base = engine.infill_sync(request, timeout=300)
        running = engine.submit(request)
        swapped = engine.swap_weights(entry / store.WEIGHTS)   # queued behind the running fill
        assert running.future.result(300).text == base.text   # the same weights for the whole fill
        swapped.result(300)
        assert engine.stats()["adapted_weights"] == str(entry / store.WEIGHTS)
        assert engine.infill_sync(request, timeout=300).text == base.text       # same weights saved: same fill
        engine.swap_weights(None).result(300)
        assert engine.stats()["adapted_weights"] is None
    finally:
        engine.close()


def test_the_setting(tmp_path):
    settings, problems = parse_settings({"adapt": "background"})
    assert settings.load.adapt == "background" and problems == []
    settings, problems = parse_settings({"adapt": "always"})
    assert settings.load.adapt == "off" and "'adapt' must be one of off, background" in problems[0]


def test_the_server_loads_the_adopted_weights_at_start_and_shows_the_figures(tmp_path, cache):
    from benchmarks.lsp_client import LspClient

    ws = make_workspace(tmp_path / "ws", n=1)
    entry = adopted_entry(ws)
    before = snapshot(ws)
    with LspClient([sys.executable, "-m", "lsp_server"]) as client:   # XDG_CACHE_HOME: the fixture's
        client.request("initialize", {"processId": os.getpid(), "rootUri": ws.as_uri(), "capabilities": {},
                                      "initializationOptions": {"threads": 1, "adapt": "background"}})
        client.notify("initialized", {})
        status = client.wait_for("diffusion/status", lambda p: "adapt" in p and p["adapt"]["state"] not in ("pending", "measuring"),
                                 300)
        assert status["state"] == "ready"
        assert status["adapt"] == {"state": "adopted", "before": 0.04, "after": 0.08, "holes": 50}
        stats = client.request("diffusion/stats", {})
        assert stats["adapted_weights"] == str(entry / store.WEIGHTS) and stats["adapt"]["state"] == "adopted"
        assert stats["adapt"]["before"]["exact"] == 2 and stats["adapt"]["after"]["exact"] == 4
    assert snapshot(ws) == before


def test_in_the_background_the_server_runs_the_adapter_and_reports_the_verdict(tmp_path, cache, monkeypatch):
    from benchmarks.lsp_client import LspClient

    ws = make_workspace(tmp_path / "ws")
    before = snapshot(ws)
    monkeypatch.setenv("DIFFUSION_LSP_ADAPT_MINUTES", "0.02")   # about two steps of training
    monkeypatch.setenv("DIFFUSION_LSP_ADAPT_PRIORITY", "nice")  # the idle class starves on a machine busy all along
    with LspClient([sys.executable, "-m", "lsp_server"]) as client:
        client.request("initialize", {"processId": os.getpid(), "rootUri": ws.as_uri(), "capabilities": {},
                                      "initializationOptions": {"threads": 1, "adapt": "background"}})
        client.notify("initialized", {})
        client.wait_for("diffusion/status", lambda p: p.get("adapt", {}).get("state") == "measuring", 300)
        done = client.wait_for("diffusion/status",
                               lambda p: p.get("adapt", {}).get("state") in ("adopted", "rejected", "failed"), 900)
        stats = client.request("diffusion/stats", {})
    assert done["adapt"]["state"] in ("adopted", "rejected") and 0 <= done["adapt"]["before"] <= 1
    record = store.read_record(store.entry_dir(ws, EMBEDDED_DIR))
    assert record is not None and record.steps >= 1 and stats["adapt"]["steps"] == record.steps
    assert (stats["adapted_weights"] is not None) == record.accepted == (done["adapt"]["state"] == "adopted")
    assert snapshot(ws) == before


def _start_adapting(client, ws: Path) -> None:
    client.request("initialize", {"processId": os.getpid(), "rootUri": ws.as_uri(), "capabilities": {},
                                  "initializationOptions": {"threads": 1, "adapt": "background"}})
    client.notify("initialized", {})


def _waiting_for(client, timeout: float = 600.0) -> int:
    """The pid of the adapter the server's own adapter waits for (a guard against a hang, not a timing)."""
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        adapt_stats = client.request("diffusion/stats", {})["adapt"]
        if adapt_stats.get("waiting_for"):
            return adapt_stats["waiting_for"]
        assert adapt_stats["state"] in ("off", "measuring"), adapt_stats   # it must not adapt (or fail) itself
        time.sleep(0.5)
    raise AssertionError("the second adapter never waited for the first")


def test_a_model_served_int8_is_adapted_on_its_float_weights(tmp_path, cache):
    """A checkpoint whose serving.json states int8 (as a shipped model may) was adapted through its int8 copy:
    training ended in a traceback ('expected scalar type Float but found BFloat16'). It trains the float weights."""
    model = tmp_path / "model"
    shutil.copytree(EMBEDDED_DIR, model)
    (model / "serving.json").write_text('{"quantization": "int8"}')
    ws = make_workspace(tmp_path / "ws")
    out = subprocess.run([sys.executable, "-m", "engine.adapt", str(ws), "--model", str(model), "--minutes", "0.02",
                          "--priority", "nice"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    done = [e for e in events if e["event"] == "done"]
    assert done and done[0]["steps"] > 0, events[-3:]


def test_a_second_session_on_the_workspace_waits_for_the_first_adapter_and_takes_its_entry(tmp_path, cache,
                                                                                          monkeypatch):
    """Two servers with adapt "background" on one folder each started an adapter: twice the CPU for one entry, the
    second publish replacing the first's entry under a session that had adopted it. The second now waits (no
    measuring, no training) for the first, then adopts or rejects what that one published."""
    from benchmarks.lsp_client import LspClient

    ws = make_workspace(tmp_path / "ws")
    monkeypatch.setenv("DIFFUSION_LSP_ADAPT_MINUTES", "0.02")
    monkeypatch.setenv("DIFFUSION_LSP_ADAPT_PRIORITY", "nice")
    first = subprocess.Popen([sys.executable, "-m", "engine.adapt", str(ws), "--minutes", "0.02", "--priority",
                              "nice", "--commands"], cwd=REPO, text=True, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)   # the first session's adapter (as the server starts it)
    assert first.stdin is not None and first.stdout is not None
    try:
        for line in first.stdout:
            if json.loads(line)["event"] == "measured":   # it holds the entry: hold it there
                first.stdin.write("pause\n")
                first.stdin.flush()
                break
        with LspClient([sys.executable, "-m", "lsp_server"]) as client:
            _start_adapting(client, ws)
            assert _waiting_for(client) == first.pid
            first.stdin.write("resume\n")
            first.stdin.flush()
            done = [json.loads(line) for line in first.stdout if '"event": "done"' in line]
            assert first.wait(600) == 0 and done and not done[0].get("waited")
            status = client.wait_for("diffusion/status",
                                     lambda p: p.get("adapt", {}).get("state") in ("adopted", "rejected", "failed"),
                                     600)
            stats = client.request("diffusion/stats", {})["adapt"]
    finally:
        if first.poll() is None:
            first.kill()
    assert status["adapt"]["state"] == ("adopted" if done[0]["accepted"] else "rejected")
    assert "loss" not in stats and stats["steps"] == done[0]["steps"]   # it trained no step of its own
    record = store.read_record(store.entry_dir(ws, EMBEDDED_DIR))
    assert record is not None and record.finished == done[0]["finished"]   # the first's entry, not replaced


def test_when_the_adapter_a_session_waits_for_is_killed_it_adapts_itself(tmp_path, cache, monkeypatch):
    """Two real servers on one folder: the second's adapter waits for the first's; the first's is killed (no
    chance to clean anything up), and the lock it held goes with it: the second adapts and publishes."""
    from benchmarks.lsp_client import LspClient

    ws = make_workspace(tmp_path / "ws")
    monkeypatch.setenv("DIFFUSION_LSP_ADAPT_PRIORITY", "nice")
    monkeypatch.setenv("DIFFUSION_LSP_ADAPT_MINUTES", "60")       # the first would train for an hour
    with LspClient([sys.executable, "-m", "lsp_server"]) as one:
        _start_adapting(one, ws)
        one.wait_for("diffusion/status", lambda p: p.get("adapt", {}).get("state") == "training", 600)
        monkeypatch.setenv("DIFFUSION_LSP_ADAPT_MINUTES", "0.02")
        with LspClient([sys.executable, "-m", "lsp_server"]) as two:
            _start_adapting(two, ws)
            holder = _waiting_for(two)
            with open(f"/proc/{holder}/cmdline", "rb") as f:
                assert b"engine.adapt" in f.read()
            os.kill(holder, 9)
            failed = one.wait_for("diffusion/status", lambda p: p.get("adapt", {}).get("state") == "failed", 300)
            assert failed["state"] == "ready"                                 # the base model serves on
            done = two.wait_for("diffusion/status",
                                lambda p: p.get("adapt", {}).get("state") in ("adopted", "rejected", "failed"), 900)
            stats = two.request("diffusion/stats", {})["adapt"]
    assert done["adapt"]["state"] in ("adopted", "rejected"), stats
    record = store.read_record(store.entry_dir(ws, EMBEDDED_DIR))
    assert record is not None and record.steps >= 1 and stats["steps"] == record.steps


def test_when_the_adapter_fails_the_server_says_why(tmp_path, cache):
    """The adapter's own words (its last line on stderr), not only its exit status: a workspace root that is not a
    folder (an editor started on a file) is named as such."""
    from benchmarks.lsp_client import LspClient

    root = tmp_path / "main.py"
    root.write_text("x = 1\n")
    with LspClient([sys.executable, "-m", "lsp_server"]) as client:   # XDG_CACHE_HOME: the fixture's
        client.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {},
                                      "initializationOptions": {"threads": 1, "adapt": "background"}})
        client.notify("initialized", {})
        client.wait_for("diffusion/status", lambda p: "adapt" in p and p["adapt"]["state"] == "failed", 300)
        error = client.request("diffusion/stats", {})["adapt"]["error"]
        assert error == f"the adapter exited with status 2: adapt: {root}: not a directory"


def test_a_truncated_adapted_weights_file_is_a_clear_error_and_the_base_model_serves(tmp_path, cache):
    """An entry whose weights file was cut short (a full disk, a copy interrupted) said only safetensors' "Error while
    deserializing header: incomplete metadata, file not fully covered", naming no file; it names the file now, and
    the base model goes on serving; ``diffusion-lsp adapt --remove`` then clears the entry."""
    from benchmarks.lsp_client import LspClient

    ws = make_workspace(tmp_path / "ws", n=1)
    weights = adopted_entry(ws) / store.WEIGHTS
    weights.write_bytes(weights.read_bytes()[:weights.stat().st_size // 2])
    with LspClient([sys.executable, "-m", "lsp_server"]) as client:   # XDG_CACHE_HOME: the fixture's
        _start_adapting(client, ws)
        status = client.wait_for("diffusion/status", lambda p: p.get("adapt", {}).get("state") == "failed", 300)
        assert status["state"] == "ready"
        stats = client.request("diffusion/stats", {})
        assert stats["adapt"]["error"].startswith(f"cannot use the weights {weights}: ") and \
            stats["adapted_weights"] is None
        client.notify("textDocument/didOpen", {"textDocument": {"uri": (ws / "a.py").as_uri(), "languageId": "python",
                                                                "version": 1, "text": FUNC.format(i=1)}})
        answer = client.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": (ws / "a.py").as_uri()}, "position": {"line": 4, "character": 4},
            "context": {"triggerKind": 1}}, 300)
        assert answer is not None
    out = subprocess.run([sys.executable, "-m", "lsp_server", "adapt", str(ws), "--remove"], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "removed 1 adapted model(s)" in out.stdout
    assert not weights.parent.exists()


def test_with_the_setting_off_the_server_neither_adapts_nor_adopts(tmp_path, cache):
    from benchmarks.lsp_client import LspClient

    ws = make_workspace(tmp_path / "ws", n=1)
    adopted_entry(ws)
    with LspClient([sys.executable, "-m", "lsp_server"]) as client:
        client.request("initialize", {"processId": os.getpid(), "rootUri": ws.as_uri(), "capabilities": {},
                                      "initializationOptions": {"threads": 1}})
        client.notify("initialized", {})
        status = client.wait_ready(300)
        assert "adapt" not in status
        stats = client.request("diffusion/stats", {})
        assert stats["adapted_weights"] is None and stats["adapt"]["state"] == "off"


# -- the benchmark's summary and table ---------------------------------------------------------------------------
def test_the_benchmark_summarises_adapter_logs_and_the_table_shows_them(tmp_path):
    from benchmarks import adapt as bench
    from benchmarks import table

    def score(exact):
        return {"holes": 100, "offered": 20, "exact": exact, "exact_match": exact / 100, "precision": exact / 20}

    def events(scores, done=True):
        out = [{"time": 0.0, "event": "files", "train_files": 9, "held_out_files": 2, "holes": 100},
               {"time": 1.0, "event": "measured", "phase": "before", **score(scores[0])},
               {"time": 2.0, "event": "step", "step": 10, "cpu_seconds": 12.0, "loss": 2.0}]
        out += [{"time": 3.0 + i, "event": "snapshot", "minutes": m, "step": 100 * (i + 1), "cpu_seconds": m * 60,
                 "wall_seconds": m * 120, **score(s)} for i, (m, s) in enumerate(zip((5.0, 15.0), scores[1:3]))]
        if done:
            out.append({"time": 9.0, "event": "done", "before": score(scores[0]), "after": score(scores[3]),
                        "accepted": scores[3] > scores[0], "steps": 900, "cpu_seconds": 1800.0,
                        "wall_seconds": 3600.0, "train_tokens": 1000})
        return out

    runs = {"a": bench.summarise(events([4, 5, 6, 8])), "b": bench.summarise(events([2, 2, 4, 4])),
            "c": bench.summarise(events([0, 1, 1, 1], done=False))}
    assert [p["minutes"] for p in runs["a"]["points"]] == [0, 5.0, 15.0, 30.0] and runs["a"]["complete"]
    assert not runs["c"]["complete"] and [p["minutes"] for p in runs["c"]["points"]] == [0, 5.0, 15.0]
    g = bench.gains(runs, 15.0)
    assert g["codebases"] == 3 and g["mean_exact_match"] == {"before": 0.02, "after": 0.0367}
    assert g["relative_of_mean"] == 0.833 and g["per_codebase"]["c"]["relative"] is None and g["none_worse"]
    assert bench.gains(runs, 30.0)["codebases"] == 2        # c never got there
    result = {"benchmark": "adapt", "command": "python -m benchmarks.adapt", "created": "2026-01-01",
              "machine": {"cpus": 2, "load_average": [1.0]}, "codebases": runs,
              "targets": {"t": {"target": "x", "measured": 0.8, "met": True}}}
    (tmp_path / "adapt.json").write_text(json.dumps(result))
    block = table.render(table.load_results(tmp_path), tmp_path)
    assert "### Workspace adaptation" in block and "| [adapt](adapt.json) | a | 100 | 15.0 | 200 | 30.0 | 6.0 |" in block


@pytest.mark.parametrize("minutes, says", [("-1", "minutes must be a number above 0, not '-1'"),
                                           ("nan", "minutes must be a number above 0, not 'nan'"),
                                           ("0", "minutes must be a number above 0, not '0'"),
                                           ("inf", "minutes must be a number above 0, not 'inf'"),
                                           ("soon", "'soon' is not a number of minutes")])
def test_adapt_minutes_that_train_nothing_or_never_end_are_refused_and_nothing_is_kept(tmp_path, cache, minutes,
                                                                                        says):
    """--minutes -1 or nan ran the adapter for 0 steps and kept a 'not adopted' record, which stops the background
    adapter for the workspace until --remove; inf never ended. Refused before anything runs."""
    ws = make_workspace(tmp_path / "ws", n=4)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    out = subprocess.run([sys.executable, "-m", "lsp_server", "adapt", str(ws), "--minutes", minutes], cwd=REPO,
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and f"argument --minutes: {says}" in out.stderr, out.stderr
    assert not (cache / "diffusion-lsp" / "adapt").exists()


def test_a_bad_adapt_minutes_in_the_environment_is_a_warning_not_a_server_that_does_not_start(tmp_path, monkeypatch):
    """$DIFFUSION_LSP_ADAPT_MINUTES=abc ended the server at start with a ValueError traceback; it is a warning in
    the log and the default's minutes."""
    from benchmarks.lsp_client import LspClient

    monkeypatch.setenv("DIFFUSION_LSP_ADAPT_MINUTES", "abc")
    log = tmp_path / "stderr.log"
    with LspClient([sys.executable, "-m", "lsp_server"], stderr_path=log) as client:
        client.request("initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": {},
                                      "initializationOptions": {"threads": 1}})
        assert client.request("diffusion/stats", {})["adapt"]["setting"] == "off"
    text = log.read_text()
    assert "DIFFUSION_LSP_ADAPT_MINUTES: 'abc' is not a number of minutes; adapting for 15 minutes" in text, text
    assert "Traceback" not in text


def _other_model(tmp_path: Path) -> Path:
    """A checkpoint of the embedded model's shapes that is another model to the cache (its own digest)."""
    other = tmp_path / "other-model"
    other.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "confidence.json"):
        (other / name).symlink_to(EMBEDDED_DIR / name)
    (other / "note.json").write_text('{"another": "model"}\n')
    assert store.model_digest(other) != store.model_digest(EMBEDDED_DIR)
    return other


def test_weights_made_for_one_model_are_not_swapped_into_the_model_loaded_after_it(tmp_path, cache):
    """The adapter for model A finishes just as the user switches to model B: its swap was queued behind B's load
    and put A's adapted weights into B (same shapes: no error), where they stayed. A swap names the load it was
    made for; after another load it is ModelChanged and the model keeps its own weights."""
    from engine import ModelChanged

    weights = adopted_entry(make_workspace(tmp_path / "ws", n=1)) / store.WEIGHTS
    engine = Engine(EngineConfig.of(threads=1))
    try:
        engine.start().result(300)
        made_for = engine.config.load
        reload = engine.reconfigure(EngineConfig.of(model=str(_other_model(tmp_path)), threads=1))   # B chosen
        late = engine.swap_weights(weights, made_for)                 # A's result arrives just after, in order
        reload.result(300)
        with pytest.raises(ModelChanged, match="weights made for model embedded not used"):
            late.result(300)
        assert engine.stats()["adapted_weights"] is None
        engine.swap_weights(weights, engine.config.load).result(300)   # made for the model loaded: taken
        assert engine.stats()["adapted_weights"] == str(weights)
    finally:
        engine.close()

