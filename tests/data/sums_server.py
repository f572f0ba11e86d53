"""Arithmetic as mcp-math (PyPI) serves it: tools described in Chinese, with no hint of whether they write, so a
client takes each for one that may; each a computation whose result any other takes (a factorial's square root).

    python tests/data/sums_server.py
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

from mcprl.servers import serve  # noqa: E402


def add(a: float, b: float) -> float:
    """执行浮点数加法运算"""
    return a + b


def sqrt(number: float) -> float:
    """计算平方根"""
    if number < 0:
        raise ValueError("负数没有实数平方根")
    return math.sqrt(number)


def factorial(n: int) -> int:
    """计算整数阶乘"""
    if n < 0 or n > 500:
        raise ValueError("n 必须在 0 到 500 之间")
    return math.factorial(n)


def build(seed: int = 0):
    server = serve.new_server("sums", "算术")
    tools = [add, sqrt, factorial]
    serve.add_tools(server, tools, writes=[t.__name__ for t in tools])
    return server


if __name__ == "__main__":
    serve.main(build, "算术")
