"""The visual space: image items' vectors in the image embedder's space (CLIP / SigLIP), beside
the text space: MMAPG's KB_img (Eq. 3) where such weights exist. A store derived from the KB
(``KnowledgeBase.store``), kept where the KB lives; its rows are the KB's image items, so the
KB's garbage collection drops them with their source."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import overload

from hopgraph.memory.chroma import FOLLOWS, Shelf
from hopgraph.memory.evidence import Evidence
from hopgraph.memory.kb import (
    AddStats,
    Item,
    KnowledgeBase,
    KnowledgeBaseError,
    item_metadata,
    nearest_visible,
    stored_evidence,
)

NAME = "visual"


class VisualSpace:
    """A KB's image vectors, checked to be in the configured image embedder's space."""

    def __init__(self, kb: KnowledgeBase):
        self.kb = kb
        self.store = kb.store(NAME, kb.image_embedder_name, **{FOLLOWS: "id"})

    @overload
    def _checked(self, shelf: Shelf) -> Shelf: ...
    @overload
    def _checked(self, shelf: None) -> None: ...
    def _checked(self, shelf: Shelf | None) -> Shelf | None:
        made_with = shelf.metadata.get("embedder") if shelf is not None else None
        if shelf is not None and made_with != self.kb.image_embedder_name:
            raise KnowledgeBaseError(
                f"the images of {self.kb.location} were embedded with {made_with!r}, but "
                f"image_embedder is {self.kb.image_embedder_name!r}; their vectors are not "
                "comparable (set image_embedder or index again)"
            )
        return shelf

    def add(
        self,
        items: Sequence[Item],
        embedder,  # noqa: ANN001
        *,
        versions: dict[str, str] | None = None,
    ) -> AddStats:
        """Embed the image files of ``items`` (image items with a path) with ``embedder``;
        items already there are skipped (an image's id is its bytes)."""
        stats = AddStats()
        todo = {it.id: it for it in items if it.modality == "image" and it.path}
        if not todo:
            return stats
        with self.store.made() as shelf:
            present = set(self._checked(shelf).get(ids=list(todo), include=[])["ids"])
        stats.existing = len(present)
        fresh = [it for id_, it in todo.items() if id_ not in present]
        if fresh:
            began = time.perf_counter()
            vecs = embedder.encode_images([it.path for it in fresh])
            stats.embed_seconds = time.perf_counter() - began
            with self.store.made(write=True) as shelf:
                self._checked(shelf).upsert(
                    [it.id for it in fresh],
                    vecs,
                    [item_metadata(it, (versions or {}).get(it.id)) for it in fresh],
                    [it.text for it in fresh],
                )
            stats.added = len(fresh)
        return stats

    def count(self) -> int:
        """How many images the space holds: 0 where it is absent or in another embedder's
        space (searching it would say which)."""
        with self.store.open() as shelf:
            try:
                return self._checked(shelf).count() if shelf is not None else 0
            except KnowledgeBaseError:
                return 0

    def search(
        self, query: str, *, k: int = 5, radius: float | None = None, max_hits: int = 100
    ) -> list[Evidence]:
        """Images by the image embedder's similarity between ``query`` (its text tower) and
        each image (its vision tower): top-``k``, or every image within cosine distance
        ``radius``."""
        from hopgraph.models.embedders import image_embedder

        with self.store.open() as shelf:
            if self._checked(shelf) is None:
                return []
        vec = image_embedder(self.kb.image_embedder_name).encode_texts([query])[0]
        n = max_hits if radius is not None else k
        hidden = self.kb.hidden()
        with self.store.open() as shelf:  # the client may have been reopened meanwhile
            if shelf is None:
                return []
            rows = nearest_visible(shelf.col, vec, n, radius, None, hidden)
        hits = [stored_evidence(i, d, m, 1.0 - dist) for i, d, m, dist in self.kb.visible(rows)]
        return hits if radius is not None else hits[:k]
