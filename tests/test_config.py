import pytest
from langgraph.graph import StateGraph

from hopgraph.config import Context, parse_sets


def test_defaults_are_the_papers():
    from hopgraph.graphs import every_context

    ctx = every_context()()
    assert ctx.base_url == ""
    assert ctx.model == "qwen2.5-coder-1.5b"
    assert ctx.qdrag_budget == 5
    assert (ctx.mabdqa_alpha, ctx.mabdqa_beta, ctx.mabdqa_lambda) == (0.8, 0.1, 0.75)
    assert ctx.grail_tau_base == 0.05


def test_env_fills_fields_left_at_default(monkeypatch):
    monkeypatch.setenv("HOPGRAPH_BASE_URL", "http://gpu:8000/v1")
    monkeypatch.setenv("HOPGRAPH_TOP_K", "9")
    monkeypatch.setenv("HOPGRAPH_MABDQA_ALPHA", "0.5")
    from hopgraph.settings.mabdqa import MABDQAContext

    ctx = MABDQAContext()
    assert ctx.base_url == "http://gpu:8000/v1"
    assert ctx.top_k == 9
    assert ctx.mabdqa_alpha == 0.5


def test_explicit_argument_beats_env(monkeypatch):
    monkeypatch.setenv("HOPGRAPH_MODEL", "from-env")
    assert Context(model="explicit").model == "explicit"


def test_bad_env_value_names_the_field(monkeypatch):
    monkeypatch.setenv("HOPGRAPH_TOP_K", "many")
    with pytest.raises(ValueError, match="top_k"):
        Context()


def test_replace_coerces_strings_and_refuses_unknown_fields():
    ctx = Context().replace(top_k="3", temperature="0.7")
    assert ctx.top_k == 3 and ctx.temperature == 0.7
    with pytest.raises(ValueError, match="no_such_field"):
        Context().replace(no_such_field="1")


def test_parse_sets():
    assert parse_sets(["a=1", "b=x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(ValueError, match="key=value"):
        parse_sets(["novalue"])


def test_api_key_is_masked_in_dumps():
    assert Context(api_key="sk-secret").as_dict()["api_key"] == "***"


def test_context_is_a_langgraph_context_schema():
    from typing import TypedDict

    from langgraph.runtime import Runtime

    class S(TypedDict):
        k: int

    def node(state: S, runtime: Runtime[Context]) -> S:
        return {"k": runtime.context.top_k}

    g = StateGraph(S, context_schema=Context)
    g.add_node("n", node)
    g.set_entry_point("n")
    assert g.compile().invoke({"k": 0}, context=Context(top_k=11)) == {"k": 11}


def test_each_graph_has_its_own_knobs_and_context_keeps_only_the_shared_ones():
    """Issue 60 item 2: Context had 71 fields, 41 of them one method's knobs; a knob was named
    in up to three places and a graph of one's own could declare none."""
    from dataclasses import fields

    from hopgraph.graphs import context_schema, load_graph

    shared = {f.name for f in fields(Context)}
    assert not {
        n for n in shared if n.startswith(("mmapg_", "qdrag_", "mabdqa_", "polar_", "grail_"))
    }
    mine = {
        a: {f.name for f in fields(context_schema(a))} - shared
        for a in ("rag", "direct", "mmapg", "qdrag", "mabdqa")
    }
    assert mine["rag"] == mine["direct"] == set()
    assert all(n.startswith(("mmapg_", "grail_", "polar_")) for n in mine["mmapg"])
    assert all(n.startswith(("qdrag_", "grail_", "polar_")) for n in mine["qdrag"])
    assert all(n.startswith("mabdqa_") for n in mine["mabdqa"]) and len(mine["mabdqa"]) == 20
    # what LangGraph Studio shows: the graph's own schema, as a client's class of it
    schema = load_graph("mabdqa").builder.context_schema
    assert {f.name for f in fields(schema)} == shared | mine["mabdqa"]


def test_every_built_in_graph_runs_with_the_context_its_settings_module_writes_out():
    """A method's Context is a class in ``settings/`` (checked by mypy where a knob is read),
    holding exactly its spec's settings and its parts', in the spec's order."""
    import importlib

    from hopgraph.graphs import BUILT_IN, context_schema, specs

    for name, spec in specs().items():
        if name not in BUILT_IN or not spec.knobs:
            continue
        ctx = context_schema(name)
        assert ctx.__module__ == f"hopgraph.settings.{name}", (name, ctx.__module__)
        assert ctx.__bases__ == (Context, *spec.knobs), name
        module = importlib.import_module(f"hopgraph.settings.{name}")
        assert getattr(module, ctx.__name__) is ctx


def test_a_knob_of_another_method_is_refused_naming_whose_it_is():
    from hopgraph.graphs import context_schema

    with pytest.raises(ValueError, match="qdrag_budget is QDRAG's, not this graph's"):
        context_schema("mmapg")().replace(qdrag_budget="3")
    assert context_schema("qdrag")().replace(qdrag_budget="3").qdrag_budget == 3


def test_a_knobs_bounds_live_on_its_field():
    from hopgraph.config import client_of
    from hopgraph.settings.mmapg import MMAPGContext

    client = client_of(MMAPGContext)
    assert client(mmapg_max_iterations=20).mmapg_max_iterations == 20
    with pytest.raises(ValueError, match="'mmapg_max_iterations' must lie in 0..20"):
        client(mmapg_max_iterations=21)
    with pytest.raises(ValueError, match="'mmapg_max_iterations' must be at least 1"):
        MMAPGContext(mmapg_max_iterations=0)
    raised = MMAPGContext(limit_knobs="mmapg_max_iterations=40")  # the operator's own cap
    assert raised.knob_limits()["mmapg_max_iterations"] == 40
    with pytest.raises(ValueError, match="limit_knobs"):
        MMAPGContext(limit_knobs="mmapg_max_iteration=40").knob_limits()  # a typo


def test_a_graph_of_ones_own_declares_a_knob_that_set_and_clients_reach(tmp_path):
    from hopgraph.cli.app import build_context
    from hopgraph.config import client_of
    from hopgraph.graphs import context_schema

    spec = "examples/self_ask/graph.py:graph"
    schema = context_schema(spec)
    assert build_context(sets=["self_ask_max_hops=5"], schema=schema).self_ask_max_hops == 5
    with pytest.raises(ValueError, match="must lie in 0..8"):
        client_of(schema)(self_ask_max_hops=9)
