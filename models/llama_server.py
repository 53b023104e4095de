"""llama.cpp's own ``llama-server``: the embedded default engine.

It serves the same GGUF through the same libllama / libggml that llama-cpp-python installed
(``make install`` compiles only the server's sources against them: ``models/engine``), so it
differs from ``python -m llama_cpp.server`` only in how it serves: parallel slots with
continuous batching (MMAPG's examinations, QD-C's subquestions and a run's ``--concurrency``
no longer wait in one line), a cached prompt prefix reused in any slot (``--cache-reuse``),
logprobs without full-vocabulary logits for every prompt token, and per-request ``timings``
(prompt tokens read, tokens reused from the cache, the time of each phase) that the trace
keeps. Measured side by side in ``benchmarks/results/engine/``.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hopgraph.models.embedded import EmbeddedServer, PromptTokens
from hopgraph.models.errors import ModelPackageMissing

if TYPE_CHECKING:
    from hopgraph.config import Context

LLAMA_CPP_REVISION = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
"""The llama.cpp revision llama-cpp-python 0.3.36 vendors: the server's sources and the
libraries it links come from it."""

DEFAULT_SLOTS = 4
"""Parallel slots: on 2 cores, 8 MMAPG examinations from 8 clients finished in 51 s with 4
slots and later with 8 (93 s; 135 s one at a time), issue 104's side-by-side measurement."""

CACHE_REUSE = 256
"""``--cache-reuse``: the least run of tokens a slot takes from its cache by shifting it, so a
prompt that shares passages with an earlier one, behind a different head, is not re-read."""


def llama_server_binary() -> Path | None:
    """The built server: ``HOPGRAPH_LLAMA_SERVER``, else ``llama-server`` beside this Python
    (``make install`` puts it in ``.venv/bin``), else one on ``PATH``; None where there is none.
    A configured one that cannot run is an error naming the variable, never a quiet fall back
    to the other engine."""
    configured = os.environ.get("HOPGRAPH_LLAMA_SERVER", "")
    if configured:
        path = Path(configured)
        if not path.is_file() or not os.access(path, os.X_OK):
            raise ModelPackageMissing(
                f"HOPGRAPH_LLAMA_SERVER={configured} is "
                f"{'not executable' if path.is_file() else 'not a file'}: point it at a built "
                "llama-server, or unset it to use the one `make install` builds"
            )
        return path
    beside = Path(sys.executable).with_name("llama-server")
    if beside.is_file():
        return beside
    found = shutil.which("llama-server")
    return Path(found) if found else None


def engine_for(name: str) -> str:
    """The engine ``name`` asks for, resolved: "auto" is llama-server where one is built, else
    llama-cpp-python's server (each named in the manifest and by ``hopgraph doctor``)."""
    if name == "auto":
        return "llama-server" if llama_server_binary() is not None else "llama-cpp-python"
    return name


def engine_description(ctx: Context) -> dict[str, Any]:
    """What serves a run on the embedded model, for its manifest: the engine, the llama.cpp
    revision behind it and, for llama-server, its slots."""
    name = engine_for(ctx.engine)
    slots = {"slots": ctx.slots} if name == "llama-server" else {}
    return {"name": name, "llama_cpp": LLAMA_CPP_REVISION[:12], **slots}


class LlamaServer(EmbeddedServer):
    """``llama-server`` on a free loopback port, ``slots`` requests decoded together."""

    engine = "llama-server"

    def __init__(
        self,
        model: str = "qwen2.5-coder-1.5b",
        *,
        cache_dir: str | Path,
        slots: int = DEFAULT_SLOTS,
        n_ctx: int = 4096,
        n_threads: int = 0,
        n_threads_batch: int = 0,
        startup_timeout: float = 180.0,
    ) -> None:
        super().__init__(
            model,
            cache_dir=cache_dir,
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads_batch,
            startup_timeout=startup_timeout,
        )
        self.slots = max(1, slots)
        self.binary: Path | None = None

    def require(self) -> None:
        self.binary = llama_server_binary()
        if self.binary is None:
            raise ModelPackageMissing(
                "no llama-server built: `make install` builds it into .venv/bin (about a "
                "minute), or set HOPGRAPH_LLAMA_SERVER to one; `--set engine=llama-cpp-python` "
                "serves with llama-cpp-python's server instead"
            )

    def prompt_counter(self, gguf: Path) -> PromptTokens | None:
        """As the other engine: a streamed reply's usage is counted with the GGUF's tokenizer
        (the server's own ``timings`` say the same count; they are kept beside it)."""
        return PromptTokens(gguf)

    def command(self, gguf: Path) -> list[str]:
        """Each slot gets ``n_ctx`` tokens of context (the server splits ``--ctx-size`` among
        its slots); prompts are cached per slot and a shared prefix is reused across them."""
        assert self.binary is not None
        return [
            str(self.binary),
            "--model",
            str(gguf),
            "--alias",
            self.model,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--ctx-size",
            str(self.n_ctx * self.slots),
            "--parallel",
            str(self.slots),
            "--cont-batching",
            "--cache-reuse",
            str(CACHE_REUSE),
            "--threads",
            str(self.n_threads),
            "--threads-batch",
            str(self.n_threads_batch),
            "--no-webui",
            "--metrics",
        ]
