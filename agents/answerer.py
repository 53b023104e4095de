"""The closed-book answerer: the model answers from its own knowledge, no retrieval."""

from __future__ import annotations

from hopgraph.config import Context
from hopgraph.models import question_model, system, user
from hopgraph.prompts import prompts_for


def answer_closed_book(question: str, ctx: Context, images: list[str] = (), who: str = "") -> str:
    """One call; a question's images go with it to the VLM."""
    prompts = prompts_for(ctx.prompts_dir)
    messages = [
        system(prompts.render("direct/system")),
        user(prompts.render("direct/answer", question=question), images, ctx.max_image_pixels),
    ]
    text = question_model(ctx, list(images), who or question[:60]).complete(
        messages, role="answerer", template="direct/answer", max_tokens=64
    )
    return text.strip().splitlines()[0].strip() if text.strip() else ""
