"""Keep the scenarios an agent can solve at least sometimes (a task never solved teaches GRPO
nothing): roll each out a few times with `attempt`, judge the group, and keep it when some
valid trajectory reaches `threshold`. Each kept scenario records its `solve_rate` in metadata."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence

import anyio
from pydantic import BaseModel, Field

from mcprl.judges.base import Judge
from mcprl.types import Scenario, Trajectory, TrajectoryGroup

Attempt = Callable[[Scenario], "Trajectory | Awaitable[Trajectory]"]


class SolvabilityReport(BaseModel):
    checked: int = 0
    kept: int = 0
    unsolved: int = 0
    unjudged: int = 0  # the judge skipped the group: not known to be solvable, so dropped
    reasons: list[str] = Field(default_factory=list)  # why groups were unjudged


async def _attempt_group(scenario: Scenario, attempt: Attempt, attempts: int) -> TrajectoryGroup:
    group = TrajectoryGroup(scenario=scenario)
    for _ in range(attempts):
        try:
            result = attempt(scenario)
            trajectory = await result if inspect.isawaitable(result) else result
        except Exception as e:  # a crashed rollout is a failed attempt, not a crashed filter
            group.exceptions.append(f"{type(e).__name__}: {e}")
            continue
        group.trajectories.append(trajectory)
    return group


async def filter_solvable(
    scenarios: Sequence[Scenario],
    attempt: Attempt,
    judge: Judge,
    *,
    attempts: int = 4,
    threshold: float = 0.5,
    concurrency: int = 2,
) -> tuple[list[Scenario], SolvabilityReport]:
    """The solvable scenarios (copies, input order kept) and what happened to the rest."""
    report = SolvabilityReport(checked=len(scenarios))
    solve_rates: dict[int, float] = {}
    limiter = anyio.CapacityLimiter(concurrency)

    async def check(i: int, scenario: Scenario) -> None:
        async with limiter:
            group = await _attempt_group(scenario, attempt, attempts)
            await judge.score_group(group)
        if group.skipped or not group.valid:
            errors = group.exceptions + [str(t.error) for t in group.trajectories]
            report.unjudged += 1
            report.reasons.append(f"{scenario.id}: {group.skipped or 'every attempt failed, last: ' + errors[-1]}")
            return
        solved = sum(t.reward >= threshold for t in group.valid)
        if solved:
            solve_rates[i] = solved / len(group.valid)
        else:
            report.unsolved += 1

    async with anyio.create_task_group() as tg:
        for i, scenario in enumerate(scenarios):
            tg.start_soon(check, i, scenario)
    kept = [
        s.model_copy(update={"metadata": {**s.metadata, "solve_rate": solve_rates[i]}})
        for i, s in enumerate(scenarios)
        if i in solve_rates
    ]
    report.kept = len(kept)
    return kept, report
