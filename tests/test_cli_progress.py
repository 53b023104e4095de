"""Long commands say where they are when their output is no terminal: ``run`` and
``optimize`` print a line per finished question (counts, elapsed, what is left), ``index`` its
items, ``doctor`` each probe; ``--quiet`` silences them. (Piped, ``run --limit 3`` printed
nothing for 1,093 s, ``doctor`` for 216 s.)"""

import re

from scripted_server import ScriptedServer
from servers import hopgraph, scripted

from hopgraph.cli.progress import Steps, clock
from hopgraph.questions.datasets import Question, write_questions

LINE = re.compile(
    r"^rag: (\d)/3 done, failed 0, last [\d.]+s, mean [\d.]+s/question, "
    r"0:00:\d\d elapsed(, about 0:\d\d:\d\d left)?$"
)


def test_a_piped_run_prints_a_line_per_question_and_quiet_prints_none(tmp_path, town_kb):
    qfile = tmp_path / "q.jsonl"
    write_questions([Question(f"q{i}", f"What about town {i}?") for i in range(3)], qfile)
    with ScriptedServer() as model:
        common = (
            "run",
            "--agent",
            "rag",
            "--questions",
            str(qfile),
            "--kb",
            str(town_kb),
            *scripted(model.base_url),
        )
        out = hopgraph(*common, "--out", "r1", cwd=tmp_path)
        quiet = hopgraph(*common, "--out", "r2", "--quiet", cwd=tmp_path)
    assert out.returncode == 0 and quiet.returncode == 0, out.stderr + quiet.stderr
    lines = [ln for ln in out.stderr.splitlines() if LINE.match(ln)]
    assert [LINE.match(ln)[1] for ln in lines] == ["1", "2", "3"], out.stderr
    assert "left" in lines[0] and "left" not in lines[-1]
    assert "rag: 0/3 done, starting" in out.stderr
    assert not [ln for ln in quiet.stderr.splitlines() if ln.startswith("rag: ")], quiet.stderr
    assert "3 finished" in quiet.stdout + quiet.stderr


def test_a_piped_index_and_doctor_say_what_they_do(tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("A red lighthouse stands on the northern cliff.")
    out = hopgraph("index", "corpus", "--kb", "kb", "--no-ocr", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert re.search(r"indexing corpus: \d+ items, \d+ new, 0 already there", out.stderr)
    with ScriptedServer() as model:
        doc = hopgraph("doctor", "--base-url", model.base_url, "--model", "scripted", cwd=tmp_path)
    assert doc.returncode == 0, doc.stderr
    probes = re.findall(
        r"^doctor: (\d+) probes done, probing (.+), 0:\d\d:\d\d elapsed$", doc.stderr, re.M
    )
    assert probes[0] == ("0", "the endpoint") and len(probes) >= 3, doc.stderr


def test_the_estimate_counts_only_what_this_sitting_ran(capsys):
    """A resumed run's questions answered earlier are not in its pace: 30 of 40 done before,
    one more in this sitting's 60 s leaves about 9 x 60 s."""
    steps = Steps("rag", 40)
    steps.began -= 60
    with steps:
        steps.step(31, "failed 0", before=30)
    line = capsys.readouterr().err.strip()
    assert line.startswith("rag: 31/40 done, failed 0, 0:01:0") and line.endswith(
        f"about {clock(9 * 60)} left"
    ), line
