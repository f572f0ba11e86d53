"""The `mcprl` command. Each command lives in its own module and imports heavy things lazily."""

from __future__ import annotations

import sys

import typer

from autorl import cli as autorl_cli
from mcprl.cli import eval_cmd, judge_cmd, models_cmd, scenarios_cmd, serve_cmd, tools_cmd, train_cmd

app = typer.Typer(
    name="mcprl",
    help="MCP-native RL for LLM agents: discover an MCP server's tools, synthesize tasks, roll out, judge, train.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command("train")(train_cmd.train)
app.command("eval")(eval_cmd.eval_)
app.command("report")(eval_cmd.report)
app.command("tools")(tools_cmd.tools)
app.command("validate")(tools_cmd.validate)
app.command("scenarios")(scenarios_cmd.scenarios)
app.command("judge")(judge_cmd.judge)
app.command("serve")(serve_cmd.serve)
app.add_typer(models_cmd.app, name="models")
app.command("autorl")(autorl_cli.autorl_command)


def run_app(typer_app: typer.Typer) -> None:
    """Run a Typer app as a console script: user errors print one line and exit 2, never a
    traceback; usage errors and exit codes are click's own (standalone mode)."""
    from mcprl.errors import UserError

    try:
        typer_app()
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)


def main() -> None:
    run_app(app)
