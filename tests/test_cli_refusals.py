"""Faults that would fail every question are refused once, before a run folder, a knowledge
base folder or a model server exists (exit 2, one line naming the fault)."""

import pytest
from servers import hopgraph, scripted


def test_run_refuses_a_missing_questions_file_kb_or_agent_before_starting(tmp_path):
    (tmp_path / "q.jsonl").write_text('{"id": "a", "question": "Why?"}\n')
    cases = [
        (["--agent", "rag", "--questions", "missing.jsonl"], "no questions file at missing.jsonl"),
        (["--agent", "rag", "--questions", "q.jsonl", "--kb", "nokb"], "no knowledge base at nokb"),
        (
            ["--agent", "ragg", "--questions", "q.jsonl"],
            "unknown agent 'ragg' (did you mean 'rag'?); agents: direct",
        ),
        (
            ["--agent", "qdrag", "--questions", "q.jsonl", "--set", "qdrag_mode=bogus"],
            "'qdrag_mode' must be one of 'qdc', 'qdr', 'dense', 'sparse', not 'bogus'",
        ),
    ]
    for args, message in cases:
        out = hopgraph("run", *args, "--out", "runs/x", cwd=tmp_path)
        assert out.returncode == 2, out.stderr
        assert message in out.stderr and out.stderr.count("error:") == 1
        assert not (tmp_path / "runs").exists() and not (tmp_path / "nokb").exists()
    (tmp_path / "bad.jsonl").write_text('{"id": null, "question": null}\n')
    out = hopgraph("run", "--agent", "rag", "--questions", "bad.jsonl", "--out", "r", cwd=tmp_path)
    assert out.returncode == 2 and "holds no valid question" in out.stderr
    assert "bad.jsonl:1: question (no id): missing id" in out.stderr


def test_reading_commands_refuse_a_folder_no_run_wrote_and_ask_a_missing_kb_first(tmp_path):
    """eval / compare printed "[Errno 2] ... metrics.json.tmp"; trace printed nothing (exit
    0) or blamed the question; ask started the graph before finding no KB (exit 1)."""
    (tmp_path / "empty").mkdir()
    for args in (
        ["eval", "nowhere"],
        ["compare", "nowhere", "empty"],
        ["trace", "nowhere"],
        ["trace", "nowhere", "q1"],
        ["trace", "nowhere", "empty", "q1"],
    ):
        out = hopgraph(*args, cwd=tmp_path)
        assert out.returncode == 2 and "no run folder at nowhere" in out.stderr, (args, out.stderr)
    out = hopgraph("eval", "empty", cwd=tmp_path)
    assert out.returncode == 2 and "empty is not a run folder" in out.stderr
    out = hopgraph(
        "ask",
        "Who wrote Nineteen Eighty-Four?",
        "--kb",
        "nokb",
        "--base-url",
        "http://127.0.0.1:9/v1",
        cwd=tmp_path,
    )
    assert out.returncode == 2 and "no knowledge base at nokb" in out.stderr
    assert "cannot reach" not in out.stderr  # refused before the endpoint is asked


def test_index_refuses_a_missing_source_and_leaves_no_kb(tmp_path):
    out = hopgraph("index", "nowhere", "--kb", "kb", cwd=tmp_path)
    assert out.returncode == 2 and "nothing to index at nowhere" in out.stderr
    assert not (tmp_path / "kb").exists()


def test_agent_help_names_the_agents(tmp_path):
    out = hopgraph("run", "--help", cwd=tmp_path)
    line = next(ln for ln in out.stdout.splitlines() if "--agent" in ln)
    assert "direct | rag | qdrag | mmapg | mabdqa" in line


