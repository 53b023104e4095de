import math

import pytest

from hopgraph.tools.qdrag import (
    PlanError,
    allocate,
    entropy,
    equal_split,
    keep_contexts,
    parse_plan,
    ready,
    resolved,
)


def test_entropy_hand_computed():
    assert entropy([0.0, 0.0]) == pytest.approx(math.log(2))  # softmax of ties is uniform
    p = [math.exp(1) / (math.exp(1) + 1), 1 / (math.exp(1) + 1)]
    assert entropy([1.0, 0.0]) == pytest.approx(-sum(x * math.log(x) for x in p))
    assert entropy([0.7]) == pytest.approx(0.0)
    assert entropy([]) == 0.0


def test_allocation_follows_entropy_shares():
    # E = 3 : 1 with N = 8 -> 6 and 2
    assert allocate({"a": 3.0, "b": 1.0}, 8) == {"a": 6, "b": 2}
    # N = 5 over 0.5/0.3/0.2 -> 2.5, 1.5, 1.0 -> floors 2,1,1; the spare one goes to a (tie, first)
    assert allocate({"a": 0.5, "b": 0.3, "c": 0.2}, 5) == {"a": 3, "b": 1, "c": 1}


def test_ties_one_question_and_all_zero():
    assert allocate({"a": 1.0, "b": 1.0}, 5) == {"a": 3, "b": 2}  # ties: earlier question first
    assert allocate({"only": 0.4}, 5) == {"only": 5}
    assert allocate({"a": 0.0, "b": 0.0, "c": 0.0}, 6) == {"a": 2, "b": 2, "c": 2}
    assert sum(allocate({"a": 2.0, "b": 1e-9, "c": 1e-9}, 5).values()) == 5
    assert allocate({"a": 2.0, "b": 1e-9, "c": 1e-9}, 5) == {"a": 5, "b": 0, "c": 0}
    assert allocate({"a": 1.0, "b": 1.0, "c": 1.0}, 2) == {"a": 1, "b": 1, "c": 0}  # |Q| > N
    assert equal_split(["x", "y"], 4) == {"x": 2, "y": 2}


def test_six_equally_uncertain_subquestions_share_a_budget_of_five():
    """The raw question and five subquestions, each reranking the same 20 candidates with the
    same scores: N = 5 contexts are kept, not one per (sub)question (it kept 7 of 5 before)."""
    scores = [round(0.9 - 0.04 * i, 2) for i in range(20)]
    per_q = {f"Q{j}": {f"c{(i + 3 * j) % 20}": s for i, s in enumerate(scores)} for j in range(6)}
    alloc = allocate({q: entropy(list(s.values())) for q, s in per_q.items()}, 5)
    assert sum(alloc.values()) == 5 and sorted(alloc.values()) == [0, 1, 1, 1, 1, 1]
    assert len(keep_contexts(per_q, alloc)) == 5


def test_kept_contexts_merge_duplicates_and_refill_the_freed_slot():
    scores = {"q1": {"c1": 0.9, "c2": 0.8, "c3": 0.1}, "q2": {"c2": 0.95, "c4": 0.7}}
    # q2 has no third of its own: the slot goes to the best context left (c3, via q1)
    assert keep_contexts(scores, {"q1": 2, "q2": 2}) == ["c1", "c2", "c4", "c3"]
    scores["q2"]["c5"] = 0.6
    assert keep_contexts(scores, {"q1": 2, "q2": 2}) == ["c1", "c2", "c4", "c5"]
    assert keep_contexts(scores, {"q1": 1, "q2": 1}) == ["c1", "c2"]


def test_plan_with_nested_dependencies_is_ordered_and_resolved():
    plan = parse_plan(
        [
            {"id": "Q3", "question": "When was <Ans_of_Q2> founded?"},
            {"id": "Q1", "question": "Who wrote Glass Harbour?"},
            {"id": "Q2", "question": "Which school did <Ans_of_Q1> attend?"},
        ]
    )
    assert [s["id"] for s in plan] == ["Q1", "Q2", "Q3"]
    answers = {}
    waves = []
    while wave := ready(plan, answers):
        waves.append([s["id"] for s in wave])
        for s in wave:
            answers[s["id"]] = {"Q1": "Ada Moor", "Q2": "Lund Academy", "Q3": "1820"}[s["id"]]
    assert waves == [["Q1"], ["Q2"], ["Q3"]]
    assert resolved(plan[2], answers) == "When was Lund Academy founded?"


def test_independent_subquestions_form_one_wave():
    plan = parse_plan(
        [{"id": "Q1", "question": "Height of A?"}, {"id": "Q2", "question": "Height of B?"}]
    )
    assert [s["id"] for s in ready(plan, {})] == ["Q1", "Q2"]


def test_cycle_is_refused():
    with pytest.raises(PlanError, match="cycle"):
        parse_plan(
            [{"id": "Q1", "question": "x <Ans_of_Q2>"}, {"id": "Q2", "question": "y <Ans_of_Q1>"}]
        )


def test_unknown_placeholder_and_duplicates_are_refused():
    with pytest.raises(PlanError, match="Ans_of_Q7"):
        parse_plan([{"id": "Q1", "question": "Who is <Ans_of_Q7>?"}])
    with pytest.raises(PlanError, match="twice"):
        parse_plan([{"id": "Q1", "question": "a"}, {"id": "q1", "question": "b"}])
    with pytest.raises(PlanError, match="empty"):
        parse_plan([{"id": "Q1", "question": " "}])


def test_the_budget_keeps_n_distinct_contexts_whenever_candidates_remain():
    """QD-C's shape: the raw question and its subquestions rerank the same 10 retrieved
    contexts; a later question whose favourites were all kept must not lose its slots."""
    contexts = [f"c{i}" for i in range(10)]
    scores = {
        "raw": {c: 1 - i / 10 for i, c in enumerate(contexts)},
        "Q1": {c: 1 - i / 10 for i, c in enumerate(contexts[:4])},  # only what raw kept
        "Q2": {c: 1 - i / 10 for i, c in enumerate(contexts[:3])},
        "Q3": {"c9": 0.9},
    }
    alloc = {"raw": 2, "Q1": 3, "Q2": 3, "Q3": 2}
    kept = keep_contexts(scores, alloc)
    assert len(kept) == len(set(kept)) == 10
    # raw: c0 c1; Q1: c2 c3 (c0 kept); Q2: none left; Q3: c9; 5 free slots by best score
    assert kept == ["c0", "c1", "c2", "c3", "c9", "c4", "c5", "c6", "c7", "c8"]
    assert len(keep_contexts(scores, {"raw": 20})) == 10  # never more than there are
