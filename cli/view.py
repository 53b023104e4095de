"""``view``: a local, read-only web app over run folders (``presentation/viewer``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hopgraph.cli.app import DataDir, PriceOption, app, console, parsed_price, refuse, within


@app.command()
def view(
    runs: Annotated[
        list[str] | None,
        typer.Argument(help="run folders, or folders holding them (default: runs and demo/runs)"),
    ] = None,
    host: Annotated[
        str, typer.Option(help="address to listen on; off loopback it needs HOPGRAPH_API_KEYS")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(help="the port (0: any free one)", callback=within(0, 65_535))
    ] = 8600,
    price: PriceOption = "",
    data: DataDir = "",
) -> None:
    """Browse runs in a web browser: the run list, a run's questions (sort, filter, search),
    one question's graph, timing waterfall, calls and evidence, and two runs side by side.
    Traces are read when a question is opened."""
    import socket

    import uvicorn

    from hopgraph.graphs.auth import LOOPBACK, api_keys
    from hopgraph.harness.run_folder import RunError
    from hopgraph.presentation.viewer import find_runs
    from hopgraph.presentation.viewer.app import Viewer, build_app

    given = runs or [p for p in ("runs", "demo/runs") if Path(p).is_dir()]
    if not given:
        refuse(
            "no run folders named, and neither runs/ nor demo/runs/ is here: "
            "hopgraph view RUN_DIR ..."
        )
    try:
        found = find_runs([Path(p) for p in given])
    except RunError as e:
        refuse(str(e))
    keys = None
    if host not in LOOPBACK:
        keys = api_keys()
        if not keys:
            refuse(
                f"--host {host} serves runs off this machine: set HOPGRAPH_API_KEYS (comma-"
                "separated) first; a browser opens /?key=KEY once"
            )
    viewer = Viewer([Path(p) for p in given], parsed_price(price))
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)  # before the address is printed: a client that reads it may connect
    except OSError as e:
        refuse(f"cannot listen on {host}:{port}: {e.strerror or e}")
    shown = f"[{host}]" if ":" in host else host
    console.print(
        f"hopgraph view: {len(found)} run(s) at http://{shown}:{sock.getsockname()[1]}/"
        + ("  (open /?key=KEY once)" if keys else ""),
        markup=False,
    )
    server = uvicorn.Server(uvicorn.Config(build_app(viewer, host, keys), log_level="warning"))
    server.run(sockets=[sock])
