"""The core types every stage exchanges: Scenario -> Trajectory -> TrajectoryGroup.

All of them are pydantic models and round-trip through JSONL (`dump_jsonl` / `load_jsonl`).
Messages use OpenAI's chat format (dicts with role/content/tool_calls/tool_call_id).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
)

from mcprl.checks import KINDS, Check
from mcprl.errors import UserError, first_problem
from mcprl.paths import replace_text

Message = dict[str, Any]
ToolSchema = dict[str, Any]  # {"type": "function", "function": {"name", "description", "parameters"}}

# The one definition of success: a verified score (else the reward) at or above the threshold solved its task.
# This is only the default of `--success-threshold` (mcprl.train.config.TrainConfig.success_threshold); the
# run passes the configured value to everything that counts successes (the success_rate metric, solved and
# unsolved groups, the judges' all-or-nothing, the usage report, the warm-up's filter).
SUCCESS_THRESHOLD = 0.999


def _new_id() -> str:
    return uuid.uuid4().hex[:12]


class ReferenceCall(BaseModel):
    """One call of a task's reference chain: a call known to lead to its answer (a grounded task's,
    recorded while exploring and replayed before use), what it answered, and where each argument's
    value came from (mcprl.scenarios.values' sources, `result:N` for the chain's own earlier call)."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str = ""
    writes: bool = Field(default=False, description="the tool may change the server's state")
    sources: dict[str, str] = Field(default_factory=dict)


class Scenario(BaseModel):
    """One task input. `answer`/`check` carry ground truth when the task is verifiable; `reference`,
    the calls that solve it where they are known."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=_new_id)
    task: str
    system_prompt: str | None = None
    difficulty: int | None = Field(default=None, ge=1, le=5)
    answer: Any = None
    # A verifiable check (mcprl.checks), written as {"kind": "exact", "value": "42"} or
    # {"kind": "server", "server": "inventory", ...}; the verify judge scores by it (mcprl.judges.verify).
    check: Check | None = None
    tools: list[str] = Field(default_factory=list, description="tools the task is expected to use")
    read_back: dict[str, Any] | None = Field(
        default=None,
        description='{"tool": ..., "arguments": {...}}: a call made in the rollout\'s own session after the '
        'episode, whose result a check `"on": "read_back"` scores (a task that changes state)',
    )
    reference: list[ReferenceCall] = Field(
        default_factory=list, description="calls that solve the task, in order (grounded tasks: replayed before use)"
    )
    prepare: list[ReferenceCall] = Field(
        default_factory=list,
        description="calls the environment makes in the rollout's own session before the episode, not the policy: "
        "the state the task is asked in (a note added, for a task that asks what the notes say)",
    )
    split: Literal["train", "val"] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("check", mode="wrap")
    @classmethod
    def _valid_check(cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Check | None:
        """A check that is none of the kinds, or not one's shape, is the user's to fix: a UserError naming the
        scenario (and, read from a file, the file and line: `load_jsonl`)."""
        try:
            return handler(value)
        except ValidationError as e:
            raise UserError(
                f"scenario {info.data.get('id', '?')}: invalid check {value!r} ({first_problem(e)}); "
                f"kinds: {', '.join(KINDS)}"
            ) from None


class Generation(BaseModel):
    """One assistant turn sampled from the policy, with the exact tokens that were sampled.

    `logprobs[i]` is the log-probability of `completion_token_ids[i]` under the policy's
    distribution at the sampling settings: softmax(logits / temperature), renormalised over the
    tokens the truncations keep (min_p, then top_k, then top_p; vLLM's `processed_logprobs`; see
    `mcprl.serving.logits.truncation_cut`). The trainer scores the tokens under the same
    distribution, so the GRPO ratio starts at 1 on-policy. A greedy turn (temperature 0) records,
    and is trained on, its logprobs at temperature 1 without truncation (a point mass has no useful
    gradient; vLLM records the same). The defaults (1, 1, 0, 0) are right for trajectories saved
    before these fields existed, whose logprobs were recorded at temperature 1 whatever the
    sampling temperature.

    `constrained`: the turn was sampled under a grammar (a structured `response_format`). Our
    engine records the policy's own unmasked logprobs then (`mcprl.serving.sampler`), vLLM masked
    ones, which the trainer does not use: on the GPU runtime it computes these turns' old-policy
    logprobs itself (`GRPOTrainer.step`, `rescore_constrained`).
    `written`: not sampled but written by the run (a grounded task's reference chain given to a
    group no rollout solved, mcprl.run.runner); `logprobs` are then placeholders and the trainer scores
    these tokens itself before the update, as the policy that would have had to sample them.
    `message_index` points at the assistant message in `Trajectory.messages` this generation produced.
    `model` is the served name that sampled it (`NAME@STEP`: the policy version); `replica`, the
    policy replica that answered, when the policy is served by several (mcprl.cluster.router).
    """

    # Never empty: without the prompt, the first completion token would be trained from its own position.
    prompt_token_ids: list[int] = Field(min_length=1)
    completion_token_ids: list[int]
    logprobs: list[float]
    temperature: float = Field(default=1.0, ge=0)
    top_p: float = Field(default=1.0, gt=0, le=1)
    top_k: int = Field(default=0, ge=-1, description="0 or -1: no top-k")
    min_p: float = Field(default=0.0, ge=0, le=1)
    constrained: bool = False
    written: bool = False
    model: str = ""
    replica: str | None = None
    finish_reason: str = "stop"
    message_index: int = -1


class Trajectory(BaseModel):
    id: str = Field(default_factory=_new_id)
    messages: list[Message] = Field(default_factory=list)
    tools: list[ToolSchema] | None = None
    generations: list[Generation] = Field(default_factory=list)
    reward: float = 0.0
    metrics: dict[str, float] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    logs: list[str] = Field(default_factory=list)
    # Set when the rollout failed (server died, timeout...): the reason, and the trajectory
    # is kept for inspection but never trained on.
    error: str | None = None
    scenario_id: str | None = None
    # The training step whose adapter sampled it (served as NAME@STEP), set by the training run;
    # the asynchronous pipeline trains it at a later step s only while s - policy_version <= K.
    policy_version: int | None = None
    # Not a rollout: the run wrote the messages from this index on (a grounded task's reference chain,
    # given to a group no rollout solved, mcprl.run.runner); the trainer tokenizes them (Generation.written).
    written_from: int | None = None

    def log(self, line: str) -> None:
        self.logs.append(line)

    def task_index(self) -> int:
        """Where the task is: the last user message (a demonstration's come before it; tool results are `tool`
        messages), -1 where there is none."""
        return max((i for i, m in enumerate(self.messages) if m.get("role") == "user"), default=-1)

    def agent_messages(self) -> list[Message]:
        """The messages after the task: what the agent did, without the system prompt and the demonstration
        before it, whose calls, results and answer are not the agent's."""
        return self.messages[self.task_index() + 1 :]

    def final_answer(self) -> str:
        """The answer the agent gave: what it passed to a finishing tool, else the content of
        its last assistant message (empty when there is none)."""
        if "final_answer" in self.metadata:
            return str(self.metadata["final_answer"])
        for m in reversed(self.agent_messages()):
            if m.get("role") == "assistant":
                return str(m.get("content") or "")
        return ""


