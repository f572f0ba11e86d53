"""What a run does with a group in which no rollout solved its grounded task (`unsolved` in the run's
settings): such a group teaches GRPO nothing as it is. A `Strategy` acts on a step's groups at two
points: `scored`, each batch as soon as it is scored (before dynamic sampling counts the groups it
can learn from), and `collected`, all of the step's groups once drawn. `UNSOLVED` holds the
registered strategies:

    skip          leave the group as it is
    guided-retry  roll the task out again with its first reference call shown before it
                  (mcprl.run.references.reference_exchange), the retry taking the group's place
                  when some rollout of it solves the task
    reference     add the task's reference chain, written as the policy should have written it
                  (mcprl.run.references.reference_trajectory), to the group as its one success;
                  the rollouts are still ranked against each other alone
                  (mcprl.train.loss.split_advantages)

`unsolved` names one, or is `module:attribute`, a user's `Strategy`: `strategy(spec)` resolves
either, a bad one a one-line UserError naming the registered ones.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from mcprl.errors import UserError
from mcprl.judges import score_groups
from mcprl.loading import named_object
from mcprl.run.references import reference_exchange, reference_trajectory

if TYPE_CHECKING:
    from mcprl.judges import Judge
    from mcprl.rollout.config import RolloutConfig
    from mcprl.types import Scenario, Trajectory, TrajectoryGroup


def learnable(group: TrajectoryGroup) -> bool:
    """Whether GRPO can learn from the group: scored, and its rewards differ."""
    return not group.skipped and len({t.reward for t in group.valid}) > 1


def solved(t: Trajectory, threshold: float) -> bool:
    """Whether the trajectory solved its task: by its checks where it has them, else by its reward, at or
    above `threshold` (the run's `--success-threshold`)."""
    return t.metrics.get("verify", t.reward) >= threshold


def unsolved(group: TrajectoryGroup, threshold: float) -> bool:
    """A scored group of a grounded task (its reference chain known) that no rollout solved (`solved`)."""
    return (
        group.scenario is not None
        and bool(group.scenario.reference)
        and not group.skipped
        and bool(group.valid)
        and not any(solved(t, threshold) for t in group.valid)
    )


@dataclass
class Step:
    """What a strategy may use of the step whose groups it acts on."""

    judge: Judge  # the step's judge
    rollout: RolloutConfig  # the run's rollout settings
    threshold: float  # `--success-threshold`: what counts as solved (`solved`)
    label: str  # the step's rollouts, as the progress bar names them
    # the run's group_size rollouts of each scenario, each under its own settings, under a label
    roll_out: Callable[[list[Scenario], list[RolloutConfig], str], Awaitable[list[TrajectoryGroup]]]
    say: Callable[[str], None]


class Hook(Protocol):
    """What a strategy does to some of a step's groups, in place (replacing a group is changing the list)."""

    async def __call__(self, step: Step, groups: list[TrajectoryGroup]) -> None: ...


async def leave(step: Step, groups: list[TrajectoryGroup]) -> None:
    """Nothing: the groups stay as they are."""


async def add_references(step: Step, groups: list[TrajectoryGroup]) -> None:
    """Each group that solved none of its grounded task gets the task's reference chain, written
    as the policy should have written it (mcprl.run.references.reference_trajectory), scored with
    the group; a reference the judge does not score as solved is not kept."""
    helped = []
    for g in (g for g in groups if unsolved(g, step.threshold)):
        if (ref := reference_trajectory(g, step.rollout.finish)) is not None:
            g.trajectories.append(ref)
            helped.append(g)
    rejected = []
    for g in await score_groups(step.judge, helped):
        if solved(g.trajectories[-1], step.threshold):
            g.metadata["helped"] = "reference"
        else:
            g.trajectories.pop()
            rejected.append(g)
            step.say(f"the reference chain of scenario {g.scenario.id} does not solve it by the judge; not added")
    await score_groups(step.judge, rejected)  # a judge that ranks the group (RULER) saw the reference


async def guided_retries(step: Step, groups: list[TrajectoryGroup]) -> None:
    """Where no rollout of a group solved its grounded task, roll it out again with the task's own
    first reference call shown before it (mcprl.run.references.reference_exchange), and train on the
    retry when some rollout of it solved the task."""
    failed = [i for i, g in enumerate(groups) if unsolved(g, step.threshold)]
    if not failed:
        return
    guided = [
        step.rollout.model_copy(update={"demonstrations": [reference_exchange(groups[i].scenario)]}) for i in failed
    ]
    retries = await step.roll_out([groups[i].scenario for i in failed], guided, f"{step.label}, {len(failed)} guided")
    retries = await score_groups(step.judge, retries)
    for i, retry in zip(failed, retries):
        if learnable(retry) and any(solved(t, step.threshold) for t in retry.valid):
            retry.metadata["helped"] = "guided-retry"
            groups[i] = retry


@dataclass(frozen=True)
class Strategy:
    """What a run does to a step's unsolved groups: as each batch is scored, and once all are collected."""

    scored: Hook = leave
    collected: Hook = leave


UNSOLVED: dict[str, Strategy] = {
    "skip": Strategy(),
    # once the step's groups are drawn: dynamic sampling counts a group as its own rollouts left it
    "guided-retry": Strategy(collected=guided_retries),
    # as each batch is scored: dynamic sampling counts a group its reference made learnable
    "reference": Strategy(scored=add_references),
}

FORMS = f"one of {', '.join(UNSOLVED)}, or module:attribute (a mcprl.run.unsolved.Strategy)"


def strategy(spec: str) -> Strategy:
    """The strategy `spec` names: a registered one, or `module:attribute`, a user's `Strategy`. A bad
    spec is a one-line UserError naming the registered ones."""
    if spec in UNSOLVED:
        return UNSOLVED[spec]
    found = named_object(spec, "unsolved", "a known strategy", FORMS)
    if not isinstance(found, Strategy):
        raise UserError(f"unsolved {spec!r} is of type {type(found).__name__}, not a Strategy; give {FORMS}")
    return found
