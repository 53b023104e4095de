"""MAB-DQA's LLM-free machinery against hand-computed values (Eq. 1, 2, 4, 8, 9, 10) and the
bandit on planted problems."""

import numpy as np
import pytest

from hopgraph.tools.mabdqa.bandit import Arms, arm_confidence, bandit_retrieve, composite_score
from hopgraph.tools.mabdqa.page_hypergraph import (
    Hypergraph,
    build_hypergraph,
    late_interaction,
    page_graph,
)


def vecs(*rows):
    return np.array(rows, dtype=np.float64).reshape(-1, 2)


def test_late_interaction_sums_each_query_vectors_best_match():  # Eq. 1
    q = vecs([1, 0], [0, 1])
    pages = [vecs([1, 0], [0.6, 0.8]), vecs([0.5, 0.5]), np.zeros((0, 2))]
    # page 0: max(1, .6) + max(0, .8) = 1.8; page 1: .5 + .5; a page without text: 0
    assert late_interaction(q, pages) == pytest.approx([1.8, 1.0, 0.0])


def test_page_graph_links_pages_at_theta_g():  # Eq. 2
    pages = [vecs([1, 0]), vecs([0.9, 0.1], [1, 0]), vecs([0, 1]), np.zeros((0, 2))]
    adj = page_graph(pages, 0.8)
    # cos(p0, p1) = mean (.95, .05) normalised -> .9986; p2 is orthogonal; p3 has no text
    assert adj == [{1}, {0}, set(), set()]
    assert page_graph(pages, 0.999) == [set(), set(), set(), set()]


# Two atoms along the two axes, one vector per page: LI(q1, p) = a, LI(q2, p) = b and the global
# query (both atoms' vectors) scores a + b.
PAGES = [vecs(p) for p in ([0.9, 0.1], [0.8, 0.0], [0.1, 0.9], [0.5, 0.6], [0.0, 0.7], [0.3, 0.3])]
ATOMS = [vecs([1, 0]), vecs([0, 1])]


def test_hyperedges_keep_pages_outside_the_global_set_or_ranked_better():  # Eq. 3-4
    h = build_hypergraph(["q1", "q2"], ATOMS, PAGES, theta_g=0.99, theta_h=3)
    # C_1 = [0, 1, 3], C_2 = [2, 4, 3], C_b = [3, 0, 2] (1.1, 1.0, 1.0; ties by page order).
    # rank_b: p3 1, p0 2, p2 3. Page 3 ranks 3rd under each atom but 1st globally: dropped.
    assert h.subqueries == ["q1", "q2", "q1 q2"]
    assert h.edges == [[0, 1], [2, 4], [3, 0, 2]]
    assert h.li[2] == pytest.approx([0.8, 0.4, 0.8, 1.0, 0.2, 0.0])  # min-max of a + b
    assert h.arms_of(0) == [0, 2] and h.degree(0) == 2 + len(h.graph[0])
    atoms_only = build_hypergraph(
        ["q1", "q2"], ATOMS, PAGES, theta_g=0.99, theta_h=3, atoms_only=True
    )
    assert atoms_only.edges == [[0, 1, 3], [2, 4, 3]] and len(atoms_only.subqueries) == 2


def test_composite_score_and_arm_updates_by_hand():  # Eq. 8-10
    h = build_hypergraph(["q1", "q2"], ATOMS, PAGES, theta_g=0.99, theta_h=3, with_page_graph=False)
    arms = Arms.uniform(3)
    assert arm_confidence(h, arms, 3) == pytest.approx(0.5)
    # page 3: max_j LI = 1.0 (global arm); judged 0.5; degree 1 of max 2; s_cb 0.5
    # 0.2 * 1.0 + 0.8 * 0.5 + 0.1 * (0.25 * 0.5 + 0.75 * 0.5) = 0.65
    assert composite_score(
        h, arms, 3, 0.5, alpha=0.8, beta=0.1, lam=0.75, max_degree=2
    ) == pytest.approx(0.65)
    arms.update(h.arms_of(0), 0.75)  # page 0 sits in arms 0 and 2
    assert arms.a == pytest.approx([1.75, 1, 1.75]) and arms.b == pytest.approx([1.25, 1, 1.25])
    assert arm_confidence(h, arms, 0) == pytest.approx(1.75 / 3)
    assert arm_confidence(h, arms, 5) == 0.0  # in no hyperedge


def planted(n_arms=3, per_arm=10):
    """Disjoint hyperedges, flat LI: only the judgements can tell the arms apart."""
    edges = [list(range(j * per_arm, (j + 1) * per_arm)) for j in range(n_arms)]
    n = n_arms * per_arm
    return Hypergraph(
        [f"aspect {j}" for j in range(n_arms)],
        np.zeros((n_arms, n)),
        edges,
        [set() for _ in range(n)],
    )


