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
from mcprl.rollout.config import RolloutConfig
from mcprl.run.config import load_config
from mcprl.run.runner import step_batch
from mcprl.types import Scenario

# --no-per-rollout: the calculator keeps no state, so one server serves every rollout (a process
# per rollout costs ~2 s of CPU each to start: most of a tiny-model run)
ARGS = [
    "--server",
    "python -m mcprl.servers.calculator",
    "--no-per-rollout",
    "--tasks",
    "calculator",
    "-n",
    "12",
    "--group-size",
    "2",
    "--groups-per-step",
    "2",
    "--max-tokens",
    "6",
    "--max-turns",
    "2",
    "--eval-every",
    "2",
    "--val-size",
    "2",
]


def mcprl(home: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "MCPRL_HOME": str(home), "SECRET_API_TOKEN": "tok-very-secret-123"}
    return subprocess.run(
        [sys.executable, "-m", "mcprl.cli", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def test_step_batches_are_deterministic_and_cover_epochs():
    train = [Scenario(id=str(i), task=str(i)) for i in range(5)]
    seen = [s.id for step in range(5) for s in step_batch(train, step, 2, seed=1)]
    assert sorted(seen[:5]) == ["0", "1", "2", "3", "4"]  # first epoch is a permutation
    assert [s.id for s in step_batch(train, 3, 2, seed=1)] == [s.id for s in step_batch(train, 3, 2, seed=1)]


def test_config_file_flags_override_and_unknown_keys(tmp_path):
    f = tmp_path / "run.toml"
    f.write_text('steps = 3\n[train]\nlearning_rate = 1e-4\n[server]\ntarget = "python -m mcprl.servers.calculator"\n')
    cfg = load_config(f, {"steps": 7, "name": None})
    assert cfg.steps == 7 and cfg.train.learning_rate == 1e-4 and cfg.name == "agent"
    f.write_text("stepz = 3\n")
    with pytest.raises(UserError, match="unknown key.*stepz"):
        load_config(f, {})
    with pytest.raises(UserError, match="group_size"):
        load_config(None, {"group_size": 1})


def test_train_writes_the_run_directory(tmp_path, tiny_model_dir, monkeypatch, capsys):
    from tests.cli_runner import run_cli

    home = tmp_path / "home"
    r = mcprl(home, "train", *ARGS, "--model", str(tiny_model_dir), "--steps", "2", "--name", "t")
    assert r.returncode == 0, r.stderr[-3000:]
    d = home / "default" / "t"
    assert "report:" in r.stdout + r.stderr and (d / "report.html").exists()
    for f in [
        "config.json",
        "tools.json",
        "scenarios/train.jsonl",
        "scenarios/val.jsonl",
        "trajectories/step_0001.jsonl",
        "trajectories/step_0002.jsonl",
        "eval/step_0000.jsonl",
        "eval/step_0002.jsonl",
        "report/reward.png",
        "report/val.png",
    ]:
        assert (d / f).exists(), f
    rows = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["step"]) for r in rows] == [("eval", 0), ("train", 1), ("train", 2), ("eval", 2)]
    assert json.loads((d / "tools.json").read_text())["hash"]
    # a second run without --resume refuses to clobber it. This and the evaluations below run in this process:
    # they need no interpreter of their own, which costs ~10 s of imports
    monkeypatch.setenv("MCPRL_HOME", str(home))
    code, _, err = run_cli(
        monkeypatch, capsys, "train", *ARGS, "--model", str(tiny_model_dir), "--steps", "2", "--name", "t"
    )
    assert code == 2 and "--resume" in err and "Traceback" not in err

    # `mcprl eval` on a trained step, with a RULER win rate against the base model
    from tests.fake_llm import FakeLLM, ruler_handler

    val = d / "scenarios" / "val.jsonl"
    with FakeLLM(handler=ruler_handler(lambda body: float(len(body) % 7) / 7)) as judge:
        code, out, err = run_cli(
            monkeypatch,
            capsys,
            "eval",
            "--server",
            "python -m mcprl.servers.calculator",
            "--model",
            "t@2",
            "--scenarios",
            str(val),
            "--baseline",
            str(tiny_model_dir),
            "--judge-model",
            "openai/judge",
            "--api-base",
            judge.base_url,
            "--max-tokens",
            "6",
            "--json",
        )
    assert code == 0, err[-3000:]
    result = json.loads(out)
    assert result["model"] == "t@2" and result["scenarios"] == 2 and result["baseline"] == str(tiny_model_dir)
    assert 0 <= result["success_rate"] <= 1 and len(result["success_ci"]) == 2
    # each scenario's own outcome, adding up to the whole
    per = result["per_scenario"]
    assert [s["id"] for s in per] == [json.loads(line)["id"] for line in val.read_text().splitlines()]
    assert sum(s["successes"] for s in per) == result["success_rate"] * sum(s["verified"] for s in per)
    assert 0 <= result["win_rate"] <= 1 and result["win_rate_judged"] + result["win_rate_skipped"] == 2
    # the per-tool report (mcprl.usage), against the calculator's own tools; per-tool figures in each step's line
    assert result["usage"]["episodes"] == 2 and {t["name"] for t in result["usage"]["tools"]} >= {"add", "multiply"}
    assert any(k.startswith("tool/needed/") for k in rows[1]) and any(k.startswith("tool/needed/") for k in rows[-1])
    code, _, err = run_cli(monkeypatch, capsys, "eval", "--model", "t@9", "--scenarios", str(val))
    assert code == 2 and "no checkpoint '9'" in err


