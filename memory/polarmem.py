"""PolarMem's polarized graph memory (polarmem.txt Sec. 3.3): image, text and concept nodes in
SQLite (WAL, one transaction per write); HAS, NOT_HAS, UNCERTAIN, MENTIONS and SIMILAR_TO
edges with scores and provenance; z_sem vectors in Chroma. Recall is Algorithm 1
(logic first, similarity second) or vanilla similarity (Eq. 2) on the same memory.

SQLite is the source of truth. Chroma's local files are not safe for two processes at once
(concurrent writers corrupt the HNSW index, and an open client does not see another process's
writes), so every Chroma operation runs through the folder's one ``LocalChroma`` (the knowledge
base's too): under its inter-process file lock, with the client reopened whenever the memory's
version shows another process wrote since it was opened.

On a deployment that shares its knowledge base (``chroma_url`` and ``registry_url`` set), the
memory lives there too, so every machine reads and writes one memory: its graph in the
registry's PostgreSQL (a schema per memory, writers serialized by an advisory lock held for
the transaction) and z_sem in a collection of the Chroma server, both named by the memory
folder's last part (``polar_dir``). No shared filesystem is needed.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.config import Context, knobs_of
from hopgraph.memory.chroma import Shelf, Store, chroma_client, local_chroma
from hopgraph.memory.registry import Db, connect_pg
from hopgraph.settings.polarmem import PolarMemSettings

NODE_KINDS = ("image", "text", "concept")
POLAR = ("HAS", "NOT_HAS", "UNCERTAIN")
EDGE_KINDS = (*POLAR, "MENTIONS", "SIMILAR_TO")
POSITIVE = ("HAS",)
"""Edges that put a concept in C+(v): presence verified in an image or asserted by a text.
NOT_HAS alone makes C-(v). UNCERTAIN (Eq. 6) and a text's bare MENTIONS constrain nothing:
"no knife was found" names a knife without showing one, so it only ranks by similarity."""
COLLECTION = "polarmem-sem"
SIMILAR_MIN = 0.9
"""Cosine similarity of z_sem at which two memories of the same kind get a SIMILAR_TO edge."""
SIMILAR_PER_NODE = 3

SCHEMA = """
CREATE TABLE IF NOT EXISTS nodes (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('image', 'text', 'concept')),
    content TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    path TEXT NOT NULL DEFAULT '',
    added REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS edges (
    src TEXT NOT NULL REFERENCES nodes(id),
    dst TEXT NOT NULL REFERENCES nodes(id),
    kind TEXT NOT NULL
        CHECK (kind IN ('HAS', 'NOT_HAS', 'UNCERTAIN', 'MENTIONS', 'SIMILAR_TO')),
    score REAL,
    provenance TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (src, dst, kind)
);
-- one polarity per (memory, concept): a new verification replaces the old one
CREATE UNIQUE INDEX IF NOT EXISTS one_polarity ON edges (src, dst)
    WHERE kind IN ('HAS', 'NOT_HAS', 'UNCERTAIN');
CREATE INDEX IF NOT EXISTS edges_by_concept ON edges (dst, kind);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- memories forgotten on purpose: never stored again, whoever writes them
CREATE TABLE IF NOT EXISTS forgotten (id TEXT PRIMARY KEY, at REAL NOT NULL);
"""


PG_LOCK = 7_251_032
"""The advisory lock a PostgreSQL memory's writers hold for their transaction."""


class PolarMemoryError(ValueError):
    """An observation or query the memory cannot take, or a memory it cannot open."""


def normalize_concept(name: str) -> str:
    """One spelling per concept: lower case, no article or edge punctuation, last word
    singular ("The traffic lights." -> "traffic light")."""
    words = re.sub(r"[^\w\s'-]", " ", str(name).lower()).split()
    while words and words[0] in ("a", "an", "the", "some", "no"):
        words = words[1:]
    if not words:
        return ""
    return " ".join([*words[:-1], _singular(words[-1])])


