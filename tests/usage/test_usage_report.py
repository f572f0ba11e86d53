"""The per-tool usage report (mcprl.usage): exact counts from real rollouts of a scripted policy against
the shipped calculator server, a JSON round trip, the bounded-size case, a run without reference chains."""

from __future__ import annotations

import json
import time

import anyio
import pytest

from mcprl.judges import VerifyJudge, score_groups
from mcprl.rollout.langgraph import create_mcp_agent
from mcprl.rollout.loop import rollout
from mcprl.tools import ServerSpec, ToolPool
from mcprl.types import Scenario, Trajectory, TrajectoryGroup
from mcprl.usage import UsageReport, usage_report
from mcprl.usage.render import html_section, learning_series, print_reports
from mcprl.usage.report import Rate, ToolUsage, UsageResult, UsageRun, changes
from tests.scripted_policy import call, scripted_endpoint

CALC = "python -m mcprl.servers.calculator"


def _scenario(sid: str, tool: str, answer: str, **arguments) -> Scenario:
    return Scenario(
        id=sid,
        task=f"task {sid}",
        check={"kind": "exact", "value": answer},
        reference=[{"tool": tool, "arguments": arguments, "result": answer}],
    )


MUL = _scenario("mul", "multiply", "425", a=17, b=25)
POW = _scenario("pow", "power", "8", base=2, exponent=3)
# one reply script per episode: a call, then the final answer
EPISODES = [
    (MUL, [call("multiply", a=17, b=25), "425"]),  # right tool, right arguments: solved
    (MUL, [call("add", a=17, b=25), "42"]),  # the wrong tool
    (MUL, [call("multiply", a="x", b=25), "no"]),  # a bad argument: wrong type of a
    (MUL, [call("math.pow", a=17), "1"]),  # a tool the server does not have
    (POW, [call("power", base=2, exponent=500), "?"]),  # the server rejects it, naming exponent
    (POW, [call("power", base=2), "?"]),  # a required argument missing
]


@pytest.fixture(scope="module")
def groups(tiny_model_dir):
    async def run():
        out = []
        # the calculator keeps no state: one server process serves every episode (a process each costs ~2 s of CPU)
        async with ToolPool(ServerSpec.parse(CALC, per_rollout=False)) as pool:
            for scenario, replies in EPISODES:
                with scripted_endpoint(tiny_model_dir, replies) as (model, _):
                    out.append(TrajectoryGroup(trajectories=[await rollout(model, scenario, pool)], scenario=scenario))
        # a call that times out: the same server with a call timeout no call can meet
        spec = ServerSpec.parse(CALC).model_copy(update={"call_timeout": 1e-6})
        with scripted_endpoint(tiny_model_dir, [call("multiply", a=17, b=25), "425"]) as (model, _):
            async with ToolPool(spec) as pool:
                out.append(TrajectoryGroup(trajectories=[await rollout(model, MUL, pool)], scenario=MUL))
                tools = pool.toolset.tools
        await score_groups(VerifyJudge(), out)
        return out, tools

    return anyio.run(run)


