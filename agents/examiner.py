"""MMAPG's retrieval-module roles (Sec. 3.4): split the instruction into text and image parts
(Eq. 5), build the search queries (Eq. 6-9), examine each candidate (Eq. 12-13) and extract the
node's content from the findings (Eq. 14)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from hopgraph.config import Context
from hopgraph.models import ChatModel, chat_model, user, vlm_model
from hopgraph.models.events import Fallback, emit
from hopgraph.prompts import prompts_for


class Split(BaseModel):
    """Eq. 5: I_instr^text, I_instr^img, and which kind of image retrieval the latter needs."""

    text_part: str = ""
    image_part: str = ""
    image_kind: Literal["targeted", "descriptive", "none"] = "none"


class Examination(BaseModel):
    """O_i of Eq. 12-13: what the candidate says about the instruction, and whether it helps."""

    facts: str = ""
    helps: bool = False


class Phrases(BaseModel):
    phrases: list[str] = Field(default_factory=list)


class TargetedImage(BaseModel):
    """Eq. 7: Q'_text (the picture's names, searched by title) and I_tgt^img."""

    question: str = ""
    names: list[str] = Field(default_factory=list)

    def queries(self) -> list[str]:
        return self.names


class DescribedImage(BaseModel):
    """Eq. 9: Q_img (descriptive phrases) and I_descr^img."""

    question: str = ""
    phrases: list[str] = Field(default_factory=list)

    def queries(self) -> list[str]:
        return self.phrases


IMAGE_QUERIES = {
    "targeted": ("image_target", TargetedImage),
    "descriptive": ("image_describe", DescribedImage),
}


def _render(ctx: Context, name: str, **kw: Any) -> str:
    return prompts_for(ctx.prompts_dir).render(f"mmapg/{name}", **kw)


def split_instruction(instruction: str, parents: list[str], ctx: Context) -> Split:
    """Eq. 5. Fallback: the whole instruction as the text part (no image part)."""
    prompt = _render(ctx, "decompose", instruction=instruction, parents=parents)
    return chat_model(ctx).structured(
        [user(prompt)],
        Split,
        role="retriever",
        template="mmapg/decompose",
        max_tokens=200,
        fallback=Split(text_part=instruction),
    )


def key_phrases(instruction: str, ctx: Context) -> list[str]:
    """Eq. 6, with the few-shot examples F_text in the template. Fallback: no phrase (the
    caller then searches with the text part itself)."""
    out = chat_model(ctx).structured(
        [user(_render(ctx, "keyphrases", instruction=instruction))],
        Phrases,
        role="retriever",
        template="mmapg/keyphrases",
        max_tokens=120,
        fallback=Phrases(),
    )
    return _clean(out.phrases)


def image_queries(instruction: str, kind: str, ctx: Context) -> tuple[list[str], str]:
    """Eq. 7 (targeted: names to search the picture by) or Eq. 9 (descriptive: phrases), with
    the question the examiner asks of each picture found. Fallback: none (the caller then
    searches with the image part itself and asks the instruction)."""
    name, schema = IMAGE_QUERIES[kind]
    out = chat_model(ctx).structured(
        [user(_render(ctx, name, instruction=instruction))],
        schema,
        role="retriever",
        template=f"mmapg/{name}",
        max_tokens=120,
        fallback=schema(),
    )
    return _clean(out.queries()), out.question.strip() or instruction


def examine(candidate: dict[str, Any], instruction: str, question: str, ctx: Context) -> str:
    """Eq. 12 (a text candidate, by the LLM) or Eq. 13 (an image, by the VLM). With no VLM
    configured an image is examined through its own text (title, caption), noted in the trace.
    Returns the facts found, or "" when the candidate does not help."""
    if candidate.get("modality") != "image":
        prompt = _render(ctx, "examine_text", instruction=instruction, **_fields(candidate))
        return _finding(chat_model(ctx), [user(prompt)], "mmapg/examine_text")
    vlm = vlm_model(ctx)
    if vlm is not None and candidate.get("path"):
        prompt = _render(
            ctx, "examine_image", question=question, described=False, **_fields(candidate)
        )
        messages = [user(prompt, [candidate["path"]], ctx.max_image_pixels)]
        return _finding(vlm, messages, "mmapg/examine_image")
    reason = "no VLM configured" if vlm is None else "no image file indexed"
    emit(Fallback("examiner", f"{reason} for {candidate.get('id')}", "its title and caption"))
    prompt = _render(ctx, "examine_image", question=question, described=True, **_fields(candidate))
    return _finding(chat_model(ctx), [user(prompt)], "mmapg/examine_image")


def extract(instruction: str, findings: list[dict[str, Any]], ctx: Context) -> str:
    """Eq. 14: R = M(P_retr ⊕ I_instr ⊕ O), the content of the retrieval node."""
    prompt = _render(ctx, "extract", instruction=instruction, findings=findings)
    return (
        chat_model(ctx)
        .complete([user(prompt)], role="retriever", template="mmapg/extract", max_tokens=120)
        .strip()
    )


def _fields(candidate: dict[str, Any]) -> dict[str, str]:
    return {"title": candidate.get("title", ""), "text": candidate.get("text", "")}


def _finding(model: ChatModel, messages: list[dict[str, Any]], template: str) -> str:
    """The facts first, then the verdict: a small model judging first says "no" to everything.
    Fallback: a reply still malformed after its repair (e.g. cut off at max_tokens) is no
    finding, so one candidate cannot fail the whole question."""
    out = model.structured(
        messages,
        Examination,
        role="examiner",
        template=template,
        max_tokens=120,
        fallback=Examination(),
    )
    return out.facts.strip() if out.helps and out.facts.strip() else ""


def _clean(phrases: list[str]) -> list[str]:
    return list(dict.fromkeys(p.strip() for p in phrases if p and p.strip()))
