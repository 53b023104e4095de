import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_one_import_name_and_no_top_level_collisions(tmp_path):
    code = (
        "import importlib.util, hopgraph, hopgraph.graphs, hopgraph.models;"
        "print(hopgraph.__version__);"
        "names = ('agents','tools','memory','graphs','models','harness','evals','questions',"
        "'optimizer','presentation','prompts','config','cli','pysyntax','settings');"
        "print([m for m in names if importlib.util.find_spec(m) is not None])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    version, collisions = out.stdout.split("\n")[:2]
    assert version == "0.1.0"
    assert collisions == "[]"


def test_the_cli_starts_without_the_model_layer(tmp_path):
    """Every command (``hopgraph --help`` too) loads the CLI; the model client, the vector
    engine, torch and LangGraph load inside the commands that use them."""
    heavy = ("openai", "numpy", "torch", "chromadb", "langgraph", "httpx", "psycopg", "jinja2")
    code = f"import sys, hopgraph.cli; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_langgraph_json_and_the_entry_points_list_the_built_in_methods():
    """``graphs.BUILT_IN`` is the one list of methods: langgraph.json (what LangGraph's server
    reads) names exactly those graphs, each a compiled graph with a spec; pyproject's entry-point
    group is left to other packages' graphs."""
    import tomllib

    from hopgraph.graphs import BUILT_IN, load_graph, specs

    spec = json.loads((ROOT / "langgraph.json").read_text())
    assert list(spec["graphs"]) == list(BUILT_IN), "langgraph.json must list graphs.BUILT_IN"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "hopgraph.graphs" not in project.get("entry-points", {})
    assert [s for s in specs() if s in BUILT_IN] == list(BUILT_IN)
    for name, target in spec["graphs"].items():
        path, attr = target.split(":")
        assert (ROOT / path).is_file() and attr == "graph"
        assert load_graph(name).get_graph().nodes


def test_prompt_templates_ship_with_the_package():
    from hopgraph.prompts import Prompts

    names = Prompts().names()
    assert "common/repair_json" in names and "direct/answer" in names


def test_the_built_wheel_installs_and_every_command_it_ships_runs(tmp_path):
    """The wheel a user installs, not the editable tree: built from a copy of the sources, put
    into a fresh virtual environment (its dependencies are this one's, on its path), every
    module of it imports, and ``hopgraph --help`` and ``hopgraph results --check`` run against a
    copy of the records. A subpackage left out of the wheel (``hopgraph.presentation.results`` was,
    when pyproject listed them by hand) fails here."""
    import shutil
    import sysconfig

    src = tmp_path / "src"
    left_out = ("tests", "benchmarks", "docs", "examples", "demo", "runs", "kb", "build")
    ignore = shutil.ignore_patterns(".*", "*.egg-info", "__pycache__", *left_out)
    shutil.copytree(ROOT, src, ignore=ignore)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", tmp_path, src],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("hopgraph-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([*pip, "--python", python, "install", "--no-deps", wheel], check=True)

    code = (
        "import importlib, pkgutil, hopgraph;"
        "print(hopgraph.__file__);"
        "names = [m.name for m in pkgutil.walk_packages(hopgraph.__path__, 'hopgraph.')];"
        "[importlib.import_module(n) for n in names if not n.endswith('__main__')];"
        "print(len(names));"
        "from hopgraph.presentation.viewer import app as v;"  # hopgraph view's page and assets ship
        "assert all((v.STATIC / n).is_file() for n in ['index.html', *v.ASSETS]), 'no assets'"
    )
    out = subprocess.run([python, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    where, count = out.stdout.split()
    assert Path(where).is_relative_to(venv) and int(count) > 80
    hopgraph = venv / "bin" / "hopgraph"
    assert (
        "Usage"
        in subprocess.run([hopgraph, "--help"], capture_output=True, text=True, check=True).stdout
    )
    checkout = tmp_path / "checkout"
    # benchmarks' renderers import test helpers; a study of examples/' Self-Ask reads its code
    for folder in ("benchmarks", "docs", "tests", "examples"):
        shutil.copytree(
            ROOT / folder, checkout / folder, ignore=shutil.ignore_patterns("__py*", "node_modules")
        )
    done = subprocess.run(
        [hopgraph, "results", "--check"], cwd=checkout, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "is current" in done.stdout
