"""LangGraph agents as rollouts: the recording chat model, wrap_rollout, MCP tools and the
prebuilt ReAct agent, against the scripted policy endpoint and real MCP servers."""

import anyio
import pytest

from mcprl.rollout.config import RolloutConfig
from mcprl.rollout.langgraph import create_mcp_agent, init_chat_model, wrap_rollout
from mcprl.rollout.loop import rollout
from mcprl.servers.calculator import tasks as calc
from mcprl.tools import ServerSpec, ToolPool
from mcprl.train.sequences import trajectory_sequences
from mcprl.types import Scenario, TrajectoryGroup
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


def _one_sequence(traj):
    """The whole episode is one exact-token training sequence."""
    (seq,) = trajectory_sequences(traj, 1.0)
    last = traj.generations[-1]
    assert seq.input_ids == last.prompt_token_ids + last.completion_token_ids
    assert seq.n_loss_tokens == sum(len(g.completion_token_ids) for g in traj.generations)


async def test_react_agent_solves_task_with_mcp_tools(tiny_model_dir):
    with scripted_endpoint(tiny_model_dir, [call("multiply", a=17, b=25), "The answer is 425."] * 2) as (model, engine):
        async with ToolPool(ServerSpec.parse(CALC)) as pool:
            traj = await create_mcp_agent(model, pool)(TASK)
            plain = await rollout(model, TASK, pool)
    assert traj.error is None and traj.scenario_id == "t1" and traj.metadata["task"] == TASK.task
    # the same prompt as the plain loop: system, demonstration, task
    assert [m["role"] for m in traj.messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert engine.seen[0]["messages"] == traj.messages[:4]
    assert [g.message_index for g in traj.generations] == [4, 6]
    assert traj.messages[4]["tool_calls"][0]["function"]["name"] == "multiply"
    assert traj.messages[5]["content"].strip() == "425"
    assert "multiply" in [t["function"]["name"] for t in traj.tools]
    m = traj.metrics
    assert (m["turns"], m["tool_calls"], m["calls/multiply"], m["tool_errors"], m["finished"]) == (2, 1, 1, 0, 1)
    assert traj.final_answer() == "The answer is 425." and calc.check(TASK, traj) == 1.0
    _one_sequence(traj)

    # the model saw exactly what the plain loop shows it, token for token
    def tokens(t):
        return [(g.prompt_token_ids, g.completion_token_ids) for g in t.generations]

    assert tokens(traj) == tokens(plain)


async def test_tool_errors_and_malformed_calls_never_crash(tiny_model_dir):
    replies = [
        call("nonexistent", x=1),
        call("multiply", a="seventeen", b=25),
        '<tool_call>\n{"name": "multiply", "arguments": {"a": 17,,}}\n</tool_call>',
    ]
    with scripted_endpoint(tiny_model_dir, replies) as (model, _):
        async with ToolPool(ServerSpec.parse(CALC)) as pool:
            traj = await create_mcp_agent(model, pool, demonstration=False)(TASK)
    assert traj.error is None and len(traj.generations) == 3
    tool_texts = [m["content"] for m in traj.messages if m["role"] == "tool"]
    assert tool_texts[0].startswith("Error: there is no tool named 'nonexistent'") and tool_texts[1].startswith("Error")
    m = traj.metrics
    assert (m["tool_calls"], m["tool_errors"], m["calls/nonexistent"], m["errors/multiply"]) == (2, 2, 1, 1)
    assert m["error_kind/unknown_tool"] == 1 and m["error_kind/bad_arguments"] == 1
    assert m["invalid_tool_calls"] == 1 and m["finished"] == 1
    assert any("unparseable tool call" in line for line in traj.logs)
    assert calc.check(TASK, traj) == 0.0


async def test_agent_stops_after_max_turns(tiny_model_dir):
    with scripted_endpoint(tiny_model_dir, [call("add", a=1, b=2)] * 4) as (model, engine):
        async with ToolPool(ServerSpec.parse(CALC)) as pool:
            traj = await create_mcp_agent(model, pool, max_turns=3, system_prompt="Be brief.")(TASK)
    assert traj.error is None and len(traj.generations) == len(engine.seen) == 3
    assert traj.messages[0] == {"content": "Be brief.", "role": "system"}
    assert traj.metrics["max_turns_reached"] == 1 and traj.metrics["finished"] == 0
    assert traj.metrics["tool_calls"] == 2  # the last turn's call had no step left to run
    _one_sequence(traj)


async def test_the_prebuilt_agent_defaults_to_a_runs_rollout_settings(tiny_model_dir):
    """Without settings, `create_mcp_agent` prompts and samples as a run's plain loop does (RolloutConfig)."""
    from mcprl.errors import UserError

    defaults = RolloutConfig()
    with scripted_endpoint(tiny_model_dir, [call("add", a=1, b=2)] * 8) as (model, engine):
        async with ToolPool(ServerSpec.parse(CALC)) as pool:
            traj = await create_mcp_agent(model, pool)(TASK)
            with pytest.raises(UserError, match="bad rollout setting max_turns"):
                create_mcp_agent(model, pool, max_turns=0)
    assert len(traj.generations) == len(engine.seen) == defaults.max_turns
    assert {(r["max_completion_tokens"] or r["max_tokens"], r["temperature"], r["top_p"]) for r in engine.seen} == {
        (defaults.max_tokens, defaults.temperature, defaults.top_p)
    }


def _draft_and_revise(model):
    """A user's own graph: a sync node drafts, an async node revises; returns the final text."""
    from langchain_core.messages import HumanMessage
    from langgraph.graph import START, MessagesState, StateGraph

    async def solve(scenario):
        llm = init_chat_model(model)

        def draft(state):  # a sync node: LangGraph runs it in a worker thread
            return {"messages": [llm.invoke(state["messages"])]}

        async def revise(state):
            return {"messages": [await llm.ainvoke([*state["messages"], HumanMessage("Improve it.")])]}

        g = StateGraph(MessagesState)
        g.add_node(draft)
        g.add_node(revise)
        g.add_edge(START, "draft")
        g.add_edge("draft", "revise")
        state = await g.compile().ainvoke({"messages": [HumanMessage(scenario.task)]})
        return state["messages"][-1].content

    return solve


async def test_custom_graph_with_sync_and_async_nodes(tiny_model_dir):
    with scripted_endpoint(tiny_model_dir, ["a first draft", "the final answer"]) as (model, _):
        traj = await wrap_rollout(model, _draft_and_revise(model))(TASK)
    assert traj.error is None and traj.final_answer() == "the final answer"
    assert [(m["role"], m["content"]) for m in traj.messages] == [
        ("user", TASK.task),
        ("assistant", "a first draft"),
        ("user", "Improve it."),
        ("assistant", "the final answer"),
    ]
    assert [g.message_index for g in traj.generations] == [1, 3] and traj.metrics["turns"] == 2
    _one_sequence(traj)


async def test_sub_agent_and_trimmed_history_keep_every_generation(tiny_model_dir):
    with scripted_endpoint(tiny_model_dir, ["sub result", "draft", "final"]) as (model, _):

        async def solve(scenario):
            llm = init_chat_model(model)
            await llm.ainvoke("a sub-agent's own question")  # never part of the main conversation
            draft = await llm.ainvoke(scenario.task)
            async for _ in llm.astream([draft, ("user", "continue")]):  # history trimmed to the draft
                pass

        traj = await wrap_rollout(model, solve)(TASK)
    assert traj.error is None and [m["content"] for m in traj.messages] == ["draft", "continue", "final"]
    assert [g.message_index for g in traj.generations] == [-1, 0, 2]
    assert any("generation 0" in line and "message_index=-1" in line for line in traj.logs)
    assert len(trajectory_sequences(traj, 1.0)) == 3  # nothing extends another: three sequences


async def test_concurrent_rollouts_record_only_their_own_calls(tiny_model_dir):
    def policy(req):
        return f"reply {len(req['messages'])} to {req['messages'][0]['content']}"

    with scripted_endpoint(tiny_model_dir, handler=policy) as (model, engine):
        llm = init_chat_model(model)  # one client shared by all rollouts
        first_done = [anyio.Event() for _ in range(3)]

        async def chat(scenario, i):
            reply = await llm.ainvoke(scenario.task)
            first_done[i].set()
            for e in first_done:  # every rollout's second call comes after all first calls
                await e.wait()
            await llm.ainvoke([("user", scenario.task), reply, ("user", "again")])

        rollout = wrap_rollout(model, chat)
        trajs = {}

        async def run(i):
            trajs[i] = await rollout(Scenario(task=f"task-{i}"), i)

        async with anyio.create_task_group() as tg:
            for i in range(3):
                tg.start_soon(run, i)

    def decode(g):
        return engine.tokenizer.decode(g.completion_token_ids, skip_special_tokens=True)

    for i, traj in trajs.items():
        assert [decode(g) for g in traj.generations] == [f"reply 1 to task-{i}", f"reply 3 to task-{i}"]
        assert traj.messages[0]["content"] == f"task-{i}" and traj.metrics["turns"] == 2
        _one_sequence(traj)


async def test_calls_outside_a_rollout_are_not_recorded(tiny_model_dir):
    with scripted_endpoint(tiny_model_dir, ["outside", "inside", "after"]) as (model, _):
        llm = init_chat_model(model)
        assert (await llm.ainvoke("hi")).content == "outside"

        async def once(scenario):
            await llm.ainvoke(scenario.task)

        traj = await wrap_rollout(model, once)(TASK)
        assert (await llm.ainvoke("hi")).content == "after"
    assert len(traj.generations) == 1 and traj.final_answer() == "inside" and traj.metrics["turns"] == 1


async def test_failing_user_code_and_dead_server_fail_only_that_rollout(tiny_model_dir):
    with scripted_endpoint(tiny_model_dir, ["partial"]) as (model, _):

        async def broken(scenario):
            await init_chat_model(model).ainvoke(scenario.task)
            raise ValueError("boom")

        traj = await wrap_rollout(model, broken)(TASK)
    assert traj.error == "ValueError: boom" and len(traj.generations) == 1

    with scripted_endpoint(tiny_model_dir, [call("crash")]) as (model, _):
        async with ToolPool(ServerSpec.parse("python -m mcprl.servers.echo_env")) as pool:
            traj = await create_mcp_agent(model, pool, demonstration=False)(Scenario(task="crash please"))
    assert traj.error is not None and traj.error.startswith("MCP server gone")


async def test_graph_trajectories_train_one_grpo_step(tiny_model_dir):
    import torch

    from mcprl.model import weights
    from mcprl.train.config import LoraSettings, TrainConfig
    from mcprl.train.grpo import GRPOTrainer

    with scripted_endpoint(tiny_model_dir, ["17 * 25", "425", "17 + 25", "42"]) as (model, _):
        rollout = wrap_rollout(model, _draft_and_revise(model))
        trajs = [await rollout(TASK), await rollout(TASK)]
    for t in trajs:
        t.reward = calc.check(TASK, t)
    assert [t.reward for t in trajs] == [1.0, 0.0]
    torch.manual_seed(0)
    trainer = GRPOTrainer(
        weights.load_model(str(tiny_model_dir)),
        weights.load_tokenizer(str(tiny_model_dir)),
        LoraSettings(rank=4, alpha=8),
    )
    before = [p.detach().clone() for p in trainer.model.parameters() if p.requires_grad]
    m = trainer.step([TrajectoryGroup(trajectories=trajs)], TrainConfig(learning_rate=1e-3))
    assert (
        m["trained"] == 1
        and m["sequences"] == 2
        and m["loss_tokens"] == sum(len(g.completion_token_ids) for t in trajs for g in t.generations)
    )
    after = [p for p in trainer.model.parameters() if p.requires_grad]
    assert any(not torch.equal(a, b) for a, b in zip(before, after))


async def test_generations_carry_the_chat_model_sampling_settings(tiny_model_dir):
    with scripted_endpoint(tiny_model_dir, ["warm", "cool", "plain"]) as (model, _):

        async def solve(scenario):
            await init_chat_model(model, temperature=0.6, top_p=0.8).ainvoke(scenario.task)
            await init_chat_model(model, temperature=0).ainvoke(scenario.task)
            await init_chat_model(model).ainvoke(scenario.task)

        traj = await wrap_rollout(model, solve)(TASK)
    default = RolloutConfig()  # a chat model made without settings samples as a run does by default
    assert [(g.temperature, g.top_p) for g in traj.generations] == [(0.6, 0.8), (0.0, 1.0), (default.temperature, 1.0)]


async def test_an_endpoint_without_prompt_token_ids_fails_the_rollout(tiny_model_dir):
    from mcprl.model.trainable import Model
    from mcprl.serving.local import LocalEndpoint
    from tests.scripted_policy import NoPromptIds

    server = LocalEndpoint(NoPromptIds(tiny_model_dir, ["an answer"]))
    try:
        model = Model(
            name="policy", inference_base_url=server.base_url, inference_api_key="x", inference_model_name="policy"
        )
        traj = await wrap_rollout(model, lambda s: init_chat_model(model).ainvoke(s.task))(TASK)
    finally:
        server.close()
    assert traj.generations == []
    assert traj.error.startswith(
        f"policy endpoint {server.base_url} returned completion token ids without prompt_token_ids"
    )
    assert "mcprl's endpoint" in traj.error
