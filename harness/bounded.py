"""Reading a record's files with a bound. A trace, a predictions file or a manifest is a user's
file (a record copied from elsewhere, a run folder on a shared disk): one that is far larger than
any run writes, above all a packed trace that expands a thousandfold (260 KB of gzip that
inflates to 256 MB), is refused with its size and the limit named instead of being read whole
into memory while every reader beside it waits. The limit is ``HOPGRAPH_READ_LIMIT_MB``
(default 64 MB a file, decompressed: seventy times the largest committed trace, 0.9 MB); it
bounds a line too, since no line is longer than its file."""

from __future__ import annotations

import math
import os
import stat
import zlib
from pathlib import Path

LIMIT_ENV = "HOPGRAPH_READ_LIMIT_MB"
DEFAULT_MB = 64.0


class TooLarge(ValueError):
    """A file past the read limit, named with its size and the limit (what a page shows)."""


def limit_bytes() -> int:
    """The most bytes one file may hold (decompressed, for a packed one)."""
    raw = os.environ.get(LIMIT_ENV, "").strip()
    try:
        mb = float(raw) if raw else DEFAULT_MB
    except ValueError:
        raise ValueError(f"{LIMIT_ENV}={raw!r} is not a number of megabytes") from None
    if not (math.isfinite(mb) and mb > 0):
        raise ValueError(f"{LIMIT_ENV}={raw!r} must be a positive number of megabytes")
    return int(mb * 2**20)


def megabytes(n: int) -> str:
    return f"{n / 2**20:,.1f} MB"


def _too_large(name: str, size: str) -> TooLarge:
    limit = megabytes(limit_bytes())
    return TooLarge(f"{name} is too large: {size}, limit {limit} (set {LIMIT_ENV} to read it)")


def _expands(name: str, packed: int) -> TooLarge:
    return _too_large(name, f"over {megabytes(limit_bytes())} unpacked from {megabytes(packed)}")


def read_bytes(path: Path) -> bytes:
    """A regular file's bytes, refused past the limit; a FIFO or a device is refused unread (a
    read of one would wait for a writer or never end)."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise ValueError(f"{path.name} is not a regular file")
    limit = limit_bytes()
    with path.open("rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise _too_large(path.name, megabytes(max(os.fstat(f.fileno()).st_size, len(data))))
    return data


def read_text(path: Path, errors: str = "strict") -> str:
    """``read_bytes`` as UTF-8 text."""
    return read_bytes(path).decode("utf-8", errors=errors)


def inflate(data: bytes, name: str) -> tuple[bytes, bool]:
    """A gzip member's bytes, decompressed no further than the limit, and whether it ended
    (False: cut short). Raises ``TooLarge`` where it expands past the limit and ``zlib.error``
    where it is not gzip."""
    limit = limit_bytes()
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    raw = d.decompress(data, limit + 1)
    if len(raw) > limit:
        raise _expands(name, len(data))
    return raw, d.eof
