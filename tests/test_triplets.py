import json

from hopgraph.agents import triplets as triplets_agent
from hopgraph.agents.triplets import extract_triplets, triplet_items
from hopgraph.config import Context
from hopgraph.memory.cache import JsonCache
from hopgraph.memory.indexing import index_source
from hopgraph.memory.kb import KnowledgeBase


def test_triplets_are_indexed_with_their_parent_and_cached(tmp_path, endpoint, monkeypatch):
    corpus = tmp_path / "c.json"
    corpus.write_text(
        json.dumps({"Alpha": ["Alpha was founded in 1412 by Odile."], "Beta": ["Beta is a river."]})
    )
    replies = [
        '{"facts": [["Alpha", "founded in", "1412"], ["Alpha", "founded by", "Odile"]]}',
        "not json",
        "still not json",  # Beta fails twice (one repair): reported, not fatal
    ]
    ep = endpoint(replies, owned_by="me")
    model = ep.model_client()
    monkeypatch.setattr(triplets_agent, "chat_model", lambda ctx: model)
    ctx = Context(base_url="http://scripted.test/v1", model="scripted")
    kb = KnowledgeBase(tmp_path / "kb")
    cache = JsonCache(tmp_path / "cache.sqlite")

    def derive(item):
        return triplet_items(item, extract_triplets(item, ctx, cache))

    report = index_source(kb, corpus, "hotpotqa", derive=derive)
    assert report.added == 2 and report.derived == 2
    assert any("derivation failed" in s.reason for s in report.skipped)
    hit = kb.search("When was Alpha founded?", k=1, modalities=["text"])[0]
    passage = next(h for h in kb.iter_items("text") if h.title == "Alpha" and not h.parent)
    assert hit.text == "Alpha founded in 1412" and hit.parent == passage.id
    assert "Odile" in ep.requests[0]["messages"][0]["content"]  # the passage is in the prompt
    # a second run asks the model nothing for Alpha: the cache answers
    ep.replies = ['{"facts": [["Beta", "is", "a river"]]}']
    again = index_source(kb, corpus, "hotpotqa", derive=derive)
    assert again.derived == 1 and len(ep.requests) == 4
