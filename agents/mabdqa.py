"""MAB-DQA's model roles (mab-dqa.txt Sec. 3.2-3.4, App. C): aspect subqueries, the page
judge whose score is the bandit's reward, and the reflective answerer (HRRA).

Pages go to the VLM as images where one is configured; otherwise the LLM reads the page's text
layer, and every call says so in the trace (``described``)."""

from __future__ import annotations

import logging
from typing import Any

from hopgraph.config import Context
from hopgraph.memory.evidence import Evidence
from hopgraph.models import chat_model, user, vlm_model
from hopgraph.models.events import Fallback, emit
from hopgraph.prompts import prompts_for
from hopgraph.tools.replies import parse_score

log = logging.getLogger(__name__)
UNPARSED_SCORE = 3  # the authors' code reads an unparsable judgement as 3 ("moderately")
NOT_ANSWERABLE = "Not answerable"


def _render(ctx: Context, name: str, **kw: Any) -> str:
    return prompts_for(ctx.prompts_dir).render(f"mabdqa/{name}", **kw)


def _page_view(page: Evidence, ctx: Context) -> dict[str, Any]:
    text = " ".join(page["text"].split())
    if len(text) > ctx.mabdqa_page_chars:
        text = text[: ctx.mabdqa_page_chars].rsplit(" ", 1)[0] + " …"
    return {"page": page["page"], "text": text or "(no text on this page)"}


def _pages_message(prompt_name: str, pages: list[Evidence], ctx: Context, **kw: Any):
    """(model, message) for a prompt over pages: their images to the VLM, else their text."""
    vlm = vlm_model(ctx)
    images = [p["path"] for p in pages if p.get("path")]
    if vlm is not None and len(images) == len(pages) and pages:
        prompt = _render(
            ctx, prompt_name, described=False, pages=[_page_view(p, ctx) for p in pages], **kw
        )
        return vlm, user(prompt, images, ctx.max_image_pixels)
    prompt = _render(
        ctx, prompt_name, described=True, pages=[_page_view(p, ctx) for p in pages], **kw
    )
    return chat_model(ctx), user(prompt)


def aspects(question: str, ctx: Context) -> list[str]:
    """The aspect subqueries q_1..q_M (App. C.1): key phrases, comma separated."""
    reply = chat_model(ctx).complete(
        [user(_render(ctx, "aspects", question=question, max_aspects=ctx.mabdqa_max_aspects))],
        role="decomposer",
        template="mabdqa/aspects",
        max_tokens=80,
    )
    phrases = [p.strip().strip("\"'.-*").strip() for p in reply.replace("\n", ",").split(",")]
    out = list(dict.fromkeys(p for p in phrases if p and len(p) <= 120))
    return out[: ctx.mabdqa_max_aspects]


def judge_page(question: str, page: Evidence, ctx: Context) -> float:
    """s_vlm in [0, 1]: the page's relevance 1-5 mapped to (s - 1) / 4 (App. C.2; unparsable ->
    3), or with ``mabdqa_judge="p_yes"`` P(Yes) that the page shows the facts asked for (a
    graded reward from one forward pass, for small models whose 1-5 replies barely vary)."""
    name = "judge_page_p_yes" if ctx.mabdqa_judge == "p_yes" else "judge_page"
    text = _page_view(page, ctx)["text"]
    model, message = _pages_message(
        name, [page], ctx, question=question, page=page["page"], text=text
    )
    if name == "judge_page_p_yes":
        return model.p_yes([message], role="page_judge", template=f"mabdqa/{name}")
    reply = model.complete([message], role="page_judge", template=f"mabdqa/{name}",
                           max_tokens=ctx.mabdqa_judge_tokens)  # fmt: skip
    score = parse_score(reply)
    if score is None:
        log.warning("page judgement without a 1-5 score (read as %d): %r", UNPARSED_SCORE, reply)
        emit(Fallback("page_judge", f"no 1-5 score for page {page['page']}", UNPARSED_SCORE,
                      f"mabdqa/{name}", reply[-200:]))  # fmt: skip
        score = UNPARSED_SCORE
    return (score - 1) / 4


def answer(question: str, pages: list[Evidence], ctx: Context) -> str:
    """An answer from the pages only, or "Not answerable" (App. C.4)."""
    model, message = _pages_message("answer", pages, ctx, question=question)
    reply = model.complete([message], role="answerer", template="mabdqa/answer", max_tokens=64)
    text = reply.strip().splitlines()[0].strip() if reply.strip() else ""
    if not text or "not answerable" in text.lower():
        return NOT_ANSWERABLE
    return text


def reflect_question(question: str, pages: list[Evidence], ctx: Context) -> str:
    """The question made specific with what the pages show (App. C.5)."""
    model, message = _pages_message("reflect_question", pages, ctx, question=question)
    reply = model.complete([message], role="question_reflector",
                           template="mabdqa/reflect_question", max_tokens=80)  # fmt: skip
    lines = [ln.strip().strip('"') for ln in reply.strip().splitlines() if ln.strip()]
    return lines[0] if lines else question


def answer_responds(question: str, answer_text: str, ctx: Context) -> float:
    """P(Yes) that the answer responds to the question (App. C.6)."""
    prompt = _render(ctx, "reflect_answer", question=question, answer=answer_text)
    return chat_model(ctx).p_yes([user(prompt)], role="answer_reflector",
                                 template="mabdqa/reflect_answer")  # fmt: skip


def summarize(question: str, aspects: list[str], ctx: Context) -> str:
    """What an answer must contain, from the question and the hypergraph's aspects (App. C.7)."""
    prompt = _render(ctx, "summarize", question=question, aspects=aspects)
    reply = chat_model(ctx).complete(
        [user(prompt)], role="summarizer", template="mabdqa/summarize", max_tokens=120
    )
    return reply.strip()


def refine_answer(
    question: str, first: str, summary: str, pages: list[Evidence], ctx: Context
) -> str:
    """A better answer from the pages, the first answer and the summary (App. C.8); its last
    ``Answer:`` line, or "Not answerable"."""
    model, message = _pages_message(
        "refine_answer", pages, ctx, question=question, first_answer=first, summary=summary
    )
    reply = model.complete([message], role="answer_refiner", template="mabdqa/refine_answer",
                           max_tokens=200)  # fmt: skip
    marked = [ln.split(":", 1)[1].strip() for ln in reply.splitlines()
              if ln.strip().lower().startswith("answer:")]  # fmt: skip
    if not marked:  # no answer line: the refinement cannot be read, the first answer stands
        emit(Fallback("answer_refiner", "no Answer: line", first, "mabdqa/refine_answer",
                      reply[-200:]))  # fmt: skip
        return first
    if not marked[-1] or "not answerable" in marked[-1].lower():
        return NOT_ANSWERABLE
    return marked[-1]
