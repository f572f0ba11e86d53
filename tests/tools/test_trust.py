"""Hostile and broken servers, settings and names, outside the endpoint (issues 28 and 29): a
strange schema, a secret, a garbage server or a path-like name gets a one-line error or a failed
call, never a traceback, and nothing secret is written. Real stdio servers (tests/data/hostile_server.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mcprl.run import demonstration
from mcprl.tools import ServerSpec, ToolPool
from mcprl.tools.client import open_session
from mcprl.types import Scenario
from tests.cli_runner import run_cli
from tests.fake_llm import FakeLLM

pytestmark = pytest.mark.anyio
HOSTILE = Path(__file__).resolve().parents[1] / "data" / "hostile_server.py"


def hostile(mode: str) -> str:
    return f"{sys.executable} {HOSTILE} {mode}"


# --- issue 29.6: a $ref cycle in a tool's inputSchema


def test_validate_reports_a_ref_cycle_as_an_error(monkeypatch, capsys):
    code, out, err = run_cli(monkeypatch, capsys, "validate", "-s", hostile("ref-cycle"))
    assert code == 1, (out, err)
    assert "loop" in out and "$ref cycle: #/$defs/A -> #/$defs/B -> #/$defs/A" in out and "Traceback" not in err


async def test_a_call_against_a_ref_cycle_is_an_error_not_a_recursion_error():
    async with open_session(ServerSpec.parse(hostile("ref-cycle"))) as session:
        out = await session.call("loop", {"node": {"x": 1}})
        fine = await session.call("lookup", {"q": "x"})
    assert out.is_error and "$ref cycle" in out.text
    assert not fine.is_error  # the server's other tools still work


async def test_a_ref_cycle_tool_never_ends_the_demonstration():
    """The demonstration writer's call against the cyclic tool used to raise RecursionError inside
    a task group: an ExceptionGroup ending `mcprl train`. Now it is a failed call, and with no
    call that runs the run shows the generic example."""
    train = [Scenario(id=f"s{i}", task=f"Follow node {i}", tools=["loop"]) for i in range(2)]
    said: list[str] = []
    with FakeLLM(handler=lambda body: '{"node": {"x": 1}}') as llm:
        async with ToolPool(ServerSpec.parse(hostile("ref-cycle"))) as pool:
            demo, rest = await demonstration.build(
                train, pool, model="openai/gen", api_base=llm.base_url, seed=0, say=said.append
            )
    assert demo.source == "generic" and rest == train and "generic" in said[-1]


def test_schema_problem_tells_cycles_from_recursive_schemas():
    from mcprl.tools.convert import schema_problem

    tree = {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}
    assert schema_problem(tree) is None  # recursion that descends into the instance is fine
    assert schema_problem({"$ref": "#"}) == "$ref cycle: # -> #"
    assert "$ref cycle" in schema_problem(
        {"anyOf": [{"$ref": "#/$defs/x"}], "$defs": {"x": {"allOf": [{"$ref": "#"}]}}}
    )
    deep: dict = {"type": "string"}
    for _ in range(300):
        deep = {"anyOf": [deep]}
    assert "nested more than" in schema_problem(deep)
    # a fan-out of 2^25 paths through the refs is walked once per ref
    defs = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(25)} | {"d25": {"type": "string"}}
    assert schema_problem({"$ref": "#/$defs/d0", "$defs": defs}) is None


# --- issue 29.8: names that would leave MCPRL_HOME


@pytest.mark.parametrize(
    "flag,value", [("--name", "../../escape"), ("--project", ".."), ("--name", "."), ("--name", "a/b")]
)
def test_a_name_that_leaves_mcprl_home_is_a_one_line_error(monkeypatch, capsys, tmp_path, flag, value):
    home = tmp_path / "home"
    monkeypatch.setenv("MCPRL_HOME", str(home))
    code, out, err = run_cli(
        monkeypatch, capsys, "train", flag, value, "--steps", "1", "--server", "python -m mcprl.servers.calculator"
    )
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"bad setting {flag.removeprefix('--')}: {value!r} is not a usable name" in err
    assert not any(tmp_path.iterdir()) or list(tmp_path.iterdir()) == [home]


def test_no_path_helper_or_model_leaves_mcprl_home(monkeypatch, tmp_path):
    from pydantic import ValidationError

    from mcprl import paths
    from mcprl.errors import UserError
    from mcprl.model.trainable import TrainableModel

    monkeypatch.setenv("MCPRL_HOME", str(tmp_path))
    assert paths.model_dir("p", "...x") == tmp_path / "p" / "...x"
    for project, name in [("..", "x"), ("p", ".."), ("p", "../x"), ("p", "")]:
        with pytest.raises(UserError):
            paths.checkpoints_dir(project, name)
        with pytest.raises(ValidationError):
            TrainableModel(name=name, project=project)
    # `mcprl eval --model`: a path or hub id is a base model; a project that leaves home is refused
    from mcprl.run.evaluate import resolve_checkpoint

    assert resolve_checkpoint("/models/tiny-llama", "default") == ("/models/tiny-llama", None, "/models/tiny-llama")
    with pytest.raises(UserError, match="--project"):
        resolve_checkpoint("agent", "..")


# --- issues 28.2 and 29.9: settings the endpoint refuses, and a run that would train nothing


def test_a_temperature_the_endpoint_refuses_is_refused_where_it_is_read():
    from pydantic import ValidationError

    from mcprl.rollout.config import RolloutConfig

    assert RolloutConfig(temperature=2.0).temperature == 2.0
    with pytest.raises(ValidationError, match="temperature"):
        RolloutConfig(temperature=2.5)


def test_a_run_whose_rollouts_all_fail_stops_with_the_reason(tmp_path, tiny_model_dir, monkeypatch, capsys):
    """Every rollout raising (here a user's agent; in the issue a temperature of 2.5 or a prompt
    over the context) used to print rewards of 0.000, train nothing and exit 0."""
    monkeypatch.setenv("MCPRL_HOME", str(tmp_path))
    args = [
        "--server",
        "python -m mcprl.servers.calculator",
        "--no-per-rollout",
        "--tasks",
        "calculator",
        "-n",
        "6",
        "--group-size",
        "2",
        "--groups-per-step",
        "1",
        "--max-tokens",
        "4",
        "--max-turns",
        "1",
        "--eval-every",
        "0",
        "--val-size",
        "2",
        "--model",
        str(tiny_model_dir),
        "--steps",
        "1",
        "--name",
        "dead",
        "--agent",
        "user_agents:crash",
    ]
    # in this process (pytest puts tests/ on its path, where user_agents.py is): an interpreter of its own costs
    # ~10 s of imports
    code, _, err = run_cli(monkeypatch, capsys, "train", *args)
    assert code == 2, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert (
        last.startswith("error: eval at step 0: 2 of 2 rollouts failed or sampled nothing")
        and "ValueError: boom" in last
    ), err
    assert "Traceback" not in err and not (tmp_path / "default" / "dead" / "checkpoints" / "step_0001").exists()


def test_untrainable_names_the_most_common_reason():
    from mcprl.rollout.gather import untrainable
    from mcprl.types import Generation, Trajectory, TrajectoryGroup

    gen = Generation(prompt_token_ids=[1], completion_token_ids=[2], logprobs=[-0.1])
    ok = Trajectory(generations=[gen])
    over = [
        Trajectory(
            metadata={"truncated": f"prompt is {n} tokens; the model's limit is 2048"}, metrics={"truncated": 1.0}
        )
        for n in (3000, 4100, 5200)
    ]
    groups = [
        TrajectoryGroup(trajectories=[ok, *over[:1]]),
        TrajectoryGroup(trajectories=over[1:], exceptions=["ValueError: x"]),
    ]
    count, total, reason = untrainable(groups)
    assert (count, total) == (4, 5) and reason == "prompt is 3000 tokens; the model's limit is 2048"
    assert untrainable([TrajectoryGroup(trajectories=[ok, ok, over[0]])]) is None
    from mcprl.run.metrics import rollout_metrics

    row = rollout_metrics(groups)
    assert row["truncated_episodes"] == 3 and row["failed_rollouts"] == 0 and row["truncated_rate"] == 0.75


# --- issue 29.7: secrets a server repeats, and secrets in the server's URL


async def test_a_secret_the_server_repeats_in_a_description_is_masked_in_tools_json(tmp_path):
    from mcprl.tools.config import ServerConfig
    from mcprl.tools.discovery import open_tools

    token = "tok-0123456789-secret"
    server = ServerConfig(target=hostile("echo-secret"), env={"SERVICE_TOKEN": token})
    said: list[str] = []
    async with open_tools(server, tmp_path, say=said.append) as pool:
        assert token in pool.toolset.tools[0]["function"]["description"]  # the server did repeat it
    written = (tmp_path / "tools.json").read_text()
    assert token not in written and "authenticated as ***" in written


def test_a_key_in_the_server_url_is_masked_in_config_json_and_the_console():
    from mcprl.run.config import RunConfig
    from mcprl.tools import ServerSpec, secret_values
    from mcprl.tools.redact import redact

    url = "https://tasks.example.com/mcp?api_key=sk-live-abcdef123456&region=eu&token=tk-987654321"
    secrets = secret_values(ServerSpec.parse(url), environ={})
    assert set(secrets) == {"sk-live-abcdef123456", "tk-987654321"}  # region is no secret
    saved = json.dumps(RunConfig(server={"target": url}).redacted(secrets))
    assert "sk-live" not in saved and "tk-987654321" not in saved and "region=eu" in saved
    assert (
        redact(
            "https://bob:pa55word-long@host/mcp",
            secret_values(ServerSpec.parse("https://bob:pa55word-long@host/mcp"), environ={}),
        )
        == "https://bob:***@host/mcp"
    )
    # a stdio command line is not parsed as a URL
    assert secret_values(ServerSpec.parse("python -m mcprl.servers.calculator --x?token=abcdefgh"), environ={}) == []


# --- issue 29.10: bounded error messages, garbage and deep answers reported at once


async def test_a_bad_argument_against_a_huge_enum_gives_a_short_error():
    """A 75,000-value enum: jsonschema's message lists them all (1.27 million characters)."""
    from mcprl.errors import MAX_MESSAGE

    async with open_session(ServerSpec.parse(hostile("big-enum"))) as session:
        out = await session.call("pick", {"color": "mauve"})
    assert out.is_error and out.error_kind == "bad_arguments" and "more characters" in out.text
    assert len(out.text) < MAX_MESSAGE + 100


