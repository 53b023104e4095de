"""LangGraph state machines, one module per method; each exposes a compiled ``graph``."""

from __future__ import annotations

import importlib

GRAPHS = {
    "direct": "hopgraph.graphs.direct",
    "rag": "hopgraph.graphs.rag",
    "qdrag": "hopgraph.graphs.qdrag",
    "mmapg": "hopgraph.graphs.mmapg",
    "mabdqa": "hopgraph.graphs.mabdqa",
}
"""Agent name -> module holding its compiled ``graph`` (grown by each method's issue)."""


DEFAULT_RECURSION_LIMIT = 200


def recursion_limit(name: str, ctx) -> int:  # noqa: ANN001 - a Context
    """The LangGraph recursion limit a run of ``name`` sets: the module's own
    ``recursion_limit(ctx)`` where its loop has a cap (MMAPG), else a generous default."""
    module = importlib.import_module(GRAPHS[name])
    limit = getattr(module, "recursion_limit", None)
    return limit(ctx) if limit else DEFAULT_RECURSION_LIMIT


def load_graph(name: str):
    """The compiled graph registered as ``name``."""
    try:
        module = GRAPHS[name]
    except KeyError:
        raise ValueError(f"unknown agent {name!r}; agents: {', '.join(sorted(GRAPHS))}") from None
    return importlib.import_module(module).graph
