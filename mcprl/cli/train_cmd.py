"""`mcprl train`: the product's main job."""

from __future__ import annotations

from pathlib import Path

import typer


def parse_pairs(values: list[str], sep: str, what: str) -> dict[str, str]:
    from mcprl.errors import UserError

    out = {}
    for v in values:
        if sep not in v:
            raise UserError(f"{what} {v!r} must look like KEY{sep}VALUE")
        k, _, val = v.partition(sep)
        out[k.strip()] = val.strip()
    return out


def train(
    server: str = typer.Option(None, "--server", help="MCP server: URL (streamable HTTP; .../sse for SSE) or stdio command"),
    transport: str = typer.Option(None, help="auto|stdio|http|sse"),
    header: list[str] = typer.Option([], "--header", help="'Name: value' sent to HTTP servers; repeatable"),
    env: list[str] = typer.Option([], "--env", help="K=V for a stdio server's environment; repeatable"),
    cwd: str = typer.Option(None, "--cwd", help="working directory of a stdio server"),
    allow: list[str] = typer.Option([], "--allow", help="only tools matching this name/glob; repeatable"),
    deny: list[str] = typer.Option([], "--deny", help="never offer or call tools matching this name/glob; repeatable"),
    model: str = typer.Option(None, "--model", help="base model: alias, local dir or HF id \\[smollm2-135m]"),
    scenarios: Path = typer.Option(None, "--scenarios", help="scenarios JSONL (else --tasks or synthesis)"),
    tasks: str = typer.Option(None, "--tasks", help="a task set's generator: calculator, inventory, email, or one a package registers (mcprl.tasks entry points)"),
    difficulty: list[int] = typer.Option([], "--difficulty", help="with --tasks: only these difficulties (1-5); repeatable"),
    n: int = typer.Option(None, "-n", help="scenarios to generate or synthesize \\[48]"),
    judge: str = typer.Option(None, "--judge", help="ruler|verify|both \\[verify]"),
    judge_model: str = typer.Option(None, "--judge-model", help="litellm model for RULER/synthesis, or 'local' \\[local]"),
    judge_api_base: str = typer.Option(None, "--api-base", help="OpenAI-compatible base URL for the judge model"),
    rubric: Path = typer.Option(None, "--rubric", help="RULER rubric file"),
    steps: int = typer.Option(None, "--steps", help="training steps \\[10]"),
    time_budget: float = typer.Option(None, "--time-budget", help="minutes of training after which to stop and evaluate"),
    group_size: int = typer.Option(None, "--group-size", help="rollouts per scenario \\[4]"),
    groups_per_step: int = typer.Option(None, "--groups-per-step", help="scenarios per step \\[4]"),
    max_turns: int = typer.Option(None, "--max-turns", help="assistant turns per episode \\[4]"),
    max_tokens: int = typer.Option(None, "--max-tokens", help="tokens per assistant turn \\[128]"),
    learning_rate: float = typer.Option(None, "--learning-rate", help="\\[5e-5]"),
    temperature: float = typer.Option(None, "--temperature", help="sampling temperature, training and evaluation \\[1.0]"),
    sft_warmup_steps: int = typer.Option(None, "--sft-warmup-steps", help="first steps reinforce only successful rollouts \\[0]"),
    eval_every: int = typer.Option(None, "--eval-every", help="evaluate every E steps (0: only first and last) \\[5]"),
    example: Path = typer.Option(None, "--example", help="JSON list of chat messages shown before each task (else built from a scenario)"),
    task_help: bool = typer.Option(None, "--task-help/--no-task-help", help="--tasks: use its hand-written example and partial credit \\[on]"),
    shaping: float = typer.Option(None, "--shaping", help="tool-use shaping weight W in [0, 1): a failed task earns up to W for well-formed calls \\[0.1]"),
    max_extra_groups: int = typer.Option(None, "--max-extra-groups", help="extra scenarios a step may draw when groups have no reward variance \\[groups per step]"),
    val_size: int = typer.Option(None, "--val-size", help="cap on held-out scenarios"),
    eval_samples: int = typer.Option(None, "--eval-samples", help="rollouts per held-out scenario \\[1]"),
    dtype: str = typer.Option(None, "--dtype", help="auto|float32|bfloat16 base weights, CPU or GPU (auto: bfloat16 on CPUs that compute it natively; the model's on a GPU)"),
    name: str = typer.Option(None, "--name", help="model name \\[agent]"),
    project: str = typer.Option(None, "--project", help="project \\[default]"),
    seed: int = typer.Option(None, "--seed"),
    config: Path = typer.Option(None, "--config", help="run.toml with the same keys as these flags"),
    resume: bool = typer.Option(False, "--resume", help="continue from the last checkpoint"),
    wandb: bool = typer.Option(None, "--wandb/--no-wandb", help="log to Weights & Biases when installed"),
) -> None:
    """Train a model to use an MCP server's tools: roll out, judge, GRPO, repeat."""
    import anyio
    from rich.console import Console

    from mcprl.run_config import load_config

    cfg = load_config(config, dict(
        server=server, transport=transport, headers=parse_pairs(header, ":", "--header"), env=parse_pairs(env, "=", "--env"),
        cwd=cwd, allow=allow, deny=deny, model=model, scenarios=str(scenarios) if scenarios else None, tasks=tasks, difficulties=difficulty, n=n,
        judge=judge, judge_model=judge_model, judge_api_base=judge_api_base, rubric=str(rubric) if rubric else None,
        steps=steps, time_budget_minutes=time_budget, group_size=group_size, groups_per_step=groups_per_step, max_turns=max_turns, max_tokens=max_tokens,
        learning_rate=learning_rate, sft_warmup_steps=sft_warmup_steps, eval_every=eval_every, val_size=val_size, eval_samples=eval_samples, temperature=temperature,
        example=str(example) if example else None, task_help=task_help, shaping=shaping, max_extra_groups=max_extra_groups, dtype=dtype, name=name, project=project, seed=seed, wandb=wandb,
    ))
    console = Console(stderr=True)
    summary = anyio.run(lambda: run_with_progress(cfg, resume, console))
    print_summary(summary, console)
    if summary["interrupted"]:
        console.print(f"stopped at step {summary['step']}; continue with: mcprl train ... --name {cfg.name} --resume")
        raise typer.Exit(130)


