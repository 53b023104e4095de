"""MMAPG's roles. The planning module (Sec. 3.3): the overall plan, generated once (P_plan_gen),
and each step's decision (Eq. 4). The retrieval module (Sec. 3.4): split the instruction into text
and image parts (Eq. 5), build the search queries (Eq. 6-9), examine each candidate (Eq. 12-13)
and extract the node's content from the findings (Eq. 14). The reasoning module: answer an
instruction from the nodes it is given (Alg. 1 line 24). The knowledge base's triplet conversion
(Eq. 1-2), cached per passage and model."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from hopgraph import prompts
from hopgraph.agents.role import Role, Shown
from hopgraph.config import Context
from hopgraph.memory.cache import JsonCache
from hopgraph.memory.evidence import Evidence
from hopgraph.memory.kb import Item
from hopgraph.models import StructuredOutputError, vlm_model
from hopgraph.models.events import Fallback, Repair, emit
from hopgraph.tools.replies import complete_triplets


class PlannerStep(BaseModel):
    """I_C, I_parent, I_instr of Eq. 4 (the analysis first, so the model reads before choosing)."""

    analysis: str = ""
    type: Annotated[Literal["question", "retrieval", "answer", "stop"], Shown("...")]
    """Shown as "...": the template describes each type in words."""
    parents: list[str] = Field(default_factory=list)
    instruction: str = ""


SHOWN = ("id", "type", "parents", "instruction", "content")
"""What the planner's and the reasoner's prompts read of a node."""


def shown(nodes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The nodes as the prompts show them. A node's bookkeeping (its hits' passages, sources,
    call tallies) stays in the graph, so a call's recorded inputs, and a demonstration drawn
    from them, hold what the model read and cost no more than the call's own prompt."""
    return [{k: n[k] for k in SHOWN if k in n} for n in nodes]


PLAN = Role("planner", "mmapg/plan", inputs=("question", "picture"))
PLANNER = Role(
    "planner",
    "mmapg/planner",
    inputs=("question", "plan", "nodes", "single_path", "repeated"),
    schema=PlannerStep,
)
"""A malformed step is the caller's to mend (``CALLER_HANDLES``): the graph repairs it."""


def overall_plan(question: str, ctx: Context, images: Sequence[str] = ()) -> str:
    """P_plan_gen: the global plan the planner consults at every step. A question's pictures
    go with it to the VLM, so the plan names what they show."""
    text = PLAN.complete(
        ctx, pictures=images, max_tokens=200, question=question, picture=bool(images)
    )
    return text.strip()


def plan_step(
    question: str,
    plan: str,
    nodes: Sequence[Mapping[str, Any]],
    ctx: Context,
    *,
    single_path: bool,
    repeated: dict[str, Any] | None = None,
) -> PlannerStep:
    """P_plan ⊕ P_state(G) ⊕ P_parent ⊕ P_C → the next node (Eq. 4). ``repeated``: the step
    it proposed last that repeats one it already took (its type, instruction and the node it
    repeats, with what that node found), so it chooses again knowing so. Raises
    ``StructuredOutputError`` when the reply is malformed even after one repair (the graph
    mends the step)."""
    return PLANNER.structured(
        ctx,
        max_tokens=300,
        question=question,
        plan=plan,
        nodes=shown(nodes),
        single_path=single_path,
        repeated=repeated,
    )


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


SPLIT = Role(
    "retriever",
    "mmapg/decompose",
    inputs=("instruction", "parents"),
    schema=Split,
    fallback=lambda given: Split(text_part=given["instruction"]),
)
KEY_PHRASES = Role(
    "retriever",
    "mmapg/keyphrases",
    inputs=("instruction", "parents"),
    schema=Phrases,
    fallback=Phrases(),
)
IMAGE_QUERIES: dict[str, Role] = {
    "targeted": Role(
        "retriever",
        "mmapg/image_target",
        inputs=("instruction",),
        schema=TargetedImage,
        fallback=TargetedImage(),
    ),
    "descriptive": Role(
        "retriever",
        "mmapg/image_describe",
        inputs=("instruction",),
        schema=DescribedImage,
        fallback=DescribedImage(),
    ),
}
EXAMINE_TEXT = Role(
    "examiner",
    "mmapg/examine_text",
    inputs=("instruction", "title", "text"),
    schema=Examination,
    fallback=Examination(),
)
EXAMINE_IMAGE = Role(
    "examiner",
    "mmapg/examine_image",
    inputs=("question", "described", "title", "text"),
    schema=Examination,
    fallback=Examination(),
)
EXTRACT = Role("retriever", "mmapg/extract", inputs=("instruction", "findings"))


def split_instruction(instruction: str, parents: list[str], ctx: Context) -> Split:
    """Eq. 5. Fallback: the whole instruction as the text part (no image part)."""
    return SPLIT.structured(ctx, max_tokens=200, instruction=instruction, parents=parents)


def key_phrases(instruction: str, ctx: Context, parents: list[str] | tuple = ()) -> list[str]:
    """Eq. 6, with the few-shot examples F_text in the template and the parent nodes' content
    (Sec. 3.3: the instruction and its parents go to the retrieval module), so an earlier
    answer can name what the instruction refers to. Fallback: no phrase (the caller then
    searches with the text part itself)."""
    out = KEY_PHRASES.structured(
        ctx,
        max_tokens=120,
        instruction=instruction,
        parents=[p for p in parents if p],
    )
    return _clean(out.phrases)


