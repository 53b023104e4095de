import numpy as np
import pytest

from hopgraph.memory.kb import Item, KnowledgeBase, KnowledgeBaseError, item_id


def items():
    return [
        Item("text", "a", "Paris is the capital of France.", title="Paris", source="wiki"),
        Item("text", "b", "Berlin is the capital of Germany.", title="Berlin", source="wiki"),
        Item("text", "c", "Bread is baked from flour and water.", title="Bread", source="cook"),
        Item("table", "r1", "Capitals, row 1: country is France; capital is Paris.", source="t"),
        Item(
            "image",
            "i1",
            "A photo of the Eiffel Tower in Paris at night.",
            title="Eiffel",
            source="img",
        ),
        Item("page", "doc.pdf#1", "Annual report page about revenue.", source="doc.pdf", page=1),
    ]


@pytest.fixture
def kb(tmp_path):
    store = KnowledgeBase(tmp_path / "kb")
    store.add(items())
    return store


def test_ids_are_stable_and_content_derived():
    assert Item("text", "k", "x").id == item_id("text", "k") == Item("text", "k", "other").id
    assert item_id("text", "k") != item_id("image", "k")
    with pytest.raises(ValueError, match="modality"):
        Item("video", "k", "x")


def test_counts_per_modality(kb):
    assert kb.counts() == {"text": 3, "table": 1, "image": 1, "page": 1}


def test_readding_adds_nothing_and_input_duplicates_count_once(kb):
    stats = kb.add(items() + items()[:2])
    assert stats.added == 0 and stats.existing == 8
    assert kb.counts()["text"] == 3


def test_search_top_k_is_sorted_with_cosine_scores(kb):
    hits = kb.search("What is the capital of France?", k=3)
    assert len(hits) == 3
    assert hits[0]["id"] in {item_id("text", "a"), item_id("table", "r1")}
    assert all(-1.0 <= h["score"] <= 1.0 for h in hits)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)


def test_modality_and_source_filters(kb):
    assert {h["modality"] for h in kb.search("Paris", k=10, modalities=["image"])} == {"image"}
    hits = kb.search("capital", k=10, sources=["cook"])
    assert [h["title"] for h in hits] == ["Bread"]
    assert {h["source"] for h in kb.search("capital", k=10, sources=["wiki", "t"])} == {"wiki", "t"}


def test_radius_returns_everything_within_and_nothing_beyond(kb):
    close = kb.search("Paris is the capital of France.", radius=0.05)
    assert [h["id"] for h in close] == [item_id("text", "a")]
    wide = kb.search("Paris is the capital of France.", radius=2.0)
    assert len(wide) == 6
    assert all(1.0 - h["score"] <= 0.05 + 1e-6 for h in close)


def test_stored_fields_round_trip(kb):
    (page,) = kb.get([item_id("page", "doc.pdf#1")])
    assert page["page"] == 1 and page["source"] == "doc.pdf" and page["modality"] == "page"
    got = kb.get([item_id("text", "b"), "text-unknown", item_id("text", "a"), item_id("text", "b")])
    assert [h["title"] for h in got] == ["Berlin", "Paris", "Berlin"]


def test_raw_vectors_match_the_collection(kb):
    ids, matrix = kb.vectors("text")
    assert matrix.shape == (3, 384) and len(ids) == 3
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-4)
    direct = kb.embedder.encode([items()[0].embed_text()])[0]
    assert np.allclose(matrix[ids.index(item_id("text", "a"))], direct, atol=1e-4)
    kb.add([Item("text", "d", "New text.")])
    assert kb.vectors("text")[1].shape[0] == 4  # cache follows additions


def test_query_vector_may_be_passed_in(kb):
    vec = kb.embedder.encode_one("capital of Germany")
    assert kb.search(vec, k=1)[0]["title"] == "Berlin"


def test_another_embedder_is_refused(kb, tmp_path):
    other = KnowledgeBase(tmp_path / "kb", embedder="some-other-model")
    with pytest.raises(KnowledgeBaseError, match="indexed with embedder 'all-MiniLM-L6-v2'"):
        other.search("x")


def test_reading_a_missing_knowledge_base_is_an_error(tmp_path):
    with pytest.raises(KnowledgeBaseError, match="hopgraph index"):
        KnowledgeBase(tmp_path / "none", must_exist=True)
    assert not (tmp_path / "none").exists()


def test_a_search_reads_nothing_that_grows_with_the_kb(tmp_path, monkeypatch):
    """`KnowledgeBase.search` counted each collection twice per modality per query (62 ms a
    count at 1M vectors, linear in the KB: 137 ms a search against Chroma's own 3 ms). It
    counts nothing now, asks for a missing collection once until the KB is written, and while
    a source version is hidden sends Chroma no `$nin` filter (a scan of every item's metadata)
    where the visible nearest items suffice."""
    from chromadb.api.client import Client
    from chromadb.api.models.Collection import Collection

    store = KnowledgeBase(tmp_path / "kb")
    store.add(
        [Item("text", f"k{i}", f"Fact {i} about town {i}.", title=f"Town {i}") for i in range(40)]
    )

    def no_count(self):
        raise AssertionError("a collection was counted on the query path")

    asked, wheres = [], []
    get_collection, query = Client.get_collection, Collection.query

    def get_spy(self, name, *a, **kw):
        asked.append(name)
        return get_collection(self, name, *a, **kw)

    def query_spy(self, *a, **kw):
        wheres.append(kw.get("where"))
        return query(self, *a, **kw)

    monkeypatch.setattr(Collection, "count", no_count)
    monkeypatch.setattr(Client, "get_collection", get_spy)
    monkeypatch.setattr(Collection, "query", query_spy)
    for _ in range(5):
        assert store.search("Which fact is about town 3?", k=3)[0]["text"] == "Fact 3 about town 3."
    assert sorted(asked) == ["hopgraph-image", "hopgraph-page", "hopgraph-table"]
    assert wheres == [None] * 5

    # a version being written is hidden: its items never come back, and no $nin is sent
    new = [
        Item("text", f"n{j}", f"Fact 3 about town 3, newly written, copy {j}.") for j in range(10)
    ]
    store.registry.begin("/docs/new.txt", "folder", "v2", {})
    store.registry.hold("/docs/new.txt", "v2", [(it.id, "text") for it in new])
    store.add(new, owners={it.id: ("/docs/new.txt", "v2") for it in new})
    assert store.hidden() == ["v2"]
    wheres.clear()
    hits = store.search("Which fact is about town 17?", k=3)
    assert hits[0]["text"] == "Fact 17 about town 17." and len(hits) == 3
    assert wheres == [None]
    # where the nearest are all hidden, the engine's filter finds the visible ones
    hits = store.search("Which fact is about town 3, newly written?", k=3)
    assert len(hits) == 3 and not any("newly" in h["text"] for h in hits)
    assert "$nin" in str(wheres[-1]) and len(wheres) == 3
