"""The README's "first ten minutes" block, run as written after the demo (made here as
``make demo`` makes it, against the scripted model instead of the embedded one): every command
exits 0; and the prompts guide's optimize example the same way. The README stays a door."""

import json
import re
import subprocess
import sys
from pathlib import Path

from scripted_server import ScriptedServer
from servers import as_written, docs_env

ROOT = Path(__file__).resolve().parents[1]


def first_ten_minutes() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"### The first ten minutes.*?```bash\n(.*?)```", text, re.S)
    assert block, "README has no first-ten-minutes block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def python_example() -> str:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"### The first ten minutes.*?```python\n(.*?)```", text, re.S)
    assert block, "README has no Python example beside the first ten minutes"
    return block.group(1)


def test_the_first_ten_minutes_work_as_the_readme_writes_them(tmp_path):
    lines = first_ten_minutes()
    assert lines[0] == "source .venv/bin/activate"
    with ScriptedServer() as model:
        env = docs_env(model.base_url)
        demo = [  # what `make demo` does
            "hopgraph data demo demo",
            "hopgraph index demo/corpus --kb demo/kb",
            "hopgraph run --agent rag --questions demo/questions.jsonl --kb demo/kb "
            "--out demo/runs/rag",
        ]
        for line in [*demo, *lines[1:]]:
            as_written(line.split("  #")[0].strip(), tmp_path, env, runs={"rag", "qdrag"})
        script = tmp_path / "example.py"
        script.write_text(python_example())
        out = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        assert "qdrag/answer" in out.stdout or "qdrag/" in out.stdout


def test_the_optimize_example_works_as_the_prompts_guide_writes_it(tmp_path):
    text = (ROOT / "docs" / "guides" / "prompts.md").read_text()
    block = re.search(r"## Optimize a prompt.*?```bash\n(.*?)```", text, re.S)
    assert block, "the prompts guide has no optimize example"
    with ScriptedServer(model="smollm2-135m") as model:
        env = docs_env(model.base_url, model="smollm2-135m")
        demo = ["hopgraph data demo demo", "hopgraph index demo/corpus --kb demo/kb"]
        for command in [*demo, *block.group(1).strip().splitlines()]:
            said = as_written(command, tmp_path, env)
    record = json.loads((tmp_path / "demo/opt/record.json").read_text())
    verdict = record["test"]  # a search that kept nothing has no verdict, and says so
    assert verdict["n"] == 4 and ("gap" in verdict or verdict["verdict"] is None)
    assert "em" in said  # eval's scores of the test arm


def test_the_readme_is_a_door_not_a_manual():
    """It was 58 kB: what hopgraph is comes first, the two commands, the first ten minutes, a
    line a method linking its page, and links into the manual."""
    text = (ROOT / "README.md").read_text()
    assert len(text) < 10_000
    first = text.split("\n\n")[1]
    assert "multimodal multi-hop question answering" in first
    for page in ("mmapg", "qdrag", "mabdqa", "polarmem", "grail"):
        assert f"(docs/methods/{page}.md)" in text
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).exists(), link


def test_the_getting_started_page_holds_the_readme_s_lines_not_a_second_version():
    """getting-started.md said its lines were run by this file, which read only the README,
    and its block differed. It now holds the README's two blocks as they are."""
    page = (ROOT / "docs" / "getting-started.md").read_text()
    bash = re.search(r"```bash\n(source \.venv.*?)```", page, re.S)
    python = re.search(r"```python\n(.*?)```", page, re.S)
    assert bash and [x for x in bash.group(1).splitlines() if x.strip()] == first_ten_minutes()
    assert python and python.group(1) == python_example()
