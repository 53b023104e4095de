"""Model layer: one chat interface over OpenAI-compatible endpoints, the embedded llama.cpp
default, and the embedders. ``chat_model(ctx)`` is how graphs and agents get a model.

The chat client (and the OpenAI SDK under it) is imported on first use, not with the package:
a command that only reads a knowledge base (``hopgraph search``) needs the errors, not it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hopgraph.config import Context
from hopgraph.models.errors import (
    CapabilityError,
    ContextWindowError,
    EmbeddedServerError,
    EndpointError,
    HopgraphModelError,
    ImageInputError,
    ModelIntegrityError,
    ModelNotServedError,
    ModelPackageMissing,
    ModelWeightsMissing,
    StructuredOutputError,
)
from hopgraph.runtime import ProcessCache, process_cache

if TYPE_CHECKING:
    from hopgraph.models.chat import ChatModel
    from hopgraph.models.embedded import EmbeddedServer

_LAZY = {"ChatModel": "chat", "system": "chat", "user": "chat", "EmbeddedServer": "embedded"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"hopgraph.models.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'hopgraph.models' has no attribute {name!r}")


__all__ = [
    "CapabilityError",
    "ChatModel",
    "ContextWindowError",
    "EmbeddedServer",
    "EmbeddedServerError",
    "EndpointError",
    "HopgraphModelError",
    "ImageInputError",
    "ModelIntegrityError",
    "ModelNotServedError",
    "ModelPackageMissing",
    "ModelWeightsMissing",
    "StructuredOutputError",
    "chat_model",
    "embedded_server",
    "question_model",
    "system",
    "user",
    "vlm_model",
]

_servers: ProcessCache[tuple, EmbeddedServer] = process_cache(
    "embedded servers", lambda s: s.stop()
)
_models: ProcessCache[tuple, ChatModel] = process_cache("chat models")


def embedded_server(ctx: Context) -> EmbeddedServer:
    """The process-wide embedded server for ``ctx.model``, started on first use."""
    from hopgraph.models.embedded import EmbeddedServer
    from hopgraph.models.llama_server import LlamaServer, engine_for

    def start() -> EmbeddedServer:
        threads = {"n_threads": ctx.n_threads, "n_threads_batch": ctx.n_threads_batch}
        if engine_for(ctx.engine) == "llama-server":
            return LlamaServer(
                ctx.model, cache_dir=ctx.cache_dir, slots=ctx.slots, n_ctx=ctx.n_ctx, **threads
            )
        return EmbeddedServer(ctx.model, cache_dir=ctx.cache_dir, n_ctx=ctx.n_ctx, **threads)

    return _servers.get((ctx.model, engine_for(ctx.engine), ctx.slots), start).start()


def _model(
    ctx: Context, base_url: str, name: str, backend: str, server: EmbeddedServer | None = None
) -> ChatModel:
    from hopgraph.models.chat import ChatModel
    from hopgraph.models.response_cache import ResponseCache

    key = (
        base_url,
        name,
        backend,
        ctx.api_key,
        ctx.request_timeout,
        ctx.max_retries,
        ctx.temperature,
        ctx.max_tokens,
        ctx.max_image_pixels,
        ctx.prompts_dir,
        ctx.response_cache,
        ctx.trace_content,
        ctx.trace_text_cap,
    )
    return _models.get(
        key,
        lambda: ChatModel(
            base_url,
            name,
            api_key=ctx.api_key,
            backend=backend,
            timeout=ctx.request_timeout,
            max_retries=ctx.max_retries,
            temperature=ctx.temperature,
            max_tokens=ctx.max_tokens,
            max_image_pixels=ctx.max_image_pixels,
            prompts_dir=ctx.prompts_dir,
            # the embedded server is judged by progress (streamed; see models.chat)
            stream=server is not None,
            count_prompt_tokens=server.prompt_tokens if server is not None else None,
            context_window=server.n_ctx if server is not None else 0,
            cache=ResponseCache(ctx.response_cache) if ctx.response_cache else None,
            trace_cap=ctx.trace_text_cap if ctx.trace_content else -1,
            server=server,
        ),
    )


def chat_model(ctx: Context) -> ChatModel:
    """The LLM for ``ctx``: the configured endpoint, else the embedded llama.cpp server."""
    if ctx.base_url:
        return _model(ctx, ctx.base_url, ctx.model, ctx.backend)
    server = embedded_server(ctx)
    return _model(ctx, server.base_url, ctx.model, "llamacpp", server)


def parallel_calls(ctx: Context) -> int:
    """How many of a question's independent LLM calls go out at once: ``max_concurrency``; on
    the embedded llama-server at most its slots. llama-cpp-python's server answers one request
    at a time and keeps only the last prompt's KV cache, so there calls go one by one, in the
    order their prompts were laid out to share prefixes, which costs less than racing for it
    (QDRAG's reranking: 14 % fewer prompt tokens read, identical P(Yes);
    benchmarks/bench_call_order.py)."""
    from hopgraph.models.llama_server import engine_for

    if ctx.base_url:
        return max(1, ctx.max_concurrency)
    if engine_for(ctx.engine) == "llama-server":
        return max(1, min(ctx.max_concurrency, ctx.slots))
    return 1


def question_model(ctx: Context, images: list, who: str) -> ChatModel:
    """The model a question goes to: the LLM, or the VLM when the question has images. A
    question with images and no VLM configured is refused, never answered blind."""
    if not images:
        return chat_model(ctx)
    vlm = vlm_model(ctx)
    if vlm is None:
        raise CapabilityError(
            f"question {who!r} has an image; set vlm_base_url/vlm_model to a vision-language "
            "endpoint"
        )
    return vlm


def vlm_model(ctx: Context) -> ChatModel | None:
    """The VLM for image calls, or None when none is configured (callers use image text)."""
    if not ctx.vlm_model:
        return None
    base_url = ctx.vlm_base_url or ctx.base_url
    if not base_url:
        raise CapabilityError(
            f"vlm_model={ctx.vlm_model!r} is set but no endpoint serves it: set vlm_base_url "
            "(the embedded llama.cpp server has no vision model)"
        )
    return _model(ctx, base_url, ctx.vlm_model, ctx.backend)
