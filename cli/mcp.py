"""``hopgraph mcp``: hopgraph's methods, knowledge base and PolarMem as Model Context Protocol
tools (the server: ``cli/mcp_server.py``), over stdio for a desktop client or streamable HTTP for
remote ones. The server is the operator: its options and ``HOPGRAPH_*`` environment set the
endpoints, folders and limits; a caller sets only what a served graph's client may
(``config.for_client``). Over HTTP each request needs one of the LangGraph server's API keys
(``HOPGRAPH_API_KEYS``), each key may hold so many sessions and requests in flight
(``CallerLimits``: one key's flood never refuses another's), each key has a PolarMem of its
own (``--shared-memory``: the operator's for all), and a request must name this server by a
host the operator allows (``--allowed-host``; loopback always): the SDK's guard against DNS
rebinding, kept on."""

from pathlib import Path
from typing import Annotated

import typer

from hopgraph.cli.app import (
    BaseUrl,
    KbDir,
    ModelName,
    PriceOption,
    PromptsDir,
    Sets,
    app,
    build_context,
    within,
)


@app.command("mcp")
def mcp(
    http: Annotated[bool, typer.Option(help="serve streamable HTTP instead of stdio")] = False,
    host: Annotated[str, typer.Option(help="HTTP: the address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP: the port", callback=within(1, 65_535))] = 8765,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            help="HTTP: a name or address clients reach this server by (the Host header, "
            "with or without :port); loopback is always allowed; repeat for more"
        ),
    ] = None,
    allowed_origin: Annotated[
        list[str] | None,
        typer.Option(help="HTTP: a web page's origin allowed to call (https://app.example.org)"),
    ] = None,
    shared_memory: Annotated[
        bool,
        typer.Option(
            help="HTTP: every caller reads and writes the operator's PolarMem (polar_dir), "
            "not one of its own per API key"
        ),
    ] = False,
    max_sessions_per_key: Annotated[
        int,
        typer.Option(
            help="HTTP: open sessions one caller (API key) may hold; past it, 429",
            callback=within(1, 10_000),
        ),
    ] = 32,
    max_requests_per_key: Annotated[
        int,
        typer.Option(
            help="HTTP: requests one caller (API key) may have in flight; past it, 429",
            callback=within(1, 10_000),
        ),
    ] = 16,
    session_idle: Annotated[
        float,
        typer.Option(
            help="HTTP: seconds a session may go without a request before it is closed",
            callback=within(1.0, 86_400.0),
        ),
    ] = 300.0,
    kb: KbDir = "kb",
    base_url: BaseUrl = "",
    model: ModelName = "",
    prompts: PromptsDir = "",
    price: PriceOption = "",
    sets: Sets = None,
) -> None:
    """Serve hopgraph as MCP tools: ask, kb_search, grail_search, kb_sources, memory_recall,
    memory_ingest, memory_forget. stdio by default (a desktop client starts it); --http serves
    streamable HTTP at /mcp, where each request needs an API key (HOPGRAPH_API_KEYS)."""
    from hopgraph.cli.app import parsed_price, refuse
    from hopgraph.cli.mcp_server import CallerLimits, build_server, key_check, transport_security
    from hopgraph.graphs import every_context

    ctx = build_context(
        base_url, model, prompts, [*(sets or []), f"kb_dir={kb}"], schema=every_context()
    )
    if not Path(ctx.kb_dir).is_dir() and not ctx.chroma_url:
        refuse(f"no knowledge base at {ctx.kb_dir}: build one with hopgraph index FILES --kb DIR")
    security = None
    if http:
        try:
            security = transport_security(host, allowed_host or [], allowed_origin or [], port)
        except ValueError as e:
            refuse(str(e))
    server = build_server(ctx, price=parsed_price(price), per_key_memory=http and not shared_memory)
    if not http:
        server.run("stdio")
        return
    import uvicorn

    app_ = server.streamable_http_app(
        transport_security=security, host=host, session_idle_timeout=session_idle
    )
    limited = CallerLimits(app_, max_sessions_per_key, max_requests_per_key, session_idle)
    uvicorn.run(key_check(limited), host=host, port=port, log_level="warning")
