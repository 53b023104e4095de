"""The tests' ``hopgraph ARGS`` (a child forked from tests/zygote.py) answers as a new
interpreter does: the same exit status, output and error for the same command, run in its own
folder with its own environment, reading a module beside it as ``python -m`` lets it, and
ending as an interrupt ends Python."""

import gc
import signal

from servers import hopgraph, started

OWN_GRAPH = """
import os, signal, sys
from pathlib import Path
Path("seen.txt").write_text(f"{os.getcwd()}|{os.environ.get('TOWN')}|{sys.argv[0]}")
if os.environ.get("TOWN") == "interrupt":
    os.kill(os.getpid(), signal.SIGINT)
"""


def answers(args, cwd, town, monkeypatch, cold):
    monkeypatch.setenv("TESTS_COLD_CLI", "1" if cold else "0")
    got = hopgraph(*args, cwd=cwd, env={"TOWN": town})
    assert not (cwd / "r").exists()
    return got.returncode, got.stdout, got.stderr


def test_a_warm_command_answers_as_a_cold_one(tmp_path, monkeypatch):
    (tmp_path / "q.jsonl").write_text('{"id": "a", "question": "Why?"}\n')
    (tmp_path / "mine.py").write_text(OWN_GRAPH)
    own = ("run", "--graph", "mine:build", "--questions", "q.jsonl", "--out", "r")
    commands = [
        ("--help",),
        ("run", "--agent", "ragg", "--questions", "q.jsonl", "--out", "r"),
        ("run", "--agent", "rag", "--questions", "q.jsonl", "--set", "top_k=-1", "--out", "r"),
        own,
    ]
    seen = {}
    for args in commands:
        cold = answers(args, tmp_path, "cold", monkeypatch, cold=True)
        seen["cold"] = (tmp_path / "seen.txt").read_text().split("|") if args == own else None
        assert answers(args, tmp_path, "warm", monkeypatch, cold=False) == cold, args
    seen["warm"] = (tmp_path / "seen.txt").read_text().split("|")
    # the user's module was imported from the command's folder, with its environment
    assert seen["cold"][:2] == [str(tmp_path), "cold"]
    assert seen["warm"][:2] == [str(tmp_path), "warm"]
    assert seen["warm"][2] == seen["cold"][2]  # sys.argv[0], as -m sets it
    # interrupted, it ends as a new interpreter's command does
    cold = answers(own, tmp_path, "interrupt", monkeypatch, cold=True)
    assert answers(own, tmp_path, "interrupt", monkeypatch, cold=False) == cold
    assert cold[0] == 130


def test_a_command_killed_and_waited_for_leaves_no_folder(monkeypatch):
    """A test that kills a command and only waits for it (never reads its output) leaves none
    of the temporary folder its streams went to, once the command is dropped."""
    monkeypatch.setenv("TESTS_COLD_CLI", "0")
    proc = started(code="import time; print('up', flush=True); time.sleep(600)")
    folder = proc._tmp
    assert proc.first_line() == "up\n"
    proc.kill()
    assert proc.wait(60) == -signal.SIGKILL
    del proc
    gc.collect()
    assert not folder.exists()
