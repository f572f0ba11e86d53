"""`mcprl eval` and `mcprl report`."""

from __future__ import annotations

import json
from pathlib import Path

import typer


def eval_(
    server: str = typer.Option(None, "--server", help="MCP server URL or stdio command"),
    model: str = typer.Option(..., "--model", help="NAME@STEP (or NAME for its latest step) of a trained model, or a base model spec"),
    scenarios: Path = typer.Option(..., "--scenarios", help="scenarios JSONL (e.g. a run's scenarios/val.jsonl)"),
    project: str = typer.Option("default", "--project"),
    baseline: str = typer.Option(None, "--baseline", help="a model to compare against with RULER (win rate)"),
    judge: str = typer.Option("verify", "--judge", help="verify|ruler|both"),
    judge_model: str = typer.Option("local", "--judge-model"),
    api_base: str = typer.Option(None, "--api-base"),
    samples: int = typer.Option(1, "--samples", help="rollouts per scenario"),
    max_turns: int = typer.Option(None, "--max-turns", help="default: what the model was trained with (else 4)"),
    max_tokens: int = typer.Option(None, "--max-tokens", help="per turn; default: as trained (else 128)"),
    temperature: float = typer.Option(None, "--temperature", help="default: as trained (else 1.0)"),
    agent: str = typer.Option(None, "--agent", help="plain|langgraph|module:function|module:Class; default: as trained (else plain)"),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
) -> None:
    """Evaluate a model on scenarios: success (95% CI), reward, tool-call validity, errors, turns."""
    import anyio
    from rich.console import Console
    from rich.table import Table

    from mcprl.evaluate import evaluate
    from mcprl.types import Scenario, load_jsonl

    scen = load_jsonl(scenarios, Scenario)
    result = anyio.run(lambda: evaluate(server=server, model=model, scenarios=scen, project=project, baseline=baseline,
                                        judge=judge, judge_model=judge_model, api_base=api_base, samples=samples,
                                        max_turns=max_turns, max_tokens=max_tokens, temperature=temperature, agent=agent))
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
    if "win_rate" in result:
        lo, hi = result["win_rate_ci"]
        t.add_row(f"RULER win rate vs {result['baseline']}", f"{result['win_rate']:.1%}  (95% CI {lo:.1%} – {hi:.1%}, {result['win_rate_judged']} judged)")
    Console().print(t)


def report(run_dir: Path = typer.Argument(..., help="a run directory (<MCPRL_HOME>/<project>/<name>)")) -> None:
    """(Re)build report.html for a run directory."""
    from mcprl.errors import UserError
    from mcprl.report import write_report

    if not (run_dir / "metrics.jsonl").exists():
        raise UserError(f"{run_dir}: no metrics.jsonl; point at a run directory written by `mcprl train`")
    print(write_report(run_dir))