PLURALS = (
    ("ives", "ife"),
    ("lves", "lf"),
    ("ies", "y"),
    ("oes", "o"),
    ("ches", "ch"),
    ("shes", "sh"),
    ("sses", "ss"),
    ("xes", "x"),
)


def _singular(word: str) -> str:
    """English plural endings, enough that "knives" meets "knife" and "boxes" meets "box"."""
    if len(word) <= 3:
        return word
    for ending, singular in PLURALS:
        if word.endswith(ending):
            return word[: -len(ending)] + singular
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def concept_id(name: str) -> str:
    return "concept:" + normalize_concept(name)


@dataclass
class Observation:
    """One memory to store: a text chunk or an image, with its concepts by verified state
    (concept -> score: s_c of Eq. 4 for an image, 1.0 for an asserted fact) and, for text,
    the entities it only mentions (Eq. 7). ``provenance`` is written on every edge unless
    ``edge_provenance`` has a line for that concept (how a text's polarity was decided)."""

    kind: str
    content: str
    source: str = ""
    path: str = ""
    has: dict[str, float] = field(default_factory=dict)
    not_has: dict[str, float] = field(default_factory=dict)
    uncertain: dict[str, float] = field(default_factory=dict)
    mentions: list[str] = field(default_factory=list)
    provenance: str = ""
    edge_provenance: dict[str, str] = field(default_factory=dict)
    key: str = ""
    """What the id derives from (an image file's hash); default: kind, source and content."""

    @property
    def id(self) -> str:
        key = self.key or f"{self.source}\n{self.content}"
        return f"{self.kind}:{hashlib.sha1(key.encode('utf-8')).hexdigest()[:20]}"

    def states(self) -> dict[str, tuple[str, float]]:
        """Normalized concept -> (polarity, score), refusing a concept both present and absent."""
        out: dict[str, tuple[str, float]] = {}
        for state, group in (("HAS", self.has), ("NOT_HAS", self.not_has)):
            for name, score in group.items():
                c = normalize_concept(name)
                if not c:
                    continue
                if c in out and out[c][0] != state:
                    raise PolarMemoryError(
                        f"concept {name!r} is given as both present and absent in one "
                        f"observation ({self.source or self.content[:40]!r}); nothing was stored"
                    )
                out[c] = (state, float(score))
        for name, score in self.uncertain.items():
            c = normalize_concept(name)
            if c and c not in out:
                out[c] = ("UNCERTAIN", float(score))
        return out

    def note_for(self, concept: str) -> str:
        """The provenance of the edge to a normalized ``concept``."""
        return self.edge_provenance.get(concept, self.provenance)

    def serialized(self) -> str:
        """T_serialize of Eq. 10: the polarity state as one line of text."""
        groups: dict[str, list[str]] = {s: [] for s in POLAR}
        for c, (state, _) in self.states().items():
            groups[state].append(c)
        parts = [
            f"{label}: {', '.join(groups[state])}."
            for state, label in (
                ("HAS", "Present"),
                ("NOT_HAS", "Absent"),
                ("UNCERTAIN", "Possibly present"),
            )
            if groups[state]
        ]
        return " ".join(parts)

    def sem_text(self) -> str:
        """What z_sem encodes: an image's serialized state (Eq. 10), a chunk's own text."""
        if self.kind == "image":
            return self.serialized() or self.content
        return self.content


@dataclass
class Recalled:
    """One recalled memory with its ranking tuple (s_log, s_sem) from Algorithm 1."""

    id: str
    kind: str
    content: str
    s_log: int
    s_sem: float
    source: str = ""
    path: str = ""
    matched: list[str] = field(default_factory=list)
    """Q+ concepts the memory verifiably holds (s_log = 1)."""
    violated: list[str] = field(default_factory=list)
    """Constraints it breaks (s_log = -1): a wanted concept verified absent, an unwanted one
    present."""

    @property
    def status(self) -> str:
        if self.s_log > 0:
            return f"VERIFIED ({', '.join(self.matched)})"
        if self.s_log < 0:
            return f"CONFLICT ({', '.join(self.violated)})"
        return "UNVERIFIED"

    def evidence(self, max_chars: int = 600) -> str:
        """The paper's evidence template: ``[Fact Check: {Status}] {Content}`` (App. B)."""
        text = " ".join(self.content.split())
        if len(text) > max_chars:
            text = text[: max_chars - 1].rstrip() + "…"
        return f"[Fact Check: {self.status}] {text}"


