"""A calculator that also keeps named sessions, as mcp-mathematics does: `create_session` (no arguments, a write)
issues a session's id that `session_calculate` and `list_session_variables` take; `clear_history`, a write that takes
nothing, forgets what was computed; `calculate` and `is_prime` compute whatever they are sent, `calculator_info` says
its limits, and no read shows what a write did. Each process starts with no sessions.

    python tests/data/calc_sessions_server.py
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

from mcprl.scenarios.expressions import arithmetic  # noqa: E402
from mcprl.servers import serve  # noqa: E402

SESSIONS: dict[str, dict[str, float]] = {}
HISTORY: list[str] = []
NUMBERS = itertools.count(1_796_590_040)  # (another id each call, as a clock's milliseconds would give)


def evaluate(expr: str) -> float:
    value = arithmetic(expr)
    if value is None:
        raise ValueError(f"unsupported expression: {expr}")
    return int(value) if value.is_integer() else value


def create_session() -> dict:
    """Create a calculation session."""
    session_id = f"session_{next(NUMBERS)}"
    SESSIONS[session_id] = {}
    return {"success": True, "session_id": session_id}


def clear_history() -> dict:
    """Clear the calculation history."""
    HISTORY.clear()
    return {"success": True}


def calculate(expr: str) -> dict:
    """Evaluate a math expression."""
    HISTORY.append(expr)
    return {"expression": expr, "result": evaluate(expr)}


def is_prime(number: int) -> dict:
    """Whether a number is prime."""
    return {"number": number, "prime": number > 1 and all(number % d for d in range(2, int(number**0.5) + 1))}


def session_calculate(session_id: str, expr: str) -> dict:
    """Evaluate a math expression in a session."""
    if session_id not in SESSIONS:
        raise ValueError(f"Session not found: {session_id}")
    return {"session_id": session_id, "result": evaluate(expr)}


def list_session_variables(session_id: str) -> dict:
    """List a session's variables."""
    if session_id not in SESSIONS:
        raise ValueError(f"Session not found: {session_id}")
    return {"session_id": session_id, "variables": SESSIONS[session_id]}


def calculator_info() -> dict:
    """The calculator's limits."""
    return {"max_expression_length": 1000, "functions": 12}


def build(seed: int = 0):
    server = serve.new_server("calc-sessions", "A calculator with sessions.")
    tools = [
        calculator_info,
        create_session,
        clear_history,
        calculate,
        is_prime,
        session_calculate,
        list_session_variables,
    ]
    serve.add_tools(server, tools, writes=["create_session", "clear_history"])
    return server


if __name__ == "__main__":
    serve.main(build, "A calculator with sessions.")
