"""Scenarios: task inputs synthesized from an MCP server's tools, deduplicated, spread over
difficulties, split train/val, optionally filtered to the solvable ones; and a run's sets
(`scenarios.source`). The names below are imported on first use, so reading a run's settings
(`ScenarioConfig`) loads none of the generators."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "difficulty_histogram": "scenarios.coverage",
    "tool_coverage": "scenarios.coverage",
    "Deduper": "scenarios.dedup",
    "similarity": "scenarios.dedup",
    "SolvabilityReport": "scenarios.solvable",
    "filter_solvable": "scenarios.solvable",
    "ScenarioConfig": "scenarios.source",
    "run_scenarios": "scenarios.source",
    "split_for_run": "scenarios.split",
    "split_train_val": "scenarios.split",
    "SynthesisReport": "scenarios.synthesize",
    "SynthesisResult": "scenarios.synthesize",
    "synthesize": "scenarios.synthesize",
}

if TYPE_CHECKING:
    from scenarios.coverage import difficulty_histogram, tool_coverage
    from scenarios.dedup import Deduper, similarity
    from scenarios.solvable import SolvabilityReport, filter_solvable
    from scenarios.source import ScenarioConfig, run_scenarios
    from scenarios.split import split_for_run, split_train_val
    from scenarios.synthesize import SynthesisReport, SynthesisResult, synthesize


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'scenarios' has no attribute {name!r}")


__all__ = sorted(_EXPORTS)
