"""Dynamic sampling: a step whose groups have no reward variance draws more scenarios, within a
bound, deterministically per (seed, step); metrics say how many were drawn and dropped."""

import json

from mcprl.run.runner import extra_scenarios, step_batch
from mcprl.run.unsolved import learnable
from mcprl.types import Scenario, Trajectory, TrajectoryGroup
from tests.cli_runner import run_cli
from tests.fake_llm import FakeLLM


def test_extra_draws_are_bounded_disjoint_and_a_function_of_seed_and_step():
    train = [Scenario(id=str(i), task=str(i)) for i in range(10)]
    batch = step_batch(train, 3, 4, seed=1)
    extra = extra_scenarios(train, batch, 3, 4, seed=1)
    assert len(extra) == 4 and not {s.id for s in extra} & {s.id for s in batch}
    assert [s.id for s in extra] == [s.id for s in extra_scenarios(train, batch, 3, 4, seed=1)]
    assert [s.id for s in extra] != [
        s.id for s in extra_scenarios(train, step_batch(train, 4, 4, seed=1), 4, 4, seed=1)
    ]
    assert extra_scenarios(train, batch, 3, 0, seed=1) == []
    assert len(extra_scenarios(train, batch, 3, 100, seed=1)) == 6  # no more than there are


def test_learnable_means_scored_with_differing_rewards():
    def group(*rewards, skipped=None):
        return TrajectoryGroup(trajectories=[Trajectory(reward=r) for r in rewards], skipped=skipped)

    assert learnable(group(0.0, 1.0)) and not learnable(group(0.0, 0.0)) and not learnable(group(0.0, 1.0, skipped="x"))


def test_a_step_with_no_variance_draws_up_to_the_bound(tmp_path, tiny_model_dir, monkeypatch, capsys):
    """The tiny random model solves nothing; with shaping off and all-or-nothing checks no group has
    variance, so each step draws its full bound of extra scenarios and drops every group."""
    monkeypatch.setenv("MCPRL_HOME", str(tmp_path / "home"))
    base = [
        "train",
        "--server",
        "python -m mcprl.servers.calculator",
        "--no-per-rollout",
        "--tasks",
        "calculator",
        "--no-task-help",
        "--shaping",
        "0",
        "-n",
        "16",
        "--group-size",
        "2",
        "--groups-per-step",
        "2",
        "--max-tokens",
        "6",
        "--max-turns",
        "1",
        "--eval-every",
        "0",
        "--val-size",
        "2",
        "--steps",
        "1",
        "--model",
        str(tiny_model_dir),
    ]
    with FakeLLM(handler=lambda body: '{"a": 1, "b": 2}') as gen:
        gen_args = ["--judge-model", "openai/gen", "--api-base", gen.base_url]
        for name, extra in [("drawn", []), ("off", ["--max-extra-groups", "0"])]:
            # in this process: the runs need no interpreter of their own (one costs ~10 s of imports)
            code, _, err = run_cli(monkeypatch, capsys, *base, *gen_args, "--name", name, *extra)
            assert code == 0, err[-3000:]
    d = tmp_path / "home" / "default"
    rows = {
        n: [json.loads(x) for x in (d / n / "metrics.jsonl").read_text().splitlines() if '"train"' in x][0]
        for n in ("drawn", "off")
    }
    assert (rows["drawn"]["groups_drawn"], rows["drawn"]["groups_dropped"], rows["drawn"]["groups"]) == (2, 4, 4)
    assert (rows["off"]["groups_drawn"], rows["off"]["groups_dropped"], rows["off"]["groups"]) == (0, 2, 2)
    assert len((d / "drawn" / "trajectories" / "step_0001.jsonl").read_text().splitlines()) == 4
    # the run says which demonstration it used: a real scenario, no longer trained or evaluated on
    config = json.loads((d / "drawn" / "config.json").read_text())
    assert config["demonstration_source"].startswith("scenario:") and config["scenarios"]["task_help"] is False
    used = config["demonstration_source"].removeprefix("scenario:")
    held = [
        json.loads(x)["id"]
        for f in ("train", "val")
        for x in (d / "drawn" / "scenarios" / f"{f}.jsonl").read_text().splitlines()
    ]
    assert used not in held and len(held) == 16 - 2 - 1  # 16, less 2 cut by --val-size, less the demonstration
    assert config["rollout"]["demonstrations"][0][1]["tool_calls"][0]["function"]["arguments"] == '{"a": 1, "b": 2}'
    assert "scenario:" in (d / "drawn" / "report.html").read_text()
