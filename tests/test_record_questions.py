"""A fresh clone can re-score and compare every committed record (issue 59 item 8): one script
makes every question file the records need from ../shared/data, byte for byte, and a missing one
is named with the command that makes it, not the `hopgraph run` that answered it."""

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import SHARED_DATA
from servers import hopgraph

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not SHARED_DATA.exists(), reason="../shared/data is absent")
def test_a_fresh_copy_of_the_records_compares_after_the_one_preparation_script(tmp_path):
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "benchmarks", checkout / "benchmarks",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    (checkout / ".venv").symlink_to(ROOT / ".venv")
    (tmp_path / "shared").symlink_to(SHARED_DATA.parent)
    a, b = "benchmarks/results/hotpotqa/n100/rag", "benchmarks/results/hotpotqa/n100/qdc"

    out = hopgraph("compare", a, b, "--questions", cwd=checkout)
    assert out.returncode != 0
    assert "benchmarks/prepare_questions.sh makes every question file" in out.stderr
    assert "hopgraph run" not in out.stderr.split("re-create it with")[-1]

    made = subprocess.run(["bash", "benchmarks/prepare_questions.sh"], cwd=checkout,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert made.returncode == 0, made.stderr
    for manifest in (checkout / "benchmarks" / "results").rglob("manifest.json"):
        m = json.loads(manifest.read_text())
        if not m.get("questions", "").startswith("runs/"):
            continue
        qfile = checkout / m["questions"]
        assert qfile.is_file(), f"{manifest}: {m['questions']} not made"
        assert hashlib.sha256(qfile.read_bytes()).hexdigest() == m["questions_sha256"], manifest
    out = hopgraph("compare", a, b, "--questions", cwd=checkout)
    assert out.returncode == 0, out.stderr
    assert "    rag: '" in out.stdout and "    qdc: '" in out.stdout  # each flip, both answers
    made_by = json.loads((checkout / "runs" / "hotpot-q.jsonl.made.json").read_text())
    assert made_by["command"].startswith("hopgraph data convert hotpotqa")


def test_a_record_s_question_file_is_found_from_anywhere_below_its_repository(
    tmp_path, monkeypatch
):
    """The manifest names its question file relative to the checkout (``runs/q.jsonl``), and
    it was read relative to wherever ``view`` or ``eval`` started: a viewer started inside
    ``benchmarks/`` showed every record unscored. A folder above the record is tried too."""
    from hopgraph.harness.run_folder import scored_predictions
    from hopgraph.questions.datasets import Question, write_questions

    repo = tmp_path / "checkout"
    (repo / "runs").mkdir(parents=True)
    write_questions([Question("q0", "What about town 0?", ["answer-0"], [])], repo / "runs/q.jsonl")
    record = repo / "benchmarks" / "results" / "r"
    record.mkdir(parents=True)
    digest = hashlib.sha256((repo / "runs/q.jsonl").read_bytes()).hexdigest()
    (record / "manifest.json").write_text(json.dumps({"agent": "rag", "questions": "runs/q.jsonl",
                                                      "questions_sha256": digest}))  # fmt: skip
    (record / "predictions.jsonl").write_text(json.dumps({"id": "q0", "answer": "answer-0"}) + "\n")
    monkeypatch.chdir(repo / "benchmarks")
    assert scored_predictions(Path("results/r"))["q0"]["gold"] == ["answer-0"]
    (repo / "runs/q.jsonl").write_text("")  # other content is not taken for it
    with pytest.raises(Exception, match="needs its question file"):
        scored_predictions(Path("results/r"))
