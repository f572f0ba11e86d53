"""Where the per-tool report shows: tool overrides (what the model sees, not what the server gets),
`mcprl usage` end to end on the tiny model, and a run's report.html."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import pytest

from mcprl.errors import UserError
from mcprl.rollout.config import RolloutConfig
from mcprl.rollout.loop import rollout
from mcprl.run.report import write_report
from mcprl.tools import ServerSpec, ToolPool
from mcprl.types import Scenario, Trajectory, TrajectoryGroup, dump_jsonl
from mcprl.usage import load_overrides
from tests.cli_runner import run_cli
from tests.scripted_policy import call, scripted_endpoint

CALC = "python -m mcprl.servers.calculator"
OVERRIDES = """
[tools.multiply]
description = "MULTIPLY: the product of two numbers"
[tools.multiply.parameters.a]
description = "the first factor, e.g. 17"
examples = [17]
[tools.power]
hidden = true
"""


def test_an_override_reaches_the_prompt_and_not_the_server(tiny_model_dir, tmp_path):
    f = tmp_path / "o.toml"
    f.write_text(OVERRIDES)
    shown = load_overrides(f)
    scenario = Scenario(task="What is 17 * 25?", check={"kind": "exact", "value": "425"})

    async def run():
        with scripted_endpoint(tiny_model_dir, [call("multiply", a=17, b=25), "425"]) as (model, engine):
            async with ToolPool(ServerSpec.parse(CALC)) as pool:
                server_side = json.dumps(pool.toolset.mcp_tools)
                pool.toolset = pool.toolset.model_copy(update={"tools": shown.apply(pool.toolset.tools)})
                traj = await rollout(model, scenario, pool, RolloutConfig(demonstration=False))
                return traj, engine.seen[0]["tools"], server_side, pool.toolset.mcp_tools

    traj, offered, server_side, mcp_tools = anyio.run(run)
    by_name = {t["function"]["name"]: t["function"] for t in offered}
    assert "power" not in by_name and {"add", "multiply"} <= set(by_name)
    assert by_name["multiply"]["description"] == "MULTIPLY: the product of two numbers"
    assert by_name["multiply"]["parameters"]["properties"]["a"]["examples"] == [17]
    assert by_name["add"]["description"] == "Add two numbers and return a + b."
    # the server's tools are as it listed them, and the call it got was the model's, answered as before
    assert json.dumps(mcp_tools) == server_side and "MULTIPLY" not in server_side
    assert traj.messages[-2] == {
        "role": "tool",
        "tool_call_id": traj.messages[-3]["tool_calls"][0]["id"],
        "content": "425",
    }
    assert (
        traj.metadata["tool_outcomes"][0]["tool"] == "multiply"
        and traj.metadata["tool_outcomes"][0]["error_kind"] is None
    )


def test_override_files_are_checked(tmp_path):
    j = tmp_path / "o.json"
    j.write_text(json.dumps({"tools": {"nope": {"description": "x"}}}))
    tools = [
        {
            "type": "function",
            "function": {"name": "add", "description": "d", "parameters": {"type": "object", "properties": {"a": {}}}},
        }
    ]
    with pytest.raises(UserError, match="has no tool 'nope'"):
        load_overrides(j).apply(tools)
    j.write_text(json.dumps({"tools": {"add": {"parameters": {"b": {"description": "x"}}}}}))
    with pytest.raises(UserError, match="add has no parameter 'b'"):
        load_overrides(j).apply(tools)
    j.write_text(json.dumps({"tools": {"add": {"describe": "x"}}}))
    with pytest.raises(UserError, match="not a tool-overrides file"):
        load_overrides(j)
    j.write_text(json.dumps({"tools": {"add": {"hidden": True}}}))
    with pytest.raises(UserError, match="hides every tool"):
        load_overrides(j).apply(tools)
    bad = tmp_path / "o.toml"
    bad.write_text("[tools.add\n")
    with pytest.raises(UserError, match="not valid TOML"):
        load_overrides(bad)


def _scenarios(path: Path) -> Path:
    ref = {"tool": "multiply", "arguments": {"a": 17, "b": 25}, "result": "425"}
    dump_jsonl(
        [
            Scenario(
                id=f"s{i}",
                task=f"What is 17 * 25? ({i})",
                check={"kind": "exact", "value": "425"},
                reference=[ref],
            )
            for i in range(2)
        ],
        path,
    )
    return path


def _mcprl(monkeypatch, capsys, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    """`mcprl ARGS` in this process (an interpreter of its own costs ~10 s of imports): exit code, stdout, stderr."""
    monkeypatch.setenv("MCPRL_HOME", str(tmp_path / "home"))
    return run_cli(monkeypatch, capsys, *args)


def _on_calc(tmp_path: Path, model: Path, *more: str) -> list[str]:
    """The flags of a tiny-model run on the calculator's two scenarios, shown the tools with OVERRIDES."""
    (tmp_path / "o.toml").write_text(OVERRIDES)
    scenarios = str(_scenarios(tmp_path / "s.jsonl"))
    flags = ["--server", CALC, "--no-per-rollout", "--scenarios", scenarios, "--model", str(model), "--max-tokens", "6"]
    return [*flags, "--max-turns", "1", "--tool-overrides", str(tmp_path / "o.toml"), *more]


