"""Scenarios: task inputs synthesized from an MCP server's tools, deduplicated, spread over
difficulties, split train/val, optionally filtered to the solvable ones."""

from scenarios.coverage import difficulty_histogram, tool_coverage
from scenarios.dedup import Deduper, similarity
from scenarios.solvable import SolvabilityReport, filter_solvable
from scenarios.split import split_train_val
from scenarios.synthesize import SynthesisReport, SynthesisResult, synthesize

__all__ = [
    "Deduper",
    "SolvabilityReport",
    "SynthesisReport",
    "SynthesisResult",
    "difficulty_histogram",
    "filter_solvable",
    "similarity",
    "split_train_val",
    "synthesize",
    "tool_coverage",
]
