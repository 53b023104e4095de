"""The edges a bad-input probe found (issue 63): nothing is lost silently, nothing is done twice,
and each fault is named with what to do about it."""

import os
import re
from pathlib import Path

import pytest
from conftest import SHARED_DATA
from servers import hopgraph, scripted, started

PDFS = SHARED_DATA / "mmlongbench" / "pdfs"


def unreadable(path: Path) -> None:
    """A file whose read fails with a real I/O error (EIO), as a bad disk gives: reading
    /proc/self/mem at offset 0 does, for root too (a permission bit would not stop root)."""
    path.symlink_to("/proc/self/mem")


def cut_pdf(to: Path) -> None:
    """The smallest MMLongBench-Doc PDF, cut to 30 % of its bytes."""
    smallest = min(PDFS.glob("*.pdf"), key=lambda p: p.stat().st_size)
    data = smallest.read_bytes()
    to.write_bytes(data[: len(data) * 3 // 10])


@pytest.mark.skipif(not PDFS.is_dir(), reason="../shared/data/mmlongbench/pdfs is absent")
def test_a_damaged_pdf_and_an_unreadable_file_fail_alone_and_say_so(tmp_path):
    """A PDF cut to 30 % was "repaired" by PyMuPDF into 0 pages and vanished without a word
    ("1 added ... 0 skipped", exit 0); an unreadable file stopped the whole folder with
    "[Errno 5] Input/output error" and no name, leaving nothing indexed."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    cut_pdf(corpus / "cut.pdf")
    (corpus / "good.txt").write_text("Marrowick has a copper lighthouse on its northern pier.")
    unreadable(corpus / "bad.txt")
    # bad.txt is a link out of the folder: followed, as an index asked to does
    out = hopgraph("index", "corpus", "--kb", "kb", "--follow-links", cwd=tmp_path)
    assert out.returncode == 3, out.stdout + out.stderr
    assert "1 added" in out.stdout
    assert "failed corpus/cut.pdf: no page to read: damaged (cut short?)" in out.stdout
    assert "failed corpus/bad.txt: cannot read corpus/bad.txt: Input/output error" in out.stdout
    assert "2 source(s) could not be read" in out.stderr
    listed = hopgraph("kb", "ls", "--kb", "kb", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "good.txt" in listed.stdout and "cut.pdf" not in listed.stdout
    assert "bad.txt" not in listed.stdout
    again = hopgraph("index", "corpus", "--kb", "kb", "--follow-links", cwd=tmp_path)
    assert again.returncode == 3 and "1 unchanged source(s) not read" in again.stdout

    # indexed on its own: the reason, not a --format hint, and no KB folder left behind
    out = hopgraph("index", "corpus/cut.pdf", "--kb", "kb2", cwd=tmp_path)
    assert out.returncode == 2
    assert "nothing was indexed from corpus/cut.pdf: corpus/cut.pdf: no page to read" in out.stderr
    assert "--format" not in out.stderr and not (tmp_path / "kb2").exists()


def test_a_source_that_turns_unreadable_keeps_its_indexed_version(tmp_path, monkeypatch):
    import errno

    from hopgraph.memory.indexing import index_source
    from hopgraph.memory.kb import KnowledgeBase
    from hopgraph.memory.sources import SourceUnit

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "pier.txt").write_text("Marrowick has a copper lighthouse on its northern pier.")
    (corpus / "mill.txt").write_text("Tollen keeps a windmill that grinds barley.")
    kb = KnowledgeBase(tmp_path / "kb")
    assert index_source(kb, corpus, ocr="off").added == 2
    (corpus / "pier.txt").write_text("Marrowick has a brass lighthouse.")  # edited, then
    digest = SourceUnit.sha256  # its disk fails as it is read

    def failing(unit):
        if unit.path.name == "pier.txt":
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return digest(unit)

    monkeypatch.setattr(SourceUnit, "sha256", failing)
    report = index_source(kb, corpus, ocr="off")
    assert [f.where for f in report.failed] == [str(corpus / "pier.txt")]
    assert report.unchanged == 1 and not report.replaced and not report.vanished
    assert "lighthouse" in kb.search("copper lighthouse", k=1)[0]["text"]
    assert len(kb.registry.sources()) == 2


def write_questions(path: Path, n: int, long: int = 0) -> None:
    import json

    lines = [{"id": f"q{i}", "question": f"What is fact {i}?"} for i in range(n)]
    if long:
        lines.append({"id": "long", "question": "Why? " * (long // 5)})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_a_second_local_run_on_a_folder_in_use_is_refused_naming_the_first(tmp_path):
    """Two `hopgraph run` on one --out both answered every question: 6 lines for 3, traces
    interleaved. The second is refused (exit 2) while the first holds the folder."""
    import json
    import threading

    from scripted_server import ScriptedServer, deterministic_reply

    arrived, go = threading.Event(), threading.Event()

    def held(body):  # the first run's first call waits here until the second has been tried
        arrived.set()
        go.wait(60)
        return deterministic_reply(body)

    write_questions(tmp_path / "q.jsonl", 3)
    with ScriptedServer(held) as server:
        args = [
            "run",
            "--agent",
            "direct",
            "--questions",
            "q.jsonl",
            "--out",
            "r",
            *scripted(server.base_url),
        ]
        first = started(*args, cwd=tmp_path)
        try:
            assert arrived.wait(120), "the first run never called the model"
            second = hopgraph(*args, cwd=tmp_path)
        finally:
            go.set()
        out, errors = first.communicate(timeout=120)
        again = hopgraph(*args, cwd=tmp_path)  # the lock died with its holder: a resume runs
    assert first.returncode == 0, errors
    assert second.returncode == 2, second.stderr
    assert "r is in use by another run (pid " + str(first.pid) in second.stderr
    ids = [json.loads(x)["id"] for x in (tmp_path / "r" / "predictions.jsonl").open()]
    assert sorted(ids) == ["q0", "q1", "q2"]
    assert again.returncode == 0 and "3 already done" in again.stdout, again.stderr


def test_a_run_with_a_failed_question_exits_3_and_says_why(tmp_path):
    from scripted_server import ScriptedServer, deterministic_reply

    def reply(body):
        if "fact 1?" in str(body["messages"]):
            raise RuntimeError("the scripted model breaks on q1")
        return deterministic_reply(body)

    write_questions(tmp_path / "q.jsonl", 3)
    with ScriptedServer(reply) as server:
        out = hopgraph(
            "run",
            "--agent",
            "direct",
            "--questions",
            "q.jsonl",
            "--out",
            "r",
            *scripted(server.base_url),
            "--set",
            "max_retries=0",
            cwd=tmp_path,
        )
    assert out.returncode == 3, out.stdout + out.stderr
    assert "2 finished, 1 failed" in out.stdout
    assert "1 question(s) failed; the first:" in out.stderr
    assert "q1: " in out.stderr and "the scripted model breaks on q1" in out.stderr


def test_a_truncated_predictions_line_is_named_in_a_warning(tmp_path):
    from scripted_server import ScriptedServer

    write_questions(tmp_path / "q.jsonl", 3)
    with ScriptedServer() as server:
        run = [
            "run",
            "--agent",
            "direct",
            "--questions",
            "q.jsonl",
            "--out",
            "r",
            *scripted(server.base_url),
        ]
        assert hopgraph(*run, cwd=tmp_path).returncode == 0
        lines = (tmp_path / "r" / "predictions.jsonl").read_text()
        (tmp_path / "r" / "predictions.jsonl").write_text(lines[: len(lines) - 40])  # torn
        for command in (["eval", "r"], ["compare", "r", "r"]):
            out = hopgraph(*command, cwd=tmp_path)
            assert "r/predictions.jsonl:3 is unreadable" in out.stderr, (command, out.stderr)
            assert "Re-running the run" in out.stderr
        again = hopgraph(*run, cwd=tmp_path)  # answers it again and repairs the file
        assert again.returncode == 0 and "1 finished" in again.stdout, again.stderr
    out = hopgraph("eval", "r", cwd=tmp_path)
    assert out.returncode == 0 and "unreadable" not in out.stderr


def test_a_damaged_kb_is_named_with_how_to_rebuild_it(tmp_path):
    """A truncated chroma.sqlite3 gave a 72-line traceback from every command, exit 1."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "pier.txt").write_text("Marrowick has a copper lighthouse on its northern pier.")
    assert hopgraph("index", "corpus", "--kb", "kb", "--no-ocr", cwd=tmp_path).returncode == 0
    db = tmp_path / "kb" / "chroma" / "chroma.sqlite3"
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 3])
    write_questions(tmp_path / "q.jsonl", 1)
    commands = [
        ["search", "lighthouse", "--kb", "kb"],
        ["kb", "ls", "--kb", "kb"],
        ["kb", "stats", "--kb", "kb"],
        ["index", "corpus", "--kb", "kb"],
        [
            "run",
            "--agent",
            "rag",
            "--questions",
            "q.jsonl",
            "--kb",
            "kb",
            "--out",
            "r",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
        ],
    ]
    for command in commands:
        out = hopgraph(*command, cwd=tmp_path)
        assert out.returncode == 2, (command, out.stderr)
        assert "Traceback" not in out.stderr, (command, out.stderr)
        assert "the knowledge base at kb is damaged: kb/chroma/chroma.sqlite3 cannot be read" in (
            out.stderr
        ), (command, out.stderr)
        assert (
            f"`mv kb kb.damaged`), then index its sources again: `hopgraph index {corpus} --kb kb`"
            in (out.stderr)
        ), (command, out.stderr)


