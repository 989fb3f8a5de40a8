"""scripts/device_tree.sh: what the GPU calls do not read steps out of the tree that travels there, and back."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "device_tree.sh"
ASIDE_PATHS = ["engine/models/embedded/model.safetensors", "training-state/embedded/state.pt",
               "benchmarks/results/latency.json", "benchmarks/data/code-lines.jsonl.gz"]


def _run(repo: Path, aside: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "scripts/device_tree.sh", *args], cwd=repo, capture_output=True, text=True,
                          env={**os.environ, "ASIDE": str(aside)}, timeout=60)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, root / "scripts" / "device_tree.sh")
    for rel in ASIDE_PATHS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"x" * 200_000)
    (root / "engine" / "infill.py").write_text("print('stays')\n")
    (root / ".gitignore").write_text("runs/\n")   # as the project's: the parts travel only as carried paths
    (root / "runs" / "part0").mkdir(parents=True)
    (root / "runs" / "part0" / "corpus.xz").write_bytes(b"y" * 100_000)
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "t"]):
        subprocess.run(["git", *cmd], cwd=root, check=True, capture_output=True)
    return root


def test_aside_moves_what_the_gpu_does_not_read_and_back_restores_it(repo: Path, tmp_path: Path):
    aside = tmp_path / "aside"
    out = _run(repo, aside, "aside", "runs/part0")
    assert out.returncode == 0, out.stderr
    for rel in ASIDE_PATHS:
        assert not (repo / rel).exists() and (aside / rel).exists(), rel
    assert (repo / "engine" / "infill.py").exists()
    # the tree left is the script, .gitignore and engine/infill.py (a few KB); the carried part is 100,000 bytes
    assert out.stdout.startswith("tree 0.0 MiB + carried 0.1 MiB = 0.1 MiB (limit 64)"), out.stdout
    back = _run(repo, aside, "back")
    assert back.returncode == 0, back.stderr
    assert all((repo / rel).read_bytes() == b"x" * 200_000 for rel in ASIDE_PATHS)
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout
    assert status == "", status


def test_aside_never_moves_over_an_earlier_aside_and_back_never_over_the_tree(repo: Path, tmp_path: Path):
    aside = tmp_path / "aside"
    assert _run(repo, aside, "aside").returncode == 0
    (repo / "benchmarks" / "results").mkdir(parents=True)   # a checkout restored it meanwhile
    (repo / "benchmarks" / "results" / "latency.json").write_text("{}")
    again = _run(repo, aside, "aside")
    assert again.returncode == 1 and "earlier aside" in again.stderr
    back = _run(repo, aside, "back")
    assert back.returncode == 1 and "left both" in back.stderr
    assert (aside / "benchmarks" / "results" / "latency.json").stat().st_size == 200_000   # nothing lost


def test_aside_says_when_the_tree_and_the_carried_part_are_over_64_mib(repo: Path, tmp_path: Path):
    with open(repo / "runs" / "part0" / "corpus.xz", "wb") as f:
        f.truncate(65 * 1024 * 1024)   # sparse: 65 MiB as du -b counts it
    out = _run(repo, tmp_path / "aside", "aside", "runs/part0")
    assert out.returncode == 1 and "over the limit" in out.stderr
