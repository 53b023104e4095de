"""The one Context every hopgraph graph runs with (LangGraph ``context_schema``).

Fields left at their default are filled from ``HOPGRAPH_<FIELD>`` environment variables, the
idiom of langchain-ai's react-agent template; explicit arguments always win.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

ENV_PREFIX = "HOPGRAPH_"
OPERATOR = {"owner": "operator"}
"""Field metadata of the operator's settings: endpoints, keys, models, folders, caches, timeouts,
concurrency and the limits on a request. A client of a served graph may set only the others,
the method's knobs (``ClientContext``)."""


def at_least(low: int) -> dict[str, int]:
    """Field metadata of a knob with a floor, checked by ``Context`` itself when it is made."""
    return {"minimum": low}


KNOB_LIMITS = (
    "top_k=50,mmapg_max_iterations=20,mmapg_max_candidates=20,qdrag_budget=20,"
    "qdrag_retrieve_k=50,mabdqa_m=50,mabdqa_reentry_m=20,mabdqa_reentries=3,mabdqa_batch=16,"
    "mabdqa_max_aspects=10,mabdqa_top_pages=10,mabdqa_theta_h=50,polar_templates=10,"
    "polar_max_concepts=100,polar_top_k=20"
)
"""Served defaults of ``limit_knobs``: each knob's cap on what one client request may ask."""


def _default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return str(Path(base) / "hopgraph")


