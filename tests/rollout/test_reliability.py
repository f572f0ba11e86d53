"""Fault injection the unit tests elsewhere don't cover: a policy that emits hundreds of
malformed, unknown and ill-typed tool calls against a real server, and a judge endpoint that
returns garbage while training goes on."""

import random

import pytest

from mcprl.rollout.config import RolloutConfig
from mcprl.rollout.gather import gather_trajectory_groups
from mcprl.rollout.loop import rollout
from mcprl.tools import ServerSpec, ToolPool
from mcprl.types import Scenario
from tests.scripted_policy import scripted_endpoint

pytestmark = pytest.mark.anyio

GARBAGE = [
    lambda r: '<tool_call>\n{"name": "multiply", "arguments": {"a": 17,,}}\n</tool_call>',  # broken JSON
    lambda r: '<tool_call>{"name": 42}</tool_call>',  # wrong shape
    lambda r: '<tool_call>\n{"name": "no_such_tool", "arguments": {}}\n</tool_call>',  # unknown tool
    lambda r: '<tool_call>{"name": "multiply", "arguments": {"a": "x", "b": [1]}}</tool_call>',  # wrong types
    lambda r: '<tool_call>{"name": "divide", "arguments": {"a": 1, "b": 0}}</tool_call>',  # tool error
    lambda r: '<tool_call>{"name": "add", "arguments": "not json"}</tool_call>',  # string args
    lambda r: "<tool_call>" + "{" * r.randint(1, 50),  # truncated
    lambda r: '<tool_call>{"name": "add", "arguments": {"a": 1e308, "b": 1e308}}</tool_call>',  # overflow
    lambda r: "".join(chr(r.randint(32, 0x2FFF)) for _ in range(40)),  # noise
]


async def test_hundreds_of_malformed_tool_calls_zero_crashes(tiny_model_dir):
    rng = random.Random(0)
    with scripted_endpoint(tiny_model_dir, handler=lambda req: rng.choice(GARBAGE)(rng)) as (model, engine):
        async with ToolPool(ServerSpec.parse("python -m mcprl.servers.calculator"), per_rollout=False) as pool:
            cfg = RolloutConfig(max_turns=3, demonstration=False)
            scen = [Scenario(task=f"What is {i} * 3?") for i in range(20)]
            groups = await gather_trajectory_groups(
                [[rollout(model, s, pool, cfg) for _ in range(10)] for s in scen], max_concurrency=16
            )
    trajs = [t for g in groups for t in g.trajectories]
    assert len(trajs) == 200 and not any(g.exceptions for g in groups) and all(t.error is None for t in trajs)
    calls = sum(t.metrics["turns"] for t in trajs)
    assert calls >= 300  # hundreds of bad replies went through the endpoint, parser and tool layer
    assert sum(t.metrics["invalid_tool_calls"] for t in trajs) > 50
    assert sum(t.metrics.get("error_kind/unknown_tool", 0) for t in trajs) > 10
    assert sum(t.metrics.get("error_kind/bad_arguments", 0) for t in trajs) > 10
    assert engine.metrics["tool_call_parse_errors"] > 50


async def test_judge_garbage_skips_groups_and_training_goes_on(tiny_model_dir, home):
    from mcprl import LocalBackend, TrainableModel, TrainConfig
    from mcprl.judges import RulerJudge, score_groups
    from mcprl.types import Generation, Trajectory, TrajectoryGroup
    from tests.fake_llm import FakeLLM, Reply

    def traj(i):
        return Trajectory(
            messages=[{"role": "user", "content": "q"}, {"role": "assistant", "content": f"a{i}"}],
            generations=[
                Generation(prompt_token_ids=[1, 2, 3], completion_token_ids=[4, 5 + i], logprobs=[-1.0, -1.0])
            ],
        )

    replies = ["not json at all", Reply(status=500), '{"scores": [{"trajectory_id": "1", "sco', Reply(status=500)] * 3
    with FakeLLM(replies) as llm:
        judge = RulerJudge("openai/judge", api_base=llm.base_url, max_retries=1, timeout=5, num_retries=0)
        groups = await score_groups(
            judge, [TrajectoryGroup(trajectories=[traj(0), traj(1)]), TrajectoryGroup(trajectories=[traj(2), traj(3)])]
        )
    assert all(g.skipped for g in groups)
    model = TrainableModel(name="j", base_model=str(tiny_model_dir))
    async with LocalBackend(device="cpu") as backend:
        await model.register(backend)
        m = await model.train(groups, TrainConfig())
    assert m["groups_skipped_judge"] == 2 and m["trained"] == 0 and model.get_step() == 1
