import re

import pytest

from mcprl.errors import UserError
from mcprl.judges import GateJudge, RulerJudge, VerifyJudge, WeightedJudge, build_judge, score_groups
from mcprl.judges.base import JudgeError
from mcprl.types import Scenario, Trajectory, TrajectoryGroup
from tests.fake_llm import FakeLLM, Reply, ruler_handler, shown_trajectories

pytestmark = pytest.mark.unit


def group_answering(*finals: str) -> TrajectoryGroup:
    """The task's answer is 7 (checked by regex); each final also carries the quality RULER sees."""
    task = [{"role": "user", "content": "What is 3 + 4?"}]
    return TrajectoryGroup(
        scenario=Scenario(id="sum", task="What is 3 + 4?", check={"kind": "regex", "pattern": r"^7\b"}),
        trajectories=[Trajectory(messages=[*task, {"role": "assistant", "content": f}]) for f in finals],
    )


by_quality = ruler_handler(lambda body: float(re.search(r"quality=([\d.]+)", body).group(1)))


def ruler(llm: FakeLLM, **kw) -> RulerJudge:
    return RulerJudge("openai/judge", api_base=llm.base_url, api_key="k", retry_backoff_s=0, **kw)


@pytest.mark.anyio
async def test_gate_ranks_only_passing_trajectories():
    group = group_answering("7 quality=0.2", "8 quality=0.9", "7 quality=0.8", "7 quality=1")
    group.trajectories[3].error = "rollout timed out"
    with FakeLLM(handler=by_quality) as llm:
        await GateJudge(VerifyJudge(), ruler(llm)).score_group(group)
    assert len(shown_trajectories(llm.requests[0])) == 2, "only the two passing, valid trajectories are ranked"
    assert [t.reward for t in group.trajectories] == [0.6, 0.0, 0.9, 0.0]
    assert [t.metrics.get("verify") for t in group.trajectories] == [1.0, 0.0, 1.0, None]
    assert [t.metrics.get("ruler") for t in group.trajectories] == [0.2, None, 0.8, None]
    assert group.metrics["gate_pass_rate"] == pytest.approx(2 / 3)
    assert "judge_latency_s" in group.metrics


@pytest.mark.anyio
@pytest.mark.parametrize(
    "finals, rewards", [(("7 quality=0.2", "9 quality=0.9"), [1.0, 0.0]), (("1", "2"), [0.0, 0.0])]
)
async def test_gate_calls_no_judge_with_fewer_than_two_passing(finals, rewards):
    group = group_answering(*finals)
    with FakeLLM() as llm:
        await GateJudge(VerifyJudge(), ruler(llm)).score_group(group)
    assert llm.requests == []
    assert [t.reward for t in group.trajectories] == rewards


@pytest.mark.anyio
async def test_gate_skips_when_the_ranker_fails():
    group = group_answering("7 quality=0.2", "7 quality=0.9")
    with FakeLLM([Reply("no idea")] * 2) as llm:
        await GateJudge(VerifyJudge(), ruler(llm, max_retries=1)).score_group(group)
    assert group.skipped.startswith("ruler (scenario sum): invalid verdict after 2 attempt(s): no complete JSON")


@pytest.mark.anyio
async def test_weighted_sum_keeps_each_part_in_metrics():
    group = group_answering("7 quality=0.2", "8 quality=1.0")
    with FakeLLM(handler=by_quality) as llm:
        await WeightedJudge([(VerifyJudge(), 0.7), (ruler(llm), 0.3)]).score_group(group)
    assert [t.reward for t in group.trajectories] == pytest.approx([0.76, 0.3])
    assert [(t.metrics["verify"], t.metrics["ruler"]) for t in group.trajectories] == [(1.0, 0.2), (0.0, 1.0)]


@pytest.mark.anyio
async def test_weighted_sum_skips_when_a_part_does():
    group = group_answering("7", "8")
    group.scenario.check = None
    with FakeLLM() as llm:
        await WeightedJudge([(VerifyJudge(), 0.5), (ruler(llm), 0.5)]).score_group(group)
    assert group.skipped.startswith("verify: scenario sum has no check") and llm.requests == []


def test_weighted_parts_need_distinct_names():
    with pytest.raises(UserError, match="distinct names"):
        WeightedJudge([(VerifyJudge(), 0.5), (VerifyJudge(), 0.5)])


def test_build_judge_needs_a_model_except_for_verify():
    assert isinstance(build_judge("verify"), VerifyJudge)
    with pytest.raises(UserError, match="--judge-model"):
        build_judge("gate")
    judge = build_judge("gate", RulerJudge("openai/x"))
    assert isinstance(judge, GateJudge) and judge.ranker.judge_model == "openai/x"


@pytest.mark.anyio
async def test_score_groups_raises_the_first_judge_error():
    groups = [group_answering("7 quality=0.1", "7 quality=0.2") for _ in range(3)]
    with FakeLLM(handler=lambda request: Reply("[]")) as llm, pytest.raises(JudgeError, match="invalid verdict"):
        await score_groups(ruler(llm, on_failure="raise", max_retries=0), groups, concurrency=2)


@pytest.mark.anyio
async def test_score_groups_scores_every_group_in_order():
    groups = [group_answering(f"7 quality=0.{i}", "7 quality=0.9") for i in range(1, 6)]
    with FakeLLM(handler=by_quality) as llm:
        scored = await score_groups(ruler(llm), groups, concurrency=3)
    assert scored == groups
    assert [g.trajectories[0].reward for g in scored] == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert len(llm.requests) == 5