@pytest.mark.anyio
async def test_a_run_dying_between_the_checkpoint_and_its_line_resumes_with_the_line(
    tmp_path, tiny_model_dir, monkeypatch
):
    from mcprl.run.metrics import MetricsLog
    from mcprl.run.runner import TrainingRun

    monkeypatch.setenv("MCPRL_HOME", str(tmp_path / "home"))
    given = {
        "server.target": "python -m mcprl.servers.calculator",
        "server.per_rollout": False,
        "scenarios.tasks": "calculator",
        "scenarios.n": 8,
        "group_size": 2,
        "groups_per_step": 2,
        "rollout.max_tokens": 6,
        "rollout.max_turns": 2,
        "eval_every": 0,
        "scenarios.val_size": 2,
        "model": str(tiny_model_dir),
        "steps": 2,
        "name": "d",
    }
    real_append = MetricsLog.append

    def dies_at_the_first_train_line(self, row):
        if row["kind"] == "train":
            raise SystemExit("killed")  # step 1's checkpoint is committed; its line is not written
        real_append(self, row)

    monkeypatch.setattr(MetricsLog, "append", dies_at_the_first_train_line)
    with pytest.raises(SystemExit):
        await TrainingRun(load_config(None, given), say=lambda _: None).run()
    monkeypatch.setattr(MetricsLog, "append", real_append)
    summary = await TrainingRun(load_config(None, given), resume=True, say=lambda _: None).run()
    rows = MetricsLog(tmp_path / "home" / "default" / "d" / "metrics.jsonl").read()
    # (a resumed run first scores the step it resumes from)
    assert [(r["kind"], r["step"]) for r in rows] == [
        ("eval", 0),
        ("train", 1),
        ("eval", 1),
        ("train", 2),
        ("eval", 2),
    ], summary
    assert "train/groups" in rows[1] and "reward_mean" in rows[1]  # the trainer's figures and the rollouts'
    assert not (tmp_path / "home" / "default" / "d" / "step.pending.json").exists()


