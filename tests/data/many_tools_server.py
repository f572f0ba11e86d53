"""A server of many small tools that compute, keeping no state: `list_parts` names the parts, and each of
`TOOLS` tools scales a part's weight by its own factor, answering only for a part it knows (its error names
them). Half say they only read (`readOnlyHint`); the other half say they may write, as an unannotated tool
named like an order would, though none changes anything. With `STARTS_DIR` set, each process leaves a file
there as it starts: the sessions a client opened, counted.

    [STARTS_DIR=D] python tests/data/many_tools_server.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

import os  # noqa: E402
from typing import Annotated  # noqa: E402

from pydantic import Field  # noqa: E402

from mcprl.servers import serve  # noqa: E402

TOOLS = 90
PARTS = {"bolt": 12, "hinge": 40, "bracket": 75}


def list_parts() -> str:
    """List the parts whose weight is known."""
    return ", ".join(PARTS)


def scaler(factor: int):
    def scale(part: Annotated[str, Field(description="the part")]) -> dict:
        if part not in PARTS:
            raise ValueError(f"No part '{part}'. The parts: {', '.join(PARTS)}")
        return {"part": part, "scale": factor, "weight_g": PARTS[part] * factor}

    scale.__name__ = f"scale_{factor:02d}"
    scale.__doc__ = f"Scale a part's weight by {factor}."
    return scale


def build(seed: int = 0):
    server = serve.new_server("parts", "Parts and their weights at many scales.")
    scales = [scaler(k) for k in range(1, TOOLS + 1)]
    serve.add_tools(server, [list_parts, *scales], writes=[s.__name__ for s in scales[1::2]])
    return server


if __name__ == "__main__":
    if starts := os.environ.get("STARTS_DIR"):
        (Path(starts) / str(os.getpid())).touch()
    serve.main(build, "Parts and their weights at many scales.")
