"""MAB-DQA's model roles (mab-dqa.txt Sec. 3.2-3.4, App. C): aspect subqueries, the page
judge whose score is the bandit's reward, and the reflective answerer (HRRA).

Pages go to the VLM as images where one is configured; otherwise the LLM reads the page's text
layer, and every call says so in the trace (``described``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from hopgraph.agents.role import Role
from hopgraph.config import Context, knobs_of
from hopgraph.memory.evidence import Evidence
from hopgraph.models import chat_model, question_model, vlm_model
from hopgraph.models.events import Fallback, emit
from hopgraph.settings.mabdqa import MABDQASettings
from hopgraph.tools.replies import parse_score

log = logging.getLogger(__name__)
UNPARSED_SCORE = 3  # the authors' code reads an unparsable judgement as 3 ("moderately")
NOT_ANSWERABLE = "Not answerable"


PAGE = ("question", "page", "described", "text")
"""What the page judges read of a page."""
ASPECTS = Role("decomposer", "mabdqa/aspects", inputs=("question", "max_aspects"))
JUDGE = Role("page_judge", "mabdqa/judge_page", inputs=PAGE)
JUDGE_P_YES = Role("page_judge", "mabdqa/judge_page_p_yes", inputs=PAGE)
ANSWERER = Role("answerer", "mabdqa/answer", inputs=("question", "pages", "described", "picture"))
QUESTION_REFLECTOR = Role(
    "question_reflector", "mabdqa/reflect_question", inputs=("question", "pages", "described")
)
ANSWER_REFLECTOR = Role("answer_reflector", "mabdqa/reflect_answer", inputs=("question", "answer"))
SUMMARIZER = Role("summarizer", "mabdqa/summarize", inputs=("question", "aspects"))
REFINER = Role(
    "answer_refiner",
    "mabdqa/refine_answer",
    inputs=("question", "pages", "described", "first_answer", "summary"),
)


def _page_view(page: Evidence, ctx: Context) -> dict[str, Any]:
    text = " ".join(page["text"].split())
    most = knobs_of(ctx, MABDQASettings).mabdqa_page_chars
    if len(text) > most:
        text = text[:most].rsplit(" ", 1)[0] + " …"
    return {"page": page["page"], "text": text or "(no text on this page)"}


def _reading(
    pages: list[Evidence],
    ctx: Context,
    pictures: Sequence[str] = (),
) -> dict[str, Any]:
    """How a call reads pages: their images to the VLM, else their text to the LLM (``model``,
    ``pictures`` and the template's ``described`` and ``pages``). ``pictures``: the question's
    own images, sent last (they need the VLM)."""
    vlm = vlm_model(ctx) if not pictures else question_model(ctx, list(pictures), "mabdqa")
    images = [p["path"] for p in pages if p.get("path")]
    views = [_page_view(p, ctx) for p in pages]
    if vlm is not None and len(images) == len(pages) and pages:
        return {"model": vlm, "pictures": [*images, *pictures], "described": False, "pages": views}
    return {
        "model": vlm if pictures else chat_model(ctx),
        "pictures": list(pictures),
        "described": True,
        "pages": views,
    }


def aspects(question: str, ctx: Context) -> list[str]:
    """The aspect subqueries q_1..q_M (App. C.1): key phrases, comma separated."""
    most = knobs_of(ctx, MABDQASettings).mabdqa_max_aspects
    reply = ASPECTS.complete(ctx, max_tokens=80, question=question, max_aspects=most)
    out = list(dict.fromkeys(p for p in aspect_phrases(reply) if p and len(p) <= 120))
    return out[:most]


def aspect_phrases(reply: str) -> list[str]:
    """The phrases of an aspects reply: a JSON list read as a list (``["male", "page 17"]``
    gave the subquery ``["male``), else comma- or line-separated phrases."""
    text = reply.strip()
    start, end = text.find("["), text.rfind("]")
    if start != -1 and end > start:
        try:
            listed = json.loads(text[start : end + 1])
        except json.JSONDecodeError:
            listed = None
        if isinstance(listed, list):
            return [str(p).strip() for p in listed if isinstance(p, str | int | float)]
    return [p.strip().strip("\"'.-*[]").strip() for p in text.replace("\n", ",").split(",")]


def judge_page(question: str, page: Evidence, ctx: Context) -> float:
    """s_vlm in [0, 1]: the page's relevance 1-5 mapped to (s - 1) / 4 (App. C.2; unparsable ->
    3), or with ``mabdqa_judge="p_yes"`` P(Yes) that the page shows the facts asked for (a
    graded reward from one forward pass, for small models whose 1-5 replies barely vary)."""
    reading = _reading([page], ctx)
    text = reading.pop("pages")[0]["text"]  # the judge reads its one page as text and number
    variables = {**reading, "question": question, "page": page["page"], "text": text}
    knobs = knobs_of(ctx, MABDQASettings)
    if knobs.mabdqa_judge == "p_yes":
        return JUDGE_P_YES.p_yes(ctx, **variables)
    reply = JUDGE.complete(ctx, max_tokens=knobs.mabdqa_judge_tokens, **variables)
    score = parse_score(reply)
    if score is None:
        log.warning("page judgement without a 1-5 score (read as %d): %r", UNPARSED_SCORE, reply)
        emit(
            Fallback(
                JUDGE.name,
                f"no 1-5 score for page {page['page']}",
                UNPARSED_SCORE,
                JUDGE.template,
                reply[-200:],
            )
        )
        score = UNPARSED_SCORE
    return (score - 1) / 4


def answer(
    question: str,
    pages: list[Evidence],
    ctx: Context,
    pictures: Sequence[str] = (),
) -> str:
    """An answer from the pages only (and the question's own pictures), or "Not answerable"
    (App. C.4)."""
    reply = ANSWERER.complete(
        ctx,
        max_tokens=64,
        **_reading(pages, ctx, pictures),
        question=question,
        picture=bool(pictures),
    )
    text = reply.strip().splitlines()[0].strip() if reply.strip() else ""
    if not text or "not answerable" in text.lower():
        return NOT_ANSWERABLE
    return text


def reflect_question(question: str, pages: list[Evidence], ctx: Context) -> str:
    """The question made specific with what the pages show (App. C.5)."""
    reply = QUESTION_REFLECTOR.complete(
        ctx, max_tokens=80, **_reading(pages, ctx), question=question
    )
    lines = [ln.strip().strip('"') for ln in reply.strip().splitlines() if ln.strip()]
    return lines[0] if lines else question


def answer_responds(question: str, answer_text: str, ctx: Context) -> float:
    """P(Yes) that the answer responds to the question (App. C.6)."""
    return ANSWER_REFLECTOR.p_yes(ctx, question=question, answer=answer_text)


def summarize(question: str, aspects: list[str], ctx: Context) -> str:
    """What an answer must contain, from the question and the hypergraph's aspects (App. C.7)."""
    return SUMMARIZER.complete(ctx, max_tokens=120, question=question, aspects=aspects).strip()


def refine_answer(
    question: str, first: str, summary: str, pages: list[Evidence], ctx: Context
) -> str:
    """A better answer from the pages, the first answer and the summary (App. C.8); its last
    ``Answer:`` line, or "Not answerable"."""
    reply = REFINER.complete(
        ctx,
        max_tokens=200,
        **_reading(pages, ctx),
        question=question,
        first_answer=first,
        summary=summary,
    )
    marked = [
        ln.split(":", 1)[1].strip()
        for ln in reply.splitlines()
        if ln.strip().lower().startswith("answer:")
    ]
    if not marked:  # no answer line: the refinement cannot be read, the first answer stands
        emit(Fallback(REFINER.name, "no Answer: line", first, REFINER.template, reply[-200:]))
        return first
    if not marked[-1] or "not answerable" in marked[-1].lower():
        return NOT_ANSWERABLE
    return marked[-1]
