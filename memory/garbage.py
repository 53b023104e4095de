"""A knowledge base's garbage collection: the items no live source version holds any more,
deleted from every collection with what was made from them (page images, the derived stores'
rows), and the stamps moved first onto the items another live source still holds."""

from __future__ import annotations

from pathlib import Path

from hopgraph.memory.chroma import stores_following
from hopgraph.memory.kb import (
    COLLECTION_PREFIX,
    MODALITIES,
    KnowledgeBase,
    KnowledgeBaseError,
    result_rows,
)


def keep_shared(kb: KnowledgeBase, source: str, version: str | None) -> None:
    """Before ``source``'s other versions than ``version`` are dropped: the items another
    live source also holds take that source's stamp, so they stay visible."""
    if kb.registry is not None:
        kb.restamp(kb.registry.orphaned(source, version))


def remove_source(kb: KnowledgeBase, source: str) -> int:
    """Remove a registered source and every item only it held (its page images and page
    vectors too). Returns how many items were deleted."""
    if kb.registry is None:
        raise KnowledgeBaseError(
            f"{kb.location} is a Chroma server: its sources are not registered here"
        )
    if kb.registry.get(source) is None:
        raise KnowledgeBaseError(f"{source} is not a source of {kb.location}")
    keep_shared(kb, source, None)
    kb.registry.remove(source)
    return collect_garbage(kb)


def collect_garbage(kb: KnowledgeBase) -> int:
    """Delete the items no live source holds from every collection, with the page images
    made from them and what the derived stores keep of them (each store's metadata says
    what its rows follow: an item's id or a document, ``memory/chroma.py:FOLLOWS``); what a
    crash left queued goes too."""
    if kb.registry is None:
        return 0
    gone = kb.registry.garbage()
    if not gone:
        return 0
    docs: set[str] = set()
    pngs: list[Path] = []
    with kb.guarded(write=True) as client:
        for modality in MODALITIES:
            ids = [i for i, m in gone if m == modality]
            col = kb.collection(modality, create=False) if ids else None
            if col is None:
                continue
            if modality == "page":
                for _, _, md, _ in result_rows(
                    col.get(ids=ids, include=["documents", "metadatas"])
                ):
                    docs.add(md.get("source", ""))
                    pngs.append(Path(md.get("path") or "."))
            col.delete(ids=ids)
        docs.discard("")
        for col, follows in stores_following(client, COLLECTION_PREFIX):
            if follows == "id":
                col.delete(ids=[i for i, _ in gone])
            elif follows == "doc" and docs:
                col.delete(where={"doc": {"$in": sorted(docs)}})
    mine = (kb.path / "pages").resolve()
    for png in pngs:
        if png.suffix == ".png" and png.resolve().is_relative_to(mine):
            png.unlink(missing_ok=True)
            if png.parent.is_dir() and not any(png.parent.iterdir()):
                png.parent.rmdir()
    kb.registry.collected(i for i, _ in gone)
    kb.drop_cached_vectors()
    return len(gone)
