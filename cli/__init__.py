"""The ``hopgraph`` command: thin commands, one module per group; their logic lives in the
library, where Python users can call it."""

from __future__ import annotations

import sys
from typing import NoReturn

# commands are listed in the order their modules register them
# isort: off
from hopgraph.cli import serve, doctor, run, trace, evaluate  # noqa: F401
from hopgraph.cli import kb, data, memory, grail, qdrag, prompts, mcp, optimize, view  # noqa: F401

# isort: on
from hopgraph.cli.app import DISK_FULL, app, err


def main() -> None:
    from hopgraph.memory.kb import KnowledgeBaseError
    from hopgraph.models.errors import HopgraphModelError
    from hopgraph.prompts import PromptError
    from hopgraph.runtime import close_all

    try:
        app()
    except (
        HopgraphModelError,
        PromptError,
        KnowledgeBaseError,
        ValueError,
        OSError,  # a full disk (DiskFull) among them
        RuntimeError,  # a pool refusing work after a failed write: a full disk may be behind it
    ) as e:
        stop(e)
    finally:
        close_all()  # models, knowledge bases, memories: released once, here


def stop(e: Exception) -> NoReturn:
    """A command's failure as one line: a full disk with the file being written (exit
    ``DISK_FULL``), any other fault with its message (exit 2)."""
    from hopgraph.harness.run_folder import disk_full
    from hopgraph.redaction import redacted

    if (full := disk_full(e)) is not None:
        where = f" ({full.filename})" if full.filename else ""
        err.print(
            f"[red]error:[/red] {redacted((full.strerror or str(full)) + where)}: free "
            "space, then re-run the same command: what was written is kept and the rest "
            "resumes"
        )
        sys.exit(DISK_FULL)
    err.print(f"[red]error:[/red] {redacted(str(e))}")
    sys.exit(2)
