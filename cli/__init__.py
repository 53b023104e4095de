"""The ``hopgraph`` command: thin commands, one module per group; their logic lives in the
library, where Python users can call it."""

from __future__ import annotations

import sys

# commands are listed in the order their modules register them
# isort: off
from hopgraph.cli import serve, doctor, run, trace, evaluate  # noqa: F401
from hopgraph.cli import kb, data, memory, grail, qdrag, prompts, mcp, optimize, view  # noqa: F401

# isort: on
from hopgraph.cli.app import app, err


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
        OSError,
        RuntimeError,
    ) as e:
        from hopgraph.redaction import redacted

        err.print(f"[red]error:[/red] {redacted(str(e))}")
        sys.exit(2)
    finally:
        close_all()  # models, knowledge bases, memories: released once, here
