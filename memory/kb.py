"""The knowledge base: one Chroma collection per modality (text, table, image, page) in one
shared embedding space, each item's text and metadata stored beside its vector.

Vectors are always computed by hopgraph's embedder and passed in: Chroma's default embedding
function (which would download a model) is never used. Item ids derive from content (or from a
dataset's own stable doc id), so indexing the same source twice adds nothing and an interrupted
index resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.memory.chroma import chroma_client, cosine_collection
from hopgraph.memory.evidence import Evidence, evidence

MODALITIES = ("text", "table", "image", "page")
COLLECTION_PREFIX = "hopgraph-"
BUILDS = "builds.jsonl"
"""One line per ``hopgraph index`` run beside a local KB: the settings it indexed with."""
VISUAL = COLLECTION_PREFIX + "visual"
"""Image items' vectors in the image embedder's space (CLIP / SigLIP), beside the text space:
MMAPG's KB_img (Eq. 3) where such weights exist."""


class KnowledgeBaseError(RuntimeError):
    """The knowledge base cannot be opened or used as asked."""


def item_id(modality: str, key: str) -> str:
    """Stable id of an item: its modality and a hash of what identifies its content."""
    return f"{modality}-{hashlib.sha1(key.encode('utf-8')).hexdigest()[:20]}"


@dataclass
class Item:
    """One retrievable unit: a passage, a table row, an image, a PDF page."""

    modality: str
    key: str
    """What the id derives from: a dataset doc id, ``title\\ntext``, ``file#page``..."""
    text: str
    title: str = ""
    source: str = ""
    """Where it came from: dataset doc id, file name, title."""
    page: int | None = None
    path: str = ""
    """An image file or a rendered page PNG."""
    parent: str = ""
    """The item this one was derived from (a triplet's passage), else empty."""
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.modality not in MODALITIES:
            raise ValueError(f"unknown modality {self.modality!r}; one of {MODALITIES}")

    @property
    def id(self) -> str:
        return item_id(self.modality, self.key)

    def embed_text(self) -> str:
        """What the text embedder sees: the title, then the content."""
        if self.title and not self.text.startswith(self.title):
            return f"{self.title}: {self.text}"
        return self.text


@dataclass
class AddStats:
    added: int = 0
    existing: int = 0
    embed_seconds: float = 0.0
    store_seconds: float = 0.0


def _metadata(item: Item) -> dict[str, Any]:
    return {
        "modality": item.modality,
        "title": item.title,
        "source": item.source,
        "page": -1 if item.page is None else int(item.page),
        "path": item.path,
        "parent": item.parent,
        "meta": json.dumps(item.meta, ensure_ascii=False),
    }


def _evidence(id_: str, doc: str | None, md: dict[str, Any] | None, score: float) -> Evidence:
    """A stored item as Evidence (its stored ``meta`` becomes the provenance)."""
    md = md or {}
    page = md.get("page", -1)
    return evidence(
        id_,
        doc or "",
        score=score,
        modality=md.get("modality", ""),
        title=md.get("title", ""),
        source=md.get("source", ""),
        page=None if page is None or page < 0 else int(page),
        path=md.get("path", ""),
        parent=md.get("parent", ""),
        provenance=json.loads(md.get("meta") or "{}"),
    )


def _nearest(
    col: Any, vec: np.ndarray, n: int, radius: float | None, where: dict | None = None
) -> list[Evidence]:
    """A collection's ``n`` nearest items to ``vec`` as Evidence (score = 1 - cosine distance),
    best first; with ``radius``, only those within that distance."""
    res = col.query(
        query_embeddings=vec[None, :],
        n_results=n,
        where=where,
        include=["documents", "metadatas", "distances"],
    )
    return [
        _evidence(id_, doc, md, 1.0 - float(dist))
        for id_, doc, md, dist in zip(
            res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0],
            strict=True,
        )
        if radius is None or dist <= radius
    ]  # fmt: skip


