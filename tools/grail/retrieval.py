"""GRAIL retrieval: steer a query away from the evidence already held, search, and build pools
sequentially from schedules such as ``"3+2+3+2"``, ``"8+1+1"`` or ``"2*5"`` (grail.txt §3.2).

Searches run over an in-memory matrix (exact, brute force, torch: evaluation), a knowledge
base's Chroma index, or, for a trained alignment adapter, the KB's projection through it kept in
the engine; each excludes what the pool already holds.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch
from torch.nn import functional as F

from hopgraph.memory.chroma import Store
from hopgraph.tools.grail.models import GrailModel
from hopgraph.tools.grail.steering import Steered, pad_context

log = logging.getLogger(__name__)
_SCHEDULE = re.compile(r"^\s*\d+\s*(\*\s*\d+\s*)?(\+\s*\d+\s*(\*\s*\d+\s*)?)*$")


def parse_schedule(text: str) -> list[int]:
    """``"3+2+3+2"`` → [3, 2, 3, 2]; ``"2*5"`` → [2, 2, 2, 2, 2]; the first block is the
    query-only base chunk A, the rest are steered hops."""
    if not isinstance(text, str) or not _SCHEDULE.match(text):
        raise ValueError(
            f"bad schedule {text!r}: use sizes joined by '+', e.g. '3+2+3+2', '8+1+1', '2*5'"
        )
    sizes: list[int] = []
    for part in text.replace(" ", "").split("+"):
        size, _, times = part.partition("*")
        if times and int(times) <= 0:
            raise ValueError(f"bad schedule {text!r}: a block cannot repeat {times} times")
        sizes += [int(size)] * (int(times) if times else 1)
    if any(s <= 0 for s in sizes):
        raise ValueError(f"bad schedule {text!r}: every block needs at least one item")
    return sizes


class Searcher(Protocol):
    dim: int

    def vectors(self, ids: list[str]) -> torch.Tensor: ...

    def search(self, vec: torch.Tensor, k: int, exclude: set[str]) -> list[tuple[str, float]]: ...


class UnknownEvidence(ValueError):
    """Held ids the knowledge base does not have: a caller's mistake, named."""

    def __init__(self, missing: list[str]):
        shown = ", ".join(map(repr, missing[:5])) + (" ..." if len(missing) > 5 else "")
        super().__init__(f"held evidence not in the knowledge base: {shown}")


class MatrixSearcher:
    """Exact cosine search over an (n, d) matrix of evidence vectors."""

    def __init__(self, ids: list[str], matrix: np.ndarray | torch.Tensor):
        self.ids = list(ids)
        self.row = {i: n for n, i in enumerate(self.ids)}
        if len(self.row) != len(self.ids):
            raise ValueError("duplicate evidence ids in the matrix")
        self.matrix = F.normalize(torch.as_tensor(np.asarray(matrix), dtype=torch.float32), dim=-1)
        self.dim = self.matrix.shape[1]

    @classmethod
    def from_kb(cls, kb, modalities=("text", "table", "image", "page")) -> MatrixSearcher:  # noqa: ANN001
        """Every vector of ``kb`` in this process (exact evaluation): the log says so, with
        the memory it takes. Steering at run time uses ``ProjectedSearcher`` instead."""
        ids: list[str] = []
        blocks = []
        for modality in modalities:
            m_ids, matrix = kb.vectors(modality)
            ids += m_ids
            if len(m_ids):
                blocks.append(matrix)
        matrix = np.concatenate(blocks) if blocks else np.zeros((0, kb.embedder.dim))
        log.info(
            "GRAIL: %d vectors of %s loaded into memory for exact search (%.0f MB)",
            len(ids),
            kb.location,
            matrix.nbytes / 2**20,
        )
        return cls(ids, matrix)

    def vectors(self, ids: list[str]) -> torch.Tensor:
        missing = [i for i in ids if i not in self.row]
        if missing:
            raise UnknownEvidence(missing)
        return self.matrix[[self.row[i] for i in ids]] if ids else torch.zeros(0, self.dim)

    def scores(self, vecs: torch.Tensor) -> torch.Tensor:
        return F.normalize(vecs, dim=-1) @ self.matrix.T

    def search(self, vec: torch.Tensor, k: int, exclude: set[str]) -> list[tuple[str, float]]:
        sims = self.scores(vec[None, :])[0]
        return self.top(sims, k, exclude)

    def top(self, sims: torch.Tensor, k: int, exclude: set[str]) -> list[tuple[str, float]]:
        n = min(len(self.ids), k + len(exclude))
        values, rows = torch.topk(sims, n)
        out = [
            (self.ids[r], float(v))
            for v, r in zip(values.tolist(), rows.tolist(), strict=True)
            if self.ids[r] not in exclude
        ]
        return out[:k]

    def rank_of(self, vec: torch.Tensor, targets: list[str]) -> dict[str, int]:
        """1-based rank of each target under ``vec`` (for Jump, Eq. 17)."""
        sims = self.scores(vec[None, :])[0]
        order = torch.argsort(sims, descending=True)
        rank = torch.empty_like(order)
        rank[order] = torch.arange(1, len(order) + 1)
        return {t: int(rank[self.row[t]]) for t in targets if t in self.row}


