import numpy as np

from hopgraph.models.embedders import text_embedder


def test_packaged_minilm_embeds_normalised_and_meaningful():
    emb = text_embedder()
    vecs = emb.encode(
        ["Paris is the capital of France.", "The capital city of France", "a recipe for bread"]
    )
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    sims = vecs @ vecs.T
    assert sims[0, 1] > sims[0, 2] + 0.3
    assert emb.encode([]).shape == (0, 384)


def test_batches_match_single_encodes():
    emb = text_embedder()
    texts = [f"sentence number {i}" for i in range(70)]
    batch = emb.encode(texts)
    assert np.allclose(batch[65], emb.encode_one(texts[65]), atol=1e-5)


def test_a_query_asked_again_is_not_encoded_again_and_gives_the_same_vector():
    """An optimizer's candidates each answer the same validation questions: the second time a
    query is embedded the model does not run, the vector is bit for bit the first one, and a
    caller changing its copy changes nothing kept. Past ``RECENT`` texts the oldest goes."""
    from hopgraph.models.embedders import TextEmbedder

    emb = TextEmbedder()
    runs: list[int] = []
    encode = emb.model.encode
    emb.model.encode = lambda texts, **kw: runs.append(len(texts)) or encode(texts, **kw)
    questions = [f"Which river runs through town {i}?" for i in range(40)]
    first = [emb.encode_one(q) for q in questions]
    assert runs == [1] * 40
    first[0] += 1.0  # the caller's own copy
    again = [emb.encode_one(q) for q in questions]
    assert runs == [1] * 40  # nothing encoded again
    assert all(np.array_equal(a, b) for a, b in zip(again[1:], first[1:], strict=True))
    assert np.array_equal(again[0], TextEmbedder().encode_one(questions[0]))
    emb.RECENT = 8
    emb.encode_one("one more query")
    assert len(emb._recent) == 8 and questions[0] not in emb._recent


def test_the_torch_free_query_embedder_gives_the_packaged_models_vectors():
    """``hopgraph search`` embeds its query with the numpy MiniLM: the same vectors as
    sentence-transformers gives, for every demo passage, a question, and a text past the
    model's 256-token window (cut where sentence-transformers cuts it)."""
    from hopgraph.models.query_embedder import query_embedder
    from hopgraph.questions.demo import PASSAGES

    texts = [*PASSAGES.values(), "Who founded Marrowick?", " ".join(["lighthouse"] * 600), ""]
    light, full = query_embedder().encode(texts), text_embedder().encode(texts)
    assert light.shape == full.shape == (len(texts), 384) and light.dtype == np.float32
    assert np.abs(light - full).max() < 1e-5
    assert query_embedder("some/other-model") is None  # loaded with torch by its caller


def test_a_one_shot_search_never_imports_torch(tmp_path, town_kb):
    import os
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from hopgraph.cli import app\n"
        f"app(['search', 'fact about town 3', '--kb', {str(town_kb)!r}, '-k', '2'],"
        " standalone_mode=False)\n"
        "print('torch' in sys.modules, 'openai' in sys.modules)\n"
    )
    env = {**os.environ, "COLUMNS": "200"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-1500:]
    assert "Town 3" in out.stdout and out.stdout.strip().splitlines()[-1] == "False False"
