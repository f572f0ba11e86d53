import json
import sys
import types
from dataclasses import dataclass, field

import pytest

from mcprl.types import Scenario, load_jsonl
from tests.cli_runner import run_cli
from tests.fake_llm import FakeLLM, message_text

pytestmark = pytest.mark.unit

TOOLS = [
    {
        "type": "function",
        "function": {"name": "lookup_order", "description": "find an order by id", "parameters": {"type": "object"}},
    }
]


def numbered_tasks(request: dict) -> str:
    """A generator that writes the requested number of distinct tasks, numbered by request."""
    user = message_text(request, "user")
    k = int(user.split("Write ")[1].split(" ")[0])
    start = 100 * len(user)
    items = [
        {"task": f"Find order {start + i} and report its status.", "difficulty": 2, "tools": ["lookup_order"]}
        for i in range(k)
    ]
    return json.dumps({"scenarios": items})


@dataclass
class FakeToolset:
    tools: list
    resources: list = field(default_factory=list)
    prompts: list = field(default_factory=list)
    hash: str = "toolset-hash"


@pytest.fixture
def fake_tools(monkeypatch):
    """mcprl.tools' discovery, serving TOOLS without a real MCP server; it records the spec it was given."""
    seen: dict = {}

    async def discover(spec):
        seen.update(spec.model_dump())
        return FakeToolset(
            tools=TOOLS if seen["target"] != "python -m empty_server" else [], resources=[{"uri": "orders://recent"}]
        )

    module = types.ModuleType("mcprl.tools")
    module.discover = discover
    monkeypatch.setitem(sys.modules, "mcprl.tools", module)
    return seen


def test_scenarios_command_discovers_synthesizes_splits_and_writes(monkeypatch, capsys, tmp_path, fake_tools):
    out_file = tmp_path / "scenarios.jsonl"
    with FakeLLM(handler=numbered_tasks) as llm:
        code, out, err = run_cli(
            monkeypatch,
            capsys,
            "scenarios",
            "--source",
            "synthesized",
            "--server",
            "python -m orders_server",
            "-n",
            "7",
            "--model",
            "openai/gen",
            "--api-base",
            llm.base_url,
            "--env",
            "TOKEN=x",
            "--seed",
            "3",
            "--val-fraction",
            "0.3",
            "-o",
            str(out_file),
        )
    assert code == 0, err
    assert fake_tools["target"] == "python -m orders_server" and fake_tools["env"] == {"TOKEN": "x"}
    assert "orders://recent" in message_text(llm.requests[0], "system")
    scenarios = load_jsonl(out_file, Scenario)
    assert len(scenarios) == 7 and len(llm.requests) == 2
    assert sorted(s.split for s in scenarios) == ["train"] * 5 + ["val"] * 2
    assert all(s.metadata["generator_model"] == "openai/gen" and s.tools == ["lookup_order"] for s in scenarios)
    assert "synthesized 7/7 scenarios in 2 calls" in out
    assert "tools lookup_order:7" in out
    assert f"wrote 7 scenarios (5 train, 2 val) to {out_file}" in out


def test_a_server_without_tools_is_a_user_error(monkeypatch, capsys, tmp_path, fake_tools):
    code, _, err = run_cli(
        monkeypatch,
        capsys,
        "scenarios",
        "--source",
        "synthesized",
        "--server",
        "python -m empty_server",
        "-n",
        "3",
        "-o",
        str(tmp_path / "s.jsonl"),
    )
    assert code == 2 and "the server offers no tools" in err


def test_a_generator_that_yields_nothing_is_a_user_error(monkeypatch, capsys, tmp_path, fake_tools):
    with FakeLLM(handler=lambda r: "Sorry, I can't help with that.") as llm:
        code, _, err = run_cli(
            monkeypatch,
            capsys,
            "scenarios",
            "--source",
            "synthesized",
            "--server",
            "s",
            "-n",
            "3",
            "--model",
            "openai/gen",
            "--api-base",
            llm.base_url,
            "-o",
            str(tmp_path / "s.jsonl"),
        )
    *progress, last = err.strip().splitlines()
    assert code == 2 and len(progress) == 4 and all(line.startswith("generator call ") for line in progress)
    assert last.startswith(
        "error: openai/gen wrote 0 of the 3 scenarios asked for: 4 of 4 generator calls in a row added no "
        "new valid task (last problem: call 4: no complete JSON"
    )
    assert "; use a stronger model (--model openai/gpt-4.1" in last
    assert len(llm.requests) == 4
    assert not (tmp_path / "s.jsonl").exists()


def test_a_generator_that_stops_midway_keeps_what_it_made_and_names_the_fix(monkeypatch, capsys, tmp_path, fake_tools):
    first = json.dumps(
        {
            "scenarios": [
                {"task": f"Find order {i} and report its status.", "difficulty": 2, "tools": ["lookup_order"]}
                for i in (1, 2, 3)
            ]
        }
    )
    out_file = tmp_path / "s.jsonl"
    with FakeLLM([first] + ["I cannot."] * 4) as llm:
        code, _, err = run_cli(
            monkeypatch,
            capsys,
            "scenarios",
            "--source",
            "synthesized",
            "--server",
            "s",
            "-n",
            "8",
            "--model",
            "openai/gen",
            "--api-base",
            llm.base_url,
            "-o",
            str(out_file),
        )
    last = err.strip().splitlines()[-1]
    assert code == 2 and len(llm.requests) == 5
    assert last.startswith(
        f"error: wrote 3 scenarios (2 train, 1 val) to {out_file}, then stopped: openai/gen wrote 3 of the 8"
    )
    assert (
        "4 of 5 generator calls in a row added no new valid task" in last and "use a stronger model (--model " in last
    )
    assert [s.task for s in load_jsonl(out_file, Scenario)] == [
        f"Find order {i} and report its status." for i in (1, 2, 3)
    ]
