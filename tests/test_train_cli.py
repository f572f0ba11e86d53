"""`mcprl train` end to end on the tiny model against a shipped server: files written, config
handling, and resume after SIGKILL with no lost or repeated steps."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcprl.errors import UserError
from mcprl.run_config import load_config
from mcprl.runner import step_batch
from mcprl.types import Scenario

ARGS = ["--server", "python -m servers.calculator", "--tasks", "calculator", "-n", "12", "--group-size", "2",
        "--groups-per-step", "2", "--max-tokens", "6", "--max-turns", "2", "--eval-every", "2", "--val-size", "2"]


def mcprl(home: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "MCPRL_HOME": str(home), "SECRET_API_TOKEN": "tok-very-secret-123"}
    return subprocess.run([sys.executable, "-m", "mcprl.cli", *args], capture_output=True, text=True, env=env, timeout=timeout)


def test_step_batches_are_deterministic_and_cover_epochs():
    train = [Scenario(id=str(i), task=str(i)) for i in range(5)]
    seen = [s.id for step in range(5) for s in step_batch(train, step, 2, seed=1)]
    assert sorted(seen[:5]) == ["0", "1", "2", "3", "4"]  # first epoch is a permutation
    assert [s.id for s in step_batch(train, 3, 2, seed=1)] == [s.id for s in step_batch(train, 3, 2, seed=1)]


def test_config_file_flags_override_and_unknown_keys(tmp_path):
    f = tmp_path / "run.toml"
    f.write_text('steps = 3\n[train]\nlearning_rate = 1e-4\n[server]\ntarget = "python -m servers.calculator"\n')
    cfg = load_config(f, {"steps": 7, "name": None})
    assert cfg.steps == 7 and cfg.train.learning_rate == 1e-4 and cfg.name == "agent"
    f.write_text("stepz = 3\n")
    with pytest.raises(UserError, match="unknown key.*stepz"):
        load_config(f, {})
    with pytest.raises(UserError, match="group_size"):
        load_config(None, {"group_size": 1})


def test_train_writes_the_run_directory(tmp_path, tiny_model_dir):
    home = tmp_path / "home"
    r = mcprl(home, "train", *ARGS, "--model", str(tiny_model_dir), "--steps", "2", "--name", "t")
    assert r.returncode == 0, r.stderr[-3000:]
    d = home / "default" / "t"
    assert "report:" in r.stdout + r.stderr and (d / "report.html").exists()
    for f in ["config.json", "tools.json", "scenarios/train.jsonl", "scenarios/val.jsonl", "trajectories/step_0001.jsonl",
              "trajectories/step_0002.jsonl", "eval/step_0000.jsonl", "eval/step_0002.jsonl", "report/reward.png", "report/val.png"]:
        assert (d / f).exists(), f
    rows = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["step"]) for r in rows] == [("eval", 0), ("train", 1), ("train", 2), ("eval", 2)]
    assert json.loads((d / "tools.json").read_text())["hash"]
    # a second run without --resume refuses to clobber it
    again = mcprl(home, "train", *ARGS, "--model", str(tiny_model_dir), "--steps", "2", "--name", "t")
    assert again.returncode == 2 and "--resume" in again.stderr and "Traceback" not in again.stderr

    # `mcprl eval` on a trained step, with a RULER win rate against the base model
    from fake_llm import FakeLLM, ruler_handler

    val = d / "scenarios" / "val.jsonl"
    with FakeLLM(handler=ruler_handler(lambda body: float(len(body) % 7) / 7)) as judge:
        r = mcprl(home, "eval", "--server", "python -m servers.calculator", "--model", "t@2", "--scenarios", str(val),
                  "--baseline", str(tiny_model_dir), "--judge-model", "openai/judge", "--api-base", judge.base_url,
                  "--max-tokens", "6", "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(r.stdout)
    assert result["model"] == "t@2" and result["scenarios"] == 2 and result["baseline"] == str(tiny_model_dir)
    assert 0 <= result["success_rate"] <= 1 and len(result["success_ci"]) == 2
    assert 0 <= result["win_rate"] <= 1 and result["win_rate_judged"] + result["win_rate_skipped"] == 2
    bad = mcprl(home, "eval", "--model", "t@9", "--scenarios", str(val))
    assert bad.returncode == 2 and "no checkpoint '9'" in bad.stderr


def test_sigkill_at_random_points_then_resume_loses_and_repeats_nothing(tmp_path, tiny_model_dir):
    home = tmp_path / "home"
    env = {**os.environ, "MCPRL_HOME": str(home)}
    cmd = [sys.executable, "-m", "mcprl.cli", "train", *ARGS, "--model", str(tiny_model_dir), "--steps", "5", "--name", "k"]
    rng = random.Random(7)
    kills = 0
    for attempt in range(4):  # three runs killed at random points, then one left to finish
        p = subprocess.Popen(cmd + (["--resume"] if attempt else []), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            p.wait(timeout=rng.uniform(6, 20) if attempt < 3 else 900)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGKILL)
            p.wait()
            kills += 1
            continue
        assert p.returncode == 0, p.stderr.read()[-3000:]
    d = home / "default" / "k"
    rows = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if r["kind"] == "train"] == [1, 2, 3, 4, 5]
    assert sorted(p.name for p in (d / "checkpoints").iterdir()) == ["0000", "0001", "0002", "0003", "0004", "0005"]
    assert not list((d / "checkpoints").glob(".tmp-*"))
    assert kills >= 1, "the kill schedule never interrupted the run; lower the timeouts"


def test_secrets_never_land_in_the_run_directory(tmp_path, tiny_model_dir):
    from mcprl.tools.redact import redact_model
    from mcprl.types import Trajectory, TrajectoryGroup

    home = tmp_path / "home"
    secret = "tok-abcdef123456"
    r = mcprl(home, "train", *ARGS, "--model", str(tiny_model_dir), "--steps", "1", "--name", "s",
              "--env", f"MY_API_TOKEN={secret}", "--eval-every", "0")
    assert r.returncode == 0, r.stderr[-3000:]
    d = home / "default" / "s"
    assert json.loads((d / "config.json").read_text())["server"]["env"]["MY_API_TOKEN"] == "***"
    for f in d.rglob("*"):
        if f.is_file() and f.suffix in {".json", ".jsonl", ".html", ".txt"}:
            text = f.read_text(errors="ignore")
            assert secret not in text and "tok-very-secret-123" not in text, f
    # what a tool echoes back (e.g. the server's environment) is redacted before it is written
    g = TrajectoryGroup(trajectories=[Trajectory(messages=[{"role": "tool", "content": f"MY_API_TOKEN={secret}"}])])
    assert secret not in redact_model(g, [secret]).model_dump_json()


def test_ctrl_c_finishes_the_step_saves_and_resume_continues(tmp_path, tiny_model_dir):
    home = tmp_path / "home"
    env = {**os.environ, "MCPRL_HOME": str(home)}
    log = tmp_path / "err.txt"
    cmd = [sys.executable, "-m", "mcprl.cli", "train", *ARGS, "--model", str(tiny_model_dir), "--steps", "4", "--name", "c", "--eval-every", "0"]
    with log.open("w") as err:
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.time() + 300
        while "eval at step 0" not in log.read_text() and time.time() < deadline and p.poll() is None:
            time.sleep(0.2)
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=300) == 130
    text = log.read_text()
    assert "finishing this step" in text and "Traceback" not in text
    d = home / "default" / "c"
    done = [json.loads(x)["step"] for x in (d / "metrics.jsonl").read_text().splitlines() if json.loads(x)["kind"] == "train"]
    assert done == [1]  # the step under way when Ctrl-C came was finished, no more
    r = mcprl(home, "train", *ARGS, "--model", str(tiny_model_dir), "--steps", "4", "--name", "c", "--eval-every", "0", "--resume")
    assert r.returncode == 0, r.stderr[-2000:]
    done = [json.loads(x)["step"] for x in (d / "metrics.jsonl").read_text().splitlines() if json.loads(x)["kind"] == "train"]
    assert done == [1, 2, 3, 4]


@pytest.mark.parametrize("form", ["flat", "nested"])
def test_eval_prompts_a_trained_model_as_it_was_trained(tmp_path, form):
    """`mcprl eval` samples with the run's own prompt and temperature, from a config.json of this
    version or (flat) an earlier one; a base model on a shipped server's tasks gets that server's
    worked example."""
    from mcprl import tasks
    from mcprl.evaluate import rollout_settings
    from servers.calculator.tasks import generate

    scen = generate(2)
    run = tmp_path / "proj" / "t"
    (run / "checkpoints" / "0003").mkdir(parents=True)
    saved = {"tasks": "calculator", "temperature": 0.7, "max_turns": 2, "max_tokens": 48, "system_prompt": "Be exact.",
             "headers": {"X": "***"}, "example_messages": None, "scenarios": None, "a_key_of_an_older_version": 1}
    if form == "nested":
        saved = {"scenarios": {"tasks": "calculator"}, "server": {"headers": {"X": "***"}},
                 "rollout": {"temperature": 0.7, "max_turns": 2, "max_tokens": 48, "system_prompt": "Be exact.", "example": None}}
    (run / "config.json").write_text(json.dumps(saved))
    rc = rollout_settings(run / "checkpoints" / "0003", scen)
    assert (rc.temperature, rc.max_turns, rc.max_tokens, rc.system_prompt) == (0.7, 2, 48, "Be exact.")
    assert rc.example == tasks.get("calculator").example
    base = rollout_settings(None, scen)
    assert base.temperature == 1.0 and base.example == tasks.get("calculator").example
    assert rollout_settings(None, [s.model_copy(update={"check": None}) for s in scen]).example is None