def test_usage_command_end_to_end_with_a_baseline_and_overrides(tiny_model_dir, tmp_path, monkeypatch, capsys):
    other = shutil.copytree(tiny_model_dir, tmp_path / "other-model")
    more = ["--baseline", str(other), "--samples", "1", "--json", str(tmp_path / "u.json")]
    code, out, err = _mcprl(monkeypatch, capsys, tmp_path, "usage", *_on_calc(tmp_path, tiny_model_dir, *more))
    assert code == 0, err[-3000:]
    result = json.loads((tmp_path / "u.json").read_text())
    runs = result["runs"]
    assert result["scenarios"] == 2 and [run["overrides"] is not None for run in runs] == [False, True, False, True]
    assert [run["model"] for run in runs] == [str(tiny_model_dir)] * 2 + [str(other)] * 2
    for run in runs:
        usage = run["usage"]
        assert usage["episodes"] == 2 and usage["episodes_with_needs"] == 2
        assert {t["name"] for t in usage["tools"]} == {"add", "subtract", "multiply", "divide", "power"}
        assert next(t for t in usage["tools"] if t["name"] == "multiply")["episodes_needing"] == 2
    assert "multiply" in out and "called when needed" in out
    # each run's correct-call rate against the first run's, per tool needed
    assert out.count("multiply: called when needed") == 3


def test_usage_command_needs_a_server(monkeypatch, capsys):
    code, out, err = run_cli(monkeypatch, capsys, "usage")
    assert code != 0 and "give --server SPEC" in out + err


def _traj(name: str, result: str, verify: float) -> Trajectory:
    return Trajectory(
        messages=[
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": name, "arguments": '{"a": 1, "b": 2}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c", "content": result},
        ],
        reward=verify,
        metrics={"verify": verify},
    )


