"""The `mcprl` command. Each command lives in its own module and imports heavy things lazily."""

from __future__ import annotations

import typer

from mcprl.autorl import cli as autorl_cli
from mcprl.cli import (
    eval_cmd,
    judge_cmd,
    models_cmd,
    replay_cmd,
    scenarios_cmd,
    serve_cmd,
    tools_cmd,
    train_cmd,
    usage_cmd,
)
from mcprl.cli.console_script import run_app

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
app.command("usage")(usage_cmd.usage)
app.command("scenarios")(scenarios_cmd.scenarios)
app.command("judge")(judge_cmd.judge)
app.command("serve")(serve_cmd.serve)
app.command("replay")(replay_cmd.replay)
app.add_typer(models_cmd.app, name="models")
app.command("autorl")(autorl_cli.autorl_command)


def main() -> None:
    run_app(app)
