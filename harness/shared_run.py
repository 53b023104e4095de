"""One run shared by several ``hopgraph run`` workers, on any machines, through PostgreSQL.

LangGraph's checkpoints live in the database (langgraph-checkpoint-postgres), and so does one
row per question: who holds it, when its holder last showed life, and its prediction once
finished. A worker claims a question atomically (one ``INSERT … ON CONFLICT … DO UPDATE``); a
claim whose heartbeat is older than the lease is free again, so a crashed worker's question is
picked up by another, which resumes it from its checkpoint. A question is recorded done once.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from typing import Any

from hopgraph.models.errors import first_line

SCHEMA = """
CREATE TABLE IF NOT EXISTS hopgraph_questions (
    run text NOT NULL,
    qid text NOT NULL,
    worker text NOT NULL,
    heartbeat timestamptz NOT NULL DEFAULT now(),
    done boolean NOT NULL DEFAULT false,
    prediction jsonb,
    PRIMARY KEY (run, qid)
)
"""
SETUP_LOCK = 4_861_203_551
"""The advisory lock key that serialises table setup across workers."""
CLAIM = """
INSERT INTO hopgraph_questions (run, qid, worker) VALUES (%(run)s, %(qid)s, %(worker)s)
ON CONFLICT (run, qid) DO UPDATE SET worker = EXCLUDED.worker, heartbeat = now()
WHERE NOT hopgraph_questions.done
  AND hopgraph_questions.heartbeat < now() - make_interval(secs => %(lease)s)
RETURNING qid
"""
FINISH = """
UPDATE hopgraph_questions
SET done = %(ok)s, prediction = %(pred)s,
    heartbeat = CASE WHEN %(ok)s THEN now() ELSE '-infinity'::timestamptz END
WHERE run = %(run)s AND qid = %(qid)s AND worker = %(worker)s AND NOT done
"""


class SharedRun:
    """The question rows of run ``run`` in the database at ``url``; ``lease`` seconds without
    a heartbeat free a claim."""

    def __init__(self, url: str, run: str, *, lease: float = 60.0):
        import psycopg
        from psycopg_pool import ConnectionPool

        try:  # one plain connection first: a wrong address or password fails now, not in 30 s
            psycopg.connect(url, connect_timeout=10).close()
        except psycopg.Error as e:
            raise RuntimeError(f"cannot connect: {first_line(e)}") from None
        self.run, self.lease = run, lease
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.pool = ConnectionPool(
            url, min_size=1, max_size=8, open=True, kwargs={"autocommit": True}
        )
        with self._setup_lock(), self.pool.connection() as conn:
            conn.execute(SCHEMA)
        self._pools: list[ConnectionPool[Any]] = []  # the checkpointers', closed with this
        self._beat = threading.Event()
        self._beater = threading.Thread(target=self._heartbeat, daemon=True)
        self._beater.start()

    def checkpointer(self):
        """LangGraph's PostgresSaver on the same database (its tables set up once)."""
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg import Connection
        from psycopg.rows import DictRow, dict_row
        from psycopg_pool import ConnectionPool

        pool: ConnectionPool[Connection[DictRow]] = ConnectionPool(
            self.pool.conninfo,
            min_size=1,
            max_size=8,
            open=True,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        )
        self._pools.append(pool)
        saver = PostgresSaver(pool)
        with self._setup_lock():
            saver.setup()
        return saver

    @contextlib.contextmanager
    def _setup_lock(self):
        """Workers starting together set the tables up one at a time (concurrent setups of
        LangGraph's tables deadlock)."""
        with self.pool.connection() as conn:
            # polled, not waited on: a waiting statement is an open transaction, which the
            # other worker's CREATE INDEX CONCURRENTLY would wait for in turn
            while True:
                row = conn.execute("SELECT pg_try_advisory_lock(%s)", (SETUP_LOCK,)).fetchone()
                if row and row[0]:
                    break
                time.sleep(0.2)
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))

    def claim(self, qid: str) -> bool:
        """Take ``qid`` if no live worker holds it and it is not done."""
        with self.pool.connection() as conn:
            row = conn.execute(
                CLAIM, {"run": self.run, "qid": qid, "worker": self.worker, "lease": self.lease}
            ).fetchone()
        return row is not None

    def finish(self, pred: dict[str, Any]) -> bool:
        """Record the prediction (done when it has no error; a failed one frees the claim for
        a retry). False when the claim was lost to another worker meanwhile."""
        with self.pool.connection() as conn:
            cur = conn.execute(
                FINISH,
                {
                    "ok": not pred.get("error"),
                    "pred": json.dumps(pred, default=str),
                    "run": self.run,
                    "qid": pred["id"],
                    "worker": self.worker,
                },
            )
            return cur.rowcount == 1

    def status(self) -> dict[str, dict[str, Any]]:
        """qid -> {done, held (by a live worker), prediction}."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT qid, done, heartbeat >= now() - make_interval(secs => %s), prediction "
                "FROM hopgraph_questions WHERE run = %s",
                (self.lease, self.run),
            ).fetchall()
        return {q: {"done": d, "held": h, "prediction": p} for q, d, h, p in rows}

    def _heartbeat(self) -> None:
        while not self._beat.wait(self.lease / 3):
            try:
                with self.pool.connection() as conn:
                    conn.execute(
                        "UPDATE hopgraph_questions SET heartbeat = now() "
                        "WHERE run = %s AND worker = %s AND NOT done",
                        (self.run, self.worker),
                    )
            except Exception:  # noqa: BLE001 - a missed beat only risks a shared question
                continue

    def close(self) -> None:
        self._beat.set()
        for pool in [*self._pools, self.pool]:
            pool.close()
