"""The Chroma plumbing the knowledge base and PolarMem share: a client (local files or a
server, telemetry off) and a cosine collection whose vectors hopgraph's embedder computes (never
Chroma's default embedding function, which would download a model)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
        with self._flock, self._lock:
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
