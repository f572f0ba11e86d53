"""Scenarios: task inputs synthesized from an MCP server's tools, deduplicated, spread over
difficulties, split train/val, optionally filtered to the solvable ones; and a run's own sets
(`mcprl.scenarios.source`)."""

from mcprl.scenarios.coverage import difficulty_histogram, tool_coverage
from mcprl.scenarios.dedup import Deduper, similarity
from mcprl.scenarios.solvable import SolvabilityReport, filter_solvable
from mcprl.scenarios.source import ScenarioConfig, run_scenarios
from mcprl.scenarios.split import split_for_run, split_train_val
from mcprl.scenarios.synthesize import SynthesisReport, SynthesisResult, synthesize

__all__ = [
    "Deduper",
    "ScenarioConfig",
    "SolvabilityReport",
    "SynthesisReport",
    "SynthesisResult",
    "difficulty_histogram",
    "filter_solvable",
    "run_scenarios",
    "similarity",
    "split_for_run",
    "split_train_val",
    "synthesize",
    "tool_coverage",
]
