"""MMAPG's knowledge-base triplet conversion (Eq. 1-2): passage -> (subject, relation, object)
facts through the LLM with few-shot examples; results cached per passage and model."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field

from hopgraph import prompts
from hopgraph.agents.role import CALLER_HANDLES, Role
from hopgraph.config import Context
from hopgraph.memory.cache import JsonCache
from hopgraph.memory.kb import Item
from hopgraph.models import StructuredOutputError
from hopgraph.models.events import Repair, emit
from hopgraph.tools.replies import complete_triplets

EXAMPLES = json.loads(
    (Path(prompts.__file__).parent / "mmapg" / "triplets_examples.json").read_text()
)
"""The few-shot set F_tri of Eq. 1: our own invented passages, kept with the prompts."""


TRIPLETS = Role("triplet_converter", "mmapg/triplets")


class Triplets(BaseModel):
    facts: list[list[str]] = Field(description="[subject, relation, object] triplets")


def extract_triplets(item: Item, ctx: Context, cache: JsonCache | None = None) -> list[list[str]]:
    """T_i = M(P_tri ⊕ F_tri ⊕ S_i) (Eq. 1), well-formed triplets only, cached by item id."""
    namespace = f"triplets:{ctx.model}"
    if cache is not None and (hit := cache.get(namespace, item.id)) is not None:
        return hit
    try:
        found = TRIPLETS.structured(
            ctx, Triplets, fallback=CALLER_HANDLES, repair=False,
            examples=EXAMPLES, title=item.title, text=item.text,
        ).facts  # fmt: skip
    except StructuredOutputError as e:  # cut at max_tokens: the complete triplets still count
        found = complete_triplets(e.raw)
        if not found:
            raise
        emit(Repair(TRIPLETS.name, {"salvaged": len(found), "error": str(e)[:200]}))
    facts = [[str(p).strip() for p in f] for f in found if len(f) == 3 and all(map(str.strip, f))]
    if cache is not None:
        cache.put(namespace, item.id, facts)
    return facts