class KnowledgeBase:
    """Chroma collections per modality, local files (``PersistentClient``) or a server."""

    def __init__(
        self,
        path: str | Path = "kb",
        *,
        chroma_url: str = "",
        embedder: str = "all-MiniLM-L6-v2",
        image_embedder: str = "",
        batch_size: int = 16,
        must_exist: bool = False,
    ):
        self.path = Path(path).expanduser()
        self.embedder_name = embedder
        self.image_embedder_name = image_embedder
        self.batch_size = batch_size
        if chroma_url:
            self.client = chroma_client(url=chroma_url)
            self.location = chroma_url
        else:
            if must_exist and not (self.path / "chroma").is_dir():
                raise KnowledgeBaseError(
                    f"no knowledge base at {self.path}: build one with `hopgraph index SOURCE "
                    f"--kb {self.path}`"
                )
            self.path.mkdir(parents=True, exist_ok=True)
            self.client = chroma_client(self.path)
            self.location = str(self.path)
        self._collections: dict[str, Any] = {}
        self._embedder = None
        self._vectors: dict[str, tuple[list[str], np.ndarray, int]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_context(cls, ctx, must_exist: bool = False) -> KnowledgeBase:  # noqa: ANN001
        """The knowledge base a ``hopgraph.config.Context`` names."""
        return cls(
            ctx.kb_dir,
            chroma_url=ctx.chroma_url,
            embedder=ctx.text_embedder,
            image_embedder=ctx.image_embedder,
            batch_size=ctx.embed_batch_size,
            must_exist=must_exist,
        )

    # -- collections ----------------------------------------------------------------------
    @property
    def embedder(self):
        if self._embedder is None:
            from hopgraph.models.embedders import text_embedder

            self._embedder = text_embedder(self.embedder_name, self.batch_size)
        return self._embedder

    def collection(self, modality: str, create: bool = True):
        """The Chroma collection of ``modality``, checked to be in this embedder's space."""
        if modality not in MODALITIES:
            raise KnowledgeBaseError(f"unknown modality {modality!r}; one of {MODALITIES}")
        with self._lock:
            col = self._collections.get(modality)
            if col is not None:
                return col
            name = COLLECTION_PREFIX + modality
            if create:
                col = cosine_collection(self.client, name, self.embedder_name, modality=modality)
            else:
                try:
                    col = self.client.get_collection(name, embedding_function=None)
                except Exception:  # chromadb raises NotFoundError (varies by version)
                    return None
            indexed_with = (col.metadata or {}).get("embedder")
            if indexed_with and indexed_with != self.embedder_name:
                raise KnowledgeBaseError(
                    f"knowledge base {self.location} was indexed with embedder "
                    f"{indexed_with!r}, but {self.embedder_name!r} is configured; their vectors "
                    "are not comparable (set text_embedder or index again)"
                )
            self._collections[modality] = col
            return col

    def counts(self) -> dict[str, int]:
        out = {}
        for modality in MODALITIES:
            col = self.collection(modality, create=False)
            out[modality] = col.count() if col is not None else 0
        return out

    # -- how it was built -------------------------------------------------------------------
    def record_build(self, settings: dict[str, Any]) -> None:
        """Append one index run's settings (source, format, OCR engine ...) to ``builds.jsonl``;
        a KB on a Chroma server keeps none."""
        if self.location == str(self.path):
            path = self.path / BUILDS
            torn = path.exists() and not path.read_bytes().endswith(b"\n")  # a crash mid-line
            with open(path, "a", encoding="utf-8") as f:
                f.write(("\n" if torn else "") + json.dumps(settings, sort_keys=True) + "\n")

    def build_settings(self) -> list[dict[str, Any]]:
        """The distinct settings it was indexed with, first seen first; [] where unknown (a KB
        built before they were recorded, or on a server)."""
        out: list[dict[str, Any]] = []
        path = self.path / BUILDS
        if self.location == str(self.path) and path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    settings = json.loads(line)
                except json.JSONDecodeError:  # a line torn by a crash mid-write
                    continue
                if settings not in out:
                    out.append(settings)
        return out

    def existing(self, ids: Sequence[str], modality: str) -> set[str]:
        if not ids:
            return set()
        return set(self.collection(modality).get(ids=list(ids), include=[])["ids"])

    # -- writing ----------------------------------------------------------------------------
    def add(self, items: Iterable[Item]) -> AddStats:
        """Embed and store items not already present; duplicates within the input count once."""
        stats = AddStats()
        by_modality: dict[str, dict[str, Item]] = {}
        for item in items:
            group = by_modality.setdefault(item.modality, {})
            if item.id in group:
                stats.existing += 1
            group[item.id] = item
        for modality, group in by_modality.items():
            present = self.existing(list(group), modality)
            stats.existing += len(present)
            todo = [it for id_, it in group.items() if id_ not in present]
            if not todo:
                continue
            began = time.perf_counter()
            vecs = self.embedder.encode([it.embed_text() for it in todo])
            stats.embed_seconds += time.perf_counter() - began
            began = time.perf_counter()
            col = self.collection(modality)
            step = min(self.client.get_max_batch_size(), 4096)
            for i in range(0, len(todo), step):
                chunk = todo[i : i + step]
                col.add(
                    ids=[it.id for it in chunk],
                    embeddings=vecs[i : i + step],
                    documents=[it.text for it in chunk],
                    metadatas=[_metadata(it) for it in chunk],
                )
            stats.store_seconds += time.perf_counter() - began
            stats.added += len(todo)
            self._vectors.pop(modality, None)
        return stats

    # -- reading ----------------------------------------------------------------------------
    def embed_query(self, query: str) -> np.ndarray:
        return self.embedder.encode_one(query)

    def search(
        self,
        query: str | np.ndarray,
        *,
        k: int = 5,
        modalities: Sequence[str] | None = None,
        sources: Sequence[str] | None = None,
        radius: float | None = None,
        max_hits: int = 100,
        derived: bool | None = None,
    ) -> list[Evidence]:
        """Top-``k`` by cosine similarity, or, with ``radius``, every item within that cosine
        distance (MMAPG's query_radius; at most ``max_hits``), best first. ``derived`` False
        keeps only original items, True only derived ones (triplets); None both."""
        collections = [
            (col, size)
            for modality in modalities or MODALITIES
            if (col := self.collection(modality, create=False)) is not None
            and (size := col.count())
        ]
        if not collections:
            return []
        vec = self.embed_query(query) if isinstance(query, str) else np.asarray(query, np.float32)
        clauses = []
        if sources:
            clauses.append(
                {"source": sources[0]} if len(sources) == 1 else {"source": {"$in": list(sources)}}
            )
        if derived is not None:
            clauses.append({"parent": {"$ne": ""}} if derived else {"parent": ""})
        where = clauses[0] if len(clauses) == 1 else ({"$and": clauses} if clauses else None)
        n = max_hits if radius is not None else k
        hits = [
            h for col, size in collections for h in _nearest(col, vec, min(n, size), radius, where)
        ]
        hits.sort(key=lambda h: h["score"], reverse=True)
        return hits if radius is not None else hits[:k]

    def get(self, ids: Sequence[str]) -> list[Evidence]:
        """Stored items by id (score 1.0), in the order asked; unknown ids are left out."""
        found: dict[str, Evidence] = {}
        for modality in MODALITIES:
            wanted = list(dict.fromkeys(i for i in ids if i.startswith(modality + "-")))
            col = self.collection(modality, create=False) if wanted else None
            if col is None:
                continue
            res = col.get(ids=wanted, include=["documents", "metadatas"])
            for id_, doc, md in zip(res["ids"], res["documents"], res["metadatas"], strict=True):
                found[id_] = _evidence(id_, doc, md, 1.0)
        return [found[i] for i in ids if i in found]

    def vectors(self, modality: str) -> tuple[list[str], np.ndarray]:
        """All ids and the (n, d) float32 matrix of a collection (for GRAIL), cached."""
        col = self.collection(modality, create=False)
        size = col.count() if col is not None else 0
        cached = self._vectors.get(modality)
        if cached is not None and cached[2] == size:
            return cached[0], cached[1]
        ids: list[str] = []
        chunks: list[np.ndarray] = []
        for offset in range(0, size, 10_000):
            res = col.get(include=["embeddings"], limit=10_000, offset=offset)
            ids += res["ids"]
            chunks.append(np.asarray(res["embeddings"], dtype=np.float32))
        dim = self.embedder.dim if not chunks else chunks[0].shape[1]
        matrix = np.concatenate(chunks) if chunks else np.zeros((0, dim), np.float32)
        self._vectors[modality] = (ids, matrix, size)
        return ids, matrix

    # -- the visual space -----------------------------------------------------------------
    def visual_collection(self, create: bool = False):
        """The collection of image vectors, checked to be in the configured image embedder's
        space; None where there is none (and ``create`` is False)."""
        with self._lock:
            col = self._collections.get(VISUAL)
            if col is None and create:
                col = cosine_collection(self.client, VISUAL, self.image_embedder_name)
            elif col is None:
                try:
                    col = self.client.get_collection(VISUAL, embedding_function=None)
                except Exception:  # chromadb raises NotFoundError (varies by version)
                    return None
            indexed_with = (col.metadata or {}).get("embedder")
            if indexed_with != self.image_embedder_name:
                raise KnowledgeBaseError(
                    f"the images of {self.location} were embedded with {indexed_with!r}, but "
                    f"image_embedder is {self.image_embedder_name!r}; their vectors are not "
                    "comparable (set image_embedder or index again)"
                )
            self._collections[VISUAL] = col
            return col

    def add_visual(self, items: Sequence[Item], embedder) -> AddStats:  # noqa: ANN001
        """Embed the image files of ``items`` (image items with a path) with ``embedder`` into
        the visual space; items already there are skipped."""
        stats = AddStats()
        todo = {it.id: it for it in items if it.modality == "image" and it.path}
        if not todo:
            return stats
        col = self.visual_collection(create=True)
        present = set(col.get(ids=list(todo), include=[])["ids"])
        stats.existing = len(present)
        fresh = [it for id_, it in todo.items() if id_ not in present]
        if fresh:
            began = time.perf_counter()
            vecs = embedder.encode_images([it.path for it in fresh])
            stats.embed_seconds = time.perf_counter() - began
            col.add(
                ids=[it.id for it in fresh],
                embeddings=vecs,
                documents=[it.text for it in fresh],
                metadatas=[_metadata(it) for it in fresh],
            )
            stats.added = len(fresh)
        return stats

    def visual_count(self) -> int:
        """How many images the visual space holds (0 where it is absent)."""
        try:
            col = self.visual_collection()
        except KnowledgeBaseError:
            return 0
        return col.count() if col is not None else 0

    def search_visual(
        self, query: str, *, k: int = 5, radius: float | None = None, max_hits: int = 100
    ) -> list[Evidence]:
        """Images by the image embedder's similarity between ``query`` (its text tower) and each
        image (its vision tower): top-``k``, or every image within cosine distance ``radius``."""
        from hopgraph.models.embedders import image_embedder

        col = self.visual_collection()
        size = col.count() if col is not None else 0
        if not size:
            return []
        vec = image_embedder(self.image_embedder_name).encode_texts([query])[0]
        hits = _nearest(col, vec, min(max_hits if radius is not None else k, size), radius)
        return hits if radius is not None else hits[:k]

    def pages_of(self, source: str) -> list[Evidence]:
        """One document's page items (by file name) in page order; empty if none."""
        col = self.collection("page", create=False)
        if col is None:
            return []
        res = col.get(where={"source": source}, include=["documents", "metadatas"])
        hits = [_evidence(i, d, m, 1.0) for i, d, m in zip(res["ids"], res["documents"],
                                                      res["metadatas"], strict=True)]  # fmt: skip
        return sorted(hits, key=lambda h: h["page"] or 0)

    def iter_items(self, modality: str, batch: int = 1000) -> Iterator[Evidence]:
        col = self.collection(modality, create=False)
        size = col.count() if col is not None else 0
        for offset in range(0, size, batch):
            res = col.get(include=["documents", "metadatas"], limit=batch, offset=offset)
            for id_, doc, md in zip(res["ids"], res["documents"], res["metadatas"], strict=True):
                yield _evidence(id_, doc, md, 1.0)