def test_each_mistake_is_counted_where_it_belongs(groups):
    gs, tools = groups
    r = usage_report(gs, tools, model="policy")
    assert r.episodes == 7 and r.failed_rollouts == 0 and r.episodes_with_needs == 7
    assert r.needs_from == ["reference chain"] and r.unavailable == []
    mul, add, pw = r.tool("multiply"), r.tool("add"), r.tool("power")
    # selection: multiply was needed in 5 episodes, called in 3; instead: add once, the made-up name once
    assert (mul.tasks_needing, mul.episodes_needing) == (1, 5)
    assert (mul.called_when_needed.k, mul.called_when_needed.n) == (3, 5)
    assert 0 < mul.called_when_needed.ci[0] < 0.6 < mul.called_when_needed.ci[1] < 1
    assert {c.name: c.count for c in mul.called_instead} == {"add": 1, "math.pow": 1}
    assert (add.called_when_not_needed.k, add.called_when_not_needed.n) == (1, 7)
    assert {c.name: c.count for c in add.called_in_place_of} == {"multiply": 1}
    assert add.episodes_needing == 0 and add.called_when_needed.rate is None  # never needed: no rate, not 0%
    # arguments: the wrong type of a; the missing exponent; the server's rejection naming exponent
    assert mul.schema_failures == 1 and [(c.name, c.count) for c in mul.schema_by_kind] == [("wrong_type", 1)]
    assert [(c.name, c.count) for c in mul.schema_by_parameter] == [("a", 1)]
    assert pw.schema_failures == 1 and [(c.name, c.count) for c in pw.schema_by_kind] == [("missing_required", 1)]
    assert [(c.name, c.count) for c in pw.schema_by_parameter] == [("exponent", 1)]
    assert pw.rejections == 1 and [(c.name, c.count) for c in pw.rejections_by_parameter] == [("exponent", 1)]
    assert any("between -100 and 100" in c.name for c in pw.top_errors)
    # results: multiply answered once, failed once, timed out once
    assert (mul.calls, mul.answered, mul.errors, mul.empty, mul.timed_out) == (3, 1, 1, 0, 1)
    assert (pw.calls, pw.answered, pw.errors, pw.timed_out) == (2, 0, 2, 0)
    assert (add.calls, add.answered) == (1, 1) and add.result_tokens_mean == len("42") / 4
    assert mul.latency_p50_s is not None and mul.latency_p95_s >= mul.latency_p50_s
    # outcome: solved 1 of 1 when multiply was called right; 1 of 4 when wrong (the timed-out one answered anyway)
    assert (mul.solved_when_right.k, mul.solved_when_right.n) == (1, 1)
    assert (mul.solved_when_wrong.k, mul.solved_when_wrong.n) == (1, 4)
    # made-up names are reported apart, not as server tools
    assert [(u.name, u.calls, u.episodes) for u in r.unknown_tools] == [("math.pow", 1, 1)]
    assert "math.pow" not in {u.name for u in r.tools} and r.unknown_calls == 1
    # the demonstration's call (before the task) is not counted: subtract is never called
    assert r.tool("subtract").calls == 0
    # validate's findings sit beside the figures (the calculator's tools have none)
    assert all(u.findings == [] for u in r.tools)


def test_json_round_trip_and_rendering(groups, capsys):
    gs, tools = groups
    r = usage_report(gs, tools, model="policy", label="base")
    again = UsageReport.model_validate_json(r.model_dump_json())
    assert again == r
    page = html_section([r, again.model_copy(update={"label": "trained"})])
    assert "multiply" in page and "math.pow" in page and "trained" in page and "[" in page
    assert page.count("<tr>") == 1 + len(r.tools)  # a row per server tool; made-up names in the notes
    print_reports([r])
    out = capsys.readouterr().out
    assert "multiply" in out and "calls of tools the server does not have: math.pow 1" in out


def _traj(calls: list[tuple[str, str]], reward: float = 0.0) -> Trajectory:
    msgs = [{"role": "user", "content": "do it"}]
    for i, (name, result) in enumerate(calls):
        msgs.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": "{}"}}],
            }
        )
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": result})
    return Trajectory(messages=msgs, reward=reward)


def test_without_reference_chains_selection_is_not_computed_not_zero():
    tools = [{"type": "function", "function": {"name": "t", "description": "d", "parameters": {"type": "object"}}}]
    g = TrajectoryGroup(trajectories=[_traj([("t", "x"), ("t", "")])], scenario=Scenario(task="q"))
    r = usage_report([g], tools)
    u = r.tool("t")
    assert u.called_when_needed is None and u.episodes_needing is None and u.solved_when_right is None
    assert any(w.startswith("selection") for w in r.unavailable) and any(w.startswith("outcome") for w in r.unavailable)
    assert (u.calls, u.answered, u.empty) == (2, 1, 1)
    assert any(w.startswith("latency") for w in r.unavailable)  # hand-made trajectories recorded none


def test_bounded_for_500_tools_and_megabyte_results():
    tools = [
        {"type": "function", "function": {"name": f"tool_{i:03d}", "description": "", "parameters": {"type": "object"}}}
        for i in range(500)
    ]
    big = "x" * 1_000_000
    groups = [
        TrajectoryGroup(
            trajectories=[
                _traj(
                    [(f"tool_{(s * 7 + k) % 500:03d}", big if k else "Error: " + big) for k in range(4)]
                    + [(f"made_up_{s}", "Error: there is no tool named")]
                )
            ],
            scenario=Scenario(task="q"),
        )
        for s in range(60)
    ]
    t0 = time.perf_counter()
    r = usage_report(groups, tools)
    assert time.perf_counter() - t0 < 20
    assert len(r.tools) == 40 and r.rest.tools == 460 and r.rest.calls == 240 - sum(u.calls for u in r.tools)
    assert len(r.unknown_tools) == 20 and r.unknown_more == 40 and r.unknown_calls == 60
    assert r.tools[0].result_tokens_max >= 250_000
    errors = [c.name for u in r.tools for c in u.top_errors]
    assert errors and all(len(e) <= 163 and e.startswith("Error: xxx") for e in errors)
    assert len(r.tools[0].findings) == 1  # validate: no description
    assert len(json.dumps(r.model_dump())) < 200_000
    assert len(html_section([r])) < 300_000


