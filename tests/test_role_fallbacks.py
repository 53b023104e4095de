"""Every structured role declares a fallback: a reply that stays malformed after its one repair
(two malformed replies) gives the role's fallback, recorded as a ``fallback`` event, and never
fails the question."""

import pytest

from hopgraph.agents import mmapg, qdrag, role
from hopgraph.config import Context
from hopgraph.models import StructuredOutputError

CTX = Context(base_url="http://scripted.test/v1", model="scripted")
MALFORMED = ['{"cut off at max_tok', "still no JSON here"]

ROLES = {
    "mmapg/decompose": (
        mmapg,
        lambda: mmapg.split_instruction("Find the crest of Town 3", [], CTX),
        lambda out: out.text_part == "Find the crest of Town 3" and out.image_part == "",
    ),
    "mmapg/keyphrases": (
        mmapg,
        lambda: mmapg.key_phrases("founder of Town 3", CTX),
        lambda out: out == [],
    ),
    "mmapg/image_target": (
        mmapg,
        lambda: mmapg.image_queries("the crest of Town 3", "targeted", CTX),
        lambda out: out == ([], "the crest of Town 3"),
    ),
    "mmapg/examine_text": (
        mmapg,
        lambda: mmapg.examine({"id": "t1", "text": "x"}, "founder?", "founder?", CTX),
        lambda out: out.facts == "" and not out.helps,
    ),
    "mmapg/reason": (
        mmapg,
        lambda: mmapg.reason("Where was she born?", [], CTX),
        lambda out: out.answer == mmapg.NO_ANSWER,
    ),
    "qdrag/decompose_qdc": (
        qdrag,
        lambda: qdrag.decompose_qdc("Where was the founder of X born?", [], CTX),
        lambda out: out == [],
    ),
    "qdrag/plan_qdr": (
        qdrag,
        lambda: qdrag.plan_qdr("Where was the founder of X born?", CTX),
        lambda out: out == [],
    ),
}


@pytest.mark.parametrize("template", list(ROLES))
def test_a_reply_malformed_twice_gives_the_declared_fallback(template, endpoint, monkeypatch):
    module, call, is_fallback = ROLES[template]
    ep = endpoint(list(MALFORMED), owned_by="me")
    events = []
    model = ep.model_client(on_event=events.append)
    monkeypatch.setattr(role, "chat_model", lambda ctx: model)
    out = call()
    assert is_fallback(out)
    assert len(ep.requests) == 2  # the reply and its one repair, nothing more
    (fallback,) = [e for e in events if e.get("event") == "fallback"]
    assert fallback["template"] == template and "after one repair" in fallback["reason"]
    assert fallback["raw"] == MALFORMED[1]


def test_a_role_without_a_fallback_still_raises(endpoint):
    from pydantic import BaseModel

    from hopgraph.models import user

    class Strict(BaseModel):
        x: int

    model = endpoint(list(MALFORMED), owned_by="me").model_client()
    with pytest.raises(StructuredOutputError, match="after one repair"):
        model.structured([user("?")], Strict, role="strict")
