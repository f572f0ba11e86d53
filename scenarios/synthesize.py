"""Synthesize scenarios (task inputs) for an MCP server from its tools, resources and prompts.

An LLM is asked for a few tasks per call, each with a difficulty 1-5 and the tools it expects
to use. Each call names the difficulties to write (the least represented so far, so the set
spreads over 1..5) and the tools no task uses yet. Bad output never crashes the run: the JSON
is dug out of any surrounding prose, invalid items are dropped, unknown tool names removed,
duplicates (scenarios.dedup) skipped, and a call that yields nothing new is retried; after
`max_attempts` such calls in a row (or `max_calls` in all) synthesis stops and the report
states the shortfall.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field, ValidationError, computed_field, field_validator

from mcprl.llm import LLMError, complete, extract_json
from mcprl.types import Message, Scenario, ToolSchema, content_hash
from scenarios.coverage import DIFFICULTIES, difficulty_histogram, tool_coverage
from scenarios.dedup import DEFAULT_THRESHOLD, Deduper

MAX_LISTED = 50  # resources / prompts shown to the generator; big servers list thousands
RECENT_SHOWN = 15  # accepted tasks shown back as "do not repeat"

_SYSTEM = """\
You write tasks for training an AI agent that can call the tools below. Each task is a \
realistic, self-contained request a user might send; the agent sees only the task text and \
the tools, and must be able to finish it by calling them. Be concrete: include the names, \
ids, numbers or other values the tools need (take them from the descriptions and resources \
where you can). Do not name the tools in the task or explain how to solve it.

