"""Task sets: generators of verifiable scenarios and their checkers, by name, from any installed package.

A task set is registered under the entry-point group `mcprl.tasks`; the value names a module
(or any object, as `module:attribute`) with

    generate(n, seed=0, difficulties=(1, 2, 3, 4, 5)) -> list[Scenario]
        the scenarios; each one's `check` is `{"kind": "server", "server": NAME, ...}` (a
        `mcprl.checks.ServerCheck`, the task set's own keys riding along: `check["answer"]`) so
        that `mcprl.judges.verify` hands it back to this task set's `check`
    check(scenario, trajectory) -> float        1.0 solved .. 0.0 not (or an awaitable of it)
    DEMONSTRATION (optional)                    a solved first turn shown to the policy (its demonstration)
    SERVER (optional)                           the MCP server serving the world the tasks ask
                                                about, as a server spec (stdio command or URL);
                                                `{seed}` in it is replaced by the world seed

The server is named by `SERVER` rather than derived from the module path, because a user's
task module need not live in the package of the server it is about (or the server in Python at
all). A package of yours registers its own in its pyproject.toml (`pip install -e .` makes it
visible):

    [project.entry-points."mcprl.tasks"]
    words = "my_package.words_tasks"

and `mcprl train --tasks NAME` and a scenario's `{"kind": "server", "server": NAME}` check find
it. The task sets of the servers mcprl ships (`SHIPPED`) are known without entry points, which
exist only once mcprl is installed: a source tree on PYTHONPATH (an offline GPU machine, a Ray
worker handed the checkout) finds them too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

from mcprl.errors import UserError
from mcprl.types import Scenario, Trajectory

GROUP = "mcprl.tasks"
SHIPPED = {
    name: EntryPoint(name, f"mcprl.servers.{name}.tasks", GROUP) for name in ("calculator", "email", "inventory")
}


@dataclass(frozen=True)
class TaskSet:
    name: str
    generate: Callable[..., list[Scenario]]  # generate(n, seed=0, difficulties=(1..5), ...) -> scenarios
    check: Callable[[Scenario, Trajectory], float]  # 1.0 solved .. 0.0 not
    demonstration: list[dict] | None = None  # a solved first turn shown to the policy (RolloutConfig.demonstrations)
    server: str | None = None  # the server spec serving its world; `{seed}` stands for the world seed

    def command(self, seed: int = 0) -> str:
        """The server spec serving the world `generate(..., world_seed=seed)` asks about."""
        if self.server is None:
            raise UserError(f"task set {self.name!r} names no MCP server; set SERVER (a server spec) in its module")
        return self.server.replace("{seed}", str(seed))


def _registered() -> dict[str, list[EntryPoint]]:
    found = {name: [ep] for name, ep in SHIPPED.items()}
    for ep in entry_points(group=GROUP):
        found.setdefault(ep.name, []).append(ep)
    return found


def names() -> tuple[str, ...]:
    """The registered task sets' names, sorted."""
    return tuple(sorted(_registered()))


@functools.cache  # a scenario's checker is looked up per group; only successful loads are cached
def get(name: str) -> TaskSet:
    """The task set registered as `name`; a UserError saying what to do when there is none or it is broken."""
    found = _registered().get(name, [])
    if not found:
        raise UserError(
            f"no task set named {name!r}; registered: {', '.join(sorted(_registered())) or 'none'} "
            f"(a package registers one under the entry-point group {GROUP!r})"
        )
    if len({ep.value for ep in found}) > 1:
        raise UserError(
            f"task set {name!r} is registered more than once ({', '.join(ep.value for ep in found)}); uninstall all "
            "but one"
        )
    ep = found[0]
    where = f"task set {name!r} (entry point {ep.name} = {ep.value} in {GROUP!r})"
    try:
        target = ep.load()
    except Exception as e:  # a user's module can fail to import in any way
        reason = (str(e).splitlines() or [""])[0]
        raise UserError(
            f"{where} cannot be imported ({type(e).__name__}: {reason}); fix the module or the entry point"
        ) from None
    missing = [attr for attr in ("generate", "check") if not callable(getattr(target, attr, None))]
    if missing:
        raise UserError(f"{where} has no {' and no '.join(f'{attr}()' for attr in missing)}; define it in {ep.value}")
    return TaskSet(
        name=name,
        generate=target.generate,
        check=target.check,
        demonstration=getattr(target, "DEMONSTRATION", None),
        server=getattr(target, "SERVER", None),
    )
