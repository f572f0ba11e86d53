"""`mcprl eval`: how well a trained step (or a base model) uses a server's tools on a set of
scenarios: success with a 95% interval, mean reward, tool-call validity and error rates, turns;
with a baseline, RULER's win rate of the model against it."""

from __future__ import annotations

import json
import secrets
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from mcprl.errors import UserError
from mcprl.metrics import rollout_metrics, wilson_interval
from mcprl.types import Scenario


def resolve_checkpoint(spec: str, project: str) -> tuple[str, Path | None, str]:
    """`NAME@STEP` / `NAME` of a trained model -> (base model, adapter dir, served name);
    anything else is a base model spec served as itself."""
    from mcprl import paths
    from mcprl.train import checkpoints

    name, _, step = spec.partition("@")
    root = paths.checkpoints_dir(project, name)
    steps = checkpoints.list_steps(root)
    if not steps:
        if step:
            raise UserError(f"no trained model {name!r} in project {project!r} (looked in {root}); check --project and the name")
        return spec, None, spec
    if step and (not step.isdigit() or int(step) not in steps):
        raise UserError(f"{name} has no checkpoint {step!r}; available steps: {', '.join(map(str, steps))}")
    s = int(step) if step else steps[-1]
    ckpt = checkpoints.step_dir(root, s)
    return checkpoints.read_state(ckpt)["base_model"], ckpt, f"{name}@{s}"


def rollout_settings(checkpoint: Path | None, scenarios: list[Scenario]):
    """The prompt and sampling a trained model was trained with (its run's config.json, of this
    version or an earlier one), so that it is evaluated as it learned; for a base model, a run's
    defaults. Without a recorded example, scenarios of a registered task set get its
    worked example, as a run on them would (unless that run turned their help off)."""
    from mcprl import tasks
    from mcprl.run_config import RunConfig, load_saved

    config = checkpoint.parent.parent / "config.json" if checkpoint is not None else None
    if config is not None and config.exists():
        cfg = load_saved(config)
    else:
        shipped = {(s.check or {}).get("server") for s in scenarios}
        cfg = RunConfig(scenarios={"tasks": shipped.pop()} if len(shipped) == 1 and None not in shipped else {})
    rc = cfg.rollout
    if rc.example is None and cfg.scenarios.tasks and cfg.scenarios.task_help:
        try:
            rc = rc.model_copy(update={"example": tasks.get(cfg.scenarios.tasks).example})
        except UserError:  # a check naming a server that is not a shipped one
            pass
    return rc


async def evaluate(*, server: str | None, model: str, scenarios: list[Scenario], project: str = "default",
                   baseline: str | None = None, judge: str = "verify", judge_model: str = "local",
                   api_base: str | None = None, samples: int = 1, max_turns: int | None = None,
                   max_tokens: int | None = None, temperature: float | None = None, agent: str | None = None,
                   max_concurrency: int = 16, headers: dict[str, str] | None = None, env: dict[str, str] | None = None) -> dict[str, Any]:
    import anyio

    from judges import GateJudge, RulerJudge, VerifyJudge, score_groups
    from mcprl.gather import gather_trajectory_groups
    from mcprl import agents
    from mcprl.model import Model
    from mcprl.serving.engine import Engine
    from mcprl.serving.local import LocalServer
    from mcprl.tools import ServerSpec, ToolPool

    base, adapter, served = resolve_checkpoint(model, project)
    rc = rollout_settings(adapter, scenarios).model_copy(update={k: v for k, v in (
        ("max_turns", max_turns), ("max_tokens", max_tokens), ("temperature", temperature), ("agent", agent)) if v is not None})
    rollout = agents.load(rc.agent)  # the run's own agent unless `agent` says otherwise
    engine = await anyio.to_thread.run_sync(lambda: Engine(base, served_name=base))
    if adapter is not None:
        engine.load_adapter(served, adapter)
    names = [served]
    if baseline:
        b_base, b_adapter, b_served = resolve_checkpoint(baseline, project)
        if b_base != base:
            raise UserError(f"--baseline {baseline} is built on {b_base}, the model on {base}; compare models of the same base")
        if b_adapter is not None:
            engine.load_adapter(b_served, b_adapter)
        names.append(b_served)
    server_ = LocalServer(engine, api_key=secrets.token_urlsafe(24))
    verifiable = all(s.check is not None for s in scenarios)
    ruler = RulerJudge(judge_model, api_base=api_base) if (judge != "verify" or baseline or not verifiable) else None
    try:
        pool_cm = ToolPool(ServerSpec.parse(server, headers=headers or {}, env=env or {})) if server else None
        async with (pool_cm if pool_cm is not None else nullcontext()) as pool:
            policies = [Model(name=n, inference_base_url=server_.base_url, inference_api_key=server_.api_key, inference_model_name=n)
                        for n in names]
            per = samples if verifiable else max(samples, 2)
            groups = await gather_trajectory_groups(
                [[rollout(policies[0], s, pool, rc) for _ in range(per)] for s in scenarios], max_concurrency=max_concurrency)
            for g, s in zip(groups, scenarios):
                g.scenario = s
            scorer = VerifyJudge() if verifiable and judge == "verify" else GateJudge(VerifyJudge(), ruler) if verifiable else ruler
            await score_groups(scorer, groups)
            result: dict[str, Any] = {"model": served, "scenarios": len(scenarios), **rollout_metrics(groups)}
            if baseline:
                result["baseline"] = names[1]
                result.update(await _win_rate(rollout, policies, scenarios, pool, rc, ruler, max_concurrency))
    finally:
        server_.close()
    return result


async def _win_rate(rollout, policies, scenarios, pool, rc, ruler, max_concurrency) -> dict[str, Any]:
    """One rollout (by the agent `rollout`) of each model per scenario, ranked together by RULER; a tie counts half."""
    from judges import score_groups
    from mcprl.gather import gather_trajectory_groups

    groups = await gather_trajectory_groups(
        [[rollout(p, s, pool, rc) for p in policies] for s in scenarios], max_concurrency=max_concurrency)
    for g, s in zip(groups, scenarios):
        g.scenario = s
    await score_groups(ruler, groups)
    wins = 0.0
    judged = 0
    for g in groups:
        by = {t.metadata.get("model"): t for t in g.trajectories}
        a, b = by.get(policies[0].get_inference_name()), by.get(policies[1].get_inference_name())
        if g.skipped or a is None or b is None:
            continue
        judged += 1
        wins += 1.0 if a.reward > b.reward else 0.5 if a.reward == b.reward else 0.0
    lo, hi = wilson_interval(wins, judged)
    return {"win_rate": wins / judged if judged else float("nan"), "win_rate_ci": [lo, hi], "win_rate_judged": judged,
            "win_rate_skipped": len(groups) - judged}
