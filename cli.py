"""The ``hopgraph`` command."""

from __future__ import annotations

import logging
import sys
import time
from typing import Annotated

import typer
from hopgraph.config import Context, parse_sets
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    help="hopgraph: multimodal multi-hop question answering on LangGraph.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console()
err = Console(stderr=True)

BaseUrl = Annotated[
    str, typer.Option("--base-url", help="OpenAI-compatible endpoint; default: embedded llama.cpp")
]
ModelName = Annotated[str, typer.Option("--model", help="model name served at --base-url")]
PromptsDir = Annotated[str, typer.Option("--prompts", help="folder of .j2 overrides")]
Sets = Annotated[
    list[str] | None, typer.Option("--set", help="any Context field: key=value (repeatable)")
]


def build_context(base_url: str = "", model: str = "", prompts: str = "", sets=None) -> Context:
    """Context from defaults, HOPGRAPH_* environment, then command-line options (which win)."""
    changes: dict[str, str] = parse_sets(sets)
    for key, value in (("base_url", base_url), ("model", model), ("prompts_dir", prompts)):
        if value:
            changes[key] = value
    return Context().replace(**changes)


@app.callback()
def _setup(verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False) -> None:
    from hopgraph.models.embedded import install_sigterm_handler

    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    install_sigterm_handler()


@app.command()
def serve(
    model: ModelName = "",
    sets: Sets = None,
) -> None:
    """Run the embedded llama.cpp server in the foreground and print its base URL."""
    from hopgraph.models import embedded_server

    ctx = build_context(model=model, sets=sets)
    began = time.perf_counter()
    server = embedded_server(ctx)
    console.print(f"embedded {ctx.model} ready in {time.perf_counter() - began:.1f}s")
    console.print(f"HOPGRAPH_BASE_URL={server.base_url} HOPGRAPH_MODEL={ctx.model}")
    console.print("Ctrl-C stops it.")
    try:
        while server.proc is not None and server.proc.poll() is None:
            time.sleep(0.5)
        err.print(f"server exited:\n{server.log_tail()}")
        raise typer.Exit(1)
    except KeyboardInterrupt:
        server.stop()


@app.command()
def doctor(base_url: BaseUrl = "", model: ModelName = "", sets: Sets = None) -> None:
    """Probe an endpoint (default: the embedded server) and print what it supports."""
    from hopgraph.models import chat_model
    from hopgraph.models.doctor import diagnose

    ctx = build_context(base_url, model, sets=sets)
    rows = diagnose(chat_model(ctx))
    table = Table(title=f"hopgraph doctor: {ctx.model}")
    for col in ("capability", "supported", "detail"):
        table.add_column(col)
    for row in rows:
        table.add_row(row.capability, "yes" if row.ok else "no", row.detail)
    console.print(table)


@app.command()
def ask(
    question: str,
    agent: Annotated[str, typer.Option(help="graph to run")] = "direct",
    base_url: BaseUrl = "",
    model: ModelName = "",
    prompts: PromptsDir = "",
    sets: Sets = None,
) -> None:
    """Answer one question with an agent and print the answer."""
    from hopgraph.graphs import load_graph

    ctx = build_context(base_url, model, prompts, sets)
    graph = load_graph(agent)
    began = time.perf_counter()
    out = graph.invoke({"question": question}, context=ctx)
    console.print(f"[bold]Q:[/bold] {question}")
    console.print(f"[bold]A:[/bold] {out.get('answer', '')}")
    console.print(f"[dim]{agent} on {ctx.model}, {time.perf_counter() - began:.1f}s[/dim]")


def main() -> None:
    from hopgraph.models.errors import HopgraphModelError
    from hopgraph.prompts import PromptError

    try:
        app()
    except (HopgraphModelError, PromptError, ValueError) as e:
        err.print(f"[red]error:[/red] {e}")
        sys.exit(2)


if __name__ == "__main__":
    main()