@dataclass(kw_only=True)
class Context:
    """Endpoint, models, paths and each method's hyperparameters (papers' defaults)."""

    # -- model endpoint ------------------------------------------------------------------
    base_url: str = field(default="", metadata=OPERATOR)
    """OpenAI-compatible endpoint (vLLM in production). Empty: start the embedded llama.cpp."""
    model: str = field(default="qwen2.5-coder-1.5b", metadata=OPERATOR)
    """Model name served at ``base_url``, or an embedded GGUF name when ``base_url`` is empty."""
    api_key: str = field(default="EMPTY", metadata=OPERATOR)
    backend: Literal["auto", "vllm", "llamacpp", "openai"] = field(
        default="auto", metadata=OPERATOR
    )
    """Endpoint dialect: auto | vllm | llamacpp | openai (structured output and image support)."""
    vlm_base_url: str = field(default="", metadata=OPERATOR)
    """Endpoint of a vision-language model for image calls; empty: same as ``base_url``."""
    vlm_model: str = field(default="", metadata=OPERATOR)
    """VLM name; empty means no VLM is configured and image paths fall back to image text."""
    request_timeout: float = field(default=120.0, metadata=OPERATOR)
    """Seconds a model request may take (connect: 5 s). A remote endpoint's reply is one read
    covering queueing, prefill and decoding on a loaded batching server: size it for that;
    a timed-out request is not sent again. The embedded server's stream waits this long
    between tokens (10x for the first)."""
    max_concurrency: int = field(default=32, metadata=OPERATOR)
    """LLM calls one question may have in flight at once, for every independent set: QDRAG's
    reranking, PolarMem's verification wordings, MMAPG's examinations (LangGraph's own
    max_concurrency) and MAB-DQA's batched page judgements. vLLM batches them: at 32, QD-C's
    ~20 rerank calls are one round (depth 4; 6 at 8, benchmarks/bench_agents.py). The embedded
    server answers one at a time, so QDRAG's reranking and MAB-DQA's judgements go to it one
    by one, in order, which keeps its prompt cache (``models.parallel_calls``)."""
    max_retries: int = field(default=2, metadata=OPERATOR)
    """Times a model call is sent again after a connection error, a malformed reply or a 5xx
    (never after a 4xx, nor after a timeout: raise ``request_timeout`` instead); 2 means at
    most 3 attempts."""
    temperature: float = 0.0
    max_tokens: int = field(default=512, metadata=OPERATOR)
    max_image_pixels: int = field(default=1024 * 28 * 28, metadata=OPERATOR)
    """Pixel budget an image is resized to before it travels as a data URL (Qwen2.5-VL grid)."""

    # -- embedded server -----------------------------------------------------------------
    n_ctx: int = field(default=4096, metadata=OPERATOR)
    n_threads: int = field(default=0, metadata=OPERATOR)
    """llama.cpp generation threads; 0 means all cores but one (see models.embedded)."""
    n_threads_batch: int = field(default=0, metadata=OPERATOR)
    """llama.cpp prompt-reading threads; 0 means all cores but one (all cores reads prompts
    faster on a machine where nothing else runs)."""
    cache_dir: str = field(default_factory=_default_cache_dir, metadata=OPERATOR)
    """Where assembled GGUF files and other caches live."""
    response_cache: str = field(default="", metadata=OPERATOR)
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
    embed_batch_size: int = field(default=16, metadata=OPERATOR)
    """Texts per encoder batch: 16 is fastest for passages on 2 CPU cores (measured)."""
    kb_dir: str = field(default="kb", metadata=OPERATOR)
    chroma_url: str = field(default="", metadata=OPERATOR)
    """A Chroma server (http://host:port) for a shared knowledge base; empty: local files."""
    registry_url: str = field(default="", metadata=OPERATOR)
    """PostgreSQL (postgresql://user@host/db) keeping the source registry of a KB on a Chroma
    server, where every machine that uses the KB reaches it; empty: a local KB keeps its own
    SQLite file, and a server KB has none (its lifecycle commands refuse, naming this)."""
    prompts_dir: str = field(default="", metadata=OPERATOR)
    """A user folder whose ``.j2`` files override the built-in templates by name."""
    trace_content: bool = field(default=True, metadata=OPERATOR)
    """Whether an LLM call's trace event keeps the messages sent and the reply (off: role,
    template, settings, tokens and latency only)."""
    trace_text_cap: int = field(default=0, metadata=OPERATOR)
    """Characters of each message and reply an LLM call's trace event keeps (0: whole); a cut
    text ends with a marker saying how much was cut."""

    # -- retrieval common ----------------------------------------------------------------
    top_k: int = field(default=5, metadata=at_least(1))

    max_question_tokens: int = field(default=0, metadata=at_least(0))
    """A question's token cap (prompt + completion, 0: none): a method that reaches it starts
    no new step and answers from what it holds (MMAPG from its graph, QDRAG from the contexts
    it retrieved, MAB-DQA from the pages judged), recorded as a ``budget_stop`` event."""

    # -- MMAPG (mmapg.txt, Alg. 1) ------------------------------------------------------
    mmapg_max_iterations: int = field(default=10, metadata=at_least(1))
    """The planner loop's cap k (Alg. 1, line 3)."""
    mmapg_single_path: bool = False
    """Table 3 "w/o graph-guided planning": every step builds on the previous node only."""
    mmapg_triplets: bool = True
    """Match text through its triplets too (a KB indexed with ``--triplets``), reading the
    passage a triplet came from; off: Table 3 "w/o triplet conversion" (passages only)."""
    mmapg_retrieval: Literal["module", "similarity"] = "module"
    """module (Sec. 3.4) | similarity: Table 3 "w/o retrieval module", top-k by the
    instruction's embedding, no query building, no examination."""
    mmapg_text_radius: float = 0.6
    """r_t (Eq. 11) as a cosine distance (1 - similarity) for the text collections."""
    mmapg_image_radius: float = 0.7
    """r_i for the image collection (text-to-image similarities sit lower, App. A.1)."""
    mmapg_max_candidates: int = field(default=6, metadata=at_least(1))
    """Candidates examined per retrieval node, best first: each costs one model call, and the
    radius search alone has no upper bound."""
    mmapg_examine_filter: bool = False
    """Ours, off by default: drop a candidate the examiner judges unhelpful before extraction
    (each drop is a ``dropped_candidate`` step in the trace). The paper collects every
    examination result O_i and lets extraction (Eq. 14) decide what matters (Eq. 12-14)."""

    # -- QDRAG (qdrag.txt) --------------------------------------------------------------
    qdrag_budget: int = field(default=5, metadata=at_least(1))
    """N in n(Q_i) = N * E(Q_i) / sum E (the paper uses 5)."""
    qdrag_mode: Literal["qdc", "qdr", "dense", "sparse"] = "qdc"
    """qdc | qdr (the method) or dense | sparse (Table 1's baselines: no rerank; rerank the raw
    question without decomposition)."""
    qdrag_entropy_budget: bool = True
    """Off: every (sub)question keeps the same share (Table 6 without "S")."""
    qdrag_retrieve_k: int = field(default=10, metadata=at_least(1))
    """Contexts retrieved per (sub)question before reranking."""

    # -- MAB-DQA (mab-dqa.txt, Sec. 4.4) ---------------------------------------------------
    # Paper defaults; the authors' public code uses beta=0.01, lambda=1.
    mabdqa_alpha: float = 0.8
    """Weight of the page judgement against late interaction (Eq. 8)."""
    mabdqa_beta: float = 0.1
    """Weight of the hypergraph term (Eq. 8)."""
    mabdqa_lambda: float = 0.75
    """Arm confidence against page degree inside the hypergraph term (Eq. 8)."""
    mabdqa_theta_g: float = 0.8
    """Page-graph edge threshold (Eq. 2)."""
    mabdqa_theta_h: int = 10
    """Pages per hyperedge (Algorithm 1)."""
    mabdqa_m: int = field(default=20, metadata=at_least(0))
    """Pages judged by the bandit walk (Algorithm 2's iterations)."""
    mabdqa_batch: int = field(default=1, metadata=at_least(1))
    """Pages drawn and judged concurrently per bandit round (ours; 1 is the paper's walk)."""
    mabdqa_seed: int = 42
    mabdqa_top_pages: int = field(default=4, metadata=at_least(1))
    """Pages the answer reads (the paper's Top-4)."""
    mabdqa_retriever: Literal["bandit", "li"] = "bandit"
    """bandit (Algorithm 2) | li (plain late-interaction top-k, the M3DocRAG-style baseline)."""
    mabdqa_page_graph: bool = True
    """Off: no query-agnostic page graph (Table 6 ablation)."""
    mabdqa_atoms_only: bool = False
    """On: arms are the atomic subqueries only, no global query (Table 6 ablation)."""
    mabdqa_question_reflection: bool = True
    mabdqa_answer_reflection: bool = True
    """Off: the initial answer is final and the hypergraph is never re-entered."""
    mabdqa_reentries: int = 1
    """Times HRRA may re-enter the hypergraph for more pages when the answer falls short."""
    mabdqa_reentry_m: int = 8
    """Pages judged per re-entry."""
    mabdqa_max_aspects: int = 5
    mabdqa_page_chars: int = 1500
    """Page text the LLM reads per page when no VLM sees the page image."""
    mabdqa_judge_tokens: int = 160
    mabdqa_judge: Literal["scale", "p_yes"] = "scale"
    """Page judge: "scale" (the paper's 1-5 rating) or "p_yes" (P(Yes) from one forward pass)."""

    # -- PolarMem (polarmem.txt) -------------------------------------------------------
    polar_dir: str = field(default="polarmem", metadata=OPERATOR)
    """The memory's folder (graph.sqlite + chroma/)."""
    polar_templates: int = 3
    """Verification templates averaged per concept (Eq. 4: at least 3)."""
    polar_kappa: float = 0.5
    """delta = kappa * sigma_w, the uncertainty margin around tau* (Eq. 6); the paper gives
    no value (the authors' code used a fixed 0.05)."""
    polar_max_concepts: int = 40
    """Concepts kept from one image's proposal (App. B: at most 40)."""
    polar_memory: bool = False
    """MMAPG and QDRAG also recall from the PolarMem memory at ``polar_dir``: recalled items
    join the candidates (MMAPG) or the cited sources (QDRAG) as Fact Check lines."""
    polar_recall: Literal["logic", "vanilla"] = "logic"
    """logic (Algorithm 1) | vanilla (similarity only, Eq. 2)."""
    polar_top_k: int = 3
    """Memories recalled per query."""

    # -- GRAIL (grail.txt) ---------------------------------------------------------------
    grail_tau_base: float = 0.05
    grail_weights: str = field(default="", metadata=OPERATOR)
    """A trained GRAIL folder (``hopgraph grail train``); empty: the training-free variant."""
    grail_mode: Literal["", "query", "additive", "gap-fixed", "gap", "hybrid"] = ""
    """Retrievers that support it (MMAPG, QDRAG) search through GRAIL in this mode when set:
    query | additive | gap-fixed | gap | hybrid."""

    # -- what one served request may ask for (the operator's) ------------------------------
    image_roots: str = field(default="", metadata=OPERATOR)
    """Folders (``os.pathsep``-separated) a question's image files may be read from; data URLs
    and http(s) URLs need none. Served: none by default. ``hopgraph run``: the question file's
    folder when empty."""
    limit_question_chars: int = field(default=4000, metadata=OPERATOR)
    limit_images: int = field(default=8, metadata=OPERATOR)
    """Images one question may carry."""
    limit_image_pixels: int = field(default=40_000_000, metadata=OPERATOR)
    """Width x height of any one question image, as sent (before it is resized)."""
    limit_knobs: str = field(default=KNOB_LIMITS, metadata=OPERATOR)
    """The largest value a client may give each costly knob, ``name=max`` comma-separated."""

    @property
    def is_operator(self) -> bool:
        """Whether the operator built this Context (the CLI, the runner): such a run may read
        any image file and is held to no per-request limit. A graph invoked with a Context it
        did not get this way is treated as a client's."""
        return getattr(self, "_operator", False)

    def as_operator(self) -> Context:
        """This Context, marked as the operator's (not a field: no client can set it)."""
        out = self.replace()
        object.__setattr__(out, "_operator", True)
        return out

    @classmethod
    def operator_fields(cls) -> frozenset[str]:
        """The fields only the operator sets (``OPERATOR`` metadata)."""
        return frozenset(f.name for f in fields(cls) if f.metadata.get("owner") == "operator")

    def knob_limits(self) -> dict[str, float]:
        """``limit_knobs`` as a dict, each name a Context field."""
        out = {}
        for item in filter(None, (p.strip() for p in self.limit_knobs.split(","))):
            name, sep, value = item.partition("=")
            if not sep or name.strip() not in {f.name for f in fields(self)}:
                raise ValueError(f"limit_knobs: {item!r} is not field=max")
            out[name.strip()] = float(value)
        return out

    def __post_init__(self) -> None:
        hints = get_type_hints(type(self))
        for f in fields(self):
            env = os.environ.get(ENV_PREFIX + f.name.upper())
            if env is not None and getattr(self, f.name) == _default_of(f):
                setattr(self, f.name, coerce(f.name, hints[f.name], env))
            if get_origin(hints[f.name]) is Literal:  # fixed choices: refused once, here
                coerce(f.name, hints[f.name], getattr(self, f.name))
        if not isinstance(self, ClientContext):  # a client's: after the operator's limits
            self.check_floors()

    def check_floors(self) -> None:
        """A knob below its floor (``at_least``) is refused here, once, not inside a node."""
        for f in fields(self):
            low = f.metadata.get("minimum")
            if low is not None and getattr(self, f.name) < low:
                raise ValueError(f"{f.name} must be >= {low}, not {getattr(self, f.name)}")

    def replace(self, **changes: Any) -> Context:
        """A copy with ``changes`` applied (values may be strings, as from ``--set k=v``)."""
        hints = get_type_hints(type(self))
        unknown = sorted(set(changes) - set(hints))
        if unknown:
            raise ValueError(f"unknown Context field(s): {', '.join(unknown)}")
        typed = {k: coerce(k, hints[k], v) if isinstance(v, str) else v for k, v in changes.items()}
        # a plain Context (a ClientContext refuses operator fields as arguments), still the
        # operator's where this one was
        out = Context(**({f.name: getattr(self, f.name) for f in fields(self)} | typed))
        if self.is_operator:
            object.__setattr__(out, "_operator", True)
        return out

    def as_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        if d.get("api_key") not in ("", "EMPTY"):
            d["api_key"] = "***"
        d["registry_url"] = redacted_url(d.get("registry_url", ""))
        return d


