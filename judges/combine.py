"""Judges made of judges: a weighted sum, and a gate (a verifier decides, RULER ranks within).

Each part still writes its own score under `trajectory.metrics[part.name]`, so reports can
show `verify` and `ruler` separately next to the combined reward. If a part skips the group,
the combination skips it too, with that part's reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mcprl.errors import UserError
from mcprl.judges.base import Judge
from mcprl.types import SUCCESS_THRESHOLD, TrajectoryGroup


@dataclass
class WeightedJudge:
    """reward = sum(weight * part score). Weights that sum to 1 keep rewards in [0, 1]."""

    parts: list[tuple[Judge, float]]
    name: str = "weighted"

    def __post_init__(self) -> None:
        names = [judge.name for judge, _ in self.parts]
        if not names or len(set(names)) != len(names):
            raise UserError(f"a weighted judge needs parts with distinct names, got {names}; rename one (judge.name)")

    async def score_group(self, group: TrajectoryGroup) -> TrajectoryGroup:
        for judge, _ in self.parts:
            await judge.score_group(group)
            if group.skipped:
                return group
        for t in group.valid:
            t.reward = sum(weight * t.metrics[judge.name] for judge, weight in self.parts)
            t.metrics[self.name] = t.reward
        return group


@dataclass
class GateJudge:
    """The verifier decides pass/fail, the ranker orders the passing ones:

        reward = 0                                   if verify score < pass_threshold
        reward = floor + (1 - floor) * ranker score  otherwise (ranked among passing only)

    so any pass beats any fail, and the ranker (RULER) only ever compares correct attempts.
    With one passing trajectory there is nothing to rank: it gets 1.0 and the ranker is not
    called; with none, every valid trajectory gets 0 and neither is it."""

    verifier: Judge
    ranker: Judge
    pass_threshold: float = SUCCESS_THRESHOLD  # a pass is a success: the run's --success-threshold
    floor: float = 0.5
    name: str = "gate"

    async def score_group(self, group: TrajectoryGroup) -> TrajectoryGroup:
        await self.verifier.score_group(group)
        if group.skipped:
            return group
        passing = [t for t in group.valid if t.metrics[self.verifier.name] >= self.pass_threshold]
        if len(passing) > 1:
            ranked = TrajectoryGroup(trajectories=passing, scenario=group.scenario)
            await self.ranker.score_group(ranked)  # scores the same Trajectory objects in place
            group.metrics.update(ranked.metrics)
            if ranked.skipped:
                group.skipped = ranked.skipped
                return group
        passed = {id(t) for t in passing}
        for t in group.valid:
            if id(t) not in passed:
                t.reward = 0.0
            else:
                rank = t.metrics[self.ranker.name] if len(passing) > 1 else 1.0
                t.reward = self.floor + (1 - self.floor) * rank
            t.metrics[self.name] = t.reward
        group.metrics["gate_pass_rate"] = len(passing) / len(group.valid) if group.valid else 0.0
        return group


@dataclass
class ShapedJudge:
    """The task's judge plus a capped shaping bonus for failed attempts:

        reward = task + weight * shaping * (1 - task)      (task, shaping in [0, 1]; weight < 1)

    A solved task (task = 1) gets exactly 1; a failed one at most task + weight * (1 - task) < 1,
    so no amount of shaping makes a failure worth a success, and the bonus never exceeds `weight`.
    `trajectory.metrics[task.name]` keeps the task's own score (success rates read it)."""

    task: Judge
    shaping: Judge
    weight: float
    name: str = "shaped"

    def __post_init__(self) -> None:
        if not 0 <= self.weight < 1:
            raise UserError(
                f"shaping weight {self.weight} must be in [0, 1) so a failed task never earns a solved task's reward"
            )

    async def score_group(self, group: TrajectoryGroup) -> TrajectoryGroup:
        await self.shaping.score_group(group)
        await self.task.score_group(group)
        if group.skipped:
            return group
        for t in group.valid:
            t.reward = t.metrics[self.name] = self.combine(
                t.metrics[self.task.name], t.metrics[self.shaping.name], self.weight
            )
        return group

    @staticmethod
    def combine(task: float, shaping: float, weight: float) -> float:
        task, shaping = min(1.0, max(0.0, task)), min(1.0, max(0.0, shaping))
        if task == 1.0:
            return 1.0
        # below 1 exactly, also where rounding would carry a task score a hair under 1 up to it
        return min(task + weight * shaping * (1 - task), math.nextafter(1.0, 0.0))


@dataclass
class ByCheckJudge:
    """Each group by what its scenario has: its checks (`checked`: the verifier, or the gate) where it
    has one, else `unchecked` (RULER: a synthesized task, whose answer is not known). A set of
    grounded and synthesized tasks is judged this way. Either part's score is also this judge's."""

    checked: Judge
    unchecked: Judge
    name: str = "by-check"

    async def score_group(self, group: TrajectoryGroup) -> TrajectoryGroup:
        has_check = group.scenario is not None and group.scenario.check is not None
        await (self.checked if has_check else self.unchecked).score_group(group)
        if not group.skipped:
            for t in group.valid:
                t.metrics[self.name] = t.reward
        return group
