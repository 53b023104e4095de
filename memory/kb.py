"""The knowledge base: one Chroma collection per modality (text, table, image, page) in one
shared embedding space, each item's text and metadata stored beside its vector.

Vectors are always computed by hopgraph's embedder and passed in: Chroma's default embedding
function (which would download a model) is never used. Item ids derive from content (or from a
dataset's own stable doc id), so indexing the same source twice adds nothing and an interrupted
index resumes where it stopped.

A local KB registers each source it indexed (``memory/registry.py``): every item carries its
source version's hash, and a version that is not live (being written, replaced, removed) is
hidden from every read, so a source that changed is replaced whole, never mixed. Chroma's local
files are not safe for two processes at once, so every Chroma operation of a local KB runs under
one inter-process file lock, and a client that missed another process's writes is reopened.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.memory.chroma import (
    Store,
    chroma_client,
    cosine_collection,
    existing_collection,
    local_chroma,
    local_folder,
    store_names,
    stores_following,
)
from hopgraph.memory.evidence import Evidence, evidence
from hopgraph.memory.registry import RegistryUnreachable, SourceRegistry

MODALITIES = ("text", "table", "image", "page")
log = logging.getLogger(__name__)
COLLECTION_PREFIX = "hopgraph-"
BUILDS = "builds.jsonl"
"""One line per ``hopgraph index`` run beside a local KB: the settings it indexed with."""


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


def item_metadata(item: Item, version: str | None = None) -> dict[str, Any]:
    """What Chroma stores beside an item; ``src_hash`` is its source version (registered
    writes only)."""
    return ({"src_hash": version} if version else {}) | {
        "modality": item.modality,
        "title": item.title,
        "source": item.source,
        "page": -1 if item.page is None else int(item.page),
        "path": item.path,
        "parent": item.parent,
        "meta": json.dumps(item.meta, ensure_ascii=False),
    }


MAX_EVIDENCE_CHARS = 16000
"""The most of one stored item's text a hit carries (about 4,000 tokens): an item indexed
before passages were bounded (a 50 MB line as one) never fills a prompt alone; its hit says
how much was cut (``provenance["cut_chars"]``)."""


def stored_evidence(id_: str, doc: str | None, md: dict[str, Any] | None, score: float) -> Evidence:
    """A stored item as Evidence (its stored ``meta`` becomes the provenance), its text cut to
    ``MAX_EVIDENCE_CHARS``."""
    md = md or {}
    page = md.get("page", -1)
    text, provenance = doc or "", json.loads(md.get("meta") or "{}")
    if len(text) > MAX_EVIDENCE_CHARS:
        provenance["cut_chars"] = len(text) - MAX_EVIDENCE_CHARS
        text = text[:MAX_EVIDENCE_CHARS]
    return evidence(
        id_,
        text,
        score=score,
        modality=md.get("modality", ""),
        title=md.get("title", ""),
        source=md.get("source", ""),
        page=None if page is None or page < 0 else int(page),
        path=md.get("path", ""),
        parent=md.get("parent", ""),
        provenance=provenance,
    )


Row = tuple[str, str, dict[str, Any], float]
"""A stored item as Chroma returns it: id, document, metadata, cosine distance (0 for a get)."""


ABSENT_FOR = 10.0
"""Seconds a server KB trusts that a modality has no collection before asking again (a
collection another machine creates is searched at most this late)."""


def damaged(e: BaseException) -> bool:
    """Whether ``e`` says that Chroma's files are corrupt (SQLite's "malformed" or "not a
    database", as Chroma's Rust bindings or sqlite3 report it)."""
    text = str(e).lower()
    return "malformed" in text or "not a database" in text


def _unhidden(where: dict | None, hidden: Sequence[str]) -> dict | None:
    """``where``, and while some source version is hidden, not one of those."""
    if not hidden:
        return where
    clause = {"src_hash": {"$nin": list(hidden)}}
    return clause if where is None else {"$and": [where, clause]}


