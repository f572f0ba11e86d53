"""RULER: an LLM judge scores a group of trajectories relative to each other, 0..1.

GRPO only uses rewards relative to the group, and ranking attempts side by side is easier
and steadier for a judge than scoring one in isolation. The judge sees:

- the tools' schemas and the longest common message prefix (system prompt, task) once,
- each distinct remainder under an id, in a seeded shuffled order (mapped back afterwards),
  with identical trajectories shown once and given the same score,

and must answer `{"scores": [{"trajectory_id", "explanation", "score"}, ...]}`.

Scores must be in [0, 1], as the schema says: a reply with a score outside it (a judge grading
0-10 or in percent) is retried, never rescaled by a guess (a 0-10 judge whose best score is 1
cannot be told from a 0-1 judge). A reply with broken or truncated JSON, a score out of range, a
wrong number of scores, duplicate, missing or unknown ids is retried with the problem explained,
up to `max_retries` times; then the group is skipped with the reason
(`on_failure="skip"`) or JudgeError is raised (`"raise"`). Verdicts are cached on disk by a
hash of the judge model name, rubric, tools and trajectories (not the seed or api_base, which
do not change what is being judged), so re-scoring is free.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from mcprl.errors import first_problem
from mcprl.judges.base import JudgeError, zero_failed
from mcprl.judges.cache import VerdictCache
from mcprl.llm import LLMError, LLMReply, complete, extract_json, is_local
from mcprl.types import Message, Trajectory, TrajectoryGroup, content_hash

DEFAULT_RUBRIC = """\
- An attempt that accomplishes the task must score clearly higher than one that does not.
- Among attempts that accomplish it, prefer the more efficient one: fewer wasted or repeated \
tool calls, no detours, a direct and correct final answer.
- Give partial credit for real progress toward the goal (right tools, right arguments) even \
when the final answer is missing or wrong.
- Make score gaps reflect quality gaps: near-equal attempts get near-equal scores.
- Claims the tool results do not support (made-up data) are worse than admitting failure."""

_JUDGE_PROMPT = """\
You grade attempts by an AI agent. Every trajectory below was given the same task: it is in \
the shared <context> (or at the start of each trajectory when there is none). The agent could \
call the tools listed in <tools>; tool results appear as messages with role "tool".

Score every trajectory between 0 and 1, comparing them with each other, following this rubric:
{rubric}

Return one entry per trajectory id, each with a one-sentence explanation and its score."""

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "scores": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "trajectory_id": {"type": "string"},
                    "explanation": {"type": "string"},
                    "score": {"type": "number", "minimum": 0, "maximum": 1},
                },
                "required": ["trajectory_id", "explanation", "score"],
            },
        }
    },
    "required": ["scores"],
}
EXPLANATION_CHARS = 200
TOKENS_PER_VERDICT = 120  # an id, a short explanation and a score; bounds a call's max_tokens


def verdict_schema(ids: list[str], in_order: bool) -> dict[str, Any]:
    """VERDICT_SCHEMA for one group, sent as `response_format`: one entry per shown id with a
    short explanation. `in_order` (for a grammar-constrained judge, the embedded model) fixes
    the entries to the ids in order (`prefixItems` of `const`s), so it cannot skip or repeat one;
    others get the ids as an `enum`, which every provider's schema subset accepts."""
    item = VERDICT_SCHEMA["properties"]["scores"]["items"]
    properties = {**item["properties"], "explanation": {"type": "string", "maxLength": EXPLANATION_CHARS}}

    def entry(id_schema: dict[str, Any]) -> dict[str, Any]:
        return {**item, "properties": {**properties, "trajectory_id": id_schema}, "additionalProperties": False}

    scores: dict[str, Any] = {"type": "array", "minItems": len(ids), "maxItems": len(ids)}
    if in_order:
        scores |= {"prefixItems": [entry({"const": i}) for i in ids], "items": False}
    else:
        scores["items"] = entry({"enum": ids})
    return {**VERDICT_SCHEMA, "properties": {"scores": scores}, "additionalProperties": False}


class RulerScore(BaseModel):
    trajectory_id: str
    score: float
    explanation: str = ""

    @field_validator("trajectory_id", mode="before")
    @classmethod
    def _id_as_text(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) else v

    @field_validator("score")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("score must be a finite number")
        return v


class RulerVerdict(BaseModel):
    scores: list[RulerScore] = Field(min_length=1)


class InvalidVerdict(ValueError):
    """The judge's reply cannot be used; the message says why (and is shown to the judge on retry)."""


