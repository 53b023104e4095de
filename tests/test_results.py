"""docs/results/ is generated from the committed records and must be current; the paired
sign test behind every verdict, by hand."""

import math

import pytest

from hopgraph.evals.stats import sign_counts
from hopgraph.presentation import results


def test_the_committed_results_pages_are_what_the_records_give():
    assert results.stale() == [], "docs/results/ is stale: run `hopgraph results` and commit it"


def test_results_are_a_page_a_study_with_an_index_of_verdicts_and_no_wall():
    """RESULTS.md was one 98 kB page: now an index naming every study with its verdicts, and
    a page each, none of them a wall."""
    pages = results.render_pages()
    tables = results.all_tables()
    assert len(pages) == len(tables) + 1
    index = pages["index.md"]
    for t in tables:
        assert f"]({results._slug(t)}.md)" in index
    assert "**not significant**" in index and "**reversed**" in index
    assert max(len(text) for text in pages.values()) < 30_000


def test_the_studies_live_beside_the_records_not_in_the_package():
    from pathlib import Path

    import hopgraph.presentation.results as machinery

    assert not (Path(machinery.__file__).parent / "tables.py").exists()
    assert (results.checkout() / results.STUDIES).is_file()


def test_every_table_on_the_page_shows_plots_of_its_own():
    """Two MMAPG tables whose titles share their first 60 characters drew into one file, so
    the older table showed the newer one's plots."""
    page = "\n".join(results.render_pages().values())
    images = [line for line in page.splitlines() if line.startswith("![")]
    assert images, "the page shows no plots"
    assert len(images) == len(set(images)), "two tables point at the same plot file"
    stems = [results._slug(t) for t in results.all_tables()]
    assert len(stems) == len(set(stems))


def test_sign_test_by_hand():
    # 8 wins, 2 losses, 3 ties: p = 2 * P(X <= 2 | n = 10, 1/2) = 2 * 56 / 1024
    a = [1.0] * 8 + [0.0] * 2 + [0.5] * 3
    b = [0.0] * 8 + [1.0] * 2 + [0.5] * 3
    assert sign_counts(a, b) == (8, 2, pytest.approx(2 * 56 / 1024))
    assert sign_counts([1.0], [1.0]) == (0, 0, 1.0)
    assert sign_counts([1.0] * 5, [0.0] * 5)[2] == pytest.approx(2 / 32)
    assert sign_counts([0.0] * 3 + [1.0] * 3, [1.0] * 3 + [0.0] * 3)[2] == 1.0
    assert math.isclose(sign_counts([1.0] * 20, [0.0] * 20)[2], 2 / 2**20)


def test_a_claim_line_names_its_questions_and_test(tmp_path, monkeypatch):
    import json

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    for name, vals in (("a", [1, 1, 1, 1, 1, 1, 0]), ("b", [0, 0, 0, 0, 0, 0, 0])):
        (tmp_path / name).mkdir()
        per_q = {f"q{i}": {"em": float(v)} for i, v in enumerate(vals)}
        (tmp_path / name / "metrics.json").write_text(json.dumps({"per_question": per_q}))
    table = results.RunTable(
        "M",
        "t",
        "finding",
        {"A": "a", "B": "b", "C": "c"},
        ["em"],
        [results.Claim("A", "B", "em"), results.Claim("B", "A", "em")],
    )
    text = "\n".join(results.run_table(table))
    assert "7 questions" in text and "| em | 0.857 | 0.000 |" in text
    assert "A beats B on em: **holds** (0.857 vs 0.000; better on 6, worse on 0 of the 7" in text
    assert "B beats A on em: **reversed**" in text
    assert "Not measured yet: C." in text


