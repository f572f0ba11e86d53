"""The plain agent loop against real MCP servers (stdio, HTTP, SSE), with a scripted policy
for deterministic tool-call paths and the tiny real model for the sampling path."""

import socket
import subprocess
import sys
import time

import pytest

from mcprl.rollout.config import RolloutConfig
from mcprl.rollout.gather import gather_trajectory_groups
from mcprl.rollout.loop import example_arguments, rollout
from mcprl.servers.calculator import tasks as calc
from mcprl.tools import ServerSpec, ToolPool
from mcprl.train.sequences import trajectory_sequences
from mcprl.types import Scenario
from tests.scripted_policy import call, scripted_endpoint
from tests.server_fork import shipped

pytestmark = pytest.mark.anyio
CALC = shipped("calculator")  # `python -m mcprl.servers.calculator`, forked under pytest (tests/server_fork.py)
TASK = Scenario(
    id="t1",
    task="What is 17 * 25? Use the tools.",
    answer="425",
    check={"kind": "server", "server": "calculator", "answer": "425"},
)


async def test_tool_call_then_answer_over_stdio(tiny_model_dir):
    with scripted_endpoint(tiny_model_dir, [call("multiply", a=17, b=25), "The answer is 425."]) as (model, _):
        async with ToolPool(ServerSpec.parse(CALC)) as pool:
            traj = await rollout(model, TASK, pool)
    assert traj.error is None
    roles = [m["role"] for m in traj.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "tool", "assistant"]  # demo + task
    assert traj.messages[5]["content"].strip() == "425"
    assert traj.metrics["tool_calls"] == 1 and traj.metrics["calls/multiply"] == 1 and traj.metrics["finished"] == 1
    assert traj.final_answer() == "The answer is 425."
    assert calc.check(TASK, traj) == 1.0
    # both turns are one exact-token training sequence
    assert len(traj.generations) == 2
    (seq,) = trajectory_sequences(traj, 1.0)
    g0, g1 = traj.generations
    assert seq.input_ids == g1.prompt_token_ids + g1.completion_token_ids
    assert seq.n_loss_tokens == len(g0.completion_token_ids) + len(g1.completion_token_ids)


async def test_malformed_unknown_and_bad_arguments_never_crash(tiny_model_dir):
    replies = [
        call("nonexistent", x=1),
        call("multiply", a="seventeen", b=25),
        '<tool_call>\n{"name": "multiply", "arguments": {"a": 17,,}}\n</tool_call>',
    ]
    with scripted_endpoint(tiny_model_dir, replies) as (model, _):
        async with ToolPool(ServerSpec.parse(CALC)) as pool:
            traj = await rollout(model, TASK, pool, RolloutConfig(demonstration=False))
    assert traj.error is None
    assert traj.metrics["tool_errors"] == 2
    assert traj.metrics["error_kind/unknown_tool"] == 1 and traj.metrics["error_kind/bad_arguments"] == 1
    assert traj.metrics["invalid_tool_calls"] == 1 and traj.metrics["finished"] == 1
    assert "<tool_call>" in traj.final_answer()
    assert calc.check(TASK, traj) == 0.0


async def test_max_turns_and_complete_task_tool(tiny_model_dir):
    with scripted_endpoint(tiny_model_dir, [call("add", a=1, b=2)] * 3) as (model, _):
        async with ToolPool(ServerSpec.parse(CALC)) as pool:
            traj = await rollout(model, TASK, pool, RolloutConfig(max_turns=3))
    assert traj.metrics["max_turns_reached"] == 1 and traj.metrics["tool_calls"] == 3 and traj.metrics["finished"] == 0
    with scripted_endpoint(tiny_model_dir, [call("complete_task", answer="425")]) as (model, engine):
        async with ToolPool(ServerSpec.parse(CALC)) as pool:
            traj = await rollout(model, TASK, pool, RolloutConfig(finish="tool"))
    assert traj.final_answer() == "425" and traj.metrics["finished"] == 1
    assert "complete_task" in [t["function"]["name"] for t in engine.seen[0]["tools"]]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(params=["http", "sse"])
def remote_calculator(request):
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcprl.servers.calculator", "--transport", request.param, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    path = "/mcp" if request.param == "http" else "/sse"
    yield f"http://127.0.0.1:{port}{path}"
    proc.kill()
    proc.wait()


async def test_rollouts_over_http_and_sse(tiny_model_dir, remote_calculator):
    with scripted_endpoint(tiny_model_dir, [call("multiply", a=17, b=25), "425"]) as (model, _):
        async with ToolPool(ServerSpec.parse(remote_calculator)) as pool:
            traj = await rollout(model, TASK, pool)
    assert traj.error is None and calc.check(TASK, traj) == 1.0