def common_prefix_len(message_lists: list[list[Message]]) -> int:
    """How many leading messages all lists share (0 for fewer than two lists)."""
    if len(message_lists) < 2:
        return 0
    n = 0
    for column in zip(*message_lists):
        if any(m != column[0] for m in column[1:]):
            break
        n += 1
    return n


def parse_verdict(text: str, ids: list[str], finish_reason: str = "stop") -> dict[str, RulerScore]:
    """Validate a reply against the schema and the ids shown; returns scores by id. Raises
    InvalidVerdict with the reason."""
    try:
        data = extract_json(text)
    except ValueError as e:
        cut = " (the reply was cut at max_tokens)" if finish_reason == "length" else ""
        raise InvalidVerdict(f"{e}{cut}") from None
    if isinstance(data, list):
        data = {"scores": data}
    try:
        verdict = RulerVerdict.model_validate(data)
    except ValidationError as e:
        raise InvalidVerdict(f"the JSON does not match the schema ({first_problem(e)})") from None
    got = [s.trajectory_id for s in verdict.scores]
    problems = []
    if len(got) != len(ids):
        problems.append(f"expected {len(ids)} scores, got {len(got)}")
    if dupes := sorted({i for i in got if got.count(i) > 1}):
        problems.append(f"duplicate ids {dupes}")
    if unknown := sorted(set(got) - set(ids)):
        problems.append(f"unknown ids {unknown}")
    if missing := [i for i in ids if i not in got]:
        problems.append(f"missing ids {missing}")
    if outside := [f"{s.score:g} for id {s.trajectory_id}" for s in verdict.scores if not 0 <= s.score <= 1]:
        problems.append(f"scores must be between 0 and 1, got {', '.join(outside)}")
    if problems:
        raise InvalidVerdict("; ".join(problems))
    return {s.trajectory_id: s for s in verdict.scores}


# What a RULER call records in group.metrics (summed over its attempts).
JUDGE_METRICS = (
    "judge_latency_s",
    "judge_prompt_tokens",
    "judge_completion_tokens",
    "judge_cost_usd",
    "judge_retries",
    "judge_cache_hit",
)


def _render(messages: list[Message]) -> str:
    return json.dumps(messages, ensure_ascii=False, default=str)


