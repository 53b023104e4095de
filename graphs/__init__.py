"""LangGraph state machines, one module per method; each exposes a compiled ``graph``."""

from __future__ import annotations

import importlib

GRAPHS = {
    "direct": "hopgraph.graphs.direct",
    "rag": "hopgraph.graphs.rag",
    "qdrag": "hopgraph.graphs.qdrag",
}
"""Agent name -> module holding its compiled ``graph`` (grown by each method's issue)."""


def load_graph(name: str):
    """The compiled graph registered as ``name``."""
    try:
        module = GRAPHS[name]
    except KeyError:
        raise ValueError(f"unknown agent {name!r}; agents: {', '.join(sorted(GRAPHS))}") from None
    return importlib.import_module(module).graph
