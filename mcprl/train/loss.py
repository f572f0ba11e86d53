"""GRPO as pure functions over tensors: group advantages and the clipped token-level loss."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


def group_advantages(rewards: list[float], scale: bool = True, eps: float = 1e-6) -> list[float] | None:
    """Reward minus the group mean (over the group std when `scale`); None for zero variance."""
    if len(rewards) < 2:
        return None
    mean = sum(rewards) / len(rewards)
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards))
    if std < eps:
        return None
    return [(r - mean) / (std if scale else 1.0) for r in rewards]


@dataclass
class LossInputs:
    """Per-token tensors of one micro-batch, all shaped [B, T] and aligned to the predicted token."""

    logprobs: torch.Tensor  # under the policy being trained (requires grad)
    old_logprobs: torch.Tensor  # recorded at sampling time
    advantages: torch.Tensor
    weights: torch.Tensor  # 0 off the sampled tokens; normalisation is folded in here
    ref_logprobs: torch.Tensor | None = None


def grpo_loss(
    x: LossInputs, *, epsilon: float, epsilon_high: float | None, beta: float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Clipped surrogate (+ beta * k3 KL to the reference). Returns the weighted sum and sums for metrics."""
    log_ratio = (x.logprobs - x.old_logprobs).clamp(-20, 20)
    ratio = log_ratio.exp()
    hi = epsilon if epsilon_high is None else epsilon_high
    unclipped = ratio * x.advantages
    clipped = ratio.clamp(1 - epsilon, 1 + hi) * x.advantages
    per_token = -torch.minimum(unclipped, clipped)
    on = (x.weights > 0).float()
    stats = {
        # tokens where the clipped term is the one taken (so no gradient): ratio above 1 + hi with a
        # positive advantage, below 1 - epsilon with a negative one
        "clip_frac": ((clipped < unclipped).float() * on).sum(),
        "ratio": (ratio.detach() * on).sum(),
        "tokens": on.sum(),
    }
    if beta > 0 and x.ref_logprobs is not None:
        d = x.ref_logprobs - x.logprobs
        kl = d.exp() - d - 1
        per_token = per_token + beta * kl
        stats["kl"] = (kl.detach() * on).sum()
    return (per_token * x.weights).sum(), stats