def _nearest(
    col: Any,
    vec: np.ndarray,
    n: int,
    radius: float | None,
    where: dict | None = None,
    keep: dict[str, np.ndarray] | None = None,
) -> list[Row]:
    """A collection's ``n`` nearest items to ``vec``, best first; with ``radius``, only those
    within that cosine distance. ``keep`` receives each hit's stored vector (asked of the
    engine with the hits, not fetched by id afterwards)."""
    res = col.query(
        query_embeddings=vec[None, :],
        n_results=n,
        where=where,
        include=[
            "documents",
            "metadatas",
            "distances",
            *(["embeddings"] if keep is not None else []),
        ],
    )
    if keep is not None:
        keep.update(zip(res["ids"][0], np.asarray(res["embeddings"][0], np.float32), strict=True))
    return [
        (id_, doc or "", md or {}, float(dist))
        for id_, doc, md, dist in zip(
            res["ids"][0],
            res["documents"][0],
            res["metadatas"][0],
            res["distances"][0],
            strict=True,
        )
        if radius is None or dist <= radius
    ]


def nearest_visible(
    col: Any,
    vec: np.ndarray,
    n: int,
    radius: float | None,
    where: dict | None,
    hidden: list[str],
    keep: dict[str, np.ndarray] | None = None,
) -> list[Row]:
    """``_nearest`` less the hidden versions' items. While some are hidden (a source being
    written or replaced), twice ``n`` are fetched and filtered here; only where that leaves
    fewer than ``n`` is the query repeated with the filter in the engine, whose ``$nin`` over
    every item's metadata costs in proportion to the collection."""
    if not hidden:
        return _nearest(col, vec, n, radius, where, keep)
    rows = _nearest(col, vec, 2 * n, radius, where, keep)
    gone = set(hidden)
    kept = [r for r in rows if r[2].get("src_hash") not in gone]
    if len(kept) >= n or len(rows) < 2 * n:  # enough, or the collection has no more
        return kept[:n]
    return _nearest(col, vec, n, radius, _unhidden(where, hidden), keep)


def result_rows(res: dict) -> list[Row]:
    return [
        (i, d or "", m or {}, 0.0)
        for i, d, m in zip(res["ids"], res["documents"], res["metadatas"], strict=True)
    ]


def damaged_message(folder: Path, registry: SourceRegistry | None, e: Exception) -> str:
    """What to say of a KB whose Chroma files cannot be read: which file, and how to rebuild
    it from the sources its registry names."""
    try:
        sources = registry.sources() if registry is not None else []
    except Exception:  # noqa: BLE001 - the registry may be damaged too
        sources = []
    roots = [str(Path(s.path).parent) if s.format == "folder" else s.path for s in sources]
    roots = list(dict.fromkeys(roots))
    again = "; ".join(f"`hopgraph index {root} --kb {folder}`" for root in roots[:3])
    if len(roots) > 3:
        again += f" and {len(roots) - 3} more (`hopgraph kb ls --kb {folder}.damaged`)"
    return (
        f"the knowledge base at {folder} is damaged: {folder / 'chroma' / 'chroma.sqlite3'} "
        f"cannot be read ({str(e).strip()[:200]}). Rebuild it: move the folder aside "
        f"(`mv {folder} {folder}.damaged`), then index its sources again: "
        + (again or f"`hopgraph index SOURCE --kb {folder}` for each source it held")
    )


def stamps_wanted(
    stored: dict[str, dict[str, Any]],
    owners: dict[str, tuple[str, str]],
    registry: SourceRegistry | None,
) -> dict[str, str]:
    """The version each item must carry (another live holder's, else its own source's), for
    the items whose stored stamp differs."""
    by_source: dict[str, list[str]] = {}
    for id_ in stored:
        by_source.setdefault(owners[id_][0], []).append(id_)
    others: dict[str, str] = {}
    if registry is not None:
        for source, ids in by_source.items():
            others |= registry.live_holders(ids, besides=source)
    want = {id_: others.get(id_, owners[id_][1]) for id_ in stored}
    return {id_: v for id_, v in want.items() if stored[id_].get("src_hash") != v}