@pytest.mark.parametrize(
    "mode,problem",
    [
        ("garbage", "wrote something that is not MCP JSON-RPC to stdout"),
        ("deep", "its tools/list answer could not be read"),
    ],
)
def test_a_garbage_or_too_deep_server_is_reported_at_once(monkeypatch, capsys, mode, problem):
    import time

    t0 = time.monotonic()
    code, out, err = run_cli(monkeypatch, capsys, "tools", "--server", hostile(mode))
    took = time.monotonic() - t0
    assert code == 2 and problem in err and len(err.strip().splitlines()) == 1, err
    assert took < 15  # not the 30 s connect timeout


def test_a_user_error_inside_a_task_group_is_still_one_line(capsys, monkeypatch):
    import anyio
    import typer

    from mcprl.cli.console_script import run_app
    from mcprl.errors import UserError

    app = typer.Typer()

    @app.command()
    def go() -> None:
        async def fail() -> None:
            raise UserError("openai/gen: no API key; set OPENAI_API_KEY")

        async def main() -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(fail)

        anyio.run(main)

    monkeypatch.setattr(sys, "argv", ["mcprl"])
    with pytest.raises(SystemExit) as exit_:
        run_app(app)
    assert exit_.value.code == 2
    assert capsys.readouterr().err == "error: openai/gen: no API key; set OPENAI_API_KEY\n"


def test_train_refuses_a_temperature_over_2_in_one_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("MCPRL_HOME", str(tmp_path))
    code, out, err = run_cli(
        monkeypatch,
        capsys,
        "train",
        "--temperature",
        "2.5",
        "--steps",
        "1",
        "--server",
        "python -m mcprl.servers.calculator",
    )
    assert code == 2 and "temperature" in err and "2" in err and len(err.strip().splitlines()) == 1, err
