"""A user's strategy for unsolved groups, named `tests.user_strategies:recording` in the run tests (`unsolved`)."""

from __future__ import annotations

from mcprl.run.unsolved import Step, Strategy
from mcprl.types import TrajectoryGroup

CALLS: list[tuple[str, int]] = []  # (hook, groups it was given), in order


async def on_scored(step: Step, groups: list[TrajectoryGroup]) -> None:
    CALLS.append(("scored", len(groups)))


async def on_collected(step: Step, groups: list[TrajectoryGroup]) -> None:
    CALLS.append(("collected", len(groups)))


recording = Strategy(scored=on_scored, collected=on_collected)

NOT_A_STRATEGY = 3
