"""The interface every judge implements, and running one over many groups.

A judge scores a TrajectoryGroup in place and returns it: it sets each valid trajectory's
`reward`, writes its own score under `trajectory.metrics[judge.name]` (so reports can show
each judge separately when they are combined), adds its costs to `group.metrics`, and sets
`group.skipped` to a reason when it cannot score the group (the group is then not trained
on). Failed trajectories (`trajectory.error` set) are never scored and keep reward 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import anyio

from mcprl.types import TrajectoryGroup


class JudgeError(Exception):
    """A judge could not score a group and was told to raise rather than skip it."""


@runtime_checkable
class Judge(Protocol):
    name: str

    async def score_group(self, group: TrajectoryGroup) -> TrajectoryGroup: ...


def zero_failed(group: TrajectoryGroup) -> None:
    """Failed rollouts get no reward, whatever a previous scoring left on them."""
    for t in group.trajectories:
        if t.error is not None:
            t.reward = 0.0


async def score_groups(judge: Judge, groups: Sequence[TrajectoryGroup], concurrency: int = 4) -> list[TrajectoryGroup]:
    """Score `groups` with at most `concurrency` judge calls in flight; order is preserved.

    The first JudgeError (a judge told to raise) cancels the rest and is raised as is."""
    limiter = anyio.CapacityLimiter(concurrency)
    failures: list[JudgeError] = []

    async def one(group: TrajectoryGroup, scope: anyio.CancelScope) -> None:
        async with limiter:
            try:
                await judge.score_group(group)
            except JudgeError as e:
                failures.append(e)
                scope.cancel()

    async with anyio.create_task_group() as tg:
        for group in groups:
            tg.start_soon(one, group, tg.cancel_scope)
    if failures:
        raise failures[0]
    return list(groups)
