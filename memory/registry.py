"""The knowledge base's source registry: every indexed source (a file, or a dataset file) with
its size, mtime, content hash, build settings and the items each version of it produced.

It is what keeps the KB true when a source changes (``sources.sqlite`` beside ``chroma/``):

- a source is indexed as a *pending* version (its new hash) while its items are written; the
  registry's *live* hash flips to it in one transaction, which also queues the items only the
  old version held as garbage and retires the old hash;
- every stored item carries its version's hash (``src_hash``) and a search hides every hash
  that is not live (pending, retired), so a reader never sees a half-written or half-removed
  source, in this process or another, and a crash at any point leaves only live items visible;
- an item shared by content (the same image in two places) stays while any source holds it.

SQLite in WAL mode is the source of truth; its ``chroma`` counter is bumped by every Chroma
write, so a process knows when its client has missed another process's writes.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hopgraph.memory.disk import named_when_full
from hopgraph.models.errors import first_line
from hopgraph.redaction import redacted

REGISTRY = "sources.sqlite"

SCHEMA = """
CREATE TABLE IF NOT EXISTS sources (
    path TEXT PRIMARY KEY,
    format TEXT NOT NULL,
    size BIGINT NOT NULL DEFAULT 0,
    mtime_ns BIGINT NOT NULL DEFAULT 0,
    sha256 TEXT,
    hash TEXT,
    pending TEXT,
    build TEXT NOT NULL DEFAULT '{}',
    complete INTEGER NOT NULL DEFAULT 1,
    indexed_at DOUBLE PRECISION
);
CREATE TABLE IF NOT EXISTS holds (
    path TEXT NOT NULL,
    hash TEXT NOT NULL,
    item TEXT NOT NULL,
    modality TEXT NOT NULL,
    PRIMARY KEY (path, hash, item)
);
CREATE INDEX IF NOT EXISTS holds_item ON holds (item);
CREATE TABLE IF NOT EXISTS retired (hash TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS garbage (item TEXT PRIMARY KEY, modality TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS builds (settings TEXT PRIMARY KEY, first_seen DOUBLE PRECISION);
CREATE TABLE IF NOT EXISTS leases (
    path TEXT PRIMARY KEY,
    worker TEXT NOT NULL,
    build TEXT NOT NULL,
    expires DOUBLE PRECISION NOT NULL
);
INSERT INTO meta VALUES ('chroma', '0') ON CONFLICT DO NOTHING
"""
"""Valid SQL for SQLite and PostgreSQL alike (null-safe comparisons as IS [NOT] DISTINCT FROM,
upserts as ON CONFLICT), with ? placeholders that ``Db`` gives PostgreSQL as %s."""

PG_SCHEMA = "hopgraph_registry"
"""The PostgreSQL schema the registry's tables live in (one server KB per database)."""

PG_LOCK = 7_251_031
"""The advisory lock every write transaction of a PostgreSQL registry takes first: writers
queue, as SQLite's BEGIN IMMEDIATE makes them."""


class RegistryUnreachable(RuntimeError):
    """The registry's database cannot be reached or used; the message names it."""


class Db:
    """One connection, SQLite's or PostgreSQL's (psycopg), taking the registry's SQL. A
    PostgreSQL server lost mid-way raises ``RegistryUnreachable`` naming it (``where``); the
    connection is then dropped, and the registry's next use connects again."""

    def __init__(self, raw: Any, pg: bool, where: str = ""):
        self.raw, self.pg, self.where = raw, pg, where

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.pg else sql

    @contextmanager
    def _reaching(self):
        if not self.pg:
            yield
            return
        import psycopg

        try:
            yield
        except psycopg.OperationalError as e:
            raise unreachable(self.where, e) from e

    @property
    def lost(self) -> bool:
        return self.pg and self.raw.broken

    def execute(self, sql: str, params: Iterable[Any] = ()) -> Any:
        with self._reaching():
            return self.raw.execute(self._sql(sql), tuple(params))

    def executemany(self, sql: str, rows: list[tuple]) -> None:
        if not self.pg:
            self.raw.executemany(sql, rows)
        elif rows:
            with self._reaching(), self.raw.cursor() as cur:
                cur.executemany(self._sql(sql), rows)

    @contextmanager
    def transaction(self, lock: int):
        """One write transaction, taken at once: SQLite's ``BEGIN IMMEDIATE``, PostgreSQL's
        advisory ``lock`` held to its end, so two writers (any process or machine) queue."""
        if self.pg:
            self.execute("BEGIN")
            self.execute("SELECT pg_advisory_xact_lock(?)", (lock,))
        else:
            self.execute("BEGIN IMMEDIATE")
        try:
            yield self
            self.execute("COMMIT")
        except BaseException:
            if not self.lost:  # a lost server rolled it back itself
                self.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.raw.close()


def connect_pg(url: str, schema: str, lock: int, where: str) -> Any:
    """A PostgreSQL connection (autocommit) working in ``schema``, made if new under the
    advisory ``lock`` (two machines creating it at once would collide); ``where``, the URL
    without its password, names it when it cannot be reached."""
    import psycopg

    try:
        raw = psycopg.connect(url, autocommit=True, connect_timeout=10)
        with raw.transaction():
            raw.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
            raw.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        raw.execute(f"SET search_path TO {schema}")
    except psycopg.Error as e:
        raise unreachable(where, e) from e
    return raw


def unreachable(where: str, e: Exception) -> RegistryUnreachable:
    return RegistryUnreachable(
        f"the source registry at {where} (registry_url) cannot be used: {first_line(e)}. Once it "
        "answers, run the command again: an index goes on where it stopped"
    )


@dataclass
class Source:
    """One registered source as ``hopgraph kb ls`` shows it."""

    path: str
    format: str
    size: int
    mtime_ns: int
    sha256: str | None
    """The live version's content hash; None until its first index finishes."""
    hash: str | None
    """The live version: its content hash and build settings, hashed together."""
    pending: str | None
    """A version being written (or left by a crash): hidden until it is committed."""
    build: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    """Items of the live version per modality."""
    indexed_at: float | None = None
    complete: bool = True
    """False where deriving items from it failed for some (an LLM's triplets): the next index
    reads it again, and only what is missing is made."""


class SourceRegistry:
    """The registry of one KB (thread-safe; several processes may share it): a SQLite file in
    a local KB's folder, or, with ``url``, a PostgreSQL database every machine that uses a KB
    on a Chroma server reaches (``registry_url``)."""

    def __init__(self, folder: str | Path | None = None, *, url: str = ""):
        self.url = url
        self.file = Path(folder) / REGISTRY if folder is not None and not url else None
        if self.file is not None:
            self.file.parent.mkdir(parents=True, exist_ok=True)
        self.where = redacted(url) if url else str(self.file)
        """Where it lives, as messages name it (no password)."""
        self._local = threading.local()
        with self._tx() as db:
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)

    def _db(self) -> Db:
        conn = getattr(self._local, "conn", None)
        if conn is not None and conn.lost:
            conn = None
        if conn is None:
            conn = Db(self._connect(), pg=bool(self.url), where=self.where)
            self._local.conn = conn
        return conn

    def _connect(self) -> Any:
        if self.url:
            return connect_pg(self.url, PG_SCHEMA, PG_LOCK, self.where)
        if self.file is None:
            raise ValueError("a source registry needs a folder or a PostgreSQL URL")
        raw = sqlite3.connect(self.file, timeout=60, isolation_level=None)
        raw.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL survives a killed process (a power cut may lose the last commits,
        # which the next index redoes): one fsync a checkpoint, not one per source
        raw.execute("PRAGMA synchronous=NORMAL")
        raw.execute("PRAGMA busy_timeout=60000")
        return raw

    @contextmanager
    def _tx(self):  # noqa: ANN202 - a context manager
        """One write transaction, taken at once (two writers queue rather than deadlock); a
        full disk is named with the registry's file."""
        with named_when_full(self.where), self._db().transaction(PG_LOCK) as db:
            yield db

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- reading ----------------------------------------------------------------------------
    def chroma_version(self) -> int:
        """Bumped by every Chroma write of any process: a client that saw an older one has
        missed a write and is reopened."""
        return int(self._db().execute("SELECT value FROM meta WHERE key='chroma'").fetchone()[0])

    def chroma_written(self) -> int:
        with self._tx() as db:
            db.execute(
                "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) "
                "WHERE key = 'chroma'"
            )
            return int(db.execute("SELECT value FROM meta WHERE key='chroma'").fetchone()[0])

    def sources(self, only: str | None = None) -> list[Source]:
        """Every registered source (or ``only`` that one), with its live items per modality."""
        db = self._db()
        one, args = ("AND s.path = ? ", (only,)) if only is not None else ("", ())
        counts: dict[str, dict[str, int]] = {}
        for path, modality, n in db.execute(
            "SELECT h.path, h.modality, COUNT(*) FROM holds h JOIN sources s "
            f"ON h.path = s.path AND h.hash = s.hash WHERE 1 = 1 {one}"
            "GROUP BY h.path, h.modality",
            args,
        ):
            counts.setdefault(path, {})[modality] = n
        return [
            Source(p, f, size, mtime, sha, h, pend, json.loads(b), counts.get(p, {}), at, bool(c))
            for p, f, size, mtime, sha, h, pend, b, at, c in db.execute(
                "SELECT path, format, size, mtime_ns, sha256, hash, pending, build, indexed_at, "
                f"complete FROM sources s WHERE 1 = 1 {one}ORDER BY path",
                args,
            )
        ]

    def builds(self) -> list[dict[str, Any]]:
        """The distinct build settings recorded (a server KB's; a local one keeps a file)."""
        rows = self._db().execute("SELECT settings FROM builds ORDER BY first_seen, settings")
        return [json.loads(r[0]) for r in rows]

    def record_build(self, settings: dict[str, Any]) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO builds VALUES (?, ?) ON CONFLICT DO NOTHING",
                (json.dumps(settings, sort_keys=True), time.time()),
            )

    def get(self, path: str) -> Source | None:
        """One source, read alone (an indexer asks for each it is about to read)."""
        return next(iter(self.sources(path)), None)

    # -- leases: several indexers at once ------------------------------------------------------
    def claim(self, path: str, worker: str, build: str, seconds: float) -> tuple[str, str] | None:
        """Lease ``path`` to ``worker`` for ``seconds``: None where it is this worker's now, else
        (holder, its build settings) of the live lease another worker holds. A lease that ran
        out unrenewed (its holder died) is taken over."""
        now = time.time()
        with self._tx() as db:
            row = db.execute(
                "SELECT worker, build, expires FROM leases WHERE path = ?", (path,)
            ).fetchone()
            if row is not None and row[0] != worker and row[2] > now:
                return row[0], row[1]
            db.execute(
                "INSERT INTO leases VALUES (?, ?, ?, ?) ON CONFLICT (path) DO UPDATE SET "
                "worker = excluded.worker, build = excluded.build, expires = excluded.expires",
                (path, worker, build, now + seconds),
            )
            return None

    def renew(self, worker: str, seconds: float) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE leases SET expires = ? WHERE worker = ?", (time.time() + seconds, worker)
            )

    def release(self, path: str, worker: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM leases WHERE path = ? AND worker = ?", (path, worker))

    def hidden(self) -> list[str]:
        """Every version an item may carry that is not live: being written (or left so by a
        crash), replaced or removed. Empty until a source changes."""
        rows = self._db().execute(
            "SELECT pending FROM sources WHERE pending IS NOT NULL UNION SELECT hash FROM retired "
            "EXCEPT SELECT hash FROM sources WHERE hash IS NOT NULL"
        )
        return sorted(r[0] for r in rows)

    def state(self) -> str:
        """A digest of every source's live version (content and settings, not where it lies):
        what a result record or GRAIL's weights compare to tell whether the KB changed since."""
        rows = (
            self._db()
            .execute("SELECT hash FROM sources WHERE hash IS NOT NULL ORDER BY hash")
            .fetchall()
        )
        return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16] if rows else ""

    def live_holders(self, items: Iterable[str], besides: str) -> dict[str, str]:
        """For each item held by a live source other than ``besides``: that source's hash."""
        ids = list(items)
        out: dict[str, str] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            out |= dict(
                self._db().execute(
                    "SELECT h.item, h.hash FROM holds h JOIN sources s "
                    "ON h.path = s.path AND h.hash = s.hash "
                    f"WHERE h.path != ? AND h.item IN ({','.join('?' * len(chunk))})",
                    (besides, *chunk),
                )
            )
        return out

    def garbage(self) -> list[tuple[str, str]]:
        """(item, modality) pairs no live source holds any more, not yet deleted."""
        return self._db().execute("SELECT item, modality FROM garbage").fetchall()

    def orphaned(self, path: str, keep: str | None) -> dict[str, str]:
        """Items of ``path``'s other versions than ``keep`` that another live source still
        holds, with that source's hash: they stay, stamped with their remaining holder."""
        return dict(
            self._db().execute(
                "SELECT h.item, o.hash FROM holds h "
                "JOIN holds o ON o.item = h.item AND o.path != h.path "
                "JOIN sources s ON o.path = s.path AND o.hash = s.hash "
                "WHERE h.path = ? AND h.hash IS DISTINCT FROM ? "
                "AND h.item NOT IN (SELECT item FROM holds WHERE path = ? "
                "AND hash IS NOT DISTINCT FROM ?)",
                (path, keep, path, keep),
            )
        )

    # -- writing ----------------------------------------------------------------------------
    def begin(self, path: str, fmt: str, version: str, build: dict[str, Any]) -> None:
        """Open ``version`` of ``path`` as pending: its items are hidden until ``commit``. A
        version left pending by a crash, and not this one, is retired."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO retired SELECT pending FROM sources WHERE path = ? "
                "AND pending IS NOT NULL AND pending != ? AND pending IS DISTINCT FROM hash "
                "ON CONFLICT DO NOTHING",
                (path, version),
            )
            db.execute(
                "INSERT INTO sources (path, format, pending, build) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(path) DO UPDATE SET pending = excluded.pending, "
                "format = excluded.format, build = excluded.build",
                (path, fmt, version, json.dumps(build, sort_keys=True)),
            )

    def hold(self, path: str, version: str, items: Iterable[tuple[str, str]]) -> None:
        """Record that ``version`` of ``path`` produced these (item id, modality) pairs."""
        rows = [(path, version, i, m) for i, m in items]
        with self._tx() as db:
            db.executemany("INSERT INTO holds VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING", rows)
            # an item queued by an earlier version and held again (a reverted edit) stays
            db.executemany("DELETE FROM garbage WHERE item = ?", [(r[2],) for r in rows])

    def commit(
        self, path: str, version: str, sha256: str, size: int, mtime_ns: int, complete: bool = True
    ) -> int:
        """Make ``version`` the live one in one transaction: the items only other versions held
        become garbage, their hashes retired. Returns how many items were queued."""
        with self._tx() as db:
            db.execute(
                "UPDATE sources SET hash = ?, sha256 = ?, pending = NULL, size = ?, "
                "mtime_ns = ?, indexed_at = ?, complete = ? WHERE path = ?",
                (version, sha256, size, mtime_ns, time.time(), int(complete), path),
            )
            return self._drop(db, path, keep=version)

    def discard(self, path: str) -> None:
        """Forget a source never committed (it gave no item this time): what an earlier,
        interrupted attempt stored for it becomes garbage, its versions retired."""
        with self._tx() as db:
            if db.execute(
                "SELECT 1 FROM sources WHERE path = ? AND hash IS NULL", (path,)
            ).fetchone():
                db.execute(
                    "INSERT INTO retired SELECT pending FROM sources "
                    "WHERE path = ? AND pending IS NOT NULL ON CONFLICT DO NOTHING",
                    (path,),
                )
                self._drop(db, path, keep=None)
                db.execute("DELETE FROM sources WHERE path = ?", (path,))

    def touch(self, path: str, size: int, mtime_ns: int) -> None:
        """The source was found unchanged by hash: remember its new size and mtime."""
        with self._tx() as db:
            db.execute(
                "UPDATE sources SET size = ?, mtime_ns = ? WHERE path = ?", (size, mtime_ns, path)
            )

    def remove(self, path: str) -> int:
        """Unregister ``path``: the items no other live source holds become garbage."""
        with self._tx() as db:
            queued = self._drop(db, path, keep=None)
            db.execute("DELETE FROM sources WHERE path = ?", (path,))
            return queued

    def collected(self, items: Iterable[str]) -> None:
        """These garbage items are gone from every collection."""
        with self._tx() as db:
            db.executemany("DELETE FROM garbage WHERE item = ?", [(i,) for i in items])

    @staticmethod
    def _drop(db: Db, path: str, keep: str | None) -> int:
        """Queue as garbage the items of ``path``'s versions other than ``keep`` that neither
        ``keep`` nor another live source holds; retire those versions' hashes."""
        before = db.execute("SELECT COUNT(*) FROM garbage").fetchone()[0]
        db.execute(
            "INSERT INTO garbage SELECT h.item, h.modality FROM holds h "
            "WHERE h.path = ? AND h.hash IS DISTINCT FROM ? "
            "AND h.item NOT IN (SELECT item FROM holds WHERE path = ? "
            "AND hash IS NOT DISTINCT FROM ?) "
            "AND h.item NOT IN (SELECT o.item FROM holds o JOIN sources s "
            "ON o.path = s.path AND o.hash = s.hash WHERE o.path != ?) ON CONFLICT DO NOTHING",
            (path, keep, path, keep, path),
        )
        db.execute(
            "INSERT INTO retired SELECT DISTINCT hash FROM holds "
            "WHERE path = ? AND hash IS DISTINCT FROM ? ON CONFLICT DO NOTHING",
            (path, keep),
        )
        db.execute(
            "INSERT INTO retired SELECT hash FROM sources "
            "WHERE path = ? AND hash IS NOT NULL AND hash IS DISTINCT FROM ? "
            "ON CONFLICT DO NOTHING",
            (path, keep),
        )
        db.execute("DELETE FROM holds WHERE path = ? AND hash IS DISTINCT FROM ?", (path, keep))
        return db.execute("SELECT COUNT(*) FROM garbage").fetchone()[0] - before
