"""The Chroma plumbing the knowledge base and PolarMem share: a client (local files or a
server, telemetry off) and a cosine collection whose vectors hopgraph's embedder computes (never
Chroma's default embedding function, which would download a model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def chroma_client(path: str | Path = "", url: str = ""):
    """A ``HttpClient`` for ``url``, else a ``PersistentClient`` in ``path``/chroma."""
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if url:
        from urllib.parse import urlparse

        parts = urlparse(url)
        return chromadb.HttpClient(
            host=parts.hostname or "localhost",
            port=parts.port or 8000,
            ssl=parts.scheme == "https",
            settings=settings,
        )
    return chromadb.PersistentClient(path=str(Path(path) / "chroma"), settings=settings)


def cosine_collection(client, name: str, embedder: str, **metadata: Any):  # noqa: ANN001
    """The collection ``name`` (made if new), cosine space, tagged with the embedder whose
    vectors it holds."""
    return client.get_or_create_collection(
        name,
        embedding_function=None,
        configuration={"hnsw": {"space": "cosine"}},
        metadata={"embedder": embedder, **metadata},
    )
