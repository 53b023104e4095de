"""Multi-vector page and query embeddings for late interaction (mab-dqa.txt Sec. 3.1).

The paper embeds page images with ColPali. With ``page_embedder`` set (a ColPali-family model,
``models.embedders.PageEmbedder``), pages are their rendered images' token vectors and queries
their text tokens'. Without it (the CPU default, since no such weights reach every machine), a
page is its own text split into lines (short lines merged, long ones split into sentences),
each line one text-encoder vector, so LI(q, p) of Eq. 1 keeps its multi-vector shape either way.
The vectors of one document are kept where the knowledge base lives (a store per encoder,
``keep_page_vectors``), keyed by the encoder and the page texts or images, so every machine that
answers over the document shares them; the KB drops them with the document.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hopgraph.memory.chroma import FOLLOWS, Store
from hopgraph.memory.evidence import Evidence
from hopgraph.memory.kb import KnowledgeBase

PAGE_VECTORS = "pagevec-"
"""The page-vector stores' names begin so, one per encoder."""
MIN_WORDS = 4  # a shorter line joins the next (headers, numbers, table cells)
MAX_WORDS = 60  # a longer line is split into sentences
MAX_UNITS = 96  # per page, so one dense page cannot dominate the cost
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
_CLAUSE = re.compile(r"\s*(?:[,;:?]|\band\b|\bor\b)\s*")


def page_units(text: str) -> list[str]:
    """A page's text as units of MIN_WORDS..MAX_WORDS words, in reading order."""
    units: list[str] = []
    carry = ""
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if not line:
            continue
        line = f"{carry} {line}".strip() if carry else line
        if len(line.split()) < MIN_WORDS:
            carry = line
            continue
        carry = ""
        if len(line.split()) > MAX_WORDS:
            units += [s for s in _SENTENCE.split(line) if s]
        else:
            units.append(line)
    if carry:
        units.append(carry)
    return units[:MAX_UNITS]


def query_units(query: str) -> list[str]:
    """The query split the same way, down to clauses: one vector per aspect it names (the
    closest a sentence encoder comes to ColPali's one vector per query token)."""
    parts = [p.strip() for p in _CLAUSE.split(" ".join(query.split())) if p and p.strip()]
    parts = [p for p in parts if len(p.split()) >= 2] or [query.strip()]
    return list(dict.fromkeys(parts))


@dataclass
class DocumentPages:
    """One document's pages in page order, with each page's unit vectors."""

    doc: str
    pages: list[Evidence]
    vectors: list[np.ndarray]


def document_pages(kb: KnowledgeBase, doc: str, page_embedder: str = "") -> DocumentPages:
    """The pages the knowledge base holds for ``doc`` (a PDF's file name) and their vectors:
    ColPali-family image-token vectors with ``page_embedder``, else text-line vectors."""
    hits = kb.pages_of(doc)
    if not hits:
        raise LookupError(
            f"the knowledge base at {kb.path} holds no pages of {doc!r}; index the PDF first "
            f"(hopgraph index <folder of PDFs> --kb ...)"
        )
    if page_embedder:
        unrendered = [h["page"] for h in hits if not h["path"] or not Path(h["path"]).is_file()]
        if unrendered:
            raise LookupError(
                f"page_embedder {page_embedder!r} reads page images, but {doc!r} has no rendered "
                f"image for page(s) {unrendered[:5]}; index the PDF again without --no-render"
            )
        images = [Path(h["path"]).read_bytes() for h in hits]
        key = _key([page_embedder, *(hashlib.sha1(b).hexdigest() for b in images)])
        flat, offsets = _cached(
            kb, doc, key, page_embedder, lambda: _page_images(page_embedder, hits)
        )
    else:
        units = [page_units(h["text"]) for h in hits]
        key = _key([kb.embedder.name, *("\x01".join(u) for u in units)])
        flat, offsets = _cached(kb, doc, key, kb.embedder.name, lambda: _text_lines(kb, units))
    vectors = [
        flat[offsets[i] : offsets[i + 1]]
        if offsets[i + 1] > offsets[i]
        else np.zeros((0, flat.shape[1]), np.float32)
        for i in range(len(hits))
    ]
    return DocumentPages(doc, hits, vectors)


