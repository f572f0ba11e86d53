"""A run's scenario settings: where its tasks come from (`[scenarios]` in a run file,
`mcprl.scenarios.source`) and how far its server is explored to ground them (`[explore]`,
`mcprl.scenarios.explore`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ScenarioConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str | None = Field(default=None, description="scenarios JSONL (else --tasks or synthesis)")
    tasks: str | None = Field(
        default=None,
        description="a task set's generator: calculator, inventory, email, or one a package registers (mcprl.tasks "
        "entry points)",
    )
    difficulties: list[int] = Field(
        default_factory=lambda: [1, 2, 3, 4, 5], description="with --tasks: only these difficulties (1-5)"
    )
    n: int = Field(default=48, ge=2, description="scenarios to generate or synthesize")
    val_fraction: float = Field(default=0.25, gt=0, lt=1, description="share of the scenarios held out for evaluation")
    val_size: int | None = Field(default=None, ge=1, description="cap on held-out scenarios")
    source: Literal["grounded", "synthesized", "mixed"] = Field(
        default="grounded",
        description="without a file or task set: tasks grounded in the server's own answers (explored, "
        "checked by value), synthesized by the generator model (judged by RULER), or grounded ones topped up "
        "to -n with synthesized ones whose reference call ran (mixed)",
    )
    task_hint: str | None = Field(default=None, description="synthesis: what the tasks should be about")
    fallback: bool = Field(
        default=True,
        description="grounded: where fewer than --min-grounded tasks are grounded but a tool answered, top the set "
        "up with synthesized tasks whose reference call ran on the server (judged by RULER)",
    )
    min_grounded: int = Field(
        default=8, ge=2, description="grounded: fewer grounded tasks than this are topped up with synthesized ones"
    )
    find_references: bool | None = Field(
        default=None,
        description="--scenarios FILE with answers but no reference calls: explore the server for a call whose "
        "result holds each answer, replayed before use (default: on where a server is given)",
    )
    # False measures a server as if it were a user's: the demonstration is built from a scenario,
    # and every check is all-or-nothing (success 1, anything else 0).
    task_help: bool = Field(default=True, description="--tasks: use its hand-written example and partial credit")


CALLS = 120  # exploring's calls at most, by default
CALLS_PER_TOOL = 3  # or so many a tool, on a server of many (a working call found for each, a second value)


class ExploreConfig(BaseModel):
    """How far a run explores its server before grounding tasks in it (`[explore]` in a run file)."""

    model_config = ConfigDict(extra="forbid")

    calls: int | None = Field(
        default=None,
        ge=1,
        description=f"tool calls at most while exploring the server (default: {CALLS}, or {CALLS_PER_TOOL} a tool "
        "where that is more)",
    )
    minutes: float = Field(default=3.0, gt=0, description="minutes at most while exploring the server")
    call_timeout: float = Field(
        default=10.0, gt=0, description="seconds a call may take while exploring; a tool that hangs is skipped"
    )
    rate: float | None = Field(
        default=None, gt=0, description="calls a second at most while exploring (a shared server's limit)"
    )
    retire_after: int = Field(
        default=12, ge=1, description="distinct failed calls, with no answer, after which a tool is left alone"
    )
    writes: bool = Field(
        default=False,
        description="also call tools that may write on a shared (HTTP/SSE) server, or outside the server (processes, "
        "commands, the open world)",
    )
    generated: int | None = Field(
        default=None,
        ge=0,
        description="calls at most whose arguments the generator model writes "
        "(JSON under the tool's input schema) for tools that have not answered yet; default: 8, "
        "4 with the offline local generator",
    )
    isolated: bool | None = Field(
        default=None,
        description="each session gets fresh server state (default: per-rollout stdio servers whose command names no "
        "file)",
    )
    phrase: bool | None = Field(
        default=None,
        description="rephrase grounded tasks with the generator model (--judge-model); default: unless it is the "
        "offline local one",
    )

    def budget(self, tools: int) -> int:
        """The calls at most for exploring a server of `tools` tools."""
        return self.calls if self.calls is not None else max(CALLS, CALLS_PER_TOOL * tools)
