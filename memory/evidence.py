"""``Evidence``: the one shape a piece of evidence has, from the knowledge base to the
prediction line. KB hits, GRAIL hits, PDF pages and PolarMem memories are all Evidence, kept in
graph state as they are (plain JSON, so checkpoints, the LangGraph server and traces need no
conversion)."""

from __future__ import annotations

from typing import Any

from typing_extensions import NotRequired, TypedDict


class Evidence(TypedDict):
    id: str
    modality: str
    """text | table | image | page | memory"""
    text: str
    score: float
    """Similarity to the query that found it (1.0 when fetched by id)."""
    title: NotRequired[str]
    source: NotRequired[str]
    """Where it came from: dataset doc id, file name, title."""
    page: NotRequired[int | None]
    path: NotRequired[str]
    """The image reference: an image file or a rendered page PNG."""
    parent: NotRequired[str]
    """The item this one was derived from (a triplet's passage), else empty."""
    provenance: NotRequired[dict[str, Any]]
    """What was stored with it (url, table row, OCR) and how it was found (GRAIL mode, the
    triplets that matched, PolarMem's verification)."""


def evidence(
    id: str,  # noqa: A002 - the field's name
    text: str,
    *,
    modality: str = "text",
    score: float = 1.0,
    title: str = "",
    source: str = "",
    page: int | None = None,
    path: str = "",
    parent: str = "",
    provenance: dict[str, Any] | None = None,
) -> Evidence:
    """An Evidence with every field present, so readers need no defaults."""
    return Evidence(
        id=id,
        modality=modality,
        text=text,
        score=score,
        title=title,
        source=source,
        page=page,
        path=path,
        parent=parent,
        provenance=dict(provenance or {}),
    )


def rescored(item: Evidence, score: float, **provenance: Any) -> Evidence:
    """A copy of ``item`` with a new score and more provenance (how it was found)."""
    return {**item, "score": score, "provenance": {**item.get("provenance", {}), **provenance}}
