"""Question files as users have them: a CSV with ``question,answer`` columns (one row without
an answer), a JSON array, other column names through ``--fields``, a bad row named by file and
line with the rest kept; and gold optional everywhere: ``eval``, ``--wrong``, ``compare`` and
``view`` say how many questions a score is over."""

from __future__ import annotations

import json
import subprocess

import pytest
from scripted_server import ScriptedServer, by_template
from servers import hopgraph

from hopgraph.memory.files import Skipped
from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.questions.datasets import FieldSpec, made_id, read_questions

REPLIES = by_template({"rag/answer": "Ada Moor founded it [1].", "rag/short_answer": "Ada Moor"})


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("qfiles")
    KnowledgeBase(root / "kb").add(
        [Item("text", "k1", "Ada Moor founded the town of Vell.", title="Vell")]
    )
    (root / "q.csv").write_text(
        "question,answer,topic\n"
        "Who founded Vell?,Ada Moor,history\n"
        "What is Vell known for?,,culture\n"
    )
    return root


def run(root, *args: str) -> subprocess.CompletedProcess:
    with ScriptedServer(REPLIES) as model:
        served = ("--base-url", model.base_url, "--model", "scripted")
        done = hopgraph("run", "--agent", "rag", "--kb", "kb", *args, *served, cwd=root)
    assert done.returncode == 0, done.stderr
    return done


def test_a_csv_with_an_unanswered_row_runs_and_eval_says_how_many_had_gold(folder):
    run(folder, "--questions", "q.csv", "--out", "runs/csv")
    shown = hopgraph("eval", "runs/csv", "--wrong", cwd=folder)
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "2 questions, 1 with a gold answer (the answer scores are over it)" in text, text
    assert "0 wrong or failed; 1 could not be judged (no gold answer:" in text
    preds = [json.loads(line) for line in (folder / "runs/csv/predictions.jsonl").open()]
    assert [p["id"] for p in preds] == [
        made_id("Who founded Vell?"),
        made_id("What is Vell known for?"),
    ]
    run(folder, "--questions", "q.csv", "--out", "runs/csv2")
    compared = hopgraph("compare", "runs/csv", "runs/csv2", cwd=folder)
    assert compared.returncode == 0, compared.stderr
    assert "1 of its 2 answered questions have no gold answer" in compared.stdout

    from hopgraph.presentation.viewer import RunView

    summary = RunView(folder / "runs/csv").summary("csv")
    assert summary["metrics"]["em"] == 1.0 and (summary["scored"], summary["questions"]) == (1, 2)


def test_other_column_names_a_json_array_and_a_bad_row(folder, tmp_path):
    (tmp_path / "q.csv").write_text(
        "qid,Query,Gold,Pages\n7,Who founded Vell?,Ada Moor | A. Moor,k1\n8,too,many,cells,here\n"
    )
    spec = FieldSpec.parse("id=qid,question=Query,answers=Gold,evidence=Pages")
    (q,), (bad,) = read_questions(tmp_path / "q.csv", spec)
    assert (q.id, q.answers, q.evidence, q.meta) == ("7", ["Ada Moor", "A. Moor"], ["k1"], {})
    assert bad.where == f"{tmp_path / 'q.csv'}:3" and "5 cells, the header has 4" in bad.reason
    with pytest.raises(ValueError, match="'query' is not a question field"):
        FieldSpec.parse("query=Query")
    row = {"question": "Who founded Vell?", "answer": "Ada Moor", "source": "x"}
    (tmp_path / "q.json").write_text(json.dumps([row]))
    (q,), _ = read_questions(tmp_path / "q.json")
    assert q.answers == ["Ada Moor"] and q.meta == {"source": "x"}
    # a run reads through the same mapping, and eval scores with it (the manifest keeps it)
    (folder / "renamed.csv").write_text("Query,Gold\nWho founded Vell?,Ada Moor\n")
    run(
        folder,
        "--questions",
        "renamed.csv",
        "--fields",
        "question=Query,answers=Gold",
        "--out",
        "runs/renamed",
    )
    manifest = json.loads((folder / "runs/renamed/manifest.json").read_text())
    assert manifest["questions_fields"] == {"question": "Query", "answers": "Gold"}
    assert hopgraph("eval", "runs/renamed", cwd=folder).returncode == 0
    assert json.loads((folder / "runs/renamed/metrics.json").read_text())["overall"]["em"] == 1.0
    refused = hopgraph(
        "run",
        "--agent",
        "rag",
        "--kb",
        "kb",
        "--questions",
        "renamed.csv",
        "--fields",
        "Query",
        "--out",
        "runs/x",
        cwd=folder,
    )
    assert refused.returncode == 2 and "write FIELD=COLUMN" in refused.stderr
    assert not (folder / "runs/x").exists()


