"""Synthesize scenarios (task inputs) for an MCP server from its tools, resources and prompts.

An LLM is asked for a few tasks per call (one for the embedded `local` model), each with a
difficulty 1-5 and the tools it expects to use. Each call names the difficulties to write (the
least represented so far, so the set spreads over 1..5) and the tools the fewest tasks use, so
consecutive calls differ and a small model does not write the same task again. The schema goes
as `response_format` (mcprl.llm): its tool names are an `enum` of the offered tools and the task
length is bounded, so a grammar-constrained model can only write a usable item. Bad output
never crashes the run: the JSON is dug out of any surrounding prose, invalid items are dropped,
unknown tool names removed, duplicates (mcprl.scenarios.dedup) skipped, and a call that yields nothing
new is retried; after `max_attempts` such calls in a row (`report.gave_up`) or `max_calls` in
all, synthesis stops and the report states the shortfall.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import anyio
from pydantic import BaseModel, Field, ValidationError, computed_field, field_validator

from mcprl.llm import LLMError, LLMReply, complete, extract_json, is_local, stronger_model_fix
from mcprl.scenarios.coverage import DIFFICULTIES, difficulty_histogram, tool_coverage
from mcprl.scenarios.dedup import DEFAULT_THRESHOLD, Deduper
from mcprl.types import Message, Scenario, ToolSchema, content_hash

MAX_LISTED = 50  # resources / prompts shown to the generator; big servers list thousands
RECENT_SHOWN = 15  # accepted tasks shown back as "do not repeat"
TASK_CHARS = (12, 300)  # bounds on a task's length, in the schema: a grammar keeps a small model inside them
TOOLS_PER_TASK = 3
LOCAL_TIMEOUT_S = 300.0

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


def drafts_schema(tool_names: Sequence[str], k: int, difficulties: Sequence[int] = DIFFICULTIES) -> dict[str, Any]:
    """The reply's schema: up to `k` items, each naming offered tools and one of the
    `difficulties` asked for (a small model left to choose writes 1 every time)."""
    item = {
        "type": "object",
        "properties": {
            "tools": {
                "type": "array",
                "items": {"enum": list(tool_names)},
                "minItems": 1,
                "maxItems": min(TOOLS_PER_TASK, len(tool_names)),
            },
            "task": {"type": "string", "minLength": TASK_CHARS[0], "maxLength": TASK_CHARS[1]},
            "difficulty": {"enum": sorted(set(difficulties))},
        },
        "required": ["tools", "task", "difficulty"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"scenarios": {"type": "array", "items": item, "minItems": 1, "maxItems": k}},
        "required": ["scenarios"],
        "additionalProperties": False,
    }


class ScenarioDraft(BaseModel):
    """One item as the generator returns it."""

    # (shorter than the schema's bound: a draft that reaches it was cut there by the grammar mid-sentence, a small
    # model rambling on, "... but it is 0.1.0 and above. can be")
    task: str = Field(min_length=8, max_length=TASK_CHARS[1] - 1)
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
    gave_up: bool = False  # stopped after `max_attempts` calls in a row that added nothing

    def failure(self, model: str, flag: str) -> str:
        """One line: why synthesis came up short, and the fix (`flag` is the CLI's model option)."""
        last = f" (last problem: {self.problems[-1]})" if self.problems else ""
        why = "calls in a row added no new valid task" if self.gave_up else "calls were used up"
        return (
            f"{model} wrote {self.produced} of the {self.requested} scenarios asked for: {self.failed_calls} of "
            f"{self.calls} generator {why}{last}; {stronger_model_fix(flag)}"
        )

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
                f"({self.failed_calls} failed, {self.invalid_items} invalid items, {self.duplicates} duplicates "
                "dropped)"
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


def system_prompt(
    tools: Sequence[ToolSchema], task_hint: str | None, resources: Sequence[Any], prompts: Sequence[Any]
) -> str:
    extras = ""
    if resources:
        extras += (
            f"\n<resources>\n{json.dumps([_jsonable(r) for r in resources[:MAX_LISTED]], default=str)}\n</resources>"
        )
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


def focus_tools(coverage: dict[str, int], k: int, rng: random.Random) -> list[str]:
    """The `k` tools the fewest tasks use so far (ties in `rng` order)."""
    names = list(coverage)
    rng.shuffle(names)
    return sorted(names, key=lambda name: coverage[name])[:k]


def batch_request(k: int, difficulties: list[int], focus: list[str], uncovered: bool, recent: list[str]) -> str:
    lines = [f"Write {k} new tasks, with these difficulties in order: {difficulties}."]
    if uncovered:
        lines.append(f"No task uses these tools yet; make some of the new ones need them: {', '.join(focus)}.")
    elif focus:
        lines.append(f"Make the new ones need these tools: {', '.join(focus)}.")
    if recent:
        lines.append("Do not repeat or reword these existing tasks:\n" + "\n".join(f"- {t}" for t in recent))
    lines.append('Answer with {"scenarios": [{"tools": [...], "task": ..., "difficulty": ...}, ...]}.')
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
    batch_size: int | None = None,
    concurrency: int | None = None,
    seed: int = 0,
    max_attempts: int = 4,
    max_calls: int | None = None,
    dedup_threshold: float = DEFAULT_THRESHOLD,
    temperature: float = 0.9,
    timeout: float | None = None,
    num_retries: int = 2,
    retry_backoff_s: float = 1.0,
    say: Callable[[str], None] | None = None,
) -> SynthesisResult:
    """Up to `n` scenarios for `tools` (OpenAI function schemas), with provenance in
    `Scenario.metadata`. Returns fewer when the generator runs dry; see `report.shortfall`.

    `batch_size` tasks per call (default 1 for `local`, whose 135M model repeats itself within
    a reply, else 5), `concurrency` calls at once (default 4 for `local`, whose endpoint decodes
    them as one batch, else 1); `say` gets one line per call."""
    tool_names = [t["function"]["name"] for t in tools]
    batch_size = batch_size or (1 if is_local(model) else 5)
    concurrency = concurrency or (4 if is_local(model) else 1)
    # max_tokens bounds a call; a busy 2-core CPU can still take minutes over a round of 4
    timeout = timeout or (LOCAL_TIMEOUT_S if is_local(model) else 120.0)
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

    async def call(
        i: int, k: int, wanted: list[int], messages: list[Message], replies: list[LLMReply | LLMError]
    ) -> None:
        try:
            replies[i] = await complete(
                model,
                messages,
                api_base=api_base,
                api_key=api_key,
                json_schema=drafts_schema(tool_names, k, wanted),
                temperature=temperature,
                max_tokens=150 * k + 100,
                timeout=timeout,
                num_retries=num_retries,
                retry_backoff_s=retry_backoff_s,
                seed=seed * 1000 + report.calls + i + 1,
            )
        except LLMError as e:
            replies[i] = e

    while len(kept) < n and failures_in_a_row < max_attempts and report.calls < max_calls:
        # A round of calls at once (our endpoint batches them), each for other tools and difficulties.
        sizes: list[int] = []
        while sum(sizes) < n - len(kept) and len(sizes) < min(concurrency, max_calls - report.calls):
            sizes.append(min(batch_size, n - len(kept) - sum(sizes)))
        coverage = tool_coverage(kept, tool_names)
        focus = focus_tools(coverage, sum(sizes), rng)
        difficulties = target_difficulties(difficulty_histogram(kept), sum(sizes), rng)
        rng.shuffle(difficulties)
        recent = [s.task for s in kept[-RECENT_SHOWN:]]
        round_calls, offset = [], 0
        for k in sizes:
            names = list(dict.fromkeys(focus[(offset + j) % len(focus)] for j in range(k)))
            wanted = sorted(difficulties[offset : offset + k])
            request = batch_request(k, wanted, names, coverage[names[0]] == 0, recent)
            round_calls.append(
                (k, wanted, [{"role": "system", "content": system}, {"role": "user", "content": request}])
            )
            offset += k
        replies: list[LLMReply | LLMError] = [LLMError("not asked")] * len(sizes)
        async with anyio.create_task_group() as tg:
            for i, (k, wanted, messages) in enumerate(round_calls):
                tg.start_soon(call, i, k, wanted, messages, replies)
        for reply in replies:
            if len(kept) == n:
                break
            report.calls += 1
            if isinstance(reply, LLMError):
                report.failed_calls += 1
                report.problems.append(str(reply))
                failures_in_a_row += 1
                if say:
                    say(f"generator call {report.calls}: failed: {reply}")
                continue
            report.prompt_tokens += reply.prompt_tokens
            report.completion_tokens += reply.completion_tokens
            report.cost_usd += reply.cost_usd
            parse_problem = False
            try:
                drafts, invalid = parse_drafts(reply.text)
            except ValueError as e:
                drafts, invalid, parse_problem = [], 0, True
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
                if not parse_problem:
                    report.problems.append(
                        f"call {report.calls}: no new valid task ({invalid} invalid, {len(drafts)} duplicates)"
                    )
            if say:
                outcome = f"+{added}" if added else f"nothing new ({report.problems[-1]})"
                say(
                    f"generator call {report.calls}: {outcome}, {len(kept)}/{n} scenarios, "
                    f"{reply.latency_s:.1f}s for {reply.completion_tokens} tokens"
                )

    report.gave_up = len(kept) < n and failures_in_a_row >= max_attempts
    report.produced = len(kept)
    report.difficulty_histogram = difficulty_histogram(kept)
    report.tool_coverage = tool_coverage(kept, tool_names)
    return SynthesisResult(scenarios=kept, report=report)
