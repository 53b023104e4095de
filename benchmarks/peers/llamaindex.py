"""What a user would pick instead: LlamaIndex's own engines as graphs that speak hopgraph's
contract, so ``hopgraph run --graph`` measures them on our model, KB and questions with our
runner, metrics, calls, tokens and seconds (issue 44).

- ``subquestion``: ``SubQuestionQueryEngine`` over one query-engine tool on our KB (beside QD-C).
- ``citation``: ``CitationQueryEngine`` over our KB (beside rag's cited answers).

Both use LlamaIndex's own prompts, question generator and response synthesis, driven through its
OpenAI-compatible LLM class (``OpenAILike``) against the run's endpoint (the embedded llama.cpp
server unless one is set), greedy, with the run's ``max_tokens`` and the model's context window.
Retrieval is our KB's (``tools.retrieval.search``, top-k = ``top_k``) behind a LlamaIndex
retriever. Two things are ours, as for every hopgraph method, so the metrics mean the same:
the short answer EM/F1 score is extracted from the engine's reply by the same call every
method's cited reply goes through (``agents.generator.shortened``), and a question the
sub-question engine cannot decompose (a question-generator reply that does not parse, or no
sub-question) is answered by its base query engine on the raw question, counted as a fallback,
as QD-C falls back to the raw question. Token counts come from each reply's ``usage``.

    hopgraph run --graph benchmarks/peers/llamaindex.py:subquestion --questions q.jsonl \\
      --kb kb --out run

Needs the ``peers`` extra (``pip install 'hopgraph[peers]'``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import time
from collections.abc import Callable, Iterator

import httpx
from langgraph.graph import END
from langgraph.runtime import Runtime
from llama_index.core import Settings
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import Response
from llama_index.core.output_parsers.base import OutputParserException
from llama_index.core.query_engine import (
    CitationQueryEngine,
    RetrieverQueryEngine,
    SubQuestionQueryEngine,
)
from llama_index.core.question_gen import LLMQuestionGenerator
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.tools import QueryEngineTool, ToolMetadata
from llama_index.llms.openai_like import OpenAILike

from hopgraph.agents.generator import shortened
from hopgraph.config import Context
from hopgraph.graphs.shared import InputState, OutputState, cited_output, context, contract_builder
from hopgraph.memory.evidence import Evidence, evidence
from hopgraph.models import chat_model, embedded_server
from hopgraph.models.events import Fallback, LLMCall, emit
from hopgraph.tools.retrieval import search

SOURCE = re.compile(r"^Source \d+:\n")
EMBEDDED_REPLY_S = 900.0


class KbRetriever(BaseRetriever):
    """Our KB's top-k as LlamaIndex nodes, each carrying its KB id (``kb_id``; the citation
    engine gives its chunks new node ids), so citations and kept recall read the same ids as
    hopgraph's own methods."""

    def __init__(self, ctx: Context):
        super().__init__()
        self.ctx = ctx

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [
            NodeWithScore(
                node=TextNode(
                    id_=e["id"],
                    text=e["text"],
                    metadata={"kb_id": e["id"], "title": e.get("title", "")},
                    excluded_llm_metadata_keys=["kb_id"],
                ),
                score=e["score"],
            )
            for e in search(query_bundle.query_str, self.ctx, role="llamaindex")
        ]


def as_evidence(nodes: list[NodeWithScore]) -> list[Evidence]:
    """Nodes as Evidence, in order, the citation engine's ``Source n:`` label removed."""
    return [
        evidence(
            n.node.metadata["kb_id"],
            SOURCE.sub("", n.node.get_content()),
            score=n.score or 0.0,
            title=n.node.metadata.get("title", ""),
        )
        for n in nodes
    ]


def _counted(template: str, model: str) -> Callable[[httpx.Response], None]:
    """An httpx response hook that emits each chat reply as an ``LLMCall`` (tokens from its
    ``usage``), so the runner counts the peer's calls as it counts ours."""

    def hook(response: httpx.Response) -> None:
        if not response.request.url.path.endswith("/chat/completions"):
            return
        response.read()
        latency = response.elapsed.total_seconds()
        try:
            usage = response.json().get("usage") or {}
        except (json.JSONDecodeError, AttributeError):
            usage = {}
        failed = None if response.is_success else f"HTTP {response.status_code}"
        emit(
            LLMCall(
                role="llamaindex",
                template=template,
                model=model,
                kind="text",
                prompt_tokens=usage.get("prompt_tokens", 0),
                completion_tokens=usage.get("completion_tokens", 0),
                latency_s=latency,
                started=time.time() - latency,
                error=failed,
            )
        )

    return hook