def test_sigkill_at_random_points_then_resume_loses_and_repeats_nothing(tmp_path, tiny_model_dir):
    home = tmp_path / "home"
    env = {**os.environ, "MCPRL_HOME": str(home)}
    cmd = [
        sys.executable,
        "-m",
        "mcprl.cli",
        "train",
        *ARGS,
        "--model",
        str(tiny_model_dir),
        "--steps",
        "5",
        "--name",
        "k",
    ]
    d = home / "default" / "k"
    metrics = d / "metrics.jsonl"

    def lines() -> int:
        return len(metrics.read_text().splitlines()) if metrics.exists() else 0

    rng = random.Random(7)
    kills = 0
    for attempt in range(4):  # three runs killed at random points, then one left to finish
        log = tmp_path / f"err-{attempt}.txt"
        with log.open("w") as err:  # a file, not a pipe nobody reads: a full pipe would stall the run
            args = cmd + (["--resume"] if attempt else [])
            p = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=err)
            if attempt < 3:
                # a random point once the run has made progress (a new metrics line), however fast the machine
                seen, deadline = lines(), time.monotonic() + 600
                while p.poll() is None and lines() <= seen and time.monotonic() < deadline:
                    time.sleep(0.05)
                time.sleep(rng.uniform(0, 1.5))
                if p.poll() is None:
                    p.send_signal(signal.SIGKILL)
                    p.wait()
                    kills += 1
                    continue
            p.wait(timeout=900)
        assert p.returncode == 0, log.read_text()[-3000:]
    rows = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if r["kind"] == "train"] == [1, 2, 3, 4, 5]
    assert sorted(p.name for p in (d / "checkpoints").iterdir()) == ["0000", "0001", "0002", "0003", "0004", "0005"]
    assert not list((d / "checkpoints").glob(".tmp-*"))
    assert kills >= 1, "the kill schedule never interrupted the run; lower the timeouts"


def test_secrets_never_land_in_the_run_directory(tmp_path, tiny_model_dir, monkeypatch, capsys):
    from mcprl.tools.redact import redact_model
    from mcprl.types import Trajectory, TrajectoryGroup
    from tests.cli_runner import run_cli

    home = tmp_path / "home"
    secret = "tok-abcdef123456"
    # in this process, with the environment `mcprl` gives its runs (no interpreter of its own: ~10 s of imports)
    monkeypatch.setenv("MCPRL_HOME", str(home))
    monkeypatch.setenv("SECRET_API_TOKEN", "tok-very-secret-123")
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
        "s",
        "--env",
        f"MY_API_TOKEN={secret}",
        "--eval-every",
        "0",
    )
    assert code == 0, err[-3000:]
    d = home / "default" / "s"
    assert json.loads((d / "config.json").read_text())["server"]["env"]["MY_API_TOKEN"] == "***"
    for f in d.rglob("*"):
        if f.is_file() and f.suffix in {".json", ".jsonl", ".html", ".txt"}:
            text = f.read_text(errors="ignore")
            assert secret not in text and "tok-very-secret-123" not in text, f
    # what a tool echoes back (e.g. the server's environment) is redacted before it is written
    g = TrajectoryGroup(trajectories=[Trajectory(messages=[{"role": "tool", "content": f"MY_API_TOKEN={secret}"}])])
    assert secret not in redact_model(g, [secret]).model_dump_json()


def test_ctrl_c_finishes_the_step_saves_and_resume_continues(tmp_path, tiny_model_dir, monkeypatch, capsys):
    from tests.cli_runner import run_cli

    home = tmp_path / "home"
    env = {**os.environ, "MCPRL_HOME": str(home)}
    log = tmp_path / "err.txt"
    cmd = [
        sys.executable,
        "-m",
        "mcprl.cli",
        "train",
        *ARGS,
        "--model",
        str(tiny_model_dir),
        "--steps",
        "4",
        "--name",
        "c",
        "--eval-every",
        "0",
    ]
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
    done = [
        json.loads(x)["step"]
        for x in (d / "metrics.jsonl").read_text().splitlines()
        if json.loads(x)["kind"] == "train"
    ]
    # the step under way when Ctrl-C came was finished, no more: which step that was depends on the
    # machine's speed (the signal goes out once step 0's eval is reported), so only the prefix is pinned
    assert done == list(range(1, len(done) + 1)) and 1 <= len(done) < 4, done
    # the resume in this process: it needs no interpreter of its own (~10 s of imports)
    monkeypatch.setenv("MCPRL_HOME", str(home))
    code, _, err = run_cli(
        monkeypatch,
        capsys,
        "train",
        *ARGS,
        "--model",
        str(tiny_model_dir),
        "--steps",
        "4",
        "--name",
        "c",
        "--eval-every",
        "0",
        "--resume",
    )
    assert code == 0, err[-2000:]
    done = [
        json.loads(x)["step"]
        for x in (d / "metrics.jsonl").read_text().splitlines()
        if json.loads(x)["kind"] == "train"
    ]
    assert done == [1, 2, 3, 4]


