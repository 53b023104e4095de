"""A full disk said one way by every store of the memory layer: Chroma and the SQLite under the
source registry report it as their own errors ("database or disk is full"), which every command
would print as a traceback; raised instead as the ``OSError`` (``ENOSPC``) that the commands
name with its folder and exit 5 on."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def store_says_full(e: BaseException) -> bool:
    """A store's own error for a full disk (SQLite's and Chroma's "database or disk is full")."""
    return not isinstance(e, OSError) and "disk is full" in str(e)


@contextmanager
def named_when_full(where: str | Path) -> Iterator[None]:
    """Inside this block, a store's "disk is full" is an ``OSError`` naming ``where``."""
    try:
        yield
    except Exception as e:
        if not store_says_full(e):
            raise
        raise OSError(errno.ENOSPC, "no space left on the device", str(where)) from e
