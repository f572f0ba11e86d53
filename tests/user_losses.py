"""A user's loss, named `tests.user_losses:reinforce` in the training tests (`[train] loss`)."""

from __future__ import annotations

import torch

from mcprl.train.config import TrainConfig
from mcprl.train.loss import LossInputs

CALLS: list[float] = []  # the value each call returned, in order


def reinforce(x: LossInputs, config: TrainConfig) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Plain REINFORCE: minus advantage times logprob, weighted; with one sum of its own (`logprob`)."""
    on = (x.weights > 0).float()
    value = -(x.advantages * x.logprobs * x.weights).sum()
    CALLS.append(float(value.detach()))
    return value, {"tokens": on.sum(), "logprob": (x.logprobs.detach() * on).sum()}


NOT_A_FUNCTION = 3
