import math

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

from hopgraph.tools.grail.models import GrailModel
from hopgraph.tools.grail.retrieval import Grail, MatrixSearcher, parse_schedule
from hopgraph.tools.grail.steering import (
    GapSteering,
    additive,
    attention_context,
    layer_norm,
    pad_context,
    project_out,
)
from hopgraph.tools.grail.training import Instance, gap_loss, train_gap


def test_attention_context_hand_computed():
    q = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    e1, e2 = torch.tensor([2.0, 0.0, 0.0, 0.0]), torch.tensor([0.0, 0.0, 2.0, 0.0])
    ctx, mask = pad_context([torch.stack([e1, e2])], 4)
    a1 = math.exp(2 / 2) / (math.exp(2 / 2) + math.exp(0))  # softmax(e·q/√d), d = 4
    expected = layer_norm((a1 * e1 + (1 - a1) * e2)[None])
    assert torch.allclose(attention_context(q, ctx, mask), expected, atol=1e-6)


def test_orthogonal_context_changes_nothing():
    q = torch.tensor([[1.0, -1.0, 0.0, 0.0]])
    ctx, mask = pad_context([torch.tensor([[0.0, 0.0, 1.0, -1.0]])], 4)
    h_ctx = attention_context(q, ctx, mask)
    assert float((q * h_ctx).sum()) == pytest.approx(0.0, abs=1e-6)
    for g in (0.3, 1.0):
        assert torch.allclose(project_out(q, h_ctx, torch.tensor([g])), q, atol=1e-6)


def test_parallel_context_is_removed_as_gate_goes_to_one():
    q = torch.tensor([[1.0, -1.0, 2.0, -2.0]])
    ctx, mask = pad_context([q.clone()], 4)
    h_ctx = attention_context(q, ctx, mask)
    norms = [float(project_out(q, h_ctx, torch.tensor([g])).norm()) for g in (0.0, 0.5, 0.9, 1.0)]
    assert norms[0] == pytest.approx(float(q.norm()), rel=1e-5)
    assert norms[1] == pytest.approx(0.5 * norms[0], rel=1e-5)
    assert norms == sorted(norms, reverse=True) and norms[-1] == pytest.approx(0.0, abs=1e-5)


def test_additive_is_ln_of_lifted_q_plus_ln_hctx():
    q = torch.tensor([[0.5, 0.1, -0.3, 0.2]])
    ctx, mask = pad_context([torch.tensor([[0.2, 0.4, 0.1, -0.5]])], 4)
    out = additive(q, ctx, mask)
    h_ctx = layer_norm(layer_norm(ctx[0, :1]))  # one item: α = 1
    assert torch.allclose(out.h_req, layer_norm(layer_norm(q) + h_ctx), atol=1e-5)


def _unit(*shape: int) -> torch.Tensor:
    return F.normalize(torch.randn(*shape), dim=-1)


