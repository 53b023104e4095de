"""GRAIL's query steering operators over precomputed vectors, batched in torch (grail.txt §4,
Algorithm 1 in App. B.2). No LLM is involved anywhere.

Shapes: ``q`` is (B, d); ``ctx`` is (B, m, d) with ``mask`` (B, m) marking real evidence rows
(so a batch may mix |E_p| = 0, 1, ... m). Every operator returns ``Steered``: the request
vector and its diagnostics (gate g, mixing weights w1/w2, temperature tau).

Scale (the paper does not state it): our encoders emit unit vectors, while LN(h_ctx) has norm
√d. Added as they come, a unit q is swamped (at d = 384 the "additive" vector is h_ctx to
cos 0.999) and Eq. 9's weights would mix norms, not meanings. We read the paper's LNs and its
√d-scaled attention (Eq. 7) as vectors at LN scale: every operator first lifts q and each e_i
with ``layer_norm`` (norm √d), so the additive baseline is LN(LN(q) + LN(h_ctx)) and w1 / w2
alone decide Eq. 9's mix. Retrieval is by cosine, so the lift changes no ranking by itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

MODES = ("query", "additive", "gap", "gap-fixed")


def layer_norm(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """LN without learned affine: zero mean, unit variance over the last dimension. Written
    out rather than ``F.layer_norm``, whose CPU kernel forks its thread pool for any two rows:
    beside a busy llama.cpp that fork waits ~8 ms, where one query's steering needs ~0.1 ms
    (measured); these reductions fork only for large inputs. One row (a query's vectors) takes
    torch's fused kernel, which forks from two rows on."""
    if x.numel() == x.shape[-1]:
        return F.layer_norm(x, x.shape[-1:], eps=eps)
    mean = x.mean(-1, keepdim=True)
    return (x - mean) * torch.rsqrt(x.var(-1, correction=0, keepdim=True) + eps)


@dataclass
class Steered:
    h_req: torch.Tensor  # (B, d) request vector
    q_gap: torch.Tensor  # (B, d) query after context-subspace removal (q where none)
    h_ctx: torch.Tensor  # (B, d) aggregated context (zeros where E_p is empty)
    g: torch.Tensor  # (B,) gap gate
    w1: torch.Tensor  # (B,)
    w2: torch.Tensor  # (B,)
    tau: torch.Tensor  # (B,) temperature

    def diagnostics(self, i: int = 0) -> dict[str, float]:
        return {k: float(getattr(self, k)[i]) for k in ("g", "w1", "w2", "tau")}


def attention_context(q: torch.Tensor, ctx: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """h_ctx = LN(Σ α_i e_i), α = softmax_i(e_i·q / √d) over the real rows (Eq. 6-7);
    zeros where a row has no evidence. ``q`` and ``ctx`` at LN scale (see the module note)."""
    d = q.shape[-1]
    logits = torch.bmm(ctx, q.unsqueeze(-1)).squeeze(-1) / math.sqrt(d)  # (B, m)
    has = mask.any(dim=1)
    if bool(has.all()):  # every row holds evidence (one query's step): no all-masked row
        alpha = torch.softmax(logits.masked_fill(~mask, float("-inf")), dim=1)
        return layer_norm(torch.bmm(alpha.unsqueeze(1), ctx).squeeze(1))
    logits = logits.masked_fill(~mask, float("-inf"))
    alpha = torch.softmax(torch.where(has[:, None], logits, torch.zeros_like(logits)), dim=1)
    alpha = alpha * mask  # rows without evidence get all-zero weights
    pooled = torch.bmm(alpha.unsqueeze(1), ctx).squeeze(1)
    return torch.where(has[:, None], layer_norm(pooled), torch.zeros_like(pooled))


def project_out(q: torch.Tensor, h_ctx: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """q_gap = q − g·(q·h_ctx / ‖h_ctx‖²)·h_ctx (Eq. 8); q unchanged where h_ctx = 0."""
    norm2 = (h_ctx * h_ctx).sum(-1, keepdim=True)
    coef = (q * h_ctx).sum(-1, keepdim=True) / norm2.clamp_min(1e-12)
    return q - g[:, None] * coef * h_ctx


def _no_context(q: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return ~mask.any(dim=1) if mask.numel() else torch.ones(q.shape[0], dtype=torch.bool)


def query_only(q: torch.Tensor, tau_base: float = 0.05) -> Steered:
    b = q.shape[0]
    zeros, ones = q.new_zeros(b), q.new_ones(b)
    return Steered(q, q, torch.zeros_like(q), zeros, ones, zeros, ones * tau_base)


def lift(q: torch.Tensor, ctx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """q and every evidence row at LN scale (norm √d), the scale Eq. 6-9 assume."""
    return layer_norm(q), layer_norm(ctx)


def additive(
    q: torch.Tensor, ctx: torch.Tensor, mask: torch.Tensor, tau_base: float = 0.05
) -> Steered:
    """The additive baseline: h_req = LN(q + LN(h_ctx)) (Alg. 1 line 10) with q at LN scale,
    so query and context weigh alike; q where E_p = ∅."""
    lq, lctx = lift(q, ctx)
    h_ctx = attention_context(lq, lctx, mask)
    empty = _no_context(q, mask)
    h_req = torch.where(empty[:, None], q, layer_norm(lq + layer_norm(h_ctx)))
    b = q.shape[0]
    return Steered(
        h_req, q, h_ctx, q.new_zeros(b), q.new_ones(b), q.new_zeros(b), q.new_ones(b) * tau_base
    )


class GapSteering(nn.Module):
    """Gap-aware steering (Eq. 6-9, Alg. 1 lines 2-8) with learnable W_gap, W_mix and the
    temperature MLP; ``fixed_gate`` gives the training-free variant (g constant, w1 = 1)."""

    def __init__(
        self, dim: int, tau_base: float = 0.05, fixed_gate: float | None = None, hidden: int = 64
    ):
        super().__init__()
        self.dim = dim
        self.tau_base = tau_base
        self.fixed_gate = fixed_gate
        self.w_gap = nn.Linear(2 * dim, 1)  # W_gap ∈ R^{1×2d}
        self.w_mix = nn.Linear(2 * dim, 2)  # W_mix ∈ R^{2×2d}
        tau_out = nn.Linear(hidden, 1)
        self.tau_mlp = nn.Sequential(nn.Linear(2 * dim, hidden), nn.Tanh(), tau_out)
        nn.init.zeros_(self.w_gap.weight)
        nn.init.zeros_(self.w_gap.bias)  # g starts at 0.5
        nn.init.zeros_(self.w_mix.weight)
        with torch.no_grad():
            self.w_mix.bias.copy_(torch.tensor([4.0, -4.0]))  # start near w1≈1 (App. E)
        nn.init.normal_(tau_out.weight, std=1e-3)
        nn.init.zeros_(tau_out.bias)  # τ_dyn starts at ≈ τ_base

    def forward(self, q: torch.Tensor, ctx: torch.Tensor, mask: torch.Tensor) -> Steered:
        if self.fixed_gate is not None:
            return self._training_free(q, ctx, mask, self.fixed_gate)
        raw = q
        q, ctx = lift(q, ctx)  # one scale for q, e_i and h_ctx (module note)
        h_ctx = attention_context(q, ctx, mask)  # Eq. 6-7
        qc = torch.cat([q, h_ctx], dim=-1)
        empty = _no_context(q, mask)
        g = torch.sigmoid(self.w_gap(qc)).squeeze(-1)  # g = σ(W_gap[q; h_ctx])
        g = torch.where(empty, torch.zeros_like(g), g)
        q_gap = project_out(q, h_ctx, g)  # Eq. 8
        w = torch.softmax(self.w_mix(torch.cat([q_gap, h_ctx], dim=-1)), dim=-1)
        w1 = torch.where(empty, torch.ones_like(w[:, 0]), w[:, 0])
        w2 = torch.where(empty, torch.zeros_like(w[:, 1]), w[:, 1])
        h_req = layer_norm(w1[:, None] * q_gap + w2[:, None] * h_ctx)  # Eq. 9
        h_req = torch.where(empty[:, None], raw, h_req)
        q_gap = torch.where(empty[:, None], raw, q_gap)
        tau = torch.exp(math.log(self.tau_base) + self.tau_mlp(qc).squeeze(-1))  # τ_dyn
        return Steered(h_req, q_gap, h_ctx, g, w1, w2, tau)

    def _training_free(
        self, q: torch.Tensor, ctx: torch.Tensor, mask: torch.Tensor, gate: float
    ) -> Steered:
        """g constant, w1 = 1, w2 = 0 (Eq. 8-9 with App. E's learned w1 ≈ 1): h_req = LN(q_gap),
        q where a row holds nothing. In few tensor ops: one query's step is bound by their
        dispatch (a few µs each), not by arithmetic."""
        b = q.shape[0]
        lq, lctx = lift(q, ctx)
        h_ctx = attention_context(lq, lctx, mask)  # Eq. 6-7
        empty = _no_context(q, mask)
        g = q.new_full((b,), float(gate)).masked_fill(empty, 0.0)
        q_gap = project_out(lq, h_ctx, g)  # Eq. 8
        h_req = layer_norm(q_gap)  # Eq. 9, w1 = 1
        if bool(empty.any()):
            h_req = torch.where(empty[:, None], q, h_req)
            q_gap = torch.where(empty[:, None], q, q_gap)
        tau = q.new_full((b,), self.tau_base)
        return Steered(h_req, q_gap, h_ctx, g, q.new_ones(b), q.new_zeros(b), tau)


def steer(
    mode: str,
    q: torch.Tensor,
    ctx: torch.Tensor,
    mask: torch.Tensor,
    gap: GapSteering | None = None,
    tau_base: float = 0.05,
) -> Steered:
    """Dispatch by mode: query | additive | gap (trained module) | gap-fixed (training-free)."""
    if mode == "query":
        return query_only(q, tau_base)
    if mode == "additive":
        return additive(q, ctx, mask, tau_base)
    if mode in ("gap", "gap-fixed"):
        if gap is None:
            raise ValueError(f"mode {mode!r} needs a GapSteering module")
        return gap(q, ctx, mask)
    raise ValueError(f"unknown steering mode {mode!r}; one of {', '.join(MODES)}")


def pad_context(rows: list[torch.Tensor], dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack ragged (m_i, d) context blocks into (B, m, d) with a mask."""
    if len(rows) == 1 and rows[0].shape[0]:  # one query's held block: no copy
        return rows[0][None], torch.ones(1, rows[0].shape[0], dtype=torch.bool)
    m = max((r.shape[0] for r in rows), default=0)
    ctx = torch.zeros(len(rows), max(m, 1), dim)
    mask = torch.zeros(len(rows), max(m, 1), dtype=torch.bool)
    for i, r in enumerate(rows):
        if r.shape[0]:
            ctx[i, : r.shape[0]] = r
            mask[i, : r.shape[0]] = True
    return ctx, mask
