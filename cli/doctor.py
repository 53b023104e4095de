"""``doctor``: what an endpoint supports, and what each method needs of it."""

from __future__ import annotations

from rich.table import Table

from hopgraph.cli.app import (
    BaseUrl,
    ModelName,
    Sets,
    app,
    build_context,
    console,
)
from hopgraph.cli.progress import Quiet, Steps
from hopgraph.graphs import endpoint_needs, every_context


@app.command()
def doctor(
    base_url: BaseUrl = "", model: ModelName = "", sets: Sets = None, quiet: Quiet = False
) -> None:
    """Probe an endpoint (default: the embedded server) and print what it supports."""
    from hopgraph.graphs.mabdqa import images_per_call
    from hopgraph.models import chat_model, vlm_model
    from hopgraph.models.doctor import diagnose, diagnose_vlm, method_support

    ctx = build_context(base_url, model, sets=sets, schema=every_context())
    with Steps("doctor", quiet=quiet, unit="probes done") as steps:
        probed = [0]

        def probing(name: str) -> None:
            steps.step(probed[0], f"probing {name}")
            probed[0] += 1

        probing("the endpoint")  # the embedded server may take a minute to start
        rows = diagnose(
            chat_model(ctx), embedded=not ctx.base_url, vlm=bool(ctx.vlm_model), on_probe=probing
        )
        vlm = vlm_model(ctx)
        if vlm is not None:  # images go to the VLM: probe it with as many as one call sends
            probing("the VLM")
            rows += diagnose_vlm(vlm, images_per_call(ctx))
    table = Table(title=f"hopgraph doctor: {ctx.model}")
    for col in ("capability", "supported", "detail"):
        table.add_column(col)
    for row in rows:
        table.add_row(row.capability, "yes" if row.ok else "no", row.detail)
    console.print(table)
    methods = Table(title="what each method needs of it")
    for col in ("method", "runs here", "missing"):
        methods.add_column(col)
    for support in method_support(rows, endpoint_needs()):
        methods.add_row(*support)
    console.print(methods)