async def test_server_killed_mid_rollout_fails_that_rollout_only(tiny_model_dir):
    def policy(req):
        task = req["messages"][-1]["content"] if req["messages"][-1]["role"] == "user" else ""
        if "crash" in task:
            return call("crash")
        if req["messages"][-1]["role"] == "tool":
            return "done"
        return call("working_directory")

    with scripted_endpoint(tiny_model_dir, handler=policy) as (model, _):
        async with ToolPool(ServerSpec.parse("python -m mcprl.servers.echo_env")) as pool:
            cfg = RolloutConfig(demonstration=False)
            tasks = [Scenario(task="please crash"), Scenario(task="where are you"), Scenario(task="where are you")]
            (group,) = await gather_trajectory_groups([[rollout(model, s, pool, cfg) for s in tasks]])
    crashed = [t for t in group.trajectories if t.error]
    assert len(crashed) == 1 and "MCP server gone" in crashed[0].error
    assert len(group.valid) == 2 and all(t.final_answer() == "done" for t in group.valid)
    assert group.exceptions == [crashed[0].error]


async def test_tiny_model_rollout_records_exact_tokens(tiny_model_dir):
    from mcprl.model.trainable import Model
    from mcprl.serving.engine import Engine
    from mcprl.serving.local import LocalEndpoint

    server = LocalEndpoint(Engine(str(tiny_model_dir), served_name="tiny"))
    try:
        model = Model(name="tiny", inference_base_url=server.base_url)
        async with ToolPool(ServerSpec.parse(CALC)) as pool:
            traj = await rollout(model, TASK, pool, RolloutConfig(max_tokens=12))
    finally:
        server.close()
    assert traj.error is None and traj.generations
    g = traj.generations[0]
    assert 1 <= len(g.completion_token_ids) <= 12 and len(g.logprobs) == len(g.completion_token_ids)
    assert traj.messages[g.message_index]["role"] == "assistant"


def test_example_arguments():
    schema = {
        "type": "object",
        "properties": {
            "q": {"type": "string"},
            "n": {"type": "integer", "default": 5},
            "k": {"enum": ["a", "b"]},
            "z": {"type": "number", "examples": [2.5]},
        },
        "required": ["q", "n", "k", "z"],
    }
    assert example_arguments(schema) == {"q": "example", "n": 5, "k": "a", "z": 2.5}


def test_calculator_partial_credit_orders_progress():
    from mcprl.types import Trajectory

    s = Scenario(
        task="What is 17 * 25?",
        answer="425",
        tools=["multiply"],
        check={"kind": "server", "server": "calculator", "answer": "425"},
    )

    def traj(name, args, result, final):
        call = {"id": "c1", "type": "function", "function": {"name": name, "arguments": args}}
        return Trajectory(
            messages=[
                {"role": "user", "content": s.task},
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": result},
                {"role": "assistant", "content": final},
            ]
        )

    assert calc.check(s, traj("multiply", '{"a": 17, "b": 25}', "425", "It is 425.")) == 1.0
    assert calc.check(s, traj("multiply", '{"a": 17, "b": 25}', "425", "no idea")) == 0.5
    assert calc.check(s, traj("multiply", '{"a": 17, "b": 2}', "34", "no idea")) == 0.1
    assert calc.check(s, traj("multiply", '{"a": "x"}', "Error: bad arguments", "no idea")) == 0.0
    assert calc.check(s, traj("add", '{"a": 17, "b": 25}', "42", "42")) == 0.0


async def test_an_endpoint_without_prompt_token_ids_fails_the_rollout(tiny_model_dir):
    """Never trained on: without the prompt the first completion token would be scored from its own position."""
    from tests.scripted_policy import NoPromptIds

    with scripted_endpoint(tiny_model_dir, engine=NoPromptIds(tiny_model_dir, ["The answer is 425."])) as (model, _):
        traj = await rollout(model, TASK, None, RolloutConfig(temperature=0.7))
    assert traj.generations == []
    assert traj.error.startswith(
        f"policy endpoint {model.inference_base_url} returned completion token ids without prompt_token_ids"
    )
    assert "mcprl's endpoint" in traj.error


async def test_generations_carry_the_request_sampling_settings(tiny_model_dir):
    with scripted_endpoint(tiny_model_dir, ["The answer is 425."]) as (model, engine):
        traj = await rollout(model, TASK, None, RolloutConfig(temperature=0.7, top_p=0.9))
    assert (engine.seen[0]["temperature"], engine.seen[0]["top_p"]) == (0.7, 0.9)
    assert [(g.temperature, g.top_p) for g in traj.generations] == [(0.7, 0.9)]


