"""The record exploring makes (`mcprl.scenarios.explore`): every call, where its arguments' values came from,
what came back, and how each tool fared. Grounded tasks (`mcprl.scenarios.grounded`) are made from it; a run keeps
it as exploration.jsonl."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from mcprl.scenarios.isolation import by_reason


def source_call(source: str) -> int | None:
    """The call an argument's value came from (`ExploredCall.sources`: "result:<index>"), if a call's."""
    return int(source[7:]) if source.startswith("result:") else None


class ExploredCall(BaseModel):
    """One call made while exploring, and what came back."""

    index: int
    session: int = Field(description="calls of one session share the server's state")
    tool: str
    arguments: dict[str, Any]
    text: str = Field(description="what the model is shown of the result (mcprl.tools.ToolOutcome.text)")
    data_text: str | None = Field(
        default=None,
        description="the text the server wrote (ToolOutcome.data_text: its text blocks, no placeholder of ours for "
        "an image or a blob), where it differs from `text`",
    )
    structured: Any = None
    digest: str = Field(
        default="", description="a hash of the whole result as the server sent it, past where `text` is cut"
    )
    is_error: bool = False
    error_kind: str | None = None
    latency_s: float = 0.0
    writes: bool = Field(default=False, description="the tool may change the server's state (may_write)")
    sources: dict[str, str] = Field(
        default_factory=dict,
        description="argument -> where its value came from "
        "(an arm of mcprl.scenarios.values, or result:<call> for a value of this session's results)",
    )
    parents: list[int] = Field(default_factory=list, description="calls whose results gave argument values")
    reads_back: int | None = Field(
        default=None, description="the write call this call reads back: it repeats `repeats` after it"
    )
    repeats: int | None = Field(default=None, description="the earlier read of the same session this call repeats")

    @property
    def data(self) -> str:
        """The result as data: the text the server wrote (its text blocks and structured content), never a
        placeholder the client wrote for an image, audio or a blob; what grounding reads."""
        return self.text if self.data_text is None else self.data_text


class ToolReport(BaseModel):
    """How one tool fared while exploring."""

    calls: int = 0
    answered: int = 0
    distinct: int = Field(default=0, description="distinct answers")
    errors: dict[str, int] = Field(
        default_factory=dict, description="the commonest error texts (first line) and their counts"
    )
    sources: dict[str, int] = Field(default_factory=dict, description="argument sources drawn from, and how often")
    retired: str | None = Field(default=None, description="why it got no more calls")

    def line(self, name: str) -> str:
        errors = "; ".join(f"{e} (x{n})" if n > 1 else e for e, n in self.errors.items()) or "none"
        return (
            f"{name}: {self.calls} calls, {self.answered} answered; errors: {errors}; "
            f"argument sources tried: {', '.join(self.sources) or 'none'}"
        )


class Exploration(BaseModel):
    calls: list[ExploredCall] = Field(default_factory=list)
    skipped_tools: dict[str, str] = Field(default_factory=dict, description="tool -> why it was not called")
    hung_tools: list[str] = Field(default_factory=list)
    outlived: list[str] = Field(
        default_factory=list,
        description="the tools that may write, retired when the server's state outlived its process (a file of its "
        "own): a rollout must not call them either",
    )
    withheld: list[str] = Field(
        default_factory=list,
        description="on a server run on copies of the user's files, the tools that may write that no task uses and no "
        "rollout is offered: those retired when a write of theirs changed the files there (a task does not ask to "
        "change the user's repository or database), and those never seen answering (what they change is not known)",
    )
    handles: list[str] = Field(
        default_factory=list,
        description="parameters that take a value a call issues (the id of a session a load opened), which made-up "
        "values never were: a task says where it came from (the call before), never the value, another each session",
    )
    isolated: bool = Field(
        default=False, description="each session started from fresh server state (`is_isolated`): writes are its own"
    )
    private_home: bool = Field(
        default=False,
        description="the server keeps its state under its home folder: each session, a rollout's too, gets one of "
        "its own (`ServerSpec.private_home`), and the user's is never written",
    )
    # a parameter the server takes one value of (the repository its command line names): the
    # server's context, sent in every call, not a value a task states
    fixed: dict[str, Any] = Field(default_factory=dict, description="parameter name -> the one value it takes")
    tools: dict[str, ToolReport] = Field(default_factory=dict, description="tool -> how it fared")
    seconds: float = 0.0

    def answered(self) -> list[str]:
        """The tools that answered at least once without error, in the order first seen."""
        return list(dict.fromkeys(c.tool for c in self.calls if not c.is_error))

    def silent(self) -> list[str]:
        """One line per tool that was called and never answered: its calls, errors and the sources tried."""
        return [report.line(name) for name, report in self.tools.items() if report.calls and not report.answered]

    def summary(self) -> str:
        errors = sum(c.is_error for c in self.calls)
        chained = sum(bool(c.parents) and not c.is_error for c in self.calls)
        distinct = len({(c.tool, repr(sorted(c.arguments.items()))) for c in self.calls})
        line = (
            f"explored {len(self.calls)} calls ({distinct} distinct) in {self.seconds:.0f} s: "
            f"{len(self.calls) - errors} answered, "
            f"{errors} errors, {chained} chained; tools answering: {', '.join(self.answered()) or 'none'}"
        )
        if silent := [name for name, r in self.tools.items() if r.calls and not r.answered]:
            line += f"; never answered: {', '.join(silent)}"
        for why, tools in by_reason(self.skipped_tools).items():
            line += f"; not called: {', '.join(tools)} ({why})"
        return line
