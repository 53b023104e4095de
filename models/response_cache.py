"""An opt-in cache of chat completions, keyed by the exact request, so a re-run after a prompt
change pays only for the calls whose request changed. Only greedy requests (temperature 0) are
cached: a sampled reply is not the reply the same request would give again.

One SQLite file (WAL, so several processes share it); an entry that does not read back as a
chat completion is a miss and is dropped, never a wrong answer.

The key is the request alone (``request_key``), not the engine that answered it: a greedy
request answered by llama-server on parallel slots, where a batch's arithmetic can flip a
close token, is read back as that reply by any later run, on either engine (the manifest
names the engine a run was served by; docs/guides/models.md says how much replies spread)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from openai.types.chat import ChatCompletion
from pydantic import ValidationError

FILE = "responses.sqlite"


def request_key(model: str, messages: Sequence[Any], params: dict[str, Any]) -> str:
    """sha256 of everything a reply depends on: model, messages (images as they are sent),
    sampling settings, response format, logprobs, stop sequences."""
    blob = json.dumps(
        {"model": model, "messages": list(messages), "params": params},
        sort_keys=True,
        default=str,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """``get`` / ``put`` of completions under a request key, in ``folder/responses.sqlite``."""

    def __init__(self, folder: str | Path):
        self.path = Path(folder) / FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, "
                "model TEXT, body TEXT, created REAL)"
            )

    def _connect(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = sqlite3.connect(self.path, timeout=30.0)
        return db

    @staticmethod
    def cacheable(params: dict[str, Any]) -> bool:
        return float(params.get("temperature", 0.0) or 0.0) == 0.0

    def get(self, key: str) -> ChatCompletion | None:
        db = self._connect()
        row = db.execute("SELECT body FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return ChatCompletion.model_validate_json(row[0])
        except (ValidationError, ValueError, TypeError):  # corrupt: a miss, and gone
            with db:
                db.execute("DELETE FROM responses WHERE key = ?", (key,))
            return None

    def put(self, key: str, model: str, response: ChatCompletion) -> None:
        db = self._connect()
        with db:
            db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)",
                (key, model, response.model_dump_json(), time.time()),
            )

    def __len__(self) -> int:
        return self._connect().execute("SELECT COUNT(*) FROM responses").fetchone()[0]
