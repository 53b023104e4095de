"""Files made to be too large to read whole: the test of the viewer's read limit and its
benchmark (``benchmarks/bench_view_bomb.py``) make the same one."""

from __future__ import annotations

import json
import zlib
from pathlib import Path


def gzip_bomb(path: Path, megabytes: int = 256) -> None:
    """A packed trace of about 600 KB that expands to ``megabytes`` MB of trace records."""
    record = {"mode": "custom", "ns": [], "data": {"event": "note", "text": "x" * 900}}
    line = (json.dumps(record) + "\n").encode()
    block = line * (2**20 // len(line))
    pack = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    path.write_bytes(b"".join(pack.compress(block) for _ in range(megabytes)) + pack.flush())
