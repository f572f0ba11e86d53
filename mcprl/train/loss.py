"""The training objective as pure functions over tensors, chosen by name (`[train] loss`).

A `Loss` is a pure function of one micro-batch's per-token tensors (`LossInputs`) and the step's
settings: it returns the weighted sum to backpropagate and sums for the step's metrics. An
`Objective` pairs it with `Advantages`, the pure function that turns a group's rewards into each
trajectory's advantage (or leaves the group or a trajectory out). `LOSSES` holds the registered
objectives; `[train] loss` names one, or is `module:function`, a user's `Loss` (trained with
GRPO's group advantages): `objective(spec)` resolves either, a bad one a one-line UserError.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import torch

from mcprl.errors import UserError
from mcprl.loading import named_object

if TYPE_CHECKING:
    from mcprl.train.config import TrainConfig


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
    ref_logprobs: torch.Tensor | None = None  # the base model's, where config.beta > 0


class Loss(Protocol):
    """One micro-batch's loss: `(the weighted sum to backpropagate, sums for metrics)`. The sums the
    step reports by name: `tokens` (loss tokens; required), `clip_frac`, `ratio`, `kl`; any other is
    summed into the step's metrics as `loss/<name>` (divided by `tokens`)."""

    def __call__(self, x: LossInputs, config: TrainConfig) -> tuple[torch.Tensor, dict[str, torch.Tensor]]: ...


class Advantages(Protocol):
    """A group's rewards to each trajectory's advantage (None: that trajectory is left out of the
    step), or a word saying why the whole group is (counted as `groups_skipped_<word>`)."""

    def __call__(self, rewards: list[float], config: TrainConfig) -> list[float | None] | str: ...


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


def ppo_clip(x: LossInputs, config: TrainConfig) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The PPO-clipped token loss at the step's clip range (`epsilon`, `epsilon_high`) and KL weight (`beta`)."""
    return grpo_loss(x, epsilon=config.epsilon, epsilon_high=config.epsilon_high, beta=config.beta)


def relative(rewards: list[float], config: TrainConfig) -> list[float | None] | str:
    """GRPO's group-relative advantage: reward minus the group mean, over its std with `scale_rewards`."""
    if len(rewards) < 2:
        return "too_small"
    adv = group_advantages(rewards, scale=config.scale_rewards)
    return "zero_variance" if adv is None else list(adv)


def successes(rewards: list[float], config: TrainConfig) -> list[float | None] | str:
    """Rejection-sampling fine-tuning: the successes (reward at least `success_threshold`) alone, each
    at advantage 1 (at ratio 1 the clipped loss's gradient is their tokens' log-likelihood gradient);
    failures are left out of the step, its token count included."""
    if not rewards:
        return "too_small"
    adv = [1.0 if r >= config.success_threshold else None for r in rewards]
    return adv if any(a is not None for a in adv) else "no_success"


def split_advantages(
    advantages: Advantages, rewards: list[float], written: list[bool], config: TrainConfig
) -> list[float | None] | str:
    """Each trajectory's advantage in its group, where `written[i]` says the run wrote trajectory i
    (a reference chain added to a group none of whose rollouts solved its task) rather than
    sampled it. A written trajectory is no sample of the policy, so it is no part of the baseline
    the policy's rollouts are measured against: they get `advantages` over their own rewards (the
    rollout that called the tool that found the answer still ranks above the one that did not,
    instead of every rollout being pushed down alike below the reference's success), and a written
    one its advantage in the whole group. Without written trajectories, or with nothing else, it
    is `advantages` over the group; the rollouts' own rewards all equal leave them out of the step."""
    whole = advantages(rewards, config)
    sampled = [i for i, w in enumerate(written) if not w]
    if isinstance(whole, str) or len(sampled) in (0, len(rewards)):
        return whole
    own = advantages([rewards[i] for i in sampled], config)
    out = list(whole)
    for i, a in zip(sampled, [None] * len(sampled) if isinstance(own, str) else own):
        out[i] = a
    return out


@dataclass(frozen=True)
class Objective:
    """What a step optimises: each trajectory's advantage from its group, and the token loss."""

    loss: Loss
    advantages: Advantages = relative


LOSSES: dict[str, Objective] = {
    # GRPO: group-relative advantages, PPO-clipped token loss (DAPO's asymmetric clip with epsilon_high)
    "grpo": Objective(ppo_clip, relative),
    # rejection-sampling fine-tuning: the successes at advantage 1 (the warm-up, sft_warmup_steps)
    "rft": Objective(ppo_clip, successes),
}

FORMS = f"one of {', '.join(LOSSES)}, or module:function (def function(x: LossInputs, config: TrainConfig))"


def objective(spec: str) -> Objective:
    """The objective `spec` names: a registered one, or `module:function`, a user's `Loss` with GRPO's
    group advantages. A bad spec is a one-line UserError naming the known ones."""
    if spec in LOSSES:
        return LOSSES[spec]
    fn = named_object(spec, "train.loss", "a known loss", FORMS)
    if isinstance(fn, Objective):
        return fn
    if not callable(fn):
        raise UserError(f"train.loss {spec!r} is of type {type(fn).__name__}, not a function; give {FORMS}")
    try:
        inspect.signature(fn).bind(None, None)
    except (TypeError, ValueError):
        raise UserError(f"train.loss {spec!r} does not take (x, config); give {FORMS}") from None
    return Objective(fn)
