"""The one rule for a file the product opens on a record's or an overlay's say (a cited page
image, a template or demonstrations file of a prompt overlay, a candidate's demonstrations): it
lies inside the folder it belongs to, links followed, and is no hard link to a file elsewhere.
Under every layer, so the prompt loader and the viewer hold files to the same rule."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def inside(path: Path, root: Path) -> bool:
    """``path``, its links followed, lies inside ``root`` (resolved too)."""
    return Path(path).resolve().is_relative_to(Path(root).resolve())


def confined(path: Path, *roots: Path) -> Path:
    """``path`` resolved (links followed), refused (``ValueError``) unless it is a regular file
    inside one of ``roots`` and its only link: a hard link to a file elsewhere (``/etc/shadow``)
    shares its inode and shows a link count above one."""
    real = Path(path).resolve()
    if not any(inside(real, root) for root in roots):
        raise ValueError(f"{path} lies outside the folders it may be read from")
    info = os.stat(real)
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{path} is not a regular file")
    if info.st_nlink > 1:
        raise ValueError(f"{path} is a hard link (one of {info.st_nlink}): not read")
    return real
