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
