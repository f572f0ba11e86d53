"""`mcprl eval`: how well a trained step (or a base model) uses a server's tools on a set of
scenarios: success with a 95% interval, mean reward, tool-call validity and error rates, turns;
with a baseline, RULER's win rate of the model against it."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import torch

from mcprl import paths, tasks
from mcprl.checks import ServerCheck
from mcprl.errors import UserError
from mcprl.judges import score_groups
from mcprl.model import weights
from mcprl.model.trainable import Model
from mcprl.rollout import agents
from mcprl.rollout.gather import gather_trajectory_groups
from mcprl.run.config import load_config
from mcprl.run.metrics import rollout_metrics, scenario_outcomes, wilson_interval
from mcprl.serving.engine import Engine
from mcprl.serving.local import LocalEndpoint
from mcprl.tools import ToolPool
from mcprl.tools.validate import check_tools
from mcprl.train import checkpoints
from mcprl.types import Scenario
from mcprl.usage import ToolOverrides, usage_report

if TYPE_CHECKING:
    from mcprl.run.config import RunConfig


def resolve_checkpoint(spec: str, project: str, root: Path | None = None) -> tuple[str, Path | None, str]:
    """`NAME@STEP` / `NAME` of a trained model -> (base model, adapter dir, served name);
    anything else is a base model spec served as itself. `root`: the checkpoints directory to
    look in (a run's own); default: the project's model NAME."""
    name, _, step = spec.partition("@")
    given = root is not None
    if paths.name_problem(name) and not step and not given:  # a path or a hub id: no run could have that name
        return spec, None, spec
    root = root or paths.checkpoints_dir(project, name)
    steps = checkpoints.list_steps(root)
    if not steps:
        if step or given:
            raise UserError(
                f"no trained model {name!r} in project {project!r} (looked in {root}); check --project and the name"
            )
        return spec, None, spec
    if step and (not step.isdigit() or int(step) not in steps):
        raise UserError(f"{name} has no checkpoint {step!r}; available steps: {', '.join(map(str, steps))}")
    s = int(step) if step else steps[-1]
    ckpt = checkpoints.step_dir(root, s)
    return checkpoints.read_state(ckpt)["base_model"], ckpt, f"{name}@{s}"


def run_settings(
    run_dir: Path | None, scenarios: list[Scenario], overrides: Mapping[str, Any] | None = None
) -> RunConfig:
    """The settings a model is evaluated with: its run's own (`run_dir`/config.json: server,
    prompt and sampling, judge, evaluation samples, runtime),
    so that it is evaluated as it learned and scored as its run scored it; without a run, a run's
    defaults. `overrides` (flags) win. Without a recorded demonstration, scenarios of a registered task
    set get its own, as a run on them would (unless that run turned their help off)."""
    overrides = dict(overrides or {})
    config = run_dir / "config.json" if run_dir is not None else None
    if config is not None and config.exists():
        cfg = load_config(config, overrides)
    else:
        shipped = {s.check.server if isinstance(s.check, ServerCheck) else None for s in scenarios}
        if len(shipped) == 1 and None not in shipped:
            overrides.setdefault("scenarios.tasks", shipped.pop())
        cfg = load_config(None, overrides)
    rc = cfg.rollout
    if rc.demonstrations is None and cfg.scenarios.tasks and cfg.scenarios.task_help:
        try:
            shipped = tasks.get(cfg.scenarios.tasks).demonstration
            rc = rc.model_copy(update={"demonstrations": None if shipped is None else [shipped]})
        except UserError:  # a check naming a server that is not a shipped one
            pass
    return cfg.model_copy(update={"rollout": rc})


async def evaluate(
    cfg: RunConfig,
    *,
    model: str,
    scenarios: list[Scenario],
    baseline: str | None = None,
    checkpoints: Path | None = None,
    cache_dir: Path | None = None,
    tool_overrides: ToolOverrides | None = None,
) -> dict[str, Any]:
    """`model` (a spec for `resolve_checkpoint`, in `checkpoints` when given) on `scenarios` with the
    settings `cfg` (see `run_settings`): its server, rollout, held-out judge (`JudgeConfig.held_out`),
    evaluation samples, concurrency and runtime dtype and threads; RULER's verdicts cached in `cache_dir`.
    With a server, `usage` holds the per-tool report (mcprl.usage); `tool_overrides` change what the
    model is shown of the tools, not what the server receives."""
    base, adapter, served = resolve_checkpoint(model, cfg.project, checkpoints)
    rc = cfg.rollout
    rollout = agents.load(rc.agent)  # the run's own agent unless --agent says otherwise
    if cfg.runtime.threads:
        torch.set_num_threads(cfg.runtime.threads)
    engine = await anyio.to_thread.run_sync(
        lambda: Engine(base, model=weights.load_model(base, dtype=cfg.runtime.dtype), served_name=base)
    )
    if adapter is not None:
        engine.load_adapter(served, adapter)
    names = [served]
    if baseline:
        b_base, b_adapter, b_served = resolve_checkpoint(baseline, cfg.project)
        if b_base != base:
            raise UserError(
                f"--baseline {baseline} is built on {b_base}, the model on {base}; compare models of the same base"
            )
        if b_adapter is not None:
            engine.load_adapter(b_served, b_adapter)
        names.append(b_served)
    server_ = LocalEndpoint(engine, api_key=secrets.token_urlsafe(24))
    verifiable = all(s.check is not None for s in scenarios)
    judge = cfg.judge.held_out(
        verifiable,
        all_or_nothing=not cfg.scenarios.task_help,
        success_threshold=cfg.train.success_threshold,
        cache_dir=cache_dir,
    )
    try:
        pool_cm = ToolPool(cfg.server.spec()) if cfg.server.connects else None
        async with pool_cm if pool_cm is not None else nullcontext() as pool:
            toolset = pool.toolset if pool is not None else None
            if toolset is not None and tool_overrides is not None:
                pool.toolset = toolset.model_copy(update={"tools": tool_overrides.apply(toolset.tools)})
            policies = [
                Model(
                    name=n,
                    inference_base_url=server_.base_url,
                    inference_api_key=server_.api_key,
                    inference_model_name=n,
                )
                for n in names
            ]
            per = cfg.eval_samples if verifiable else max(cfg.eval_samples, 2)
            groups = await gather_trajectory_groups(
                [[rollout(policies[0], s, pool, rc) for _ in range(per)] for s in scenarios],
                max_concurrency=cfg.max_concurrency,
            )
            for g, s in zip(groups, scenarios):
                g.scenario = s
            await score_groups(judge, groups)
            result: dict[str, Any] = {
                "model": served,
                "scenarios": len(scenarios),
                **rollout_metrics(groups, cfg.train.success_threshold),
                "per_scenario": scenario_outcomes(groups, cfg.train.success_threshold),
            }
            if toolset is not None:
                result["usage"] = usage_report(
                    groups,
                    toolset.tools,
                    model=served,
                    findings=check_tools(toolset.mcp_tools),
                    success_threshold=cfg.train.success_threshold,
                ).model_dump(mode="json")
            if baseline:
                ruler = cfg.judge.model_copy(update={"mode": "ruler"}).build(cache_dir=cache_dir)
                result["baseline"] = names[1]
                result.update(await _win_rate(rollout, policies, scenarios, pool, rc, ruler, cfg.max_concurrency))
    finally:
        server_.close()
    return result


async def _win_rate(rollout, policies, scenarios, pool, rc, ruler, max_concurrency) -> dict[str, Any]:
    """One rollout (by the agent `rollout`) of each model per scenario, ranked together by RULER; a tie counts half."""
    groups = await gather_trajectory_groups(
        [[rollout(p, s, pool, rc) for p in policies] for s in scenarios], max_concurrency=max_concurrency
    )
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
    return {
        "win_rate": wins / judged if judged else float("nan"),
        "win_rate_ci": [lo, hi],
        "win_rate_judged": judged,
        "win_rate_skipped": len(groups) - judged,
    }
