"""docs/tutorial.md, run as a user follows it: its Python block makes the folder, its CSV block
is the question file, and every line of its shell blocks exits 0, on a scripted model in place
of the embedded one. The page's claims about what the commands say are checked on their output."""

import re
from pathlib import Path

from scripted_server import ScriptedServer
from servers import as_written, docs_env

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "tutorial.md"


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(), re.S)


def test_the_tutorial_runs_as_written_from_a_folder_and_a_csv(tmp_path):
    (maker,), (csv,) = blocks("python"), blocks("csv")
    (tmp_path / "make_docs.py").write_text(maker)
    (tmp_path / "questions.csv").write_text(csv)
    lines = [ln.split("  #")[0].strip() for b in blocks("bash") for ln in b.splitlines()]
    assert lines[0] == "source .venv/bin/activate"
    said: dict[str, str] = {}
    with ScriptedServer() as model:
        env = docs_env(model.base_url)
        for command in ["python make_docs.py", *filter(None, lines[1:])]:
            said[command] = as_written(command, tmp_path, env, runs={"rag", "qdc"})
    index = next(v for k, v in said.items() if k.startswith("hopgraph index"))
    assert "4 added" in index and "page 2, text 2" in index  # two notes, a PDF's two pages
    assert "5 questions, 4 with a gold answer" in said["hopgraph eval runs/qdc"]
    trace = next(v for k, v in said.items() if k.startswith("hopgraph trace"))
    assert "Who built the lighthouse on the island the Kestrel ferry crosses to?" in trace
    wrong = said["hopgraph eval runs/rag --wrong"]
    assert "1 could not be judged (no gold answer" in wrong
