"""The generator: answers from numbered contexts with inline citations [n] (dense RAG, QDRAG)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hopgraph.config import Context
from hopgraph.models import question_model, user
from hopgraph.prompts import prompts_for
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


def generate_cited_answer(
    question: str,
    contexts: list[dict[str, Any]],
    ctx: Context,
    *,
    template: str = "rag/answer",
    images: list[str] = (),  # type: ignore[assignment]
    who: str = "",
) -> CitedAnswer:
    """Answer with citations, then a short answer extracted from it (for EM/F1). A question's
    images go with the answer call, to the VLM."""
    prompts = prompts_for(ctx.prompts_dir)
    model = question_model(ctx, list(images), who or question[:60])
    prompt = prompts.render(template, question=question, contexts=contexts)
    text = model.complete(
        [user(prompt, images, ctx.max_image_pixels)],
        role="generator",
        template=template,
        max_tokens=160,
    ).strip()
    cited, invalid = parse_citations(text, len(contexts))
    short = model.complete(
        [user(prompts.render("rag/short_answer", question=question, answer=strip_citations(text)))],
        role="generator",
        template="rag/short_answer",
        max_tokens=32,
    )
    lines = [ln.strip() for ln in short.strip().splitlines() if ln.strip()]
    answer = strip_citations(lines[0]) if lines else strip_citations(text)
    return CitedAnswer(text=text, answer=answer.rstrip("."), cited=cited, invalid=invalid)
