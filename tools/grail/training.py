"""Training GRAIL on CPU: the alignment adapter (Eq. 3-5, anchor = query), the gap module
(InfoNCE with in-batch negatives and hard distractors, Eq. 10-12) and the router (Eq. 13).
Data are leave-one-out instances built from a question file with gold evidence (§5.1.1)."""

from __future__ import annotations

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
        opt, len(instances), batch_size, rng, epochs,
        lambda idx: gap_loss(model, [instances[i] for i in idx], searcher, mode),
    )  # fmt: skip
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
        opt, len(chains), batch_size, rng, epochs,
        lambda idx: alignment_loss(model, [chains[i] for i in idx], searcher, model.tau_base),
    )  # fmt: skip


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
