"""MMAPG's candidate search (Eq. 10-11), no LLM: every item within a radius of each query
phrase, in the text-side or image collection, triplets read as the passage they came from,
optionally steered by GRAIL away from evidence the planning graph already holds."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from hopgraph.config import Context, knobs_of
from hopgraph.memory.evidence import Evidence, rescored
from hopgraph.settings.grail import GrailSettings
from hopgraph.settings.mmapg import MMAPGSettings
from hopgraph.tools.grail.tool import steerable_search
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
    held: Sequence[str] = (),
) -> list[Evidence]:
    """The union over ``phrases`` of the items within r_t (text side) or r_i (images) of each
    phrase (Eq. 11), best similarity first, at most ``mmapg_max_candidates``. With
    ``grail_mode`` and evidence already held, each phrase's search is GRAIL's top-k instead."""
    knobs = knobs_of(ctx, MMAPGSettings)
    k = knobs.mmapg_max_candidates
    radius = knobs.mmapg_image_radius if modalities == IMAGE_SIDE else knobs.mmapg_text_radius
    steer = knobs_of(ctx, GrailSettings).grail_mode if modalities != IMAGE_SIDE else ""
    best: dict[str, Evidence] = {}
    for phrase in phrases:
        if modalities == IMAGE_SIDE:
            hits = search_images(
                phrase,
                ctx,
                k=k,
                radius=radius,
                role="mmapg_retriever",
                max_hits=4 * k,
            )
        else:
            hits = steerable_search(
                phrase,
                ctx,
                k=k,
                held=held,
                steer=steer,
                radius=radius,
                modalities=modalities,
                derived=None if knobs.mmapg_triplets else False,
                role="mmapg_retriever",
                max_hits=4 * k,
            )
        for hit in hits:
            if hit["id"] not in best or hit["score"] > best[hit["id"]]["score"]:
                best[hit["id"]] = hit
    ranked = sorted(best.values(), key=lambda h: -h["score"])
    return read_through(ranked, ctx)[:k]


def top_k(query: str, ctx: Context) -> list[Evidence]:
    """Table 3's "w/o retrieval module": the top-k items by similarity to the instruction."""
    derived = None if knobs_of(ctx, MMAPGSettings).mmapg_triplets else False
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


def fallback_step(nodes: Sequence[Mapping[str, Any]], question: str) -> dict[str, Any]:
    """What a malformed planner reply becomes: search for the question itself if nothing was
    retrieved yet, else stop (and answer from the graph)."""
    if any(n["type"] == "retrieval" for n in nodes):
        return {"type": "stop", "parents": [], "instruction": ""}
    return {"type": "retrieval", "parents": ["Q0"], "instruction": question}


def check_step(
    raw: dict[str, Any], nodes: Sequence[Mapping[str, Any]], question: str, single_path: bool
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Parents the planner names must exist: ids are matched loosely ("[r1]" is R1); unknown
    ones are dropped, and a step left without a parent hangs off the latest node. Single-path
    planning always builds on the latest node. A question already asked becomes a search for it;
    a search that already ran becomes an answer to the question from the searches that found
    something (single path: from the latest node); an answer already given from the same
    parents, or built only on that answer, becomes Stop. Each change is returned as a repair."""
    known = {n["id"].upper(): n["id"] for n in nodes}
    latest = nodes[-1]["id"]
    step = {
        "type": raw["type"],
        "analysis": raw.get("analysis", ""),
        "instruction": (raw.get("instruction") or "").strip(),
    }
    repairs: list[dict[str, Any]] = []
    if step["type"] == "stop":
        return {**step, "parents": []}, repairs
    if single_path:
        parents = [latest]
    else:
        named = [str(p) for p in raw.get("parents", [])]
        parents = list(
            dict.fromkeys(
                known[key] for p in named if (key := re.sub(r"[\[\]\s]", "", p).upper()) in known
            )
        )
        if len(parents) < len(named):
            repairs.append({"kind": "unknown_parent", "named": named, "used": parents or [latest]})
        elif not named:
            repairs.append({"kind": "no_parent", "named": [], "used": [latest]})
        parents = parents or [latest]
    if not step["instruction"]:
        step["instruction"] = question
        repairs.append({"kind": "empty_instruction", "used": question})
    asked = _asked(nodes, "question", step["instruction"]) or (
        [nodes[0]] if _norm(step["instruction"]) == _norm(question) else []
    )
    if step["type"] == "question" and asked:
        # asking it again adds nothing (a small single-path planner re-asked until the cap):
        # search for it instead, which the next check turns into an answer if that ran too
        step["type"] = "retrieval"
        repairs.append({"kind": "repeated_question", "of": asked[0]["id"]})
    if step["type"] == "retrieval" and _asked(nodes, "retrieval", step["instruction"]):
        # the same search again finds the same things: answer the question from what the
        # searches found instead (a small planner otherwise loops here until the cap)
        found = [n["id"] for n in nodes if n["type"] == "retrieval" and n.get("sources")]
        of = _asked(nodes, "retrieval", step["instruction"])[0]["id"]
        # single path (A.7): each step builds on the previous one only, never on several
        parents = [latest] if single_path else (found or [latest])
        step |= {"type": "answer", "instruction": question}
        repairs.append({"kind": "repeated_retrieval", "of": of, "used": parents})
    same = _asked(nodes, "answer", step["instruction"])
    given = [n for n in same if set(n["parents"]) == set(parents)]
    if not given and set(parents) <= {n["id"] for n in same}:
        given = [n for n in same if n["id"] in parents]  # built on the same answer: nothing new
    if step["type"] == "answer" and given:
        # the same answer from the same nodes again, or from that answer itself (the only
        # parent single-path planning allows): the graph has nothing more to give
        repairs.append({"kind": "repeated_answer", "of": given[0]["id"], "used": "stop"})
        return {**step, "type": "stop", "parents": []}, repairs
    return {**step, "parents": parents}, repairs


REPEATS = ("repeated_question", "repeated_retrieval", "repeated_answer")
"""The repairs that mend a step repeating one already taken."""

ENDINGS = ("planner_stop", "rule_stop", "iteration_cap", "budget_stop", "malformed")
"""How an MMAPG question's loop ends: the planner's own Stop (Sec. 3.3); our rule chain (a
repeated search became an answer, a repeated answer became Stop: ``check_step``); the cap of
k planner steps (Alg. 1 line 3); the question's token budget; a malformed planner reply whose
fallback was Stop (``fallback_step``)."""


def ending(
    stopped: bool, last_repairs: list[dict[str, Any]], steps: int, cap: int
) -> tuple[str, list[str]]:
    """How the loop ended, and for ``rule_stop`` the chain of rules that made the Stop.
    ``stopped``: the last step was Stop; ``last_repairs``: that step's repairs (the re-ask the
    planner was told about is not one); ``steps``: planner steps taken before it."""
    if not stopped:
        return ("iteration_cap" if steps >= cap else "budget_stop"), []
    chain = [r["kind"] for r in last_repairs if r["kind"] in REPEATS]
    if "repeated_answer" in chain:
        return "rule_stop", chain
    if any(r["kind"] == "malformed" and r.get("fallback") == "stop" for r in last_repairs):
        return "malformed", []
    return "planner_stop", []


def _asked(
    nodes: Sequence[Mapping[str, Any]], kind: str, instruction: str
) -> list[Mapping[str, Any]]:
    """Earlier nodes of ``kind`` with the same instruction (case and punctuation aside)."""
    same = _norm(instruction)
    return [n for n in nodes if n["type"] == kind and _norm(n["instruction"]) == same]


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())
