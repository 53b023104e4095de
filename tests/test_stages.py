"""Where each question was lost (``evals.stages``), on records made here by ``hopgraph run`` on
the scripted endpoint, one question per stage: rag that never retrieves a gold passage, one that
holds it and answers wrong, one right, one without gold evidence and one without a gold answer;
QD-C keeping one passage of three, so a retrieved gold passage is not kept; and rag through an
overlay whose answer prompt leaves the sources out, so a kept gold passage never reaches it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from scripted_server import ScriptedServer, by_template
from servers import hopgraph

from hopgraph.evals.run_record import read_run
from hopgraph.evals.stages import gold_answer_held, loss_stage, stage_counts, stage_of_each
from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.questions.datasets import Question, write_questions

RIVER = "The river Elm floods the valley meadows every spring."


def town(body: dict) -> str:
    """The town a request's question is about ("q-right" asks of town 3)."""
    found = re.findall(r"town (\d+)", json.dumps(body["messages"]).lower())
    return found[-1] if found else "?"


def short_answer(body: dict) -> str:
    """Town 3's founder; town 1's only through the overlay that asks to keep the name whole."""
    if "keep the name whole" in json.dumps(body["messages"]) and town(body) == "1":
        return "Person 1"
    return "person 3" if town(body) == "3" else "nobody"


def rerank(body: dict) -> float:
    """P(Yes): only the passage of town 5 is judged relevant, whatever was asked."""
    passage = body["messages"][0]["content"].split("Question:")[0]
    return 0.95 if "Town 5 was" in passage else 0.05


def long_answer(body: dict) -> str:
    """Town 1's answer names its founder, whom the short answer then drops."""
    asked = json.dumps(body["messages"]).lower()
    return "Person 1 founded Town 1 [1]." if "town 1?" in asked else "The sources say so [1]."


REPLIES = by_template(
    {
        "rag/answer": long_answer,
        "rag/short_answer": short_answer,
        "qdrag/decompose_qdc": json.dumps(
            {"replacements": [], "subquestions": ["Who founded Town 4?"]}
        ),
        "qdrag/rerank": rerank,
        "qdrag/sub_answer": "nobody",
    }
)


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("stages")
    items = [
        Item("text", f"k{i}", f"Town {i} was founded by person {i}.", title=f"Town {i}")
        for i in range(8)
    ]
    river = Item("text", "river", RIVER, title="Elm")
    KnowledgeBase(root / "kb").add([*items, river])
    ask, k3, k4 = "Who founded town {}?", [items[3].id], [items[4].id]
    write_questions(
        [
            Question("q-right", ask.format(3), ["person 3"], k3),
            Question("q-wrong", ask.format(4), ["person 4"], k4),
            Question("q-unretrieved", ask.format(6), ["person 6"], [river.id]),
            Question("q-no-evidence", ask.format(7), ["person 7"], []),
            Question("q-no-gold", ask.format(2), [], []),
        ],
        root / "rag.jsonl",
    )
    write_questions([Question("q-unkept", ask.format(4), ["person 4"], k4)], root / "qdc.jsonl")
    write_questions([Question("q-unseen", ask.format(4), ["person 4"], k4)], root / "bare.jsonl")
    choice = "Was town 5 founded by person 5 or person 6?"
    write_questions(
        [
            Question("q-dropped", ask.format(1), ["Person 1"], [items[1].id]),
            Question("q-choice", choice, ["person 5"], [items[5].id]),
        ],
        root / "held.jsonl",
    )
    overlay = root / "bare-prompts" / "rag"
    overlay.mkdir(parents=True)
    (overlay / "answer.j2").write_text("Answer from what you know.\n\nQuestion: {{ question }}\n")
    whole = root / "whole-prompts" / "rag"
    whole.mkdir(parents=True)
    (whole / "short_answer.j2").write_text(
        "Question: {{ question }}\nFull answer: {{ answer }}\nkeep the name whole.\nShort answer:"
    )
    runs = {
        "rag": ("--agent", "rag", "--questions", "rag.jsonl", "--set", "top_k=2"),
        "qdc": (
            "--agent",
            "qdrag",
            "--questions",
            "qdc.jsonl",
            "--set",
            "qdrag_mode=qdc",
            "--set",
            "qdrag_budget=1",
            "--set",
            "qdrag_retrieve_k=3",
        ),
        "held": ("--agent", "rag", "--questions", "held.jsonl", "--set", "top_k=2"),
        "whole": (
            "--agent",
            "rag",
            "--questions",
            "held.jsonl",
            "--set",
            "top_k=2",
            "--prompts",
            "whole-prompts",
        ),
        "bare": (
            "--agent",
            "rag",
            "--questions",
            "bare.jsonl",
            "--set",
            "top_k=2",
            "--prompts",
            "bare-prompts",
        ),
    }
    with ScriptedServer(REPLIES) as model:
        for name, args in runs.items():
            served = ("--base-url", model.base_url, "--model", "scripted")
            done = hopgraph("run", *args, "--kb", "kb", "--out", f"runs/{name}", *served, cwd=root)
            assert done.returncode == 0, done.stderr
    return root


