"""Run the `mcprl` entry point in-process, as a user would: argv in, exit code and output out."""

from __future__ import annotations

import sys

from mcprl.cli.main import main


def run_cli(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["mcprl", *args])
    try:
        main()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err