def test_search_prints_whole_ids_on_a_narrow_terminal_and_needs_a_kb(tmp_path):
    from hopgraph.memory.kb import Item, KnowledgeBase

    KnowledgeBase(tmp_path / "kb").add(
        [Item("text", "a", "Marrowick has a copper lighthouse on its northern pier.", title="M")]
    )
    (item_id,) = [i["id"] for i in KnowledgeBase(tmp_path / "kb").iter_items("text")]
    out = hopgraph("search", "lighthouse", "--kb", "kb", cwd=tmp_path, env={"COLUMNS": "50"})
    assert out.returncode == 0, out.stderr
    assert item_id in out.stdout  # not cut to "text-1bbf…"
    out = hopgraph("search", "lighthouse", "--kb", "nokb", cwd=tmp_path)
    assert out.returncode == 2 and "no knowledge base at" in out.stderr
    assert not (tmp_path / "nokb").exists()


def test_run_refuses_a_broken_unsafe_or_mismatched_prompt_overlay_once(tmp_path):
    (tmp_path / "q.jsonl").write_text('{"id": "a", "question": "Why?"}\n')
    overlays = {
        "syntax": ("rag/answer.j2", "{% for c in contexts %}{{ c.text }}", "is invalid at line"),
        "unsafe": ("answer.j2", "{{ ''.__class__.__mro__ }}", "is unsafe"),
        "unknown": ("rag/answer.j2", "{{ questoin }}", "uses questoin, which rag/answer is never"),
        "typo": ("rag/anwser.j2", "{{ question }}", "overrides no template"),
        # passed the check, then failed each question with a RecursionError
        "loop": ("rag/answer.j2", '{{ question }}{% include "rag/answer.j2" %}', "includes itself"),
    }
    for name, (file, text, message) in overlays.items():
        (tmp_path / name / file).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name / file).write_text(text)
        out = hopgraph(
            "run",
            "--agent",
            "rag",
            "--questions",
            "q.jsonl",
            "--out",
            f"runs/{name}",
            "--prompts",
            name,
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            cwd=tmp_path,
        )
        assert out.returncode == 2, (name, out.stderr)
        assert message in out.stderr and out.stderr.count("error:") == 1, (name, out.stderr)
    assert not (tmp_path / "runs").exists()


def test_run_refuses_an_unreachable_endpoint_or_an_unserved_model_once(tmp_path):
    from scripted_server import ScriptedServer

    (tmp_path / "q.jsonl").write_text('{"id": "a", "question": "Why?"}\n')
    args = ["run", "--agent", "direct", "--questions", "q.jsonl", "--out", "runs/x"]
    out = hopgraph(*args, "--base-url", "http://127.0.0.1:9/v1", "--model", "m", cwd=tmp_path)
    assert out.returncode == 2 and "cannot reach model endpoint http://127.0.0.1:9/v1" in out.stderr
    with ScriptedServer() as server:
        out = hopgraph(*args, "--base-url", server.base_url, "--model", "other", cwd=tmp_path)
        assert server.calls == 0  # refused before any question reached the model
    assert out.returncode == 2 and "model 'other' is not served" in out.stderr
    assert "served: scripted" in out.stderr and not (tmp_path / "runs").exists()


MUSIQUE = {
    "id": "2hop__1_2",
    "question": "Who founded the town where Ada was born?",
    "answer": "Bo",
    "answer_aliases": [],
    "paragraphs": [
        {"title": "Ada", "paragraph_text": "Ada was born in Lund.", "is_supporting": True},
        {"title": "Lund", "paragraph_text": "Lund was founded by Bo.", "is_supporting": True},
    ],
}


