"""The run's settings: one model nested by stage, the same in a run file, a run's config.json and
the flags of `mcprl train` (made from the model)."""

import inspect
import json
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from mcprl.cli import flags, train_cmd
from mcprl.errors import UserError
from mcprl.rollout.config import RolloutConfig
from mcprl.run.config import RunConfig, load_config, load_saved
from mcprl.train.config import TrainConfig
from tests.cli_runner import run_cli

pytestmark = pytest.mark.anyio

# Settings the flags below set, each with a value other than its default, by its place.
FLAGGED = {
    "server.target": "python -m mcprl.servers.calculator",
    "server.transport": "stdio",
    "server.env": {"K": "v"},
    "server.cwd": "/tmp",
    "server.allow": ["add", "sub*"],
    "server.deny": ["power"],
    "model": "m",
    "name": "n1",
    "project": "p1",
    "scenarios.file": "s.jsonl",
    "scenarios.tasks": "calculator",
    "scenarios.difficulties": [1, 2],
    "scenarios.n": 12,
    "scenarios.val_size": 3,
    "judge.mode": "both",
    "judge.model": "openai/x",
    "judge.api_base": "http://judge",
    "judge.rubric": "r.md",
    "steps": 3,
    "time_budget_minutes": 2.5,
    "group_size": 3,
    "groups_per_step": 2,
    "train.learning_rate": 0.0001,
    "rollout.max_turns": 2,
    "rollout.max_tokens": 48,
    "rollout.temperature": 0.7,
    "demonstration_file": "ex.json",
    "scenarios.task_help": False,
    "judge.shaping": 0.2,
    "max_extra_groups": 1,
    "eval_every": 2,
    "eval_samples": 2,
    "seed": 5,
    "sft_warmup_steps": 1,
    "wandb": True,
    "runtime.dtype": "float32",
}


def at(cfg: BaseModel, place: str):
    for part in place.split("."):
        cfg = getattr(cfg, part)
    return cfg


def toml_value(value) -> str:
    return json.dumps(value) if not isinstance(value, bool) else str(value).lower()


def test_unknown_keys_name_the_known_keys_and_sections(tmp_path):
    f = tmp_path / "run.toml"
    f.write_text("stepz = 3\n")
    with pytest.raises(
        UserError,
        match=r"unknown key\(s\) stepz; known keys: model, name, .*steps.*; sections: \[server\] \[scenarios\] "
        r"\[explore\] \[rollout\] \[judge\] \[train\] \[cluster\] \[lora\] \[runtime\]$",
    ):
        load_config(f, {})
    f.write_text("[rollout]\nmax_turnz = 3\n")
    with pytest.raises(
        UserError, match=r"unknown key\(s\) rollout.max_turnz; known keys in \[rollout\]: agent, max_turns, max_tokens"
    ):
        load_config(f, {})
    f.write_text("rollout = 3\n")
    with pytest.raises(UserError, match=r"rollout must be a table"):
        load_config(f, {})


# A valid value other than the default, for every TrainConfig field.
TRAIN = {
    "learning_rate": 1e-3,
    "scale_rewards": False,
    "loss": "rft",
    "success_threshold": 0.5,
    "epsilon": 0.3,
    "epsilon_high": 0.28,
    "beta": 0.04,
    "loss_normalization": "sequence",
    "max_grad_norm": 0.5,
    "weight_decay": 0.01,
    "micro_batch_tokens": 512,
    "logprob_chunk": 32,
    "gradient_checkpointing": "off",  # on, off or auto: a word, as the flag takes it
    "max_off_policy_steps": 2,
}