def test_each_question_is_placed_at_the_first_stage_its_gold_evidence_was_lost(records):
    stages = {}
    for name in ("rag", "qdc", "bare"):
        stages |= stage_of_each(read_run(records / "runs" / name))
    assert stages == {
        "q-right": "right",
        "q-wrong": "in the prompt, answered wrong",
        "q-unretrieved": "not retrieved",
        "q-no-evidence": "wrong, no gold evidence",
        "q-no-gold": "no gold answer",
        "q-unkept": "retrieved, not kept",
        "q-unseen": "kept, not in the answer's prompt",
    }, stages
    counts = stage_counts(stage_of_each(read_run(records / "runs" / "rag")).values())
    assert list(counts) == [
        "not retrieved",
        "in the prompt, answered wrong",
        "right",
        "wrong, no gold evidence",
        "no gold answer",
    ]
    unkept = read_run(records / "runs" / "qdc").question("q-unkept")
    kept = [e.text for e in unkept.evidence() if e.kept]
    assert (
        kept == ["Town 5 was founded by person 5."] and loss_stage(unkept) == "retrieved, not kept"
    )


def test_eval_counts_the_stages_and_compare_names_the_stages_of_the_flips(records):
    shown = hopgraph("eval", "runs/rag", cwd=records)
    assert shown.returncode == 0, shown.stderr
    text = re.sub(r"\s+", " ", shown.stdout)
    assert "where questions were lost" in text, shown.stdout
    for stage, n in (
        ("not retrieved", 1),
        ("in the prompt, answered wrong", 1),
        ("right", 1),
        ("wrong, no gold evidence", 1),
        ("no gold answer", 1),
    ):
        assert re.search(rf"{re.escape(stage)} │ {n}\b", text), (stage, shown.stdout)
    assert "hopgraph view runs/rag" in shown.stdout  # where to open them
    flipped = hopgraph("compare", "runs/rag", "runs/bare", "--flips", cwd=records)
    assert flipped.returncode == 0, flipped.stderr
    assert "kept, not in the answer's prompt" in flipped.stdout, flipped.stdout


def test_eval_into_a_file_names_every_template_whole(records):
    """Output into a file or a pipe is 80 columns wide, and there the per-template table cut
    its names ("qdrag/decompose_q…"; on an MMAPG record "mmapg/ex…" three times over, rows no
    one could tell apart): the names stay whole, the numbers' headings wrap."""
    shown = hopgraph("eval", "runs/qdc", cwd=records, env={"COLUMNS": "80"})
    assert shown.returncode == 0, shown.stderr
    table = shown.stdout.split("by prompt template")[1].split("where questions were lost")[0]
    rows = [x.split("│")[1].strip() for x in table.splitlines() if x.startswith("│")]
    assert rows == ["qdrag/decompose_qdc", "qdrag/rerank", "rag/answer", "rag/short_answer"], (
        shown.stdout
    )


def test_eval_follows_a_wrong_answer_s_gold_answer_through_the_calls(records):
    """Which call dropped the answer itself: rag's long answer that never wrote the gold its
    passage held, and one that wrote it for the short answer to drop; a gold the question
    names (a comparison's choice) is in every prompt, so it is left out, as a right answer."""
    rag = read_run(records / "runs" / "rag")
    assert gold_answer_held(rag.question("q-wrong")) == {"rag/answer": "read"}
    assert gold_answer_held(rag.question("q-right")) is None
    held = read_run(records / "runs" / "held")
    assert gold_answer_held(held.question("q-dropped")) == {
        "rag/answer": "wrote",
        "rag/short_answer": "read",
    }
    assert held.question("q-choice").right is False
    assert gold_answer_held(held.question("q-choice")) is None
    shown = hopgraph("eval", "runs/held", "--wrong", cwd=records)
    assert shown.returncode == 0, shown.stderr
    line = next(x for x in shown.stdout.splitlines() if x.strip().startswith("q-dropped (wrong)"))
    assert line.endswith(
        "lost at: in the prompt, answered wrong; gold answer: rag/answer wrote it"
        " → rag/short_answer read it only"
    ), line
    text = re.sub(r"\s+", " ", shown.stdout)
    assert "where the gold answer of 1 wrong answer went" in text, shown.stdout
    assert re.search(r"rag/answer │ 1 │ 0 ", text), shown.stdout
    assert re.search(r"rag/short_answer │ 0 │ 1 ", text), shown.stdout
    assert hopgraph("eval", "runs/whole", cwd=records).returncode == 0
    flipped = hopgraph("compare", "runs/held", "runs/whole", "--flips", cwd=records)
    assert flipped.returncode == 0, flipped.stderr
    trail = "gold answer: rag/answer wrote it → rag/short_answer read it only"
    assert trail in re.sub(r"\s+", " ", flipped.stdout), flipped.stdout
    written = json.loads((records / "runs" / "held" / "metrics.json").read_text())
    assert written["gold_answer"] == {
        "q-dropped": {"rag/answer": "wrote", "rag/short_answer": "read"}
    }


