"""Issue 104 item 4: each role whose calls repeat within a question lays its prompt out so that
what the calls share comes first and what changes comes last; llama-server (and vLLM's prefix
cache) then reads the shared part once. Each test renders two calls as the method makes them
and checks that all the shared text lies in their common prefix."""

import os

from hopgraph.agents.mabdqa import JUDGE, JUDGE_P_YES
from hopgraph.agents.mmapg import EXAMINE_TEXT, PLANNER, shown
from hopgraph.config import Context

CTX = Context()
PASSAGE = "Ada Moor founded the harbour town in 1820 and ran its shipyard for forty years. " * 12


def shared(a: str, b: str) -> str:
    return a[: len(os.path.commonprefix([a, b]))]


def test_the_examinations_of_one_search_share_the_instruction_and_differ_in_their_source():
    instruction = "Find the year the harbour town of Ada Moor was founded."
    a, b = (
        EXAMINE_TEXT.render(CTX, instruction=instruction, title=t, text=f"{t}: {PASSAGE}")
        for t in ("Harbour town", "Ada Moor")
    )
    common = shared(a, b)
    assert instruction in common
    assert common.rstrip().endswith("Source (")  # only the source differs
    assert PASSAGE.strip() in a[len(common) :]


def test_the_page_judgements_of_one_question_share_the_question_and_differ_in_the_page():
    question = "How many shipyards did the harbour town have in 1850?"
    for role in (JUDGE, JUDGE_P_YES):
        a, b = (
            role.render(CTX, question=question, page=p, described=True, text=f"p{p} {PASSAGE}")
            for p in (3, 17)
        )
        common = shared(a, b)
        assert question in common, role.template
        assert PASSAGE.strip() not in common  # the page text comes after what is shared


def test_each_planning_step_extends_the_last_one_s_prompt():
    """The graph grows at the end of the planner's prompt: step n+1 re-reads only the new
    node and the closing line, not the instructions, question, plan or earlier nodes."""
    nodes = [
        {"id": "Q0", "type": "question", "parents": [], "content": "Who founded the harbour town?"},
        {
            "id": "R1",
            "type": "retrieval",
            "parents": ["Q0"],
            "instruction": "harbour town",
            "content": PASSAGE,
        },
    ]
    grown = [
        *nodes,
        {
            "id": "A2",
            "type": "answer",
            "parents": ["R1"],
            "instruction": "who",
            "content": "Ada Moor",
        },
    ]
    plan = "1. Find the harbour town. 2. Find who founded it."
    a, b = (
        PLANNER.render(
            CTX,
            question=nodes[0]["content"],
            plan=plan,
            nodes=shown(n),
            single_path=False,
            repeated=None,
        )
        for n in (nodes, grown)
    )
    common = shared(a, b)
    assert PASSAGE.strip() in common and plan in common
    assert len(a) - len(common) < 40  # only the closing line of the shorter prompt
