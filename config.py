"""The Context every hopgraph graph runs with (LangGraph ``context_schema``): what every graph
shares (endpoint, models, folders, retrieval depth, the limits on a request). Each method's knobs
are a settings class of its own, in the lowest layer that reads them (``tools/mmapg.py:
MMAPGSettings``; GRAIL's and PolarMem's are parts any graph may include); ``context_class`` joins
Context and a graph's settings into that graph's schema, so LangGraph Studio shows a graph only
its own fields, and below the graphs ``knobs_of`` reads a knob through the type that declares it
(``make typecheck``). A knob's bounds and owner are its field's metadata (``knob``,
``OPERATOR``, ``SERVING``).

Fields left at their default are filled from ``HOPGRAPH_<FIELD>`` environment variables, the
idiom of langchain-ai's react-agent template; explicit arguments always win.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, Self, TypeVar, cast, get_args, get_origin, get_type_hints

from hopgraph.redaction import redacted

ENV_PREFIX = "HOPGRAPH_"
OPERATOR = {"owner": "operator"}
"""Field metadata of the operator's settings: endpoints, keys, models, folders, caches, timeouts,
concurrency and the limits on a request. A client of a served graph may set only the others,
the method's knobs (``ClientContext``)."""
SERVING = {"owner": "operator", "serving": True}
"""An operator's field that says where and how fast a run is served, not what it answers: a
record may resume with another value (the KB's contents and the prompts' hashes are checked
apart from their paths)."""


def within(
    meta: dict[str, Any], least: float | None = None, ceiling: float | None = None
) -> dict[str, Any]:
    """An operator field's metadata with the range a value given to it must lie in (checked
    when a Context is made, as a knob's ``least`` and ``ceiling``)."""
    return {
        **meta,
        **({"minimum": least} if least is not None else {}),
        **({"maximum": ceiling} if ceiling is not None else {}),
    }


def knob(  # noqa: ANN201
    default: Any,
    *,
    least: float | None = None,
    most: float | None = None,
    ceiling: float | None = None,
    **kw: Any,
):
    """A method's knob: ``least`` and ``ceiling`` are checked when a Context is made; ``most``
    is the served default of the largest value one client request may ask (the operator's
    ``limit_knobs`` overrides it)."""
    pairs = (("minimum", least), ("most", most), ("maximum", ceiling))
    meta = {k: v for k, v in pairs if v is not None}
    return field(default=default, metadata=meta, **kw)


def _default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return str(Path(base) / "hopgraph")


