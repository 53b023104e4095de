"""A knob is read through the type that declares it: its graph's Context (``settings/``) in
graphs/, ``knobs_of(ctx, Settings)`` below. mypy over every layer of the package (pyproject's
[tool.mypy], the Makefile's ``TYPED``) finds a knob read on a value whose type lacks it
(``ctx.mabdqa_page_chars`` on the shared Context) as attr-defined, and an Optional value used
before its check as union-attr.

Both checks read one tree of links to the checkout: mypy runs once cold over it, then again
with one file of it changed, from the first run's cache, so only that file is checked anew."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# every package of the checkout and its top-level modules (setup.py is the build's)
LAYERS = tuple(sorted(p.parent.name for p in ROOT.glob("*/__init__.py")))
MODULES = tuple(sorted(p.stem for p in ROOT.glob("*.py") if p.stem not in ("__init__", "setup")))
GOOD = "most = knobs_of(ctx, MABDQASettings).mabdqa_page_chars"
BAD = "most = ctx.mabdqa_page_chars"


def mypy(tmp: Path) -> subprocess.CompletedProcess:
    packages = [a for layer in LAYERS for a in ("-p", f"hopgraph.{layer}")]
    packages += [a for module in MODULES for a in ("-m", f"hopgraph.{module}")]
    packages += ["-m", "hopgraph"]
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp / "cache"),
            *packages,
        ],
        cwd=tmp,
        env={"MYPYPATH": str(tmp), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=900,
    )


SWAPS = {
    "a knob on Context": ("agents", "mabdqa.py", GOOD, BAD),
    "a knob its graph's Context lacks": (
        "graphs",
        "mmapg.py",
        "return 2 * ctx.mmapg_max_iterations + 6",
        "return 2 * ctx.mmapg_max_iteration + 6",
    ),
    "an Optional used unchecked": (
        "memory",
        "indexing.py",
        "if registry is not None and _live(was) and was.hash == version:",
        "if _live(was) and was.hash == version:",
    ),
}
"""Each check's one edit: the folder and file, the line as it is and as the edit writes it."""


@pytest.fixture(scope="module")
def checks(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """mypy over the checkout as it is, then over it with each ``SWAPS`` edit alone (the
    package ``hopgraph`` is a folder of links to the checkout's parts, the edited folders
    folders of links to each file, so that one file can be swapped)."""
    pytest.importorskip("mypy")
    tmp = tmp_path_factory.mktemp("types")
    tree = tmp / "hopgraph"
    tree.mkdir()
    edited = {folder for folder, *_ in SWAPS.values()}
    for part in ROOT.iterdir():
        if part.name not in (*edited, ".git", ".venv", ".typecheck", ".mypy_cache"):
            (tree / part.name).symlink_to(part)
    for folder in edited:
        (tree / folder).mkdir()
        for f in (ROOT / folder).glob("*.py"):
            (tree / folder / f.name).symlink_to(f)
    done = {"as it is": mypy(tmp)}
    for name, (folder, file, good, bad) in SWAPS.items():
        path = tree / folder / file
        text = path.read_text()
        assert good in text
        path.unlink()
        path.write_text(text.replace(good, bad))
        done[name] = mypy(tmp)
        path.unlink()
        path.symlink_to(ROOT / folder / file)
    return done


def test_every_layer_type_checks(checks):
    done = checks["as it is"]
    assert done.returncode == 0, done.stdout[-4000:]


def test_make_typecheck_checks_every_layer():
    """The Makefile's ``TYPED`` names every package and module this test checks."""
    text = (ROOT / "Makefile").read_text()
    typed = text.split("\nTYPED =", 1)[1].replace("\\\n", " ").split("\n", 1)[0].split()
    named = {(flag, name) for flag, name in zip(typed[::2], typed[1::2], strict=True)}
    assert named == {("-p", f"hopgraph.{p}") for p in LAYERS} | {
        ("-m", f"hopgraph.{m}") for m in MODULES
    } | {("-m", "hopgraph")}


def test_an_optional_used_before_its_check_is_found(checks):
    """union-attr is on: the registry (None for a server KB without one) touched where the
    check is dropped is an error."""
    done = checks["an Optional used unchecked"]
    assert done.returncode == 1, done.stdout[-4000:]
    assert 'Item "None" of "SourceRegistry | None" has no attribute "touch"' in done.stdout


def test_a_knob_read_on_the_shared_context_is_found(checks):
    """A copy of agents/mabdqa.py that reads a knob on ``Context`` fails the check, naming it."""
    done = checks["a knob on Context"]
    assert done.returncode == 1, done.stdout[-4000:]
    assert '"Context" has no attribute "mabdqa_page_chars"' in done.stdout


def test_a_knob_its_graphs_context_lacks_is_found(checks):
    """A graph reads its knobs on its Context class (``settings/mmapg.py``), so a misspelt
    one is an error, not an unchecked attribute of a class made at run time."""
    done = checks["a knob its graph's Context lacks"]
    assert done.returncode == 1, done.stdout[-4000:]
    assert '"MMAPGContext" has no attribute "mmapg_max_iteration"' in done.stdout