def redacted_url(url: str) -> str:
    """A database URL with its password replaced by ***, for manifests and messages."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url) if url else None
    if parts is None or parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{netloc[-1]}"))


class ClientContext(Context):
    """The Context of a served graph, as LangGraph builds it from a client's ``context`` dict.
    A client chooses the method's knobs within the operator's limits; every operator field
    comes from the server's environment (or ``langgraph.json``), so one a client names is
    refused, naming it, before any work. Code that passes a ``Context`` itself (the CLI, the
    runner, ``graph.invoke(..., context=Context(...))``) is the operator and is not checked."""

    def __init__(self, **given: Any):
        self.refuse(given)
        super().__init__(**given)
        within_limits(self, self.knob_limits())
        self.check_floors()

    @staticmethod
    def refuse(given: dict[str, Any]) -> None:
        """A client's choices, refused where they name an operator field or an unknown one, or
        a value not of its field's type (JSON from a client)."""
        operator = sorted(set(given) & Context.operator_fields())
        if operator:
            raise ValueError(
                f"Context field(s) {', '.join(map(repr, operator))} belong to the operator of "
                "this server and are set by its environment, not by a client"
            )
        hints = get_type_hints(Context)
        for name, value in given.items():
            typ = hints.get(name)
            if typ is None:
                raise ValueError(f"unknown Context field {name!r}")
            wanted = (int, float) if typ is float else typ if typ in (int, bool, str) else None
            mistyped = wanted and not isinstance(value, wanted)
            if mistyped or (isinstance(value, bool) and typ in (int, float)):
                raise ValueError(f"Context field {name!r} expects {typ.__name__}, not {value!r}")


