"""GRAIL's trainable parts in one module: the query-evidence alignment adapter over frozen
encoders (§4.1), the gap module (§4.2, with a training-free twin) and the hybrid router Φ(q)
(§4.3, Eq. 13). Saved as safetensors with a JSON card of how they were trained."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from torch.nn import functional as F

from hopgraph.tools.grail.steering import GapSteering, Steered, additive, query_only

DEFAULT_FIXED_GATE = 0.3
"""Training-free gate: the mean learned g the paper reports (0.288 overall, App. E Table 7)."""


class GrailModel(nn.Module):
    def __init__(
        self,
        dim: int,
        *,
        tau_base: float = 0.05,
        fixed_gate: float = DEFAULT_FIXED_GATE,
        align: bool = False,
        router: bool = False,
    ):
        super().__init__()
        self.dim = dim
        self.tau_base = tau_base
        self.gap = GapSteering(dim, tau_base)
        self.fixed = GapSteering(dim, tau_base, fixed_gate=fixed_gate)
        self.aligner = nn.Linear(dim, dim, bias=False) if align else None
        if self.aligner is not None:
            nn.init.eye_(self.aligner.weight)  # starts as the frozen encoder's own space
        self.router = nn.Linear(dim, 2) if router else None
        self.card: dict[str, Any] = {}
        self.trained = False
        """True once the gap module was trained here or loaded from weights."""

    def project(self, x: torch.Tensor) -> torch.Tensor:
        """Into the aligned space (identity when no adapter was trained)."""
        return x if self.aligner is None else F.normalize(self.aligner(x), dim=-1)

    def route(self, q: torch.Tensor) -> torch.Tensor:
        """Φ(q) ∈ {0 additive, 1 gap} per row (Eq. 13) for ``q`` in the aligned space."""
        if self.router is None:
            raise ValueError("hybrid mode needs a trained router (hopgraph grail train --router)")
        return self.router(q).argmax(-1)

    def mode_for(self, mode: str) -> tuple[str, str]:
        """The mode these weights can run for ``mode``, and why it differs ('' when not):
        without trained weights, gap and hybrid become gap-fixed (the training-free variant;
        App. E's learned w1 ≈ 1 is why it is a fair stand-in); hybrid without a router, gap."""
        if mode in ("gap", "hybrid") and not self.trained:
            return "gap-fixed", f"{mode} needs trained GRAIL weights (grail_weights); gap-fixed ran"
        if mode == "hybrid" and self.router is None:
            return "gap", "hybrid needs a trained router; these weights have none, gap ran"
        return mode, ""

    def steer(self, mode: str, q: torch.Tensor, ctx: torch.Tensor, mask: torch.Tensor) -> Steered:
        if mode == "query":
            return query_only(q, self.tau_base)
        if mode == "additive":
            return additive(q, ctx, mask, self.tau_base)
        if mode == "gap":
            return self.gap(q, ctx, mask)
        if mode == "gap-fixed":
            return self.fixed(q, ctx, mask)
        if mode == "hybrid":
            use_gap = self.route(q).bool()
            add, gap = additive(q, ctx, mask, self.tau_base), self.gap(q, ctx, mask)
            pick = {
                k: torch.where(use_gap if v.dim() == 1 else use_gap[:, None], getattr(gap, k), v)
                for k, v in vars(add).items()
            }
            return Steered(**pick)
        raise ValueError(f"unknown mode {mode!r}; query, additive, gap, gap-fixed or hybrid")

    # -- persistence ------------------------------------------------------------------------
    def save(self, folder: str | Path, card: dict[str, Any]) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        save_file(
            {k: v.contiguous() for k, v in self.state_dict().items()}, folder / "grail.safetensors"
        )
        meta = {
            "dim": self.dim,
            "tau_base": self.tau_base,
            "fixed_gate": self.fixed.fixed_gate,
            "align": self.aligner is not None,
            "router": self.router is not None,
            **card,
        }
        (folder / "card.json").write_text(json.dumps(meta, indent=2))
        return folder

    @classmethod
    def load(cls, folder: str | Path, tau_base: float | None = None, kb=None) -> GrailModel:  # noqa: ANN001
        """Weights saved by ``save``; ``tau_base`` overrides the trained base temperature. With
        ``kb``, a warning (not a refusal) where the KB changed since they were trained on it."""
        folder = Path(folder)
        card_path, weights = folder / "card.json", folder / "grail.safetensors"
        if not card_path.is_file() or not weights.is_file():
            raise FileNotFoundError(f"no GRAIL weights in {folder} (card.json + grail.safetensors)")
        card = json.loads(card_path.read_text())
        model = cls(
            card["dim"],
            tau_base=card["tau_base"] if tau_base is None else tau_base,
            fixed_gate=card["fixed_gate"],
            align=card["align"],
            router=card["router"],
        )
        model.load_state_dict(load_file(weights))
        model.card = card
        model.trained = True
        if kb is not None and card.get("kb") and card["kb"] != kb_state(kb):
            warnings.warn(
                f"the GRAIL weights in {folder} were trained on {kb.location} as it was "
                f"({card['kb']}); it has changed since ({kb_state(kb)}): they may steer towards "
                "items that are gone (`hopgraph grail train` again)",
                KbChangedWarning,
                stacklevel=2,
            )
        return model.eval()


class KbChangedWarning(UserWarning):
    """Weights were trained on a knowledge base that has changed since."""


def kb_state(kb) -> dict[str, Any]:  # noqa: ANN001
    """What trained weights record of their KB: its sources' versions and its item counts."""
    return {
        "sources": kb.registry.state() if kb.registry is not None else "",
        "counts": kb.counts(),
    }
