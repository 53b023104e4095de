"""Who may call hopgraph's served graphs (``langgraph.json`` names this ``auth``): a client
sends one of the operator's API keys in ``x-api-key`` (or ``Authorization: Bearer``), and
sees only the threads and runs it made. The keys are the operator's setting,
``HOPGRAPH_API_KEYS`` (comma-separated); ``HOPGRAPH_AUTH=off`` turns the check off, for local
development only. With neither set, every request is refused."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import uuid
from collections.abc import Mapping
from typing import Any

from langgraph_sdk import Auth

auth = Auth()


def api_keys() -> list[str]:
    return [k.strip() for k in os.environ.get("HOPGRAPH_API_KEYS", "").split(",") if k.strip()]


LOOPBACK = ("127.0.0.1", "localhost", "::1")
"""This machine's names: a server listening only there trusts its clients without a key (and
refuses a request naming another Host: DNS rebinding)."""


def as_host(name: str) -> str:
    """``name`` as a Host header writes it (an IPv6 address in brackets)."""
    return f"[{name}]" if ":" in name else name


def sent_key(headers: dict) -> str:
    """The key a request carries: ``x-api-key``, else ``Authorization: Bearer`` ("": none)."""

    def header(name: bytes) -> str:
        value = headers.get(name) or headers.get(name.decode()) or b""
        return value.decode() if isinstance(value, bytes) else str(value)

    bearer = header(b"authorization")
    return header(b"x-api-key") or (bearer[7:] if bearer.lower().startswith("bearer ") else "")


def refusal(headers: dict) -> str | None:
    """Why a request with these headers is refused (None: it carries a valid key). Shared by
    the LangGraph server and ``hopgraph mcp --http``."""
    if os.environ.get("HOPGRAPH_AUTH", "").strip().lower() == "off":
        return None
    keys, given = api_keys(), sent_key(headers)
    if not keys:
        return (
            "this server has no API key configured (HOPGRAPH_API_KEYS); it refuses "
            "every request until its operator sets one"
        )
    if not valid_key(given, keys):
        return "a valid x-api-key is needed"
    return None


def valid_key(given: str, keys: list[str]) -> bool:
    """Whether ``given`` is one of ``keys`` (compared in constant time)."""
    return bool(given) and any(hmac.compare_digest(given, k) for k in keys)


def key_check(inner, why):  # noqa: ANN001, ANN201 - ASGI apps; why(headers, scope) -> str | None
    """ASGI middleware: a request that ``why`` refuses (it says why; None lets it in) gets 401
    with the reason, as the LangGraph server answers it (``hopgraph mcp --http``, ``view``)."""

    async def app(scope, receive, send):  # noqa: ANN001, ANN202
        if scope["type"] != "http":
            return await inner(scope, receive, send)
        headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
        reason = why(headers, scope)
        if reason is None:
            return await inner(scope, receive, send)
        await send_json(send, 401, {"detail": reason})

    return app


async def send_json(send, status: int, body: object, headers: tuple = ()) -> None:  # noqa: ANN001
    """An ASGI answer of ``status`` with ``body`` as JSON (and any ``headers`` beside it): how
    each guard in front of a served app refuses a request."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


def identity(headers: dict) -> str:
    """A caller's identity: a hash of the key it sent (the key itself is never kept)."""
    if os.environ.get("HOPGRAPH_AUTH", "").strip().lower() == "off":
        return "local-development"
    return "key-" + hashlib.sha256(sent_key(headers).encode()).hexdigest()[:16]


def caller(headers: dict, scope: dict) -> str:
    """Who a request counts against in a per-caller limit: its key's ``identity`` where keys
    are in force, else the client's address."""
    if os.environ.get("HOPGRAPH_AUTH", "").strip().lower() != "off" and api_keys():
        return identity(headers)
    return "address-" + str((scope.get("client") or ("?",))[0])


REQUESTS_ENV = "HOPGRAPH_MAX_REQUESTS_PER_KEY"
"""The operator's limit on one caller's requests in flight on the LangGraph server."""


class RequestsPerCaller:
    """ASGI middleware in front of every route of the LangGraph server (``webapp.app``): one
    caller (``caller``) may have ``limit`` requests in flight, a stream counting until it ends;
    past it, 429 naming the limit, while every other caller is served as before. Each answer
    says the limit (``x-hopgraph-requests-per-key``)."""

    def __init__(self, app, limit: int = 0) -> None:  # noqa: ANN001 - an ASGI app
        self.app = app
        self.limit = limit or int(os.environ.get(REQUESTS_ENV, "") or 16)
        self.in_flight: dict[str, int] = {}

    async def __call__(self, scope, receive, send) -> None:  # noqa: ANN001
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
        who = caller(headers, scope)
        said = (b"x-hopgraph-requests-per-key", str(self.limit).encode())
        if self.in_flight.get(who, 0) >= self.limit:
            why = (
                f"this caller has {self.limit} requests in flight, this server's limit per "
                f"caller ({REQUESTS_ENV}): wait for one to end"
            )
            return await send_json(send, 429, {"detail": why}, (said,))

        async def said_too(message: dict) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*(message.get("headers") or []), said]}
            await send(message)

        self.in_flight[who] = self.in_flight.get(who, 0) + 1
        try:
            await self.app(scope, receive, said_too)
        finally:
            self.in_flight[who] -= 1
            if not self.in_flight[who]:
                del self.in_flight[who]


