"""The generator: answers from numbered contexts with inline citations [n] (dense RAG, QDRAG)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hopgraph.agents.role import Role
from hopgraph.config import Context
from hopgraph.memory.evidence import Evidence
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


GENERATOR = Role("generator", "rag/answer")
SHORT_ANSWER = Role("generator", "rag/short_answer")


def generate_cited_answer(
    question: str,
    contexts: list[Evidence],
    ctx: Context,
    *,
    images: list[str] = (),  # type: ignore[assignment]
) -> CitedAnswer:
    """Answer with citations, then a short answer extracted from it (for EM/F1). A question's
    images go with the answer call, to the VLM."""
    text = GENERATOR.complete(
        ctx, pictures=images, max_tokens=160, question=question, contexts=contexts
    ).strip()
    cited, invalid = parse_citations(text, len(contexts))
    short = SHORT_ANSWER.complete(
        ctx, pictures=(), model=GENERATOR.model(ctx, images), max_tokens=32,
        question=question, answer=strip_citations(text),
    )  # fmt: skip
    lines = [ln.strip() for ln in short.strip().splitlines() if ln.strip()]
    answer = strip_citations(lines[0]) if lines else strip_citations(text)
    return CitedAnswer(text=text, answer=answer.rstrip("."), cited=cited, invalid=invalid)
