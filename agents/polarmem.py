"""PolarMem's model roles (polarmem.txt Sec. 3.2, App. B): the VLM proposes an image's
concepts and verifies each over several wordings (Eq. 4); the LLM extracts a text chunk's
entities (Sec. 3.2.2) and parses a query into wanted and unwanted concepts (Alg. 1 line 1)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, model_validator

from hopgraph.agents.role import Role, Shown
from hopgraph.config import Context, knobs_of
from hopgraph.models import CapabilityError, vlm_model
from hopgraph.runtime import fan_out
from hopgraph.settings.polarmem import PolarMemSettings

log = logging.getLogger(__name__)
MIN_TEMPLATES = 3


POLARITIES = ("present", "absent", "mentioned")


class Entity(BaseModel):
    """One entity of a text chunk with the polarity the text states (Eq. 7 with polarity):
    asserted present, asserted absent (negated), or merely mentioned."""

    name: Annotated[str, Shown("<name>")]
    polarity: Literal["present", "absent", "mentioned"] = "mentioned"

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, value):  # noqa: ANN001
        """A bare string (a model that skips the polarity) is a mention: it asserts nothing."""
        return {"name": value} if isinstance(value, str) else value


class Entities(BaseModel):
    entities: list[Entity] = Field(default_factory=list)


class QueryConcepts(BaseModel):
    """Q+ and Q- of Algorithm 1."""

    positive: Annotated[list[str], Shown(["<wanted thing>"])] = Field(default_factory=list)
    negative: Annotated[list[str], Shown(["<excluded thing>"])] = Field(default_factory=list)


PROPOSER = Role("concept_proposer", "polarmem/propose", inputs=("caption", "max_concepts"))
VERIFIER = Role("concept_verifier", "polarmem/verify", inputs=("concept", "variant"))
ENTITIES = Role(
    "entity_extractor", "polarmem/entities", inputs=("text", "max_entities"), schema=Entities
)
QUERY_PARSER = Role("query_parser", "polarmem/parse_query", inputs=("query",), schema=QueryConcepts)


def need_vlm(ctx: Context):
    """The configured VLM, or a clear error: the visual pathway has no text fallback, since a
    verified HAS / NOT_HAS must come from looking at the image."""
    vlm = vlm_model(ctx)
    if vlm is None:
        raise CapabilityError(
            "ingesting an image into PolarMem needs a vision-language model: set vlm_model "
            "(and vlm_base_url) to a VLM endpoint such as vLLM serving Qwen2.5-VL; none is "
            "configured, so the image was not stored"
        )
    return vlm


def propose_concepts(image: str | Path, ctx: Context, caption: str = "") -> list[str]:
    """C_prop: the VLM's open-set concept proposal (App. B, offline concept extraction)."""
    most = knobs_of(ctx, PolarMemSettings).polar_max_concepts
    reply = PROPOSER.complete(
        ctx,
        pictures=[str(image)],
        model=need_vlm(ctx),
        max_tokens=200,
        max_concepts=most,
        caption=caption,
    )
    seen: dict[str, None] = {}
    for part in reply.replace("\n", ",").split(","):
        phrase = part.strip().strip("-*•.").strip()
        if phrase and len(phrase.split()) <= 4:
            seen.setdefault(phrase, None)
    return list(seen)[:most]


def verification_prompts(concept: str, ctx: Context) -> list[str]:
    """T_ens(c): the first ``polar_templates`` wordings of ``polarmem/verify``."""
    n = knobs_of(ctx, PolarMemSettings).polar_templates
    if n < MIN_TEMPLATES:
        raise ValueError(
            f"polar_templates must be at least {MIN_TEMPLATES} (Eq. 4 averages over an "
            f"ensemble), not {n}"
        )
    out = [VERIFIER.render(ctx, concept=concept, variant=i) for i in range(n)]
    if any(not p.strip() for p in out):
        raise ValueError(f"polar_templates={n}, but polarmem/verify.j2 has fewer wordings")
    return out


def verify_concepts(image: str | Path, concepts: list[str], ctx: Context) -> dict[str, float]:
    """s_c = mean over templates of P(Yes | image, T(c)) (Eq. 4), requests in parallel."""
    vlm = need_vlm(ctx)
    if concepts:  # refuses an ensemble the template cannot give, before any call
        verification_prompts(concepts[0], ctx)
    n = knobs_of(ctx, PolarMemSettings).polar_templates
    jobs = [(c, i) for c in concepts for i in range(n)]

    def score(job: tuple[str, int]) -> float:
        concept, variant = job
        return VERIFIER.p_yes(
            ctx, pictures=[str(image)], model=vlm, concept=concept, variant=variant
        )

    # the VLM is a remote endpoint (the embedded server has none): max_concurrency in flight
    values = fan_out(score, jobs, ctx.max_concurrency)
    sums: dict[str, list[float]] = {}
    for (c, _), v in zip(jobs, values, strict=True):
        sums.setdefault(c, []).append(v)
    return {c: sum(v) / len(v) for c, v in sums.items()}


def extract_entities(text: str, ctx: Context, max_entities: int = 12) -> list[Entity]:
    """Phi_ext of Sec. 3.2.2 with each entity's polarity, in one call. A name given two
    polarities in one chunk asserts neither: it is kept as a mention."""
    out = ENTITIES.structured(
        ctx,
        max_tokens=400,
        text=text,
        max_entities=max_entities,
    )
    seen: dict[str, Entity] = {}
    for e in out.entities:
        name = e.name.strip()
        if not name:
            continue
        key = name.lower()
        if key in seen and seen[key].polarity != e.polarity:
            seen[key] = Entity(name=seen[key].name, polarity="mentioned")
        else:
            seen.setdefault(key, Entity(name=name, polarity=e.polarity))
    return list(seen.values())[:max_entities]


def parse_query(query: str, ctx: Context) -> QueryConcepts:
    """Q+ / Q- from the query (App. B, online query parsing), as JSON."""
    return QUERY_PARSER.structured(ctx, max_tokens=120, query=query)
