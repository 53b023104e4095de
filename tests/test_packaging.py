import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_one_import_name_and_no_top_level_collisions(tmp_path):
    code = (
        "import importlib.util, hopgraph, hopgraph.graphs, hopgraph.models;"
        "print(hopgraph.__version__);"
        "names = ('agents','tools','memory','graphs','models','evals','prompts','config','cli');"
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


def test_langgraph_json_lists_compiled_graphs():
    from hopgraph.graphs import GRAPHS, load_graph

    spec = json.loads((ROOT / "langgraph.json").read_text())
    assert set(spec["graphs"]) == set(GRAPHS)
    for name, target in spec["graphs"].items():
        path, attr = target.split(":")
        assert (ROOT / path).is_file() and attr == "graph"
        assert load_graph(name).get_graph().nodes


def test_prompt_templates_ship_with_the_package():
    from hopgraph.prompts import Prompts

    names = Prompts().names()
    assert "common/repair_json" in names and "direct/answer" in names
