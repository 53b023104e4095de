"""Python syntax read from any thread: ``ast.parse`` and ``ast.literal_eval`` taking turns.

CPython 3.11 keeps the AST builder's recursion count per interpreter, not per call, so a
parse that starts while another thread's AST is being built (that thread gave up the GIL in a
finalizer the garbage collector ran) leaves the first one's count off, and it fails with
``SystemError: AST constructor recursion depth mismatch`` (python/cpython#106905 and its
kin; CI met it once: a run's code fingerprint beside another thread's parse). Ours take turns
under one lock (re-entrant: a finalizer may parse on the thread that holds it); one tripped
by a parse outside the lock, a library's, is simply read again."""

import ast
import threading
from collections.abc import Callable
from typing import Any

_TURN = threading.RLock()
TRIES = 3


def _in_turn(read: Callable[[str], Any], text: str) -> Any:
    for attempt in range(1, TRIES + 1):
        with _TURN:
            try:
                return read(text)
            except SystemError as e:
                if "recursion depth mismatch" not in str(e) or attempt == TRIES:
                    raise
    raise AssertionError("unreachable")


def parse(source: str) -> ast.Module:
    """``ast.parse(source)``, safe beside other threads' parses."""
    return _in_turn(ast.parse, source)


def literal(text: str) -> Any:
    """``ast.literal_eval(text)``, safe beside other threads' parses."""
    return _in_turn(ast.literal_eval, text)
