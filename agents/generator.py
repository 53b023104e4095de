"""The generator: answers from numbered contexts with inline citations [n] (dense RAG, QDRAG)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hopgraph.agents.role import Role
from hopgraph.config import Context
from hopgraph.memory.evidence import Evidence
from hopgraph.models import ChatModel
from hopgraph.tools.replies import parse_citations, strip_citations


@dataclass
class CitedAnswer:
    text: str
    """The model's reply with its citation marks."""
    answer: str
    """The short answer, for exact-match scoring."""
    cited: list[int] = field(default_factory=list)
    """1-based numbers of cited contexts that exist, in order of first mention."""
    invalid: list[int] = field(default_factory=list)
    """Cited numbers with no such context."""


GENERATOR = Role("generator", "rag/answer", inputs=("question", "contexts"))
SHORT_ANSWER = Role("generator", "rag/short_answer", inputs=("question", "answer"))


def generate_cited_answer(
    question: str,
    contexts: list[Evidence],
    ctx: Context,
    *,
    images: Sequence[str] = (),
) -> CitedAnswer:
    """Answer with citations, then a short answer extracted from it (for EM/F1). A question's
    images go with the answer call, to the VLM."""
    text = GENERATOR.complete(
        ctx, pictures=images, max_tokens=160, question=question, contexts=contexts
    ).strip()
    return shortened(question, text, len(contexts), ctx, model=GENERATOR.model(ctx, images))


def shortened(
    question: str, text: str, n_contexts: int, ctx: Context, *, model: ChatModel | None = None
) -> CitedAnswer:
    """A cited reply over ``n_contexts`` numbered contexts as a ``CitedAnswer``: its citations
    parsed and a short answer extracted from it (for EM/F1), by ``model`` (the one that wrote
    it; the LLM by default). Every method's cited reply is shortened by this one call."""
    cited, invalid = parse_citations(text, n_contexts)
    answer = short_answer(question, text, ctx, model=model)
    return CitedAnswer(text=text, answer=answer, cited=cited, invalid=invalid)


def short_answer(question: str, text: str, ctx: Context, *, model: ChatModel | None = None) -> str:
    """The short answer EM/F1 score, extracted from a method's final reply by one shared call:
    every method in a comparison is scored by this one rule."""
    short = SHORT_ANSWER.complete(
        ctx,
        pictures=(),
        model=model,
        max_tokens=32,
        question=question,
        answer=strip_citations(text),
    )
    lines = [ln.strip() for ln in short.strip().splitlines() if ln.strip()]
    return (strip_citations(lines[0]) if lines else strip_citations(text)).rstrip(".")
