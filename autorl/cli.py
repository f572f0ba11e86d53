"""`autorl "task description"` (also `mcprl autorl`): generate a system prompt, inputs and a
rubric from a description, then train on them with RULER. Heavy imports happen inside the
command, so `--help` stays instant."""

from __future__ import annotations

from typing import Any

import anyio
import typer
from rich.console import Console

from mcprl.cli.console_script import run_app
from mcprl.cli.flags import SERVER_FLAGS, overrides, with_flags
from mcprl.cli.train_cmd import print_summary, run_with_progress
from mcprl.run.config import load_config


def autorl_command(
    task: str = typer.Argument(
        ..., help="what the model should do, in a sentence, e.g. 'Turn a customer email into a one-line summary'"
    ),
    steps: int = typer.Option(None, "--steps", help="training steps \\[10]"),
    n: int = typer.Option(None, "-n", help="inputs to generate \\[enough for --steps: 8 to 48]"),
    model: str = typer.Option(None, "--model", help="base model to train: alias, local dir or HF id \\[smollm2-135m]"),
    gen_model: str = typer.Option(
        "local", "--gen-model", help="litellm model that writes the prompt, inputs and rubric, or 'local'"
    ),
    judge_model: str = typer.Option(None, "--judge-model", help="litellm model for RULER, or 'local' \\[local]"),
    api_base: str = typer.Option(
        None, "--api-base", help="OpenAI-compatible base URL for --gen-model and --judge-model"
    ),
    name: str = typer.Option(None, "--name", help="model name; the generated files go to its directory \\[agent]"),
    project: str = typer.Option(None, "--project", help="project \\[default]"),
    group_size: int = typer.Option(None, "--group-size", help="rollouts per input \\[4]"),
    groups_per_step: int = typer.Option(None, "--groups-per-step", help="inputs per step \\[4]"),
    max_turns: int = typer.Option(None, "--max-turns", help="assistant turns per episode \\[4]"),
    max_tokens: int = typer.Option(None, "--max-tokens", help="tokens per assistant turn \\[128]"),
    learning_rate: float = typer.Option(None, "--learning-rate", help="\\[5e-5]"),
    resume: bool = typer.Option(False, "--resume", help="continue from the last checkpoint"),
    regenerate: bool = typer.Option(
        False, "--regenerate", help="generate the prompt, inputs and rubric anew, ignoring saved files"
    ),
    **given: Any,
) -> None:
    """AutoRL: generate a system prompt, inputs and a rubric from a task description, then train.

    The generated files are saved next to the run (<MCPRL_HOME>/<project>/<name>/autorl/): edit
    any of them and rerun to use your version, or pass --regenerate. A server (optional) gives
    the task its tools."""
    # Lazy: loaded when the command runs, so that `mcprl --help` stays fast
    from mcprl.autorl.run import plan

    cfg = load_config(
        None,
        {
            **overrides(given, SERVER_FLAGS),
            "steps": steps,
            "scenarios.n": n,
            "model": model,
            "judge.model": judge_model,
            "judge.api_base": api_base,
            "name": name,
            "project": project,
            "group_size": group_size,
            "groups_per_step": groups_per_step,
            "rollout.max_turns": max_turns,
            "rollout.max_tokens": max_tokens,
            "train.learning_rate": learning_rate,
        },
    )
    console = Console(stderr=True)

    async def run() -> dict:
        def say(line: str) -> None:
            console.print(line, markup=False, highlight=False, soft_wrap=True)

        planned = await plan(task, cfg, gen_model=gen_model, reuse=not regenerate, say=say)
        return await run_with_progress(planned, resume, console)

    summary = anyio.run(run)
    print_summary(summary, console)
    if summary["interrupted"]:
        raise typer.Exit(130)


with_flags(autorl_command, SERVER_FLAGS)

app = typer.Typer(name="autorl", no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False)
app.command()(autorl_command)


def main() -> None:
    run_app(app)