def _cos(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(F.cosine_similarity(a.reshape(1, -1), b.reshape(1, -1)).detach())


def test_additive_weighs_query_and_context_alike_at_encoder_scale():
    """Unit vectors as the encoder gives them (d = 384): the additive request must follow the
    query as much as the context (before the fix it was the context to cos 0.999)."""
    torch.manual_seed(3)
    d = 384
    q, other_q = _unit(1, d), _unit(1, d)
    ctx, mask = pad_context([_unit(3, d)], d)
    out = additive(q, ctx, mask)
    assert 0.55 < _cos(out.h_req, q) < 0.85
    assert 0.55 < _cos(out.h_req, out.h_ctx) < 0.85
    moved = additive(other_q, ctx, mask).h_req
    assert _cos(moved, out.h_req) < 0.8  # a new query moves the request


def test_eq9_mixing_weights_decide_the_mix_not_the_norms():
    torch.manual_seed(4)
    d = 384
    gap = GapSteering(d)
    with torch.no_grad():
        gap.w_gap.bias.fill_(20.0)  # g ≈ 1: q_gap ⟂ h_ctx
        gap.w_mix.bias.zero_()  # w1 = w2 = 0.5
    q = _unit(1, d)
    ctx, mask = pad_context([_unit(2, d)], d)
    out = gap(q, ctx, mask)
    assert float(out.w1[0].detach()) == pytest.approx(0.5, abs=1e-4)
    a, b = _cos(out.h_req, out.q_gap), _cos(out.h_req, out.h_ctx)
    assert abs(a - b) < 0.1 and a > 0.5  # an even mix reads as an even mix
    with torch.no_grad():
        gap.w_mix.bias.copy_(torch.tensor([4.0, -4.0]))  # w1 ≈ 1
    assert _cos(gap(q, ctx, mask).h_req, out.q_gap) > 0.99


def test_training_free_gate_and_diagnostics():
    gap = GapSteering(4, fixed_gate=0.3)
    q = torch.tensor([[1.0, -1.0, 2.0, -2.0]])
    ctx, mask = pad_context([torch.tensor([[1.0, 0.0, -1.0, 0.0]])], 4)
    out = gap(q, ctx, mask)
    assert out.diagnostics() == pytest.approx({"g": 0.3, "w1": 1.0, "w2": 0.0, "tau": 0.05})
    assert torch.allclose(out.h_req, layer_norm(out.q_gap), atol=1e-6)


@pytest.mark.parametrize("fixed_gate", [0.7, None])
def test_one_querys_step_is_the_batched_steering(fixed_gate):
    """Issue 74: one query holding evidence takes the short path (no masked rows, torch's LN
    for one row); it must steer as the batched path does for the same row beside a row that
    holds nothing and one holding more, at d = 384."""
    torch.manual_seed(1)
    gap = GapSteering(384, fixed_gate=fixed_gate)
    nn.init.normal_(gap.w_gap.weight, std=0.05)
    q, held = torch.randn(3, 384), [torch.randn(3, 384), torch.zeros(0, 384), torch.randn(5, 384)]
    batched = gap(q, *pad_context(held, 384))
    alone = gap(q[:1], *pad_context(held[:1], 384))
    for name in ("h_req", "q_gap", "h_ctx", "g", "w1", "w2", "tau"):
        assert torch.allclose(getattr(alone, name), getattr(batched, name)[:1], atol=1e-5), name
    assert torch.equal(batched.h_req[1], q[1]) and float(batched.g[1]) == 0.0  # nothing held


def test_layer_norm_is_torchs_at_real_sizes():
    """Issue 74: LN is written out (F.layer_norm's CPU kernel forks its thread pool for any two
    rows, ~8 ms beside a busy llama.cpp); it must stay torch's LN, one query's context and a
    training batch alike."""
    torch.manual_seed(0)
    for shape in [(1, 384), (1, 3, 384), (64, 8, 384), (4096, 384)]:
        x = torch.randn(*shape) * 3 + 1
        assert torch.allclose(layer_norm(x), F.layer_norm(x, shape[-1:]), atol=1e-5)


def test_empty_context_and_mixed_batch():
    gap = GapSteering(4)
    q = torch.randn(3, 4)
    ctx, mask = pad_context([torch.zeros(0, 4), torch.randn(1, 4), torch.randn(3, 4)], 4)
    out = gap(q, ctx, mask)
    assert (
        torch.allclose(out.h_req[0], q[0]) and float(out.g[0].detach()) == 0.0
    )  # E_p = ∅: q itself
    assert not torch.allclose(out.h_req[1], q[1])  # |E_p| = 1 steers
    assert torch.isfinite(out.h_req).all()
    add = additive(q, ctx, mask)
    assert torch.allclose(add.h_req[0], q[0])


def test_gradients_reach_every_trained_parameter():
    torch.manual_seed(0)
    model = GrailModel(8, align=True, router=True)
    searcher = MatrixSearcher([f"e{i}" for i in range(20)], torch.randn(20, 8))
    batch = [
        Instance(f"q{i}", "", torch.randn(8), [f"e{i}"], f"e{i + 5}", [f"e{i + 10}"])
        for i in range(4)
    ]
    gap_loss(model, batch, searcher).backward()
    model.router(torch.randn(2, 8)).sum().backward()
    for name, p in model.named_parameters():
        if name.startswith("fixed."):
            continue  # the training-free twin has nothing to learn
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_training_on_a_planted_gap_recovers_it():
    """Targets are reachable only by removing the context direction from the query."""
    torch.manual_seed(0)
    d, n = 16, 64
    basis = F.normalize(torch.randn(2 * n, d), dim=-1)
    ctx_dirs, tgt_dirs = basis[:n], basis[n:]
    ids = [f"c{i}" for i in range(n)] + [f"t{i}" for i in range(n)]
    # a decoy close to each context item outranks the target under the raw query
    decoys = F.normalize(ctx_dirs + 0.05 * torch.randn(n, d), dim=-1)
    searcher = MatrixSearcher(
        ids + [f"d{i}" for i in range(n)], torch.cat([ctx_dirs, tgt_dirs, decoys])
    )
    instances = [
        Instance(
            f"q{i}",
            "",
            F.normalize(2.0 * ctx_dirs[i] + tgt_dirs[i], dim=-1),
            [f"c{i}"],
            f"t{i}",
            [f"d{i}"],
        )
        for i in range(n)
    ]
    model = GrailModel(d)
    history = train_gap(model, instances, searcher, epochs=60, batch_size=16, lr=3e-2, seed=0)
    assert history[-1] < 0.5 * history[0]
    grail = Grail(searcher, model)
    hits = [
        grail.search(inst.q, inst.context, 1, "gap")[0][0][0] == inst.target for inst in instances
    ]
    query = [
        grail.search(inst.q, inst.context, 1, "query")[0][0][0] == inst.target for inst in instances
    ]
    assert sum(hits) > 0.8 * n and sum(query) < 0.5 * n
    assert (
        float(grail.steer(instances[0].q, ["c0"], "gap").g[0]) > 0.7
    )  # the gate learned to subtract


@pytest.mark.parametrize(
    "text, sizes",
    [
        ("3+2+3+2", [3, 2, 3, 2]),
        ("8+1+1", [8, 1, 1]),
        ("2*5", [2, 2, 2, 2, 2]),
        ("4+2*3", [4, 2, 2, 2]),
    ],
)
def test_schedules_parse(text, sizes):
    assert parse_schedule(text) == sizes


@pytest.mark.parametrize("bad", ["", "3+", "a+b", "3++2", "0+2", "2*0", "-1+3", None])
def test_bad_schedules_are_refused(bad):
    with pytest.raises(ValueError, match="schedule"):
        parse_schedule(bad)


def test_pool_never_repeats_and_fills_the_schedule():
    torch.manual_seed(1)
    searcher = MatrixSearcher([f"e{i}" for i in range(50)], torch.randn(50, 8))
    grail = Grail(searcher, GrailModel(8))
    steps = grail.build_pool(torch.randn(8), "3+2+3+2", "gap-fixed")
    pool = [i for s in steps for i in s.ids]
    assert [len(s.ids) for s in steps] == [3, 2, 3, 2] and len(set(pool)) == 10
    assert steps[0].mode == "query" and steps[1].mode == "gap-fixed"


def test_duplicate_context_ids_count_once_and_unknown_ids_are_named():
    torch.manual_seed(2)
    searcher = MatrixSearcher([f"e{i}" for i in range(10)], torch.randn(10, 8))
    grail = Grail(searcher, GrailModel(8))
    q = torch.randn(8)
    once = grail.steer(q, ["e1"], "gap-fixed").h_req
    twice = grail.steer(q, ["e1", "e1"], "gap-fixed").h_req
    assert torch.allclose(once, twice)
    with pytest.raises(ValueError, match="not in the knowledge base.*nope"):
        grail.steer(q, ["nope"], "gap-fixed")
    with pytest.raises(ValueError, match="duplicate"):
        MatrixSearcher(["a", "a"], torch.randn(2, 8))


def test_save_and_load_round_trip(tmp_path):
    model = GrailModel(8, align=True, router=True)
    with torch.no_grad():
        model.gap.w_gap.bias.fill_(1.5)
    model.save(tmp_path / "w", {"epochs": 3})
    loaded = GrailModel.load(tmp_path / "w")
    assert loaded.card["epochs"] == 3 and loaded.aligner is not None
    assert torch.equal(loaded.gap.w_gap.bias, model.gap.w_gap.bias)
    with pytest.raises(FileNotFoundError, match="no GRAIL weights"):
        GrailModel.load(tmp_path / "missing")


def test_grail_search_tool_over_a_knowledge_base(tmp_path):
    from hopgraph.graphs import every_context

    Context = every_context()
    from hopgraph.memory.kb import Item, KnowledgeBase
    from hopgraph.tools.grail.tool import make_grail_tool

    kb = KnowledgeBase(tmp_path / "kb")
    items = [
        Item("text", "a", "Marrowick was founded by Odile Varn.", title="Marrowick"),
        Item("text", "b", "Odile Varn was born in the village of Temsa.", title="Odile Varn"),
        Item("text", "c", "Marrowick has a copper lighthouse.", title="Marrowick lighthouse"),
    ]
    kb.add(items)
    tool = make_grail_tool(Context(kb_dir=str(tmp_path / "kb")))
    question = "Where was the founder of Marrowick born?"
    out = tool.invoke({"query": question, "context_ids": [items[0].id], "k": 2})
    assert [h["id"] for h in out] and items[0].id not in [h["id"] for h in out]
    assert {"id", "score", "title", "text", "modality"} <= set(out[0])
    assert tool.name == "grail_search" and "context_ids" in tool.args


def test_router_learns_the_space_it_routes_in():
    """The hybrid router sees the adapter-projected query at inference; trained on raw
    embeddings under a rotating adapter it routes at chance."""
    from hopgraph.tools.grail.training import train_router

    torch.manual_seed(5)
    d, n = 32, 400
    model = GrailModel(d, align=True, router=True)
    with torch.no_grad():
        model.aligner.weight.copy_(torch.linalg.qr(torch.randn(d, d))[0])  # a rotation
    q = _unit(n, d)
    labels = (q[:, 0] > 0).long()  # a rule in the raw space, linear in any rotation of it
    train_router(model, q[:300], labels[:300], epochs=300, lr=5e-2)
    with torch.no_grad():
        routed = model.route(model.project(q[300:]))
    assert float((routed == labels[300:]).float().mean()) > 0.9


def test_untrained_weights_never_run_gap_or_hybrid_silently(tmp_path, monkeypatch):
    from hopgraph.graphs import every_context

    Context = every_context()
    from hopgraph.memory.kb import Item, KnowledgeBase
    from hopgraph.tools import retrieval
    from hopgraph.tools.grail import tool as grail_tool

    kb = KnowledgeBase(tmp_path / "kb")
    kb.add([Item("text", f"t{i}", f"Passage number {i} about topic {i % 3}.") for i in range(6)])
    events = []
    for module in (retrieval, grail_tool):  # a plain search's event, and a steered one's
        monkeypatch.setattr(module, "emit", lambda event: events.append(event.as_event()))
    ctx = Context(kb_dir=str(tmp_path / "kb"), grail_tau_base=0.07)
    held = [next(kb.iter_items("text"))["id"]]
    for mode in ("gap", "hybrid"):
        grail_tool.grail_search("topic 1", held, 2, mode, ctx)
        assert events[-1]["mode"] == "gap-fixed" and events[-1]["requested"] == mode
        assert "trained" in events[-1]["fallback"]
    grail_tool.grail_search("topic 1", held, 2, "additive", ctx)
    assert "fallback" not in events[-1] and events[-1]["tau"] == pytest.approx(0.07)
    assert grail_tool.grail_for(ctx).model.tau_base == pytest.approx(0.07)


def test_hybrid_without_a_router_is_named_not_run_as_gap():
    model = GrailModel(8)
    model.trained = True
    assert model.mode_for("hybrid") == ("gap", pytest.approx(model.mode_for("hybrid")[1]))
    assert "router" in model.mode_for("hybrid")[1]
    with pytest.raises(ValueError, match="router"):
        model.route(torch.randn(2, 8))


def test_a_target_shared_in_the_batch_is_a_positive_not_a_negative():
    """Two samples wanting the same evidence, each steered exactly onto it: the loss must go
    to 0, not sit at log 2 because each one's target is the other's "negative"."""
    d = 16
    vecs = torch.eye(d)
    searcher = MatrixSearcher([f"e{i}" for i in range(d)], vecs)
    model = GrailModel(d, tau_base=0.01)
    batch = [Instance(f"q{i}", "", vecs[3], [], "e3", [f"e{5 + i}"]) for i in range(2)]
    loss = float(gap_loss(model, batch, searcher, mode="query"))
    assert loss < 1e-3
    distinct = [Instance("a", "", vecs[3], [], "e3", []), Instance("b", "", vecs[4], [], "e4", [])]
    assert float(gap_loss(model, distinct, searcher, mode="query")) < 1e-3


def test_a_trained_adapter_steers_over_its_projection_in_the_engine(tmp_path, monkeypatch):
    """Issue 58: with trained alignment weights no process loads the KB (``kb.vectors`` is
    never called); the steered search over the KB's projection kept in Chroma finds what the
    exact in-memory path finds; a KB change makes a new projection and drops the old one."""
    from hopgraph.graphs import every_context

    Context = every_context()
    from hopgraph.memory.kb import COLLECTION_PREFIX, Item, KnowledgeBase
    from hopgraph.tools.grail import tool as grail_tool
    from hopgraph.tools.grail.retrieval import PROJECTED

    kb = KnowledgeBase(tmp_path / "kb")
    kb.add(
        [Item("text", f"t{i}", f"Passage {i} on topic {i % 7} of town {i % 5}.") for i in range(80)]
    )
    d = kb.embedder.dim
    torch.manual_seed(3)
    model = GrailModel(d, align=True)
    with torch.no_grad():  # an adapter that moves the space: a rotation
        model.aligner.weight.copy_(torch.linalg.qr(torch.randn(d, d))[0])
    model.save(tmp_path / "w", {})
    ctx = Context(kb_dir=str(tmp_path / "kb"), grail_weights=str(tmp_path / "w"))
    held = [Item("text", "t3", "").id, Item("text", "t10", "").id]
    exact = Grail(MatrixSearcher.from_kb(kb), GrailModel.load(tmp_path / "w"))
    q = torch.as_tensor(kb.embedder.encode_one("topic 3 of town 3"))
    want, _ = exact.search(q, held, 5, "gap-fixed")

    def whole(*_args, **_kw):
        raise AssertionError("the KB was loaded whole")

    monkeypatch.setattr(KnowledgeBase, "vectors", whole)
    got = grail_tool.grail_search("topic 3 of town 3", held, 5, "gap-fixed", ctx)
    assert [h["id"] for h in got] == [i for i, _ in want]
    assert [h["score"] for h in got] == pytest.approx([round(s, 4) for _, s in want], abs=1e-3)

    def projections() -> list[str]:
        with kb._chroma():
            names = [getattr(c, "name", c) for c in kb.client.list_collections()]
        return [n for n in names if n.startswith(COLLECTION_PREFIX + PROJECTED)]

    (first,) = projections()
    kb.add([Item("text", "new", "Passage new on topic 3 of town 3, added later.")])
    again = grail_tool.grail_search("topic 3 of town 3", held, 5, "gap-fixed", ctx)
    (second,) = projections()
    assert second != first and Item("text", "new", "").id in [h["id"] for h in again]


def test_a_context_without_grails_settings_steers_with_their_defaults(tmp_path):
    """A graph of one's own built on the shared Context (no GRAIL fields) can still steer: its
    search runs with GRAIL's default settings, not an AttributeError."""
    from hopgraph.config import Context
    from hopgraph.memory.kb import Item, KnowledgeBase
    from hopgraph.settings.grail import GrailSettings
    from hopgraph.tools.grail import tool as grail_tool

    kb = KnowledgeBase(tmp_path / "kb")
    kb.add([Item("text", f"t{i}", f"Passage number {i} about topic {i % 3}.") for i in range(6)])
    ctx = Context(kb_dir=str(tmp_path / "kb"))
    assert not hasattr(ctx, "grail_tau_base")
    held = [next(kb.iter_items("text"))["id"]]
    hits = grail_tool.grail_search("topic 1", held, 2, "additive", ctx)
    assert len(hits) == 2 and held[0] not in {h["id"] for h in hits}
    assert grail_tool.grail_for(ctx).model.tau_base == GrailSettings.grail_tau_base


def test_a_grail_step_steers_by_the_vectors_its_hits_came_with_not_a_fetch_by_id(
    tmp_path, monkeypatch
):
    """Issue 74: a GRAIL step fetched its held items' vectors by id every time (9x a search at
    300k vectors). Held items that a search with steering on found keep their stored vectors;
    a write to the KB drops them, so no step steers by a vector the KB no longer holds."""
    from hopgraph.memory.kb import KnowledgeBase
    from hopgraph.tools.grail.retrieval import ChromaSearcher

    rng = np.random.default_rng(3)
    vecs = rng.normal(size=(3000, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    kb = KnowledgeBase(tmp_path / "kb")
    ids = [f"text-{i:06d}" for i in range(3000)]
    kb.add_vectors("text", ids, vecs, [{"source": "s", "parent": "", "src_hash": "v1"}] * 3000)
    fetched = []
    col_type = type(kb.collection("text", create=False))
    real_get = col_type.get
    monkeypatch.setattr(
        col_type,
        "get",
        lambda self, *a, **kw: fetched.append(kw.get("ids")) or real_get(self, *a, **kw),
    )
    grail = Grail(ChromaSearcher(kb, modalities=("text",)), GrailModel(384))
    q = torch.as_tensor(vecs[7])
    held = [h["id"] for h in kb.search(vecs[7], k=10, vectors=True)][:3]
    found, _ = grail.search(q, held, 10, mode="gap-fixed")
    assert fetched == [] and len(found) == 10 and not set(held) & {i for i, _ in found}
    for i in held:  # the kept vectors are the stored ones
        assert np.allclose(kb.stored_vectors([i])[i], vecs[ids.index(i)], atol=1e-6)

    def engine(*a, **kw):
        raise AssertionError("kept vectors asked the engine (or took its lock)")

    with monkeypatch.context() as m:  # every held vector kept: not even the engine's lock
        m.setattr(kb, "_chroma", engine)
        assert set(kb.stored_vectors(held)) == set(held)
    # the next step holds what this one found: still no fetch
    grail.search(q, held + [i for i, _ in found[:2]], 10, mode="gap-fixed")
    assert fetched == []
    kb.add_vectors(
        "text", ["text-new"], vecs[:1], [{"source": "s", "parent": "", "src_hash": "v1"}]
    )
    grail.search(q, held, 10, mode="gap-fixed")
    assert fetched and set(fetched[-1]) == set(held)  # after a write: fetched again, once