def test_seconds_from_endpoints_of_different_speed_are_flagged(tmp_path, monkeypatch):
    """Two sittings on hosts of one kind read the embedded model's prompts 1.65x apart; a
    table whose seconds come from such runs must say so, one at equal speed must not, and one
    with a column that recorded no speed says that instead."""
    import json

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)

    def record(name, seconds, prefill=None):
        (tmp_path / name).mkdir()
        speed = {"prefill_tokens_per_s": prefill, "decode_tokens_per_s": 24.0} if prefill else {}
        per_q = {f"q{i}": {"seconds": s} | speed for i, s in enumerate(seconds)}
        (tmp_path / name / "metrics.json").write_text(json.dumps({"per_question": per_q}))

    record("slow", [300.0] * 8, 23.0)
    record("fast", [200.0] * 8, 38.0)
    record("fast2", [210.0] * 8, 37.0)
    record("old", [250.0] * 8)  # a record from before sittings were timed

    def caveat(rows, **kw):
        table = results.RunTable(
            "M",
            "t",
            "finding",
            rows,
            ["seconds", "prefill_tokens_per_s"],
            [results.Claim("after", "before", "seconds", lower=True)],
            **kw,
        )
        lines = results.run_table(table)
        assert any(line.startswith("- after beats before on seconds") for line in lines)
        return [line for line in lines if line.startswith("- Seconds:")]

    (line,) = caveat({"before": "slow", "after": "fast"})
    assert "(prompt reading 23.0 / 38.0 tokens/s)" in line and "do not compare" in line
    assert caveat({"before": "fast2", "after": "fast"}) == []
    (line,) = caveat({"before": "old", "after": "fast"})
    assert "old recorded no endpoint speed" not in line and "before recorded no" in line
    # two builds on one machine: the speed is the finding
    assert caveat({"before": "slow", "after": "fast"}, speed_is_compared=True) == []
    table = results.RunTable("M", "t", "f", {"a": "slow", "b": "fast2"}, ["prefill_tokens_per_s"])
    assert "| prefill_tokens_per_s | 23.000 | 37.000 |" in results.run_table(table)
    # one column resumed on a machine half as fast: its own seconds mix machines
    (tmp_path / "mixed").mkdir()
    per_q = {
        f"q{i}": {"seconds": 200.0, "prefill_tokens_per_s": 56.0 if i < 6 else 22.8}
        for i in range(8)
    }
    (tmp_path / "mixed" / "metrics.json").write_text(json.dumps({"per_question": per_q}))
    (line,) = caveat({"before": "fast", "after": "mixed"})
    assert "within a column" in line and "after 22.8 to 56.0" in line
    assert "within a column" not in caveat({"before": "slow", "after": "fast"})[0]


def test_seconds_answered_from_the_response_cache_are_flagged_not_compared(tmp_path, monkeypatch):
    """A verdict's second arm asks the prompts its first arm asked: the cache answers it in no
    time (QD-C's 103 s against 0.076 s a question). The table says so, and compares the
    endpoints' speeds only on questions the endpoint answered (before: no word of the cache,
    and the cached arm's sitting probe read as another endpoint's speed)."""
    import json

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)

    def record(name, seconds, prefill, cached):
        (tmp_path / name).mkdir()
        per_q = {
            f"q{i}": {"seconds": seconds, "prefill_tokens_per_s": prefill, "f1": 0.5}
            | ({"cache_hits": 3} if i < cached else {})
            for i in range(40)
        }
        (tmp_path / name / "metrics.json").write_text(json.dumps({"per_question": per_q}))

    record("hand", 103.0, 52.0, 0)
    record("opt", 0.076, 61.0 * 1.5, 40)  # its sitting's probe ran on a faster machine
    rows = {"hand-written": "hand", "optimized": "opt"}
    claim = results.Claim("optimized", "hand-written", "f1")
    table = results.RunTable("M", "t", "f", rows, ["f1", "seconds"], [claim])
    lines = [line for line in results.run_table(table) if line.startswith("- Seconds:")]
    assert lines == [
        "- Seconds: questions answered in whole or part from the response cache (optimized 40 of"
        " 40) took no time at the endpoint, so those columns' seconds are not the method's."
    ]


