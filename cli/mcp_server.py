"""The MCP server ``hopgraph mcp`` serves (the official ``mcp`` SDK): the tools, each a thin
call into the library with the Context a caller may have (``config.for_client``), our errors
turned into MCP tool errors with the message the CLI gives; and the API-key check in front of
its HTTP transport. Loaded only by the command, so the CLI starts without the SDK."""

import logging
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, get_type_hints

import anyio.from_thread
import pydantic
from mcp import types
from mcp.server.mcpserver import Context as Call
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPDeprecationWarning

from hopgraph.cli.app import run_endpoint
from hopgraph.config import Context, for_client, knobs_of
from hopgraph.graphs import GRAPHS, load_graph, recursion_limit, spec_for
from hopgraph.graphs.auth import LOOPBACK, as_host, caller, identity, refusal, send_json
from hopgraph.graphs.auth import key_check as auth_check
from hopgraph.graphs.polarmem import ingest_text, polar_memory, recall
from hopgraph.graphs.shared import output_of
from hopgraph.harness.cost import Price, cost_of
from hopgraph.harness.run_folder import EventCounts
from hopgraph.memory.kb import KnowledgeBaseError
from hopgraph.models.errors import HopgraphModelError, first_line
from hopgraph.models.events import question_spend
from hopgraph.prompts import PromptError
from hopgraph.redaction import redacted
from hopgraph.settings.polarmem import PolarMemSettings
from hopgraph.tools.grail.tool import grail_search
from hopgraph.tools.retrieval import knowledge_base, search

ASK = (
    "Answer a question from the knowledge base with one of hopgraph's multi-hop methods: "
    "{methods}. Returns the answer, the evidence it cites (id, title, source, page) and what "
    "the call cost (LLM calls, tokens)."
)
KB_SEARCH = (
    "Search the knowledge base by meaning: the k passages, table rows, images and PDF pages "
    "closest to the query, optionally only from the named sources (see kb_sources). No LLM call."
)
GRAIL_SEARCH = (
    "Search for the evidence still missing: given the ids of evidence already held, the query "
    "embedding is steered away from what they cover (GRAIL), and the k best items not held are "
    "returned. No LLM call."
)
KB_SOURCES = "List the files the knowledge base was built from, with their items per modality."
RECALL = (
    "Recall memories (PolarMem) for a request in words; state exclusions plainly ('photos of "
    "dogs but no cars'). Each memory comes with a fact check: what it is verified to show, and "
    "to lack."
)
INGEST = (
    "Store a text in memory (PolarMem): its entities are read with what the text asserts present "
    "or absent. Optionally list things you assert present or absent yourself."
)
FORGET = "Forget memories by id: they are removed and never stored again."


log = logging.getLogger(__name__)

FAILURES = (ValueError, KnowledgeBaseError, HopgraphModelError, PromptError, OSError)


def guarded(fn):  # noqa: ANN001, ANN201 - a tool body
    """Our errors become MCP tool errors with the message the CLI gives; any other (a bug of
    ours) one naming its type and first line, logged whole on the server, never a bare
    "Error executing tool"."""

    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ToolError:
            raise
        except FAILURES as e:
            raise ToolError(redacted(str(e))) from None
        except Exception as e:
            log.exception("a tool failed")
            raise ToolError(
                f"internal error ({type(e).__name__}: {redacted(first_line(e))}); the server's "
                "log has the details"
            ) from None

    return run


def cited(evidence: Sequence[Mapping[str, Any]], text: bool = False) -> list[dict[str, Any]]:
    """Evidence as a caller reads it: where it is from, not the KB's internals."""
    keys = ("id", "modality", "title", "source", "page", "score", *(("text",) if text else ()))
    return [{k: e[k] for k in keys if e.get(k) not in (None, "")} for e in evidence]


LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class ClientLog:
    """What a client is told while a tool works: log messages (``notifications/message``) at or
    above the level it set with ``logging/setLevel`` (protocol versions up to 2025-11-25; info
    until it sets one; from 2026-07-28 a client opts in per request and the SDK filters), and
    progress notifications where its request asked for them (a progress token)."""

    KEPT = 10_000  # connections whose level is remembered, the oldest forgotten first

    def __init__(self) -> None:
        self.levels: dict[str, types.LoggingLevel] = {}

    @staticmethod
    def connection(ctx: Any) -> str:
        """A request's connection: its HTTP session (``mcp-session-id``), else the one stdio."""
        headers = getattr(ctx.request, "headers", None)
        return (headers.get("mcp-session-id") if headers is not None else None) or "stdio"

    async def set_level(self, ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        self.levels.pop(self.connection(ctx), None)
        self.levels[self.connection(ctx)] = params.level
        while len(self.levels) > self.KEPT:
            del self.levels[next(iter(self.levels))]
        return types.EmptyResult()

    def tell(
        self, call: Call, message: str, *, level: types.LoggingLevel = "info", step: int = 0
    ) -> None:
        """From a tool's worker thread: ``message`` as a log line, and as progress ``step``."""
        session = call.request_context.session
        wanted = self.levels.get(self.connection(call.request_context), "info")

        async def send() -> None:
            if step:
                await call.report_progress(step, None, message)
            if LEVELS.index(level) >= LEVELS.index(wanted):
                await session.send_log_message(
                    level=level, data=message, logger="hopgraph", related_request_id=call.request_id
                )

        anyio.from_thread.run(send)


class Operator:
    """What the server's operator set: the Context every call starts from, the price, whether
    each caller's PolarMem is a folder of its own (over HTTP, unless ``--shared-memory``); and
    the model endpoint, checked once, by the first call that needs a model (a client that only
    searches never waits for the embedded server to start)."""

    def __init__(self, ctx: Context, price: Price | None, per_key_memory: bool):
        self.ctx, self.price, self.per_key_memory = ctx, price, per_key_memory
        self.log = ClientLog()
        self._endpoint = ""
        self._lock = threading.Lock()

    def endpoint(self) -> str:
        from hopgraph.harness.runner import preflight

        with self._lock:
            if not self._endpoint:
                url = run_endpoint(self.ctx)
                preflight(self.ctx.replace(base_url=url))
                self._endpoint = url
        return self._endpoint

    def caller_ctx(self, call: Call, given: dict[str, Any] | None = None) -> Context:
        """The Context one caller's request runs with: the operator's, the caller's choices
        within its limits, and the memory the caller's memory tools write (its own over HTTP,
        a folder per API key), the only one its ``ask`` may read (``polar_serve``). The
        operator's own memory is a caller's only over stdio or with ``--shared-memory``."""
        ctx = self.ctx.replace(base_url=self.endpoint(), polar_serve=True)
        if self.per_key_memory:
            who = identity(dict(call.headers or {}))  # the key's hash, as threads are owned
            home = knobs_of(self.ctx, PolarMemSettings).polar_dir
            ctx = ctx.replace(polar_dir=str(Path(home) / who))
        return for_client(ctx, given or {})

    def answer(
        self, call: Call, question: str, method: str, doc: str, given: dict
    ) -> dict[str, Any]:
        """One question through a graph: the answer, the evidence it cites, what it cost; the
        client told of each node as it ends (a log line and a progress step)."""
        ctx = self.caller_ctx(call, given)
        if not question.strip():
            raise ValueError("the question is empty")
        graph = load_graph(method)
        payload = {"id": "mcp", "question": question, **({"doc": doc} if doc else {})}
        counts, final, steps = EventCounts(), {}, 0
        config = {
            "recursion_limit": recursion_limit(method, ctx),
            "max_concurrency": ctx.max_concurrency,
        }
        with question_spend():  # the caller's max_question_tokens counts this question
            for mode, chunk in graph.stream(
                payload, config, context=ctx, stream_mode=["custom", "values", "updates"]
            ):
                if mode == "custom":
                    counts.add(chunk)
                elif mode == "updates":
                    for node in chunk:
                        steps += 1
                        calls = counts.stats().get("llm_calls", 0)
                        self.log.tell(
                            call, f"{method}: {node} done ({calls} LLM calls so far)", step=steps
                        )
                else:
                    final = chunk
        out = output_of(final)
        evidence = {e["id"]: e for e in out.get("evidence", [])}
        stats = counts.stats()
        return {
            "answer": out.get("answer", ""),
            "response": out.get("response", ""),
            "evidence": cited([evidence[i] for i in out.get("citations", []) if i in evidence]),
            "method": method,
            "cost": cost_of(stats, self.price),
            **({"budget_stop": True} if stats.get("budget_stops") else {}),
        }

    def sources(self) -> list[dict[str, Any]]:
        kb = knowledge_base(self.ctx)
        if kb.registry is None:
            raise ValueError(
                "this knowledge base keeps no source registry (a Chroma server needs registry_url)"
            )
        return [
            {
                "path": s.path,
                "format": s.format,
                "bytes": s.size,
                "sha256": s.sha256,
                "items": s.counts,
                "unfinished": bool(s.pending),
            }
            for s in kb.registry.sources()
        ]


def settings_model() -> type[pydantic.BaseModel]:
    """The knobs a caller may set: every built-in method's and the shared ones, not the
    operator's, each optional."""
    from hopgraph.graphs import every_context

    every = every_context()
    hints = get_type_hints(every)
    fields: dict[str, Any] = {
        n: (t | None, None) for n, t in hints.items() if n not in every.operator_fields()
    }
    return pydantic.create_model(
        "Settings", __config__=pydantic.ConfigDict(extra="forbid"), **fields
    )


def build_server(
    operator: Context, *, price: Price | None = None, per_key_memory: bool = False
) -> MCPServer:
    """The MCP server over ``operator``'s Context."""
    server = MCPServer(
        "hopgraph",
        log_level="WARNING",
        instructions="Multi-hop question answering over the operator's knowledge base, and a "
        "memory that keeps what is verified present and verified absent.",
    )
    op = Operator(operator, price, per_key_memory)
    # logging/setLevel left the 2026-07-28 revision; clients of the earlier ones still send it,
    # and the SDK's note says to serve it through the low-level server
    server._lowlevel_server.add_request_handler(  # noqa: SLF001
        "logging/setLevel", types.SetLevelRequestParams, op.log.set_level
    )
    warnings.filterwarnings("ignore", "The logging capability", MCPDeprecationWarning)
    add_ask(server, op)
    add_kb_tools(server, op)
    add_memory_tools(server, op)
    return server


def add_ask(server: MCPServer, op: Operator) -> None:
    Method = Literal[tuple(GRAPHS)]  # type: ignore[valid-type]  # noqa: N806  # the built-ins
    Settings = settings_model()  # noqa: N806

    described = ", ".join(
        f"{name} ({spec.description})" if spec else name
        for name, spec in ((name, spec_for(name)) for name in GRAPHS)
    )

    @server.tool(description=ASK.format(methods=described))
    def ask(
        question: Annotated[str, pydantic.Field(description="the question")],
        call: Call,
        method: Annotated[Method, pydantic.Field(description="which method answers")] = "rag",  # type: ignore[valid-type]
        doc: Annotated[str, pydantic.Field(description="mabdqa: the PDF's file name")] = "",
        settings: Annotated[
            Settings | None,  # type: ignore[valid-type]  # made at start: every method's knobs
            pydantic.Field(description="the method's knobs, within the operator's limits"),
        ] = None,
    ) -> dict[str, Any]:
        given: dict[str, Any] = (
            settings.model_dump(exclude_none=True) if settings is not None else {}
        )
        return guarded(op.answer)(call, question, method, doc, given)


def add_kb_tools(server: MCPServer, op: Operator) -> None:
    @server.tool(description=KB_SEARCH)
    def kb_search(
        query: Annotated[str, pydantic.Field(description="what to find, in words")],
        k: Annotated[int, pydantic.Field(ge=1, le=50)] = 5,
        sources: Annotated[
            list[str] | None, pydantic.Field(description="only items of these source paths")
        ] = None,
    ) -> list[dict[str, Any]]:
        def run() -> list[dict[str, Any]]:
            if not query.strip():
                raise ValueError("the query is empty")
            return cited(search(query, op.ctx, k=k, sources=sources or None), text=True)

        return guarded(run)()

    @server.tool(name="grail_search", description=GRAIL_SEARCH)
    def steered(
        query: Annotated[str, pydantic.Field(description="the question or what is missing")],
        held: Annotated[list[str], pydantic.Field(description="ids of evidence already held")],
        k: Annotated[int, pydantic.Field(ge=1, le=50)] = 5,
        mode: Literal["query", "additive", "gap-fixed", "gap", "hybrid"] = "gap-fixed",
    ) -> list[dict[str, Any]]:
        return guarded(lambda: cited(grail_search(query, held, k, mode, op.ctx), text=True))()

    @server.tool(description=KB_SOURCES)
    def kb_sources() -> list[dict[str, Any]]:
        return guarded(op.sources)()


def within(text: str, what: str, ctx: Context) -> str:
    """``text`` from a caller, refused where it is longer than the operator's
    ``limit_memory_chars`` (it would go to the model whole)."""
    if len(text) > ctx.limit_memory_chars:
        raise ValueError(
            f"{what} is {len(text):,} characters, over this server's limit of "
            f"{ctx.limit_memory_chars:,} (limit_memory_chars)"
        )
    return text


def add_memory_tools(server: MCPServer, op: Operator) -> None:
    @server.tool(description=RECALL)
    def memory_recall(
        query: Annotated[str, pydantic.Field(description="the request, in words")],
        call: Call,
        k: Annotated[int, pydantic.Field(ge=1, le=50)] = 5,
    ) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            ctx = op.caller_ctx(call)
            got = recall(within(query, "the request", ctx), ctx, k=k)
            note = {"note": got.note} if got.note else {}
            return {
                "memories": [r.evidence() for r in got.items],
                "ids": [r.id for r in got.items],
                "wanted": got.positive,
                "excluded": got.negative,
                **note,
            }

        return guarded(run)()

    @server.tool(description=INGEST)
    def memory_ingest(
        text: Annotated[str, pydantic.Field(description="the text to remember")],
        call: Call,
        source: Annotated[str, pydantic.Field(max_length=1000)] = "",
        present: Annotated[list[str], pydantic.Field(max_length=100)] = [],  # noqa: B006
        absent: Annotated[list[str], pydantic.Field(max_length=100)] = [],  # noqa: B006
    ) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            ctx = op.caller_ctx(call)
            within("\n".join([text, source, *present, *absent]), "the text given", ctx)
            report = ingest_text(text, ctx, source=source, present=present, absent=absent)
            return dict(vars(report))

        return guarded(run)()

    @server.tool(description=FORGET)
    def memory_forget(
        ids: Annotated[list[str], pydantic.Field(description="memory ids, as recall gives")],
        call: Call,
    ) -> dict[str, Any]:
        return guarded(lambda: {"forgotten": polar_memory(op.caller_ctx(call)).forget(ids)})()


WILDCARD = ("0.0.0.0", "::", "")


def transport_security(host: str, allowed: list[str], origins: list[str], port: int):  # noqa: ANN201
    """The SDK's DNS-rebinding guard, kept on: a request's Host must be loopback, the address
    listened on, or one the operator allows, each bare or with the port listened on (``name``
    takes that port, ``name:port`` the one it names), matched whole: the SDK's ``name:*``
    matches by prefix, which let ``127.0.0.1:PORT@evil.com`` and ``localhost:evil`` in. Its
    Origin, when sent, a loopback page or one the operator allows. Listening on every address
    with no name allowed is refused: no client elsewhere could be let in."""
    from mcp.server.transport_security import TransportSecuritySettings

    if host in WILDCARD and not allowed:
        raise ValueError(
            f"--host {host or '(empty)'} listens on every address, but a request is let in "
            "only by a name this server's operator allows (the guard against DNS rebinding): add "
            "--allowed-host NAME for each name or address clients use (e.g. --allowed-host "
            "10.0.0.5 --allowed-host mcp.example.org)"
        )
    loopback = [as_host(n) for n in LOOPBACK]
    names = [*loopback, *([] if host in WILDCARD else [as_host(host)])]
    hosts = [f"{n}:{port}" for n in names] + names
    for name in allowed:
        if not name.strip() or any(c in name for c in "/ @"):
            raise ValueError(f"--allowed-host {name!r} is not a host name or address")
        hosts += [name] if name.rsplit(":", 1)[-1].isdigit() else [name, f"{name}:{port}"]
    for origin in origins:
        if not origin.startswith(("http://", "https://")):
            raise ValueError(f"--allowed-origin {origin!r} is not http(s)://host[:port]")
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{n}:*" for n in loopback] + [o.rstrip("/") for o in origins],
    )


