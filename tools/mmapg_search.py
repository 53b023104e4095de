"""MMAPG's candidate search (Eq. 10-11), no LLM: every item within a radius of each query
phrase, in the text-side or image collection, triplets read as the passage they came from,
optionally steered by GRAIL away from evidence the planning graph already holds."""

from __future__ import annotations

from hopgraph.config import Context
from hopgraph.memory.evidence import Evidence, rescored
from hopgraph.tools.retrieval import knowledge_base, search, search_images

TEXT_SIDE = ("text", "table", "page", "image")
"""The text knowledge space: passages, table rows, page text, and images by their titles and
captions (Sec. 3.2 keeps those in KB_text)."""
IMAGE_SIDE = ("image",)
"""KB_img (Eq. 3): the visual space (CLIP / SigLIP image vectors) where the KB has one, else the
images' titles, captions and OCR text."""


def has_image_side(ctx: Context) -> bool:
    """Whether the KB holds any image for KB_img to search (a text-only corpus has none)."""
    return knowledge_base(ctx).counts().get("image", 0) > 0


def find_candidates(
    phrases: list[str],
    modalities: tuple[str, ...],
    ctx: Context,
    *,
    held: list[str] = (),  # type: ignore[assignment]
) -> list[Evidence]:
    """The union over ``phrases`` of the items within r_t (text side) or r_i (images) of each
    phrase (Eq. 11), best similarity first, at most ``mmapg_max_candidates``. With
    ``grail_mode`` and evidence already held, each phrase's search is GRAIL's top-k instead."""
    radius = ctx.mmapg_image_radius if modalities == IMAGE_SIDE else ctx.mmapg_text_radius
    steer = ctx.grail_mode if modalities != IMAGE_SIDE else ""
    best: dict[str, Evidence] = {}
    for phrase in phrases:
        if modalities == IMAGE_SIDE:
            hits = search_images(
                phrase,
                ctx,
                k=ctx.mmapg_max_candidates,
                radius=radius,
                role="mmapg_retriever",
                max_hits=4 * ctx.mmapg_max_candidates,
            )
        else:
            hits = search(
                phrase,
                ctx,
                k=ctx.mmapg_max_candidates,
                held=held,
                steer=steer,
                radius=radius,
                modalities=modalities,
                derived=None if ctx.mmapg_triplets else False,
                role="mmapg_retriever",
                max_hits=4 * ctx.mmapg_max_candidates,
            )
        for hit in hits:
            if hit["id"] not in best or hit["score"] > best[hit["id"]]["score"]:
                best[hit["id"]] = hit
    ranked = sorted(best.values(), key=lambda h: -h["score"])
    return read_through(ranked, ctx)[: ctx.mmapg_max_candidates]


def top_k(query: str, ctx: Context) -> list[Evidence]:
    """Table 3's "w/o retrieval module": the top-k items by similarity to the instruction."""
    derived = None if ctx.mmapg_triplets else False
    return read_through(search(query, ctx, derived=derived, role="mmapg_retriever"), ctx)


def read_through(hits: list[Evidence], ctx: Context) -> list[Evidence]:
    """A triplet hit becomes its passage (scored by its best triplet, the triplets that
    matched kept in its provenance as ``matched``); order and first occurrence are kept."""
    wanted = list(dict.fromkeys(h["parent"] for h in hits if h.get("parent")))
    by_id = {p["id"]: p for p in knowledge_base(ctx).get(wanted)}
    out: dict[str, Evidence] = {}
    for hit in hits:
        item = by_id.get(hit["parent"], hit) if hit.get("parent") else hit
        if item["id"] not in out:
            out[item["id"]] = rescored(item, hit["score"])
        if hit.get("parent"):
            matched = out[item["id"]]["provenance"].setdefault("matched", [])
            matched.append(hit["text"])
    return list(out.values())
