import math

import pytest

from hopgraph.evals import metrics as m


def test_squad_normalisation_em_f1():
    assert m.normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert m.exact_match("the Paris.", ["Paris"]) == 1.0
    assert m.exact_match("Paris, France", ["Paris"]) == 0.0
    # pred tokens: paris france; gold: paris -> P=1/2, R=1 -> F1=2/3
    assert m.f1_score("Paris France", ["Paris"]) == pytest.approx(2 / 3)
    assert m.f1_score("Lyon", ["Paris", "Lyon city"]) == pytest.approx(2 / 3)
    assert m.f1_score("", ["x"]) == 0.0


def test_keyword_em_matches_whole_words():
    assert m.keyword_em("It was founded in 1412 by Odile.", ["1412"]) == 1.0
    assert m.keyword_em("14120 people", ["1412"]) == 0.0
    assert m.keyword_em("the blue thistle", ["Blue Thistle"]) == 1.0


def test_anls():
    assert m.anls("hello", "hello") == 1.0
    assert m.anls("helo", "hello") == pytest.approx(1 - 1 / 5)
    assert m.anls("abc", "xyz") == 0.0


@pytest.mark.parametrize(
    "pred, gold, fmt, expected",
    [  # MMLongBench-Doc's own eval_score rules
        ("42", "42", "Int", 1.0),
        ("42.0", "42", "Int", 1.0),
        ("There were 42 stores.", "42", "Int", 0.0),  # int(float(answer)) fails: no credit
        ("41", "42", "Int", 0.0),
        ("1,200", "1200", "Int", 0.0),
        ("3.14", "3.141", "Float", 1.0),  # within 1 %
        ("3.3", "3.141", "Float", 0.0),
        ("25%", "0.25", "Float", 1.0),  # the gold x100
        ("0.25", "25", "Float", 1.0),  # the gold /100
        ("$1.5", "1.5", "Float", 1.0),
        ("Not answerable", "Not answerable", "None", 1.0),
        ("42", "Not answerable", "None", 0.0),
        ("['a', 'b']", "['b', 'a']", "List", 1.0),
        ("b, a", "['a', 'b']", "List", 1.0),
        ("a, b, c", "['a', 'b']", "List", 0.0),  # lengths differ: no partial credit
        ("[3, 2, 1]", "[3, 2, 3]", "List", 0.0),
        ("['Paris', 'Lyon']", "['paris', 'lyons']", "List", pytest.approx(1 - 1 / 5)),
        ("Acme Corp", "ACME Corp.", "Str", pytest.approx(1 - 1 / 10)),
        ("2009-08", "2009-07", "Str", 0.0),  # a date matches exactly or not at all
        ("info@acme.com", "info@acme.org", "Str", 0.0),
        ('"Harbour Office"', "harbour office (main)", "Str", 1.0),  # cleaned
    ],
)
def test_mmlongbench_scoring(pred, gold, fmt, expected):
    assert m.mmlongbench_score(pred, gold, fmt) == expected


def test_retrieval_metrics_hand_computed():
    retrieved = ["a", "x", "b", "y"]
    gold = ["a", "b", "c"]
    assert m.recall_at_k(retrieved, gold, 3) == pytest.approx(2 / 3)
    assert m.precision_at_k(retrieved, gold, 2) == pytest.approx(1 / 2)
    assert m.mrr_at_k(["x", "b"], gold, 5) == pytest.approx(1 / 2)
    assert m.mrr_at_k(["x", "y"], gold, 5) == 0.0
    dcg = 1 + 1 / math.log2(4)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert m.ndcg_at_k(retrieved, gold, 3) == pytest.approx(dcg / idcg)
    assert m.set_recall_at_k(retrieved, ["a", "b"], 3) == 1.0
    assert m.set_recall_at_k(retrieved, ["a", "b"], 2) == 0.0
    assert m.recall_at_k(retrieved, [], 3) == 0.0


def test_alce_citation_recall_and_precision():
    facts = {"A": "Paris is in France", "B": "Paris has 2 million people", "C": "Bread is food"}

    def judge(evidence, claim):
        # supported when every fact the claim needs is in the evidence
        need = {
            "Paris is in France and has 2 million people": ["A", "B"],
            "Paris is in France": ["A"],
        }[claim]
        return all(facts[k] in evidence for k in need)

    pairs = [
        ("Paris is in France and has 2 million people", [facts["A"], facts["B"]]),  # both needed
        ("Paris is in France", [facts["A"], facts["C"]]),  # C is irrelevant
        ("Paris is in France", [facts["C"]]),  # unsupported
    ]
    recall, precision = m.citation_scores(pairs, judge)
    assert recall == pytest.approx(2 / 3)
    assert precision == pytest.approx(3 / 5)  # A,B ok; A ok, C not; C not
    assert m.citation_scores([], judge) == (0.0, 0.0)


def test_sentence_split():
    assert m.split_sentences("It is 5 [1]. Then more [2]! End") == [
        "It is 5 [1].",
        "Then more [2]!",
        "End",
    ]
    # abbreviations end no sentence; a trailing citation stays with its sentence
    answer = (
        "Homer's boss is known as Waylon J. Smithers Jr.'s employer, Mr. Burns. [1] "
        "He owns the plant [2]."
    )
    assert m.split_sentences(answer) == [
        "Homer's boss is known as Waylon J. Smithers Jr.'s employer, Mr. Burns. [1]",
        "He owns the plant [2].",
    ]


