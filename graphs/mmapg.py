"""``mmapg``: the Adaptive Planning Graph (mmapg.txt, Sec. 3, Alg. 1).

A planner loop grows a graph of question (Q), retrieval (R) and answer (A) nodes; each new node
may hang off ANY existing node. The retrieval module is a subgraph that splits the instruction
into text and image parts, builds queries, searches within a radius, examines every candidate
in parallel (``Send``) and extracts the node's content. The loop ends on Stop or after
``mmapg_max_iterations`` steps; if the last node is not an answer, the reasoning module answers
from the whole graph (Alg. 1, lines 23-27).

Context switches (Table 3 ablations): ``mmapg_single_path``, ``mmapg_triplets``,
``mmapg_retrieval`` = module | similarity; ``grail_mode`` steers the text search.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send
from typing_extensions import TypedDict

from hopgraph.agents import mmapg as roles
from hopgraph.agents.generator import short_answer
from hopgraph.agents.mmapg import overall_plan, plan_step, reason
from hopgraph.config import MethodSpec
from hopgraph.graphs import polarmem
from hopgraph.graphs.polarmem import memory_candidates
from hopgraph.graphs.shared import (
    InputState,
    add_chain,
    context,
    contract_builder,
    over_budget,
)
from hopgraph.memory.evidence import Evidence
from hopgraph.models.errors import StructuredOutputError
from hopgraph.models.events import Fallback, Repair, Step, emit, tally_calls
from hopgraph.settings import grail
from hopgraph.settings.mmapg import MMAPGContext, MMAPGSettings
from hopgraph.tools.mmapg import (
    ENDINGS,
    IMAGE_SIDE,
    REPEATS,
    TEXT_SIDE,
    check_step,
    ending,
    fallback_step,
    find_candidates,
    has_image_side,
    top_k,
)

SPEC = MethodSpec(
    "mmapg",
    "plans searches step by step; slowest",
    settings=(MMAPGSettings,),
    parts=(grail.SPEC, polarmem.SPEC),
    needs=("chat", "structured output"),
    view="planning_graph",
)

NOTHING_FOUND = "Nothing relevant was found for: {instruction}"
EMPTY = {"", "none", "n/a", "na", "null", "nothing", "no image part"}
"""What small models write in a field they were told to leave empty."""


# -- the retrieval module (Sec. 3.4) as a subgraph -------------------------------------------
class RetrievalState(TypedDict, total=False):
    instruction: str
    parents: list[str]
    held: list[str]
    """Ids of evidence already in the planning graph (GRAIL steers away from them)."""
    text_part: str
    image_part: str
    image_kind: str
    image_question: str
    candidates: list[dict[str, Any]]
    findings: Annotated[list[dict[str, Any]], operator.add]
    content: str


class ExamineInput(TypedDict):
    candidate: Evidence
    instruction: str
    question: str


def split(state: RetrievalState, runtime: Runtime[MMAPGContext]) -> RetrievalState:
    """Eq. 5: the instruction's text-related and image-related parts. A KB without images has
    no image side to route a part to: there the whole instruction is the text part, and no
    call is made (an image part would search nothing, and its words would be lost)."""
    ctx = context(runtime, MMAPGContext)
    if not has_image_side(ctx):
        return {"text_part": state["instruction"], "image_part": "", "image_kind": "descriptive"}
    out = roles.split_instruction(state["instruction"], state.get("parents", []), ctx)
    text_part = out.text_part.strip()
    image_part = out.image_part.strip()
    if image_part.lower().strip(".") in EMPTY:
        image_part = ""
    kind = out.image_kind if out.image_kind != "none" else "descriptive"
    if not text_part and not image_part:  # an empty split searches with the whole instruction
        text_part = state["instruction"]
    return {"text_part": text_part, "image_part": image_part, "image_kind": kind}


def search(state: RetrievalState, runtime: Runtime[MMAPGContext]) -> RetrievalState:
    """Eq. 6-11: key phrases (text), names or descriptive phrases (image), radius search.
    Each knowledge base keeps its own cap: raw cosines of KB_text and KB_img are not on one
    scale, so a merged top-N would undo the per-modality radii (App. A.1)."""
    ctx = context(runtime, MMAPGContext)
    held = state.get("held", [])
    text_phrases: list[str] = []
    image_phrases: list[str] = []
    question = ""
    if state.get("text_part"):
        parents = state.get("parents", [])
        text_phrases = roles.key_phrases(state["text_part"], ctx, parents) or [state["text_part"]]
    if state.get("image_part"):
        phrases, question = roles.image_queries(state["image_part"], state["image_kind"], ctx)
        phrases = phrases or [state["image_part"]]
        if state["image_kind"] == "targeted":  # Eq. 7-8: names join the KB_text query
            text_phrases += phrases
        else:  # Eq. 9: descriptive phrases search KB_img
            image_phrases = phrases
    found: dict[str, Evidence] = {}
    if text_phrases:
        found |= {c["id"]: c for c in find_candidates(text_phrases, TEXT_SIDE, ctx, held=held)}
    if image_phrases:
        for c in find_candidates(image_phrases, IMAGE_SIDE, ctx):
            found.setdefault(c["id"], c)
    memories = memory_candidates(state["instruction"], ctx) if ctx.polar_memory else []
    return {"candidates": list(found.values()) + memories, "image_question": question}


def fan_out(state: RetrievalState):
    """One ``examine`` task per candidate, in parallel; none found goes straight to extract."""
    return [
        Send(
            "examine",
            {
                "candidate": c,
                "instruction": state.get("text_part") or state["instruction"],
                "question": state.get("image_question") or state["instruction"],
            },
        )
        for c in state.get("candidates", [])
    ] or "extract"


def examine(state: ExamineInput, runtime: Runtime[MMAPGContext]) -> RetrievalState:
    """Eq. 12-13: what one candidate tells about the instruction, O_i, kept whatever the
    examiner's verdict (extraction, Eq. 14, decides what matters); with
    ``mmapg_examine_filter`` one judged unhelpful is dropped, and the drop is traced."""
    ctx = context(runtime, MMAPGContext)
    c = state["candidate"]
    found = roles.examine(c, state["instruction"], state["question"], ctx)
    facts = found.facts.strip()
    if not facts:  # the candidate told nothing
        return {"findings": []}
    if ctx.mmapg_examine_filter and not found.helps:
        emit(Step("dropped_candidate", {"id": c["id"], "facts": facts}))
        return {"findings": []}
    return {
        "findings": [
            {"id": c["id"], "title": c.get("title", ""), "text": facts, "helps": found.helps}
        ]
    }


def extract(state: RetrievalState, runtime: Runtime[MMAPGContext]) -> RetrievalState:
    """Eq. 14: the node's content from all findings, or a node saying nothing was found."""
    findings = state.get("findings", [])
    if not findings:
        return {"content": NOTHING_FOUND.format(instruction=state["instruction"])}
    return {
        "content": roles.extract(state["instruction"], findings, context(runtime, MMAPGContext))
    }


