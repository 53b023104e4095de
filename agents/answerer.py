"""The closed-book answerer: the model answers from its own knowledge, no retrieval."""

from __future__ import annotations

from collections.abc import Sequence

from hopgraph.agents.role import Role
from hopgraph.config import Context

ANSWERER = Role("answerer", "direct/answer", inputs=("question",), system="direct/system")


def answer_closed_book(question: str, ctx: Context, images: Sequence[str] = ()) -> str:
    """One call; a question's images go with it to the VLM."""
    text = ANSWERER.complete(ctx, pictures=images, max_tokens=64, question=question)
    return text.strip().splitlines()[0].strip() if text.strip() else ""