@auth.authenticate
async def authenticate(headers: dict) -> Auth.types.MinimalUserDict:
    """The client's identity, once ``refusal`` lets its request through."""
    why = refusal(headers)
    if why is not None:
        raise Auth.exceptions.HTTPException(status_code=401, detail=why)
    return {"identity": identity(headers)}


def owned(ctx: Auth.types.AuthContext, value: Mapping[str, Any]) -> dict:
    """A thread belongs to the key that made it; reads, runs, updates and searches see only
    the caller's own."""
    if isinstance(value, dict):  # in place: the server keeps the dict it passed in
        if value.get("metadata") is None:
            value["metadata"] = {}
        value["metadata"]["owner"] = ctx.user.identity
    return {"owner": ctx.user.identity}


THREADS_ENV = "HOPGRAPH_MAX_THREADS_PER_KEY"
"""The operator's limit on the threads one key keeps on the LangGraph server."""


class ThreadsPerCaller:
    """The threads each caller (its key's ``identity``) keeps on the LangGraph server: a thread
    it makes past ``limit`` is refused with 429, so one key's flood of threads (each a record
    the server holds until it is deleted: ``langgraph dev``'s in-memory runtime sweeps no TTL)
    never fills the server for the others. Counted in the server's own thread store (the
    threads its ``owner`` metadata names), never in this process: ``langgraph dev`` keeps its
    threads across a restart in ``.langgraph_api/`` and ``langgraph up`` in Postgres, so a
    count held here began at 0 again on each start, and missed the threads a TTL sweep or a
    second replica removed or made. Makes in flight at once are counted only once stored, so
    a key may pass its limit by its requests in flight (``HOPGRAPH_MAX_REQUESTS_PER_KEY``). A
    stateless run's thread is the server's own, gone when the run ends, and is not counted."""

    def __init__(self, limit: int = 0) -> None:
        self.limit = limit or int(os.environ.get(THREADS_ENV, "") or 1000)

    async def make(self, who: str, thread_id: object) -> None:
        """``who`` makes ``thread_id`` (one the store holds already counts nothing)."""
        from langgraph_runtime.database import connect
        from langgraph_runtime.ops import Threads

        if thread_id is None:
            return
        async with connect() as conn:
            if await _stored(conn, Threads, thread_id):
                return
            kept = await Threads.count(conn, metadata={"owner": who})
        if kept >= self.limit:
            raise Auth.exceptions.HTTPException(
                status_code=429,
                detail=f"this key keeps {self.limit} threads, this server's limit per key "
                f"({THREADS_ENV}): delete one it no longer needs",
            )


async def _stored(conn: object, threads: Any, thread_id: object) -> bool:
    """Whether the server's store holds ``thread_id`` (as the caller may read it)."""
    from starlette.exceptions import HTTPException

    try:
        async for _ in await threads.get(conn, thread_id):
            return True
    except HTTPException as e:
        if e.status_code != 404:
            raise
    return False


THREADS = ThreadsPerCaller()


@auth.on.threads
async def own_threads(ctx: Auth.types.AuthContext, value: dict) -> dict:
    """Every thread action: the caller's own threads only (``owned``)."""
    return owned(ctx, value)


@auth.on.threads.create
async def made_threads(ctx: Auth.types.AuthContext, value: Auth.types.ThreadsCreate) -> dict:
    """A thread the caller makes is its own, within its count (``THREADS``)."""
    await THREADS.make(ctx.user.identity, value.get("thread_id"))
    return owned(ctx, value)


SYSTEM_ASSISTANTS = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
"""The namespace of the assistant LangGraph's server makes for each graph of langgraph.json
(``uuid5(it, graph name)``, ``langgraph_api.graph.NAMESPACE_GRAPH``)."""


def context_refusal(assistant_id: object, context: object) -> str | None:
    """Why a run's ``context`` is refused for the graph its assistant runs (None: it is not):
    a field that graph does not have (another method's knob, named as ``--set`` names it), an
    operator's field, a mistyped value. LangGraph's server would drop a field its schema lacks
    without a word; an assistant a client made itself is left to the graph's own check."""
    from hopgraph.graphs import GRAPHS, context_schema

    if not isinstance(context, dict) or not context:
        return None
    by_id = {str(uuid.uuid5(SYSTEM_ASSISTANTS, name)): name for name in GRAPHS}
    agent = by_id.get(str(assistant_id)) or (assistant_id if assistant_id in GRAPHS else None)
    if agent is None:
        return None
    try:
        context_schema(str(agent)).refuse(context)
    except ValueError as e:
        return str(e)
    return None


@auth.on.threads.create_run
async def checked_runs(ctx: Auth.types.AuthContext, value: Auth.types.RunsCreate) -> dict:
    """A run in the caller's own thread (as ``own_threads``; one that makes its thread counts
    it, as ``made_threads``), its context refused before any work where it names what its
    graph does not take."""
    why = context_refusal(value.get("assistant_id"), (value.get("kwargs") or {}).get("context"))
    if why is not None:
        raise Auth.exceptions.HTTPException(status_code=422, detail=why)
    if value.get("if_not_exists") == "create":  # a run that makes its thread
        await THREADS.make(ctx.user.identity, value.get("thread_id"))
    return owned(ctx, value)


@auth.on.store
async def no_store(ctx: Auth.types.AuthContext, value: dict) -> bool:
    """The graphs keep no state in LangGraph's store; clients get no use of it."""
    return False


@auth.on.crons
async def no_crons(ctx: Auth.types.AuthContext, value: dict) -> bool:
    """No scheduled runs for clients: each run is one request its key answers for."""
    return False
