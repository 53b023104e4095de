"""Parses from two threads at once (CPython 3.11 shares the AST builder's recursion count
across threads): the second parse is made to start while the first one's tree is being built,
from a hook the tree builder itself calls: it sets each node's fields with ``setattr``, so a
``__setattr__`` on ``ast.Constant`` runs inside the first parse, every time (a finalizer run by
the garbage collector, the way CI met it, lands there only by chance)."""

import ast
import threading
from pathlib import Path

import pytest

from hopgraph import pysyntax

SOURCE = (Path(pysyntax.__file__).parent / "harness" / "runner.py").read_text(encoding="utf-8")


def test_two_threads_parsing_at_once_both_get_their_tree():
    inside, other_done = threading.Event(), threading.Event()
    errors: list[SystemError] = []

    def first(depth=40):  # deeper than the second thread's: their counts differ
        if depth:
            return first(depth - 1)
        try:
            pysyntax.parse(SOURCE)
        except SystemError as e:
            errors.append(e)

    def second():
        inside.wait(timeout=30)
        try:
            pysyntax.parse(SOURCE)
        except SystemError as e:
            errors.append(e)
        other_done.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]

    def field_set(node, name, value):
        """Inside the first parse's tree building: lets the second parse start and waits
        (bounded: with the turns taken, the other parse waits for ours) for it."""
        object.__setattr__(node, name, value)
        if threading.current_thread() is threads[0] and not inside.is_set():
            inside.set()
            other_done.wait(timeout=1.0)

    ast.Constant.__setattr__ = field_set
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        del ast.Constant.__setattr__
    assert inside.is_set(), "the tree builder never set a field inside the first parse"
    assert not errors, errors


@pytest.mark.parametrize("text", ["[1, 2]", "('a', 'b')"])
def test_literal_reads_python_literals(text):
    assert list(pysyntax.literal(text)) == list(eval(text))
