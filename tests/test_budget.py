"""Budgets: a run stops starting questions once its record has spent its budget, exits 4 and
goes on when re-run with a larger one; a question's own cap (``max_question_tokens``) ends its
method early with an answer, counted. What a run spent is in ``eval``, the report and
``compare``."""

import json

from scripted_server import ScriptedServer
from servers import hopgraph, scripted

from hopgraph.harness.cost import Budget, Price
from hopgraph.harness.run_folder import read_predictions
from hopgraph.questions.datasets import Question, write_questions


def question_file(tmp_path, n=8):
    path = tmp_path / "q.jsonl"
    write_questions(
        [Question(f"q{i}", f"What about town {i}?", [f"answer-{i}"], []) for i in range(n)], path
    )
    return path


def test_a_budget_stops_a_run_about_half_way_and_a_larger_one_finishes_it(tmp_path, town_kb):
    qfile, out = question_file(tmp_path), tmp_path / "run"
    with ScriptedServer() as model:
        base = [
            "run",
            "--agent",
            "rag",
            "--questions",
            str(qfile),
            "--out",
            str(out),
            "--kb",
            str(town_kb),
            *scripted(model.base_url),
        ]
        first = hopgraph(*base, "--budget-tokens", "1", cwd=tmp_path)
        assert first.returncode == 4, first.stderr
        assert "budget reached: 7 question(s) not started" in first.stderr
        (one,) = read_predictions(out / "predictions.jsonl").values()
        each = one["prompt_tokens"] + one["completion_tokens"]
        half = hopgraph(*base, "--budget-tokens", str(4 * each - 1), cwd=tmp_path)
        assert half.returncode == 4, half.stderr
        done = read_predictions(out / "predictions.jsonl")
        assert 3 <= len(done) <= 5 and "spent: " in half.stdout
        calls = model.calls
        rest = hopgraph(*base, "--budget-tokens", str(100 * each), cwd=tmp_path)
        assert rest.returncode == 0, rest.stderr
        ids = [json.loads(x)["id"] for x in (out / "predictions.jsonl").read_text().splitlines()]
        assert sorted(ids) == [f"q{i}" for i in range(8)]  # each answered once
        assert model.calls - calls == 2 * (8 - len(done))  # the finished ones were not re-asked
        nothing = hopgraph(*base, "--budget-tokens", "1", cwd=tmp_path)
        assert nothing.returncode == 0, nothing.stderr  # nothing left to start: no stop


def test_a_money_budget_needs_a_price_and_a_price_both_parts(tmp_path, town_kb):
    qfile = question_file(tmp_path, 2)
    base = [
        "run",
        "--agent",
        "rag",
        "--questions",
        str(qfile),
        "--out",
        str(tmp_path / "r"),
        "--kb",
        str(town_kb),
    ]
    no_price = hopgraph(*base, "--budget-usd", "1", cwd=tmp_path)
    assert no_price.returncode == 2 and "--budget-usd needs --price" in no_price.stderr
    half = hopgraph(*base, "--budget-usd", "1", "--price", "prompt=0.5", cwd=tmp_path)
    assert half.returncode == 2 and "needs both prompt= and completion=" in half.stderr
    unbounded = [
        (
            ["--budget-usd", "nan", "--price", "prompt=1,completion=1"],
            "--budget-usd must be a finite",
        ),
        (
            ["--budget-usd", "inf", "--price", "prompt=1,completion=1"],
            "--budget-usd must be a finite",
        ),
        (["--budget-usd", "1", "--price", "prompt=nan,completion=1"], "not 'prompt=nan'"),
        (
            ["--budget-tokens", "100", "--set", "top_k=99999999999999999999999999"],
            "'top_k' is out of range",
        ),
        (["--set", "temperature=1e308"], "'temperature' must be at most 2"),
        (["--set", "request_timeout=nan"], "must be a finite number"),
    ]  # refused before any work, not a NaN budget that never stops or an overflow mid-run
    for args, message in unbounded:
        out = hopgraph(*base, *args, cwd=tmp_path)
        assert out.returncode == 2 and message in out.stderr, (args, out.stderr[-500:])
    assert not (tmp_path / "r").exists()
    budget = Budget(usd=0.001, price=Price.parse("prompt=10,completion=30"))
    spent = budget.spent([{"prompt_tokens": 50, "completion_tokens": 10}])
    assert spent == {"tokens": 60, "usd": 0.0008} and not budget.reached(spent)
    assert budget.reached(budget.spent([{"prompt_tokens": 100, "completion_tokens": 0}]))


def test_eval_report_and_compare_show_what_each_question_cost(tmp_path, town_kb):
    qfile, out = question_file(tmp_path, 3), tmp_path / "run"
    with ScriptedServer() as model:
        ran = hopgraph(
            "run",
            "--agent",
            "rag",
            "--questions",
            str(qfile),
            "--out",
            str(out),
            "--kb",
            str(town_kb),
            *scripted(model.base_url),
            "--set",
            "max_question_tokens=1",
            cwd=tmp_path,
        )
        assert ran.returncode == 0, ran.stderr
    scored = hopgraph("eval", str(out), "--price", "prompt=2,completion=6", cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr
    preds = read_predictions(out / "predictions.jsonl")
    prompt = sum(p["prompt_tokens"] for p in preds.values())
    completion = sum(p["completion_tokens"] for p in preds.values())
    usd = (2 * prompt + 6 * completion) / 1e6
    assert f"{prompt:,} prompt + {completion:,} completion tokens, ${usd:.4f}" in scored.stdout
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["cost"]["usd"] == round(usd, 6)
    one = preds["q0"]
    assert metrics["per_question"]["q0"]["usd"] == round(
        (2 * one["prompt_tokens"] + 6 * one["completion_tokens"]) / 1e6, 6
    )
    page = hopgraph("trace", str(out), "--format", "html", cwd=tmp_path)
    assert page.returncode == 0, page.stderr
    html = (out / "report.html").read_text()
    summary = html[html.index("class='summary'") :]  # the first screen: tokens and USD
    assert f"{prompt + completion:,} tokens · ${usd:.4f}" in summary
    assert f"{one['llm_calls']} calls" in html
    compared = hopgraph("compare", str(out), str(out), cwd=tmp_path)
    assert compared.returncode == 0 and "usd" in compared.stdout
