"""`--agent` in `mcprl train` and `mcprl eval`: the prebuilt LangGraph agent and a user's agent on
the plain OpenAI SDK train and evaluate from the CLI, recorded like the plain loop."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.cli_runner import run_cli

TESTS = Path(__file__).resolve().parents[1]
ARGS = [
    "--server",
    "python -m mcprl.servers.calculator",
    "--no-per-rollout",
    "--tasks",
    "calculator",
    "-n",
    "8",
    "--group-size",
    "2",
    "--groups-per-step",
    "1",
    "--max-tokens",
    "6",
    "--max-turns",
    "2",
    "--eval-every",
    "0",
    "--val-size",
    "2",
]


def mcprl(home: Path, *args: str) -> subprocess.CompletedProcess:
    # user_agents.py (tests/) is the user's module, importable as `user_agents:solve`
    env = {**os.environ, "MCPRL_HOME": str(home), "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}
    return subprocess.run(
        [sys.executable, "-m", "mcprl.cli", *args], capture_output=True, text=True, env=env, timeout=600
    )


def test_train_and_eval_with_the_langgraph_agent_and_a_users_agent(tmp_path, tiny_model_dir, monkeypatch, capsys):
    home = tmp_path / "home"
    r = mcprl(
        home, "train", *ARGS, "--model", str(tiny_model_dir), "--steps", "1", "--name", "lg", "--agent", "langgraph"
    )
    assert r.returncode == 0, r.stderr[-3000:]
    d = home / "default" / "lg"
    assert json.loads((d / "config.json").read_text())["rollout"]["agent"] == "langgraph"
    groups = [json.loads(line) for line in (d / "trajectories" / "step_0001.jsonl").read_text().splitlines()]
    trajs = [t for g in groups for t in g["trajectories"]]
    assert trajs and all(t["generations"] and t["generations"][0]["prompt_token_ids"] for t in trajs)
    rows = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]
    assert [(x["kind"], x["step"]) for x in rows] == [("eval", 0), ("train", 1), ("eval", 1)]

    # the trained model, evaluated by a user's agent (one that raises after its first call) instead
    # of the one it was trained with: its rollouts fail, and are counted, instead of the run. In this process (pytest
    # puts tests/ on its path), as the refusals below: an interpreter of its own costs ~10 s of imports
    monkeypatch.setenv("MCPRL_HOME", str(home))
    for agent, failed in (("user_agents:solve", 0), ("user_agents:crash", 2)):
        code, out, err = run_cli(
            monkeypatch,
            capsys,
            "eval",
            "--server",
            "python -m mcprl.servers.calculator",
            "--no-per-rollout",  # as the run was trained: one server, not one per rollout (~2 s of CPU each)
            "--model",
            "lg",
            "--scenarios",
            str(d / "scenarios" / "val.jsonl"),
            "--agent",
            agent,
            "--json",
        )
        assert code == 0, err[-3000:]
        result = json.loads(out)
        assert result["model"] == "lg@1" and result["scenarios"] == 2 and result["failed_rollouts"] == failed, agent


def test_a_bad_agent_stops_the_run_before_any_work(tmp_path, tiny_model_dir, monkeypatch, capsys):
    home = tmp_path / "home"
    monkeypatch.setenv("MCPRL_HOME", str(home))
    code, _, err = run_cli(
        monkeypatch,
        capsys,
        "train",
        *ARGS,
        "--model",
        str(tiny_model_dir),
        "--steps",
        "1",
        "--name",
        "bad",
        "--agent",
        "no_such_module:go",
    )
    assert code != 0
    assert "no module named no_such_module" in err and "Traceback" not in err
    assert not (home / "default" / "bad" / "checkpoints").exists()
    code, _, err = run_cli(
        monkeypatch, capsys, "train", *ARGS, "--steps", "1", "--agent", "langgraph", "--finish", "tool"
    )
    assert code != 0 and "ends on a text reply" in err and "Traceback" not in err