def test_alce_reads_three_citations_and_zeroes_out_of_range_ones():
    def judge(evidence, claim):
        return "fact" in evidence

    # four citations: only the first three are read (all irrelevant here)
    recall, precision = m.citation_scores([("claim", ["x", "y", "z", "fact"])], judge)
    assert (recall, precision) == (0.0, 0.0)
    # a supporting passage and a citation with nothing behind it: the sentence scores 0
    recall, precision = m.citation_scores([("claim", ["fact", None])], judge)
    assert (recall, precision) == (0.0, 0.0)
    recall, precision = m.citation_scores([("claim", ["fact"]), ("claim", [])], judge)
    assert (recall, precision) == (0.5, 1.0)


def test_alce_precision_leaves_out_of_range_sentences_out_of_its_denominator():
    """ALCE counts a sentence's citations toward precision only when all are in range: one
    supported single citation beside a sentence citing [1][9] of 5 passages is precision 1."""

    def judge(evidence, claim):
        return "fact" in evidence

    recall, precision = m.citation_scores([("claim", ["fact"]), ("claim", ["fact", None])], judge)
    assert (recall, precision) == (0.5, 1.0)
    # four in-range citations count three in the denominator, as ALCE truncates first
    recall, precision = m.citation_scores([("claim", ["fact", "x", "y", "fact"])], judge)
    assert recall == 1.0 and precision == pytest.approx(1 / 3)


def test_hotpotqa_f1_gives_yes_and_no_only_to_the_same_word():
    assert m.f1_score("yes it is", ["yes"]) == 0.0
    assert m.f1_score("no", ["no"]) == 1.0
    assert m.f1_score("yes", ["Yes."]) == 1.0
    assert m.f1_score("the Lund museum", ["Lund"]) == pytest.approx(2 / 3)


def test_score_prediction_kept_recall_and_mmlongbench_format():
    from hopgraph.evals.evaluate import score_prediction

    pred = {
        "answer": "42",
        "gold": ["42"],
        "type": "Int",
        "evidence": ["a", "b"],
        "retrieved": ["a", "x", "y", "b"],
        "contexts_ids": ["a", "x"],
        "llm_calls": 3,
    }
    s = score_prediction(pred)
    assert s["kept_recall"] == 0.5 and s["kept_contexts"] == 2
    assert s["recall@3"] == 0.5 and s["recall@5"] == 1.0 and s["mmlb_acc"] == 1.0 and s["em"] == 1.0
    assert s["llm_calls"] == 3
    assert "invalid_citations" not in s  # no cited response, nothing to count

    s = score_prediction(pred | {"response": "It is 42 [1][3]. Also [2, 7] and [12]."})
    assert s["invalid_citations"] == 3  # 3, 7 and 12 point past the two contexts


def test_restrict_recomputes_over_shared_questions():
    from hopgraph.evals.evaluate import restrict

    result = {"per_question": {"a": {"em": 1.0}, "b": {"em": 0.0}}, "overall": {"em": 0.5}}
    assert restrict(result, {"a"})["overall"] == {"em": 1.0}


def test_critical_path_depth_counts_sequential_rounds():
    from hopgraph.harness.cost import critical_path_depth

    assert critical_path_depth([]) == 0
    assert critical_path_depth([(0, 1), (1, 2), (2, 3)]) == 3  # back to back: 3 rounds
    assert critical_path_depth([(0, 1), (0.1, 0.9), (0.2, 1.5)]) == 1  # all overlap: 1 round
    # a decomposition, then 3 parallel rerankings, then an answer: 3 rounds, 5 calls
    calls = [(0, 1), (1.1, 2), (1.2, 2.5), (1.1, 1.9), (2.6, 3)]
    assert critical_path_depth(calls) == 3
    assert critical_path_depth([(0, 1), (0.5, 2), (1.2, 1.4), (2.1, 3)]) == 3


def test_score_prediction_carries_the_sittings_speed():
    from hopgraph.evals.evaluate import score_prediction

    speed = {"prefill_tokens_per_s": 41.3, "decode_tokens_per_s": 24.5}
    pred = {"id": "q", "answer": "a", "gold": ["a"], "seconds": 3.0, "speed": speed}
    assert score_prediction(pred) | speed == score_prediction(pred)
    del pred["speed"]  # a run recorded before sittings were timed
    assert "prefill_tokens_per_s" not in score_prediction(pred)


def test_a_citation_written_as_the_citation_engines_source_label_is_read():
    """LlamaIndex's citation engine labels its contexts "Source 1:", and the 1.5B model under
    its prompt cited "[Source 2]" or "Source 2" in 21 of 80 replies: ALCE's [n] parser read
    none of them, so each scored 0 however well its source supported it."""
    from hopgraph.evals.evaluate import citation_metrics, judged_key

    texts = {"k1": "Bonnie Tyler is a Welsh singer.", "k2": "Bonnie Tyler was born in 1951."}
    pred = {"contexts_ids": ["k1", "k2"], "response": "Bonnie Tyler was born in 1951. [Source 2]"}
    judged = []

    def judge(evidence, claim):
        judged.append((evidence, claim))
        return "1951" in evidence

    scores = citation_metrics(pred, texts, judge)
    assert scores == {"citation_recall": 1.0, "citation_precision": 1.0}
    assert judged == [(texts["k2"], "Bonnie Tyler was born in 1951.")]
    plain = pred | {"response": "Bonnie Tyler was born in 1951. [2]"}
    assert citation_metrics(plain, texts, judge) == scores
    assert judged_key(plain) == judged_key(pred)  # read alike, so judged alike
    said = pred | {"response": "She was born in 1951, as found in Source 2."}
    assert citation_metrics(said, texts, judge)["citation_recall"] == 1.0
    worded = pred | {"response": "Resource 2 says she was born in 1951."}  # not a citation
    assert citation_metrics(worded, texts, judge) == {
        "citation_recall": 0.0,
        "citation_precision": 0.0,
    }
