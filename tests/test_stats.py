"""The paired statistics of `hopgraph compare` and RESULTS.md, against scipy on hand-made pairs
and against the verdicts RESULTS.md has committed; `compare` end to end on two runs."""

import json
import subprocess

import numpy as np
import pytest
from scipy.stats import binom, binomtest
from scripted_server import ScriptedServer, by_template
from servers import hopgraph

from hopgraph.config import Context
from hopgraph.evals.stats import (
    critical_counts,
    needed_questions,
    paired,
    paired_scores,
    sign_test_power,
)
from hopgraph.harness.runner import Runner
from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.presentation import results
from hopgraph.questions.datasets import Question, write_questions


def test_counts_and_sign_test_against_scipy():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, 60) / 3  # many ties, as answer scores have
    b = np.clip(a + rng.choice([-1 / 3, 0, 0, 1 / 3], 60), 0, 1)
    r = paired(list(a), list(b))
    better, worse = int((b > a).sum()), int((b < a).sum())
    assert (r.better, r.worse, r.tied, r.n) == (better, worse, 60 - better - worse, 60)
    assert r.sign_p == pytest.approx(binomtest(better, better + worse, 0.5).pvalue)
    assert r.mcnemar_p is None  # not a 0/1 metric
    flipped = paired(list(a), list(b), lower=True)  # seconds: smaller is better
    assert (flipped.better, flipped.worse) == (worse, better)


def test_edge_cases_ties_all_equal_and_one_question():
    same = paired([0.5, 1.0, 0.0], [0.5, 1.0, 0.0])
    assert (same.better, same.worse, same.tied, same.sign_p) == (0, 0, 3, 1.0)
    assert same.ci == (0.0, 0.0) and same.needed_n is None and same.verdict == "not significant"
    one = paired([0.0], [1.0])
    assert one.sign_p == 1.0 and one.ci is None and one.mcnemar_p == 1.0
    assert one.needed_n == needed_questions(1, 0, 0)
    with pytest.raises(ValueError, match="equal lengths"):
        paired([1.0], [1.0, 0.0])


def test_mcnemar_is_the_exact_test_on_discordant_pairs():
    a = [1] * 20 + [0] * 12 + [1] * 3 + [0] * 5
    b = [1] * 20 + [0] * 12 + [0] * 3 + [1] * 5
    r = paired(a, b)
    assert r.mcnemar_p == pytest.approx(binomtest(5, 8, 0.5).pvalue)


def test_missing_questions_pair_only_what_both_scored():
    a = {"q1": {"f1": 1.0}, "q2": {"f1": 0.0}, "q3": {"f1": 0.5}, "q4": {"em": 1.0}}
    b = {"q2": {"f1": 1.0}, "q3": {"f1": 0.5}, "q4": {"f1": 1.0}, "q5": {"f1": 0.0}}
    assert paired_scores(a, b, "f1") == (["q2", "q3"], [0.0, 0.5], [1.0, 0.5])


def test_bootstrap_interval_is_seeded_and_covers_the_mean():
    rng = np.random.default_rng(0)
    a, b = list(rng.random(50)), list(rng.random(50) + 0.1)
    r1, r2 = paired(a, b, seed=1), paired(a, b, seed=1)
    assert r1.ci == r2.ci and r1.ci[0] < r1.diff < r1.ci[1]
    assert paired(a, b, seed=2).ci != r1.ci


