"""The runtime module: one fan-out for a question's parallel calls, one place for the process's
caches, and Context's own range checks."""

import contextvars
import threading

import pytest

from hopgraph import runtime
from hopgraph.graphs import every_context
from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.tools.retrieval import knowledge_base

Context = every_context()  # every built-in method's knobs

WHO = contextvars.ContextVar("who", default="nobody")


def test_fan_out_keeps_order_caps_the_calls_in_flight_and_carries_the_context():
    lock = threading.Lock()
    running, most = 0, 0
    entered = threading.Barrier(3, timeout=30)  # three calls meet: 3 really run at once

    def call(n: int) -> tuple[int, str]:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        if n < 3:
            entered.wait()
        with lock:
            running -= 1
        return n * n, WHO.get()

    WHO.set("question-7")
    out = runtime.fan_out(call, range(12), workers=3)
    assert out == [(n * n, "question-7") for n in range(12)]
    assert most == 3


def test_one_worker_runs_the_calls_in_order_in_this_thread():
    seen = []
    out = runtime.fan_out(lambda n: seen.append(threading.get_ident()) or n, [3, 1, 2], 1)
    assert out == [3, 1, 2] and set(seen) == {threading.get_ident()}


def test_close_all_closes_every_cached_object_and_later_uses_get_fresh_ones(tmp_path):
    KnowledgeBase(tmp_path / "kb").add([Item("text", "a", "Ports freeze in winter.")])
    ctx = Context(kb_dir=str(tmp_path / "kb"))
    first = knowledge_base(ctx)
    assert knowledge_base(ctx) is first
    closed = []
    mine = runtime.process_cache("test objects", close=closed.append)
    mine.get("x", lambda: "made once")
    assert runtime.caches()["knowledge bases"] >= 1 and runtime.caches()["test objects"] == 1
    runtime.close_all()
    assert closed == ["made once"] and runtime.caches()["knowledge bases"] == 0
    again = knowledge_base(ctx)
    assert again is not first and again.search("frozen port", k=1)[0]["text"].startswith("Ports")


@pytest.mark.parametrize(
    "field, value", [("mmapg_max_iterations", 0), ("top_k", 0), ("mabdqa_m", -1)]
)
def test_context_refuses_a_knob_below_its_floor_when_made(field, value):
    with pytest.raises(ValueError, match=f"'{field}' must be at least "):
        Context(**{field: value})
    with pytest.raises(ValueError, match=f"'{field}' must be at least "):
        Context().replace(**{field: str(value)})