def test_the_minor_refusals_exit_2_and_say_what_is_wrong(tmp_path):
    write_questions(tmp_path / "q.jsonl", 1)
    base = [
        "run",
        "--agent",
        "direct",
        "--questions",
        "q.jsonl",
        "--out",
        "r",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
    ]
    for n in ("0", "-3"):
        out = hopgraph(*base, "--concurrency", n, cwd=tmp_path)
        assert out.returncode == 2, out.stderr
        assert f"--concurrency must be at least 1 (range 1..1024), not {n}" in out.stderr
    (tmp_path / "afile").write_text("not a KB")
    out = hopgraph(*base, "--kb", "afile", cwd=tmp_path)
    assert out.returncode == 2 and "--kb afile is a file, not a knowledge-base folder" in out.stderr
    for command in (["search", "x", "--kb", "afile"], ["index", "q.jsonl", "--kb", "afile"]):
        out = hopgraph(*command, cwd=tmp_path)
        assert out.returncode == 2 and "afile is a file, not a knowledge-base folder" in out.stderr
        assert "File exists" not in out.stderr
    (tmp_path / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    out = hopgraph(
        "ask",
        "What is shown?",
        "--image",
        "pic.png",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        cwd=tmp_path,
    )
    assert out.returncode == 2 and "--image needs a vision-language model" in out.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.integration
@pytest.mark.skipif(
    __import__("importlib.util").util.find_spec("llama_cpp") is None,
    reason="llama-cpp-python[server] not installed: pip install 'hopgraph[local]'",
)
def test_an_over_long_question_fails_at_once_with_the_context_window_reason(tmp_path):
    """A 200,000-character question failed after 3 attempts as "cannot reach model endpoint
    ... the reply stream ended before [DONE]"; the server's log said the prompt exceeded its
    context window. It is counted before it is sent, and refused without a retry."""

    write_questions(tmp_path / "q.jsonl", 1, long=200_000)
    out = hopgraph(
        "run",
        "--agent",
        "direct",
        "--questions",
        "q.jsonl",
        "--out",
        "r",
        "--set",
        "model=smollm2-135m",
        "--set",
        "n_ctx=2048",
        cwd=tmp_path,
        timeout=600,
    )
    assert out.returncode == 3, out.stdout + out.stderr
    assert "1 finished, 1 failed" in out.stdout
    assert "long: ContextWindowError: the prompt is " in out.stderr
    assert "more than the context window of 2048" in out.stderr
    from hopgraph.harness.run_folder import trace_path, trace_records

    trace = trace_records(trace_path(tmp_path / "r", "long"))
    calls = [
        r["data"]
        for r in trace
        if r.get("mode") == "custom" and r["data"].get("event") == "llm_call"
    ]
    assert len(calls) == 1 and calls[0]["attempts"] == 0, calls  # never sent, never re-sent


def test_a_wrongly_typed_predictions_line_is_skipped_by_eval_and_the_viewer(tmp_path):
    """A well-formed line with wrong types (``"llm_calls": null``, ``"seconds": "slow"``) ended
    ``eval`` in a TypeError traceback and made every viewer endpoint of the run answer 500:
    it is skipped with its line number and why, and the good questions are shown."""
    import json

    from scripted_server import ScriptedServer

    from hopgraph.presentation.viewer import RunView

    write_questions(tmp_path / "q.jsonl", 3)
    with ScriptedServer() as server:
        assert (
            hopgraph(
                "run",
                "--agent",
                "direct",
                "--questions",
                "q.jsonl",
                "--out",
                "r",
                *scripted(server.base_url),
                cwd=tmp_path,
            ).returncode
            == 0
        )
    preds = tmp_path / "r" / "predictions.jsonl"
    lines = [json.loads(line) for line in preds.read_text().splitlines()]
    lines[1]["llm_calls"], lines[2]["seconds"] = None, "slow"
    preds.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = hopgraph("eval", "r", cwd=tmp_path)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert "r/predictions.jsonl:2 is unreadable (llm_calls is null, not int)" in out.stderr
    assert 'r/predictions.jsonl:3 is unreadable (seconds is "slow", not float)' in out.stderr
    rows = RunView(tmp_path / "r").rows()
    assert [r["id"] for r in rows] == [lines[0]["id"]]


def test_a_predictions_line_with_nan_or_a_huge_count_is_skipped_and_every_run_is_still_listed(
    tmp_path,
):
    """``"seconds": NaN`` was accepted: eval wrote NaN into metrics.json and the viewer's run
    list answered 500 for every run while that one existed; a count of -10**23 was accepted
    too. Both lines are now skipped with their line number and why, and the run
    list shows every run."""
    import json

    from scripted_server import ScriptedServer

    from hopgraph.presentation.viewer.app import Viewer

    write_questions(tmp_path / "q.jsonl", 4)
    with ScriptedServer() as server:
        for name in ("r", "other"):
            args = f"run --agent direct --questions q.jsonl --out {name} --model scripted"
            done = hopgraph(*args.split(), "--base-url", server.base_url, cwd=tmp_path)
            assert done.returncode == 0, done.stderr
    preds = tmp_path / "r" / "predictions.jsonl"
    lines = preds.read_text().splitlines()
    lines[1] = re.sub(r'"seconds": [0-9.e-]+', '"seconds": NaN', lines[1])
    lines[2] = re.sub(r'"llm_calls": \d+', '"llm_calls": -99999999999999999999999', lines[2])
    lines[3] = re.sub(r'"seconds": [0-9.e-]+', '"seconds": 1e400', lines[3])
    preds.write_text("\n".join(lines) + "\n")
    out = hopgraph("eval", "r", cwd=tmp_path)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    said = out.stderr.replace("r/predictions.jsonl:", "line ")
    assert "line 2 is unreadable (a number is NaN, not a finite number)" in said
    assert "line 3 is unreadable (llm_calls holds -99999999999999999999999, past" in said
    assert "line 4 is unreadable (by_template holds inf, not a finite" in said
    metrics = (tmp_path / "r" / "metrics.json").read_text()
    assert "NaN" not in metrics and "Infinity" not in metrics
    listed = Viewer([tmp_path]).summaries()
    assert sorted(r["name"] for r in listed) == ["other", "r"]
    assert [r["questions"] for r in sorted(listed, key=lambda r: r["name"])] == [4, 1]
    json.dumps(listed, allow_nan=False)


def test_a_full_disk_is_named_with_the_file_and_has_an_exit_status_of_its_own(tmp_path):
    """A run whose disk fills exited 2 (the status for "refused before anything started") with
    a bare ``[Errno 28]`` or a ``cannot schedule new futures`` traceback: it names the file it
    was writing and exits 5 (a real full disk: a 300 kB tmpfs, which root may mount); so do
    ``eval`` and ``index`` on that disk, leaving no partial file."""
    import json
    import shutil
    import subprocess

    from scripted_server import ScriptedServer

    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        with open(tmp_path / "q.jsonl", "w") as f:
            for i in range(200):
                f.write(
                    json.dumps(
                        {"id": f"q{i}", "question": f"Fact {i}? " + "pad " * 50, "answers": ["x"]}
                    )
                    + "\n"
                )
        with ScriptedServer() as server:
            out = hopgraph(
                "run",
                "--agent",
                "direct",
                "--questions",
                "q.jsonl",
                "--out",
                "disk/r",
                *scripted(server.base_url),
                "--concurrency",
                "2",
                "--quiet",
                cwd=tmp_path,
            )
        assert out.returncode == 5, out.stderr[-1500:]
        assert "Traceback" not in out.stderr
        assert re.search(
            r"no space left on the device writing .+ \(disk/r/\S+\): free space", out.stderr
        ), out.stderr
        # eval left a 0-byte metrics.json.tmp; index ended in a chromadb traceback (exit 1)
        scored = hopgraph("eval", "disk/r", cwd=tmp_path)
        assert scored.returncode == 5 and "(disk/r/metrics.json)" in scored.stderr, scored.stderr
        assert not list((disk / "r").glob("*.tmp"))
        (tmp_path / "corpus").mkdir()
        (tmp_path / "corpus" / "a.txt").write_text("Fact one about the harbour. " * 40)
        indexed = hopgraph("index", "corpus", "--kb", "disk/kb", cwd=tmp_path)
        assert indexed.returncode == 5 and "Traceback" not in indexed.stderr, indexed.stderr
        assert "no space left on the device (disk/kb/" in indexed.stderr, indexed.stderr
    finally:
        subprocess.run(["umount", str(disk)], check=False)
        shutil.rmtree(disk, ignore_errors=True)