def test_needed_questions_is_the_smallest_n_with_80_percent_power():
    for m in range(1, 120):  # the critical count, by brute force over scipy's test
        brute = next((k for k in range(m // 2 + 1, m + 1) if binomtest(k, m).pvalue <= 0.05), None)
        assert critical_counts(np.array([m]))[0] == (brute if brute else m // 2 + 1) or not brute
    share = 6 / 7  # QD-R against rag on F1: 6 better, 1 worse, 23 tied of 30
    n = needed_questions(6, 1, 23)
    m = round(n * 7 / 30)
    ms = np.arange(1, m + 1)
    power = sign_test_power(ms, share)
    assert power[-1] >= 0.8 > power[:-1].max()
    k = critical_counts(np.array([m]))[0]  # power by hand at that m
    assert power[-1] == pytest.approx(binom.sf(k - 1, m, share) + binom.cdf(m - k, m, share))
    assert needed_questions(3, 3, 10) is None and needed_questions(0, 0, 5) is None


def test_the_committed_verdicts_come_out_of_the_same_module():
    """RESULTS.md's QD-C against rag (4 better, 1 worse of 40, p = 0.375; QD-C stops at 40) and
    MMAPG full against single path (5 / 7 of 40, p = 0.774; both stop at 40), recomputed from
    the records."""
    page = "\n".join(results.render_pages().values())
    assert "better on 4, worse on 1 of the 40 questions both finished; sign test p = 0.375" in page
    assert "better on 5, worse on 7 of the 40 questions both finished; sign test p = 0.774" in page
    assert binomtest(4, 5).pvalue == pytest.approx(0.375)
    assert binomtest(5, 12).pvalue == pytest.approx(0.7744140625)


def test_compare_prints_verdicts_and_the_flipped_questions(tmp_path):
    kb = tmp_path / "kb"
    KnowledgeBase(kb).add([Item("text", f"k{i}", f"Town {i} has {i} bridges.") for i in range(6)])
    qfile = tmp_path / "q.jsonl"
    write_questions(
        [Question(f"q{i}", f"How many bridges has town {i}?", [str(i)]) for i in range(4)], qfile
    )

    def script(wrong: set[str]):
        def short(body):
            n = json.dumps(body["messages"]).split("bridges has town ")[1][0]
            return "none" if n in wrong else n

        return by_template({"rag/answer": "It has that many [1].", "rag/short_answer": short})

    for name, wrong in (("a", {"1"}), ("b", {"2", "3"})):
        with ScriptedServer(script(wrong)) as server:
            ctx = Context(base_url=server.base_url, model="scripted", kb_dir=str(kb))
            Runner("rag", tmp_path / name, ctx).run(qfile)
    cli = ["compare", tmp_path / "a", tmp_path / "b"]
    out = hopgraph(*cli, "--questions")
    assert out.returncode == 0, out.stderr
    assert "paired, against a" in out.stdout and "1/2/1" in out.stdout  # em: b better on q1 only
    lost, gained = out.stdout.split("em: right -> wrong (2)")[1].split("em: wrong -> right (1)")
    assert "q2" in lost and "q3" in lost and "'none'" in lost and "q1" in gained
    page = tmp_path / "flips.html"
    out = hopgraph(*cli, "--format", "html", "--html", page)
    assert out.returncode == 0, out.stderr
    html = page.read_text()
    assert "right → wrong (2)" in html and "wrong → right (1)" in html
    assert "href='a/report.html#q2'" in html and (tmp_path / "b" / "report.html").exists()
    assert html.count("<svg") == 2  # quality against cost, and the win / loss strip
    if __import__("shutil").which("chromium"):
        browse = [*CHROMIUM, f"--user-data-dir={tmp_path / 'p'}", "--dump-dom", page.as_uri()]
        out = subprocess.run(browse, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and out.stdout.count("<svg") == 2
        assert "right → wrong (2)" in out.stdout and "b vs a" in out.stdout


CHROMIUM = [
    "chromium",
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.mark.skipif(
    __import__("shutil").which("chromium") is None,
    reason="chromium not installed (.ci/run installs it)",
)
def test_the_plots_show_in_a_real_browser(tmp_path, monkeypatch):
    """The results pages' plots, written beside the pages, and the comparison page with its
    plots: Chromium renders each as an SVG with the points, bars and cells they should hold."""
    results.write(tmp_path)
    figures = sorted((tmp_path / "plots").glob("*.svg"))
    text = "\n".join(p.read_text() for p in tmp_path.glob("*.md"))
    shown = [
        line.split("(plots/")[1].rstrip(")") for line in text.splitlines() if line.startswith("![")
    ]
    assert sorted(shown) == [f.name for f in figures] and len(figures) >= 4
    cost = next(f for f in figures if f.name.startswith("every-method") and "cost" in f.name)
    flags = [f"--user-data-dir={tmp_path / 'profile'}"]
    out = subprocess.run(
        [*CHROMIUM, *flags, "--dump-dom", cost.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0 and "<svg" in out.stdout
    for label in ("rag", "QD-C", "QD-R", "MMAPG", "LLM calls per question"):
        assert label in out.stdout  # matplotlib writes text as text
    shot = tmp_path / "cost.png"
    subprocess.run(
        [*CHROMIUM, *flags, f"--screenshot={shot}", "--window-size=1100,400", cost.as_uri()],
        capture_output=True,
        timeout=120,
    )
    assert shot.exists() and shot.stat().st_size > 10_000


def test_a_column_identical_to_the_base_plots_a_zero_bar():
    """The n100 table reads rag's record for dense: its interval, rag's mean plus a zero
    difference, lands a rounding away from its own mean, which matplotlib refused as a
    negative error bar, so `hopgraph results` failed."""
    from hopgraph.evals.stats import paired
    from hopgraph.presentation import plots

    f1 = [1.0, 0.0, 0.5, 0.4, 1.0, 0.0, 0.6667, 1.0, 0.25, 0.0, 1.0, 0.8] * 5  # 60 questions
    r = paired(f1, f1)
    mean = float(np.mean(f1))
    interval = (r.mean_a + r.ci[0], r.mean_a + r.ci[1])
    points = [
        plots.Point("rag", mean, {"llm_calls": 2.0}),
        plots.Point("dense", sum(f1) / len(f1), {"llm_calls": 2.0}, interval),
    ]
    assert "<svg" in plots.quality_cost(points, "f1")
