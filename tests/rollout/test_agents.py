"""Every kind of agent records the same things through `mcprl.rollout.recording`: the plain loop, the
prebuilt LangGraph agent and a user's agent on the plain OpenAI SDK (given as module:function),
against our real endpoint (the tiny model, or scripted sampling) and a real MCP server; and
`agents.load` names them, with one-line errors for a bad spec."""

import copy

import pytest

from mcprl.errors import UserError
from mcprl.rollout import agents
from mcprl.rollout.config import RolloutConfig
from mcprl.servers.calculator import tasks as calc
from mcprl.serving.engine import Engine
from mcprl.tools import ServerSpec, ToolPool
from mcprl.types import Scenario
from tests.scripted_policy import ScriptedEngine, call, scripted_endpoint
from tests.server_fork import shipped

pytestmark = pytest.mark.anyio
CALC = shipped("calculator")  # `python -m mcprl.servers.calculator`, forked under pytest (tests/server_fork.py)
TASK = Scenario(
    id="t1",
    task="What is 17 * 25? Use the tools.",
    answer="425",
    check={"kind": "server", "server": "calculator", "answer": "425"},
)
KINDS = ["plain", "langgraph", "user_agents:solve"]


class Captures:
    """An engine that keeps every response body it sends."""

    def _response(self, *args, **kwargs):
        body = super()._response(*args, **kwargs)
        self.bodies.append(copy.deepcopy(body))
        return body


class CapturingEngine(Captures, Engine):
    bodies: list = []


class CapturingScripted(Captures, ScriptedEngine):
    bodies: list = []


def assert_recorded(traj, bodies, config):
    """Each Generation is its response, token for token, under the request's sampling settings."""
    assert traj.error is None and len(traj.generations) == len(bodies) >= 1
    for g, body in zip(traj.generations, bodies):
        choice = body["choices"][0]
        assert g.prompt_token_ids == body["prompt_token_ids"]
        assert g.completion_token_ids == choice["token_ids"]
        assert g.logprobs == [t["logprob"] for t in choice["logprobs"]["content"]]
        assert (g.temperature, g.top_p, g.finish_reason) == (config.temperature, config.top_p, choice["finish_reason"])
        assert traj.messages[g.message_index]["role"] == "assistant"


def _without_seconds(metrics):
    return {k: v for k, v in metrics.items() if k != "seconds"}


async def test_every_kind_records_the_sampled_tokens_and_logprobs(tiny_model_dir):
    from mcprl.model.trainable import Model
    from mcprl.serving.local import LocalEndpoint

    config = RolloutConfig(temperature=0.7, top_p=0.9, max_tokens=8)
    engine = CapturingEngine(str(tiny_model_dir), served_name="tiny")
    server = LocalEndpoint(engine)
    trajs = {}
    try:
        model = Model(name="tiny", inference_base_url=server.base_url)
        async with ToolPool(ServerSpec.parse(CALC)) as pool:
            for kind in KINDS:
                engine.bodies = []
                trajs[kind] = await agents.load(kind)(model, TASK, pool, config)
                assert_recorded(trajs[kind], engine.bodies, config)
    finally:
        server.close()
    # the same prompt, token for token, whichever agent sent it
    assert len({tuple(t.generations[0].prompt_token_ids) for t in trajs.values()}) == 1
    assert all(t.metrics["turns"] == 1 and t.metrics["finished"] + t.metrics["truncated"] == 1 for t in trajs.values())


