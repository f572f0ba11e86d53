"""`mcprl eval` and `mcprl report`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import typer
from rich.console import Console
from rich.table import Table

from mcprl.cli.flags import flags, overrides, with_flags
from mcprl.errors import UserError
from mcprl.types import Scenario, load_jsonl

# What `mcprl eval` may change of the settings it evaluates with: the server, the agent's prompt
# and sampling, and the RULER judge (which scores scenarios without checks and the win rate).
# Scenarios with checks are scored as the run scored them, unshaped (`JudgeConfig.held_out`).
EVAL_FLAGS = flags(
    only=lambda place: (
        place.startswith(("server.", "rollout.")) or place in ("judge.model", "judge.api_base", "judge.rubric")
    )
)


def eval_(
    run: Path = typer.Option(
        None,
        "--run",
        help="a run directory (<MCPRL_HOME>/<project>/<name>): its latest step (or --step) "
        "with the run's own settings (config.json) on its held-out scenarios",
    ),
    step: int = typer.Option(None, "--step", help="with --run: the checkpoint to evaluate \\[latest]"),
    model: str = typer.Option(
        None,
        "--model",
        help="NAME@STEP (or NAME for its latest step) of a trained model, evaluated with its "
        "run's settings, or a base model spec; with --run, evaluated with that run's settings",
    ),
    scenarios: Path = typer.Option(None, "--scenarios", help="scenarios JSONL \\[the run's scenarios/val.jsonl]"),
    project: str = typer.Option(
        None, "--project", help="the project of --model and --baseline \\[default; with --run, the run's]"
    ),
    baseline: str = typer.Option(None, "--baseline", help="a model to compare against with RULER (win rate)"),
    samples: int = typer.Option(
        None, "--samples", help="rollouts per scenario \\[as the run evaluated: eval_samples, else 1]"
    ),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
    tool_overrides: Path = typer.Option(
        None,
        "--tool-overrides",
        help="JSON or TOML: tool and parameter descriptions, "
        "examples, hidden tools, as the model is to see them (docs/usage-report.md)",
    ),
    **given: Any,
) -> None:
    """Evaluate a model on scenarios: success (95% CI), reward, tool-call validity, errors, turns, use of each tool.

    A trained model is evaluated as its run trained and scored it (the run's server, prompt, sampling and judge, from
    its config.json), so one checkpoint gets one score; flags change them."""
    # Lazy: loaded when the command runs, so that `mcprl --help` stays fast
    from mcprl.run.evaluate import evaluate, resolve_checkpoint, run_settings
    from mcprl.usage import UsageReport, load_overrides
    from mcprl.usage.render import print_reports

    settings = {**overrides(given, EVAL_FLAGS), "project": project, "eval_samples": samples}
    if step is not None and (run is None or model is not None):
        raise UserError("--step picks a checkpoint of --run; name another model's step with --model NAME@STEP")
    if run is not None:
        if not (run / "config.json").exists():
            raise UserError(f"{run}: no config.json; point --run at a run directory written by `mcprl train`")
        run_dir = run
    elif model is None:
        raise UserError("give --run DIR (a training run) or --model NAME@STEP (a trained model, or a base model)")
    else:  # a trained model's run directory holds the checkpoint
        adapter = resolve_checkpoint(model, project or "default")[1]
        run_dir = adapter.parent.parent if adapter is not None else None
    if scenarios is None:
        if run_dir is None:
            raise UserError("give --scenarios FILE (a JSONL of scenarios, e.g. a run's scenarios/val.jsonl)")
        scenarios = run_dir / "scenarios" / "val.jsonl"
    scen = load_jsonl(scenarios, Scenario)
    cfg = run_settings(run_dir, scen, settings)
    root = None
    if model is None:  # the run's own checkpoint
        model, root = (f"{cfg.name}@{step}" if step is not None else cfg.name), run / "checkpoints"
    shown = load_overrides(tool_overrides) if tool_overrides is not None else None
    result = anyio.run(
        lambda: evaluate(
            cfg,
            model=model,
            scenarios=scen,
            baseline=baseline,
            checkpoints=root,
            cache_dir=run_dir / "judge-cache" if run_dir is not None else None,
            tool_overrides=shown,
        )
    )
    if as_json:
        print(json.dumps(result, indent=2))
        return
    t = Table(title=f"{result['model']} on {result['scenarios']} scenarios")
    t.add_column("metric")
    t.add_column("value")
    if "success_rate" in result:
        lo, hi = result["success_ci"]
        t.add_row("success", f"{result['success_rate']:.1%}  (95% CI {lo:.1%} – {hi:.1%})")
    lo, hi = result["reward_ci"]
    t.add_row("mean reward", f"{result['reward_mean']:.3f}  (95% CI {lo:.3f} – {hi:.3f})")
    t.add_row("episodes with a tool call", f"{result['tool_call_rate']:.1%}")
    t.add_row("episodes with an unparseable tool call", f"{result['invalid_tool_call_rate']:.1%}")
    t.add_row("tool error rate", f"{result['tool_error_rate']:.1%}")
    t.add_row("turns per episode", f"{result['turns_mean']:.2f}")
    t.add_row("failed rollouts", str(result["failed_rollouts"]))
    per = result["per_scenario"]  # (each scenario's own: `--json` lists them)
    if any(s["verified"] for s in per):
        t.add_row("scenarios solved at least once", f"{sum(1 for s in per if s['successes'])} of {len(per)}")
    if "win_rate" in result:
        lo, hi = result["win_rate_ci"]
        t.add_row(
            f"RULER win rate vs {result['baseline']}",
            f"{result['win_rate']:.1%}  (95% CI {lo:.1%} – {hi:.1%}, {result['win_rate_judged']} judged)",
        )
    Console().print(t)
    if "usage" in result:
        print_reports([UsageReport.model_validate(result["usage"])])


with_flags(eval_, EVAL_FLAGS, show_defaults=False, panel_note=" (default: the run's own)")


def report(run_dir: Path = typer.Argument(..., help="a run directory (<MCPRL_HOME>/<project>/<name>)")) -> None:
    """(Re)build report.html for a run directory."""
    # Lazy: loaded when the command runs, so that `mcprl --help` stays fast
    from mcprl.run.report import write_report

    if not (run_dir / "metrics.jsonl").exists():
        raise UserError(f"{run_dir}: no metrics.jsonl; point at a run directory written by `mcprl train`")
    print(write_report(run_dir))