def test_eval_prompts_a_trained_model_as_it_was_trained(tmp_path):
    """`mcprl eval` samples with the run's own prompt and temperature, from its config.json; a base
    model on a shipped server's tasks gets that server's worked example."""
    from mcprl import tasks
    from mcprl.run.evaluate import run_settings
    from mcprl.servers.calculator.tasks import generate

    scen = generate(2)
    run = tmp_path / "proj" / "t"
    run.mkdir(parents=True)
    saved = {
        "scenarios": {"tasks": "calculator"},
        "server": {"headers": {"X": "v"}},
        "rollout": {
            "temperature": 0.7,
            "max_turns": 2,
            "max_tokens": 48,
            "system_prompt": "Be exact.",
            "demonstrations": None,
        },
    }
    (run / "config.json").write_text(json.dumps(saved))
    rc = run_settings(run, scen).rollout
    assert (rc.temperature, rc.max_turns, rc.max_tokens, rc.system_prompt) == (0.7, 2, 48, "Be exact.")
    assert rc.demonstrations == [tasks.get("calculator").demonstration]
    base = run_settings(None, scen).rollout
    assert base.temperature == RolloutConfig().temperature
    assert base.demonstrations == [tasks.get("calculator").demonstration]
    assert run_settings(None, [s.model_copy(update={"check": None}) for s in scen]).rollout.demonstrations is None


def test_eval_connects_and_scores_as_the_run_did(tmp_path):
    """A run's server (with its masked secrets given again, header tables merged), judge and
    samples are what `mcprl eval` uses; flags change them."""
    from mcprl.run.config import RunConfig
    from mcprl.run.evaluate import run_settings

    run = tmp_path / "r"
    run.mkdir()
    cfg = RunConfig(
        server={
            "target": "http://127.0.0.1:9/mcp",
            "headers": {"Authorization": "Bearer tok-123456", "X-Team": "a"},
            "allow": ["add"],
            "deny": ["power"],
        },
        scenarios={"task_help": False},
        judge={"model": "openai/j", "api_base": "http://judge"},
        eval_samples=3,
    )
    (run / "config.json").write_text(json.dumps(cfg.redacted(["tok-123456"])))
    with pytest.raises(
        UserError,
        match=r"does not hold the value of Authorization, X-Team \(secrets are masked\); "
        r"give it again: --header 'Authorization: ...'",
    ):
        run_settings(run, [])
    given = run_settings(
        run, [], {"server.headers": ["Authorization: Bearer tok-123456", "X-Team: a"], "server.deny": ["sub*"]}
    )
    assert given.server == cfg.server.model_copy(update={"deny": ["sub*"]})
    assert (given.judge, given.scenarios.task_help, given.eval_samples) == (cfg.judge, False, 3)
    assert given.judge.held_out(True, all_or_nothing=not given.scenarios.task_help).all_or_nothing