def test_the_posterior_moves_to_the_arm_whose_pages_are_relevant():
    h = planted()
    walk = bandit_retrieve(
        h, lambda p: 1.0 if 10 <= p < 20 else 0.0, m=15, alpha=0.8, beta=0.1, lam=0.75, seed=42
    )
    means = walk.arms.mean()
    assert int(np.argmax(means)) == 1 and means[1] > 0.8 and means[0] < 0.5 and means[2] < 0.5
    in_arm_1 = [s["page"] for s in walk.steps if 10 <= s["page"] < 20]
    assert len(in_arm_1) >= 10  # most of the budget went where the evidence is
    assert set(walk.ranking[:10]) == set(range(10, 20))
    # reproducible with the seed
    again = bandit_retrieve(
        planted(),
        lambda p: 1.0 if 10 <= p < 20 else 0.0,
        m=15,
        alpha=0.8,
        beta=0.1,
        lam=0.75,
        seed=42,
    )
    assert [s["page"] for s in again.steps] == [s["page"] for s in walk.steps]


def test_m_beyond_the_page_count_and_a_one_page_document():
    h = build_hypergraph(["q"], [vecs([1, 0])], [vecs([1, 0])], theta_g=0.8, theta_h=10)
    calls = []
    walk = bandit_retrieve(h, lambda p: calls.append(p) or 1.0, m=20, alpha=0.8, beta=0.1, lam=0.75)
    assert calls == [0] and walk.ranking == [0] and len(walk.steps) == 1
    h = build_hypergraph(["q1", "q2"], ATOMS, PAGES, theta_g=0.8, theta_h=10)
    walk = bandit_retrieve(h, lambda p: 0.0, m=50, alpha=0.8, beta=0.1, lam=0.75)
    assert sorted(walk.judged) == list(range(6)) and len(walk.steps) == 6


def test_pages_without_text_and_bad_input():
    empty = [np.zeros((0, 2)) for _ in range(3)]
    h = build_hypergraph(["q"], [vecs([1, 0])], empty, theta_g=0.8, theta_h=2)
    assert h.li.max() == 0.0 and h.graph == [set(), set(), set()]
    walk = bandit_retrieve(h, lambda p: 0.5, m=2, alpha=0.8, beta=0.1, lam=0.75)
    assert len(walk.judged) == 2
    with pytest.raises(ValueError, match="no pages"):
        build_hypergraph(["q"], [vecs([1, 0])], [], theta_g=0.8, theta_h=2)
    with pytest.raises(ValueError, match="one vector set per subquery"):
        build_hypergraph(["q", "r"], [vecs([1, 0])], PAGES, theta_g=0.8, theta_h=2)


def test_a_walk_continues_where_it_stopped():
    h = planted()
    first = bandit_retrieve(h, lambda p: 1.0 if p < 10 else 0.0, m=4, alpha=0.8, beta=0.1, lam=0.75)
    more = bandit_retrieve(
        h,
        lambda p: 1.0 if p < 10 else 0.0,
        m=4,
        alpha=0.8,
        beta=0.1,
        lam=0.75,
        arms=first.arms,
        judged=first.judged,
        start=first.steps[-1]["page"],
        seed=43,
    )
    assert len(more.judged) == 8 and set(first.judged) < set(more.judged)


def test_a_batched_walk_judges_each_round_concurrently_in_ceil_m_over_b_rounds():
    """mabdqa_batch = 4: every round's four judgements are in flight together (a barrier of
    four would time out otherwise), m = 15 takes 4 rounds instead of 15, no page is judged
    twice, and the posterior still finds the relevant arm."""
    import threading

    barrier = threading.Barrier(4, timeout=60)
    in_flight = []

    def judge(p):
        in_flight.append(p)
        if len(in_flight) <= 12:  # the three full rounds meet at the barrier
            barrier.wait()
        return 1.0 if 10 <= p < 20 else 0.0

    walk = bandit_retrieve(planted(), judge, m=15, alpha=0.8, beta=0.1, lam=0.75, seed=42, batch=4)
    pages = [s["page"] for s in walk.steps]
    assert len(pages) == 15 and len(set(pages)) == 15
    assert [s["round"] for s in walk.steps] == [1] * 4 + [2] * 4 + [3] * 4 + [4] * 3
    assert int(np.argmax(walk.arms.mean())) == 1
    assert len(set(walk.ranking[:10]) & set(range(10, 20))) >= 8
    one = bandit_retrieve(
        planted(),
        lambda p: 1.0 if 10 <= p < 20 else 0.0,
        m=15,
        alpha=0.8,
        beta=0.1,
        lam=0.75,
        seed=42,
        batch=1,
    )
    assert [s["round"] for s in one.steps] == list(range(1, 16))  # the paper's walk


def document(seed=7, n_pages=60, dim=96, arms=4):
    """A real-sized document: 60 pages of 25 unit vectors, four atoms of 6 vectors, and the
    question's own 8 vectors."""
    rng = np.random.default_rng(seed)

    def unit(n):
        v = rng.normal(size=(n, dim))
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    pages = [unit(25) for _ in range(n_pages)]
    atoms = [unit(6) for _ in range(arms)]
    h = build_hypergraph([f"a{j}" for j in range(arms)], atoms, pages, theta_g=0.3, theta_h=10)
    return h, late_interaction(unit(8), pages)


