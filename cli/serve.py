"""``serve``: the embedded llama.cpp server, started and kept up as a model endpoint."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from hopgraph.cli.app import (
    ModelName,
    Sets,
    app,
    build_context,
    console,
    err,
    refuse,
)


@app.command()
def serve(
    model: ModelName = "",
    engine: Annotated[
        str,
        typer.Option(
            help="llama (the embedded engine: llama.cpp's own llama-server where `make install` "
            "built it, else llama-cpp-python's; llama-server or llama-cpp-python names one), or "
            "vllm (vLLM's CPU build in its own environment, `make vllm`)"
        ),
    ] = "llama",
    vllm_python: Annotated[
        str, typer.Option(help="python of vLLM's environment (default .venv-vllm/bin/python)")
    ] = "",
    weights: Annotated[
        str,
        typer.Option(
            help="with --engine vllm: a local Hugging Face model folder served as it is under "
            "the name --model (a VLM such as Qwen2.5-VL); default: the embedded model"
        ),
    ] = "",
    sets: Sets = None,
) -> None:
    """Serve a model in the foreground and print its base URL: the embedded one with llama.cpp
    or with vLLM itself (its weights converted once from the verified GGUF, no download), or a
    local model folder with vLLM."""
    from hopgraph.models import embedded_server
    from hopgraph.models.errors import HopgraphModelError

    engines = ("llama", "llama-server", "llama-cpp-python", "vllm")
    if engine not in engines:
        refuse(f"--engine is {', '.join(engines[:-1])} or vllm, not {engine!r}")
    if weights and engine != "vllm":
        refuse("--weights is for --engine vllm (llama.cpp serves the embedded GGUFs)")
    picked = [f"engine={engine}"] if engine in ("llama-server", "llama-cpp-python") else []
    ctx = build_context(model=model, sets=[*picked, *(sets or [])])
    began = time.perf_counter()
    try:
        if engine == "vllm":
            from hopgraph.models.vllm_server import VllmServer

            server = VllmServer(
                ctx.model,
                cache_dir=ctx.cache_dir,
                python=vllm_python,
                n_ctx=ctx.n_ctx,
                weights_dir=weights,
            ).start()
        else:
            server = embedded_server(ctx)
    except HopgraphModelError as e:
        refuse(str(e))
    slots = getattr(server, "slots", 0)
    console.print(
        f"{server.engine} {ctx.model} ready in {time.perf_counter() - began:.1f}s"
        + (f" ({slots} parallel slots)" if slots else "")
    )
    console.print(f"HOPGRAPH_BASE_URL={server.base_url} HOPGRAPH_MODEL={ctx.model}")
    console.print("Ctrl-C stops it.")
    try:
        while server.proc is not None and server.proc.poll() is None:
            time.sleep(0.5)
        err.print(f"server exited:\n{server.log_tail()}")
        raise typer.Exit(1)
    except KeyboardInterrupt:
        server.stop()
