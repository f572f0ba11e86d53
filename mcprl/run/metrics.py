"""Aggregate figures over rollouts: what metrics.jsonl, the report and `mcprl eval` show; and
the log they go to (metrics.jsonl, and Weights & Biases when asked for)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from mcprl.paths import replace_text
from mcprl.types import SUCCESS_THRESHOLD, Trajectory, TrajectoryGroup


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def wilson_interval(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% confidence interval of a success rate (Wilson score), sane at 0% and 100%."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def mean_interval(xs: list[float], z: float = 1.96) -> tuple[float, float]:
    if len(xs) < 2:
        m = _mean(xs)
        return (m, m)
    m = _mean(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
    half = z * sd / math.sqrt(len(xs))
    return (m - half, m + half)


def rollout_metrics(groups: list[TrajectoryGroup], success_threshold: float = SUCCESS_THRESHOLD) -> dict[str, Any]:
    """What the policy did: trajectories the run wrote (a reference chain, `Generation.written`) are not counted.
    `success_rate`: the share of verified trajectories whose check scored at least `success_threshold` (the
    run's `--success-threshold`)."""

    def sampled(ts: list[Trajectory]) -> list[Trajectory]:
        return [t for t in ts if t.written_from is None]

    trajs = sampled([t for g in groups for t in g.trajectories])
    valid = [t for t in trajs if t.error is None]
    scored_groups = [sampled(g.valid) for g in groups if not g.skipped]
    rewards = [t.reward for ts in scored_groups for t in ts]
    out: dict[str, Any] = {
        "groups": len(groups),
        "groups_skipped": sum(1 for g in groups if g.skipped),
        "zero_variance_groups": sum(1 for ts in scored_groups if len(ts) > 1 and len({t.reward for t in ts}) == 1),
        "trajectories": len(trajs),
        "failed_rollouts": len(trajs) - len(valid),
        "reward_mean": _mean(rewards),
        "reward_std": math.sqrt(_mean([(r - _mean(rewards)) ** 2 for r in rewards])) if rewards else 0.0,
        "tool_call_rate": _mean([float(t.metrics.get("tool_calls", 0) > 0) for t in valid]),
        "invalid_tool_call_rate": _mean([float(t.metrics.get("invalid_tool_calls", 0) > 0) for t in valid]),
        "truncated_rate": _mean([t.metrics.get("truncated", 0.0) for t in valid]),
        # of which ended early by the context or the episode time limit (kept, scored; mcprl.rollout.recording)
        "truncated_episodes": sum(1 for t in valid if t.metadata.get("truncated")),
        "turns_mean": _mean([t.metrics.get("turns", 0.0) for t in valid]),
        "completion_tokens_mean": _mean(
            [float(sum(len(g.completion_token_ids) for g in t.generations)) for t in valid]
        ),
    }
    calls = sum(t.metrics.get("tool_calls", 0.0) for t in valid)
    out["tool_error_rate"] = sum(t.metrics.get("tool_errors", 0.0) for t in valid) / calls if calls else 0.0
    lo, hi = mean_interval(rewards)
    out["reward_ci"] = [lo, hi]
    outcomes = scenario_outcomes(groups, success_threshold)
    verified = sum(o["verified"] for o in outcomes)
    if verified:
        wins = sum(o["successes"] for o in outcomes)
        out["success_rate"] = wins / verified
        out["success_ci"] = list(wilson_interval(wins, verified))
    per_tool: dict[str, float] = {}
    for t in valid:
        for k, v in t.metrics.items():
            if k.startswith(("calls/", "errors/")):
                per_tool[f"tool/{k}"] = per_tool.get(f"tool/{k}", 0.0) + v
    out.update(per_tool)
    for key in ("judge_cost_usd", "judge_latency_s", "judge_prompt_tokens", "judge_completion_tokens"):
        vals = [g.metrics[key] for g in groups if key in g.metrics]
        if vals:
            out[key] = sum(vals)
    return out


def scenario_outcomes(groups: list[TrajectoryGroup], success_threshold: float = SUCCESS_THRESHOLD) -> list[dict]:
    """Each scenario's own outcome, in the groups' order: its id and task, and of the policy's episodes (not a chain
    the run wrote) that a check verified, how many and how many succeeded: which questions a model gets right."""
    out = []
    for g in groups:
        verified = [t.metrics["verify"] for t in g.valid if t.written_from is None and "verify" in t.metrics]
        out.append(
            {
                "id": g.scenario.id if g.scenario else None,
                "task": g.scenario.task if g.scenario else None,
                "verified": len(verified),
                "successes": sum(1 for v in verified if v >= success_threshold),
            }
        )
    return out


class MetricsLog:
    """metrics.jsonl: one line per training step (`kind: train`) or evaluation (`kind: eval`).
    With `wandb` (the arguments of `wandb.init`: project, name, config), each line's numbers also
    go to Weights & Biases, as `train/...` and `eval/...` at the line's step, when it is installed."""

    def __init__(self, path: Path, wandb: dict[str, Any] | None = None):
        self.path = path
        self.wandb = wandb

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]

    def append(self, row: dict[str, Any]) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        if self.wandb is not None:
            self._log_wandb(row)

    def truncate_after(self, step: int) -> None:
        """Drop lines of steps past the last checkpoint (written by a run killed mid-step)."""
        rows = [r for r in self.read() if r["step"] <= step]
        replace_text(self.path, "".join(json.dumps(r) + "\n" for r in rows))

    def _log_wandb(self, row: dict[str, Any]) -> None:
        # Lazy and optional: Weights & Biases is no dependency of mcprl; logged to only where installed
        try:
            import wandb
        except ImportError:
            return
        if wandb.run is None:
            wandb.init(**self.wandb)
        wandb.log({f"{row['kind']}/{k}": v for k, v in row.items() if isinstance(v, (int, float))}, step=row["step"])
