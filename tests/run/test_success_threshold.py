"""One definition of success: `--success-threshold` (`[train] success_threshold`) decides what counts as
solved in the success_rate metric, the run's solved and unsolved groups, the judges' all-or-nothing and
gate, and the usage report."""

from __future__ import annotations

import pytest

from mcprl.judges import JudgeConfig, build_judge
from mcprl.run.metrics import rollout_metrics
from mcprl.run.unsolved import solved, unsolved
from mcprl.train.config import TrainConfig
from mcprl.types import SUCCESS_THRESHOLD, Scenario, Trajectory, TrajectoryGroup
from mcprl.usage import step_metrics, usage_report

pytestmark = pytest.mark.unit

GROUNDED = Scenario(id="g", task="q", check={"kind": "exact", "value": "5"}, reference=[{"tool": "add"}])


def verified(*scores: float) -> list[Trajectory]:
    return [Trajectory(messages=[], reward=s, metrics={"verify": s}) for s in scores]


def test_the_default_is_the_train_setting():
    assert TrainConfig().success_threshold == SUCCESS_THRESHOLD


def test_success_rate_counts_by_the_threshold():
    groups = [TrajectoryGroup(trajectories=verified(1.0, 0.6, 0.4), scenario=GROUNDED)]
    assert rollout_metrics(groups)["success_rate"] == pytest.approx(1 / 3)
    assert rollout_metrics(groups, 0.5)["success_rate"] == pytest.approx(2 / 3)
    assert rollout_metrics(groups, 0.3)["success_rate"] == 1.0


def test_solved_and_unsolved_count_by_the_threshold():
    (t,) = verified(0.6)
    assert not solved(t, SUCCESS_THRESHOLD) and solved(t, 0.5)
    group = TrajectoryGroup(trajectories=verified(0.6, 0.2), scenario=GROUNDED)
    assert unsolved(group, SUCCESS_THRESHOLD) and not unsolved(group, 0.5)
    # without a check's score, the reward decides
    assert solved(Trajectory(messages=[], reward=0.7), 0.7) and not solved(Trajectory(messages=[], reward=0.7), 0.8)


def answered(text: str) -> Trajectory:
    return Trajectory(messages=[{"role": "user", "content": "q"}, {"role": "assistant", "content": text}])


@pytest.mark.anyio
@pytest.mark.parametrize("threshold, rewards", [(SUCCESS_THRESHOLD, [0.0, 1.0]), (0.5, [1.0, 1.0])])
async def test_all_or_nothing_solves_by_the_threshold(threshold, rewards):
    scenario = Scenario(id="s", task="x", check={"kind": "contains", "value": ["a", "b"]})
    for judge in [
        build_judge("verify", all_or_nothing=True, success_threshold=threshold),
        JudgeConfig().build(all_or_nothing=True, success_threshold=threshold),
        JudgeConfig().held_out(True, all_or_nothing=True, success_threshold=threshold),
    ]:
        group = TrajectoryGroup(scenario=scenario, trajectories=[answered("a"), answered("a b")])
        await judge.score_group(group)
        assert group.rewards() == rewards


@pytest.mark.anyio
async def test_the_gate_passes_by_the_threshold():
    class Ranker:
        name = "ruler"

        async def score_group(self, group):
            for i, t in enumerate(group.valid):
                t.reward = t.metrics[self.name] = float(i)
            return group

    scenario = Scenario(id="s", task="x", check={"kind": "contains", "value": ["a", "b"]})
    for threshold, passed in [(SUCCESS_THRESHOLD, 1), (0.5, 2)]:
        group = TrajectoryGroup(scenario=scenario, trajectories=[answered("a"), answered("a b")])
        await build_judge("gate", Ranker(), success_threshold=threshold).score_group(group)
        assert group.metrics["gate_pass_rate"] == passed / 2


def test_the_usage_report_solves_by_the_threshold():
    tools = [{"type": "function", "function": {"name": "add", "description": "d", "parameters": {"type": "object"}}}]
    t = Trajectory(
        messages=[
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "add", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c", "content": "5"},
            {"role": "assistant", "content": "5"},
        ],
        reward=0.6,
        metrics={"verify": 0.6},
    )
    groups = [TrajectoryGroup(trajectories=[t], scenario=GROUNDED)]
    right = usage_report(groups, tools).tool("add").solved_when_right
    assert (right.k, right.n) == (0, 1)
    right = usage_report(groups, tools, success_threshold=0.5).tool("add").solved_when_right
    assert (right.k, right.n) == (1, 1)
    assert step_metrics(groups, tools, success_threshold=0.5)["tool/called_when_needed/add"] == 1.0