def test_eval_of_a_run_gives_the_score_the_run_gave(tmp_path, tiny_model_dir, monkeypatch, capsys):
    """One checkpoint, one score: `mcprl eval --run DIR` (and `--model NAME@STEP`) score as the run's own
    evaluation did. Its checks give half marks, which a run without task help does not credit."""
    from tests.cli_runner import run_cli

    monkeypatch.setenv("MCPRL_HOME", str(tmp_path / "home"))
    scen = tmp_path / "s.jsonl"
    scen.write_text(
        "".join(
            json.dumps(
                {
                    "id": str(i),
                    "task": f"What is {i} + {i}?",
                    "check": {"kind": "python", "function": "user_agents:half_credit"},
                }
            )
            + "\n"
            for i in range(6)
        )
    )
    secret = "MCPRL_TEST_TOKEN=tok-abcdef-123"
    code, _, err = run_cli(
        monkeypatch,
        capsys,
        "train",
        "--server",
        "python -m mcprl.servers.calculator",
        "--env",
        secret,
        "--allow",
        "add",
        "--scenarios",
        str(scen),
        "--val-size",
        "2",
        "--no-task-help",
        "--no-demonstration",
        "--steps",
        "0",
        "--max-tokens",
        "6",
        "--max-turns",
        "1",
        "--model",
        str(tiny_model_dir),
        "--name",
        "r",
    )
    assert code == 0, err[-3000:]
    d = tmp_path / "home" / "default" / "r"
    (row,) = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]
    assert row["reward_mean"] == 0.0  # half marks are no marks without task help
    code, _, err = run_cli(monkeypatch, capsys, "eval", "--run", str(d), "--json")
    assert code == 2 and "give it again: --env 'MCPRL_TEST_TOKEN=...'" in err
    for args in (["--run", str(d)], ["--model", "r@0", "--scenarios", str(d / "scenarios" / "val.jsonl")]):
        code, out, err = run_cli(monkeypatch, capsys, "eval", *args, "--env", secret, "--json")
        assert code == 0, err[-3000:]
        result = json.loads(out)
        assert (result["model"], result["scenarios"], result["reward_mean"]) == ("r@0", 2, row["reward_mean"]), args
    code, out, err = run_cli(monkeypatch, capsys, "eval", "--run", str(d), "--env", secret, "--json", "--task-help")
    assert code == 2 and "No such option: --task-help" in err  # the run's scoring is not a flag of eval


def test_lora_and_runtime_settings_reach_the_cpu_runtime(tmp_path, tiny_model_dir, monkeypatch, capsys):
    """[lora] shapes the adapter the run trains and [runtime] threads are the torch threads it runs on;
    config.json records both, and a resumed run refuses other [lora] settings."""
    import threading

    import torch

    from tests.cli_runner import run_cli

    monkeypatch.setenv("MCPRL_HOME", str(tmp_path / "home"))
    threads = torch.get_num_threads()
    args = [
        "--server",
        "python -m mcprl.servers.calculator",
        "--tasks",
        "calculator",
        "-n",
        "4",
        "--val-size",
        "1",
        "--steps",
        "0",
        "--max-tokens",
        "4",
        "--max-turns",
        "1",
        "--model",
        str(tiny_model_dir),
        "--name",
        "l",
        "--eval-every",
        "0",
    ]
    try:
        code, _, err = run_cli(
            monkeypatch,
            capsys,
            "train",
            *args,
            "--lora-rank",
            "4",
            "--lora-alpha",
            "12",
            "--lora-dropout",
            "0.1",
            "--lora-target-modules",
            "q_proj",
            "--lora-target-modules",
            "v_proj",
            "--threads",
            str(threads + 1),
        )
        assert code == 0, err[-3000:]
        # torch's thread count is per thread once a thread has used it: a new one (as the engine's
        # and the trainer's are) starts with the count last set
        seen = []
        worker = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
        worker.start()
        worker.join()
        assert seen == [threads + 1]
    finally:
        torch.set_num_threads(threads)
    d = tmp_path / "home" / "default" / "l"
    adapter = json.loads((d / "checkpoints" / "0000" / "adapter_config.json").read_text())
    assert (adapter["r"], adapter["lora_alpha"], adapter["lora_dropout"], sorted(adapter["target_modules"])) == (
        4,
        12,
        0.1,
        ["q_proj", "v_proj"],
    )
    saved = json.loads((d / "config.json").read_text())
    assert saved["lora"] == {"rank": 4, "alpha": 12, "dropout": 0.1, "target_modules": ["q_proj", "v_proj"]}
    assert saved["runtime"]["threads"] == threads + 1 and saved["runtime"]["device"] == "auto"
    code, _, err = run_cli(monkeypatch, capsys, "train", *args, "--resume", "--lora-rank", "8")
    assert code == 2 and "checkpoints were trained with lora.rank=4, not 8" in err
    code, _, err = run_cli(monkeypatch, capsys, "train", *args, "--device", "cpu", "--load-in-4bit")
    assert code == 2 and "runtime.load_in_4bit is a setting of the GPU runtime" in err
