"""For server authors: what models do with each of a server's tools, from recorded rollouts (`usage_report`),
shown in the terminal and report.html (`mcprl.usage.render`); description experiments (`mcprl.usage.overrides`)."""

from mcprl.usage.overrides import ToolOverrides, load_overrides
from mcprl.usage.report import UsageReport, run_tools, step_metrics, usage_report

__all__ = [
    "ToolOverrides",
    "UsageReport",
    "load_overrides",
    "run_tools",
    "step_metrics",
    "usage_report",
]
