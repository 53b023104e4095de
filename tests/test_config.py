import pytest
from langgraph.graph import StateGraph

from hopgraph.config import Context, parse_sets


def test_defaults_are_the_papers():
    ctx = Context()
    assert ctx.base_url == ""
    assert ctx.model == "qwen2.5-coder-1.5b"
    assert ctx.qdrag_budget == 5
    assert (ctx.mabdqa_alpha, ctx.mabdqa_beta, ctx.mabdqa_lambda) == (0.8, 0.1, 0.75)
    assert ctx.grail_tau_base == 0.05


def test_env_fills_fields_left_at_default(monkeypatch):
    monkeypatch.setenv("HOPGRAPH_BASE_URL", "http://gpu:8000/v1")
    monkeypatch.setenv("HOPGRAPH_TOP_K", "9")
    monkeypatch.setenv("HOPGRAPH_MABDQA_ALPHA", "0.5")
    ctx = Context()
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