def test_the_latency_model_table_reads_its_targets_from_the_record():
    def row(agent, depth, c32, **extra):
        return {
            "agent": agent,
            "llm_calls": 2,
            "prompt_tokens": 300.0,
            "depth": depth,
            "seconds": 0.5,
            "questions_per_s_c1": 1.0,
            "questions_per_s_c8": 6.0,
            "questions_per_s_c32": c32,
            "speedup_c8": 6.0,
            "speedup_c32": c32,
        } | extra

    rep = {
        "server": {"latency_s": 0.2, "per_token_s": 2e-05, "slots": 32},
        "rows": [
            row("rag", 2, 9.0),
            row("qdrag QD-C", 5, 7.8),
            row("mmapg", 12, 22.0, depth_per_iteration=1.2),
        ],
    }
    draw = results.renderer("benchmarks/bench_agents.py:render")  # beside the benchmark
    text = "\n".join(draw([rep]))
    assert "| mmapg | 2 | 300 | 12 (1.2 per planner iteration) |" in text
    assert "QD-C depth <= 4: not met; MMAPG <= 3 rounds per planner iteration: met" in text
    assert "met by mmapg, not by rag, qdrag QD-C" in text
    assert draw([None]) == ["Not measured yet.", ""]


def test_results_finds_the_records_of_the_checkout_it_runs_in(tmp_path, monkeypatch):
    """Not those beside the installed package: from a folder outside any checkout it says
    where to run it; from inside a checkout (any subfolder) it reads that checkout's."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="inside a checkout"):
        results.pages_dir()
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    monkeypatch.chdir(tmp_path / "docs")
    assert results.pages_dir() == tmp_path / "docs" / "results"
    assert results.records_dir() == tmp_path / "benchmarks" / "results"


def test_a_claim_is_tested_on_every_question_its_two_variants_finished(tmp_path, monkeypatch):
    """MMAPG's full method and single path at 30 questions, an ablation at 3: the table shows
    the 3 all share, but full vs single path is tested on its 30 (it was tested on 3)."""
    import json

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    for name, vals in (("a", [1] * 25 + [0] * 5), ("b", [0] * 30), ("c", [0] * 3)):
        (tmp_path / name).mkdir()
        per_q = {f"q{i}": {"f1": float(v)} for i, v in enumerate(vals)}
        (tmp_path / name / "metrics.json").write_text(json.dumps({"per_question": per_q}))
    claims = [results.Claim("A", "B", "f1"), results.Claim("A", "C", "f1")]
    table = results.RunTable("M", "t", "f", {"A": "a", "B": "b", "C": "c"}, ["f1"], claims)
    text = "\n".join(results.run_table(table))
    assert "3 questions, every column on the same ones" in text
    assert "| f1 | 1.000 | 0.000 | 0.000 |" in text  # the table: the 3 all three finished
    assert "A beats B on f1: **holds** (0.833 vs 0.000; better on 25, worse on 0 of the 30" in text
    assert (
        "A beats C on f1: **not significant** (1.000 vs 0.000; better on 3, worse on 0 of the 3"
        in text
    )


def test_a_column_at_its_own_target_is_not_reported_as_partial(tmp_path, monkeypatch):
    """MMAPG's ablations are asked for at 15 beside the full method and single path at 30: with
    all four done the page said "15 questions (of 30 planned)", as if unfinished."""
    import json

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    for name, n in (("a", 30), ("b", 30), ("c", 15), ("d", 9)):
        (tmp_path / name).mkdir()
        per_q = {f"q{i}": {"f1": 1.0} for i in range(n)}
        (tmp_path / name / "metrics.json").write_text(json.dumps({"per_question": per_q}))
    rows = {"A": "a", "B": "b", "C": "c"}
    table = results.RunTable("M", "t", "f", rows, ["f1"], target={"A": 30, "B": 30, "C": 15})
    text = "\n".join(results.run_table(table))
    assert "planned" not in text
    assert "15 questions, every column on the same ones" in text
    assert (
        "Questions finished per column (of its target): A 30 of 30, B 30 of 30, C 15 of 15." in text
    )
    short = results.RunTable("M", "t", "f", rows | {"D": "d"}, ["f1"], target=30)
    assert "A 30 of 30, B 30 of 30, C 15 of 30, D 9 of 30." in "\n".join(results.run_table(short))
    grown = results.RunTable("M", "t", "f", {"C": "c", "A": "a"}, ["f1"], target=15)
    assert "C 15 of 15, A 30 (15 asked here)." in "\n".join(results.run_table(grown))
    even = results.RunTable("M", "t", "f", {"A": "a", "B": "b"}, ["f1"], target=50)
    assert "30 questions (of 50 planned), every column" in "\n".join(results.run_table(even))


def test_a_score_judged_on_part_of_the_questions_says_on_how_many(tmp_path, monkeypatch):
    """Citations are judged after a run, so a record that grew holds them for its first
    questions only: the cell was the mean of those, shown as if of all."""
    import json

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    for name, judged in (("a", 50), ("b", 30)):
        (tmp_path / name).mkdir()
        per_q = {
            f"q{i}": {"f1": 1.0} | ({"citation_recall": 0.5} if i < judged else {})
            for i in range(50)
        }
        (tmp_path / name / "metrics.json").write_text(json.dumps({"per_question": per_q}))
    table = results.RunTable("M", "t", "f", {"A": "a", "B": "b"}, ["f1", "citation_recall"])
    assert "| citation_recall | 0.500 | 0.500 (30 of 50) |" in "\n".join(results.run_table(table))


def test_a_table_names_the_kb_its_columns_read(tmp_path, monkeypatch):
    """MAB-DQA's records once mixed a KB read with OCR and one without, and the page could not
    show it: each column now names the KB its manifest recorded, and columns that differ say so."""
    import json

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    build = {
        "source": "pdfs",
        "format": "folder",
        "ocr": "off",
        "page_pixels": 0,
        "limit": None,
        "derived": False,
    }
    kbs = {
        "a": {"counts": {"text": 0, "page": 988}, "builds": [build]},
        "b": {"counts": {"text": 0, "page": 988}, "builds": [build]},
        "c": {"counts": {"text": 0, "page": 988}, "builds": [build | {"ocr": "rapidocr-1.4"}]},
        "d": {},  # a manifest from before the field
    }
    for name, kb in kbs.items():
        (tmp_path / name).mkdir()
        per_q = {f"q{i}": {"f1": 1.0} for i in range(3)}
        (tmp_path / name / "metrics.json").write_text(json.dumps({"per_question": per_q}))
        (tmp_path / name / "manifest.json").write_text(json.dumps({"model": "m", "kb": kb}))

    def text(*names):
        rows = {n.upper(): n for n in names}
        return "\n".join(results.run_table(results.RunTable("M", "t", "f", rows, ["f1"])))

    assert "model m. KB: pdfs (folder, OCR off), 988 page items." in text("a", "b")
    mixed = text("a", "c", "d")
    assert (
        "KB per column: A: pdfs (folder, OCR off), 988 page items; C: pdfs (folder, OCR " in mixed
    )
    assert "rapidocr-1.4), 988 page items; D: not recorded." in mixed
    assert "KB" not in text("d")


def test_a_table_with_a_tuning_split_reports_only_the_other_questions(tmp_path, monkeypatch):
    """Issue 44's rule: the first 20 questions are the tuning split. A method that wins only
    on those (where its prompts could have been tuned) must not win on the page: the table,
    its claims and the n they need read the other questions alone, and the page says so."""
    import json

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    ids = [f"q{i}" for i in range(100)]
    tuned, rest = ids[:20], ids[20:]
    scores = {
        "a": dict.fromkeys(tuned, 1.0) | dict.fromkeys(rest, 0.5),
        "b": dict.fromkeys(ids, 0.5),
    }
    for name, by_q in scores.items():
        (tmp_path / name).mkdir()
        per_q = {q: {"f1": v} for q, v in by_q.items()}
        (tmp_path / name / "metrics.json").write_text(json.dumps({"per_question": per_q}))
    (tmp_path / "split.json").write_text(json.dumps({"ids": tuned}))
    claims = [results.Claim("A", "B", "f1")]
    rows = {"A": "a", "B": "b"}
    split = results.RunTable(
        "M", "t", "f", rows, ["f1"], claims, target=100, pool=100, tuning="split.json"
    )
    text = "\n".join(results.run_table(split))
    assert (
        "the 20 questions of `split.json` are the ones prompts and settings may be tuned on" in text
    )
    assert "80 questions, every column on the same ones" in text and "planned" not in text
    assert "| f1 | 0.500 | 0.500 |" in text
    assert (
        "A beats B on f1: **not significant** (0.500 vs 0.500; better on 0, worse on 0 of the 80"
        in text
    )
    (tmp_path / "c").mkdir()  # a column that has answered the tuning split alone
    only_tuned = {"per_question": {q: {"f1": 1.0} for q in tuned}}
    (tmp_path / "c" / "metrics.json").write_text(json.dumps(only_tuned))
    grown = results.RunTable("M", "t", "f", rows | {"C": "c"}, ["f1"], tuning="split.json")
    assert "Not measured yet: C." in "\n".join(results.run_table(grown))
    everything = "\n".join(results.run_table(results.RunTable("M", "t", "f", rows, ["f1"], claims)))
    assert "A beats B on f1: **holds**" in everything  # what the page said without the split
    missing = results.RunTable("M", "t", "f", rows, ["f1"], claims, tuning="none.json")
    with pytest.raises(FileNotFoundError, match="none.json"):
        results.run_table(missing)


def test_a_table_says_when_its_answers_come_from_more_than_one_llama_cpp_build(
    tmp_path, monkeypatch
):
    """rag's record was answered half on the portable AVX2 wheel and half on the AVX-512
    build, and a build can change a greedy answer; the page said nothing. Each answer is
    matched to its sitting's build: by the sitting it names, or (lines written before answers
    named it) by the probe speed both recorded."""
    import json

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    avx2, avx512 = ["AVX2"], ["AVX2", "AVX_VNNI", "AVX512", "AVX512_VNNI", "AVX512_BF16"]

    def record(name, sittings, named=False):  # sittings: (build, prefill rate, answers)
        (tmp_path / name).mkdir()
        man, preds, per_q = {"model": "m", "sittings": []}, [], {}
        for at, (build, rate, n) in enumerate(sittings):
            speed = {"prefill_tokens_per_s": rate, "decode_tokens_per_s": 9.0}
            man["sittings"].append({"speed": speed, "llama_cpp_build": build})
            for _ in range(n):
                q = f"q{len(preds)}"
                preds.append(
                    {"id": q, "answer": "a"} | ({"sitting": at} if named else {"speed": speed})
                )
                per_q[q] = {"f1": 1.0}
        (tmp_path / name / "manifest.json").write_text(json.dumps(man))
        (tmp_path / name / "predictions.jsonl").write_text(
            "".join(json.dumps(p) + "\n" for p in preds)
        )
        (tmp_path / name / "metrics.json").write_text(json.dumps({"per_question": per_q}))

    record("rag", [(avx2, 33.1, 40), (avx512, 160.1, 40)], named=True)
    record("peer", [(avx512, 162.4, 80)])
    record("qdc", [(avx2, 33.2, 30), (avx2, 34.0, 10)])
    record("old", [(None, 80.0, 80)])  # sittings from before builds were recorded

    def lines(**rows):
        table = results.RunTable("M", "t", "f", rows, ["f1"])
        return [ln for ln in results.run_table(table) if ln.startswith("**llama.cpp builds:**")]

    (line,) = lines(rag="rag", peer="peer")
    assert "rag: AVX2 (40), AVX-512 (40); peer: AVX-512 (80);" in line
    claim = results.RunTable(
        "M", "t", "f", {"rag": "rag", "peer": "peer"}, ["f1"], [results.Claim("rag", "peer", "f1")]
    )
    (verdict,) = [ln for ln in results.run_table(claim) if ln.startswith("- rag beats peer")]
    assert verdict.endswith(". Answered on two builds: 40 of its 80 pairs.")
    (line,) = lines(qdc="qdc", peer="peer")  # each column one build, but not the same one
    assert "qdc: AVX2 (40); peer: AVX-512 (80)" in line
    assert lines(qdc="qdc") == [] and lines(peer="peer", old="old") == []
    two_builds = results.RunTable(
        "M", "t", "f", {"a": "qdc", "b": "peer"}, ["f1"], speed_is_compared=True
    )
    assert not any(ln.startswith("**llama.cpp") for ln in results.run_table(two_builds))


def test_a_search_under_way_says_how_far_it_has_come_not_that_it_was_never_measured(
    tmp_path, monkeypatch
):
    """MMAPG's planner search had 11 bootstrap answers committed while RESULTS.md said "Not
    measured yet" of it: the report (record.json) is written only when the bootstrap ends."""
    import json

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    table = results.BenchTable(
        "M",
        "search",
        "finding",
        ["s/record.json"],
        "hopgraph.optimizer.search:render",
        progress="s/bootstrap",
    )
    assert "Not measured yet." in results.bench_table(table)

    run = tmp_path / "s" / "bootstrap"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({"questions": "train.jsonl"}))
    preds = [{"id": f"q{i}", "answer": "a", "error": None} for i in range(11)]
    preds[3]["error"] = "endpoint gone"
    (run / "predictions.jsonl").write_text("".join(json.dumps(p) + "\n" for p in preds))
    text = "\n".join(results.bench_table(table))
    assert "Not measured yet" not in text
    assert "In progress: 11 questions of `train.jsonl` answered so far (1 failed)" in text
    assert "benchmarks/results/s/bootstrap" in text


