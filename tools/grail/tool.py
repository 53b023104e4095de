"""``grail_search`` as a LangChain tool an agent can call: evidence that complements what the
agent already holds, found by steering the query embedding (no LLM call)."""

from __future__ import annotations

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from hopgraph.config import Context
from hopgraph.memory.evidence import Evidence
from hopgraph.runtime import ProcessCache, process_cache
from hopgraph.tools.grail.models import GrailModel
from hopgraph.tools.grail.retrieval import ChromaSearcher, Grail, MatrixSearcher
from hopgraph.tools.retrieval import knowledge_base, search

_steerers: ProcessCache[tuple, Grail] = process_cache("GRAIL steerers")


def grail_for(ctx: Context) -> Grail:
    """One Grail per (knowledge base, weights, τ_base): Chroma's index, or the matrix when an
    adapter was trained (its space differs from the index's)."""
    key = (ctx.kb_dir, ctx.chroma_url, ctx.grail_weights, ctx.grail_tau_base)

    def make() -> Grail:
        kb = knowledge_base(ctx)
        model = (
            GrailModel.load(ctx.grail_weights, tau_base=ctx.grail_tau_base, kb=kb)
            if ctx.grail_weights
            else GrailModel(kb.embedder.dim, tau_base=ctx.grail_tau_base)
        )
        searcher = MatrixSearcher.from_kb(kb) if model.aligner is not None else ChromaSearcher(kb)
        return Grail(searcher, model)

    return _steerers.get(key, make)


def grail_search(
    query: str, context_ids: list[str], k: int, mode: str, ctx: Context
) -> list[Evidence]:
    """Top-k items not in ``context_ids`` for the query steered away from them (the retrieval
    service's GRAIL path; with nothing held, a plain search). A mode the weights cannot run
    (gap or hybrid untrained) runs its stand-in, and the trace says so (``requested``,
    ``fallback``)."""
    return search(query, ctx, k=k, held=context_ids, steer=mode, role="grail")


class GrailArgs(BaseModel):
    query: str = Field(description="the question or what is still missing")
    context_ids: list[str] = Field(default_factory=list, description="ids of evidence already held")
    k: int = Field(default=5, ge=1, le=50)
    mode: str = Field(
        default="gap-fixed", description="query | additive | gap-fixed | gap | hybrid"
    )


def make_grail_tool(ctx: Context) -> StructuredTool:
    def run(
        query: str, context_ids: list[str] | None = None, k: int = 5, mode: str = "gap-fixed"
    ) -> list[Evidence]:
        return grail_search(query, context_ids or [], k, mode, ctx)

    return StructuredTool.from_function(
        run,
        name="grail_search",
        description="Search the knowledge base for evidence that complements the evidence already "
        "held (context_ids): the query is steered away from what those items cover.",
        args_schema=GrailArgs,
    )
