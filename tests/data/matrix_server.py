"""Matrices kept by name, as numpy-mcp (PyPI) keeps them: one is made from a shape and a flat list of values whose
number the shape's product must be, and every other tool takes a name one was made under.

    python tests/data/matrix_server.py
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

from mcprl.servers import serve  # noqa: E402

STORE: dict[str, tuple[list[int], list[float]]] = {}


def create_matrix(shape: list[int], values: list[float], name: str) -> str:
    """Creates a matrix with a specified shape and values, stored under a name.

    Args:
        shape: the shape of the matrix
        values: a flat list of values to fill it with
        name: the name to store it under
    """
    if not shape or math.prod(shape) != len(values):
        raise ValueError("Shape does not match number of values.")
    STORE[name] = (shape, values)
    return f"{name}: shape {shape}"


def _stored(name: str) -> tuple[list[int], list[float]]:
    if name not in STORE:
        raise ValueError("The matrix name is not found in the store.")
    return STORE[name]


def matrix_sum(name: str) -> float:
    """The sum of a stored matrix's values."""
    return sum(_stored(name)[1])


def matrix_shape(name: str) -> str:
    """The shape of a stored matrix."""
    return " x ".join(map(str, _stored(name)[0]))


def matrix_max(name: str) -> float:
    """The largest of a stored matrix's values."""
    return max(_stored(name)[1])


def build(seed: int = 0):
    server = serve.new_server("matrices", "matrices kept by name")
    serve.add_tools(
        server, [create_matrix, matrix_sum, matrix_shape, matrix_max], writes=["create_matrix"], adds=["create_matrix"]
    )
    return server


if __name__ == "__main__":
    serve.main(build, "matrices kept by name")
