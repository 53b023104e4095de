"""hopgraph against a real vLLM server: vLLM's CPU build (``make vllm``) serving smollm2-135m,
converted from its verified GGUF, on a loopback port, started here once for the module
(``models/vllm_server.py``, as ``hopgraph serve --engine vllm`` starts it). Skipped, saying so,
where vLLM's environment is absent. A few requests each: vLLM on 2 CPU cores is slow."""

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pydantic import BaseModel

from hopgraph.config import Context
from hopgraph.harness.run_folder import read_predictions
from hopgraph.harness.runner import Runner
from hopgraph.memory.kb import Item, KnowledgeBase
from hopgraph.models.chat import ChatModel, user
from hopgraph.questions.datasets import Question, write_questions

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
    server = VllmServer("smollm2-135m", cache_dir=cache, python=str(VLLM_PYTHON), eager=True)
    with pytest.MonkeyPatch.context() as mp:  # a deployment serving vLLM has no llama.cpp
        mp.setitem(sys.modules, "llama_cpp", None)
        server.start()
    with server:
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
    out = m.structured(
        [user("France and its capital, as JSON.")], Capital, role="t", max_tokens=60, repair=False
    )
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
        ]
    )
    return path


def test_a_batch_runs_concurrently_and_resumes_after_the_server_is_killed(vllm, town_kb, tmp_path):
    """Eight questions in flight at once on vLLM's continuous batching all finish; then the
    server is killed under a second batch, and the same command against a new server keeps
    every finished question and answers the rest."""
    from hopgraph.models.vllm_server import VllmServer

    qfile = tmp_path / "q.jsonl"
    write_questions(
        [Question(f"q{i}", f"Who founded Town {i}?", [f"Ada Moor {i}"]) for i in range(8)], qfile
    )
    ctx = Context(
        base_url=vllm.base_url,
        model="smollm2-135m",
        kb_dir=str(town_kb),
        max_retries=0,
        request_timeout=600,
    )
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
    with VllmServer(
        "smollm2-135m", cache_dir=vllm.cache_dir, python=str(VLLM_PYTHON), eager=True
    ) as again:
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
        replies = list(
            pool.map(
                lambda i: m.complete([user(f"Count to {i + 2}.")], role="c", max_tokens=16),
                range(8),
            )
        )
    assert len(replies) == 8 and all(r.strip() for r in replies)


@pytest.fixture(scope="module")
def tiny_vl(tmp_path_factory):
    """vLLM serving a Qwen2.5-VL built from its config (random weights, tests only), from a
    local model folder as ``hopgraph serve --engine vllm --weights DIR`` serves one."""
    import subprocess

    from tiny_models import tiny_qwen25_vl

    from hopgraph.models.vllm_server import VllmServer

    vision = subprocess.run(
        [str(VLLM_PYTHON), "-c", "import torchvision"], capture_output=True, text=True
    )
    if vision.returncode:
        # vLLM loads Qwen2_5_VLProcessor whole, and transformers has Qwen2.5-VL's video
        # processor only on torchvision; PyPI's torchvision for torch 2.13 is a CUDA build
        pytest.skip(
            "Qwen2.5-VL's processor needs torchvision, which vLLM's environment lacks: "
            + vision.stderr.strip().splitlines()[-1]
        )
    folder = tiny_qwen25_vl(tmp_path_factory.mktemp("qwen25vl"))
    with VllmServer(
        "tiny-qwen2.5-vl",
        cache_dir=tmp_path_factory.mktemp("cache"),
        python=str(VLLM_PYTHON),
        eager=True,
        n_ctx=8192,
        weights_dir=folder,
    ) as server:
        yield server


def test_page_images_and_an_image_examination_go_through_qwen25_vls_processor(tiny_vl, tmp_path):
    """A MAB-DQA answer over three page images (one a 9 px strip that Qwen's processor would
    refuse unpadded) and an MMAPG image examination reach vLLM's Qwen2.5-VL processor and
    model: 200s whose prompts hold the image tokens, from our own prompts and image parts."""
    from PIL import Image

    from hopgraph.agents.mabdqa import answer
    from hopgraph.agents.mmapg import examine
    from hopgraph.models import vlm_model

    sizes = [(600, 800), (800, 600), (400, 9)]
    paths = []
    for i, size in enumerate(sizes):
        paths.append(tmp_path / f"page{i}.png")
        Image.new("RGB", size, (40 * i, 120, 200)).save(paths[-1])
    ctx = Context(
        base_url=tiny_vl.base_url,
        model="tiny-qwen2.5-vl",
        max_retries=0,
        vlm_base_url=tiny_vl.base_url,
        vlm_model="tiny-qwen2.5-vl",
        request_timeout=600,
        image_roots=str(tmp_path),
    )
    events: list[dict] = []
    vlm_model(ctx).on_event = events.append
    pages = [
        {
            "id": f"p{i}",
            "page": i + 1,
            "text": f"Page {i + 1}.",
            "path": str(p),
            "modality": "image",
        }
        for i, p in enumerate(paths)
    ]
    reply = answer("What colour is the chart?", pages, ctx)
    image = {
        "id": "img",
        "title": "A chart",
        "text": "",
        "path": str(paths[0]),
        "modality": "image",
    }
    found = examine(image, "Find the chart's colour.", "What colour is the chart?", ctx)
    assert isinstance(reply, str) and isinstance(found, str)
    calls = [e for e in events if e["event"] == "llm_call"]
    assert [c["extra"].get("images") for c in calls][:2] == [3, 1]
    assert all(not c.get("error") for c in calls)
    # each image became at least one merged 28 px patch token beside its vision markers
    text_only = ChatModel(tiny_vl.base_url, "tiny-qwen2.5-vl").request(
        [user("x")], role="t", template="", kind="text", max_tokens=1
    )
    assert calls[0]["prompt_tokens"] > text_only.usage.prompt_tokens + 3 * 3