def test_a_source_that_yields_nothing_is_an_error_and_json_arrays_are_read(tmp_path):
    """A MuSiQue file saved as one JSON array gave "0 questions" and "0 added", exit 0, and
    run then answered over an empty KB. Both shapes are read; what yields nothing says what
    was expected and what was found."""
    import json

    (tmp_path / "musique.json").write_text(json.dumps([MUSIQUE, MUSIQUE | {"id": "2hop__3"}]))
    out = hopgraph("data", "convert", "musique", "musique.json", "--jsonl", "q.jsonl", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert len((tmp_path / "q.jsonl").read_text().splitlines()) == 2
    out = hopgraph("index", "musique.json", "--kb", "kb", "--format", "musique", cwd=tmp_path)
    assert out.returncode == 0 and "2 added" in out.stdout, out.stdout + out.stderr

    (tmp_path / "other.json").write_text(json.dumps([{"title": "x", "body": "y"}]))
    out = hopgraph("data", "convert", "musique", "other.json", "--out", "o.jsonl", cwd=tmp_path)
    assert out.returncode == 2 and not (tmp_path / "o.jsonl").exists()
    assert "expected JSON lines (or a JSON array) of objects with id, question" in out.stderr
    assert "found 1+ records with keys ['body', 'title']" in out.stderr
    out = hopgraph("index", "other.json", "--kb", "kb2", "--format", "musique", cwd=tmp_path)
    assert out.returncode == 2 and "nothing was indexed from other.json" in out.stderr
    assert "--format" in out.stderr

    from hopgraph.memory.kb import KnowledgeBase

    KnowledgeBase(tmp_path / "empty").add([])  # a KB folder with nothing in it
    (tmp_path / "one.jsonl").write_text('{"id": "a", "question": "Why?"}\n')
    out = hopgraph(
        "run",
        "--agent",
        "rag",
        "--questions",
        "one.jsonl",
        "--kb",
        "empty",
        "--out",
        "r",
        cwd=tmp_path,
    )
    assert out.returncode == 2 and "holds no item" in out.stderr and not (tmp_path / "r").exists()


def test_serve_refuses_weights_for_llama_cpp_and_a_folder_that_is_no_model(tmp_path):
    """Before anything starts: llama.cpp serves only the embedded GGUFs, and a --weights folder
    must be a Hugging Face model folder (vLLM would fail minutes later, deep in its start-up)."""
    (tmp_path / "vpy").write_text("")  # a vLLM environment is named; it is never run
    out = hopgraph("serve", "--weights", str(tmp_path), cwd=tmp_path)
    assert out.returncode == 2 and "--weights is for --engine vllm" in out.stderr
    out = hopgraph(
        "serve",
        "--engine",
        "vllm",
        "--vllm-python",
        str(tmp_path / "vpy"),
        "--weights",
        str(tmp_path),
        "--model",
        "mine",
        cwd=tmp_path,
    )
    assert out.returncode == 2, out.stderr
    assert f"{tmp_path} is not a Hugging Face model folder (no config.json)" in out.stderr


def test_run_takes_its_methods_knobs_with_a_knowledge_base(tmp_path, town_kb):
    """`hopgraph run --agent mmapg --kb KB --set mmapg_max_iterations=10` was refused as an
    unknown field (the KB was opened with the shared Context), so benchmarks/mmapg_hotpot.sh
    answered nothing; another method's knob is still refused, naming whose it is."""
    (tmp_path / "q.jsonl").write_text('{"id": "a", "question": "Why?"}\n')
    args = [
        "run",
        "--agent",
        "mmapg",
        "--questions",
        "q.jsonl",
        "--out",
        "runs/x",
        "--kb",
        str(town_kb),
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
    ]
    out = hopgraph(*args, "--set", "mmapg_max_iterations=10", cwd=tmp_path)
    assert out.returncode == 2 and "cannot reach model endpoint" in out.stderr, out.stderr
    out = hopgraph(*args, "--set", "qdrag_budget=3", cwd=tmp_path)
    assert out.returncode == 2 and "qdrag_budget is QDRAG's, not this graph's" in out.stderr


def test_help_reflows_each_command_to_the_terminal_not_the_docstrings_lines(tmp_path):
    """Help texts broke mid sentence where the docstring's lines did (issue 72)."""
    out = hopgraph("--help", cwd=tmp_path, env={"COLUMNS": "120"})
    rows = [line.strip("│ ").rstrip() for line in out.stdout.splitlines()]
    serve = next(i for i, r in enumerate(rows) if r.startswith("serve "))
    # the first line is filled to the width, not cut where the docstring wrapped
    assert len(rows[serve]) > 100, rows[serve]


def test_every_number_is_bounded_where_it_is_read_flags_and_knobs_alike(tmp_path):
    """A number outside its range, or not finite, is refused before any work (exit 2, naming
    the field, the value and the range; nothing written): before, ``--limit -1`` ran one
    question, ``request_timeout=1e30`` printed an OverflowError traceback and ``0`` failed
    every question as a connection error, negative retries and tokens were taken, optimize's
    ``--alpha nan`` wrote NaN into record.json and ``--demos -1`` crashed after its bootstrap."""
    (tmp_path / "q.jsonl").write_text('{"id": "a", "question": "Why?"}\n')
    run = ["run", "--agent", "direct", "--questions", "q.jsonl", "--out", "r"]
    opt = ["optimize", "--agent", "rag", "--questions", "q.jsonl", "--out", "r"]
    cases = [
        (run + ["--limit", "-1"], "--limit must be at least 1, not -1"),
        (run + ["--concurrency", "0"], "--concurrency must be at least 1 (range 1..1024), not 0"),
        (run + ["--set", "request_timeout=1e30"], "'request_timeout' must be at most 86400"),
        (run + ["--set", "request_timeout=-1"], "'request_timeout' must be at least 0.001"),
        (run + ["--set", "request_timeout=0"], "'request_timeout' must be at least 0.001"),
        (run + ["--set", "max_retries=-1"], "'max_retries' must be at least 0 (range 0..100)"),
        (run + ["--set", "max_tokens=0"], "'max_tokens' must be at least 1"),
        (run + ["--set", "max_tokens=-1"], "'max_tokens' must be at least 1"),
        (
            run + ["--set", "temperature=2.0000001"],
            "'temperature' must be at most 2 (range 0..2), not 2.0000001",
        ),
        (opt + ["--alpha", "nan"], "--alpha must be a finite number, not nan"),
        (opt + ["--alpha", "inf"], "--alpha must be a finite number, not inf"),
        (opt + ["--alpha", "-1"], "--alpha must be at least 0.001 (range 0.001..0.5), not -1"),
        (opt + ["--alpha", "1.5"], "--alpha must be at most 0.5 (range 0.001..0.5), not 1.5"),
        (opt + ["--demos", "-1"], "--demos must be at least 1"),
        (opt + ["--rounds", "-1"], "--rounds must be at least 1"),
        (opt + ["--minibatch", "-1"], "--minibatch must be at least 0, not -1"),
    ]
    for args, message in cases:
        out = hopgraph(*args, cwd=tmp_path)
        assert out.returncode == 2 and message in out.stderr, (args, out.stderr[-400:])
        assert "Traceback" not in out.stderr and not (tmp_path / "r").exists(), args


def test_search_view_and_mcp_numbers_are_refused_naming_the_option(tmp_path):
    """``search -k 0`` / ``-k -4`` and ``view --port 70000`` / ``-1`` ended in tracebacks, and
    ``mcp --http --port 99999`` silently listened on 99999 mod 65536."""
    cases = [
        (["search", "x", "-k", "0"], "-k must be at least 1 (range 1..10000), not 0"),
        (["search", "x", "-k", "-4"], "-k must be at least 1 (range 1..10000), not -4"),
        (["memory", "recall", "x", "-k", "0"], "-k must be at least 1"),
        (["view", ".", "--port", "70000"], "--port must be at most 65535 (range 0..65535)"),
        (["view", ".", "--port", "-1"], "--port must be at least 0 (range 0..65535), not -1"),
        (["mcp", "--http", "--port", "99999"], "--port must be at most 65535 (range 1..65535)"),
    ]
    for args, message in cases:
        out = hopgraph(*args, cwd=tmp_path)
        assert out.returncode == 2 and message in out.stderr, (args, out.stderr[-400:])
        assert "Traceback" not in out.stderr, args


def test_every_numeric_option_of_every_command_has_its_bounds():
    """Each int or float option is checked by ``within`` before the command runs (an option
    added without one would take any number)."""
    import typer

    import hopgraph.cli  # noqa: F401 - registers every command
    from hopgraph.cli.app import app

    def numbers(command, path=()):  # noqa: ANN001, ANN202
        for name, sub in getattr(command, "commands", {}).items():
            yield from numbers(sub, (*path, name))
        for param in getattr(command, "params", []):
            if param.type_descriptor.annotation in (int, float, int | None, float | None):
                yield " ".join(path), param.name, param.callback

    found = list(numbers(typer.main.get_command(app)))
    assert len(found) > 20
    unbounded = [
        (cmd, name)
        for cmd, name, check in found
        if "within" not in getattr(check, "__qualname__", "")
    ]
    assert unbounded == []


def test_every_option_and_argument_of_every_command_says_what_it_is():
    """About 20 options had an empty description in ``--help`` and in the CLI reference,
    ``run --concurrency`` among them. Every shown option and argument now has one."""
    from hopgraph.cli import reference

    shown = [
        (words, p)
        for words, command in reference.commands()
        for p in command.params
        if not getattr(p, "hidden", False)
    ]
    bare = [(words, p.name) for words, p in shown if not (getattr(p, "help", "") or "").strip()]
    assert bare == []
    # help is read as Markdown, where <kb> is an HTML tag and vanished from `index --help`
    tagged = [(words, p.name) for words, p in shown if "<" in (getattr(p, "help", "") or "")]
    assert tagged == []


def test_a_refused_command_leaves_no_folder(tmp_path):
    """A refused ``--checkpointer`` run left its run folder, and an index refused for its
    source's format its new KB folder, though a refused command leaves none."""
    from scripted_server import ScriptedServer

    (tmp_path / "q.jsonl").write_text('{"id": "a", "question": "Why?"}\n')
    (tmp_path / "a.xyz").write_text("what is this\n")
    with ScriptedServer() as model:
        for dsn in ("mysql://u@127.0.0.1/db", "postgresql://u@127.0.0.1:1/db"):
            out = hopgraph(
                "run",
                "--agent",
                "direct",
                "--questions",
                "q.jsonl",
                "--out",
                "r",
                *scripted(model.base_url),
                "--checkpointer",
                dsn,
                cwd=tmp_path,
            )
            assert out.returncode == 2 and "checkpointer" in out.stderr.lower(), out.stderr
            assert not (tmp_path / "r").exists(), dsn
    out = hopgraph("index", "a.xyz", "--kb", "k", cwd=tmp_path)
    assert out.returncode == 2 and "cannot tell the format of a.xyz" in out.stderr
    assert not (tmp_path / "k").exists()


def test_out_is_a_folder_in_every_command_and_a_file_is_named_by_its_kind(tmp_path):
    """``--out`` named a run folder in ``run``, a search folder in ``optimize`` and a page or a
    JSONL file elsewhere. Now a listed ``--out`` is always a folder, a written file is named by
    ``--html`` / ``--jsonl`` / ``--results``, and the old ``--out`` of those is taken, unlisted."""
    import click
    import typer

    from hopgraph.cli import app

    def commands(cmd: click.Command, path: str = ""):  # noqa: ANN202
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from commands(sub, f"{path} {name}".strip())

    listed, files = {}, {}
    for path, cmd in commands(typer.main.get_command(app)):
        for p in cmd.params:
            if "--out" in getattr(p, "opts", ()) and not getattr(p, "hidden", False):
                listed[path] = p.help or ""
            if {"--html", "--jsonl", "--results"} & set(getattr(p, "opts", ())):
                files[path] = p.opts[0]
    assert listed and all("folder" in text for text in listed.values()), listed
    assert files == {
        "trace": "--html",
        "compare": "--html",
        "data convert": "--jsonl",
        "grail eval": "--results",
        "qdrag preferences": "--jsonl",
    }
    for path in files:  # each still takes the old spelling, unlisted
        cmd = typer.main.get_command(app)
        for part in path.split():
            cmd = cmd.commands[part]
        assert any("--out" in p.opts and p.hidden for p in cmd.params), path
    src = tmp_path / "q.jsonl"
    src.write_text('{"id": "x", "question": "What is this?"}\n')
    convert = ("data", "convert", "image-vqa", "q.jsonl")
    both = hopgraph(*convert, "--jsonl", "a.jsonl", "--out", "b.jsonl", cwd=tmp_path)
    assert both.returncode == 2 and "--jsonl and --out name the same file" in both.stderr
    none = hopgraph(*convert, cwd=tmp_path)
    assert none.returncode == 2 and "missing option --jsonl" in none.stderr
    assert not (tmp_path / "a.jsonl").exists() and not (tmp_path / "b.jsonl").exists()
    old = hopgraph(*convert, "--out", "b.jsonl", cwd=tmp_path)
    assert old.returncode == 0 and (tmp_path / "b.jsonl").is_file(), old.stderr


def test_an_optimize_refused_for_its_proposer_or_model_leaves_no_folder(tmp_path, town_kb):
    """An unreachable proposer or a model the endpoint does not serve is refused (exit 2), and
    the search folder it would have made is not left behind (``OUT/cache/`` was)."""
    import socket

    from scripted_server import ScriptedServer

    lines = [
        f'{{"id": "t{i}", "question": "What about town {i}?", "answers": ["x"]}}' for i in range(8)
    ]
    (tmp_path / "q.jsonl").write_text("\n".join(lines) + "\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"  # nothing listens once closed
    with ScriptedServer() as server:
        base = [
            "optimize",
            "--agent",
            "rag",
            "--questions",
            "q.jsonl",
            "--kb",
            town_kb,
            "--base-url",
            server.base_url,
        ]
        for args in (
            ["--model", "scripted", "--proposer-base-url", dead],
            ["--model", "not-served"],
        ):
            out = hopgraph(*base, *args, "--out", "opt", cwd=tmp_path)
            assert out.returncode == 2 and "error:" in out.stderr, (args, out.stderr[-500:])
            assert not (tmp_path / "opt").exists(), (args, list((tmp_path / "opt").rglob("*")))


def test_the_version_is_the_package_s_and_the_changelog_names_it():
    """``hopgraph --version`` prints the version pyproject.toml declares, and CHANGELOG.md (Keep
    a Changelog form) has a heading for it below its Unreleased one."""
    import re
    from pathlib import Path

    import tomllib

    root = Path(__file__).resolve().parents[1]
    declared = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    shown = hopgraph("--version")
    assert shown.returncode == 0 and shown.stdout.strip() == f"hopgraph {declared}"
    headings = re.findall(r"^## (\S+)", (root / "CHANGELOG.md").read_text(), re.M)
    assert headings[0] == "Unreleased" and declared in headings


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            (
                "run",
                "--agent",
                "direct",
                "--questions",
                "q.jsonl",
                "--out",
                "r",
                "--set",
                "limit_question_chars=-1",
            ),
            "'limit_question_chars' must be at least 1",
        ),
        (
            ("optimize", "--agent", "rag", "--questions", "q.jsonl", "--out", "o", "--alpha", "0"),
            "--alpha must be at least 0.001",
        ),
    ],
)
def test_an_operator_limit_or_a_test_level_of_zero_or_less_is_refused(tmp_path, args, said):
    """``--set limit_question_chars=-1`` and ``optimize --alpha 0`` were accepted."""
    (tmp_path / "q.jsonl").write_text('{"id": "a", "question": "Why?"}\n')
    out = hopgraph(*args, cwd=tmp_path)
    assert out.returncode == 2 and said in out.stderr, out.stderr
    assert not (tmp_path / "r").exists() and not (tmp_path / "o").exists()


