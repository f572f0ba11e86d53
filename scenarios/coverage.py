"""What a scenario set covers: how many tasks per difficulty, and per tool they expect to use."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mcprl.types import Scenario

DIFFICULTIES = (1, 2, 3, 4, 5)


def difficulty_histogram(scenarios: Iterable[Scenario]) -> dict[int, int]:
    hist = dict.fromkeys(DIFFICULTIES, 0)
    for s in scenarios:
        if s.difficulty is not None:
            hist[s.difficulty] += 1
    return hist


def tool_coverage(scenarios: Iterable[Scenario], tool_names: Sequence[str]) -> dict[str, int]:
    """Scenarios expecting each tool, for every tool offered (zero included)."""
    cover = dict.fromkeys(tool_names, 0)
    for s in scenarios:
        for name in set(s.tools):
            if name in cover:
                cover[name] += 1
    return cover
