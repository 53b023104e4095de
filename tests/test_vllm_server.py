"""hopgraph against a real vLLM server: vLLM's CPU build (``make vllm``) serving smollm2-135m,
converted from its verified GGUF, on a loopback port, started here once for the module
(``models/vllm_server.py``, as ``hopgraph serve --engine vllm`` starts it). Skipped, saying so,
where vLLM's environment is absent. A few requests each: vLLM on 2 CPU cores is slow."""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pydantic import BaseModel

from hopgraph.config import Context
from hopgraph.evals.datasets import Question, write_questions
from hopgraph.evals.run_folder import read_predictions
from hopgraph.evals.runner import Runner
from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.models.chat import ChatModel, user

ROOT = Path(__file__).resolve().parents[1]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(not VLLM_PYTHON.exists(), reason="vLLM is not installed here (make vllm)"),
]


@pytest.fixture(scope="module")
def vllm(tmp_path_factory):
    from hopgraph.models.vllm_server import VllmServer

    cache = Path.home() / ".cache" / "hopgraph"  # the converted weights are kept between runs
    with VllmServer("smollm2-135m", cache_dir=cache, python=str(VLLM_PYTHON), eager=True) as server:
        yield server


def model(server, **kw) -> ChatModel:
    return ChatModel(server.base_url, "smollm2-135m", max_retries=1, timeout=600, **kw)


class Capital(BaseModel):
    country: str
    capital: str


def test_it_is_vllm_and_structured_output_goes_through_its_grammar(vllm):
    events = []
    m = model(vllm, on_event=events.append)
    assert m.dialect.name == "vllm"  # owned_by "vllm": the vLLM dialect, json_schema outputs
    out = m.structured([user("France and its capital, as JSON.")], Capital, role="t",
                       max_tokens=60, repair=False)  # fmt: skip
    assert isinstance(out, Capital)  # no fallback: the grammar made it valid
    assert [e["kind"] for e in events] == ["structured"]


def test_p_yes_reads_vllms_own_logprobs(vllm):
    events = []
    p = model(vllm, on_event=events.append).p_yes(
        [user("Is Paris in France? Answer Yes or No.")], role="judge"
    )
    assert 0.0 < p < 1.0 and p != 0.5
    assert [e["event"] for e in events] == ["llm_call"]  # no fallback: Yes / No were found


def test_sampled_plans_differ_as_qdarf_needs(vllm):
    """At T = 0.8 four samples are not one greedy reply four times (the generation-config
    defaults would make them so where a request leaves top_k / top_p out)."""
    m = model(vllm)
    asks = [user("Name a city in Europe and say one thing about it.")]
    texts = {m.complete(asks, role="qdarf", temperature=0.8, max_tokens=24) for _ in range(4)}
    assert len(texts) >= 2


@pytest.fixture(scope="module")
def town_kb(tmp_path_factory):
    path = tmp_path_factory.mktemp("vllm-kb")
    KnowledgeBase(path).add(
        [
            Item("text", f"k{i}", f"Town {i} was founded by Ada Moor {i}.", title=f"Town {i}")
            for i in range(8)
        ]  # fmt: skip
    )
    return path


def test_a_batch_runs_concurrently_and_resumes_after_the_server_is_killed(vllm, town_kb, tmp_path):
    """Eight questions in flight at once on vLLM's continuous batching all finish; then the
    server is killed under a second batch, and the same command against a new server keeps
    every finished question and answers the rest."""
    from hopgraph.models.vllm_server import VllmServer

    qfile = tmp_path / "q.jsonl"
    write_questions([Question(f"q{i}", f"Who founded Town {i}?", [f"Ada Moor {i}"]) for i in
                     range(8)], qfile)  # fmt: skip
    ctx = Context(base_url=vllm.base_url, model="smollm2-135m", kb_dir=str(town_kb),
                  max_retries=0, request_timeout=600)  # fmt: skip
    summary = Runner("rag", tmp_path / "run", ctx).run(qfile, concurrency=8)
    assert (summary.finished, summary.failed) == (8, 0)
    assert all(
        p["llm_calls"] == 2
        for p in read_predictions(tmp_path / "run" / "predictions.jsonl").values()
    )

    more = tmp_path / "more.jsonl"
    write_questions([Question(f"m{i}", f"Who founded Town {i}?") for i in range(4)], more)
    killed = []

    def kill_after_first(pred, _summary):
        if not killed:
            killed.append(pred["id"])
            vllm.stop(now=True)  # the server's engine and worker processes go with it

    Runner("rag", tmp_path / "more", ctx).run(
        more, on_done=kill_after_first, max_consecutive_failures=0
    )
    first = read_predictions(tmp_path / "more" / "predictions.jsonl")
    assert not first[killed[0]]["error"] and any(p["error"] for p in first.values())
    with VllmServer("smollm2-135m", cache_dir=vllm.cache_dir, python=str(VLLM_PYTHON),
                    eager=True) as again:  # fmt: skip
        summary = Runner("rag", tmp_path / "more", ctx.replace(base_url=again.base_url)).run(more)
    done = read_predictions(tmp_path / "more" / "predictions.jsonl")
    assert (
        summary.skipped_done == 1 and all(not p["error"] for p in done.values()) and len(done) == 4
    )
    vllm.start()  # the module's server again, for any test after this one


def test_requests_in_flight_together_are_batched(vllm):
    """Eight calls sent at once all come back whole (vLLM schedules them together)."""
    m = model(vllm)
    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda i: m.complete([user(f"Count to {i + 2}.")], role="c",
                                                       max_tokens=16), range(8)))  # fmt: skip
    assert len(replies) == 8 and all(r.strip() for r in replies)