@pytest.mark.parametrize("kind", KINDS)
async def test_each_kind_records_tool_calls_and_their_outcomes(tiny_model_dir, kind):
    from mcprl.model.trainable import Model
    from mcprl.serving.local import LocalEndpoint

    config = RolloutConfig()
    replies = [call("multiply", a=17, b=25), "The answer is 425."]
    engine = CapturingScripted(tiny_model_dir, replies)
    engine.bodies = []
    server = LocalEndpoint(engine)
    try:
        model = Model(
            name="policy", inference_base_url=server.base_url, inference_api_key="x", inference_model_name="policy"
        )
        async with ToolPool(ServerSpec.parse(CALC)) as pool:
            traj = await agents.load(kind)(model, TASK, pool, config)
    finally:
        server.close()
    assert_recorded(traj, engine.bodies, config)
    assert all(req["logprobs"] and req["return_token_ids"] for req in engine.seen)  # asked for, whatever the agent sent
    assert [m["role"] for m in traj.messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert [g.message_index for g in traj.generations] == [4, 6] and traj.messages[5]["content"].strip() == "425"
    assert _without_seconds(traj.metrics) == {
        "turns": 2,
        "tool_calls": 1,
        "tool_errors": 0,
        "invalid_tool_calls": 0,
        "truncated": 0,
        "finished": 1,
        "calls/multiply": 1,
    }
    assert traj.final_answer() == "The answer is 425." and calc.check(TASK, traj) == 1.0
    assert "multiply" in [t["function"]["name"] for t in traj.tools]


async def test_every_kind_counts_tool_errors_and_malformed_calls_alike(tiny_model_dir):
    replies = [
        call("nonexistent", x=1),
        call("multiply", a="seventeen", b=25),
        '<tool_call>\n{"name": "multiply", "arguments": {"a": 17,,}}\n</tool_call>',
    ]
    config = RolloutConfig(demonstration=False)
    seen = {}
    # the calculator keeps no state: one server process serves every kind (a process each costs ~2 s of CPU)
    async with ToolPool(ServerSpec.parse(CALC, per_rollout=False)) as pool:
        for kind in KINDS:
            with scripted_endpoint(tiny_model_dir, replies) as (model, _):
                traj = await agents.load(kind)(model, TASK, pool, config)
            assert traj.error is None and len(traj.generations) == 3
            assert any("unparseable tool call" in line for line in traj.logs)
            seen[kind] = (
                _without_seconds(traj.metrics),
                [(g.prompt_token_ids, g.completion_token_ids) for g in traj.generations],
            )
    plain = seen["plain"]
    assert (
        plain[0]["error_kind/unknown_tool"] == 1
        and plain[0]["error_kind/bad_arguments"] == 1
        and plain[0]["invalid_tool_calls"] == 1
    )
    assert all(s == plain for s in seen.values())


async def test_a_user_agent_failing_or_untrainable_fails_only_its_rollout(tiny_model_dir):
    from mcprl.model.trainable import Model
    from mcprl.serving.local import LocalEndpoint
    from tests.scripted_policy import NoPromptIds

    with scripted_endpoint(tiny_model_dir, ["partial"]) as (model, _):
        traj = await agents.load("user_agents:crash")(model, TASK, None, None)
    assert traj.error == "ValueError: boom" and len(traj.generations) == 1 and traj.metrics["turns"] == 1

    server = LocalEndpoint(NoPromptIds(tiny_model_dir, ["an answer", "never asked for"]))
    try:
        model = Model(
            name="policy", inference_base_url=server.base_url, inference_api_key="x", inference_model_name="policy"
        )
        traj = await agents.load("user_agents:solve")(model, TASK, None, RolloutConfig())
    finally:
        server.close()
    assert traj.generations == [] and traj.error.startswith(
        f"policy endpoint {server.base_url} returned completion token ids without prompt_token_ids"
    )

    with scripted_endpoint(tiny_model_dir, [call("crash")]) as (model, _):
        async with ToolPool(ServerSpec.parse("python -m mcprl.servers.echo_env")) as pool:
            traj = await agents.load("user_agents:solve")(
                model, Scenario(task="crash please"), pool, RolloutConfig(demonstration=False)
            )
    assert traj.error is not None and traj.error.startswith("MCP server gone")


async def test_a_tool_agent_subclass_loads_as_an_agent(tiny_model_dir):
    with scripted_endpoint(tiny_model_dir, [call("multiply", a=17, b=25), "425"]) as (model, engine):
        async with ToolPool(ServerSpec.parse(CALC)) as pool:
            traj = await agents.load("user_agents:OneTurn")(model, TASK, pool, RolloutConfig())
    assert len(engine.seen) == 1 and traj.metrics["tool_calls"] == 1 and traj.messages[-1]["role"] == "tool"


def test_load_names_the_builtin_agents():
    from mcprl.rollout.langgraph import react_agent
    from mcprl.rollout.loop import ToolAgent, rollout

    assert agents.load("plain") is rollout and agents.load("langgraph") is react_agent
    assert isinstance(agents.load("user_agents:OneTurn"), ToolAgent)
    assert callable(agents.load("user_agents:solve"))


@pytest.mark.parametrize(
    "spec, problem",
    [
        ("react", "is not a known agent nor module:function"),
        ("user_agents:", "is not a known agent nor module:function"),
        (":solve", "is not a known agent nor module:function"),
        ("no_such_module_for_mcprl:solve", "no module named no_such_module_for_mcprl"),
        (
            "agent_needs_missing_dep:solve",
            "importing agent_needs_missing_dep failed: No module named 'no_such_dependency_for_mcprl_tests'",
        ),
        ("user_agents:nope", "module user_agents has no 'nope'"),
        ("user_agents:not_async", "is a sync function, not an async function nor a ToolAgent subclass"),
        ("user_agents:NOT_CALLABLE", "is of type int, not an async function nor a ToolAgent subclass"),
        ("user_agents:three_args", "takes (rec, config, extra), not (rec, config)"),
    ],
)
def test_a_bad_spec_is_one_line_saying_what_is_wrong(spec, problem):
    with pytest.raises(UserError) as e:
        agents.load(spec)
    message = str(e.value)
    assert problem in message and "\n" not in message
    if "failed" not in message:
        assert "plain, langgraph, module:function" in message


async def test_every_kind_sends_the_tool_call_grammar_when_the_rollout_constrains_calls(tiny_model_dir):
    """With `constrain_tool_calls`, each policy request of every agent kind carries the structural
    tag of the tools it offers (the endpoint compiles it: real schemas from a real server), and the
    reply's tool calls are still parsed and run; without it, no request carries a format."""
    replies = [call("multiply", a=17, b=25), "The answer is 425."]
    # the calculator keeps no state: one server process serves every kind (a process each costs ~2 s of CPU)
    async with ToolPool(ServerSpec.parse(CALC, per_rollout=False)) as pool:
        for constrain, kinds in ((True, KINDS), (False, KINDS[:1])):
            for kind in kinds:
                with scripted_endpoint(tiny_model_dir, replies) as (model, engine):
                    traj = await agents.load(kind)(model, TASK, pool, RolloutConfig(constrain_tool_calls=constrain))
                assert traj.error is None and traj.metrics["calls/multiply"] == 1, kind
                formats = [req["response_format"] for req in engine.seen]
                if not constrain:
                    assert formats == [None, None], kind
                    continue
                offered = {t["function"]["name"] for t in engine.seen[0]["tools"]}
                for fmt in formats:
                    assert fmt["type"] == "structural_tag" and fmt["triggers"] == ["<tool_call>"], kind
                    assert {s["begin"] for s in fmt["structures"]} == {
                        f'<tool_call>\n{{"name": "{n}", "arguments": ' for n in offered
                    }