def test_eval_keeps_the_stages_when_its_reader_stops_reading(records):
    """``hopgraph eval RUN | head`` ended at the first table with metrics.json written and its
    stages not, so the results pages and the viewer silently lost the run's stage counts: the
    stages are written with the scores, before anything is printed."""
    import subprocess
    import sys

    metrics = records / "runs" / "rag" / "metrics.json"
    metrics.unlink(missing_ok=True)
    hopgraph_bin = Path(sys.executable).with_name("hopgraph")
    with subprocess.Popen(
        [str(hopgraph_bin), "eval", "runs/rag"],
        cwd=records,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as proc:
        proc.stdout.close()  # the reader is gone before the first line
        proc.wait(timeout=300)
    written = json.loads(metrics.read_text())
    assert written["stages"]["q-unretrieved"] == "not retrieved", sorted(written)


def test_the_viewer_filters_a_run_s_questions_by_the_stage_they_were_lost_at(records):
    """``hopgraph view`` shows each question's stage (as ``eval`` wrote it) and filters by it,
    so a count of ``eval`` opens as the questions behind it."""
    import httpx
    from test_view import CHROMIUM, dom, start_view

    assert hopgraph("eval", "runs/rag", cwd=records).returncode == 0
    proc, url = start_view(records)
    try:
        rows = httpx.get(f"{url}api/questions", params={"run": "rag"}, timeout=60).json()["rows"]
        assert {r["id"]: r["stage"] for r in rows}["q-unretrieved"] == "not retrieved"
        one = {"run": "held", "id": "q-dropped"}
        opened = httpx.get(f"{url}api/question", params=one, timeout=60).json()
        assert opened["gold_answer"] == {"rag/answer": "wrote", "rag/short_answer": "read"}
        assert opened["stage"] == "in the prompt, answered wrong"  # from its trace, no eval needed
        both = {"a": "held", "b": "whole", "id": "q-dropped"}
        pair = httpx.get(f"{url}api/compare_question", params=both, timeout=60).json()
        assert [h["gold_answer"] for h in pair["held"]] == [opened["gold_answer"], None]
        if CHROMIUM is None:
            pytest.skip("headless Chromium is not installed (the API was checked)")
        page = dom(f"{url}#/run/rag?stage=not%20retrieved")
        assert "1 of 5 questions" in page and 'data-id="q-unretrieved"' in page
        assert 'data-id="q-right"' not in page and "lost at" in page
        page = dom(f"{url}#/run/held/q/q-dropped")
        trail = "gold answer: rag/answer wrote it → rag/short_answer read it only"
        assert trail in page and "lost at: in the prompt, answered wrong" in page, page[-3000:]
        assert trail in dom(f"{url}#/compare/held/whole/q/q-dropped")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_gold_answer_with_accents_is_followed_and_one_of_no_words_is_left_out():
    """Words are folded with their accents ("Müller" is not "m ller"); a gold with no word left
    once folded (punctuation only) is no answer to follow: it once matched every empty reply."""
    from hopgraph.evals.run_record import QuestionRecord
    from hopgraph.harness.trace import Call, Trace

    def call(template: str, prompt: str, reply: str) -> Call:
        return Call(
            index=0,
            node="n",
            role="r",
            template=template,
            model="m",
            kind="chat",
            messages=[{"role": "user", "content": prompt}],
            reply=reply,
            parsed=None,
            parse_error=None,
            sampling={},
            cached=False,
            prompt_tokens=0,
            completion_tokens=0,
            seconds=0.0,
            ended=0.0,
            attempts=1,
            error=None,
            served={},
            event={},
        )

    calls = [
        call("x/notes", "The Café Müller opened in 1921.", "Café Müller, 1921."),
        call("x/answer", "Notes: Café Müller, 1921.", ""),
        call("x/other", "About M ller and caf m ller.", "M ller."),
    ]
    for gold, held in ((["Café Müller"], {"x/notes": "wrote", "x/answer": "read"}), (["—"], None)):
        prediction = {"question": "Which café opened in 1921?", "gold": gold, "answer": "?"}
        q = QuestionRecord("q", prediction, {"em": 0.0, "f1": 0.0}, Trace([], calls=calls))
        assert gold_answer_held(q) == held, gold
    # a record kept without traces cannot say where its answers went ({} would say "nowhere")
    assert (
        gold_answer_held(QuestionRecord("q", prediction | {"gold": ["Müller"]}, {}, Trace([])))
        is None
    )
