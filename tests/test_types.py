"""Below the graphs a knob is read through the type that declares it. mypy over agents/,
tools/, memory/ and models/ (pyproject's [tool.mypy]) finds a knob read on a value whose type
lacks it (``ctx.mabdqa_page_chars`` on the shared Context) as attr-defined.

Both checks read one tree of links to the checkout: mypy runs once cold over it, then again
with one file of it changed, from the first run's cache, so only that file is checked anew."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("agents", "tools", "memory", "models")
GOOD = "most = knobs_of(ctx, MABDQASettings).mabdqa_page_chars"
BAD = "most = ctx.mabdqa_page_chars"


def mypy(tmp: Path) -> subprocess.CompletedProcess:
    packages = [a for layer in LAYERS for a in ("-p", f"hopgraph.{layer}")]
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp / "cache"), *packages],
        cwd=tmp, env={"MYPYPATH": str(tmp), "PATH": "/usr/bin:/bin"}, capture_output=True,
        text=True, timeout=900,
    )  # fmt: skip


@pytest.fixture(scope="module")
def checks(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """mypy over the checkout as it is, then over it with agents/mabdqa.py reading a knob on
    ``Context`` (the package ``hopgraph`` is a folder of links to the checkout's parts, its
    agents/ a folder of links to each file, so that one file can be swapped)."""
    pytest.importorskip("mypy")
    tmp = tmp_path_factory.mktemp("types")
    tree = tmp / "hopgraph"
    tree.mkdir()
    for part in ROOT.iterdir():
        if part.name not in ("agents", ".git", ".venv", ".typecheck", ".mypy_cache"):
            (tree / part.name).symlink_to(part)
    (tree / "agents").mkdir()
    for f in (ROOT / "agents").glob("*.py"):
        (tree / "agents" / f.name).symlink_to(f)
    done = {"as it is": mypy(tmp)}
    bad = tree / "agents" / "mabdqa.py"
    text = bad.read_text()
    assert GOOD in text
    bad.unlink()
    bad.write_text(text.replace(GOOD, BAD))
    done["a knob on Context"] = mypy(tmp)
    return done


def test_the_layers_below_graphs_type_check(checks):
    done = checks["as it is"]
    assert done.returncode == 0, done.stdout[-4000:]


def test_a_knob_read_on_the_shared_context_is_found(checks):
    """A copy of agents/mabdqa.py that reads a knob on ``Context`` fails the check, naming it."""
    done = checks["a knob on Context"]
    assert done.returncode == 1, done.stdout[-4000:]
    assert '"Context" has no attribute "mabdqa_page_chars"' in done.stdout