def test_a_finished_record_a_spent_budget_and_other_settings_need_no_model_server(
    tmp_path, town_kb
):
    """A finished record re-run started the embedded server (about 20 s) before saying "2
    already done"; a spent budget ran 244 s before exiting 4; a settings change was accepted
    on a finished record and refused on an unfinished one only once the server was up. A
    record answered on a scripted endpoint is re-run on the embedded engine, whose server here
    is a script that leaves a mark and fails: no re-run below may start it."""
    from scripted_server import ScriptedServer

    from hopgraph.questions.datasets import Question, write_questions

    questions = [Question(f"q{i}", f"What is in town {i}?", [f"a{i}"], []) for i in range(3)]
    write_questions(questions[:2], tmp_path / "two.jsonl")
    write_questions(questions, tmp_path / "three.jsonl")
    server = tmp_path / "llama-server"
    server.write_text(f"#!/bin/sh\ntouch {tmp_path / 'started'}\nexit 1\n")
    server.chmod(0o755)
    env = {"HOPGRAPH_LLAMA_SERVER": str(server)}
    base = [
        "run",
        "--agent",
        "rag",
        "--out",
        "r",
        "--kb",
        str(town_kb),
        "--model",
        "smollm2-135m",
        "--set",
        "engine=llama-server",
    ]
    with ScriptedServer(model="smollm2-135m") as model:
        made = hopgraph(
            *base, "--questions", "two.jsonl", "--base-url", model.base_url, cwd=tmp_path
        )
    assert made.returncode == 0, made.stderr
    again = hopgraph(*base, "--questions", "two.jsonl", cwd=tmp_path, env=env)
    assert again.returncode == 0 and "2 already done" in again.stdout, again.stderr
    spent = hopgraph(
        *base, "--questions", "three.jsonl", "--budget-tokens", "1", cwd=tmp_path, env=env
    )
    assert spent.returncode == 4, spent.stderr
    assert "budget reached: 1 question(s) not started" in spent.stderr
    for qfile in ("two.jsonl", "three.jsonl"):  # finished, and with a question left
        other = hopgraph(*base, "--questions", qfile, "--set", "top_k=3", cwd=tmp_path, env=env)
        assert other.returncode == 2, other.stderr
        assert "was answered with other settings than this run's: top_k=" in other.stderr
    assert not (tmp_path / "started").exists()
    assert len((tmp_path / "r" / "predictions.jsonl").read_text().splitlines()) == 2


def test_a_llama_server_the_operator_names_that_cannot_run_is_named_not_replaced(tmp_path):
    """``HOPGRAPH_LLAMA_SERVER=/nonexistent`` fell back to llama-cpp-python without a word; a
    file that is not executable failed with "Errno 13" and no variable named."""
    (tmp_path / "q.jsonl").write_text('{"id": "a", "question": "Why?"}\n')
    text = tmp_path / "not-a-program"
    text.write_text("#!/bin/sh\n")
    run = ["run", "--agent", "direct", "--questions", "q.jsonl", "--out", "r"]
    for path, why in (
        ("/nonexistent/llama-server", "is not a file"),
        (str(text), "is not executable"),
    ):
        out = hopgraph(
            *run,
            "--model",
            "smollm2-135m",
            cwd=tmp_path,
            env={"HOPGRAPH_LLAMA_SERVER": path},
            timeout=300,
        )
        assert out.returncode == 2, out.stderr
        assert f"HOPGRAPH_LLAMA_SERVER={path} {why}" in out.stderr, out.stderr
        assert not (tmp_path / "r").exists()