Difficulty: 1 = one tool call; 2 = two calls, or one with careful arguments; 3 = a few calls \
whose results are combined; 4 = many calls with reasoning between them; 5 = long multi-step \
work across several tools.
{hint}
<tools>
{tools}
</tools>{extras}"""

DRAFTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "scenarios": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "task": {"type": "string"},
                    "difficulty": {"type": "integer", "minimum": 1, "maximum": 5},
                    "tools": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["task", "difficulty", "tools"],
            },
        }
    },
    "required": ["scenarios"],
}


class ScenarioDraft(BaseModel):
    """One item as the generator returns it."""

    task: str = Field(min_length=8)
    difficulty: int = Field(ge=1, le=5)
    tools: list[str] = Field(default_factory=list)

    @field_validator("task")
    @classmethod
    def _strip(cls, v: str) -> str:
        return v.strip()

    @field_validator("tools", mode="before")
    @classmethod
    def _one_tool(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v


class SynthesisReport(BaseModel):
    requested: int
    produced: int = 0
    calls: int = 0
    failed_calls: int = 0  # LLM errors, or replies that added nothing
    invalid_items: int = 0
    duplicates: int = 0
    unknown_tool_names: int = 0
    difficulty_histogram: dict[int, int] = Field(default_factory=dict)
    tool_coverage: dict[str, int] = Field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    problems: list[str] = Field(default_factory=list)  # why calls failed, most recent last

    @computed_field  # type: ignore[prop-decorator]
    @property
    def shortfall(self) -> int:
        return max(0, self.requested - self.produced)

    def summary(self) -> str:
        hist = " ".join(f"{d}:{c}" for d, c in self.difficulty_histogram.items())
        uncovered = [name for name, c in self.tool_coverage.items() if c == 0]
        lines = [
            (
                f"synthesized {self.produced}/{self.requested} scenarios in {self.calls} calls "
                f"({self.failed_calls} failed, {self.invalid_items} invalid items, {self.duplicates} duplicates dropped)"
            ),
            f"difficulty {hist}",
            "tools " + ", ".join(f"{name}:{c}" for name, c in self.tool_coverage.items()),
            f"generator cost ${self.cost_usd:.4f} ({self.prompt_tokens}+{self.completion_tokens} tokens)",
        ]
        if uncovered:
            lines.append(f"no scenario uses: {', '.join(uncovered)}")
        if self.shortfall:
            last = f"; last problem: {self.problems[-1]}" if self.problems else ""
            lines.append(f"SHORT by {self.shortfall}: the generator stopped yielding new valid tasks{last}")
        return "\n".join(lines)


class SynthesisResult(BaseModel):
    scenarios: list[Scenario]
    report: SynthesisReport


def _jsonable(item: Any) -> Any:
    return item.model_dump(mode="json", exclude_none=True) if isinstance(item, BaseModel) else item


def system_prompt(tools: Sequence[ToolSchema], task_hint: str | None, resources: Sequence[Any], prompts: Sequence[Any]) -> str:
    extras = ""
    if resources:
        extras += f"\n<resources>\n{json.dumps([_jsonable(r) for r in resources[:MAX_LISTED]], default=str)}\n</resources>"
    if prompts:
        extras += f"\n<prompts>\n{json.dumps([_jsonable(p) for p in prompts[:MAX_LISTED]], default=str)}\n</prompts>"
    hint = f"\nFocus on: {task_hint}\n" if task_hint else ""
    return _SYSTEM.format(hint=hint, tools=json.dumps(list(tools), ensure_ascii=False), extras=extras)


def target_difficulties(histogram: dict[int, int], k: int, rng: random.Random) -> list[int]:
    """k difficulties that bring `histogram` closest to even, ties broken by `rng`."""
    counts = {d: histogram.get(d, 0) for d in DIFFICULTIES}
    out = []
    for _ in range(k):
        low = min(counts.values())
        d = rng.choice([d for d in DIFFICULTIES if counts[d] == low])
        counts[d] += 1
        out.append(d)
    return sorted(out)


def batch_request(k: int, difficulties: list[int], uncovered: list[str], recent: list[str]) -> str:
    lines = [f"Write {k} new tasks, with these difficulties in order: {difficulties}."]
    if uncovered:
        lines.append(f"No task uses these tools yet; make some of the new ones need them: {', '.join(uncovered)}.")
    if recent:
        lines.append("Do not repeat or reword these existing tasks:\n" + "\n".join(f"- {t}" for t in recent))
    lines.append('Answer with {"scenarios": [{"task": ..., "difficulty": ..., "tools": [...]}, ...]}.')
    return "\n".join(lines)


def parse_drafts(text: str) -> tuple[list[ScenarioDraft], int]:
    """Valid items in a reply and how many were invalid. Raises ValueError if it has no JSON list of items."""
    data = extract_json(text)
    if isinstance(data, dict):
        data = data.get("scenarios", data.get("tasks", [data] if "task" in data else None))
    if not isinstance(data, list):
        raise ValueError("the reply's JSON holds no list of scenarios")
    drafts, invalid = [], 0
    for item in data:
        try:
            drafts.append(ScenarioDraft.model_validate(item))
        except ValidationError:
            invalid += 1
    return drafts, invalid


async def synthesize(
    tools: Sequence[ToolSchema],
    n: int,
    model: str = "local",
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    task_hint: str | None = None,
    resources: Sequence[Any] | None = None,
    prompts: Sequence[Any] | None = None,
    batch_size: int = 5,
    seed: int = 0,
    max_attempts: int = 3,
    max_calls: int | None = None,
    dedup_threshold: float = DEFAULT_THRESHOLD,
    temperature: float = 0.9,
    timeout: float = 300.0,
    num_retries: int = 2,
    retry_backoff_s: float = 1.0,
) -> SynthesisResult:
    """Up to `n` scenarios for `tools` (OpenAI function schemas), with provenance in
    `Scenario.metadata`. Returns fewer when the generator runs dry; see `report.shortfall`."""
    tool_names = [t["function"]["name"] for t in tools]
    system = system_prompt(tools, task_hint, resources or (), prompts or ())
    provenance = {
        "generator_model": model,
        "prompt_hash": content_hash(system),
        "tools_hash": content_hash(list(tools)),
        "seed": seed,
    }
    max_calls = max_calls if max_calls is not None else 2 * math.ceil(n / batch_size) + max_attempts
    rng = random.Random(seed)
    deduper = Deduper(dedup_threshold)
    report = SynthesisReport(requested=n)
    kept: list[Scenario] = []
    failures_in_a_row = 0

    while len(kept) < n and failures_in_a_row < max_attempts and report.calls < max_calls:
        k = min(batch_size, n - len(kept))
        uncovered = [name for name, c in tool_coverage(kept, tool_names).items() if c == 0][:k]
        messages: list[Message] = [
            {"role": "system", "content": system},
            {
                "role": "user",
                "content": batch_request(
                    k, target_difficulties(difficulty_histogram(kept), k, rng), uncovered, [s.task for s in kept[-RECENT_SHOWN:]]
                ),
            },
        ]
        report.calls += 1
        try:
            reply = await complete(
                model,
                messages,
                api_base=api_base,
                api_key=api_key,
                json_schema=DRAFTS_SCHEMA,
                temperature=temperature,
                max_tokens=300 * k + 200,
                timeout=timeout,
                num_retries=num_retries,
                retry_backoff_s=retry_backoff_s,
                seed=seed * 1000 + report.calls,
            )
        except LLMError as e:
            report.failed_calls += 1
            report.problems.append(str(e))
            failures_in_a_row += 1
            continue
        report.prompt_tokens += reply.prompt_tokens
        report.completion_tokens += reply.completion_tokens
        report.cost_usd += reply.cost_usd
        try:
            drafts, invalid = parse_drafts(reply.text)
        except ValueError as e:
            drafts, invalid = [], 0
            report.problems.append(f"call {report.calls}: {e}")
        report.invalid_items += invalid

        added = 0
        for draft in drafts:
            if len(kept) == n:
                break
            if deduper.duplicate_of(draft.task) is not None:
                report.duplicates += 1
                continue
            known = [name for name in dict.fromkeys(draft.tools) if name in tool_names]
            report.unknown_tool_names += len(set(draft.tools)) - len(known)
            kept.append(
                Scenario(
                    id=content_hash(draft.task)[:12],
                    task=draft.task,
                    difficulty=draft.difficulty,
                    tools=known,
                    metadata={**provenance, "created_at": datetime.now(UTC).isoformat(timespec="seconds")},
                )
            )
            added += 1
        if added:
            failures_in_a_row = 0
        else:
            report.failed_calls += 1
            failures_in_a_row += 1
            if drafts or invalid:
                report.problems.append(f"call {report.calls}: no new valid task ({invalid} invalid, rest duplicates)")

    report.produced = len(kept)
    report.difficulty_histogram = difficulty_histogram(kept)
    report.tool_coverage = tool_coverage(kept, tool_names)
    return SynthesisResult(scenarios=kept, report=report)
