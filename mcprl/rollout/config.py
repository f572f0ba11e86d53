"""How the agent is prompted and sampled (`[rollout]` in a run file): the same for a run's
training and its evaluation, whichever agent rolls out (`mcprl.rollout.agents`)."""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcprl.types import Message

DEFAULT_SYSTEM_PROMPT = (
    "You are an agent that solves the user's task with the tools you are given. "
    "Call a tool when you need information or need to act; when you have what you need, "
    "reply with the final answer as plain text."
)


class RolloutConfig(BaseModel):
    """How the agent is prompted and sampled: the same for a run's training and its evaluation."""

    model_config = ConfigDict(extra="forbid")

    # Which agent rolls out (mcprl.rollout.agents.load): every kind records the same tokens and metrics.
    agent: str = Field(
        default="plain",
        description="plain (the tool loop), langgraph (the prebuilt ReAct graph), "
        "module:function (your agent on the OpenAI SDK) or module:Class (a ToolAgent subclass)",
    )
    # The defaults are the settings measured best for the default model (SmolLM2-135M) on zero-data
    # runs; docs/benchmarks.md, "Defaults that learn", holds the runs that chose them.
    max_turns: int = Field(default=3, ge=1, description="assistant turns per episode")
    max_tokens: int = Field(
        default=64,
        ge=1,
        description="tokens per assistant turn (a run not given it raises it to fit its tasks' reference turns)",
    )
    # bounded as the OpenAI API, our endpoint and vLLM bound it: a value they refuse fails every request
    temperature: float = Field(
        default=0.7, ge=0, le=2, description="sampling temperature, training and evaluation (0-2)"
    )
    top_p: float = Field(
        default=1.0, gt=0, le=1, description="nucleus sampling: the smallest set of tokens with this much probability"
    )
    # Each rollout's requests carry a seed made of this one, the task, the rollout's place in its group and
    # the turn (`for_rollout`), so two runs that differ in one setting (a tool's description) draw alike.
    sampling_seed: int | None = Field(
        default=None, ge=0, description="seed every request's sampling, per task, rollout and turn (default: unseeded)"
    )
    # An episode past its time limit ends truncated: its complete turns so far are kept, scored and
    # trained like any others (mcprl.rollout.recording), the request under way is dropped.
    episode_timeout_s: float | None = Field(
        default=None, gt=0, description="seconds an episode may take before it ends truncated (default: no limit)"
    )
    system_prompt: str = Field(
        default=DEFAULT_SYSTEM_PROMPT, description="the policy's system prompt (a scenario's own wins)"
    )
    finish: Literal["text", "tool"] = Field(
        default="text", description="how the agent ends: a plain-text reply, or a call to a complete_task(answer) tool"
    )
    # Small models make no tool calls zero-shot. A demonstration shows that exchange (best: a task like
    # the real ones; a run settles it in mcprl.run.demonstration); without one given, it is made up from
    # the first tool's schema.
    demonstration: bool = Field(
        default=True, description="show a demonstration (a request and a tool-call reply) before the task"
    )
    demonstrations: list[list[Message]] | None = Field(
        default=None,
        description="the demonstrations, each a list of chat messages; a scenario is shown one, chosen by its id",
    )
    # Grammar-constrained tool calls (vLLM's structural_tag, which our endpoint speaks too): free
    # text, but a call once begun names an offered tool and its arguments validate against that
    # tool's input schema. A 135M policy otherwise writes arguments it saw elsewhere (another
    # tool's, the demonstration's) and the call fails before it can find anything (docs/benchmarks.md).
    constrain_tool_calls: bool = Field(
        default=True,
        description="hold the policy's tool calls to the offered tools' names and input schemas (grammar-constrained "
        "decoding)",
    )

    @property
    def calls_per_episode(self) -> int:
        """Sequential tool calls an episode has room for: a turn each, then one for the answer."""
        return max(1, self.max_turns - 1)

    def for_rollout(self, task_id: str, index: int) -> RolloutConfig:
        """The settings of rollout `index` of a group of task `task_id`: with a `sampling_seed`, one of its own
        (its requests add their turn to it)."""
        if self.sampling_seed is None:
            return self
        digest = hashlib.sha256(f"{self.sampling_seed}/{task_id}/{index}".encode()).digest()
        return self.model_copy(update={"sampling_seed": int.from_bytes(digest[:4], "big")})

    @model_validator(mode="after")
    def _langgraph_ends_on_text(self) -> RolloutConfig:
        if self.agent == "langgraph" and self.finish != "text":
            raise ValueError(
                'the langgraph agent ends on a text reply; set finish = "text" (complete_task is the plain loop\'s)'
            )
        return self
