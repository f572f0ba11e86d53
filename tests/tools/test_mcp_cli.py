"""`mcprl tools` and `mcprl validate`, through the real entry point (exit codes, stdout, stderr)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.cli_runner import run_cli


def test_tools_json_prints_the_openai_schemas(monkeypatch, capsys):
    code, out, err = run_cli(
        monkeypatch, capsys, "tools", "--server", "python -m mcprl.servers.calculator", "--json", "--deny", "power"
    )
    assert code == 0, err
    tools = json.loads(out)
    assert [t["function"]["name"] for t in tools] == ["add", "subtract", "multiply", "divide"]
    assert tools[0] == {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers and return a + b.",
            "parameters": {
                "type": "object",
                "required": ["a", "b"],
                "properties": {
                    "a": {"type": "number", "description": "first number"},
                    "b": {"type": "number", "description": "second number"},
                },
            },
        },
    }


def test_tools_table_shows_names_descriptions_and_required_arguments(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = run_cli(monkeypatch, capsys, "tools", "-s", "python -m mcprl.servers.email")
    assert code == 0, err
    assert "2 tools" in out
    search = next(line for line in out.splitlines() if "search_emails" in line)
    assert "Search the mailbox, newest first." in search
    read = next(line for line in out.splitlines() if "read_email" in line)
    assert "email_id" in read


@pytest.mark.parametrize("name", ["calculator", "inventory", "email", "echo_env"])
def test_every_shipped_server_passes_validate(monkeypatch, capsys, name):
    code, out, err = run_cli(monkeypatch, capsys, "validate", "--server", f"python -m mcprl.servers.{name}")
    assert code == 0, out + err
    assert out.strip().endswith("0 errors, 0 warnings")


def test_validate_reports_findings_and_exits_1_on_errors(monkeypatch, capsys):
    code, out, err = run_cli(
        monkeypatch, capsys, "validate", "-s", "python -m mcprl.servers.bare_jsonrpc --tools 1 --broken"
    )
    assert code == 1, err
    assert "error has space: the name must be 1-64 letters" in out
    assert "error undescribed: no description" in out
    assert "warning undescribed: parameter 'q' has no description" in out
    assert "error invalid: the input schema is not valid JSON Schema at 'properties/n/minimum'" in out
    assert "4 tools checked: 3 errors, 1 warnings" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tools", "-s", "no-such-command-xyz"], "error: no-such-command-xyz: command 'no-such-command-xyz' not found"),
        (
            ["validate", "-s", "python -m mcprl.servers.bare_jsonrpc --malformed"],
            "its tools/list answer is not valid MCP",
        ),
        (["tools", "-s", "http://127.0.0.1:9/mcp", "--header", "nocolon"], "--header 'nocolon': expected"),
        (["tools", "-s", "python -m mcprl.servers.echo_env", "--deny", "*"], "--allow/--deny hide all of its tools"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(monkeypatch, capsys, args, message):
    code, out, err = run_cli(monkeypatch, capsys, *args)
    assert code == 2 and message in err and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err


def test_the_installed_command_prints_no_traceback_for_an_unreachable_server():
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from mcprl.cli.main import main; main()",
            "tools",
            "--server",
            "http://127.0.0.1:9/mcp",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: http://127.0.0.1:9/mcp: cannot connect") and done.stderr.count("\n") == 1