class TrajectoryGroup(BaseModel):
    """Rollouts of the same scenario: the unit GRPO normalises advantages over."""

    trajectories: list[Trajectory] = Field(default_factory=list)
    exceptions: list[str] = Field(default_factory=list)
    scenario: Scenario | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    # Set by a judge that could not score the group: the group is not trained on.
    skipped: str | None = None

    @property
    def valid(self) -> list[Trajectory]:
        return [t for t in self.trajectories if t.error is None]

    def rewards(self) -> list[float]:
        return [t.reward for t in self.valid]


M = TypeVar("M", bound=BaseModel)


def dump_jsonl(items: Iterable[BaseModel], path: str | Path, append: bool = False) -> Path:
    """Write `items` one per line; a whole file is replaced whole (a killed run leaves the old one)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(item.model_dump_json() + "\n" for item in items)
    if append:
        with path.open("a") as f:
            f.write(text)
    else:
        replace_text(path, text)
    return path


def load_jsonl(path: str | Path, cls: type[M]) -> list[M]:
    """Load one model per line; a malformed line is a UserError naming file and line."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file; check the path")
    out: list[M] = []
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(cls.model_validate_json(line))
        except ValidationError as e:
            raise UserError(
                f"{path}:{n}: not a valid {cls.__name__} ({first_problem(e, whole='line')}); fix or delete that line"
            ) from None
        except UserError as e:  # a scenario's invalid check (Scenario.check)
            raise UserError(f"{path}:{n}: {e}") from None
    return out


def content_hash(obj: Any) -> str:
    """Stable short hash of any JSON-able value (tool lists, prompts, verdict cache keys)."""
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def content_text(content: Any) -> str:
    """OpenAI content (a string or a list of parts) as text."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def message_key(message: Message) -> str:
    """What identifies an assistant message across re-serialisation by clients: its text and its
    calls' names and parsed arguments. The endpoint splices a reply's sampled tokens back in by it
    (serving/prompts.py), and the recorder (recording.py) finds the reply's generation by it."""
    calls = []
    for tc in message.get("tool_calls") or []:
        fn = tc.get("function", tc)
        args = fn.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                pass
        calls.append([fn.get("name"), args])
    return json.dumps([(message.get("content") or "").strip(), calls], sort_keys=True, ensure_ascii=False)
