"""A small persistent JSON cache for results that cost an LLM call, as a JSON-lines file.

One line per ``put``, appended whole (``O_APPEND``, fsynced), so several threads or processes
may write at once and a crash loses at most the line being written. Plain text on purpose: a
cache that is expensive to rebuild (MMAPG's triplets for a corpus) can be committed beside the
result records it serves and grow commit by commit. The last line for a key wins.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any


class JsonCache:
    """``get``/``put`` JSON values by (namespace, key)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._values: dict[tuple[str, str], Any] = {}
        self._size = 0
        self._reload()

    def _reload(self) -> None:
        """Read lines another writer appended since the last read; a torn last line is
        skipped until it is whole."""
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            f.seek(self._size)
            data = f.read()
        end = data.rfind(b"\n") + 1
        for line in data[:end].splitlines():
            try:
                rec = json.loads(line)
                self._values[(rec["ns"], rec["key"])] = rec["value"]
            except (json.JSONDecodeError, KeyError, TypeError):
                continue
        self._size += end

    def get(self, namespace: str, key: str) -> Any | None:
        with self._lock:
            if (namespace, key) not in self._values:
                self._reload()
            return self._values.get((namespace, key))

    def put(self, namespace: str, key: str, value: Any) -> None:
        line = json.dumps({"ns": namespace, "key": key, "value": value}, ensure_ascii=False)
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (line + "\n").encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)
            self._values[(namespace, key)] = value

    def __len__(self) -> int:
        with self._lock:
            self._reload()
            return len(self._values)
