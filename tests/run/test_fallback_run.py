"""A training run whose grounding is starved goes on with synthesized tasks (mcprl.scenarios.fallback):
each with a reference call that ran, judged by RULER in a run whose judge is `verify`, shown as the
demonstration; one GRPO step of the tiny model."""

from __future__ import annotations

import json

import anyio
import pytest

from tests.fake_llm import ruler_handler
from tests.scenarios.test_fallback import generator

pytestmark = pytest.mark.integration


def test_a_run_with_too_few_grounded_tasks_trains_on_synthesized_ones_judged_by_ruler(
    home, tiny_model_dir, monkeypatch
):
    from mcprl.run.config import load_config
    from mcprl.run.runner import TrainingRun
    from tests.fake_llm import FakeLLM

    monkeypatch.setenv("OPENAI_API_KEY", "x")
    ruler = ruler_handler(lambda body: 0.9 if "SKU-" in body else 0.1)  # a rollout that found an item ranks higher

    def llm(body: dict) -> str:
        schema = body["response_format"]["json_schema"]["schema"]
        return ruler(body) if "scores" in schema.get("properties", {}) else generator(body)

    lines: list[str] = []
    with FakeLLM(handler=llm) as fake:
        cfg = load_config(
            None,
            {
                "server.target": "python -m mcprl.servers.inventory",
                "server.allow": ["search_items"],
                "explore.calls": 3,
                "explore.generated": 0,
                "explore.phrase": False,
                "scenarios.n": 4,
                "scenarios.val_size": 1,
                "judge.model": "openai/fake",
                "judge.api_base": fake.base_url,
                "group_size": 2,
                "groups_per_step": 2,
                "max_extra_groups": 0,
                "rollout.max_tokens": 6,
                "rollout.max_turns": 2,
                "eval_every": 0,
                "steps": 1,
                "model": str(tiny_model_dir),
                "name": "starved",
            },
        )
        run = TrainingRun(cfg, say=lines.append)
        anyio.run(run.run)
    d = run.dir
    train = [json.loads(x) for x in (d / "scenarios" / "train.jsonl").read_text().splitlines()]
    assert train and all(s["check"] is None and s["reference"] for s in train)
    config = json.loads((d / "config.json").read_text())
    assert config["judge"]["mode"] == "verify" and config["demonstration_source"].startswith("grounded:")
    groups = [json.loads(x) for x in (d / "trajectories" / "step_0001.jsonl").read_text().splitlines()]
    assert groups and not any(g["skipped"] for g in groups)  # RULER scored the tasks that have no check
    assert all("ruler" in t["metrics"] for g in groups for t in g["trajectories"] if t["error"] is None)
    rows = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if r["kind"] == "train"] == [1]
