"""The Chroma plumbing the knowledge base and PolarMem share: a client (local files or a
server, telemetry off) and a cosine collection whose vectors hopgraph's embedder computes (never
Chroma's default embedding function, which would download a model)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from hopgraph.memory.disk import named_when_full
from hopgraph.models.errors import first_line
from hopgraph.runtime import ProcessCache, process_cache


class ChromaUnreachable(RuntimeError):
    """The Chroma server of a KB or memory cannot be reached; the message names it."""


def local_folder(kb: str | Path) -> Path:
    """Where a local knowledge base keeps its Chroma files (it is a KB once that exists)."""
    return Path(kb) / "chroma"


def chroma_client(path: str | Path = "", url: str = ""):
    """A ``HttpClient`` for ``url``, else a ``PersistentClient`` in ``path``/chroma. A server
    that cannot be reached, at the start or mid-way, raises ``ChromaUnreachable`` naming it
    (chromadb's own error names no address)."""
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if not url:
        return chromadb.PersistentClient(path=str(local_folder(path)), settings=settings)
    from urllib.parse import urlparse

    parts = urlparse(url)
    try:
        client = chromadb.HttpClient(
            host=parts.hostname or "localhost",
            port=parts.port or 8000,
            ssl=parts.scheme == "https",
            settings=settings,
        )
    except ValueError as e:  # its heartbeat failed
        raise _unreachable(url, e) from e
    _name_failures(client._server, url)  # type: ignore[attr-defined]  # its HTTP API object
    return client


def _unreachable(url: str, e: BaseException) -> ChromaUnreachable:
    return ChromaUnreachable(
        f"the Chroma server at {url} (chroma_url) cannot be reached: {first_line(e)}. Once it "
        "answers, run the command again: an index goes on where it stopped, and readers never "
        "see a half-written source"
    )


def _name_failures(server: Any, url: str) -> None:
    """Every request of ``server`` (chromadb's HTTP API object, shared by the clients of one
    address) raising ``ChromaUnreachable`` where the connection fails."""
    import httpx

    send = server._make_request
    if getattr(send, "names_failures", False):
        return

    def request(*args: Any, **kwargs: Any) -> Any:
        try:
            return send(*args, **kwargs)
        except httpx.TransportError as e:
            raise _unreachable(url, e) from e

    request.names_failures = True  # type: ignore[attr-defined]
    server._make_request = request


def cosine_collection(client, name: str, embedder: str, **metadata: Any):  # noqa: ANN001
    """The collection ``name`` (made if new), cosine space, tagged with the embedder whose
    vectors it holds."""
    return client.get_or_create_collection(
        name,
        embedding_function=None,
        configuration={"hnsw": {"space": "cosine"}},
        metadata={"embedder": embedder, **metadata},
    )


def existing_collection(client: Any, name: str):  # noqa: ANN201 - a Collection or None
    """The collection ``name``, or None where there is none (a server that cannot be reached
    raises: an absent collection and an absent server are not the same answer)."""
    try:
        return client.get_collection(name, embedding_function=None)
    except ChromaUnreachable:
        raise
    except Exception:  # chromadb raises NotFoundError (varies by version)
        return None


class LocalChroma:
    """The one client of a local Chroma folder in this process (its KnowledgeBase objects share
    it), used under an inter-process file lock and reopened when the folder's write counter
    shows that another process wrote since: Chroma's local files are not safe for two processes
    at once, and an open client does not see another process's writes (several clients of one
    folder in a process share one Chroma system, so only one shared client can reopen it)."""

    def __init__(self, path: Path):
        from filelock import FileLock

        self.path = path
        self._flock = FileLock(str(path / "chroma.lock"), timeout=600)
        self._lock = threading.RLock()
        self.client = None
        self.generation = 0
        """Bumped at each (re)open: collections fetched from an older client are stale."""
        self._seen: int | None = None

    @contextmanager
    def use(self, version: Callable[[], int], written: Callable[[], int] | None = None):
        """The client, fresh as of ``version()`` (the folder's write counter); ``written``
        (a write) bumps that counter for the other processes on the way out."""
        with self._flock, self._lock, named_when_full(local_folder(self.path)):
            seen = version()
            if self.client is None or seen != self._seen:
                if self.client is not None:
                    self.client.close()
                self.client = chroma_client(self.path)
                self.generation += 1
                self._seen = seen
            try:
                yield self.client
            finally:
                if written is not None:
                    self._seen = written()

    @property
    def seen(self) -> int | None:
        """The folder's write counter as of the last use (this process's writes included)."""
        return self._seen

    def close(self) -> None:
        with self._flock, self._lock:
            if self.client is not None:
                self.client.close()
                self.client = None


_folders: ProcessCache[str, LocalChroma] = process_cache("Chroma folders", LocalChroma.close)


def local_chroma(path: str | Path) -> LocalChroma:
    """This process's one ``LocalChroma`` of ``path``."""
    key = str(Path(path).resolve())
    return _folders.get(key, lambda: LocalChroma(Path(key)))


FOLLOWS = "follows"
"""A derived store's metadata key naming what its rows follow: ``"id"`` (a row's id is a KB
item's) or ``"doc"`` (a row's ``doc`` metadata is a KB source document): the knowledge base drops
what a removed source leaves in every such store, whatever its name."""


class Store:
    """One named collection of vectors hopgraph made (cosine space, tagged with the embedder),
    used under its owner's guard: ``guard(write)`` yields the client, a local folder's under its
    inter-process lock and fresh (``LocalChroma.use``), a server's as it is. The per-method
    stores (MAB-DQA's page vectors, GRAIL's projections, the visual space, PolarMem's z_sem)
    sit over it beside their methods, local and server alike. ``open`` holds the guard for a
    few operations (``Shelf``); a missing collection opens as None unless ``create``."""

    def __init__(
        self,
        guard: Callable[[bool], AbstractContextManager[Any]],
        name: str,
        embedder: str,
        **metadata: Any,
    ):
        self.guard = guard
        self.name = name
        self.embedder = embedder
        self.metadata = metadata
        self._held: tuple[Any, Any] | None = None  # (client, collection) last opened

    @contextmanager
    def open(self, write: bool = False, create: bool = False) -> Iterator[Shelf | None]:
        with self.guard(write) as client:
            held = self._held
            if held is not None and held[0] is client:
                col = held[1]  # the same client: its collection handle holds
            elif create:
                col = cosine_collection(client, self.name, self.embedder, **self.metadata)
                have = col.metadata or {}
                if any(have.get(k) != v for k, v in self.metadata.items()):  # made before them
                    col.modify(metadata=have | self.metadata)
            else:
                col = existing_collection(client, self.name)
            if col is not None:
                self._held = (client, col)
            yield Shelf(col, client) if col is not None else None

    @contextmanager
    def made(self, write: bool = False) -> Iterator[Shelf]:
        """``open(create=True)``: the collection, made where it is absent, so never None."""
        with self.open(write, create=True) as shelf:
            if shelf is None:  # cosine_collection makes one or raises
                raise RuntimeError(f"Chroma made no collection {self.name!r}")
            yield shelf

    def forget(self) -> None:
        """Drop the held handle (the collection was deleted or remade elsewhere)."""
        self._held = None


class Shelf:
    """A store's collection while its guard is held: the few operations its users need."""

    def __init__(self, col: Any, client: Any):
        self.col = col
        self._client = client

    @property
    def metadata(self) -> dict[str, Any]:
        return dict(self.col.metadata or {})

    def mark(self, **metadata: Any) -> None:
        """Add to the collection's metadata (``complete`` once a build finished)."""
        self.col.modify(metadata=self.metadata | metadata)

    def upsert(
        self,
        ids: Sequence[str],
        vectors: Any,
        metadatas: Sequence[dict[str, Any]] | None = None,
        documents: Sequence[str] | None = None,
    ) -> None:
        """Write rows, as many at a time as the engine takes."""
        step = min(self._client.get_max_batch_size(), 4096)
        for lo in range(0, len(ids), step):
            hi = min(len(ids), lo + step)
            self.col.upsert(
                ids=list(ids[lo:hi]),
                embeddings=vectors[lo:hi],
                metadatas=list(metadatas[lo:hi]) if metadatas is not None else None,
                documents=list(documents[lo:hi]) if documents is not None else None,
            )

    def get(self, ids: Sequence[str] | None = None, **kwargs: Any) -> dict[str, Any]:
        """Rows by id or ``where`` (``include``, ``limit``, ``offset`` as Chroma's ``get``)."""
        return self.col.get(ids=list(ids) if ids is not None else None, **kwargs)

    def nearest(self, vecs: Any, n: int, **kwargs: Any) -> dict[str, Any]:
        """The ``n`` nearest rows of each of ``vecs`` (m, d) (``where``, ``include`` as
        Chroma's ``query``): per field, one list per query vector."""
        return self.col.query(query_embeddings=vecs, n_results=n, **kwargs)

    def delete(self, ids: Sequence[str] | None = None, where: dict | None = None) -> None:
        self.col.delete(ids=list(ids) if ids is not None else None, where=where)

    def count(self) -> int:
        return self.col.count()


def store_names(client: Any, prefix: str = "") -> list[str]:
    """The names of the collections ``client`` holds that start with ``prefix``."""
    names = [getattr(c, "name", c) for c in client.list_collections()]
    return [n for n in names if n.startswith(prefix)]


def stores_following(client: Any, prefix: str) -> list[tuple[Any, str]]:
    """Each derived store under ``prefix`` (its collection) and what its rows follow
    (``FOLLOWS``), read from its metadata: the listing's own (one request, not one per store),
    a collection fetched by name only where a client lists bare names."""
    out = []
    for listed in client.list_collections():
        name = getattr(listed, "name", listed)
        if not name.startswith(prefix):
            continue
        col = listed if hasattr(listed, "metadata") else existing_collection(client, name)
        follows = (col.metadata or {}).get(FOLLOWS) if col is not None else None
        if follows:
            out.append((col, follows))
    return out