def image_queries(instruction: str, kind: str, ctx: Context) -> tuple[list[str], str]:
    """Eq. 7 (targeted: names to search the picture by) or Eq. 9 (descriptive: phrases), with
    the question the examiner asks of each picture found. Fallback: none (the caller then
    searches with the image part itself and asks the instruction)."""
    out = IMAGE_QUERIES[kind].structured(ctx, max_tokens=120, instruction=instruction)
    return _clean(out.queries()), out.question.strip() or instruction


def examine(candidate: Evidence, instruction: str, question: str, ctx: Context) -> Examination:
    """Eq. 12 (a text candidate, by the LLM) or Eq. 13 (an image, by the VLM). With no VLM
    configured an image is examined through its own text (title, caption), noted in the trace.
    Returns the examination: the facts found (O_i) and whether the model judged them helpful.

    The facts come first, then the verdict: a small model judging first says "no" to
    everything. Fallback: a reply still malformed after its repair (e.g. cut off at
    max_tokens) is no finding, so one candidate cannot fail the whole question."""
    title, text = candidate.get("title", ""), candidate.get("text", "")
    if candidate.get("modality") != "image":
        out = EXAMINE_TEXT.structured(
            ctx,
            max_tokens=120,
            instruction=instruction,
            title=title,
            text=text,
        )
    else:
        seen = bool(vlm_model(ctx) is not None and candidate.get("path"))
        if not seen:
            reason = "no VLM configured" if vlm_model(ctx) is None else "no image file indexed"
            emit(
                Fallback("examiner", f"{reason} for {candidate.get('id')}", "its title and caption")
            )
        out = EXAMINE_IMAGE.structured(
            ctx,
            max_tokens=120,
            pictures=[candidate["path"]] if seen else [],
            question=question,
            described=not seen,
            title=title,
            text=text,
        )
    return out


def extract(instruction: str, findings: list[dict[str, Any]], ctx: Context) -> str:
    """Eq. 14: R = M(P_retr ⊕ I_instr ⊕ O), the content of the retrieval node."""
    text = EXTRACT.complete(ctx, max_tokens=120, instruction=instruction, findings=findings)
    return text.strip()


def _clean(phrases: list[str]) -> list[str]:
    return list(dict.fromkeys(p.strip() for p in phrases if p and p.strip()))


class Reasoned(BaseModel):
    rationale: Annotated[str, Shown("one sentence on how the notes give the answer")] = ""
    answer: str


NO_ANSWER = "unknown"
"""The reasoner's fallback answer: a reply that stays malformed answers nothing, and says so."""


REASONER = Role(
    "reasoner",
    "mmapg/reason",
    inputs=("instruction", "nodes", "picture"),
    schema=Reasoned,
    fallback=Reasoned(rationale="the reasoning reply was malformed", answer=NO_ANSWER),
)


def reason(
    instruction: str,
    nodes: Sequence[Mapping[str, Any]],
    ctx: Context,
    images: Sequence[str] = (),
) -> Reasoned:
    """The answer to ``instruction`` from the nodes' contents (and the question's pictures,
    to the VLM)."""
    out = REASONER.structured(
        ctx,
        pictures=images,
        max_tokens=160,
        instruction=instruction,
        nodes=shown(nodes),
        picture=bool(images),
    )
    return Reasoned(rationale=out.rationale.strip(), answer=out.answer.strip().rstrip("."))


EXAMPLES = json.loads(
    (Path(prompts.__file__).parent / "mmapg" / "triplets_examples.json").read_text()
)
"""The few-shot set F_tri of Eq. 1: our own invented passages, kept with the prompts."""


class Triplets(BaseModel):
    facts: list[list[str]] = Field(description="[subject, relation, object] triplets")


TRIPLETS = Role(
    "triplet_converter", "mmapg/triplets", inputs=("examples", "title", "text"), schema=Triplets
)
"""A reply cut at max_tokens is the caller's to salvage (``CALLER_HANDLES``)."""


def extract_triplets(item: Item, ctx: Context, cache: JsonCache | None = None) -> list[list[str]]:
    """T_i = M(P_tri ⊕ F_tri ⊕ S_i) (Eq. 1), well-formed triplets only, cached by item id."""
    namespace = f"triplets:{ctx.model}"
    if cache is not None and (hit := cache.get(namespace, item.id)) is not None:
        return hit
    try:
        found = TRIPLETS.structured(
            ctx,
            repair=False,
            examples=EXAMPLES,
            title=item.title,
            text=item.text,
        ).facts
    except StructuredOutputError as e:  # cut at max_tokens: the complete triplets still count
        found = complete_triplets(e.raw)
        if not found:
            raise
        emit(Repair(TRIPLETS.name, {"salvaged": len(found), "error": str(e)[:200]}))
    facts = [[str(p).strip() for p in f] for f in found if len(f) == 3 and all(map(str.strip, f))]
    if cache is not None:
        cache.put(namespace, item.id, facts)
    return facts