def key_check(inner):  # noqa: ANN001, ANN201 - ASGI apps
    """ASGI middleware: a request without one of ``HOPGRAPH_API_KEYS`` (``x-api-key`` or
    ``Authorization: Bearer``) gets 401, as the LangGraph server answers it."""
    return auth_check(inner, lambda headers, scope: refusal(headers))


SESSION = "mcp-session-id"


class CallerLimits:
    """ASGI middleware in front of the MCP app: what one caller may hold, so that one greedy
    caller never refuses another. A caller is its API key (``identity``), or its client
    address where keys are off. Each may hold ``sessions`` open sessions and ``requests``
    requests in flight; past either it gets 429 naming the limit, and every other caller is
    served as before. A session is open from the response that gave its id until it is ended
    (``DELETE``), answered 404 (the SDK forgot it), or left with no request for ``idle_s``
    seconds, the idle time the SDK is given too, so both reap it alike."""

    def __init__(self, inner, sessions: int, requests: int, idle_s: float) -> None:  # noqa: ANN001
        self.inner, self.sessions, self.requests, self.idle_s = inner, sessions, requests, idle_s
        self.open: dict[str, dict[str, float]] = {}  # caller -> session id -> last request end
        self.busy: dict[str, int] = {}  # session id -> requests in flight
        self.in_flight: dict[str, int] = {}  # caller -> requests in flight
        self.opening: dict[str, int] = {}  # caller -> requests in flight that may open a session

    def _reap(self, now: float) -> None:
        for sessions in self.open.values():
            for sid in [
                s for s, t in sessions.items() if not self.busy.get(s) and now - t >= self.idle_s
            ]:
                del sessions[sid]

    def refusal(self, who: str, sid: str | None) -> str | None:
        if self.in_flight.get(who, 0) >= self.requests:
            return (
                f"this caller has {self.requests} requests in flight, this server's limit "
                "per caller (--max-requests-per-key): wait for one to end"
            )
        held = len(self.open.setdefault(who, {})) + self.opening.get(who, 0)
        if sid is None and held >= self.sessions:
            return (
                f"this caller has {held} open sessions, this server's limit per caller "
                f"(--max-sessions-per-key): end one (DELETE with its {SESSION}) or leave "
                f"one idle for {self.idle_s:g} s"
            )
        return None

    async def __call__(self, scope, receive, send) -> None:  # noqa: ANN001
        if scope["type"] != "http":
            return await self.inner(scope, receive, send)
        headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
        who, sid = caller(headers, scope), headers.get(SESSION)
        self._reap(time.monotonic())
        why = self.refusal(who, sid)
        if why is not None:
            error = {"code": -32000, "message": why}
            return await send_json(send, 429, {"jsonrpc": "2.0", "id": None, "error": error})
        answer: dict[str, Any] = {}

        async def watched(message: dict) -> None:
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
                given = dict(message.get("headers") or [])
                answer["sid"] = (given.get(SESSION.encode()) or b"").decode()
            await send(message)

        self.in_flight[who] = self.in_flight.get(who, 0) + 1
        if sid:
            self.busy[sid] = self.busy.get(sid, 0) + 1
        else:
            self.opening[who] = self.opening.get(who, 0) + 1
        try:
            await self.inner(scope, receive, watched)
        finally:
            self._ended(who, sid, scope.get("method", ""), answer)

    def _ended(self, who: str, sid: str | None, method: str, answer: dict[str, Any]) -> None:
        self.in_flight[who] -= 1
        status, held = answer.get("status", 500), self.open.setdefault(who, {})
        now = time.monotonic()
        if sid:
            self.busy[sid] -= 1
            if not self.busy[sid]:
                del self.busy[sid]
            if status == 404 or (method == "DELETE" and status < 400):
                held.pop(sid, None)
            elif sid in held:
                held[sid] = now
        else:
            self.opening[who] -= 1
            if status < 400 and answer.get("sid"):
                held[answer["sid"]] = now
