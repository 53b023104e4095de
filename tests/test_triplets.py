import json

from hopgraph.agents import mmapg as triplets_agent
from hopgraph.agents import role
from hopgraph.agents.mmapg import extract_triplets
from hopgraph.config import Context
from hopgraph.memory.cache import JsonCache
from hopgraph.memory.indexing import index_source, triplet_items
from hopgraph.memory.kb import Item, KnowledgeBase


def test_triplets_are_indexed_with_their_parent_and_cached(tmp_path, endpoint, monkeypatch):
    corpus = tmp_path / "c.json"
    corpus.write_text(
        json.dumps({"Alpha": ["Alpha was founded in 1412 by Odile."], "Beta": ["Beta is a river."]})
    )
    replies = [
        '{"facts": [["Alpha", "founded in", "1412"], ["Alpha", "founded by", "Odile"]]}',
        "not json",  # Beta fails (no repair: a re-ask would be cut again): reported, not fatal
    ]
    ep = endpoint(replies, owned_by="me")
    model = ep.model_client()
    monkeypatch.setattr(role, "chat_model", lambda ctx: model)
    ctx = Context(base_url="http://scripted.test/v1", model="scripted")
    kb = KnowledgeBase(tmp_path / "kb")
    cache = JsonCache(tmp_path / "cache.sqlite")

    def derive(item):
        return triplet_items(item, extract_triplets(item, ctx, cache))

    report = index_source(kb, corpus, "hotpotqa", derive=derive)
    assert report.added == 2 and report.derived == 2
    assert any("derivation failed" in s.reason for s in report.skipped)
    hit = kb.search("When was Alpha founded?", k=1, modalities=["text"])[0]
    passage = next(h for h in kb.iter_items("text") if h["title"] == "Alpha" and not h["parent"])
    assert hit["text"] == "Alpha founded in 1412" and hit["parent"] == passage["id"]
    assert "Odile" in ep.requests[0]["messages"][0]["content"]  # the passage is in the prompt
    # a second run asks the model nothing for Alpha: the cache answers
    ep.replies = ['{"facts": [["Beta", "is", "a river"]]}']
    again = index_source(kb, corpus, "hotpotqa", derive=derive)
    assert again.derived == 1 and len(ep.requests) == 3


def test_a_reply_cut_at_max_tokens_keeps_its_complete_triplets_in_one_call(
    tmp_path, endpoint, monkeypatch
):
    """A long passage's triplets overflowed max_tokens: the old code re-asked (cut again),
    failed the passage after two long calls and cached nothing, so every resume paid again."""
    facts = [[f"Town {i}", "lies on", f"river {i}"] for i in range(40)]
    whole = json.dumps({"facts": facts})
    cut = whole[: whole.index("Town 37") + 9]  # mid-triplet, as max_tokens leaves it
    ep = endpoint([cut], owned_by="me")
    model = ep.model_client()
    monkeypatch.setattr(role, "chat_model", lambda ctx: model)
    events = []
    monkeypatch.setattr(triplets_agent, "emit", events.append)
    ctx = Context(base_url="http://scripted.test/v1", model="scripted")
    cache = JsonCache(tmp_path / "cache.jsonl")
    item = Item("text", "towns", "Forty towns on forty rivers.", title="Towns")
    got = extract_triplets(item, ctx, cache)
    assert got == facts[:37] and len(ep.requests) == 1
    assert events[0].detail["salvaged"] == 37
    assert extract_triplets(item, ctx, cache) == got and len(ep.requests) == 1  # cached
