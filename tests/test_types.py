"""Issue 73 item 2: below the graphs a knob is read through the type that declares it. mypy
over agents/, tools/, memory/ and models/ (pyproject's [tool.mypy]) finds a knob read on a
value whose type lacks it (``ctx.mabdqa_page_chars`` on the shared Context) as attr-defined."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("agents", "tools", "memory", "models")


def mypy(root: Path, tmp: Path) -> subprocess.CompletedProcess:
    pytest.importorskip("mypy")
    (tmp / "hopgraph").symlink_to(root)  # the repository root is the package
    packages = [a for layer in LAYERS for a in ("-p", f"hopgraph.{layer}")]
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp / "cache"), *packages],
        cwd=tmp, env={"MYPYPATH": str(tmp), "PATH": "/usr/bin:/bin"}, capture_output=True,
        text=True, timeout=900,
    )  # fmt: skip


def test_the_layers_below_graphs_type_check(tmp_path):
    done = mypy(ROOT, tmp_path)
    assert done.returncode == 0, done.stdout[-4000:]


def test_a_knob_read_on_the_shared_context_is_found(tmp_path):
    """A copy of agents/mabdqa.py that reads a knob on ``Context`` fails the check, naming it."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for part in ROOT.iterdir():
        if part.name not in ("agents", ".git", ".venv", ".typecheck", ".mypy_cache"):
            (tree / part.name).symlink_to(part)
    (tree / "agents").mkdir()
    for f in (ROOT / "agents").glob("*.py"):
        (tree / "agents" / f.name).symlink_to(f)
    bad = tree / "agents" / "mabdqa.py"
    text = bad.read_text().replace(
        "most = knobs_of(ctx, MABDQASettings).mabdqa_page_chars", "most = ctx.mabdqa_page_chars"
    )
    assert "ctx.mabdqa_page_chars" in text
    bad.unlink()
    bad.write_text(text)
    (tmp_path / "check").mkdir()
    done = mypy(tree, tmp_path / "check")
    assert done.returncode == 1
    assert '"Context" has no attribute "mabdqa_page_chars"' in done.stdout
