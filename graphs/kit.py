"""Everything a method of one's own needs, in one import (``examples/self_ask/graph.py`` uses
nothing else of hopgraph): the contract (``InputState``, ``contract_builder``, ``context``,
``cited_output``, ``over_budget``), the Context and how to declare knobs of one's own
(``knob``, ``context_class``), a ``Role`` per LLM call site, the retrieval
service (``search``, GRAIL's ``steerable_search``), ``Evidence``, the typed trace events, the
cited answer every built-in method writes, and ``add_template_folder`` for its own prompts."""

from hopgraph.agents.generator import generate_cited_answer, short_answer
from hopgraph.agents.role import Role, Shown
from hopgraph.config import Context, context_class, knob
from hopgraph.graphs.shared import (
    InputState,
    OutputState,
    add_chain,
    cited_output,
    context,
    contract_builder,
    over_budget,
)
from hopgraph.memory.evidence import Evidence, evidence
from hopgraph.models.events import Fallback, Repair, Retrieval, Step, emit
from hopgraph.prompts import add_template_folder
from hopgraph.tools.grail.tool import steerable_search
from hopgraph.tools.retrieval import search

__all__ = [
    "Context",
    "Evidence",
    "Fallback",
    "InputState",
    "OutputState",
    "Repair",
    "Retrieval",
    "Role",
    "Shown",
    "Step",
    "add_chain",
    "add_template_folder",
    "cited_output",
    "context",
    "context_class",
    "contract_builder",
    "emit",
    "evidence",
    "generate_cited_answer",
    "knob",
    "over_budget",
    "search",
    "short_answer",
    "steerable_search",
]
