"""A small persistent JSON cache (SQLite, WAL) for results that cost an LLM call."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any


class JsonCache:
    """``get``/``put`` JSON values by (namespace, key); safe across threads and processes."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        with self._conn() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS cache "
                "(namespace TEXT, key TEXT, value TEXT, PRIMARY KEY (namespace, key))"
            )

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            self._local.conn = conn
        return conn

    def get(self, namespace: str, key: str) -> Any | None:
        row = (
            self._conn()
            .execute("SELECT value FROM cache WHERE namespace = ? AND key = ?", (namespace, key))
            .fetchone()
        )
        return None if row is None else json.loads(row[0])

    def put(self, namespace: str, key: str, value: Any) -> None:
        with self._conn() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO cache VALUES (?, ?, ?)",
                (namespace, key, json.dumps(value, ensure_ascii=False)),
            )