@functools.cache
def _vocabulary(gguf: str) -> Callable[[str], list]:
    """The embedded model's own tokenizer (its GGUF's vocabulary, no weights)."""
    from llama_cpp import Llama

    vocab = Llama(model_path=gguf, vocab_only=True, verbose=False)
    return lambda text: vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False)


@contextlib.contextmanager
def llm(ctx: Context, template: str) -> Iterator[OpenAILike]:
    """LlamaIndex's OpenAI-compatible LLM on the run's endpoint, greedy as ours are, over an
    HTTP client closed when the question is done. On the embedded model, LlamaIndex fits
    prompts to the context window with that model's own tokenizer (its default counts with
    GPT's)."""
    model = chat_model(ctx)  # starts the embedded server when no endpoint is set
    timeout = ctx.request_timeout
    if not ctx.base_url:
        Settings.tokenizer = _vocabulary(str(embedded_server(ctx).source()))
        # hopgraph streams from the embedded server and judges it by progress; LlamaIndex waits
        # for whole replies, which take minutes on a 2-core CPU, so it gets the time they take
        timeout = max(timeout, EMBEDDED_REPLY_S)
    with httpx.Client(
        timeout=timeout, event_hooks={"response": [_counted(template, ctx.model)]}
    ) as client:
        yield OpenAILike(
            model=ctx.model,
            api_base=model.base_url,
            api_key=ctx.api_key,
            is_chat_model=True,
            temperature=ctx.temperature,
            max_tokens=ctx.max_tokens,
            context_window=ctx.n_ctx,
            timeout=timeout,
            max_retries=ctx.max_retries,
            http_client=client,
        )


class State(InputState, OutputState, total=False):
    pass


def _answer(question: str, response: Response, ctx: Context) -> OutputState:
    """The contract's output of an engine's cited response over its source nodes."""
    contexts = as_evidence(response.source_nodes)
    return cited_output(shortened(question, str(response).strip(), len(contexts), ctx), contexts)


def cite(state: State, runtime: Runtime[Context]) -> OutputState:
    """CitationQueryEngine: answer with [n] over the KB's top-k, chunked as it chunks them."""
    ctx = context(runtime)
    with llm(ctx, "llamaindex/citation") as model:
        engine = CitationQueryEngine(KbRetriever(ctx), llm=model)
        return _answer(state["question"], engine.query(state["question"]), ctx)


def decompose(state: State, runtime: Runtime[Context]) -> OutputState:
    """SubQuestionQueryEngine: sub-questions, each answered from the KB, then one answer from
    the sub-answers; the raw question through the base engine where it cannot decompose."""
    ctx = context(runtime)
    with llm(ctx, "llamaindex/subquestion") as model:
        base: BaseQueryEngine = RetrieverQueryEngine.from_args(KbRetriever(ctx), llm=model)
        tool = QueryEngineTool(
            base,
            ToolMetadata(
                name="passages",
                description="Encyclopedia passages about people, places, works and "
                "organisations, searched by meaning.",
            ),
        )
        engine = SubQuestionQueryEngine.from_defaults(
            query_engine_tools=[tool],
            llm=model,
            use_async=False,
            # LlamaIndex's question generator for an LLM without function calling (ours)
            question_gen=LLMQuestionGenerator.from_defaults(llm=model),
        )
        question = state["question"]
        try:
            response = engine.query(question)
            passages = _retrieved(response)
            reason = "" if passages else "no sub-question"
        except (ValueError, OutputParserException) as e:  # the generator's reply did not parse
            reason = f"sub-questions did not parse: {e}"[:300]
        if reason:
            emit(
                Fallback(
                    role="llamaindex",
                    reason=reason,
                    used="the raw question",
                    template="llamaindex/subquestion",
                )
            )
            response = base.query(question)
            passages = _retrieved(response)
        # the reply is written over sub-answers, not numbered passages: an [n] in it is invalid
        return cited_output(
            shortened(question, str(response).strip(), 0, ctx), as_evidence(passages)
        )


def _retrieved(response: Response) -> list[NodeWithScore]:
    """The KB passages behind a response, each once (the sub-question engine's source nodes
    also hold its sub-answers, which are no KB item)."""
    seen: dict[str, NodeWithScore] = {}
    for n in response.source_nodes:
        if "kb_id" in n.node.metadata:  # a sub-answer's node has none
            seen.setdefault(n.node.metadata["kb_id"], n)
    return list(seen.values())


def _one_node(node: Callable, name: str):
    builder = contract_builder(State, node)
    builder.add_edge(node.__name__, END)
    return builder.compile(name=name)


citation = _one_node(cite, "llamaindex-citation")
subquestion = _one_node(decompose, "llamaindex-subquestion")