@dataclass(kw_only=True)
class Context:
    """Endpoint, models, paths, retrieval depth and the limits on a request: what every graph
    shares. A method's knobs join it in its graph's Context (``settings/``: ``class
    MMAPGContext(Context, MMAPGSettings, ...)``)."""

    # -- model endpoint ------------------------------------------------------------------
    base_url: str = field(default="", metadata=SERVING)
    """OpenAI-compatible endpoint (vLLM in production). Empty: start the embedded llama.cpp."""
    model: str = field(default="qwen2.5-coder-1.5b", metadata=OPERATOR)
    """Model name served at ``base_url``, or an embedded GGUF name when ``base_url`` is empty."""
    api_key: str = field(default="EMPTY", metadata=SERVING)
    backend: Literal["auto", "vllm", "llamacpp", "openai"] = field(default="auto", metadata=SERVING)
    """Endpoint dialect: auto | vllm | llamacpp | openai (structured output and image support)."""
    vlm_base_url: str = field(default="", metadata=SERVING)
    """Endpoint of a vision-language model for image calls; empty: same as ``base_url``."""
    vlm_model: str = field(default="", metadata=OPERATOR)
    """VLM name; empty means no VLM is configured and image paths fall back to image text."""
    request_timeout: float = field(default=120.0, metadata=within(SERVING, 0.001, 86400.0))
    """Seconds a model request may take (connect: 5 s). A remote endpoint's reply is one read
    covering queueing, prefill and decoding on a loaded batching server: size it for that;
    a timed-out request is not sent again. The embedded server's stream waits this long
    between tokens (10x for the first)."""
    max_concurrency: int = field(default=32, metadata=within(SERVING, 1, 4096))
    """LLM calls one question may have in flight at once, for every independent set: QDRAG's
    reranking, PolarMem's verification wordings, MMAPG's examinations (LangGraph's own
    max_concurrency) and MAB-DQA's batched page judgements. vLLM batches them: at 32, QD-C's
    ~20 rerank calls are one round (depth 4; 6 at 8, benchmarks/bench_agents.py). On the
    embedded llama-server at most its ``slots``, QDRAG's calls on one passage in order from one
    worker (the passage stays in one slot's cache); llama-cpp-python's server answers one at a
    time, so there every call goes one by one, in order (``models.parallel_calls``)."""
    max_retries: int = field(default=2, metadata=within(SERVING, 0, 100))
    """Times a model call is sent again after a connection error, a malformed reply or a 5xx
    (never after a 4xx, nor after a timeout: raise ``request_timeout`` instead); 2 means at
    most 3 attempts."""
    temperature: float = knob(0.0, least=0.0, most=2.0, ceiling=2.0)
    """Sampling temperature, 0..2 as OpenAI-compatible servers take it (0: greedy)."""
    max_tokens: int = field(default=512, metadata=within(OPERATOR, 1, 1 << 20))
    max_image_pixels: int = field(default=1024 * 28 * 28, metadata=within(OPERATOR, 1))
    """Pixel budget an image is resized to before it travels as a data URL (Qwen2.5-VL grid)."""

    # -- embedded server -----------------------------------------------------------------
    engine: Literal["auto", "llama-server", "llama-cpp-python"] = field(
        default="auto", metadata=SERVING
    )
    """The embedded engine: llama.cpp's own llama-server (parallel slots, prefix reuse, server
    timings; built by ``make install``), or llama-cpp-python's server (one request at a
    time); auto: llama-server where it is built (``models.llama_server``)."""
    slots: int = field(default=4, metadata=within(SERVING, 1, 64))
    """llama-server's parallel slots, each with ``n_ctx`` tokens of context: requests decoded
    together (4 beat 8 on 2 cores, issue 104's measurement)."""
    n_ctx: int = field(default=4096, metadata=within(OPERATOR, 256, 1 << 20))
    n_threads: int = field(default=0, metadata=within(SERVING, 0, 1024))
    """llama.cpp generation threads; 0 means all cores but one (see models.embedded)."""
    n_threads_batch: int = field(default=0, metadata=within(SERVING, 0, 1024))
    """llama.cpp prompt-reading threads; 0 means all cores but one (all cores reads prompts
    faster on a machine where nothing else runs)."""
    cache_dir: str = field(default_factory=_default_cache_dir, metadata=SERVING)
    """Where assembled GGUF files and other caches live."""
    response_cache: str = field(default="", metadata=SERVING)
    """A folder where greedy (temperature 0) replies are kept by their exact request and read
    back, so a re-run pays only for the calls that changed (``--cache DIR``); "" keeps none."""

    # -- embedders and paths -------------------------------------------------------------
    text_embedder: str = field(default="all-MiniLM-L6-v2", metadata=OPERATOR)
    image_embedder: str = field(default="openai/clip-vit-base-patch32", metadata=OPERATOR)
    """A CLIP / SigLIP model (local folder or HF-cache id) that puts indexed images and query
    texts in one space; where its weights are absent, images are found by their text. Empty: off."""
    page_embedder: str = field(default="", metadata=OPERATOR)
    """MAB-DQA's page vectors: a ColPali / ColQwen2 model (local folder or HF-cache id) that
    embeds rendered page images (Sec. 3.1); empty: each page's text lines (the CPU default)."""
    embed_batch_size: int = field(default=16, metadata=within(SERVING, 1, 65536))
    """Texts per encoder batch: 16 is fastest for passages on 2 CPU cores (measured)."""
    kb_dir: str = field(default="kb", metadata=SERVING)
    chroma_url: str = field(default="", metadata=SERVING)
    """A Chroma server (http://host:port) for a shared knowledge base; empty: local files."""
    registry_url: str = field(default="", metadata=SERVING)
    """PostgreSQL (postgresql://user@host/db) keeping the source registry of a KB on a Chroma
    server, where every machine that uses the KB reaches it; empty: a local KB keeps its own
    SQLite file, and a server KB has none (its lifecycle commands refuse, naming this)."""
    prompts_dir: str = field(default="", metadata=SERVING)
    """A user folder whose ``.j2`` files override the built-in templates by name."""
    trace_content: bool = field(default=True, metadata=SERVING)
    """Whether an LLM call's trace event keeps the messages sent and the reply (off: role,
    template, settings, tokens and latency only)."""
    trace_text_cap: int = field(default=0, metadata=within(SERVING, 0))
    """Characters of each message and reply an LLM call's trace event keeps (0: whole); a cut
    text ends with a marker saying how much was cut."""

    # -- retrieval common ----------------------------------------------------------------
    top_k: int = knob(5, least=1, most=50)

    max_question_tokens: int = knob(0, least=0)
    """A question's token cap (prompt + completion, 0: none): a method that reaches it starts
    no new step and answers from what it holds (MMAPG from its graph, QDRAG from the contexts
    it retrieved, MAB-DQA from the pages judged), recorded as a ``budget_stop`` event."""

    # -- what one served request may ask for (the operator's) ------------------------------
    image_roots: str = field(default="", metadata=SERVING)
    """Folders (``os.pathsep``-separated) a question's image files may be read from; data URLs
    and http(s) URLs need none. Served: none by default. ``hopgraph run``: the question file's
    folder when empty."""
    limit_question_chars: int = field(default=4000, metadata=within(SERVING, 1))
    limit_memory_chars: int = field(default=20_000, metadata=within(SERVING, 1))
    """The longest text a served client may give PolarMem (``memory_ingest``'s text,
    ``memory_recall``'s request)."""
    limit_images: int = field(default=8, metadata=within(SERVING, 0))
    """Images one question may carry."""
    limit_image_pixels: int = field(default=40_000_000, metadata=within(SERVING, 1))
    """Width x height of any one question image, as sent (before it is resized)."""
    limit_knobs: str = field(default="", metadata=SERVING)
    """The largest value a client may give a costly knob, ``name=max`` comma-separated, where
    it differs from the knob's own served cap (its field's ``most``)."""

    @property
    def is_operator(self) -> bool:
        """Whether the operator built this Context (the CLI, the runner): such a run may read
        any image file and is held to no per-request limit. A graph invoked with a Context it
        did not get this way is treated as a client's."""
        return getattr(self, "_operator", False)

    def as_operator(self) -> Self:
        """This Context, marked as the operator's (not a field: no client can set it)."""
        out = self.replace()
        object.__setattr__(out, "_operator", True)
        return out

    @classmethod
    def operator_fields(cls) -> frozenset[str]:
        """The fields only the operator sets (``OPERATOR`` / ``SERVING`` metadata)."""
        return frozenset(f.name for f in fields(cls) if f.metadata.get("owner") == "operator")

    @classmethod
    def serving_fields(cls) -> frozenset[str]:
        """The fields that say where and how fast a run is served (``SERVING``)."""
        return frozenset(f.name for f in fields(cls) if f.metadata.get("serving"))

    @classmethod
    def operator_class(cls) -> type[Context]:
        """The class an operator builds: a served client's class's own base, else this one."""
        return cls.__dict__.get("_operator_class") or cls

    @classmethod
    def adopt(cls, ctx: Context) -> Self:
        """``ctx`` as this class: each field it has kept, the others at their defaults (a
        graph run with a Context that lacks its method's knobs gets the papers' values);
        still the operator's where ``ctx`` was. A client's class adopts as its operator's."""
        target = cls.operator_class()
        if isinstance(ctx, target):
            return cast(Self, ctx)
        made = ctx.__dict__.setdefault("_adopted", {})  # nodes ask once per call: made once
        if target not in made:
            kept = {f.name: getattr(ctx, f.name) for f in fields(target) if hasattr(ctx, f.name)}
            made[target] = target(**kept)
            if ctx.is_operator:
                object.__setattr__(made[target], "_operator", True)
        return cast(Self, made[target])

    @classmethod
    def refuse(cls, given: dict[str, Any]) -> None:
        """A client's choices, refused where they name an operator field or a field ``cls`` does
        not have, or a value not of its field's type (JSON from a client)."""
        operator = sorted(set(given) & cls.operator_fields())
        if operator:
            raise ValueError(
                f"Context field(s) {', '.join(map(repr, operator))} belong to the operator of "
                "this server and are set by its environment, not by a client"
            )
        hints = get_type_hints(cls)
        for name, value in given.items():
            typ = hints.get(name)
            if typ is None:
                raise ValueError(f"unknown Context field {name!r}{_whose([name])}")
            wanted = (int, float) if typ is float else typ if typ in (int, bool, str) else None
            mistyped = wanted and not isinstance(value, wanted)
            if mistyped or (isinstance(value, bool) and typ in (int, float)):
                raise ValueError(f"Context field {name!r} expects {typ.__name__}, not {value!r}")
            if typ in (int, float):
                bounded(f"Context field {name!r}", value)

    def knob_limits(self) -> dict[str, float]:
        """The largest value a client may give each costly knob of this Context: each knob's
        own cap (``most``), with ``limit_knobs`` applied over them."""
        mine = {f.name for f in fields(self)}
        out = {f.name: float(f.metadata["most"]) for f in fields(self) if "most" in f.metadata}
        for item in filter(None, (p.strip() for p in self.limit_knobs.split(","))):
            name, sep, value = (x.strip() for x in item.partition("="))
            if not sep or name not in mine | KNOWN_FIELDS:
                raise ValueError(f"limit_knobs: {item!r} is not field=max")
            if name in mine:
                out[name] = float(value)
        return out

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _register_knobs(cls)

    def __post_init__(self) -> None:
        hints = get_type_hints(type(self))
        for f in fields(self):
            env = os.environ.get(ENV_PREFIX + f.name.upper())
            if env is not None and getattr(self, f.name) == _default_of(f):
                setattr(self, f.name, coerce(f.name, hints[f.name], env))
            if get_origin(hints[f.name]) is Literal:  # fixed choices: refused once, here
                coerce(f.name, hints[f.name], getattr(self, f.name))
        if not getattr(self, "_client", False):  # a client's: after the operator's limits
            self.check_floors()

    def check_floors(self) -> None:
        """A number that is not finite, or a knob below its floor (``at_least``), is refused
        here, once, not inside a node."""
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, int | float) and not isinstance(value, bool):
                least = f.metadata.get("minimum", -math.inf)
                bounded(
                    f"Context field {f.name!r}",
                    value,
                    least=least,
                    most=f.metadata.get("maximum", math.inf),
                )

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` applied (values may be strings, as from ``--set k=v``); a
        client's class is copied as its operator's base class, which has the same fields."""
        hints = get_type_hints(type(self))
        unknown = sorted(set(changes) - set(hints))
        if unknown:
            raise ValueError(f"unknown Context field(s): {', '.join(unknown)}{_whose(unknown)}")
        typed = {k: coerce(k, hints[k], v) if isinstance(v, str) else v for k, v in changes.items()}
        # the operator's class (a client's refuses operator fields as arguments), still the
        # operator's where this one was
        target = type(self).operator_class()
        out = target(**({f.name: getattr(self, f.name) for f in fields(self)} | typed))
        if self.is_operator:
            object.__setattr__(out, "_operator", True)
        return cast(Self, out)

    def as_dict(self) -> dict[str, Any]:
        """The fields as a record keeps them: the API key masked, every URL and DSN redacted."""
        d = {
            k: redacted(v) if isinstance(v, str) else v for k, v in dataclasses.asdict(self).items()
        }
        if d.get("api_key") not in ("", "EMPTY"):
            d["api_key"] = "***"
        return d


def client_of(cls: type[Context]) -> type[Context]:
    """The class a served graph's context becomes when LangGraph builds it from a client's
    ``context`` dict: the client chooses the method's knobs within the operator's limits;
    every operator field comes from the server's environment (or ``langgraph.json``), so one a
    client names is refused, naming it, before any work. Code that passes a Context itself
    (the CLI, the runner, ``graph.invoke(..., context=MMAPGContext(...))``) is the operator
    and is not checked."""
    made = cls.__dict__.get("_client_class")
    if made is not None:
        return made

    def __init__(self, **given: Any) -> None:  # noqa: N807
        type(self).refuse(given)
        cls.__init__(self, **given)
        within_limits(self, self.knob_limits())
        self.check_floors()
        refuse_gated(self, given)

    made = type(
        f"Client{cls.__name__}",
        (cls,),
        {
            "__init__": __init__,
            "__module__": cls.__module__,
            "_client": True,
            "_operator_class": cls,
            "__doc__": client_of.__doc__,
        },
    )
    setattr(cls, "_client_class", made)  # noqa: B010 - the class's own cache, not a field
    return made


KNOWN_FIELDS: set[str] = {f.name for f in fields(Context)}
"""Every field of every Context class defined so far: a name outside a class but in
here is another method's knob (``--set`` names it for the wrong agent), not a typo."""
_OWNERS: dict[str, str] = {}


def _whose(names: list[str]) -> str:
    """Where unknown names are another method's knobs: whose."""
    owned = [f"{n} is {_OWNERS[n]}'s" for n in names if n in _OWNERS]
    return f" ({'; '.join(owned)}, not this graph's)" if owned else ""


S = TypeVar("S")


def knobs_of(ctx: Context, settings: type[S]) -> S:
    """``ctx`` read as its method's ``settings``, typed: a method's Context inherits each of its
    settings classes (``context_class``), so below the graphs a knob is read where its type
    declares it. A Context without them is a caller's mistake, named."""
    if not isinstance(ctx, settings):
        raise TypeError(
            f"{type(ctx).__name__} has no {settings.__name__} knobs: run this through a graph "
            f"whose Context includes them"
        )
    return ctx


def context_class(name: str, *parts: type, module: str = "") -> type[Context]:
    """A Context class made at run time for a graph whose knobs are ``parts`` (a plugin's, or
    one holding every method's knobs); the built-in methods' are written out in ``settings/``.
    Context's shared fields and theirs, one flat namespace, so ``--set mmapg_max_iterations=3``
    and ``HOPGRAPH_MMAPG_MAX_ITERATIONS`` keep their names."""
    made = type(
        name, (Context, *parts), {"__module__": module or parts[0].__module__, "__qualname__": name}
    )
    return dataclass(kw_only=True)(made)


def _register_knobs(cls: type) -> None:
    """Each knob of ``cls``'s settings bases made known with its owner, so an unknown name
    that is another method's knob is named as such (``_whose``)."""
    for part in cls.__bases__:
        if dataclasses.is_dataclass(part) and not issubclass(part, Context):
            for f in fields(part):
                KNOWN_FIELDS.add(f.name)
                _OWNERS.setdefault(f.name, part.__name__.removesuffix("Settings"))


ClientContext = client_of(Context)
"""The client's class of a graph that has no knobs of its own (rag, direct)."""


def within_limits(ctx: Context, limits: dict[str, float]) -> None:
    """Each costly knob of ``ctx`` within ``0..limit`` (the operator's ``limit_knobs``)."""
    for name, most in limits.items():
        value = getattr(ctx, name)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number and not 0 <= value <= most:
            raise ValueError(
                f"Context field {name!r} must lie in 0..{most:g} on this server, not {value}"
            )


def refuse_gated(ctx: Context, given: dict[str, Any]) -> None:
    """A client's knob that would read something of the operator's (``polar_memory``: the
    memory at ``polar_dir``) is refused unless the operator's field its ``gate`` names is on."""
    for f in fields(ctx):
        gate = f.metadata.get("gate")
        if gate and given.get(f.name) and not getattr(ctx, gate):
            raise ValueError(
                f"Context field {f.name!r} would read what belongs to the operator of this "
                f"server, who has not opened it to clients ({gate})"
            )


def for_client(operator: Context, given: dict[str, Any]) -> Context:
    """The Context a client's request runs with on a server whose operator built ``operator``
    (``hopgraph mcp``): the client's choices refused as ``ClientContext`` refuses them and held
    to the operator's own limits, every other field the operator's; not marked as the
    operator's, so the question's admission holds it to the request limits."""
    target = type(operator).operator_class()
    target.refuse(given)
    out = target(**({f.name: getattr(operator, f.name) for f in fields(operator)} | given))
    within_limits(out, out.knob_limits())
    refuse_gated(out, given)
    return out


def _default_of(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory()  # type: ignore[misc,operator]


INT_RANGE = 2**63
"""A Context integer fits a signed 64-bit one (SQLite, NumPy, the model server's JSON)."""


def bounded(name: str, value: float, *, least: float = -math.inf, most: float = math.inf) -> Any:
    """A number a user or client gave, refused unless finite and within ``least..most`` (an
    integer within 64 bits), naming it: checked before any work, not as an overflow mid-run."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, not {value}")
    if isinstance(value, int) and not -INT_RANGE <= value < INT_RANGE:
        raise ValueError(f"{name} is out of range ({str(value)[:24]}...): at most 64 bits")
    if not least <= value <= most:
        span = f"{_num(least)}..{_num(most)}" if math.isfinite(least + most) else ""
        side = f"at least {_num(least)}" if value < least else f"at most {_num(most)}"
        raise ValueError(
            f"{name} must be {side}{f' (range {span})' if span else ''}, not {_num(value)}"
        )
    return value


def _num(value: float) -> str:
    """A number as a message shows it: whole where it is whole, else every digit it needs
    (2.0000001 is not "2")."""
    if isinstance(value, int) or float(value).is_integer():
        return f"{value:,.0f}".replace(",", "") if abs(value) < 1e15 else f"{value:g}"
    return repr(float(value))


def coerce(name: str, typ: Any, raw: str) -> Any:
    """Parse a string into the field's type, naming the field when it does not fit."""
    if get_origin(typ) is Literal:
        if raw not in get_args(typ):
            allowed = ", ".join(repr(a) for a in get_args(typ))
            raise ValueError(f"Context field {name!r} must be one of {allowed}, not {raw!r}")
        return raw
    try:
        if typ is bool:
            low = raw.strip().lower()
            if low not in {"1", "true", "yes", "on", "0", "false", "no", "off"}:
                raise ValueError(raw)
            return low in {"1", "true", "yes", "on"}
        if typ not in (int, float):
            return raw
        number = typ(raw)
    except ValueError:
        raise ValueError(
            f"Context field {name!r} expects {getattr(typ, '__name__', typ)}, got {raw!r}"
        ) from None
    return bounded(f"Context field {name!r}", number)


def parse_sets(items: list[str] | None) -> dict[str, str]:
    """``["k=v", ...]`` from ``--set`` into a dict, refusing items without '='."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set expects key=value, got {item!r}")
        out[key.strip()] = value
    return out


@dataclass(frozen=True)
class MethodSpec:
    """A method as the rest of hopgraph knows it, declared once beside its code (``SPEC`` in
    ``graphs/M.py``; a part's beside its settings): its knobs, what it needs of an endpoint
    (``hopgraph doctor``), its description (the CLI, MCP's ``ask``), the view that draws its final
    state (``presentation/views.py``) and, for a part a graph includes, what turns its code on
    (the code fingerprint). Everything that lists methods derives from these (``graphs.specs``)."""

    name: str
    description: str
    settings: tuple[type, ...] = ()
    """Its own knobs' settings classes."""
    parts: tuple[MethodSpec, ...] = ()
    """Parts it includes (GRAIL, PolarMem): their knobs join its Context."""
    needs: tuple[str, ...] = ("chat",)
    """The endpoint capabilities every run needs, as ``hopgraph doctor`` names them."""
    image_needs: tuple[str, ...] = ("image input",)
    """Those only questions or pages with images need."""
    view: str = ""
    """The name of the view in ``presentation/views.py`` that draws its final state ("": none)."""
    code: str = ""
    """A part's package or module: its code counts in a fingerprint only when ``switch`` is on."""
    switch: str = ""
    """A part's Context field that turns it on."""

    @property
    def knobs(self) -> tuple[type, ...]:
        """The settings classes its graph's Context holds: its own, then its parts'."""
        return (*self.settings, *(s for p in self.parts for s in p.settings))