class ChromaSearcher:
    """Search a knowledge base's Chroma index with a steered vector."""

    def __init__(self, kb, modalities=("text", "table", "image", "page")):  # noqa: ANN001
        self.kb = kb
        self.modalities = list(modalities)
        self.dim = kb.embedder.dim

    def vectors(self, ids: list[str]) -> torch.Tensor:
        """The held items' vectors: kept from the searches that found them (``vectors=True``),
        else fetched by id."""
        found = self.kb.stored_vectors(ids) if ids else {}
        missing = [i for i in ids if i not in found]
        if missing:
            raise UnknownEvidence(missing)
        return (
            torch.as_tensor(np.stack([found[i] for i in ids])) if ids else torch.zeros(0, self.dim)
        )

    def search(self, vec: torch.Tensor, k: int, exclude: set[str]) -> list[tuple[str, float]]:
        hits = self.kb.search(
            vec.detach().numpy(), k=k + len(exclude), modalities=self.modalities, vectors=True
        )
        return [(h["id"], h["score"]) for h in hits if h["id"] not in exclude][:k]


PROJECTED = "grail-"
"""The projections' store names begin so: ``grail-<adapter key>-<KB state>``."""


class ProjectedSearcher:
    """Search the KB's projection through a trained alignment adapter, a store kept in the
    engine beside the KB (``KnowledgeBase.store``): no process loads the KB. The projection
    follows the KB: a search after the KB changed opens (or builds) the projection of what it
    holds now."""

    def __init__(self, kb, model: GrailModel, key: str):  # noqa: ANN001
        self.kb = kb
        self.key = key
        self.dim = kb.embedder.dim
        self.model = model
        self._open: tuple[str, Store] | None = None

    def _project(self, x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return self.model.project(torch.as_tensor(x)).numpy()

    def projection(self, batch: int = 4096) -> Store:
        """The store of every item's vector passed through the adapter, for the KB as it is
        now: built once, ``batch`` vectors at a time, where the engine keeps the KB, so every
        process and machine that steers shares it and none loads the KB whole. A change of the
        KB makes a new one and drops the adapter's older ones. Its content follows from the KB
        and the adapter alone, so two processes that build it at once upsert the same vectors
        (no race to lose); its writes are not the KB's (they leave ``state`` as it was)."""
        stamp = hashlib.sha256(self.kb.state().encode()).hexdigest()[:12]
        store = self.kb.store(f"{PROJECTED}{self.key[:12]}-{stamp}", grail=self.key)
        with store.made() as shelf:
            if shelf.metadata.get("complete"):
                return store
        n = 0
        for res in self.kb.vector_batches(batch):
            vecs = self._project(np.asarray(res["embeddings"], np.float32))
            with store.made() as shelf:
                shelf.upsert(res["ids"], vecs, res["metadatas"])
            n += len(res["ids"])
        with store.made() as shelf:
            shelf.mark(items=n, complete=True)
        self.kb.drop_stores(f"{PROJECTED}{self.key[:12]}-", keep=store.name)
        log.info("GRAIL: projected %d vectors of %s into %s", n, self.kb.location, store.name)
        return store

    def _read(self, how):  # noqa: ANN001, ANN202 - a read of the projection
        """``how(shelf)`` on the projection of the KB as it is now; once more on a fresh one
        if it went away meanwhile (another process rebuilt it for a changed KB)."""
        for attempt in (0, 1):
            state = self.kb.state()
            if self._open is None or self._open[0] != state:
                self._open = (state, self.projection())
            try:
                with self._open[1].open() as shelf:
                    if shelf is None:
                        raise LookupError(f"projection {self._open[1].name} is gone")
                    return how(shelf)
            except Exception:
                if attempt:
                    raise
                self._open[1].forget()
                self._open = None

    def vectors(self, ids: list[str]) -> torch.Tensor:
        if not ids:
            return torch.zeros(0, self.dim)
        res = self._read(lambda shelf: shelf.get(ids, include=["embeddings"]))
        found = dict(zip(res["ids"], np.asarray(res["embeddings"], np.float32), strict=True))
        missing = [i for i in ids if i not in found]
        if missing:
            raise UnknownEvidence(missing)
        return torch.as_tensor(np.stack([found[i] for i in ids]))

    def search(self, vec: torch.Tensor, k: int, exclude: set[str]) -> list[tuple[str, float]]:
        """The nearest items of the projection (cosine similarity), the versions hidden now
        and ``exclude`` left out."""
        n = k + len(exclude)
        query = vec.detach().numpy()[None, :]
        res = self._read(lambda shelf: shelf.nearest(query, n, include=["distances", "metadatas"]))
        hidden = set(self.kb.hidden())
        rows = zip(res["ids"][0], res["distances"][0], res["metadatas"][0], strict=True)
        hits = [
            (i, 1.0 - float(d)) for i, d, md in rows if (md or {}).get("src_hash") not in hidden
        ]
        return [(i, s) for i, s in hits if i not in exclude][:k]


@dataclass
class PoolStep:
    size: int
    mode: str
    ids: list[str]
    diagnostics: dict[str, float] = field(default_factory=dict)


class Grail:
    """Steered search and sequential pool construction over one searcher."""

    def __init__(self, searcher: Searcher, model: GrailModel):
        if model.aligner is not None and isinstance(searcher, MatrixSearcher):
            with torch.no_grad():  # exact evaluation: the whole matrix, projected here
                searcher = MatrixSearcher(searcher.ids, model.project(searcher.matrix))
        elif model.aligner is not None and not isinstance(searcher, ProjectedSearcher):
            raise ValueError(
                "a trained alignment adapter searches its projection (ProjectedSearcher) or "
                "the in-memory MatrixSearcher, not the KB's own index"
            )
        self.searcher = searcher
        self.model = model

    @torch.inference_mode()  # no autograd bookkeeping: a step is a few dozen small ops
    def steer(self, q: torch.Tensor, context_ids: list[str], mode: str) -> Steered:
        """``q`` is the raw query embedding; context vectors come from the searcher."""
        ctx, mask = pad_context(
            [self.searcher.vectors(list(dict.fromkeys(context_ids)))], self.searcher.dim
        )
        return self.model.steer(mode, self.model.project(q[None, :]), ctx, mask)

    def search(
        self, q: torch.Tensor, context_ids: list[str], k: int, mode: str = "gap"
    ) -> tuple[list[tuple[str, float]], Steered]:
        """Top-k evidence not in ``context_ids`` for the steered query."""
        steered = self.steer(q, context_ids, mode)
        return self.searcher.search(steered.h_req[0], k, set(context_ids)), steered

    def build_pool(
        self, q: torch.Tensor, schedule: str | list[int], mode: str = "gap"
    ) -> list[PoolStep]:
        """Base block by the raw query, then one steered hop per remaining block (Eq. 1-2)."""
        sizes = parse_schedule(schedule) if isinstance(schedule, str) else list(schedule)
        pool: list[str] = []
        steps = []
        for t, size in enumerate(sizes):
            step_mode = "query" if t == 0 else mode
            hits, steered = self.search(q, pool, size, step_mode)
            ids = [i for i, _ in hits]
            pool += ids
            steps.append(PoolStep(size, step_mode, ids, steered.diagnostics()))
        return steps