async def test_seeded_sampling_draws_alike_per_task_rollout_and_turn(tiny_model_dir):
    """With a sampling seed, a rollout's requests carry a seed of its own (its task, its place in the group, its
    turn): the same rollout samples the same tokens in another run; another place in the group does not share it."""
    from mcprl.model.trainable import Model
    from mcprl.serving.engine import Engine
    from mcprl.serving.local import LocalEndpoint

    server = LocalEndpoint(Engine(str(tiny_model_dir), served_name="tiny"))
    try:
        model = Model(name="tiny", inference_base_url=server.base_url)
        rc = RolloutConfig(max_tokens=16, temperature=1.0, sampling_seed=7, demonstration=False)
        runs = [await rollout(model, TASK, None, rc.for_rollout(TASK.id, i)) for i in (0, 0, 1)]
    finally:
        server.close()
    tokens = [[g.completion_token_ids for g in t.generations] for t in runs]
    assert tokens[0] == tokens[1] and tokens[0] != tokens[2]
    assert RolloutConfig().for_rollout("t1", 3) == RolloutConfig()  # unseeded: as given
    seeds = {RolloutConfig(sampling_seed=7).for_rollout(t, i).sampling_seed for t in ("t1", "t2") for i in (0, 1)}
    assert len(seeds) == 4


@pytest.mark.parametrize("drop", ["all", "some"])
async def test_token_ids_without_their_logprobs_fail_the_rollout_not_the_training_step(tiny_model_dir, drop):
    """Issue 28.3: a reply with token ids but no logprobs (or fewer) was recorded, then raised
    inside the training step (train.sequences) and ended the run; now it fails its own rollout."""
    from tests.scripted_policy import NoLogprobs

    with scripted_endpoint(tiny_model_dir, engine=NoLogprobs(tiny_model_dir, ["The answer is 425."], drop=drop)) as (
        model,
        _,
    ):
        traj = await rollout(model, TASK, None, RolloutConfig(temperature=0.7))
    assert traj.generations == []
    assert "completion token ids with" in traj.error and "usable logprobs" in traj.error
    assert trajectory_sequences(traj, 1.0) == []


async def test_a_conversation_over_the_context_ends_truncated_and_stays_in_its_group(tiny_model_dir):
    """Issue 28.4: the endpoint's 400 for a prompt over the context used to fail the rollout, which
    then left its group before the baseline. Now the episode ends truncated: its first turn (sampled
    before the overflow) is kept whole, the refused turn is not recorded."""
    from tests.scripted_policy import ScriptedEngine

    class Tight(ScriptedEngine):
        def _sample_batch(self, batch, n_rows):
            self.max_model_len = len(batch[0].prompt_ids) + 20  # the first turn fits, the second will not
            return super()._sample_batch(batch, n_rows)

    with scripted_endpoint(tiny_model_dir, [call("multiply", a=17, b=25), "The answer is 425."]) as (model, engine):
        engine.__class__ = Tight
        async with ToolPool(ServerSpec.parse(CALC)) as pool:
            (group,) = await gather_trajectory_groups([[rollout(model, TASK, pool)]])
    (traj,) = group.trajectories
    assert traj.error is None and group.exceptions == []
    assert traj.metrics["truncated"] == 1 and traj.metrics["finished"] == 0
    assert "no longer fits the model's context" in traj.metadata["truncated"]
    assert len(traj.generations) == 1 and traj.metrics["tool_calls"] == 1
    (seq,) = trajectory_sequences(traj, 1.0)
    assert seq.n_loss_tokens == len(traj.generations[0].completion_token_ids)


async def test_an_episode_past_its_time_limit_ends_truncated(tiny_model_dir):
    import time as _time

    replies = iter([call("multiply", a=17, b=25)])

    def slow_second_turn(request):
        reply = next(replies, None)
        if reply is None:
            _time.sleep(5)  # the engine's thread; the episode's time limit ends it first
            return "late"
        return reply

    with scripted_endpoint(tiny_model_dir, handler=slow_second_turn) as (model, _):
        async with ToolPool(ServerSpec.parse(CALC)) as pool:
            traj = await rollout(model, TASK, pool, RolloutConfig(episode_timeout_s=2))
    assert traj.error is None and traj.metrics["truncated"] == 1 and "time limit of 2 s" in traj.metadata["truncated"]
    assert len(traj.generations) == 1 and traj.messages[-1]["role"] == "tool"


async def test_500_tools_over_the_context_make_a_batch_that_stops_the_run(tiny_model_dir):
    """Issue 29.9: a server with 500 tools made every prompt longer than the model's context; every
    rollout failed and the run printed 0.000 and exited 0. Now each episode ends truncated before its
    first turn (nothing sampled), and gather.untrainable names the reason the runner stops with."""
    from mcprl.rollout.gather import untrainable

    with scripted_endpoint(tiny_model_dir, ["unused"] * 4) as (model, engine):
        async with ToolPool(ServerSpec.parse("python -m mcprl.servers.bare_jsonrpc --tools 500")) as pool:
            groups = await gather_trajectory_groups([[rollout(model, TASK, pool) for _ in range(2)]])
    assert engine.seen == []  # refused before any sampling
    assert all(t.error is None and t.metrics["truncated"] == 1 and not t.generations for t in groups[0].trajectories)
    count, total, reason = untrainable(groups)
    assert (
        (count, total) == (2, 2)
        and "no longer fits the model's context" in reason
        and "model's limit of 2047" in reason
    )