retrieval_builder = StateGraph(RetrievalState, context_schema=MMAPGContext)
for module in (split, search, examine, extract):
    retrieval_builder.add_node(module)
add_chain(retrieval_builder, START, "split", "search")
retrieval_builder.add_conditional_edges("search", fan_out, ["examine", "extract"])
add_chain(retrieval_builder, "examine", "extract", END)
retrieval = retrieval_builder.compile(name="mmapg_retrieval")


# -- the planner loop (Alg. 1) -------------------------------------------------------------
class PlanStep(TypedDict, total=False):
    """The planner's latest decision, checked (Alg. 1 lines 5-6)."""

    type: str
    """question | retrieval | answer | stop"""
    instruction: str
    parents: list[str]
    """Ids of the earlier nodes it builds on (the latest one alone in single-path mode)."""
    calls: int
    tokens: int
    """The planner's LLM calls and tokens that produced it, charged to the node it makes."""


class PlanNode(TypedDict, total=False):
    """A node of the Adaptive Planning Graph (Sec. 3.2): Q0 is the question itself."""

    id: str
    """Q / R / A and its index (Q0, R1, A3)."""
    type: str
    """question | retrieval | answer"""
    instruction: str
    content: str
    """What the node holds: the question, what the retrieval module extracted, an answer."""
    parents: list[str]
    calls: int
    tokens: int
    sources: list[str]
    """A retrieval node's evidence ids (what it found)."""
    hits: list[Evidence]