def within_limits(ctx: Context, limits: dict[str, float]) -> None:
    """Each costly knob of ``ctx`` within ``0..limit`` (the operator's ``limit_knobs``)."""
    for name, most in limits.items():
        value = getattr(ctx, name)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number and not 0 <= value <= most:
            raise ValueError(
                f"Context field {name!r} must lie in 0..{most:g} on this server, not {value}"
            )


def for_client(operator: Context, given: dict[str, Any]) -> Context:
    """The Context a client's request runs with on a server whose operator built ``operator``
    (``hopgraph mcp``): the client's choices refused as ``ClientContext`` refuses them and held
    to the operator's own limits, every other field the operator's; not marked as the
    operator's, so the question's admission holds it to the request limits."""
    ClientContext.refuse(given)
    out = Context(**({f.name: getattr(operator, f.name) for f in fields(operator)} | given))
    within_limits(out, operator.knob_limits())
    return out


SERVING_FIELDS = frozenset(
    {
        "base_url", "api_key", "backend", "vlm_base_url", "request_timeout", "max_concurrency",
        "max_retries", "n_threads", "n_threads_batch", "cache_dir", "embed_batch_size", "kb_dir",
        "chroma_url", "registry_url", "prompts_dir", "trace_content", "trace_text_cap",
        "response_cache",
        "image_roots", "limit_question_chars", "limit_images", "limit_image_pixels",
        "limit_knobs",
    }
)  # fmt: skip
"""Fields that say where and how fast a run is served, not what it answers (a record may resume
with others; the KB's contents and the prompts' hashes are checked apart from their paths)."""


def _default_of(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory()  # type: ignore[misc]


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
        if typ is int:
            return int(raw)
        if typ is float:
            return float(raw)
        return raw
    except ValueError:
        raise ValueError(
            f"Context field {name!r} expects {getattr(typ, '__name__', typ)}, got {raw!r}"
        ) from None


def parse_sets(items: list[str] | None) -> dict[str, str]:
    """``["k=v", ...]`` from ``--set`` into a dict, refusing items without '='."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set expects key=value, got {item!r}")
        out[key.strip()] = value
    return out