def _key(parts: list[str]) -> str:
    return hashlib.sha1("\x00".join(parts).encode()).hexdigest()[:16]


def _text_lines(kb: KnowledgeBase, units: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
    flat = kb.embedder.encode([u for page in units for u in page])
    return flat, np.cumsum([0, *(len(u) for u in units)])


def _page_images(name: str, hits: list[Evidence]) -> tuple[np.ndarray, np.ndarray]:
    from hopgraph.models.embedders import page_embedder

    per_page = page_embedder(name).encode_pages([h["path"] for h in hits])
    return np.concatenate(per_page), np.cumsum([0, *(len(v) for v in per_page)])


def _cached(
    kb: KnowledgeBase, doc: str, key: str, encoder: str, build
) -> tuple[np.ndarray, np.ndarray]:  # noqa: ANN001
    """A document's (flat vectors, page offsets) as the KB keeps them, else built and kept."""
    kept = stored_page_vectors(kb, doc, key, encoder)
    if kept is not None:
        return kept
    flat, offsets = build()
    keep_page_vectors(kb, doc, key, encoder, flat, offsets)
    return flat, offsets


def _store(kb: KnowledgeBase, encoder: str) -> Store:
    """One encoder's page-unit vectors (each encoder has its own size); its rows follow their
    document (``doc``), so the KB drops them with it."""
    name = PAGE_VECTORS + hashlib.sha1(encoder.encode()).hexdigest()[:12]
    return kb.store(name, encoder, page_vectors=True, **{FOLLOWS: "doc"})


def stored_page_vectors(
    kb: KnowledgeBase, doc: str, key: str, encoder: str
) -> tuple[np.ndarray, np.ndarray] | None:
    """A document's page vectors as stored for ``key`` (a hash of the encoder and of what the
    pages hold): every unit's vector in page order and each page's offset; None where none are
    stored whole (never stored, or a writer stopped part way)."""
    with _store(kb, encoder).open() as shelf:
        if shelf is None:
            return None
        res = shelf.get(
            where={"$and": [{"doc": doc}, {"key": key}]}, include=["embeddings", "metadatas"]
        )
    mds = res["metadatas"]
    if not mds or len(mds) != mds[0]["units"]:
        return None
    order = np.argsort([md["i"] for md in mds], kind="stable")
    pages = np.asarray([mds[j]["page"] for j in order])
    offsets = np.searchsorted(pages, np.arange(mds[0]["pages"] + 1), side="left")
    return np.asarray(res["embeddings"], np.float32)[order], offsets


def keep_page_vectors(
    kb: KnowledgeBase, doc: str, key: str, encoder: str, flat: np.ndarray, offsets: np.ndarray
) -> None:
    """Store a document's page vectors (``stored_page_vectors`` reads them back) where the KB
    lives, so every machine that answers over the document shares them."""
    if not len(flat):
        return
    pages = np.searchsorted(offsets, np.arange(len(flat)), side="right") - 1
    stem = hashlib.sha1(doc.encode()).hexdigest()[:16]
    metadatas = [
        {
            "doc": doc,
            "key": key,
            "i": i,
            "page": int(pages[i]),
            "units": len(flat),
            "pages": len(offsets) - 1,
        }
        for i in range(len(flat))
    ]
    with _store(kb, encoder).made(write=True) as shelf:
        shelf.upsert([f"{stem}-{key}-{i}" for i in range(len(flat))], flat, metadatas)


def query_vectors(kb: KnowledgeBase, query: str, page_embedder: str = "") -> np.ndarray:
    """The query's vectors in the pages' space: ColPali-family text tokens, else clauses."""
    if page_embedder:
        from hopgraph.models.embedders import page_embedder as load

        return load(page_embedder).encode_query(query)
    return kb.embedder.encode(query_units(query))