class State(InputState, total=False):
    plan: str
    nodes: Annotated[list[PlanNode], operator.add]
    """The planning graph, in the order its nodes were made."""
    step: PlanStep
    repairs: Annotated[list[dict[str, Any]], operator.add]
    stopped: str
    """How the loop ended: one of ``tools.mmapg.ENDINGS``."""
    answer: str
    response: str
    evidence: list[Evidence]


def recursion_limit(ctx: MMAPGContext) -> int:
    """Supersteps a question may take: plan, then planner + action per iteration, then finish."""
    return 2 * ctx.mmapg_max_iterations + 6


def begin(state: State, runtime: Runtime[MMAPGContext]) -> State:
    """The graph starts as the question alone (Alg. 1 line 2) and the overall plan."""
    with tally_calls() as tally:
        plan = overall_plan(
            state["question"], context(runtime, MMAPGContext), state.get("images", [])
        )
    q0: PlanNode = {
        "id": "Q0",
        "type": "question",
        "instruction": "",
        "content": state["question"],
        "parents": [],
        **tally,
    }
    return {"plan": plan, "nodes": [q0]}


def planner(state: State, runtime: Runtime[MMAPGContext]) -> State:
    """Eq. 4: the next node's type, parents and instruction, checked against the graph. A step
    that repeats one already taken goes back to the planner once, told which node it repeats
    and what that node found (Sec. 3.3: the planner decides, Stop included); only a second
    repeat is mended by the rule (``check_step``), declared as a fallback."""
    ctx = context(runtime, MMAPGContext)
    nodes = state["nodes"]
    with tally_calls() as tally:
        raw, problems = _proposed(state, ctx)
        step, repairs = check_step(raw, nodes, state["question"], ctx.mmapg_single_path)
        repeat = next((r for r in repairs if r["kind"] in REPEATS), None)
        if repeat is not None and not problems:
            of = next(n for n in nodes if n["id"] == repeat["of"])
            told = {
                "type": raw["type"],
                "instruction": raw.get("instruction", ""),
                "of": of["id"],
                "found": of.get("content", ""),
            }
            raw, problems = _proposed(state, ctx, repeated=told)
            step, again = check_step(raw, nodes, state["question"], ctx.mmapg_single_path)
            repairs = [{"kind": "repeat_told", "of": of["id"], "proposed": told["type"]}, *again]
            if (mended := next((r for r in again if r["kind"] in REPEATS), None)) is not None:
                emit(
                    Fallback(
                        "planner",
                        f"the step repeated {mended['of']} again: {mended['kind']} mended by rule",
                        step["type"],
                    )
                )
    repairs = [*problems, *repairs]
    for r in repairs:
        r["iteration"] = len(nodes)
        emit(Repair("planner", r))
    return {"step": {**step, **tally}, "repairs": repairs}