def test_every_train_setting_is_settable_from_a_run_file(tmp_path):
    assert set(TRAIN) == set(TrainConfig.model_fields)
    f = tmp_path / "run.toml"
    f.write_text("[train]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in TRAIN.items()))
    assert load_config(f, {}).train == TrainConfig(**TRAIN)


@pytest.fixture
def parse(monkeypatch, capsys):
    """`mcprl train ARGS` up to the settings it would run with."""

    def parse(*args: str) -> RunConfig:
        seen = {}

        async def capture(cfg, resume, console):
            seen["cfg"] = cfg
            raise UserError("stop here")

        monkeypatch.setattr(train_cmd, "run_with_progress", capture)
        code, _, err = run_cli(monkeypatch, capsys, "train", *args)
        assert code == 2 and "stop here" in err, err
        return seen["cfg"]

    return parse


def test_every_train_setting_has_a_flag(parse):
    args = []
    for key, value in TRAIN.items():
        flag = "--" + key.replace("_", "-")
        args += [flag if value is True else f"--no-{flag[2:]}"] if isinstance(value, bool) else [flag, str(value)]
    assert parse(*args).train == TrainConfig(**TRAIN)


def test_the_flags_set_the_settings_they_name(parse, tmp_path):
    cfg = parse(
        "--server",
        "python -m mcprl.servers.calculator",
        "--transport",
        "stdio",
        "--env",
        "K=v",
        "--cwd",
        "/tmp",
        "--allow",
        "add",
        "--allow",
        "sub*",
        "--deny",
        "power",
        "--model",
        "m",
        "--scenarios",
        "s.jsonl",
        "--tasks",
        "calculator",
        "--difficulty",
        "1",
        "--difficulty",
        "2",
        "-n",
        "12",
        "--judge",
        "both",
        "--judge-model",
        "openai/x",
        "--api-base",
        "http://judge",
        "--rubric",
        "r.md",
        "--steps",
        "3",
        "--time-budget",
        "2.5",
        "--group-size",
        "3",
        "--groups-per-step",
        "2",
        "--max-turns",
        "2",
        "--max-tokens",
        "48",
        "--learning-rate",
        "1e-4",
        "--temperature",
        "0.7",
        "--sft-warmup-steps",
        "1",
        "--eval-every",
        "2",
        "--demonstration-file",
        "ex.json",
        "--no-task-help",
        "--shaping",
        "0.2",
        "--max-extra-groups",
        "1",
        "--val-size",
        "3",
        "--eval-samples",
        "2",
        "--dtype",
        "float32",
        "--name",
        "n1",
        "--project",
        "p1",
        "--seed",
        "5",
        "--wandb",
    )
    for place, value in FLAGGED.items():
        assert at(cfg, place) == value, place
    assert parse("--header", "Authorization: Bearer abc", "--server", "http://x/mcp").server.headers == {
        "Authorization": "Bearer abc"
    }
    assert parse("--server", "python -m x", "--max-result-chars", "1500").server.spec().max_result_chars == 1500


def test_flags_override_the_file_and_a_bad_value_names_the_setting(parse, tmp_path, monkeypatch, capsys):
    f = tmp_path / "run.toml"
    f.write_text("steps = 3\n[rollout]\nmax_turns = 2\ntemperature = 0.5\n")
    cfg = parse("--config", str(f), "--max-turns", "5")
    assert (cfg.steps, cfg.rollout.max_turns, cfg.rollout.temperature) == (3, 5, 0.5)
    code, _, err = run_cli(monkeypatch, capsys, "train", "--max-turns", "0")
    assert (
        code == 2 and err.strip() == "error: bad setting rollout.max_turns: Input should be greater than or equal to 1"
    )
    # a setting of two kinds (on, off or "auto"): named as the setting, with what each kind takes
    code, _, err = run_cli(monkeypatch, capsys, "train", "--gradient-checkpointing", "maybe")
    assert code == 2 and err.strip() == (
        "error: bad setting train.gradient_checkpointing: Input should be a valid boolean, unable to interpret input; "
        "or Input should be 'auto'"
    )


def test_every_setting_has_a_flag_named_after_it():
    flagged = {place for place, _, _ in flags.FLAGS.values()}
    unflagged = {place for place, _ in flags.settings()} - flagged
    # written by the run; chat messages and Ray's custom resources (a run file can give them)
    assert unflagged == {"demonstration_source", "rollout.demonstrations", "cluster.worker_resources"}
    names = [flags.flag_name(p) for p in flagged]
    assert len(names) == len(set(names))
    assert set(flags.FLAG_NAMES) <= flagged, "a FLAG_NAMES key names no setting, so its flag keeps the default name"
    assert {
        p: flags.flag_name(p) for p in ("rollout.max_turns", "train.epsilon", "train.beta", "scenarios.n", "lora.rank")
    } == {
        "rollout.max_turns": "--max-turns",
        "train.epsilon": "--epsilon",
        "train.beta": "--beta",
        "scenarios.n": "-n",
        "lora.rank": "--lora-rank",
    }


def test_a_new_setting_gets_its_flag():
    class Rollout(RolloutConfig):
        new_knob: int = Field(default=3, description="turns the knob")

    class Run(RunConfig):
        rollout: Rollout = Field(default_factory=Rollout)

    found = flags.flags(Run)
    place, kind, field = found["rollout__new_knob"]
    assert (place, kind, flags.flag_name(place), flags.flag_help(field, kind)) == (
        "rollout.new_knob",
        int,
        "--new-knob",
        "turns the knob \\[3]",
    )

    def command(**given):
        pass

    option = inspect.signature(flags.with_flags(command, found)).parameters["rollout__new_knob"].default
    assert option.param_decls == ("--new-knob",) and option.rich_help_panel == "\\[rollout]"
    assert (
        typing.get_origin(flags.flag_type(RunConfig.model_fields["server"].annotation.model_fields["allow"].annotation))
        is list
    )


def test_a_runs_config_json_loads_back_and_serves_as_a_run_file_once_its_secrets_are_given(tmp_path):
    saved = tmp_path / "config.json"
    cfg = RunConfig(
        server={"target": "python -m mcprl.servers.calculator", "headers": {"X": "***"}},
        rollout={"max_turns": 2, "demonstrations": [[{"role": "user", "content": "hi"}]]},
        demonstration_source="file",
        judge={"mode": "both"},
    )
    # config.json loads back as it was, and serves as a run file once its masked secrets are given again
    saved.write_text(json.dumps(cfg.redacted([])))
    assert load_saved(saved) == cfg
    with pytest.raises(
        UserError,
        match=r"config.json does not hold the value of X \(secrets are masked\); give it again: --header 'X: ...'$",
    ):
        load_config(saved, {})
    assert load_config(saved, {"server.headers": ["X: v"]}) == cfg.model_copy(
        update={"server": cfg.server.model_copy(update={"headers": {"X": "v"}})}
    )


async def test_a_resumed_run_keeps_the_demonstration_of_its_config_json(home):
    from mcprl.run.runner import TrainingRun

    run = TrainingRun(RunConfig(name="old", rollout={"demonstration": True}), resume=True, say=lambda _: None)
    run.dir.mkdir(parents=True)
    example = [{"role": "user", "content": "hi"}]
    saved = RunConfig(name="old", rollout={"demonstrations": [example]}, demonstration_source="file")
    (run.dir / "config.json").write_text(json.dumps(saved.redacted([])))
    assert await run._demonstration(None, [], None) == []
    assert (run.cfg.rollout.demonstrations, run.cfg.demonstration_source) == ([example], "file")


def test_reading_the_settings_loads_no_sdk_and_the_packages_export_what_they_name():
    """`mcprl --help` builds the flags from the settings: that must not load the MCP SDK or litellm.
    A name exported on first use must not be shadowed by a submodule of the same name."""
    import subprocess
    import sys

    code = (
        "import sys, types, importlib, pkgutil, mcprl.run.config; "
        "print(sorted({'mcp', 'litellm', 'torch'} & set(sys.modules))); "
        "[importlib.import_module(m.name) for p in ('mcprl.tools', 'mcprl.judges', 'mcprl.scenarios') "
        " for m in pkgutil.iter_modules(importlib.import_module(p).__path__, p + '.')]; "
        "print([f'{p}.{n}' for p in ('mcprl.tools', 'mcprl.judges', 'mcprl.scenarios') for n in "
        "importlib.import_module(p).__all__ "
        " if isinstance(getattr(importlib.import_module(p), n), types.ModuleType)])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:2] == ["[]", "[]"]


def test_every_command_that_connects_to_a_server_takes_the_same_server_flags():
    """`[server]`'s flags are made once (mcprl.cli.flags.SERVER_FLAGS): the same names, help and types everywhere."""
    import typer

    from mcprl.autorl.cli import app as autorl_app
    from mcprl.cli.main import app

    def server_options(command):
        return {
            tuple(p.opts + p.secondary_opts): (p.help, p.multiple)
            for p in command.params
            if p.name.startswith("server__")
        }

    group = typer.main.get_command(app)
    commands = {
        name: group.commands[name] for name in ("tools", "validate", "scenarios", "eval", "usage", "train", "autorl")
    }
    commands["autorl (its own command)"] = typer.main.get_command(autorl_app)
    expected = server_options(commands["train"])
    assert {opt for opts in expected for opt in opts} >= {
        "--server",
        "-s",
        "--header",
        "-H",
        "--env",
        "-e",
        "--transport",
        "--cwd",
        "--allow",
        "--deny",
        "--connect-timeout",
        "--call-timeout",
    }
    for name, command in commands.items():
        found = server_options(command)
        # eval's help leaves out the defaults: they are the run's own
        assert {k: v[1] for k, v in found.items()} == {k: v[1] for k, v in expected.items()}, name


@pytest.mark.parametrize(
    "example", sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.toml")), ids=lambda p: p.name
)
def test_the_shipped_run_files_load(example):
    """A run file under examples/ is one a user copies: every key in it is a setting, every value valid."""
    assert load_config(example, {}).server.target
