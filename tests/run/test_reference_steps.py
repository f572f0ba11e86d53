"""Reference steps (`RunConfig.reference_epochs`): a run's first steps train on its grounded tasks'
reference chains, written after the prompt its rollouts get, and roll nothing out; then GRPO steps
roll out as before. The tiny model on the shipped calculator, over stdio."""

from __future__ import annotations

import json
import math

import anyio
import pytest

from mcprl.types import Scenario, dump_jsonl

pytestmark = pytest.mark.integration


def adding(a: int, b: int) -> Scenario:
    return Scenario(
        task=f"What is {a} plus {b}?",
        answer=a + b,
        check={"kind": "holds"},
        reference=[{"tool": "add", "arguments": {"a": a, "b": b}, "result": str(a + b)}],
    )


def test_reference_steps_train_on_every_tasks_chain_before_any_rollout(home, tiny_model_dir, tmp_path):
    from mcprl.run.config import load_config
    from mcprl.run.report import write_report
    from mcprl.run.runner import TrainingRun

    tasks = [adding(a, a + 1) for a in range(2, 9)]  # 7: 6 to train on, 1 held out
    dump_jsonl(tasks, tmp_path / "tasks.jsonl")
    cfg = load_config(
        None,
        {
            "server.target": "python -m mcprl.servers.calculator",
            "scenarios.file": str(tmp_path / "tasks.jsonl"),
            "scenarios.val_size": 1,
            "reference_epochs": 1.5,
            "group_size": 2,
            "groups_per_step": 2,
            "max_extra_groups": 0,
            "rollout.max_tokens": 8,
            "rollout.max_turns": 2,
            "eval_every": 0,
            "steps": 4,
            "model": str(tiny_model_dir),
            "name": "referenced",
        },
    )
    lines: list[str] = []
    run = TrainingRun(cfg, say=lines.append)
    anyio.run(run.run)
    d = run.dir
    train = [json.loads(x)["id"] for x in (d / "scenarios" / "train.jsonl").read_text().splitlines()]
    per = cfg.groups_per_step * cfg.group_size
    steps = math.ceil(1.5 * len(train) / per)
    assert run.reference_steps == steps >= 2 and any(line.startswith(f"reference steps: {steps},") for line in lines)
    rows = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines() if '"train"' in x]
    assert [r["reference_step"] for r in rows] == [True] * steps + [False] * (cfg.steps - steps)
    seen = []
    for step in range(1, steps + 1):
        groups = [json.loads(x) for x in (d / "trajectories" / f"step_{step:04d}.jsonl").read_text().splitlines()]
        trajectories = [t for g in groups for t in g["trajectories"]]
        # nothing sampled: every trajectory is a chain the run wrote, scored solved, and trained on
        assert trajectories and all(t["written_from"] is not None and t["reward"] == 1.0 for t in trajectories)
        assert rows[step - 1]["trajectories"] == 0 and rows[step - 1]["train/trajectories_trained"] == len(groups)
        assert all(t["messages"][-1]["content"].startswith("The answer is") for t in trajectories)
        seen += [t["scenario_id"] for t in trajectories]
    # a pass covers every training task once before any is drawn again
    assert sorted(seen[: len(train)]) == sorted(train) and len(seen) == steps * per
    last = [json.loads(x) for x in (d / "trajectories" / f"step_{steps + 1:04d}.jsonl").read_text().splitlines()]
    assert any(t["written_from"] is None for g in last for t in g["trajectories"])  # the GRPO step rolled out
    assert write_report(d).exists()
