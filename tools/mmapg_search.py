"""MMAPG's candidate search (Eq. 10-11), no LLM: every item within a radius of each query
phrase, in the text-side or image collection, triplets read as the passage they came from,
optionally steered by GRAIL away from evidence the planning graph already holds."""

from __future__ import annotations

from typing import Any

from hopgraph.config import Context
from hopgraph.memory.kb import Hit
from hopgraph.tools.kb_search import hit_dict, knowledge_base, search_kb

TEXT_SIDE = ("text", "table", "page", "image")
"""The text knowledge space: passages, table rows, page text, and images by their titles and
captions (Sec. 3.2 keeps those in KB_text)."""
IMAGE_SIDE = ("image",)
"""KB_img: image embeddings (CLIP where weights exist; on CPU the image's own text)."""


def find_candidates(
    phrases: list[str],
    modalities: tuple[str, ...],
    ctx: Context,
    *,
    held: list[str] = (),  # type: ignore[assignment]
) -> list[dict[str, Any]]:
    """The union over ``phrases`` of the items within r_t (text side) or r_i (images) of each
    phrase (Eq. 11), best similarity first, at most ``mmapg_max_candidates``. With
    ``grail_mode`` and evidence already held, each phrase's search is GRAIL's top-k instead."""
    radius = ctx.mmapg_image_radius if modalities == IMAGE_SIDE else ctx.mmapg_text_radius
    derived = None if ctx.mmapg_triplets else False
    best: dict[str, Hit] = {}
    for phrase in phrases:
        if ctx.grail_mode and held and modalities != IMAGE_SIDE:
            hits = _grail_hits(phrase, list(held), ctx)
        else:
            hits = search_kb(
                phrase,
                ctx,
                radius=radius,
                modalities=modalities,
                derived=derived,
                role="mmapg_retriever",
                max_hits=4 * ctx.mmapg_max_candidates,
            )
        for hit in hits:
            if hit.id not in best or hit.score > best[hit.id].score:
                best[hit.id] = hit
    return [hit_dict(h) for h in read_through(sorted(best.values(), key=_by_score), ctx)][
        : ctx.mmapg_max_candidates
    ]


def top_k(query: str, ctx: Context) -> list[dict[str, Any]]:
    """Table 3's "w/o retrieval module": the top-k items by similarity to the instruction."""
    derived = None if ctx.mmapg_triplets else False
    hits = search_kb(query, ctx, k=ctx.top_k, derived=derived, role="mmapg_retriever")
    return [hit_dict(h) for h in read_through(hits, ctx)]


def read_through(hits: list[Hit], ctx: Context) -> list[Hit]:
    """A triplet hit becomes its passage (scored by its best triplet, the triplets that
    matched kept in ``meta["matched"]``); order and first occurrence are kept."""
    parents = knowledge_base(ctx).get(list(dict.fromkeys(h.parent for h in hits if h.parent)))
    by_id = {p.id: p for p in parents}
    out: dict[str, Hit] = {}
    for hit in hits:
        item = by_id.get(hit.parent, hit) if hit.parent else hit
        if item.id not in out:
            out[item.id] = Hit(**{**item.__dict__, "score": hit.score, "meta": dict(item.meta)})
        if hit.parent:
            out[item.id].meta.setdefault("matched", []).append(hit.text)
    return list(out.values())


def _by_score(hit: Hit) -> float:
    return -hit.score


def _grail_hits(phrase: str, held: list[str], ctx: Context) -> list[Hit]:
    from hopgraph.tools.grail.tool import grail_search

    found = grail_search(phrase, held, ctx.mmapg_max_candidates, ctx.grail_mode, ctx)
    scores = {f["id"]: f["score"] for f in found}
    return [
        Hit(**{**h.__dict__, "score": scores[h.id]}) for h in knowledge_base(ctx).get(list(scores))
    ]