def hand_made():
    """Six pages, three arms: arm 0 holds pages 0 and 2, arm 1 pages 1 and 3, arm 2 pages 0, 1
    and 4; page 5 is in none. max_j LI(Q_j, p) = 1.0, 1.0, 0.5, 0.5, 0.2, 0.0."""
    li = np.array([[1.0, 0.0, 0.5, 0.0, 0.0, 0.0],
                   [0.0, 0.4, 0.0, 0.5, 0.0, 0.0],
                   [0.3, 1.0, 0.1, 0.1, 0.2, 0.0]])  # fmt: skip
    return Hypergraph(["a0", "a1", "a2"], li, [[0, 2], [1, 3], [0, 1, 4]], [set()] * 6)


def test_every_page_is_ranked_by_eq_8_with_its_own_degree_and_arms():  # Eq. 8-10
    """Page 0 judged relevant, page 1 not: arms 0 and 2 gain, arms 1 and 2 lose (Eq. 10), so
    E[Beta] = 2/3, 1/3, 1/2. Pages 2 and 3 are unjudged with equal LI: page 2 sits in the
    strong arm's hyperedge, page 3 in the weak one's, and Eq. 8-9 tell them apart (the
    expected judgement, 0.5, stands in for s_vlm). alpha 0.8, beta 0.1, lambda 0.75, max
    degree 2:
      p0: 0.2*1.0 + 0.8*1.0 + 0.1*(0.25*2/2 + 0.75*(2/3+1/2)/2) = 1.06875
      p2: 0.2*0.5 + 0.8*0.5 + 0.1*(0.25*1/2 + 0.75*2/3)       = 0.5625
      p3: 0.2*0.5 + 0.8*0.5 + 0.1*(0.25*1/2 + 0.75*1/3)       = 0.5375
      p4: 0.2*0.2 + 0.8*0.5 + 0.1*(0.25*1/2 + 0.75*1/2)       = 0.49
      p5: 0.2*0.0 + 0.8*0.5 + 0.1*(0.25*0   + 0.75*0)         = 0.4
      p1: 0.2*1.0 + 0.8*0.0 + 0.1*(0.25*2/2 + 0.75*(1/3+1/2)/2) = 0.25625"""
    h = hand_made()
    arms = Arms.uniform(3)
    arms.update(h.arms_of(0), 1.0)
    arms.update(h.arms_of(1), 0.0)
    walk = bandit_retrieve(
        h,
        lambda p: pytest.fail("m = 0 judges nothing"),
        m=0,
        alpha=0.8,
        beta=0.1,
        lam=0.75,
        arms=arms,
        judged={0: 1.0, 1: 0.0},
    )
    assert walk.ranking == [0, 2, 3, 4, 5, 1]
    assert walk.scores == pytest.approx([1.06875, 0.5625, 0.5375, 0.49, 0.4, 0.25625])


def test_a_judge_that_tells_nothing_leaves_the_ranking_without_judgements():
    """A judge that gives every page 0.5 (Beta(1, 1)'s mean) moves no arm's mean and is what
    an unjudged page is expected to get: the walk ranks as it does with m = 0."""
    h, _ = document()
    none = bandit_retrieve(h, lambda p: pytest.fail("m = 0"), m=0, alpha=0.8, beta=0.1, lam=0.75)
    flat = bandit_retrieve(h, lambda p: 0.5, m=6, alpha=0.8, beta=0.1, lam=0.75)
    assert len(flat.judged) == 6 and flat.ranking == none.ranking
    # a page judged relevant rises to the top; one judged irrelevant falls below the
    # unjudged pages of at least its LI and degree
    seen = []

    def first_liked(p):
        seen.append(p)
        return 1.0 if len(seen) == 1 else 0.0

    walk = bandit_retrieve(h, first_liked, m=6, alpha=0.8, beta=0.1, lam=0.75)
    assert walk.ranking[0] == seen[0]
    assert all(
        walk.ranking.index(p) > walk.ranking.index(q)
        for p in seen[1:]
        for q in none.ranking[:3]
        if q not in walk.judged
    )


def test_aspect_subqueries_read_a_json_list_as_a_list():
    """A reply ["male", "female", "page 17"] gave the subquery `["male`."""
    from hopgraph.agents.mabdqa import aspect_phrases

    assert aspect_phrases('["male", "female", "page 17"]') == ["male", "female", "page 17"]
    assert aspect_phrases('Aspects: ["revenue 2019", "net margin"]') == [
        "revenue 2019",
        "net margin",
    ]
    assert aspect_phrases("revenue 2019, net margin\nstaff") == [
        "revenue 2019",
        "net margin",
        "staff",
    ]
    assert aspect_phrases('["unclosed, list') == ["unclosed", "list"]