class Absences:
    """The modalities found to have no collection, so a search does not ask again each time:
    a local KB's finding holds until its next write (its write counter), a server's for
    ``ABSENT_FOR`` seconds."""

    def __init__(self, local: Any):  # noqa: ANN401 - memory/chroma.py's LocalChroma or None
        self._local = local
        self._when: dict[str, float | None] = {}

    def note(self, modality: str) -> None:
        self._when[modality] = self._local.seen if self._local is not None else time.monotonic()

    def forget(self, modality: str) -> None:
        self._when.pop(modality, None)

    def known(self, modality: str) -> bool:
        """Found absent with no write since (local), or within ``ABSENT_FOR`` (server)."""
        stamp = self._when.get(modality)
        if stamp is None:
            return False
        if self._local is not None:
            return stamp == self._local.seen
        return time.monotonic() - stamp < ABSENT_FOR


class BuildLog:
    """The settings each ``hopgraph index`` run indexed a KB with (source, format, OCR engine
    ...): ``builds.jsonl`` beside a local KB (``path``), a server KB's registry otherwise;
    a server KB with no registry keeps none."""

    def __init__(self, path: Path | None, registry: SourceRegistry | None):
        self.path, self.registry = path, registry

    def record(self, settings: dict[str, Any]) -> None:
        """Append one index run's settings."""
        if self.path is None:
            if self.registry is not None:
                self.registry.record_build(settings)
            return
        torn = self.path.exists() and not self.path.read_bytes().endswith(b"\n")  # a crash mid-line
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(("\n" if torn else "") + json.dumps(settings, sort_keys=True) + "\n")

    def settings(self) -> list[dict[str, Any]]:
        """The distinct settings, first seen first; [] where unknown (a KB built before they
        were recorded, or a server KB with no registry)."""
        if self.path is None:
            return self.registry.builds() if self.registry is not None else []
        out: list[dict[str, Any]] = []
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    settings = json.loads(line)
                except json.JSONDecodeError:  # a line torn by a crash mid-write
                    continue
                if settings not in out:
                    out.append(settings)
        return out


class HitVectors:
    """The stored vectors of recent hits by id (searches that asked ``vectors=True``), valid
    while their stamp holds (the KB's writes and hidden versions, ``KnowledgeBase._hit_stamp``):
    what GRAIL steers away from, without a fetch by id. Past ``SIZE`` (about 30 MB at d = 384)
    the least recent go first."""

    SIZE = 20_000

    def __init__(self) -> None:
        self._stamp: Any = None
        self._kept: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def _at(self, stamp: Any) -> OrderedDict[str, np.ndarray]:  # noqa: ANN401 - a tuple
        if self._stamp != stamp:
            self._stamp, self._kept = stamp, OrderedDict()
        return self._kept

    def keep(self, found: dict[str, np.ndarray], stamp: Any) -> None:  # noqa: ANN401
        with self._lock:
            kept = self._at(stamp)
            for i, v in found.items():
                kept[i] = v
                kept.move_to_end(i)
            while len(kept) > self.SIZE:
                kept.popitem(last=False)

    def known(self, ids: Sequence[str], stamp: Any) -> dict[str, np.ndarray]:  # noqa: ANN401
        """The kept vectors of ``ids`` under ``stamp``."""
        with self._lock:
            kept = self._at(stamp)
            return {i: kept[i] for i in ids if i in kept}


