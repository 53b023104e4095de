"""Who may call hopgraph's served graphs (``langgraph.json`` names this ``auth``): a client
sends one of the operator's API keys in ``x-api-key`` (or ``Authorization: Bearer``), and
sees only the threads and runs it made. The keys are the operator's setting,
``HOPGRAPH_API_KEYS`` (comma-separated); ``HOPGRAPH_AUTH=off`` turns the check off, for local
development only. With neither set, every request is refused."""

from __future__ import annotations

import hashlib
import hmac
import os

from langgraph_sdk import Auth

auth = Auth()


def _keys() -> list[str]:
    return [k.strip() for k in os.environ.get("HOPGRAPH_API_KEYS", "").split(",") if k.strip()]


def _given(headers: dict) -> str:
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
    keys, given = _keys(), _given(headers)
    if not keys:
        return (
            "this server has no API key configured (HOPGRAPH_API_KEYS); it refuses "
            "every request until its operator sets one"
        )
    if not given or not any(hmac.compare_digest(given, k) for k in keys):
        return "a valid x-api-key is needed"
    return None


def identity(headers: dict) -> str:
    """A caller's identity: a hash of the key it sent (the key itself is never kept)."""
    if os.environ.get("HOPGRAPH_AUTH", "").strip().lower() == "off":
        return "local-development"
    return "key-" + hashlib.sha256(_given(headers).encode()).hexdigest()[:16]


@auth.authenticate
async def authenticate(headers: dict) -> Auth.types.MinimalUserDict:
    """The client's identity, once ``refusal`` lets its request through."""
    why = refusal(headers)
    if why is not None:
        raise Auth.exceptions.HTTPException(status_code=401, detail=why)
    return {"identity": identity(headers)}


@auth.on.threads
async def own_threads(ctx: Auth.types.AuthContext, value: dict) -> dict:
    """A thread belongs to the key that made it; reads, runs, updates and searches see only
    the caller's own."""
    if isinstance(value, dict):  # in place: the server keeps the dict it passed in
        if value.get("metadata") is None:
            value["metadata"] = {}
        value["metadata"]["owner"] = ctx.user.identity
    return {"owner": ctx.user.identity}


@auth.on.store
async def no_store(ctx: Auth.types.AuthContext, value: dict) -> bool:
    """The graphs keep no state in LangGraph's store; clients get no use of it."""
    return False


@auth.on.crons
async def no_crons(ctx: Auth.types.AuthContext, value: dict) -> bool:
    """No scheduled runs for clients: each run is one request its key answers for."""
    return False
