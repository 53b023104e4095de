"""GRAIL in the retrieval service and as a LangChain tool: ``steerable_search`` (the plain search,
or with evidence held and a mode, the query embedding steered away from it) and ``grail_search``
an agent can call. No LLM call."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from hopgraph.config import Context, knobs_of
from hopgraph.memory.evidence import Evidence, rescored
from hopgraph.memory.kb import KnowledgeBase
from hopgraph.models.events import Retrieval, emit
from hopgraph.runtime import ProcessCache, process_cache
from hopgraph.settings.grail import GrailContext, GrailSettings
from hopgraph.tools.retrieval import knowledge_base, search

if TYPE_CHECKING:
    from hopgraph.tools.grail.retrieval import Grail

_steerers: ProcessCache[tuple, Grail] = process_cache("GRAIL steerers")


def grail_for(ctx: Context) -> Grail:
    """One Grail per (knowledge base, weights, τ_base): Chroma's index, or, when an adapter
    was trained (its space differs from the index's), the KB's projection through it, kept in
    the engine beside the KB (``ProjectedSearcher.projection``): no process loads the KB whole.
    A Context without GRAIL's settings (a graph of one's own that steers) gets their defaults."""
    knobs = knobs_of(GrailContext.adopt(ctx), GrailSettings)
    key = (ctx.kb_dir, ctx.chroma_url, knobs.grail_weights, knobs.grail_tau_base)

    def make() -> Grail:  # torch loads with the first steered search, not with the graph
        from hopgraph.tools.grail.models import GrailModel
        from hopgraph.tools.grail.retrieval import ChromaSearcher, Grail, ProjectedSearcher

        kb = knowledge_base(ctx)
        model = (
            GrailModel.load(knobs.grail_weights, tau_base=knobs.grail_tau_base, kb=kb)
            if knobs.grail_weights
            else GrailModel(kb.embedder.dim, tau_base=knobs.grail_tau_base)
        )
        if model.aligner is None:
            return Grail(ChromaSearcher(kb), model)
        weights = Path(knobs.grail_weights) / "grail.safetensors"
        key = hashlib.sha256(weights.read_bytes()).hexdigest()
        return Grail(ProjectedSearcher(kb, model, key), model)

    return _steerers.get(key, make)


def steerable_search(
    query: str | np.ndarray,
    ctx: Context,
    *,
    held: Sequence[str] = (),
    steer: str = "",
    k: int | None = None,
    role: str = "retriever",
    **plain,
) -> list[Evidence]:
    """``tools.retrieval.search``, or with ``steer`` (a GRAIL mode) and ``held`` evidence ids,
    the query embedding steered away from what ``held`` covers and the top-k not in ``held``
    (GRAIL, no LLM call; ``plain``'s radius and modalities do not apply then)."""
    if not (steer and held):  # with steering on, what it finds keeps its vectors to steer by
        return search(query, ctx, k=k, role=role, vectors=bool(steer), **plain)
    began = time.perf_counter()
    kb = knowledge_base(ctx)
    k = k or ctx.top_k
    hits, grail = _steered(query, list(held), k, steer, ctx, kb)
    shown = query if isinstance(query, str) else plain.get("label") or "(vector)"
    emit(Retrieval.of(role, shown, hits, began, context=list(held), **grail))
    return hits


def grail_search(
    query: str, context_ids: list[str], k: int, mode: str, ctx: Context
) -> list[Evidence]:
    """Top-k items not in ``context_ids`` for the query steered away from them (the retrieval
    service's GRAIL path; with nothing held, a plain search). A mode the weights cannot run
    (gap or hybrid untrained) runs its stand-in, and the trace says so (``requested``,
    ``fallback``)."""
    return steerable_search(query, ctx, k=k, held=context_ids, steer=mode, role="grail")


def _steered(
    query: str | np.ndarray, held: list[str], k: int, mode: str, ctx: Context, kb: KnowledgeBase
) -> tuple[list[Evidence], dict]:
    """GRAIL's steered top-k, fetched from the knowledge base once, and what the trace records
    of it: the mode that ran, the one requested where it had to fall back, the gate."""
    import torch

    grail = grail_for(ctx)
    q = torch.as_tensor(kb.embedder.encode_one(query) if isinstance(query, str) else query)
    runs, why = grail.model.mode_for(mode)
    found, steered = grail.search(q, held, k, runs)
    stored = {e["id"]: e for e in kb.get([i for i, _ in found])}
    hits = [rescored(stored[i], round(s, 4), grail=runs) for i, s in found if i in stored]
    diagnostics = {"mode": runs, **steered.diagnostics()}
    return hits, diagnostics | ({"requested": mode, "fallback": why} if why else {})


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