def today_and_earlier(tmp_path):
    """A record made by `hopgraph run` on the scripted endpoint (``today``) and a copy whose
    graph module and answer template hashes differ (``earlier``); the records' folder and the
    copy's prediction line."""
    import json
    import shutil

    from scripted_server import ScriptedServer, by_template
    from servers import hopgraph

    from hopgraph.memory.kb import Item, KnowledgeBase
    from hopgraph.questions.datasets import Question, write_questions

    records = tmp_path / "benchmarks" / "results"
    records.mkdir(parents=True)
    KnowledgeBase(tmp_path / "kb").add([Item("text", "k0", "Town 0 has a red bridge.")])
    write_questions(
        [Question("q0", "What does town 0 have?", ["a red bridge"], [])], tmp_path / "q.jsonl"
    )
    script = by_template({"rag/answer": "A red bridge [1].", "rag/short_answer": "a red bridge"})
    with ScriptedServer(script) as model:
        args = "run --agent rag --questions q.jsonl --kb kb --out benchmarks/results/today"
        served = ("--base-url", model.base_url, "--model", "scripted")
        done = hopgraph(*args.split(), *served, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert hopgraph("eval", "benchmarks/results/today", cwd=tmp_path).returncode == 0
    shutil.copytree(records / "today", records / "earlier")
    manifest = json.loads((records / "earlier" / "manifest.json").read_text())
    manifest["code"]["files"]["hopgraph.graphs.rag"] = "0" * 16
    manifest["prompts"]["rag/answer"] = "0" * 64
    (records / "earlier" / "manifest.json").write_text(json.dumps(manifest))
    preds = records / "earlier" / "predictions.jsonl"
    line = json.loads(preds.read_text())
    preds.write_text(json.dumps(line | {"code": "000000000000"}) + "\n")
    return records, line


def test_each_column_says_whether_its_answers_are_today_s_code_s(tmp_path):
    """The README's headline read records 43-54 commits to the methods behind, and no page said
    so. Each column now names its record, revision and code fingerprint and whether that code
    is today's; `results --json` says the same for every study and `results --check` warns of
    stale headline columns. A record is made here by `hopgraph run` on the scripted endpoint;
    a copy whose graph module and answer template hashes differ stands for one made earlier."""
    import json

    from servers import hopgraph

    records, line = today_and_earlier(tmp_path)
    (records / "studies.py").write_text(
        "from hopgraph.presentation.results.spec import Claim, RunTable\n"
        "TABLES = [RunTable('M', 't', 'f', {'now': 'today', 'then': 'earlier'}, ['f1'],\n"
        "                   [Claim('now', 'then', 'f1')], headline=True)]\n"
    )
    listed = hopgraph("results", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    (study,) = json.loads(listed.stdout)
    now, then = study["columns"]
    assert study["headline"] and (now["column"], then["column"]) == ("now", "then")
    assert now["current"] and now["changed"] == [] and now["fingerprint"] == line["code"]
    assert now["revision"] and now["folder"] == "today"
    assert not then["current"] and then["fingerprint"] == "000000000000"
    assert then["changed"] == ["graphs.rag", "rag/answer"], then["changed"]
    assert then["commits_since"] in (0, None)  # its revision is this checkout's HEAD
    assert hopgraph("results", cwd=tmp_path).returncode == 0
    page = next((tmp_path / "docs" / "results").glob("m-t*.md")).read_text()
    assert f"| now | `today` | {now['revision'][:7]} | {line['code']} | current |" in page
    assert "| then | `earlier` |" in page and "**stale**: graphs.rag, rag/answer changed" in page
    checked = hopgraph("results", "--check", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr  # the pages are current; a warning only
    assert "stale headline column M: t: then (earlier at" in checked.stderr
    assert "now (today" not in checked.stderr


def test_a_record_of_code_changed_answer_neutrally_is_carried_forward_by_its_reports(
    tmp_path, monkeypatch
):
    """Issue 113 item 1: a change that `benchmarks/before_after.py` showed answer-neutral
    carries a record of the code before it forward, and the page names the reports. Two
    reports chain the earlier record's code to today's, the second with its template change;
    a report with one answer different, or a chain that stops short, carries nothing."""
    import importlib
    import json

    fresh = importlib.import_module("hopgraph.presentation.results.freshness")
    records, line = today_and_earlier(tmp_path)
    proofs = tmp_path / "before-after"
    proofs.mkdir()
    monkeypatch.setattr(fresh, "PROOFS", proofs)
    today = json.loads((records / "today" / "manifest.json").read_text())
    answer = {"rag/answer": ["0" * 64, today["prompts"]["rag/answer"]]}

    def report(name: str, before: str, after: str, identical: int = 28, templates=None) -> None:
        code = {"before": before, "after": after}
        row = {
            "questions": 28,
            "identical": identical,
            "errors": 0,
            "code": code,
            "templates": templates or {},
        }
        (proofs / name).write_text(json.dumps({"agents": {"rag": row}}))
        fresh._steps.cache_clear()  # (keyed by folder: the checkout's reports stay apart)

    def earlier():  # noqa: ANN202
        return fresh.freshness(records / "earlier", "earlier")

    assert not earlier().current and not earlier().carried
    report("a.json", "000000000000", "111111111111")
    assert not earlier().current  # the chain stops short of today's code
    report("b.json", "111111111111", line["code"], identical=27, templates=answer)
    assert not earlier().current  # one answer differed
    report("b.json", "111111111111", line["code"], templates=answer)
    carried = earlier()
    assert carried.current and carried.carried == ["before-after/a.json", "before-after/b.json"]
    assert carried.changed == ["graphs.rag", "rag/answer"]  # still said, as what moved
    assert "current: carried forward by before-after/a.json, before-after/b.json" in carried.words()
    report("b.json", "111111111111", line["code"])  # the template's change not shown neutral
    assert not earlier().current


def test_a_table_counts_where_each_column_s_questions_were_lost(tmp_path, monkeypatch):
    """Side by side, per column, the questions at each stage (as ``eval`` wrote them), over
    the table's questions only."""
    import json

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    lost = {
        "a": ["right", "not retrieved", "right"],
        "b": ["in the prompt, answered wrong", "not retrieved", "right"],
    }
    for name, stages in lost.items():
        (tmp_path / name).mkdir()
        per_q = {f"q{i}": {"f1": 1.0} for i in range(3)}
        made = {f"q{i}": s for i, s in enumerate(stages)} | {"q9": "no gold answer"}
        held = {"q1": {"x/examine": "wrote", "x/notes": "read"}, "q2": {}}
        held |= {"q9": {"x/examine": "wrote", "x/notes": "wrote"}}
        (tmp_path / name / "metrics.json").write_text(
            json.dumps({"per_question": per_q, "stages": made, "gold_answer": held})
        )
    (tmp_path / "c").mkdir()  # scored before stages were written, or cut short
    unstaged = {"per_question": {f"q{i}": {"f1": 0.0} for i in range(3)}}
    (tmp_path / "c" / "metrics.json").write_text(json.dumps(unstaged))
    table = results.RunTable("M", "t", "f", {"A": "a", "B": "b", "C": "c"}, ["f1"])
    text = "\n".join(results.run_table(table))
    assert "| stage | A | B |" in text
    assert "Not counted, their metrics.json holds no stages: C (`hopgraph eval" in text
    assert "| not retrieved | 1 | 1 |" in text and "| right | 2 | 1 |" in text
    assert "| in the prompt, answered wrong | 0 | 1 |" in text
    assert "no gold answer" not in text  # q9 is not one of the table's questions
    # where each wrong answer's gold answer went, over the table's questions (q9 is not one)
    assert (
        "| A (2; in no prompt or reply: 1) | `x/examine` | 1 | 0 |\n|  | `x/notes` | 0 | 1 |"
        in text
    )
    assert "| C (" not in text


def test_a_graph_files_templates_are_judged_the_same_whatever_was_read_before():
    """The template hashes were cached before a graph file's own templates had registered, so
    whether Self-Ask's unchanged template read "stale" hung on which record a process read
    first (CI's docs/results check failed on it). Each order runs in a fresh interpreter."""
    import subprocess
    import sys

    said = "from pathlib import Path; from hopgraph.presentation.results.freshness import freshness"
    show = "print(freshness(Path('benchmarks/results/hotpotqa/self-ask')).changed)"
    first = "freshness(Path('benchmarks/results/evidence/demo/rag'))"
    alone, after = f"{said}; {show}", f"{said}; {first}; {show}"
    cwd = results.checkout()
    outs = [
        subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True)
        for code in (alone, after)
    ]
    assert all(o.returncode == 0 for o in outs), [o.stderr[-2000:] for o in outs]
    assert outs[0].stdout == outs[1].stdout
    assert "'self_ask/next'" in outs[0].stdout  # its one edited template still shows


def test_a_column_whose_answers_cite_nothing_says_so_beside_its_citation_scores(
    tmp_path, monkeypatch
):
    """ALCE scores an answer with no citation 0: a method that writes none (MMAPG) would read
    as citing wrongly; its cells say that no answer cites."""
    import json

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    for name, cited in (("a", ["text-1"]), ("b", [])):
        (tmp_path / name).mkdir()
        per_q = {
            f"q{i}": {"f1": 0.5, "citation_recall": 0.0 if not cited else 1.0} for i in range(3)
        }
        (tmp_path / name / "metrics.json").write_text(json.dumps({"per_question": per_q}))
        lines = [{"id": f"q{i}", "answer": "x", "citations": cited} for i in range(3)]
        (tmp_path / name / "predictions.jsonl").write_text(
            "".join(json.dumps(line) + "\n" for line in lines)
        )
    table = results.RunTable("M", "t", "f", {"A": "a", "B": "b"}, ["f1", "citation_recall"])
    text = "\n".join(results.run_table(table))
    assert "| citation_recall | 1.000 | 0.000 (no answer cites) |" in text, text
    assert "| f1 | 0.500 | 0.500 |" in text