@dataclass
class RulerJudge:
    """RULER as a Judge. `cache_dir=None` disables the verdict cache."""

    judge_model: str
    rubric: str | None = None  # None: DEFAULT_RUBRIC
    api_base: str | None = None
    api_key: str | None = None
    on_failure: Literal["skip", "raise"] = "skip"
    cache_dir: str | Path | None = None
    max_retries: int = 2
    seed: int = 0
    temperature: float = 0.0
    max_tokens: int = 4096
    timeout: float = 120.0
    num_retries: int = 2  # HTTP-level retries per call (5xx, timeouts), inside mcprl.llm
    retry_backoff_s: float = 1.0
    name: str = "ruler"

    def __post_init__(self) -> None:
        self.rubric = self.rubric or DEFAULT_RUBRIC

    async def score_group(self, group: TrajectoryGroup) -> TrajectoryGroup:
        zero_failed(group)
        group.metrics.update(dict.fromkeys(JUDGE_METRICS, 0.0))  # a re-score reports only its own costs
        valid = group.valid
        if not valid:
            group.skipped = f"{self.name}: no valid trajectories to judge"
            return group

        # Identical trajectories are shown once and share a score.
        unique: dict[str, list[Message]] = {}
        for t in valid:
            unique.setdefault(content_hash(t.messages), t.messages)
        keys = list(unique)
        prefix_len = common_prefix_len(list(unique.values()))
        prefix = valid[0].messages[:prefix_len]
        remainders = {k: unique[k][prefix_len:] for k in keys}
        remainder_hashes = {content_hash(r) for r in remainders.values()}
        tools = next((t.tools for t in valid if t.tools), None)

        cache_key = content_hash(
            {
                "judge": self.judge_model,
                "rubric": self.rubric,
                "tools": tools,
                "prefix": prefix,
                "remainders": sorted(remainder_hashes),
                # verdicts cached before scores were checked against [0, 1] may hold a guessed rescale
                "scores": "0..1",
            }
        )
        cache = VerdictCache(self.cache_dir) if self.cache_dir is not None else None
        cached = cache.get(cache_key) if cache else None
        if cached is not None and set(cached.get("verdicts", ())) == remainder_hashes:
            group.metrics["judge_cache_hit"] = 1.0
            self._apply(valid, cached["verdicts"], prefix_len)
            return group

        order = keys[:]
        random.Random(f"{self.seed}:{sorted(remainder_hashes)}").shuffle(order)
        shown = {str(i): k for i, k in enumerate(order, start=1)}  # display id -> unique key
        messages = self._prompt(prefix, [(i, remainders[k]) for i, k in shown.items()], tools)

        reason = ""
        for attempt in range(self.max_retries + 1):
            try:
                reply = await complete(
                    self.judge_model,
                    messages,
                    api_base=self.api_base,
                    api_key=self.api_key,
                    json_schema=verdict_schema(list(shown), in_order=is_local(self.judge_model)),
                    temperature=self.temperature,
                    max_tokens=min(self.max_tokens, 50 + TOKENS_PER_VERDICT * len(shown)),
                    timeout=self.timeout,
                    num_retries=self.num_retries,
                    retry_backoff_s=self.retry_backoff_s,
                    seed=self.seed + attempt,
                )
            except LLMError as e:
                self._count(group, None, retried=attempt > 0)
                reason = f"judge call failed: {e}"
                break
            self._count(group, reply, retried=attempt > 0)
            try:
                by_id = parse_verdict(reply.text, list(shown), reply.finish_reason)
            except InvalidVerdict as e:
                reason = f"invalid verdict after {attempt + 1} attempt(s): {e}"
                messages = [
                    *messages,
                    {"role": "assistant", "content": reply.text},
                    {
                        "role": "user",
                        "content": f"That reply was not usable: {e}. Reply again with only the JSON object, "
                        f"with exactly one score between 0 and 1 for each of the ids {', '.join(shown)}.",
                    },
                ]
                continue
            verdicts = {
                content_hash(remainders[shown[i]]): {"score": s.score, "explanation": s.explanation}
                for i, s in by_id.items()
            }
            if cache:
                cache.put(cache_key, {"verdicts": verdicts})
            self._apply(valid, verdicts, prefix_len)
            return group

        where = f" (scenario {group.scenario.id})" if group.scenario else ""
        message = f"{self.name}{where}: {reason}"
        if self.on_failure == "raise":
            raise JudgeError(message)
        group.skipped = message
        return group

    def _prompt(self, prefix: list[Message], shown: list[tuple[str, list[Message]]], tools: Any) -> list[Message]:
        parts = []
        if tools:
            parts.append(f"<tools>\n{json.dumps(tools, ensure_ascii=False)}\n</tools>")
        if prefix:
            parts.append(f"<context>\n{_render(prefix)}\n</context>")
        parts.append("Trajectories:")
        parts += [f'<trajectory id="{i}">\n{_render(remainder)}\n</trajectory>' for i, remainder in shown]
        return [
            {"role": "system", "content": _JUDGE_PROMPT.format(rubric=self.rubric)},
            {"role": "user", "content": "\n\n".join(parts)},
        ]

    def _count(self, group: TrajectoryGroup, reply: LLMReply | None, retried: bool) -> None:
        m = group.metrics
        m["judge_retries"] += retried + (reply.attempts - 1 if reply else 0)
        if reply is not None:
            m["judge_latency_s"] += reply.latency_s
            m["judge_prompt_tokens"] += reply.prompt_tokens
            m["judge_completion_tokens"] += reply.completion_tokens
            m["judge_cost_usd"] += reply.cost_usd

    def _apply(self, valid: list[Trajectory], verdicts: dict[str, Any], prefix_len: int) -> None:
        """Give each trajectory the verdict on its remainder (verdicts are keyed by its hash)."""
        for t in valid:
            verdict = verdicts[content_hash(t.messages[prefix_len:])]
            t.reward = verdict["score"]
            t.metrics[self.name] = verdict["score"]
            t.metadata[f"{self.name}_explanation"] = verdict["explanation"]
            t.log(f"{self.name}: {verdict['score']:.2f} {verdict['explanation']}")


async def ruler_score_group(
    group: TrajectoryGroup,
    judge_model: str,
    *,
    rubric: str | None = None,
    api_base: str | None = None,
    api_key: str | None = None,
    on_failure: Literal["skip", "raise"] = "skip",
    cache_dir: str | Path | None = None,
    max_retries: int = 2,
    seed: int = 0,
    **options: Any,
) -> TrajectoryGroup:
    """Score `group` in place with RULER and return it (see RulerJudge for the other `options`)."""
    judge = RulerJudge(
        judge_model,
        rubric=rubric,
        api_base=api_base,
        api_key=api_key,
        on_failure=on_failure,
        cache_dir=cache_dir,
        max_retries=max_retries,
        seed=seed,
        **options,
    )
    return await judge.score_group(group)
