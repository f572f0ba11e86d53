"""Scenarios: task inputs synthesized from an MCP server's tools, deduplicated, spread over
difficulties, split train/val; and a run's own sets (`mcprl.scenarios.source`).

The names below are imported on first use, so that reading a run's settings
(`mcprl.scenarios.config`) loads no tool client and no generator. The synthesizer is
`mcprl.scenarios.synthesize.synthesize` (a lazy name here would be shadowed by its module).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcprl.loading import exports

_EXPORTS = {
    "difficulty_histogram": "mcprl.scenarios.coverage",
    "tool_coverage": "mcprl.scenarios.coverage",
    "Deduper": "mcprl.scenarios.dedup",
    "similarity": "mcprl.scenarios.dedup",
    "ScenarioConfig": "mcprl.scenarios.config",
    "ExploreConfig": "mcprl.scenarios.config",
    "run_scenarios": "mcprl.scenarios.source",
    "split_for_run": "mcprl.scenarios.split",
    "split_train_val": "mcprl.scenarios.split",
    "SynthesisReport": "mcprl.scenarios.synthesize",
    "SynthesisResult": "mcprl.scenarios.synthesize",
}

if TYPE_CHECKING:
    from mcprl.scenarios.config import ExploreConfig, ScenarioConfig
    from mcprl.scenarios.coverage import difficulty_histogram, tool_coverage
    from mcprl.scenarios.dedup import Deduper, similarity
    from mcprl.scenarios.source import run_scenarios
    from mcprl.scenarios.split import split_for_run, split_train_val
    from mcprl.scenarios.synthesize import SynthesisReport, SynthesisResult

__getattr__ = exports(__name__, _EXPORTS)


__all__ = sorted(_EXPORTS)