@dataclass
class AddReport:
    added: int = 0
    updated: int = 0
    concepts: int = 0
    edges: int = 0
    skipped: int = 0
    """Already stored and left alone (``ingest_text(..., skip_stored=True)``)."""
    forgotten: int = 0
    """Forgotten on purpose (``forget``) and so not stored again."""
    seconds: float = 0.0


@dataclass
class _Snapshot:
    """One version of the memory as recall reads it: ids, z_sem rows, concept rows."""

    version: int
    ids: list[str]
    matrix: np.ndarray
    index: dict[str, int]
    rows: dict[tuple[str, tuple[str, ...]], np.ndarray] = field(default_factory=dict)


class PolarMemory:
    """A polarized graph memory: in a folder (``graph.sqlite`` and ``chroma/``), or, given a
    Chroma server and a PostgreSQL database, on them under the folder's name."""

    def __init__(
        self,
        path: str | Path,
        *,
        embedder: str = "all-MiniLM-L6-v2",
        batch_size=64,
        chroma_url: str = "",
        db_url: str = "",
    ):
        self.path = Path(path).expanduser()
        self.embedder_name = embedder
        self.batch_size = batch_size
        self._embedder: Any = None
        self._local = threading.local()
        self._snapshot: _Snapshot | None = None
        self.db_url = db_url if chroma_url else ""
        if chroma_url and not db_url:
            raise PolarMemoryError(
                f"a memory on the Chroma server {chroma_url} keeps its graph in PostgreSQL: set "
                "registry_url (--set registry_url=postgresql://user@host/db, or "
                "HOPGRAPH_REGISTRY_URL)"
            )
        self.name = re.sub(r"[^a-z0-9_]", "_", self.path.name.lower()) or "polarmem"
        if chroma_url:  # a server: PostgreSQL's lock orders the writers
            self._chroma_folder = None
            client = chroma_client(url=chroma_url)
            self.z_sem = Store(
                lambda write: nullcontext(client), f"{COLLECTION}-{self.name}", embedder
            )
            self.location = f"{chroma_url} (memory {self.name})"
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            folder = self._chroma_folder = local_chroma(self.path)
            self.z_sem = Store(
                lambda write: folder.use(self.version, written=self.version), COLLECTION, embedder
            )
            self.location = str(self.path)
        with self._tx() as db:
            for statement in filter(str.strip, SCHEMA.split(";\n")):
                db.execute(statement)
            db.execute("INSERT INTO meta VALUES ('version', '0') ON CONFLICT DO NOTHING")
            db.execute(
                "INSERT INTO meta VALUES ('embedder', ?) ON CONFLICT DO NOTHING", (embedder,)
            )
        made_with = self._meta("embedder")
        if made_with != embedder:
            raise PolarMemoryError(
                f"memory {self.location} holds vectors from embedder {made_with!r}, but "
                f"{embedder!r} is configured; their vectors are not comparable"
            )

    @classmethod
    def from_context(cls, ctx: Context) -> PolarMemory:
        """The memory a Context names (PolarMem's ``polar_dir``)."""
        folder = knobs_of(ctx, PolarMemSettings).polar_dir
        return cls(
            folder,
            embedder=ctx.text_embedder,
            batch_size=ctx.embed_batch_size,
            chroma_url=ctx.chroma_url,
            db_url=ctx.registry_url,
        )

    # -- plumbing ---------------------------------------------------------------------------
    def _db(self) -> Db:
        conn = getattr(self._local, "conn", None)
        if conn is not None and conn.lost:
            conn = None
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def _connect(self) -> Db:
        if not self.db_url:
            raw = sqlite3.connect(self.path / "graph.sqlite", timeout=60, isolation_level=None)
            raw.execute("PRAGMA journal_mode=WAL")
            raw.execute("PRAGMA foreign_keys=ON")
            raw.execute("PRAGMA busy_timeout=60000")
            return Db(raw, pg=False)
        from hopgraph.redaction import redacted

        where = redacted(self.db_url)
        raw = connect_pg(self.db_url, f"polarmem_{self.name}", PG_LOCK, where)
        return Db(raw, pg=True, where=where)

    def _tx(self):  # noqa: ANN202 - a context manager
        """One write transaction, taken at once: two writers, in any process or machine,
        queue rather than interleave."""
        return self._db().transaction(PG_LOCK)

    def _meta(self, key: str) -> str:
        row = self._db().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else ""

    def version(self) -> int:
        """Bumped by every write, in any process: what cached state is checked against."""
        return int(self._meta("version") or 0)

    @property
    def embedder(self):
        if self._embedder is None:
            from hopgraph.models.embedders import text_embedder

            self._embedder = text_embedder(self.embedder_name, self.batch_size)
        return self._embedder

    @contextmanager
    def _chroma(self) -> Iterator[Shelf]:
        """The z_sem store, used under the inter-process lock by a client that has seen
        every write so far (reopened when another process wrote since)."""
        with self.z_sem.made() as shelf:
            yield shelf

    def close(self) -> None:
        if self._chroma_folder is not None:
            self._chroma_folder.close()
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- writing ----------------------------------------------------------------------------
    def add(self, observations: Iterable[Observation], *, similar: bool = True) -> AddReport:
        """Store observations in one transaction with their z_sem vectors: all of them or,
        on any error, none. Re-adding a memory replaces its concepts (a new verification
        wins); SIMILAR_TO links each to its closest memories of the same kind."""
        began = time.perf_counter()
        obs = list({o.id: o for o in observations}.values())
        states = [self._checked(o) for o in obs]
        report = AddReport()
        if not obs:
            return report
        vecs = self.embedder.encode([o.sem_text() for o in obs])
        with self._chroma() as col, self._tx() as db:
            gone = _forgotten(db, [o.id for o in obs])  # read under the write lock
            if gone:
                keep = [i for i, o in enumerate(obs) if o.id not in gone]
                obs, states = [obs[i] for i in keep], [states[i] for i in keep]
                vecs = vecs[keep]
                report.forgotten = len(gone)
            if not obs:
                report.seconds = time.perf_counter() - began
                return report
            self._store(db, col, obs, states, vecs, report, similar=similar)
        report.seconds = time.perf_counter() - began
        return report

    def _store(self, db: Db, col, obs, states, vecs, report: AddReport, *, similar: bool):  # noqa: ANN001
        """``add``'s writes, inside its transaction: nodes, edges and z_sem vectors."""
        now = time.time()
        ids = [o.id for o in obs]
        present = _existing(db, ids)
        report.updated = len(present)
        report.added = len(obs) - len(present)
        concepts = {c for st in states for c in st} | {
            normalize_concept(m) for o in obs for m in o.mentions
        }
        concepts.discard("")
        report.concepts = len(concepts) - len(_existing(db, ["concept:" + c for c in concepts]))
        db.executemany(
            "INSERT INTO nodes VALUES (?, 'concept', ?, '', '', ?) ON CONFLICT DO NOTHING",
            [("concept:" + c, c, now) for c in sorted(concepts)],
        )
        db.executemany(
            "INSERT INTO nodes VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
            "content = excluded.content, source = excluded.source, path = excluded.path",
            [(o.id, o.kind, o.content, o.source, o.path, now) for o in obs],
        )
        db.executemany(
            "DELETE FROM edges WHERE src = ? AND kind != 'SIMILAR_TO'", [(i,) for i in present]
        )
        edges = [
            (o.id, "concept:" + c, state, score, o.note_for(c))
            for o, st in zip(obs, states, strict=True)
            for c, (state, score) in st.items()
        ] + [
            (o.id, "concept:" + c, "MENTIONS", 1.0, o.note_for(c))
            for o in obs
            for c in dict.fromkeys(map(normalize_concept, o.mentions))
            if c
        ]
        col.upsert([o.id for o in obs], vecs, [{"kind": o.kind} for o in obs])
        if similar:
            edges += self._similar(db, col, ids, vecs, {o.id: o.kind for o in obs})
        db.executemany(
            "INSERT INTO edges VALUES (?, ?, ?, ?, ?) ON CONFLICT (src, dst, kind) DO UPDATE "
            "SET score = excluded.score, provenance = excluded.provenance",
            edges,
        )
        report.edges = len(edges)
        self._bump(db)

    def _bump(self, db: Db) -> None:
        """Mark a write that also changed Chroma: the version every process checks its client
        against is bumped in the same transaction (``_chroma`` reads it on the way out, so
        this process's client, which made the change, counts as up to date)."""
        version = int(db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()[0])
        db.execute("UPDATE meta SET value = ? WHERE key = 'version'", (str(version + 1),))

    def forget(self, ids: Sequence[str]) -> list[str]:
        """Remove memories with their edges (either end) and vectors, in one transaction, and
        record them as forgotten so that no writer, in this process or another, stores them
        again. Returns the ids that were stored; an unknown id is recorded all the same."""
        ids = list(dict.fromkeys(ids))
        with self._chroma() as col, self._tx() as db:
            present = sorted(_existing(db, ids))
            now = time.time()
            db.executemany(
                "INSERT INTO forgotten VALUES (?, ?) ON CONFLICT DO NOTHING",
                [(i, now) for i in ids],
            )
            for i in present:
                db.execute("DELETE FROM edges WHERE src = ? OR dst = ?", (i, i))
                db.execute("DELETE FROM nodes WHERE id = ?", (i,))
            if present:
                col.delete(ids=present)
            self._bump(db)
        return present

    def stored(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` the memory holds."""
        return _existing(self._db(), list(ids))

    def _checked(self, o: Observation) -> dict[str, tuple[str, float]]:
        if o.kind not in ("image", "text"):
            raise PolarMemoryError(f"observation kind must be image or text, not {o.kind!r}")
        if not o.content.strip():
            raise PolarMemoryError(f"an empty {o.kind} observation ({o.source!r}) cannot be stored")
        states = o.states()
        bad = [c for c, (_, s) in states.items() if not 0.0 <= s <= 1.0]
        if bad:
            raise PolarMemoryError(f"concept scores must lie in [0, 1]; out of range: {bad[:5]}")
        return states

    def _similar(self, db, col, ids: list[str], vecs: np.ndarray, kinds: dict[str, str]):
        """SIMILAR_TO edges from each new memory to the closest others of its kind (z_sem
        cosine >= SIMILAR_MIN), the batch itself included."""
        res = col.nearest(
            vecs, min(SIMILAR_PER_NODE + 1, col.count()), include=["distances", "metadatas"]
        )
        out = []
        for src, hits, dists, mds in zip(
            ids, res["ids"], res["distances"], res["metadatas"], strict=True
        ):
            for dst, d, md in zip(hits, dists, mds, strict=True):
                if dst != src and 1 - d >= SIMILAR_MIN and (md or {}).get("kind") == kinds[src]:
                    out.append((src, dst, "SIMILAR_TO", round(1 - d, 4), "z_sem cosine"))
        known = _existing(db, list({e[1] for e in out}))  # not vectors of a failed write
        return [e for e in out if e[1] in known]

    # -- reading ----------------------------------------------------------------------------
    def vectors(self) -> tuple[list[str], np.ndarray]:
        """Every memory's id and z_sem (n, d), cached until the memory's version changes."""
        snap = self._current()
        return snap.ids, snap.matrix

    def _current(self) -> _Snapshot:
        """The vectors and concept rows of the memory's current version (reloaded after any
        write, by this process or another)."""
        version = self.version()
        if self._snapshot is not None and self._snapshot.version == version:
            return self._snapshot
        while True:
            ids: list[str] = []
            chunks = []
            with self._chroma() as col:
                version = self.version()  # locally no write lands while the lock is held
                size = col.count()
                for offset in range(0, size, 10_000):
                    res = col.get(include=["embeddings"], limit=10_000, offset=offset)
                    ids += res["ids"]
                    chunks.append(np.asarray(res["embeddings"], dtype=np.float32))
            if self._chroma_folder is not None or self.version() == version:
                break  # on a server: read again where a write landed meanwhile
        matrix = np.concatenate(chunks) if chunks else np.zeros((0, self.embedder.dim), np.float32)
        self._snapshot = _Snapshot(version, ids, matrix, {i: n for n, i in enumerate(ids)})
        return self._snapshot

    def _rows(self, snap: _Snapshot, concepts: set[str], kinds: tuple[str, ...]) -> np.ndarray:
        """Vector rows of the memories with a ``kinds`` edge to any of ``concepts``; each
        concept's rows are read from the graph once per version."""
        parts = []
        for c in concepts:
            key = (c, kinds)
            if key not in snap.rows:
                found = _sources(self._db(), {c}, kinds)
                snap.rows[key] = np.array(
                    sorted(snap.index[i] for i in found if i in snap.index), dtype=np.int64
                )
            parts.append(snap.rows[key])
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def recall(
        self,
        query: str,
        positive: Sequence[str] = (),
        negative: Sequence[str] = (),
        *,
        k: int = 5,
        mode: str = "logic",
    ) -> list[Recalled]:
        """``logic``: Algorithm 1, sort by (s_log, s_sem) descending over every memory, with
        conflicts (s_log = -1) suppressed outright; ``vanilla``: top-k by s_sem (Eq. 2), each
        still labelled with its logical state."""
        if mode not in ("logic", "vanilla"):
            raise PolarMemoryError(f"recall mode must be logic or vanilla, not {mode!r}")
        if k < 1:
            raise PolarMemoryError(f"k must be >= 1, not {k}")
        q = self.embedder.encode_one(query)
        pos = {normalize_concept(c) for c in positive} - {""}
        neg = {normalize_concept(c) for c in negative} - {""}
        if mode == "vanilla":
            with self._chroma() as col:
                n = col.count()
                if not n:
                    return []
                res = col.nearest(q[None, :], min(k, n))
            sims = (1 - np.asarray(res["distances"][0])).tolist()
            return self._labelled(list(zip(res["ids"][0], sims, strict=True)), pos, neg)
        import torch  # loaded already: the embedder runs on it

        snap = self._current()
        ids = snap.ids
        if not ids:
            return []
        # Alg. 1 line 5 (unit vectors: cosine), in torch: numpy's OpenBLAS threads keep
        # spinning after a product and slowed the next query embedding fourfold
        s_sem = (torch.from_numpy(snap.matrix) @ torch.from_numpy(q)).numpy()
        s_log = np.zeros(len(ids), dtype=np.int8)
        s_log[self._rows(snap, pos, POSITIVE)] = 1  # lines 10-11: Q+ ∩ C+(v)
        s_log[self._rows(snap, pos, ("NOT_HAS",))] = -1  # lines 8-9: Q+ ∩ C-(v)
        s_log[self._rows(snap, neg, POSITIVE)] = -1  # lines 8-9: Q- ∩ C+(v)
        # lines 17-19: lexicographic (s_log, s_sem), descending. |s_sem| <= 1, so s_log * 4
        # + s_sem orders exactly like the tuple; conflicts are dropped, not just sunk.
        key = np.where(s_log < 0, -np.inf, s_log * 4.0 + s_sem)
        allowed = int((s_log >= 0).sum())
        take = min(k, allowed)
        if take == 0:
            return []
        top = np.argpartition(-key, take - 1)[:take]
        top = top[np.argsort(-key[top], kind="stable")]
        return self._labelled([(ids[t], float(s_sem[t])) for t in top], pos, neg)

    def _labelled(self, hits: list[tuple[str, float]], pos: set[str], neg: set[str]):
        """Recalled items for ``hits`` (id, s_sem) with their logical state from the graph;
        ids Chroma holds but the graph does not (an interrupted write) are left out."""
        if not hits:
            return []
        db = self._db()
        ids = [h[0] for h in hits]
        marks = ",".join("?" * len(ids))
        rows = {
            r[0]: r
            for r in db.execute(
                f"SELECT id, kind, content, source, path FROM nodes WHERE id IN ({marks})", ids
            )
        }
        concepts: dict[str, dict[str, str]] = {i: {} for i in ids}
        for src, dst, kind in db.execute(
            f"SELECT src, dst, kind FROM edges WHERE src IN ({marks}) AND kind != 'SIMILAR_TO'",
            ids,
        ):
            concepts[src][dst.removeprefix("concept:")] = kind
        out = []
        for id_, s_sem in hits:
            if id_ not in rows:
                continue
            held = concepts[id_]
            present = {c for c, kind in held.items() if kind in POSITIVE}
            absent = {c for c, kind in held.items() if kind == "NOT_HAS"}
            violated = sorted(pos & absent) + sorted(neg & present)
            matched = sorted(pos & present)
            s_log = -1 if violated else (1 if matched else 0)
            _, kind, content, source, path = rows[id_]
            out.append(
                Recalled(
                    id_, kind, content, s_log, round(s_sem, 6), source, path, matched, violated
                )
            )
        return out

    def concepts_of(self, node: str) -> dict[str, str]:
        """A memory's concepts and the kind of edge to each."""
        rows = self._db().execute(
            "SELECT dst, kind FROM edges WHERE src = ? AND dst LIKE ?", (node, "concept:%")
        )
        return {dst.removeprefix("concept:"): kind for dst, kind in rows}

    def stats(self) -> dict[str, Any]:
        db = self._db()
        nodes = dict(db.execute("SELECT kind, COUNT(*) FROM nodes GROUP BY kind").fetchall())
        edges = dict(db.execute("SELECT kind, COUNT(*) FROM edges GROUP BY kind").fetchall())
        with self._chroma() as col:
            vectors = col.count()
        return {
            "path": self.location,
            "nodes": {k: nodes.get(k, 0) for k in NODE_KINDS},
            "edges": {k: edges.get(k, 0) for k in EDGE_KINDS},
            "vectors": vectors,
            "version": self.version(),
            "forgotten": db.execute("SELECT COUNT(*) FROM forgotten").fetchone()[0],
            "embedder": self.embedder_name,
        }


def _forgotten(db: Db, ids: list[str]) -> set[str]:
    return _listed(db, "forgotten", ids)


def _existing(db: Db, ids: list[str]) -> set[str]:
    return _listed(db, "nodes", ids)


def _listed(db: Db, table: str, ids: list[str]) -> set[str]:
    """Which of ``ids`` the table holds, asked 500 at a time (SQLite's variable limit)."""
    out: set[str] = set()
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        marks = ",".join("?" * len(chunk))
        out |= {r[0] for r in db.execute(f"SELECT id FROM {table} WHERE id IN ({marks})", chunk)}
    return out


def _sources(db: Db, concepts: set[str], kinds: tuple[str, ...]) -> set[str]:
    """Memories with an edge of one of ``kinds`` to one of ``concepts``."""
    if not concepts:
        return set()
    ids = ["concept:" + c for c in concepts]
    sql = (
        f"SELECT DISTINCT src FROM edges WHERE dst IN ({','.join('?' * len(ids))}) "
        f"AND kind IN ({','.join('?' * len(kinds))})"
    )
    return {r[0] for r in db.execute(sql, [*ids, *kinds])}