def test_a_call_no_tool_message_answered_is_unanswered_not_empty():
    tools = [{"type": "function", "function": {"name": "t", "description": "d", "parameters": {"type": "object"}}}]
    t = _traj([("t", "")])
    t.messages.pop()  # the episode ended before the tool's answer
    r = usage_report([TrajectoryGroup(trajectories=[t], scenario=Scenario(task="q"))], tools)
    u = r.tool("t")
    assert (u.calls, u.unanswered, u.empty, u.answered) == (1, 1, 0, 0)


def test_learning_series_reads_the_per_step_figures():
    rows = [
        {"step": 1, "tool/needed/add": 4, "tool/called_when_needed/add": 1, "tool/needed/mul": 1},
        {"step": 2, "tool/needed/add": 4, "tool/called_when_needed/add": 3},
        {"step": 3},
    ]
    assert learning_series(rows) == [("add", [1, 2], [0.25, 0.75]), ("mul", [1], [0.0])]


def test_the_langgraph_agent_is_reported_the_same_way(tiny_model_dir):
    """Any agent: the prebuilt LangGraph ReAct graph's calls, through the same recording client, are counted alike."""
    replies = [call("nonexistent", x=1), call("multiply", a="seventeen", b=25), call("multiply", a=17, b=25), "425"]

    async def run():
        with scripted_endpoint(tiny_model_dir, replies) as (model, _):
            async with ToolPool(ServerSpec.parse(CALC)) as pool:
                # four scripted turns, one of them a call the grammar would not let the policy write
                agent = create_mcp_agent(model, pool, demonstration=False, constrain_tool_calls=False, max_turns=4)
                traj = await agent(MUL)
                return traj, pool.toolset.tools

    traj, tools = anyio.run(run)
    r = usage_report([TrajectoryGroup(trajectories=[traj], scenario=MUL)], tools)
    mul = r.tool("multiply")
    assert (mul.calls, mul.answered, mul.schema_failures) == (2, 1, 1)
    assert [(c.name, c.count) for c in mul.schema_by_parameter] == [("a", 1)]
    assert (mul.called_when_needed.k, mul.called_when_needed.n) == (1, 1)
    assert [(u.name, u.calls) for u in r.unknown_tools] == [("nonexistent", 1)]


def test_changes_say_whether_the_intervals_separate():
    def run(label, k, n):
        usage = UsageReport(tools=[ToolUsage(name="t", called_when_needed=Rate.of(k, n))])
        return UsageRun(label=label, model="m", usage=usage)

    result = UsageResult(
        server="s", scenarios=20, samples=1, runs=[run("base", 1, 20), run("new", 19, 20), run("x", 3, 20)]
    )
    assert changes(result) == [
        "t: called when needed 5% (base) -> 95% (new): the intervals separate",
        "t: called when needed 5% (base) -> 15% (x): within the intervals",
    ]


def test_arguments_the_schema_does_not_define_are_counted_by_name():
    schema = {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": False}
    tools = [
        {"type": "function", "function": {"name": "strict", "description": "d", "parameters": schema}},
        {
            "type": "function",
            "function": {"name": "loose", "description": "d", "parameters": {**schema, "additionalProperties": True}},
        },
    ]
    t = _traj([("strict", "Error: bad arguments for 'strict': Additional properties are not allowed"), ("loose", "ok")])
    for m in t.messages:
        for tc in m.get("tool_calls") or []:
            tc["function"]["arguments"] = '{"x": "a", "y": 1}'
    r = usage_report([TrajectoryGroup(trajectories=[t], scenario=Scenario(task="q"))], tools)
    strict, loose = r.tool("strict"), r.tool("loose")
    assert strict.schema_failures == 1 and [(c.name, c.count) for c in strict.schema_by_kind] == [
        ("unknown_property", 1)
    ]
    assert [(c.name, c.count) for c in strict.schema_by_parameter] == [("y", 1)]
    assert loose.schema_failures == 0 and loose.answered == 1  # allowed, and the server took it
    assert (
        [(c.name, c.count) for c in loose.unknown_parameters]
        == [("y", 1)]
        == [(c.name, c.count) for c in strict.unknown_parameters]
    )
