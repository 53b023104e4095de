"""A fresh clone can re-score and compare every committed record (issue 59 item 8): one script
makes every question file the records need from ../shared/data, byte for byte, and a missing one
is named with the command that makes it, not the `hopgraph run` that answered it."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from conftest import SHARED_DATA
from servers import hopgraph

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not SHARED_DATA.exists(), reason="../shared/data is absent")
def test_a_fresh_copy_of_the_records_reads_every_record_scored_with_no_extra_command(
    tmp_path, monkeypatch
):
    """On a fresh clone every committed record read unscored (73 of 73 in the viewer) until a
    script the README never named was run: each record's question file is now re-made from
    the benchmark data its manifest's set came from (``question-sets.json``), byte for byte;
    without the data, the one line says which data it needs and where it looked."""
    from hopgraph.harness.run_folder import RunFolder
    from hopgraph.presentation.viewer import RunView

    checkout = tmp_path / "checkout"
    shutil.copytree(
        ROOT / "benchmarks",
        checkout / "benchmarks",
        ignore=shutil.ignore_patterns("__pycache__", "validation.jsonl"),
    )
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("HOPGRAPH_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    a, b = "benchmarks/results/hotpotqa/n100/rag", "benchmarks/results/hotpotqa/n100/qdc"

    out = hopgraph(
        "compare",
        a,
        b,
        "--questions",
        cwd=checkout,
        env={"XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    assert out.returncode != 0
    assert "made from hotpotqa/hotpotqa_train.json (hotpotqa)" in out.stderr, out.stderr
    assert "../shared/data" in out.stderr

    (tmp_path / "shared").symlink_to(SHARED_DATA.parent)  # the data beside the clone
    out = hopgraph(
        "compare",
        a,
        b,
        "--questions",
        cwd=checkout,
        env={"XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    assert out.returncode == 0, out.stderr
    assert "    rag: '" in out.stdout and "    qdc: '" in out.stdout  # each flip, both answers
    unscored = []
    for manifest in sorted((checkout / "benchmarks" / "results").rglob("manifest.json")):
        m = RunFolder(manifest.parent).manifest() or {}
        if not m.get("questions") or not (manifest.parent / "predictions.jsonl").exists():
            continue
        view = RunView(manifest.parent)
        rows = view.rows()
        if view.note() or (rows and not any(r["gold"] for r in rows)):
            unscored.append(f"{manifest.parent.relative_to(checkout)}: {view.note()[:200]}")
    assert unscored == []


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
    (record / "manifest.json").write_text(
        json.dumps({"agent": "rag", "questions": "runs/q.jsonl", "questions_sha256": digest})
    )
    (record / "predictions.jsonl").write_text(json.dumps({"id": "q0", "answer": "answer-0"}) + "\n")
    monkeypatch.chdir(repo / "benchmarks")
    assert scored_predictions(Path("results/r"))["q0"]["gold"] == ["answer-0"]
    (repo / "runs/q.jsonl").write_text("")  # other content is not taken for it
    with pytest.raises(Exception, match="needs its question file"):
        scored_predictions(Path("results/r"))
