"""The shipped training servers by name, so a judge can dispatch on a scenario's `check["server"]`."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from mcprl.errors import UserError
from mcprl.types import Scenario, Trajectory

NAMES = ("calculator", "inventory", "email")


@dataclass(frozen=True)
class ShippedServer:
    name: str
    module: str  # run it with `python -m {module}`
    generate: Callable[..., list[Scenario]]  # generate(n, seed=0, difficulties=(1..5), ...) -> scenarios
    check: Callable[[Scenario, Trajectory], float]  # 1.0 solved .. 0.0 not
    example: list[dict] | None = None  # a solved first turn to show the policy (see RolloutConfig.example)

    def command(self, seed: int = 0) -> str:
        """The stdio server spec serving the world `generate(..., world_seed=seed)` asks about."""
        return f"python -m {self.module} --seed {seed}"


def names() -> tuple[str, ...]:
    return NAMES


def get(name: str) -> ShippedServer:
    if name not in NAMES:
        raise UserError(f"no shipped server named {name!r}; choose one of: {', '.join(NAMES)}")
    tasks = importlib.import_module(f"servers.{name}.tasks")
    return ShippedServer(name=name, module=f"servers.{name}", generate=tasks.generate, check=tasks.check,
                         example=getattr(tasks, "EXAMPLE", None))
