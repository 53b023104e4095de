"""benchmarks/kb_replay.py on an MMAPG record made here with a scripted model: a KB rebuilt with
one more item (as a machine that extracted MMAPG's triplets again gave one) shows the record's
questions the same candidates, so the record moves to it and resumes there; a KB that lost the
triplet a search matched does not, and the record stays where it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripted_server import ScriptedServer
from servers import started
from test_mmapg_graph import scripted, step

from hopgraph.graphs import every_context
from hopgraph.harness.run_folder import RunError, RunFolder, read_predictions
from hopgraph.harness.runner import Runner
from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.questions.datasets import Question, write_questions

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "kb_replay.py"
Context = every_context()


def town_kb(path: Path, *, triplet: bool = True, river: bool = False) -> Path:
    """Six towns and Ada Moor; the triplet that names Town 3's founder; the river, far from
    every question, where a rebuild gave one more item."""
    kb = KnowledgeBase(path)
    kb.add(
        [
            Item("text", f"t{i}", f"Town {i} was founded by person {i}.", title=f"Town {i}")
            for i in range(6)
        ]
        + [Item("text", "ada", "Ada Moor was born in Lund.", title="Ada Moor")]
    )
    parent = kb.get([Item("text", "t3", "").id])[0]["id"]
    extra = [
        Item("text", "triplet:t3", "Town 3 founded by Ada Moor", title="Town 3", parent=parent)
    ]
    extra += [Item("text", "river", "The river Elm floods the valley meadows every spring.")]
    kb.add([x for x, on in zip(extra, (triplet, river), strict=True) if on])
    return path


def answer(tmp_path: Path, kb: Path, n: int) -> None:
    """MMAPG on the first ``n`` questions (a retrieval, then a stop) into ``tmp_path/run``."""
    qfile = tmp_path / "q.jsonl"
    asks = ["Where was the founder of Town 3 born?", "Who founded Town 3?"]
    write_questions([Question(f"q{i}", asks[i], ["Lund"]) for i in range(2)], qfile)
    plan = [step("retrieval", ["Q0"], "Find who founded Town 3"), step("stop")]
    with ScriptedServer(scripted(plan)) as server:
        knobs = {"mmapg_text_radius": 2.0, "mmapg_max_candidates": 3}
        ctx = Context(base_url=server.base_url, model="scripted", kb_dir=str(kb), **knobs)
        Runner("mmapg", tmp_path / "run", ctx).run(qfile, limit=n)


def replay(tmp_path: Path, kb: Path, name: str, *args: str) -> tuple[int, dict, str]:
    out = tmp_path / f"{name}.json"
    proc = started(tmp_path / "run", "--kb", kb, "--out", out, *args, script=SCRIPT)
    stdout, stderr = proc.communicate(timeout=300)
    return proc.returncode, json.loads(out.read_text()) if out.exists() else {}, stdout + stderr


def test_a_record_moves_to_a_rebuilt_kb_only_where_every_candidate_search_comes_back_the_same(
    tmp_path, monkeypatch
):
    answer(tmp_path, town_kb(tmp_path / "kb"), 1)
    recorded = RunFolder(tmp_path / "run").manifest()["kb"]["counts"]["text"]
    rebuilt = town_kb(tmp_path / "rebuilt", river=True)
    with pytest.raises(RunError, match="KB items"):  # the harness's own refusal, as in CI
        answer(tmp_path, rebuilt, 2)

    lost = town_kb(tmp_path / "lost", triplet=False)
    code, report, said = replay(tmp_path, lost, "lost", "--carry")
    assert code != 0 and "not carried: 1 step(s) came back otherwise" in said, said
    assert report == {}  # nothing written, the record untouched
    assert RunFolder(tmp_path / "run").manifest()["kb"]["counts"]["text"] == recorded

    code, report, said = replay(tmp_path, rebuilt, "rebuilt", "--carry")
    assert code == 0, said
    assert report["steps"] == report["same"] == 1 and report["questions"] == {"q0": 1}
    assert report["carried"]["from"]["text"] == recorded
    assert report["carried"]["to"]["text"] == recorded + 1
    assert "1 of 1 candidate steps over 1 questions came back the same" in said, said
    from hopgraph.presentation import results  # its results page names the move

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path / "records")
    (tmp_path / "records" / "kb-replay").mkdir(parents=True)
    (tmp_path / "rebuilt.json").rename(tmp_path / "records" / "kb-replay" / "rebuilt.json")
    kb = RunFolder(tmp_path / "run").manifest()["kb"]
    said = results._kb_move("MMAPG", "run", kb)
    assert f"first 1 question was answered on a build of this KB with {recorded} text" in said
    assert "`kb-replay/rebuilt.json`" in said and f"({recorded + 1} text items)" in said
    assert results._kb_move("MMAPG", "other", kb) == ""
    answer(tmp_path, rebuilt, 2)  # resumes on the rebuilt KB
    preds = read_predictions(tmp_path / "run" / "predictions.jsonl")
    assert sorted(preds) == ["q0", "q1"] and not preds["q1"]["error"]
