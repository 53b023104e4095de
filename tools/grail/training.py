"""Training GRAIL on CPU: the alignment adapter (Eq. 3-5, anchor = query), the gap module
(InfoNCE with in-batch negatives and hard distractors, Eq. 10-12) and the router (Eq. 13).
Data are leave-one-out instances built from a question file with gold evidence (§5.1.1)."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from hopgraph.tools.grail.models import GrailModel
from hopgraph.tools.grail.retrieval import MatrixSearcher
from hopgraph.tools.grail.steering import pad_context


@dataclass
class Instance:
    """One evidence-set-completion case: find ``target`` given ``context`` (E_p = E* minus it)."""

    qid: str
    qtype: str
    q: torch.Tensor
    context: list[str]
    target: str
    distractors: list[str]


def leave_one_out(
    qid: str,
    qtype: str,
    q: torch.Tensor,
    gold: Sequence[str],
    searcher: MatrixSearcher,
    n_distractors: int = 3,
) -> list[Instance]:
    """Every gold item withheld in turn (|E*| >= 2); hard distractors = the raw query's top
    non-gold hits, mined from the index."""
    gold = [g for g in dict.fromkeys(gold) if g in searcher.row]
    if len(gold) < 2:
        return []
    mined = [i for i, _ in searcher.search(q, n_distractors, exclude=set(gold))]
    return [Instance(qid, qtype, q, [g for g in gold if g != t], t, mined) for t in gold]


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _batches(n: int, size: int, rng: random.Random) -> list[list[int]]:
    order = list(range(n))
    rng.shuffle(order)
    return [order[i : i + size] for i in range(0, n, size)]


def gap_loss(
    model: GrailModel, batch: list[Instance], searcher: MatrixSearcher, mode: str = "gap"
) -> torch.Tensor:
    """L_InfoNCE (Eq. 10): positives e_t, in-batch negatives (other targets), hard distractors."""
    q = model.project(torch.stack([b.q for b in batch]))
    ctx, mask = pad_context(
        [model.project(searcher.vectors(b.context)) for b in batch], searcher.dim
    )
    out = model.steer(mode, q, ctx, mask)
    h = F.normalize(out.h_req, dim=-1)
    targets = model.project(searcher.vectors([b.target for b in batch]))  # (B, d)
    logits = h @ targets.T  # in-batch: column y is sample y's target
    hard = [
        model.project(searcher.vectors(b.distractors))
        if b.distractors
        else torch.zeros(0, searcher.dim)
        for b in batch
    ]
    z, zmask = pad_context(hard, searcher.dim)
    hard_logits = torch.einsum("bd,bmd->bm", h, z).masked_fill(~zmask, float("-inf"))
    all_logits = torch.cat([logits, hard_logits], dim=1) / out.tau[:, None]  # Eq. 11-12
    # a target that recurs in the batch is a positive for every sample that wants it, never
    # an in-batch negative: -log(Σ_pos P / (Σ_pos P + N))
    names = [b.target for b in batch]
    same = torch.tensor([[a == b for b in names] for a in names])
    positive = torch.cat([same, torch.zeros_like(zmask)], dim=1)
    pos_logits = all_logits.masked_fill(~positive, float("-inf"))
    return (torch.logsumexp(all_logits, dim=1) - torch.logsumexp(pos_logits, dim=1)).mean()


def alignment_loss(
    model: GrailModel,
    batch: list[tuple[torch.Tensor, list[str]]],
    searcher: MatrixSearcher,
    tau: float = 0.05,
) -> torch.Tensor:
    """L_align (Eq. 3-5) with anchor = query: each gold item of chain x against the gold
    items of the other chains in the batch."""
    anchors = model.project(torch.stack([q for q, _ in batch]))
    items, owner = [], []
    for x, (_, gold) in enumerate(batch):
        items += gold
        owner += [x] * len(gold)
    evid = model.project(searcher.vectors(items))
    sims = anchors @ evid.T / tau  # (N, total gold)
    owner_t = torch.tensor(owner)
    losses = []
    for x in range(len(batch)):
        own = owner_t == x
        negatives = (
            torch.logsumexp(sims[x, ~own], dim=0)
            if (~own).any()
            else sims.new_tensor(float("-inf"))
        )
        pos = sims[x, own]
        losses.append(-(pos - torch.logaddexp(pos, negatives.expand_as(pos))).mean())
    return torch.stack(losses).mean()


def train_gap(
    model: GrailModel,
    instances: list[Instance],
    searcher: MatrixSearcher,
    *,
    epochs: int = 10,
    batch_size: int = 32,
    lr: float = 1e-4,
    seed: int = 0,
    mode: str = "gap",
) -> list[float]:
    """AdamW over the gap module (and the adapter, if any); returns the mean loss per epoch."""
    seed_everything(seed)
    rng = random.Random(seed)
    params = list(model.gap.parameters()) + (
        list(model.aligner.parameters()) if model.aligner else []
    )
    opt = torch.optim.AdamW(params, lr=lr)
    model.train()
    history = _fit(
        opt,
        len(instances),
        batch_size,
        rng,
        epochs,
        lambda idx: gap_loss(model, [instances[i] for i in idx], searcher, mode),
    )
    model.eval()
    model.trained = True
    return history


def train_alignment(
    model: GrailModel,
    chains: list[tuple[torch.Tensor, list[str]]],
    searcher: MatrixSearcher,
    *,
    epochs: int = 5,
    batch_size: int = 32,
    lr: float = 1e-4,
    seed: int = 0,
) -> list[float]:
    if model.aligner is None:
        raise ValueError("this GrailModel has no alignment adapter (align=True)")
    seed_everything(seed)
    rng = random.Random(seed)
    opt = torch.optim.AdamW(model.aligner.parameters(), lr=lr)
    return _fit(
        opt,
        len(chains),
        batch_size,
        rng,
        epochs,
        lambda idx: alignment_loss(model, [chains[i] for i in idx], searcher, model.tau_base),
    )


def _fit(
    opt: torch.optim.Optimizer,
    count: int,
    batch_size: int,
    rng: random.Random,
    epochs: int,
    loss_of: Callable[[list[int]], torch.Tensor],
) -> list[float]:
    """Minibatch descent: each epoch shuffles ``count`` items into batches (``rng``) and steps
    on ``loss_of(batch indices)``; the mean loss per epoch."""
    history = []
    for _ in range(epochs):
        total = 0.0
        batches = _batches(count, batch_size, rng)
        for idx in batches:
            loss = loss_of(idx)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach())
        history.append(total / max(len(batches), 1))
    return history


def train_router(
    model: GrailModel,
    q: torch.Tensor,
    labels: torch.Tensor,
    *,
    epochs: int = 200,
    lr: float = 1e-2,
    seed: int = 0,
) -> list[float]:
    """Cross-entropy → {0 additive, 1 gap} (Eq. 13), full-batch AdamW, on the query as the
    router sees it at inference: raw embeddings ``q`` projected into the aligned space."""
    if model.router is None:
        raise ValueError("this GrailModel has no router (router=True)")
    seed_everything(seed)
    with torch.no_grad():
        x = model.project(q)
    opt = torch.optim.AdamW(model.router.parameters(), lr=lr, weight_decay=1e-3)
    history = []
    for _ in range(epochs):
        loss = F.cross_entropy(model.router(x), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(float(loss.detach()))
    return history


# -- training a GRAIL folder from questions with gold evidence (``hopgraph grail train``) ----
def split_of(qid: str, test_share: float = 0.5, seed: int = 0) -> str:
    """A stable train/test split by id hash (never tuned on the test part)."""
    h = int(hashlib.sha1(f"{seed}:{qid}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "test" if h < test_share else "train"


def instances_for(
    questions: list, qvecs: np.ndarray, searcher: MatrixSearcher, n_distractors: int = 3
) -> list[Instance]:
    out: list[Instance] = []
    for q, vec in zip(questions, qvecs, strict=True):
        out += leave_one_out(
            q.id, q.type, torch.as_tensor(vec), q.evidence, searcher, n_distractors
        )
    return out


ROUTE_GAP_TYPES = ("Compose", "Compare")
"""MultimodalQA types routed to gap steering (the paper's compositional tasks); the rest
(single-modality and Intersect) aggregate and go to additive steering."""


def route_label(qtype: str) -> int:
    return int(qtype.startswith(ROUTE_GAP_TYPES))


def embed_questions(kb, questions: list) -> np.ndarray:  # noqa: ANN001
    """The questions' texts in the KB's space."""
    return kb.embedder.encode([q.question for q in questions])


def run_train(
    kb,
    questions: list,
    out: str,
    *,
    epochs: int = 100,
    seed: int = 0,  # noqa: ANN001
    test_share: float = 0.5,
    align: bool = True,
    router_questions: list | None = None,
    batch_size: int = 32,
    lr: float = 1e-4,
    source: str = "",
) -> dict:
    """Train on the ``train`` part of the split; save weights and a card; return the card.
    The adapter and the gap module train for ``epochs`` each (B.3: 100, AdamW, batch 32, lr
    1e-4). The gap module is the specialist of the compositional types: where the training
    instances carry types of both kinds, it trains on its own types only (Sec. 5.3: "each
    optimized exclusively for their respective top-performing question type"); where they
    carry one kind (HotpotQA; MultimodalQA over image titles, whose compositional questions
    leave no instance) it trains on all of them, never on none. The additive specialist has
    no weights to train."""
    from hopgraph.tools.grail.models import kb_state

    seed_everything(seed)
    searcher = MatrixSearcher.from_kb(kb)
    train_qs = [q for q in questions if split_of(q.id, test_share, seed) == "train"]
    qvecs = embed_questions(kb, train_qs)
    instances = instances_for(train_qs, qvecs, searcher)
    if not instances:
        raise ValueError(
            f"no evidence-completion instance among the {len(train_qs)} training questions: "
            "none has two or more gold items in the knowledge base"
        )
    kinds = {route_label(i.qtype) for i in instances}
    gap_instances = [i for i in instances if route_label(i.qtype)] if kinds == {0, 1} else instances
    model = GrailModel(searcher.dim, align=align, router=router_questions is not None)
    card: dict = {
        "source": source,
        "split": {"test_share": test_share, "seed": seed, "part": "train"},
        "questions": len(train_qs),
        "instances": len(instances),
        "epochs": epochs,
        "align_epochs": epochs if align else 0,
        "gap_trained_on": sorted({i.qtype for i in gap_instances}),
        "gap_instances": len(gap_instances),
        "batch_size": batch_size,
        "lr": lr,
        "optimizer": "AdamW",
        "seed": seed,
        "embedder": kb.embedder_name,
        "kb": kb_state(kb),
    }
    if align:
        chains = [
            (torch.as_tensor(v), [g for g in q.evidence if g in searcher.row])
            for q, v in zip(train_qs, qvecs, strict=True)
        ]
        chains = [c for c in chains if c[1]]
        card["align_loss"] = train_alignment(
            model,
            chains,
            searcher,
            epochs=epochs,
            batch_size=batch_size,
            lr=lr,
            seed=seed,
        )
    card["gap_loss"] = train_gap(
        model, gap_instances, searcher, epochs=epochs, batch_size=batch_size, lr=lr, seed=seed
    )
    if router_questions is not None:
        card["router"] = _trained_router(model, kb, router_questions, test_share, seed)
    model.save(out, card)
    return card


def _trained_router(model: GrailModel, kb, questions: list, test_share: float, seed: int) -> dict:  # noqa: ANN001
    """The router (App. B.2) trained on the train part of ``questions``, with its accuracy
    on the held-out part as routed, beside the majority baseline."""
    rq_train = [q for q in questions if split_of(q.id, test_share, seed) == "train"]
    rq_test = [q for q in questions if split_of(q.id, test_share, seed) == "test"]
    xs, xt = (torch.as_tensor(embed_questions(kb, part)) for part in (rq_train, rq_test))
    ys = torch.tensor([route_label(q.type) for q in rq_train])
    yt = torch.tensor([route_label(q.type) for q in rq_test])
    train_router(model, xs, ys, seed=seed)
    with torch.no_grad():
        acc = float((model.route(model.project(xt)) == yt).float().mean())  # as routed
    return {
        "train": len(rq_train),
        "heldout": len(rq_test),
        "heldout_accuracy": round(acc, 4),
        "gap_types": list(ROUTE_GAP_TYPES),
        "majority_baseline": round(max(float(yt.float().mean()), 1 - float(yt.float().mean())), 4),
    }
