"""The LangGraph server's own HTTP app (``langgraph.json``'s ``http.app``): no route of its own,
one middleware in front of every route the server has, so that one caller's flood of requests
never refuses another's (``auth.RequestsPerCaller``; the operator sets the limit with
``HOPGRAPH_MAX_REQUESTS_PER_KEY``, 16 by default)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware

from hopgraph.graphs.auth import RequestsPerCaller

app = Starlette(middleware=[Middleware(RequestsPerCaller)])
