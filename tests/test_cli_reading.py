"""Reading a run from the command line: ``trace RUN QID`` heads with the question, answer,
gold and verdict; ``eval --wrong`` lists the wrong questions; ``compare`` tests the answer
metrics by default, not every headline count and engine speed (it printed a sign test for 19
metrics, ``prefill_tokens_per_s`` among them, though its help said "the headline metrics")."""

import re

import pytest
from scripted_server import ScriptedServer, by_template
from servers import hopgraph, scripted

from hopgraph.questions.datasets import Question, write_questions


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, town_kb):
    root = tmp_path_factory.mktemp("reading")
    write_questions(
        [Question(f"q{i}", f"What about town {i}?", [f"answer-{i}"], []) for i in range(3)],
        root / "q.jsonl",
    )
    for name, wrong_on in (("a", -1), ("b", 1)):

        def reply(body: dict, wrong_on=wrong_on) -> str:
            town = int(re.findall(r"town (\d+)\?", body["messages"][-1]["content"])[-1])
            return "wrong" if town == wrong_on else f"answer-{town}"

        script = by_template({"rag/answer": "The sources say so [1].", "rag/short_answer": reply})
        with ScriptedServer(script) as model:
            done = hopgraph(
                "run",
                "--agent",
                "rag",
                "--questions",
                "q.jsonl",
                "--kb",
                str(town_kb),
                "--out",
                name,
                *scripted(model.base_url),
                cwd=root,
            )
            assert done.returncode == 0, done.stderr
    return root


def test_trace_of_one_question_heads_with_its_question_answer_gold_and_verdict(two_runs):
    out = hopgraph("trace", "b", "q1", cwd=two_runs)
    assert out.returncode == 0, out.stderr
    head = out.stdout.splitlines()[:4]
    assert head == [
        "q1: wrong",
        "  question: What about town 1?",
        "  answer:   'wrong'",
        "  gold:     'answer-1'  (EM 0, F1 0.000)",
    ], out.stdout[:600]
    right = hopgraph("trace", "a", "q1", cwd=two_runs)
    assert right.stdout.startswith("q1: right\n")


def test_eval_wrong_lists_the_wrong_questions(two_runs):
    out = hopgraph("eval", "b", "--wrong", cwd=two_runs)
    assert out.returncode == 0, out.stderr
    assert "1 wrong or failed" in out.stdout
    assert "q1 (wrong): answered 'wrong'; gold 'answer-1'" in out.stdout
    assert "q0 (" not in out.stdout and "q2 (" not in out.stdout


def test_compare_tests_the_answer_metrics_by_default_and_any_metric_asked_for(two_runs):
    out = hopgraph("compare", "a", "b", cwd=two_runs)
    assert out.returncode == 0, out.stderr
    paired = out.stdout[out.stdout.index("paired, against") :]
    tested = set(re.findall(r"^│? ?([a-z_@0-9]+)\s*│", paired, re.M)) | set(
        re.findall(r"^([a-z_@0-9]+), b:", paired, re.M)
    )
    assert {"em", "f1"} <= tested and not tested & {"seconds", "llm_calls", "prompt_tokens"}
    assert "prompt_tokens" in out.stdout[: out.stdout.index("paired, against")]  # still shown
    asked = hopgraph("compare", "a", "b", "--metric", "llm_calls", cwd=two_runs)
    assert re.search(r"llm_calls", asked.stdout[asked.stdout.index("paired, against") :])


def test_compare_lists_flips_under_its_new_name_and_its_old_one(two_runs):
    """``--questions`` names a question file in run, optimize and grail, and was a switch in
    compare: the switch is ``--flips`` now, the old spelling kept (hidden) for scripts."""
    new = hopgraph("compare", "a", "b", "--flips", cwd=two_runs)
    old = hopgraph("compare", "a", "b", "--questions", cwd=two_runs)
    assert new.returncode == 0 and old.returncode == 0, new.stderr + old.stderr
    assert "em: right -> wrong (1)" in new.stdout and "  q1  gold 'answer-1'" in new.stdout
    assert new.stdout == old.stdout
    assert "--questions" not in hopgraph("compare", "--help", cwd=two_runs).stdout


def test_help_names_values_by_what_one_types_not_python_types():
    """Help showed ``<str>``, ``<bool>``, ``<list[str]>``: how the code holds a value."""
    from typer.testing import CliRunner

    import hopgraph.cli  # noqa: F401 - registers the commands
    from hopgraph.cli.app import app

    runner = CliRunner()
    for command in (["run"], ["eval"], ["compare"], ["optimize"], ["index"], ["kb", "ls"]):
        out = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
        assert out.exit_code == 0, out.output
        assert not re.search(r"<(str|bool|int|float|list\[\w+\])>", out.output), out.output
    run_help = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output
    assert re.search(r"--limit\s+INTEGER", run_help) and re.search(r"--questions\s+TEXT", run_help)