def test_a_record_copied_out_of_the_checkout_is_still_scored(tmp_path):
    """A committed record copied elsewhere showed unscored: its question file was re-made only
    for records under benchmarks/results. It is now found by its sha256 through the registry
    of hopgraph's own checkout (and then kept in the cache by its hash)."""
    import shutil
    from pathlib import Path

    record = Path(__file__).resolve().parents[1] / "benchmarks/results/evidence/demo/rag"
    shutil.copytree(record, tmp_path / "rag", ignore=shutil.ignore_patterns("metrics.json"))
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    shown = hopgraph("eval", "rag", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    metrics = json.loads((tmp_path / "rag" / "metrics.json").read_text())
    assert metrics["with_gold"] == 14 and metrics["overall"]["em"] == 0.5
    assert list((tmp_path / "cache" / "hopgraph" / "questions").glob("*.jsonl"))


def test_a_csv_a_spreadsheet_saved_in_another_encoding_costs_only_its_bad_rows(folder, tmp_path):
    """A CSV saved as Windows-1252 (a spreadsheet's plain "CSV" on Windows) stopped the whole
    run with "'utf-8' codec can't decode byte 0xe9", naming neither file nor line; a UTF-16 one
    (its "Unicode" CSV) likewise. Now the UTF-16 file is read by its byte-order mark, and in the
    other each row that is not UTF-8 is named by line and column, the rest kept."""
    rows = [f"Who founded town {n}?,Founder {n}" for n in range(200)]
    rows[57] = "Who founded Café Vell?,Ada Moor"
    text = "question,answer\n" + "\n".join(rows) + "\n"
    (tmp_path / "cp1252.csv").write_bytes(text.encode("cp1252"))
    kept, (bad,) = read_questions(tmp_path / "cp1252.csv")
    assert len(kept) == 199 and "Café" not in " ".join(q.question for q in kept)
    assert bad.where == f"{tmp_path / 'cp1252.csv'}:59"
    assert "not UTF-8 (byte 0xe9 in column 'question')" in bad.reason
    (tmp_path / "utf16.csv").write_bytes(text.encode("utf-16"))
    kept, bad = read_questions(tmp_path / "utf16.csv")
    assert len(kept) == 200 and not bad and kept[57].question == "Who founded Café Vell?"
    (tmp_path / "header.csv").write_bytes("Frage,Réponse\nx,y\n".encode("cp1252"))
    assert read_questions(tmp_path / "header.csv") == (
        [],
        [Skipped(str(tmp_path / "header.csv"), "the header row is not UTF-8 (byte 0xe9)")],
    )
    (folder / "cp1252.csv").write_bytes(
        "question,answer\nWho founded Vell?,Ada Moor\nCafé?,x\n".encode("cp1252")
    )
    done = run(folder, "--questions", "cp1252.csv", "--out", "runs/cp1252")
    assert "cp1252.csv:3" in done.stdout + done.stderr and "not UTF-8" in done.stdout + done.stderr
    assert len((folder / "runs/cp1252/predictions.jsonl").read_text().splitlines()) == 1
