"""Parses from two threads at once (CPython 3.11 shares the AST builder's recursion count
across threads): the second parse is made to start while the first one's tree is being built,
by a finalizer the garbage collector runs inside it."""

import gc
import sys
import threading
from pathlib import Path

import pytest

from hopgraph import pysyntax

SOURCE = (Path(pysyntax.__file__).parent / "harness" / "runner.py").read_text(encoding="utf-8")


def _inside_compile() -> bool:
    """Whether the finalizer runs within ``ast.parse``'s ``compile`` call (its caller frame)."""
    caller = sys._getframe(2)
    return caller.f_code.co_name == "parse" and caller.f_code.co_filename.endswith("ast.py")


def test_two_threads_parsing_at_once_both_get_their_tree():
    inside, other_done, over = threading.Event(), threading.Event(), threading.Event()
    errors = []

    class Trigger:
        """Cyclic garbage whose finalizer, once inside the first parse, lets the second one
        start and waits (bounded) for it; elsewhere it re-arms itself for the next collection."""

        def __del__(self):
            if inside.is_set() or over.is_set():  # after the test: never re-armed
                return
            if _inside_compile():
                inside.set()
                other_done.wait(timeout=1.0)  # taking turns: the other parse waits for ours
            else:
                arm()

    def arm():
        a, b = Trigger(), Trigger()
        a.b, b.a = b, a

    def first(depth=40):  # deeper than the second thread's: their counts differ
        if depth:
            return first(depth - 1)
        try:
            arm()
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

    threshold, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(10)
    gc.enable()  # a test run's earlier code may have left the collector off in this process
    try:
        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        over.set()
        gc.set_threshold(*threshold)
        if not enabled:
            gc.disable()
    assert inside.is_set(), "the finalizer never ran inside the first parse"
    assert not errors, errors


@pytest.mark.parametrize("text", ["[1, 2]", "('a', 'b')"])
def test_literal_reads_python_literals(text):
    assert list(pysyntax.literal(text)) == list(eval(text))