class KnowledgeBase:
    """Chroma collections per modality, local files (``PersistentClient``) or a server.

    Every KB keeps a source registry (``self.registry``): a local one in its folder, a KB on
    a Chroma server in the PostgreSQL database ``registry_url`` names, which every machine that
    uses it reaches. A server KB with no ``registry_url`` has none: its sources cannot be
    listed, replaced or removed one by one, and the commands that would say so."""

    def __init__(
        self,
        path: str | Path = "kb",
        *,
        chroma_url: str = "",
        registry_url: str = "",
        embedder: str = "all-MiniLM-L6-v2",
        image_embedder: str = "",
        batch_size: int = 16,
        must_exist: bool = False,
    ):
        self.path = Path(path).expanduser()
        self.embedder_name = embedder
        self.image_embedder_name = image_embedder
        self.batch_size = batch_size
        self.registry: SourceRegistry | None = None
        self._local = None
        self._client = None
        if chroma_url:
            self._client = chroma_client(url=chroma_url)
            self.location = chroma_url
            if registry_url:
                try:
                    self.registry = SourceRegistry(url=registry_url)
                except RegistryUnreachable as e:
                    raise KnowledgeBaseError(str(e)) from e
        else:
            if self.path.exists() and not self.path.is_dir():
                raise KnowledgeBaseError(
                    f"{self.path} is a file, not a knowledge-base folder: name a folder "
                    "(`hopgraph index SOURCE --kb FOLDER` makes one)"
                )
            if must_exist and not local_folder(self.path).is_dir():
                raise KnowledgeBaseError(
                    f"no knowledge base at {self.path}: build one with `hopgraph index SOURCE "
                    f"--kb {self.path}`"
                )
            self.path.mkdir(parents=True, exist_ok=True)
            self.registry = SourceRegistry(self.path)
            self._local = local_chroma(self.path)
            self.location = str(self.path)
        self.builds = BuildLog(
            self.path / BUILDS if self._local is not None else None, self.registry
        )
        """The settings each ``hopgraph index`` run indexed it with."""
        self._generation = -1
        self._collections: dict[str, Any] = {}
        self._stores: dict[tuple[str, str, str], Store] = {}
        self._absent = Absences(self._local)
        self._embedder: Any = None
        self._vectors: dict[str, tuple[Any, list[str], np.ndarray]] = {}
        self._hits = HitVectors()
        self._written = 0
        """What this object wrote to a server KB (``_hit_stamp``)."""
        self._lock = threading.RLock()
        with self._chroma():  # opened now: a KB folder exists once a KnowledgeBase is made
            pass

    @classmethod
    def from_context(cls, ctx, must_exist: bool = False) -> KnowledgeBase:  # noqa: ANN001
        """The knowledge base a ``hopgraph.config.Context`` names."""
        return cls(
            ctx.kb_dir,
            chroma_url=ctx.chroma_url,
            registry_url=ctx.registry_url,
            embedder=ctx.text_embedder,
            image_embedder=ctx.image_embedder,
            batch_size=ctx.embed_batch_size,
            must_exist=must_exist,
        )

    def _own_registry(self) -> SourceRegistry:
        """The registry a local KB keeps beside its Chroma files (a server KB has one only
        with ``registry_url``)."""
        if self.registry is None:
            raise KnowledgeBaseError(f"{self.location} keeps no source registry")
        return self.registry

    # -- Chroma, one process at a time ----------------------------------------------------
    @contextmanager
    def _chroma(self, write: bool = False) -> Iterator[None]:
        """Chroma under the inter-process lock, by a client that has seen every write so far
        (``memory/chroma.py:LocalChroma``); a write tells the other processes."""
        if self._local is None:
            self._written += write  # what this object wrote to a server KB (``_hit_stamp``)
            yield
            return
        registry = self._own_registry()
        written = registry.chroma_written if write else None
        try:
            with self._local.use(registry.chroma_version, written), self._lock:
                if self._generation != self._local.generation:  # reopened: stale collections
                    self._collections.clear()
                    self._generation = self._local.generation
                yield
        except Exception as e:
            if damaged(e):
                raise KnowledgeBaseError(damaged_message(self.path, self.registry, e)) from e
            raise

    @property
    def client(self):  # noqa: ANN201 - a chromadb client
        """The Chroma client (a local KB's: use it inside ``_chroma()``)."""
        return self._local.client if self._local is not None else self._client

    @property
    def is_local(self) -> bool:
        """Whether its Chroma lives in its own folder (else on a server)."""
        return self._local is not None

    def hidden(self) -> list[str]:
        """The source versions no read may return (being written, replaced or removed)."""
        return self.registry.hidden() if self.registry is not None else []

    def visible(self, rows: list[Row]) -> list[Row]:
        """``rows`` less those of a version hidden now: read after the query, so a version
        that a commit or a removal retired while it ran is dropped too."""
        hidden = set(self.hidden())
        return [r for r in rows if r[2].get("src_hash") not in hidden] if hidden else rows

    def close(self) -> None:
        """Release the registry's connection (the process's Chroma client of a local KB is
        shared, released by ``runtime.close_all``)."""
        if self.registry is not None:
            self.registry.close()

    # -- collections ----------------------------------------------------------------------
    @property
    def embedder(self):
        if self._embedder is None:
            from hopgraph.models.embedders import text_embedder

            self._embedder = text_embedder(self.embedder_name, self.batch_size)
        return self._embedder

    def for_queries(self) -> KnowledgeBase:
        """This KB embedding its queries without torch where its text model allows
        (``models/query_embedder.py``: the same vectors, loaded in a fraction of a second),
        for a one-shot search; indexing still loads ``TextEmbedder``."""
        from hopgraph.models.query_embedder import query_embedder

        if self._embedder is None:
            self._embedder = query_embedder(self.embedder_name)
        return self

    def collection(self, modality: str, create: bool = True):
        """The Chroma collection of ``modality``, checked to be in this embedder's space (use
        it inside ``_chroma()``)."""
        if modality not in MODALITIES:
            raise KnowledgeBaseError(f"unknown modality {modality!r}; one of {MODALITIES}")
        with self._lock:
            col = self._collections.get(modality)
            if col is not None:
                return col
            name = COLLECTION_PREFIX + modality
            if create:
                col = cosine_collection(self.client, name, self.embedder_name, modality=modality)
                self._absent.forget(modality)
            else:
                if self._absent.known(modality):
                    return None  # not asked again on every search
                col = existing_collection(self.client, name)
                if col is None:
                    self._absent.note(modality)
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
        """Items stored per modality (a version being written or removed included)."""
        out = {}
        with self._chroma():
            for modality in MODALITIES:
                col = self.collection(modality, create=False)
                out[modality] = col.count() if col is not None else 0
        return out

    # -- writing ----------------------------------------------------------------------------
    def add(
        self, items: Iterable[Item], *, owners: dict[str, tuple[str, str]] | None = None
    ) -> AddStats:
        """Embed and store items not already present; duplicates within the input count once.

        With ``owners`` (item id -> the registered source writing it and that source's pending
        version): an item stored with other text is re-embedded and replaced, and each item is
        stamped with the version that holds it (another live source's, where one holds it
        too, else its own source's)."""
        stats = AddStats()
        by_modality: dict[str, dict[str, Item]] = {}
        for item in items:
            group = by_modality.setdefault(item.modality, {})
            if item.id in group:
                stats.existing += 1
            group[item.id] = item
        for modality, group in by_modality.items():
            with self._chroma():
                stored = self.collection(modality).get(
                    ids=list(group), include=["documents", "metadatas"]
                )
            same = {
                id_: md or {}
                for id_, doc, md in zip(
                    stored["ids"], stored["documents"], stored["metadatas"], strict=True
                )
                if owners is None or (doc == group[id_].text and _unchanged(md, group[id_]))
            }
            stats.existing += len(same)
            if owners is not None:
                self.restamp(stamps_wanted(same, owners, self.registry))
            todo = [it for id_, it in group.items() if id_ not in same]
            if not todo:
                continue
            began = time.perf_counter()
            vecs = self.embedder.encode([it.embed_text() for it in todo])
            stats.embed_seconds += time.perf_counter() - began
            began = time.perf_counter()
            stamps = (
                stamps_wanted({it.id: {} for it in todo}, owners, self.registry) if owners else {}
            )
            with self._chroma(write=True):
                col = self.collection(modality)
                step = min(self.client.get_max_batch_size(), 4096)
                for i in range(0, len(todo), step):
                    chunk = todo[i : i + step]
                    col.upsert(
                        ids=[it.id for it in chunk],
                        embeddings=vecs[i : i + step],
                        documents=[it.text for it in chunk],
                        metadatas=[item_metadata(it, stamps.get(it.id)) for it in chunk],
                    )
            stats.store_seconds += time.perf_counter() - began
            stats.added += len(todo)
        return stats

    def restamp(self, stamps: dict[str, str]) -> None:
        """Set each item's source version (in every collection that holds it, the derived
        stores that follow item ids included)."""
        if not stamps:
            return
        with self._chroma(write=True):
            for modality in MODALITIES:
                ids = [i for i in stamps if i.startswith(modality + "-")]
                col = self.collection(modality, create=False) if ids else None
                if col is not None:
                    col.update(ids=ids, metadatas=[{"src_hash": stamps[i]} for i in ids])
            for col, follows in stores_following(self.client, COLLECTION_PREFIX):
                there = col.get(ids=list(stamps), include=[])["ids"] if follows == "id" else []
                if there:  # a derived store's copy of an item (the visual space's) too
                    col.update(ids=there, metadatas=[{"src_hash": stamps[i]} for i in there])

    def drop_cached_vectors(self) -> None:
        """Forget the vectors read for ``vectors`` (items were deleted)."""
        self._vectors.clear()

    # -- the stores derived from the KB, beside their methods -------------------------------
    @contextmanager
    def guarded(self, write: bool = False) -> Iterator[Any]:
        """The Chroma client under this KB's guard (``_chroma``): what its derived stores
        use, so they share its lock and its view of other processes' writes."""
        with self._chroma(write):
            yield self.client

    def store(self, name: str, embedder: str = "", **metadata: Any) -> Store:
        """A derived store kept where the KB lives (``memory/chroma.py:Store``), named under
        the KB's prefix; ``follows`` in ``metadata`` has it cleaned with the KB's items."""
        key = (name, embedder, json.dumps(metadata, sort_keys=True))
        with self._lock:  # one per name: it keeps its collection's handle between uses
            if key not in self._stores:
                self._stores[key] = Store(
                    self.guarded,
                    COLLECTION_PREFIX + name,
                    embedder or self.embedder_name,
                    **metadata,
                )
            return self._stores[key]

    def drop_stores(self, prefix: str, keep: str = "") -> None:
        """Delete the derived stores whose names start with ``prefix``, all but ``keep`` (a
        full name)."""
        with self._chroma(write=True):
            for name in store_names(self.client, COLLECTION_PREFIX + prefix):
                if name != keep:
                    self.client.delete_collection(name)

    def vector_batches(self, batch: int = 4096) -> Iterator[dict[str, Any]]:
        """Every stored item's id, vector and metadata (hidden versions too), ``batch`` at a
        time, modality after modality: what a derived store is built from."""
        for modality in MODALITIES:
            with self._chroma():
                col = self.collection(modality, create=False)
                size = col.count() if col is not None else 0
                batch = min(batch, self.client.get_max_batch_size())
            for offset in range(0, size, batch):
                with self._chroma():  # fetched anew: the client may have been reopened
                    col = self.collection(modality, create=False)
                    res = col.get(include=["embeddings", "metadatas"], limit=batch, offset=offset)
                yield res

    def add_vectors(
        self, modality: str, ids: Sequence[str], vectors: np.ndarray, metadatas: list[dict]
    ) -> None:
        """Store vectors made elsewhere as they are (the benchmarks' synthetic collections)."""
        with self._chroma(write=True):
            col = self.collection(modality)
            for i in range(0, len(ids), 4096):
                col.add(
                    ids=list(ids[i : i + 4096]),
                    embeddings=vectors[i : i + 4096],
                    metadatas=metadatas[i : i + 4096],
                )

    # -- reading ----------------------------------------------------------------------------
    def _hit_stamp(self, hidden: Sequence[str]) -> tuple:
        """What the kept hit vectors are valid for: this KB's writes so far (a local KB's
        counter, which every process bumps; a server KB's writes through this object) and the
        source versions hidden now."""
        local = self._own_registry().chroma_version() if self._local is not None else self._written
        return (local, tuple(hidden))

    def stored_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of ``ids`` (unknown ids are left out): those of recent hits
        from memory (``search(vectors=True)``), the others fetched by id."""
        out = self._hits.known(ids, self._hit_stamp(self.hidden()))
        if len(out) == len(set(ids)):
            return out  # all recent hits: no engine call, not even its lock
        with self._chroma():
            for modality in MODALITIES:
                wanted = [i for i in ids if i.startswith(modality + "-") and i not in out]
                col = self.collection(modality, create=False) if wanted else None
                if col is not None:
                    res = col.get(ids=wanted, include=["embeddings"])
                    out.update(
                        zip(res["ids"], np.asarray(res["embeddings"], np.float32), strict=True)
                    )
        return out

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
        vectors: bool = False,
    ) -> list[Evidence]:
        """Top-``k`` by cosine similarity, or, with ``radius``, every item within that cosine
        distance (MMAPG's query_radius; at most ``max_hits``), best first. ``derived`` False
        keeps only original items, True only derived ones (triplets); None both. ``vectors``:
        the hits' stored vectors come with them and are kept for ``stored_vectors`` (GRAIL
        steers away from what it holds without fetching it again)."""
        with self._chroma():  # a KB without the collection needs no query vector; another
            wanted = [  # embedder's collection is refused. No count: it grows with the KB
                modality
                for modality in modalities or MODALITIES
                if self.collection(modality, create=False) is not None
            ]
        if not wanted:
            return []
        vec = (
            self.embedder.encode_one(query)
            if isinstance(query, str)
            else np.asarray(query, np.float32)
        )
        clauses: list[dict[str, Any]] = []
        if sources:
            clauses.append(
                {"source": sources[0]} if len(sources) == 1 else {"source": {"$in": list(sources)}}
            )
        if derived is not None:
            clauses.append({"parent": {"$ne": ""}} if derived else {"parent": ""})
        where = clauses[0] if len(clauses) == 1 else ({"$and": clauses} if clauses else None)
        hidden = self.hidden()
        n = max_hits if radius is not None else k
        rows: list[Row] = []
        found: dict[str, np.ndarray] | None = {} if vectors else None
        with self._chroma():
            for modality in wanted:
                col = self.collection(modality, create=False)
                rows += nearest_visible(col, vec, n, radius, where, hidden, found)
        if found:
            self._hits.keep(found, self._hit_stamp(hidden))
        hits = [stored_evidence(i, d, m, 1.0 - dist) for i, d, m, dist in self.visible(rows)]
        hits.sort(key=lambda h: h["score"], reverse=True)
        return hits if radius is not None else hits[:k]

    def get(self, ids: Sequence[str]) -> list[Evidence]:
        """Stored items by id (score 1.0), in the order asked; unknown ids are left out."""
        rows: list[Row] = []
        with self._chroma():
            for modality in MODALITIES:
                wanted = list(dict.fromkeys(i for i in ids if i.startswith(modality + "-")))
                col = self.collection(modality, create=False) if wanted else None
                if col is not None:
                    rows += result_rows(col.get(ids=wanted, include=["documents", "metadatas"]))
        found = {i: stored_evidence(i, d, m, 1.0) for i, d, m, _ in self.visible(rows)}
        return [found[i] for i in ids if i in found]

    def vectors(self, modality: str) -> tuple[list[str], np.ndarray]:
        """All visible ids and the (n, d) float32 matrix of a collection (for GRAIL), cached
        until a write or a change of what is hidden."""
        with self._chroma():
            col = self.collection(modality, create=False)
            size = col.count() if col is not None else 0
            written = self.registry.chroma_version() if self.registry is not None else 0
            stamp = (size, written, tuple(self.hidden()))
            cached = self._vectors.get(modality)
            if cached is not None and cached[0] == stamp:
                return cached[1], cached[2]
            ids: list[str] = []
            chunks: list[np.ndarray] = []
            hidden = set(stamp[2])
            for offset in range(0, size, 10_000):
                res = col.get(include=["embeddings", "metadatas"], limit=10_000, offset=offset)
                keep = [
                    j
                    for j, md in enumerate(res["metadatas"])
                    if (md or {}).get("src_hash") not in hidden
                ]
                ids += [res["ids"][j] for j in keep]
                chunks.append(np.asarray(res["embeddings"], dtype=np.float32)[keep])
        dim = self.embedder.dim if not chunks else chunks[0].shape[1]
        matrix = np.concatenate(chunks) if chunks else np.zeros((0, dim), np.float32)
        self._vectors[modality] = (stamp, ids, matrix)
        return ids, matrix

    # -- a projection of the whole KB, kept in the engine ------------------------------------
    def state(self) -> str:
        """What the KB holds now, read cheaply where it can be: a local KB's write counter
        (every write bumps it) with its sources' live and hidden versions; a server KB's
        sources' versions where it has registered sources (its items come through ``index``);
        else its item counts (a count per collection: a server KB filled by ``add`` alone)."""
        registered = self.registry.state() if self.registry is not None else ""
        hidden = ",".join(sorted(self.hidden()))
        if self._local is not None:
            return f"{self._own_registry().chroma_version()}/{registered}/{hidden}"
        if registered:
            return f"{registered}/{hidden}"
        return json.dumps(self.counts(), sort_keys=True)

    def pages_of(self, source: str) -> list[Evidence]:
        """One document's page items (by file name) in page order; empty if none."""
        with self._chroma():
            col = self.collection("page", create=False)
            if col is None:
                return []
            where = _unhidden({"source": source}, self.hidden())
            rows = result_rows(col.get(where=where, include=["documents", "metadatas"]))
        hits = [stored_evidence(i, d, m, 1.0) for i, d, m, _ in self.visible(rows)]
        return sorted(hits, key=lambda h: h["page"] or 0)

    def iter_items(self, modality: str, batch: int = 1000) -> Iterator[Evidence]:
        """Every visible item of a collection, a batch read at a time."""
        with self._chroma():
            col = self.collection(modality, create=False)
            size = col.count() if col is not None else 0
        for offset in range(0, size, batch):
            with self._chroma():  # fetched anew: the client may have been reopened meanwhile
                col = self.collection(modality, create=False)
                res = col.get(include=["documents", "metadatas"], limit=batch, offset=offset)
            for id_, doc, md, _ in self.visible(result_rows(res)):
                yield stored_evidence(id_, doc, md, 1.0)


def _unchanged(md: dict[str, Any] | None, item: Item) -> bool:
    """Whether a stored item's fields (its text aside) are the item's."""
    fresh = item_metadata(item)
    return all((md or {}).get(k) == v for k, v in fresh.items())
