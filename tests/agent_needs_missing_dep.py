"""An agent module whose own import fails (a dependency is not installed)."""

import no_such_dependency_for_mcprl_tests  # noqa: F401


async def solve(rec, config):
    return None
