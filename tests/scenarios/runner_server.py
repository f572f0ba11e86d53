"""An MCP server that runs code, over stdio, as code runners do: of the many languages its `language` takes, two are
installed (the rest fail as a missing program does: "kitc: not found"), a program runs only in them, and what the
program prints comes under headings ("Execution (inline mode):", "--- Output ---"); a program that fails comes back
as a success whose text holds the error, with the traceback of the server's own code. It evaluates only
`print(<arithmetic>)` (`console.log` in JavaScript): no code is run.

    python tests/scenarios/runner_server.py
"""

import ast
import operator
import sys
from pathlib import Path
from typing import Literal

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

if __name__ == "__main__":
    hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)


from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402

mcp = MCPServer("runner")
Language = Literal[
    "kit", "applescript", "julia", "ruby", "go", "scala", "nim", "ocaml", "haskell", "clojure", "swift", "lua",
    "racket", "fsharp", "python", "crystal", "elixir", "dart", "zig", "perl6", "javascript",
]  # fmt: skip
PRINTS = {"python": "print", "javascript": "console.log"}  # the languages installed, and how each prints
OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
TRACE = """Execution (inline mode):

--- Error ---
Traceback (most recent call last):
  File "/srv/runner/server.py", line 97, in execute
    result_value = eval(code, self.locals)
  File "<string>", line 1, in <module>
{error}
"""


def value(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        return OPERATORS[type(node.op)](value(node.left), value(node.right))
    raise ValueError


@mcp.tool()
def run_code(code: str, language: Language) -> str:
    """Run a code snippet in a language and return what it prints."""
    if language not in PRINTS:
        command = f"{language}c"
        raise ToolError(f'Command failed: {command} "/tmp/tmp.{language}"\n/bin/sh: 1: {command}: not found')
    try:
        tree = ast.parse(code.strip(), mode="eval").body
    except SyntaxError:
        return TRACE.format(error="SyntaxError: invalid syntax")
    if not (isinstance(tree, ast.Call) and ast.unparse(tree.func) == PRINTS[language]):
        return TRACE.format(error=f"NameError: name {code.strip()[:20]!r} is not defined")
    try:
        printed = value(tree.args[0]) if len(tree.args) == 1 else None
    except (ValueError, ZeroDivisionError):
        printed = None
    if printed is None:
        return TRACE.format(error="TypeError: unsupported operand")
    return f"Execution (inline mode):\n\n--- Output ---\n{printed:g}\n"


if __name__ == "__main__":
    mcp.run()
