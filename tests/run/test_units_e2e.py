"""`mcprl train --server X` with nothing else, end to end, offline, on a shipped server that has no
task generator and no demonstration (`mcprl.servers.units`): the server explored, tasks grounded in its answers
and checked by value, the demonstration a reference call, tool-use shaping, one GRPO step."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_train_on_a_server_without_tasks_or_demonstration(tmp_path, smollm2_dir):
    env = {**os.environ, "MCPRL_HOME": str(tmp_path / "home")}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcprl.cli",
            "train",
            "--server",
            "python -m mcprl.servers.units",
            # the units server keeps no state, so one process serves exploring, grounding and every rollout
            # (a process per rollout costs ~2 s of CPU each to start: a third of the run)
            "--no-per-rollout",
            "--model",
            str(smollm2_dir),
            "-n",
            "8",
            "--explore-calls",
            "24",
            "--steps",
            "1",
            "--group-size",
            "2",
            "--groups-per-step",
            "2",
            # one turn: the call is made and run, and shaping scores it; the answer turn after it is not what is
            # checked here (it was a second prefill of the whole prompt and a decode per rollout: ~30 s)
            "--max-turns",
            "1",
            "--max-tokens",
            "64",
            "--eval-every",
            "0",
            "--val-size",
            "1",
            "--name",
            "units",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    d = tmp_path / "home" / "default" / "units"
    tools = json.loads((d / "tools.json").read_text())["tools"]
    assert {t["function"]["name"] for t in tools} == {"convert", "convert_temperature", "compare", "list_units"}
    config = json.loads((d / "config.json").read_text())
    assert config["demonstration_source"].startswith("grounded:") and config["judge"]["mode"] == "verify"
    # the demonstration is a grounded task's reference call, which ran against the server without error
    call = config["rollout"]["demonstrations"][0][1]["tool_calls"][0]["function"]
    assert call["name"] in {t["function"]["name"] for t in tools} and isinstance(json.loads(call["arguments"]), dict)
    scenarios = [json.loads(x) for x in (d / "scenarios" / "train.jsonl").read_text().splitlines()]
    assert scenarios and all(s["check"]["kind"] == "holds" and s["reference"] for s in scenarios)
    assert (d / "scenarios" / "exploration.jsonl").exists() and "Grounded tasks" in (d / "report.html").read_text()
    rows = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]
    train = [x for x in rows if x["kind"] == "train"]
    assert len(train) == 1 and "groups_drawn" in train[0] and "groups_dropped" in train[0]
    trajs = [json.loads(x) for x in (d / "trajectories" / "step_0001.jsonl").read_text().splitlines()]
    shaped = [
        t["metrics"]["shaping"] for g in trajs if not g["skipped"] for t in g["trajectories"] if t["error"] is None
    ]
    assert shaped and all(0 <= s <= 1 for s in shaped)