def _proposed(
    state: State, ctx: MMAPGContext, repeated: dict[str, Any] | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The planner's step as it proposed it, or the fallback for a malformed one."""
    nodes = state["nodes"]
    try:
        proposed = plan_step(
            state["question"],
            state.get("plan", ""),
            nodes,
            ctx,
            single_path=ctx.mmapg_single_path,
            repeated=repeated,
        )
        return proposed.model_dump(), []
    except StructuredOutputError as e:
        raw = fallback_step(nodes, state["question"])
        return raw, [
            {"kind": "malformed", "error": str(e), "raw": e.raw[:500], "fallback": raw["type"]}
        ]


def act(state: State) -> str:
    """Which module the planner's decision invokes (Alg. 1 lines 7-17)."""
    return {"question": "ask", "retrieval": "retrieve", "answer": "answer"}.get(
        state["step"]["type"], "finish"
    )


def _new_node(state: State, kind: str, content: str, tally: dict[str, int], **extra: Any):
    step = state["step"]
    node = {
        "id": f"{kind[0].upper()}{len(state['nodes'])}",
        "type": kind,
        "instruction": step["instruction"],
        "content": content,
        "parents": step["parents"],
        "calls": step.get("calls", 0) + tally["calls"],
        "tokens": step.get("tokens", 0) + tally["tokens"],
        **extra,
    }
    return {"nodes": [node]}


def ask(state: State) -> State:
    """A question node: the instruction is the question, no module is called."""
    return _new_node(state, "question", state["step"]["instruction"], {"calls": 0, "tokens": 0})


def answer(state: State, runtime: Runtime[MMAPGContext]) -> State:
    """The reasoning module answers the instruction from the parent nodes."""
    by_id = {n["id"]: n for n in state["nodes"]}
    with tally_calls() as tally:
        out = reason(
            state["step"]["instruction"],
            [by_id[p] for p in state["step"]["parents"]],
            context(runtime, MMAPGContext),
            state.get("images", []),
        )
    content = f"{out.answer} ({out.rationale})" if out.rationale else out.answer
    return _new_node(state, "answer", content, tally, answer=out.answer)


def retrieve(state: State, runtime: Runtime[MMAPGContext]) -> State:
    """The retrieval module (the subgraph), or Table 3's plain similarity retrieval."""
    ctx = context(runtime, MMAPGContext)
    by_id = {n["id"]: n for n in state["nodes"]}
    instruction = state["step"]["instruction"]
    with tally_calls() as tally:
        if ctx.mmapg_retrieval == "similarity":
            hits = top_k(instruction, ctx)
            content = "\n".join(
                f"{h['title']}: {h['text']}" if h["title"] else h["text"] for h in hits
            ) or NOTHING_FOUND.format(instruction=instruction)
            sources = [h["id"] for h in hits]
        else:
            held = [i for n in state["nodes"] for i in n.get("sources", [])]
            out = retrieval.invoke(
                {
                    "instruction": instruction,
                    "parents": [by_id[p]["content"] for p in state["step"]["parents"]],
                    "held": held,
                },
                context=ctx,
            )
            content = out["content"]
            sources = [f["id"] for f in out.get("findings", [])]
            hits = [c for c in out.get("candidates", []) if c["id"] in sources]
    return _new_node(state, "retrieval", content, tally, sources=sources, hits=hits)


def loop(state: State, runtime: Runtime[MMAPGContext]) -> str:
    """Back to the planner until k planner steps have been taken (Alg. 1 line 3), or the
    question's token cap is spent (then the graph answers as the loop's end does)."""
    ctx = context(runtime, MMAPGContext)
    steps = len(state["nodes"]) - 1
    if steps >= ctx.mmapg_max_iterations or over_budget(ctx, "planner"):
        return "finish"
    return "planner"


def finish(state: State, runtime: Runtime[MMAPGContext]) -> State:
    """The last answer node's content if the graph ends in one, else the reasoning module
    answers the question from the whole graph (Alg. 1 lines 23-27). How the loop ended is
    recorded as it happened (``tools.mmapg.ending``), each ending counted in the summary."""
    nodes = state["nodes"]
    ctx = context(runtime, MMAPGContext)
    repairs = state.get("repairs", [])
    stopped, chain = ending(
        state.get("step", {}).get("type") == "stop",
        [r for r in repairs if r.get("iteration") == len(nodes)],
        len(nodes) - 1,
        ctx.mmapg_max_iterations,
    )
    last = nodes[-1]
    if last["type"] == "answer":
        final, response = last["answer"], last["content"]
    else:
        out = reason(state["question"], nodes, ctx, state.get("images", []))
        final, response = out.answer, out.rationale
    final = short_answer(state["question"], final, ctx)  # the one scoring rule of every method
    contexts = list({h["id"]: h for n in nodes for h in n.get("hits", [])}.values())
    told = sum(r["kind"] == "repeat_told" for r in repairs)
    emit(
        Step(
            "run_summary",
            {
                "iterations": len(nodes) - 1,
                "hit_cap": int(stopped == "iteration_cap"),
                **{f"end_{name}": int(stopped == name) for name in ENDINGS},
                "planner_repairs": len(repairs) - told,  # a re-ask it was told about is none
                "planner_re_asks": told,
                "answered_from_graph": int(last["type"] != "answer"),
                **({"rule_chain": chain} if chain else {}),
            },
        )
    )
    return {"answer": final, "response": response, "stopped": stopped, "evidence": contexts}


builder = contract_builder(
    State, begin, planner, ask, retrieve, answer, finish, context=MMAPGContext
)
builder.add_edge("begin", "planner")
builder.add_conditional_edges("planner", act, ["ask", "retrieve", "answer", "finish"])
for action in ("ask", "retrieve", "answer"):
    builder.add_conditional_edges(action, loop, ["planner", "finish"])
builder.add_edge("finish", END)
graph = builder.compile(name="mmapg")