def test_report_html_has_the_tool_section_and_keeps_made_up_names_apart(tmp_path):
    d = tmp_path / "run"
    (d / "eval").mkdir(parents=True)
    schema = {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    }
    tools = [
        {"type": "function", "function": {"name": n, "description": n, "parameters": schema}}
        for n in ("add", "multiply")
    ]
    (d / "tools.json").write_text(json.dumps({"server": CALC, "hash": "h", "tools": tools}))
    scenario = Scenario(
        id="s",
        task="q",
        check={"kind": "exact", "value": "3"},
        reference=[{"tool": "add", "arguments": {"a": 1, "b": 2}, "result": "3"}],
    )
    dump_jsonl(
        [
            TrajectoryGroup(
                trajectories=[_traj("math.pow", "Error: there is no tool named 'math.pow'", 0.0)], scenario=scenario
            )
        ],
        d / "eval" / "step_0000.jsonl",
    )
    dump_jsonl(
        [TrajectoryGroup(trajectories=[_traj("add", "3", 1.0)], scenario=scenario)], d / "eval" / "step_0002.jsonl"
    )
    row = {"reward_mean": 0.5, "tool_call_rate": 1.0, "turns_mean": 2.0, "tool_error_rate": 0.5, "trajectories": 2}
    (d / "metrics.jsonl").write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in [
                {"kind": "eval", "step": 0, **row, "success_rate": 0.0, "success_ci": [0, 0.8]},
                {
                    "kind": "train",
                    "step": 1,
                    **row,
                    "tool/calls/add": 1,
                    "tool/calls/math.pow": 1,
                    "tool/errors/math.pow": 1,
                    "tool/needed/add": 2,
                    "tool/called_when_needed/add": 1,
                },
                {"kind": "eval", "step": 2, **row, "success_rate": 1.0, "success_ci": [0.2, 1]},
            ]
        )
    )
    page = write_report(d).read_text()
    tools_table = page.split("<h2>Tools</h2>")[1].split("</table>")[0]
    assert "<td>add</td>" in tools_table and "math.pow" not in tools_table
    assert "not tools of the server: math.pow (1)" in page
    section = page.split("<h2>Tool use</h2>")[1]
    assert "base (step 0)" in section and "trained (step 2)" in section
    assert '<span class="who">base (step 0)</span> <span class="na">' in section  # add never called by the base: n/a
    assert "calls of tools the server does not have: math.pow 1" in section
    assert ".cols img{max-width:100%" in page  # the plots fit their columns
    assert (d / "report" / "tools.png").exists() and 'src="report/tools.png"' in page  # which tool it learned to call


def test_usage_command_grounds_tasks_in_the_server(tiny_model_dir, tmp_path, monkeypatch, capsys):
    """Without --scenarios, `mcprl usage` grounds tasks in the server (as `mcprl train` does) and measures
    selection against their reference chains."""
    code, _, err = _mcprl(
        monkeypatch,
        capsys,
        tmp_path,
        "usage",
        "--server",
        "python -m mcprl.servers.inventory",
        "--no-per-rollout",  # one server for exploring and every rollout: a process each costs ~2 s of CPU
        "-n",
        "4",
        "--samples",
        "1",
        "--model",
        str(tiny_model_dir),
        "--max-tokens",
        "6",
        "--max-turns",
        "1",
        "--explore-calls",
        "40",
        "--out",
        str(tmp_path / "tasks"),
        "--json",
        str(tmp_path / "u.json"),
    )
    assert code == 0, err[-3000:]
    (run,) = json.loads((tmp_path / "u.json").read_text())["runs"]
    assert (tmp_path / "tasks" / "scenarios.jsonl").exists() and (tmp_path / "tasks" / "exploration.jsonl").exists()
    usage = run["usage"]
    assert usage["needs_from"] == ["reference chain"] and usage["episodes"] == usage["episodes_with_needs"] == 4
    assert sum(t["episodes_needing"] for t in usage["tools"]) >= 4  # each task's chain needs at least one tool


def test_eval_prints_the_per_tool_table(tiny_model_dir, tmp_path, monkeypatch, capsys):
    code, out, err = _mcprl(monkeypatch, capsys, tmp_path, "eval", *_on_calc(tmp_path, tiny_model_dir))
    assert code == 0, err[-3000:]
    assert "Tool use on 2 episodes (5 server tools)" in out and "called when needed" in out
    assert all(name in out.split("Tool use")[1] for name in ("add", "multiply", "power"))  # a row per server tool


def test_usage_refuses_an_override_of_a_tool_the_server_lacks_before_rolling_out(tmp_path, monkeypatch, capsys):
    (tmp_path / "o.json").write_text(json.dumps({"tools": {"nope": {"description": "x"}}}))
    code, _, err = _mcprl(
        monkeypatch,
        capsys,
        tmp_path,
        "usage",
        "--server",
        CALC,
        "--scenarios",
        str(_scenarios(tmp_path / "s.jsonl")),
        "--tool-overrides",
        str(tmp_path / "o.json"),
    )
    assert code != 0 and "Traceback" not in err
    assert "the server has no tool 'nope'; its tools: add, subtract, multiply, divide, power" in err
    assert "rolling out" not in err