async def run_with_progress(cfg, resume, console):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from mcprl.report import write_report
    from mcprl.runner import TrainingRun

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        run = TrainingRun(cfg, resume=resume, say=progress.console.print, progress=progress)
        try:
            summary = await run.run()
        except KeyboardInterrupt:
            summary = run.summary(interrupted=True)
            progress.console.print(f"interrupted; the last completed step is saved. Continue with --resume --name {cfg.name}")
    summary["report"] = str(write_report(run.dir))
    return summary


def print_summary(summary: dict, console) -> None:
    from rich.table import Table

    first, last = summary["first_eval"], summary["last_eval"]
    table = Table(title=f"mcprl train: {summary['dir']}")
    table.add_column("")
    table.add_column(f"step {first['step']}" if first else "before")
    table.add_column(f"step {last['step']}" if last else "after")
    for key, label, fmt in [("success_rate", "held-out success", "{:.0%}"), ("reward_mean", "held-out mean reward", "{:.3f}"),
                            ("tool_call_rate", "episodes with a tool call", "{:.0%}"), ("invalid_tool_call_rate", "episodes with an unparseable call", "{:.0%}"),
                            ("tool_error_rate", "tool error rate", "{:.0%}"), ("turns_mean", "turns per episode", "{:.2f}")]:
        if first and key in first:
            table.add_row(label, fmt.format(first[key]), fmt.format(last[key]) if last and key in last else "")
    console.print(table)
    if first and last and "success_rate" in first and last is not first:
        delta = (last["success_rate"] - first["success_rate"]) * 100
        verdict = "improved" if delta > 0 else "did NOT improve" if delta == 0 else "got WORSE"
        console.print(f"held-out success {verdict}: {first['success_rate']:.0%} -> {last['success_rate']:.0%} ({delta:+.0f} points)")
    console.print(f"report: {summary['report']}")
