"""Run many rollouts concurrently and collect them into TrajectoryGroups; `Rollouts`, where a
run's rollouts run (`LocalRollouts`: in this process; mcprl.cluster's `RayRollouts`: on Ray
workers), behind the one interface the run calls."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Protocol

import anyio

from mcprl.errors import UserError
from mcprl.types import Trajectory, TrajectoryGroup

if TYPE_CHECKING:
    from mcprl.backends.base import Placement
    from mcprl.model.trainable import Model, TrainableModel
    from mcprl.rollout.agents import Agent
    from mcprl.rollout.config import RolloutConfig
    from mcprl.tools.pool import ToolPool
    from mcprl.types import Scenario


class TooManyExceptions(RuntimeError):
    pass


async def gather_trajectory_groups(
    groups: Iterable[Iterable[Awaitable[Trajectory]] | TrajectoryGroup],
    *,
    max_concurrency: int = 8,
    max_exceptions: int | float = float("inf"),
    progress: Callable[[int, int], None] | None = None,
    scenarios: list[Scenario] | None = None,
) -> list[TrajectoryGroup]:
    """Await every rollout (at most `max_concurrency` at once); `scenarios`, the scenario of each group
    in order, is set on the groups (what a judge scores them against).

    A rollout that raises is recorded in its group's `exceptions` (type and message) and the
    group goes on with the others; past `max_exceptions` in total the whole gather fails.
    A rollout that returns a Trajectory with `error` set counts as failed the same way.
    `progress(done, total)` is called after each rollout.
    """
    plan: list[tuple[TrajectoryGroup, list[Awaitable[Trajectory]]]] = []
    for g in groups:
        if isinstance(g, TrajectoryGroup):
            plan.append((g, []))
        else:
            plan.append((TrajectoryGroup(), list(g)))
    if scenarios is not None:
        if len(scenarios) != len(plan):
            raise UserError(f"{len(scenarios)} scenarios for {len(plan)} groups: give one scenario a group")
        for (group, _), scenario in zip(plan, scenarios):
            group.scenario = scenario
    total = sum(len(aws) for _, aws in plan)
    limiter = anyio.CapacityLimiter(max_concurrency)
    state = {"done": 0, "failed": 0}
    results: list[list[Trajectory | None]] = [[None] * len(aws) for _, aws in plan]

    async def run(gi: int, ti: int, aw: Awaitable[Trajectory]) -> None:
        group = plan[gi][0]
        async with limiter:
            try:
                traj = await aw
                if not isinstance(traj, Trajectory):
                    raise TypeError(f"rollout returned {type(traj).__name__}, expected Trajectory")
                results[gi][ti] = traj
                if traj.error:
                    group.exceptions.append(traj.error)
                    state["failed"] += 1
            except Exception as e:
                group.exceptions.append(f"{type(e).__name__}: {e}")
                state["failed"] += 1
        state["done"] += 1
        if progress:
            progress(state["done"], total)
        if state["failed"] > max_exceptions:
            raise TooManyExceptions(
                f"{state['failed']} rollouts failed (max_exceptions={max_exceptions}); last: {group.exceptions[-1]}"
            )

    try:
        async with anyio.create_task_group() as tg:
            for gi, (_, aws) in enumerate(plan):
                for ti, aw in enumerate(aws):
                    tg.start_soon(run, gi, ti, aw)
    except BaseExceptionGroup as eg:
        too_many, _ = eg.split(TooManyExceptions)
        if too_many is None:
            raise
        while isinstance(too_many, BaseExceptionGroup):
            too_many = too_many.exceptions[0]
        raise too_many from None
    for (group, _), trajs in zip(plan, results):
        group.trajectories.extend(t for t in trajs if t is not None)
    return [g for g, _ in plan]


class Rollouts(Protocol):
    """Where a run's rollouts run. The run calls `run` for every batch it rolls out (a step's, its
    retries, an evaluation), `metrics` for each metrics line, and `placement` once, before it serves
    the policy: these rollouts' choice of where that is."""

    async def run(
        self,
        model: Model,
        scenarios: list[Scenario],
        per: int,
        configs: list[RolloutConfig],
        *,
        max_concurrency: int,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[TrajectoryGroup]:
        """One group of `per` rollouts of each scenario, under its own rollout settings (`configs`), by
        the policy `model` names, in the scenarios' order; `progress(done, total)` as rollouts finish."""
        ...

    def metrics(self, groups: list[TrajectoryGroup]) -> dict[str, float]:
        """Figures of where `groups` ran, for the metrics line they are in ({}: none)."""
        ...

    def placement(self, model: TrainableModel, dtype: str) -> Placement | None:
        """Where `model`'s policy is served and trained for these rollouts (None: this machine's runtime)."""
        ...


class LocalRollouts:
    """`Rollouts` in this process: the run's `agent` against its tool `pool`, gathered concurrently."""

    def __init__(self, agent: Agent, pool: ToolPool | None):
        self.agent, self.pool = agent, pool

    async def run(
        self,
        model: Model,
        scenarios: list[Scenario],
        per: int,
        configs: list[RolloutConfig],
        *,
        max_concurrency: int,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[TrajectoryGroup]:
        groups = await gather_trajectory_groups(
            [
                [self.agent(model, s, self.pool, rc.for_rollout(s.id, i)) for i in range(per)]
                for s, rc in zip(scenarios, configs)
            ],
            max_concurrency=max_concurrency,
            progress=progress,
        )
        for g, s in zip(groups, scenarios):
            g.scenario = s
        return groups

    def metrics(self, groups: list[TrajectoryGroup]) -> dict[str, float]:
        return {}

    def placement(self, model: TrainableModel, dtype: str) -> Placement | None:
        return None  # the endpoint this process's agents reach, where the runtime puts it


MOST = 0.5  # a batch where more than this share of rollouts gave nothing to train stops the run


def untrainable(groups: list[TrajectoryGroup]) -> tuple[int, int, str] | None:
    """(count, total, most common reason) when more than MOST of the groups' rollouts failed or
    sampled no token (a prompt longer than the context truncates an episode before its first
    turn), else None. Such a batch trains nothing however long the run goes on: the run stops
    with the reason instead of printing rewards of 0 (a temperature the endpoint refuses, every
    prompt over the context, a broken agent)."""
    reasons: list[str] = []
    total = 0
    for g in groups:
        errored = sum(t.error is not None for t in g.trajectories)
        total += len(g.trajectories) + len(g.exceptions) - errored  # raised rollouts left no trajectory
        reasons += g.exceptions
        reasons += [
            str(t.metadata.get("truncated") or "the episode sampled no token")
            for t in g.trajectories
            if t.error is None and not t.generations
        ]
    if not total or len(reasons) <= MOST * total:
        return None
    # the same failure worded with different numbers (token counts, ids) counts as one
    common, _ = Counter(re.sub(r"\d+", "N", r)[:200] for r in reasons).most_common(1)[0]
    example = next(r for r in reasons if re.sub(r"\d+", "N", r)[:200] == common)
    return len(reasons), total, example
