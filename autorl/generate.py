"""Generate what a training run needs from a one-line task description: a system prompt for the
policy, N diverse inputs, and a RULER rubric.

Every call asks for JSON matching a small, bounded schema (`mcprl.llm.complete_json`: sent as
`response_format` where the model takes it, which the embedded model needs). A reply without
it (prose, a truncated object, the wrong shape) is shown back to the generator with the problem
and asked again; inputs come a few per call (one for `local`), spread over difficulties 1..5,
deduplicated (mcprl.scenarios.dedup) and checked against the recent ones. A generator that never gets it right ends in a
one-line UserError naming the problem, never in an empty run. With an MCP server's tools, inputs are tasks that need
them (mcprl.scenarios.synthesize, steered by the description).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mcprl.errors import UserError
from mcprl.llm import GenerationFailed, LLMReply, complete_json, is_local, stronger_model_fix
from mcprl.scenarios.coverage import difficulty_histogram
from mcprl.scenarios.dedup import Deduper
from mcprl.scenarios.synthesize import RECENT_SHOWN, synthesize, target_difficulties
from mcprl.types import Scenario, ToolSchema, content_hash

STRONGER = stronger_model_fix("--gen-model")
SHOWN_CHARS = 200  # of each recent input shown back as "do not repeat"

_SYSTEM_PROMPT_REQUEST = """\
Write the system prompt for an AI assistant whose whole job is this task:
<task>
{task}
</task>
{tools}
The system prompt is all the assistant is told; then each user message is one input of the \
task. Say what the inputs are, what to produce, in what format and length, and how to handle \
unclear, incomplete or unusual inputs. Address the assistant as "you". No placeholders, no \
examples, under 150 words.{finish}"""

_TOOLS = """
The assistant can call these tools (OpenAI function schemas); the prompt should say when to use them:
<tools>
{tools}
</tools>
"""

_FINISH_WITH_TOOLS = " Tell it to reply with the final answer as plain text once it has what it needs."

_INPUTS_SYSTEM = """\
You write inputs for training an AI assistant on this task:
<task>
{task}
</task>
Each input is exactly what the assistant receives as the user message: the material the task \
works on (for example the email, the text or the question itself), never instructions about \
the task and never an answer. Make them realistic and varied: different topics, people, \
tones, formats and lengths (from a single line to several paragraphs, as real inputs would \
be), and mix ordinary inputs with edge cases: ambiguous, incomplete, off-topic, very short or \
very long, or tricky in a way a careless assistant would get wrong.

Difficulty: 1 = short and ordinary; 2 = ordinary but longer or less tidy; 3 = has one \
complication; 4 = several complications or misleading details; 5 = a hard edge case."""

_RUBRIC_REQUEST = """\
Write the rubric for a judge who compares several attempts by an AI assistant at the same \
input side by side and scores each from 0 to 1. The assistant's task:
<task>
{task}
</task>
Give 4 to 8 criteria specific to this task, each one sentence a judge can check: what a \
correct output must contain, its required format and length, what makes one attempt better \
than another, and which mistakes cost the most (for example invented facts, missing key \
information, ignoring the format)."""


def _object(**properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


SYSTEM_PROMPT_SCHEMA = _object(system_prompt={"type": "string", "minLength": 20, "maxLength": 1000})

INPUT_CHARS = 1000  # a grammar keeps the embedded model's inputs (and its calls) this short


def inputs_schema(k: int) -> dict[str, Any]:
    item = _object(
        difficulty={"type": "integer", "minimum": 1, "maximum": 5},
        text={"type": "string", "minLength": 1, "maxLength": INPUT_CHARS},
    )
    return _object(inputs={"type": "array", "items": item, "minItems": 1, "maxItems": k})


RUBRIC_SCHEMA = _object(
    criteria={
        "type": "array",
        "items": {"type": "string", "minLength": 8, "maxLength": 200},
        "minItems": 2,
        "maxItems": 8,
    }
)


class SystemPromptReply(BaseModel):
    model_config = ConfigDict(str_strip_whitespace=True)

    system_prompt: str = Field(min_length=20)


class InputDraft(BaseModel):
    model_config = ConfigDict(str_strip_whitespace=True)

    text: str = Field(min_length=1)
    difficulty: int = Field(ge=1, le=5)


class RubricReply(BaseModel):
    criteria: list[str]

    @field_validator("criteria")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        criteria = list(dict.fromkeys(c.strip().lstrip("-* ").strip() for c in v if c.strip("-* \n")))
        if len(criteria) < 2:
            raise ValueError(f"needs at least 2 distinct criteria, got {len(criteria)}")
        return criteria


def call_lines(say: Callable[[str], None] | None, what: str) -> Callable[[LLMReply, str | None], None] | None:
    """An `on_reply` for complete_json that says one line per generator call."""
    if say is None:
        return None

    def on_reply(reply: LLMReply, problem: str | None) -> None:
        say(f"generator call ({what}): {'unusable: ' + problem if problem else 'ok'}, {reply.latency_s:.1f}s")

    return on_reply


async def generate_system_prompt(
    task: str,
    model: str,
    *,
    api_base: str | None = None,
    tools: Sequence[ToolSchema] | None = None,
    attempts: int = 3,
    seed: int = 0,
    say: Callable[[str], None] | None = None,
) -> str:
    """A system prompt for a policy doing `task` (using `tools` when given)."""
    shown = _TOOLS.format(tools=json.dumps(list(tools), ensure_ascii=False)) if tools else ""
    request = _SYSTEM_PROMPT_REQUEST.format(task=task, tools=shown, finish=_FINISH_WITH_TOOLS if tools else "")
    try:
        reply = await complete_json(
            model,
            [{"role": "user", "content": request}],
            SYSTEM_PROMPT_SCHEMA,
            SystemPromptReply.model_validate,
            api_base=api_base,
            attempts=attempts,
            temperature=0.3,
            max_tokens=400,
            seed=seed,
            on_reply=call_lines(say, "system prompt"),
        )
    except GenerationFailed as e:
        raise UserError(
            f"{model} gave no usable system prompt in {attempts} tries (last problem: {e}); {STRONGER}"
        ) from None
    return reply.system_prompt


async def generate_rubric(
    task: str,
    model: str,
    *,
    api_base: str | None = None,
    attempts: int = 3,
    seed: int = 0,
    say: Callable[[str], None] | None = None,
) -> str:
    """A RULER rubric for `task`: the task, then the generated criteria as a markdown list."""
    try:
        reply = await complete_json(
            model,
            [{"role": "user", "content": _RUBRIC_REQUEST.format(task=task)}],
            RUBRIC_SCHEMA,
            RubricReply.model_validate,
            api_base=api_base,
            attempts=attempts,
            temperature=0.3,
            max_tokens=600,
            seed=seed,
            on_reply=call_lines(say, "rubric"),
        )
    except GenerationFailed as e:
        raise UserError(f"{model} gave no usable rubric in {attempts} tries (last problem: {e}); {STRONGER}") from None
    return f"The assistant's task: {task}\n\n" + "\n".join(f"- {c}" for c in reply.criteria) + "\n"


def parse_inputs(data: Any) -> list[InputDraft]:
    """The valid items of an inputs reply (invalid ones dropped); ValueError when there are none."""
    items = data.get("inputs") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError('the JSON holds no "inputs" list')
    drafts = []
    for item in items:
        try:
            drafts.append(InputDraft.model_validate(item))
        except ValidationError:
            continue
    if not drafts:
        raise ValueError(f'none of the {len(items)} items has a non-empty "text" and a "difficulty" from 1 to 5')
    return drafts


def inputs_request(k: int, difficulties: list[int], recent: list[str]) -> str:
    lines = [f"Write {k} new inputs, with these difficulties in order: {difficulties}."]
    if recent:
        shown = (
            json.dumps(t if len(t) <= SHOWN_CHARS else t[:SHOWN_CHARS] + "...", ensure_ascii=False) for t in recent
        )
        lines.append("Do not repeat or reword these existing inputs:\n" + "\n".join(f"- {t}" for t in shown))
    lines.append('Answer with {"inputs": [{"difficulty": ..., "text": ...}, ...]}.')
    return "\n".join(lines)


def enough(inputs: list[Scenario], n: int, model: str, problem: str | None) -> list[Scenario]:
    """`inputs` if they are at least half of the `n` asked for (and two: a train and a val one);
    fewer means the generator is not up to the task, a UserError."""
    if len(inputs) >= max(2, math.ceil(n / 2)):
        return inputs
    why = f" (last problem: {problem})" if problem else ""
    raise UserError(
        f"{model} gave only {len(inputs)} distinct usable inputs of the {n} asked for{why}; "
        f"{STRONGER}, or ask for fewer with -n"
    )


async def generate_inputs(
    task: str,
    n: int,
    model: str,
    *,
    api_base: str | None = None,
    tools: Sequence[ToolSchema] | None = None,
    seed: int = 0,
    batch_size: int | None = None,
    max_attempts: int = 4,
    max_calls: int | None = None,
    say: Callable[[str], None] | None = None,
) -> list[Scenario]:
    """Up to `n` distinct inputs for `task`, `batch_size` per call (default 1 for `local`, else
    5). Generation stops after `max_attempts` calls in a row that add nothing (or `max_calls`
    in all); see `enough`. `say` gets one line per generator call."""
    if tools:
        result = await synthesize(
            tools,
            n,
            model,
            api_base=api_base,
            task_hint=task,
            seed=seed,
            batch_size=batch_size,
            max_attempts=max_attempts,
            max_calls=max_calls,
            say=say,
        )
        return enough(result.scenarios, n, model, result.report.problems[-1] if result.report.problems else None)

    batch_size = batch_size or (1 if is_local(model) else 5)
    system = _INPUTS_SYSTEM.format(task=task)
    provenance = {"generator_model": model, "prompt_hash": content_hash(system), "seed": seed}
    max_calls = max_calls if max_calls is not None else 2 * math.ceil(n / batch_size) + max_attempts
    rng = random.Random(seed)
    deduper = Deduper()
    kept: list[Scenario] = []
    problem: str | None = None
    calls = failures_in_a_row = 0
    while len(kept) < n and failures_in_a_row < max_attempts and calls < max_calls:
        k = min(batch_size, n - len(kept))
        request = inputs_request(
            k, target_difficulties(difficulty_histogram(kept), k, rng), [s.task for s in kept[-RECENT_SHOWN:]]
        )
        calls += 1
        try:
            drafts = await complete_json(
                model,
                [{"role": "system", "content": system}, {"role": "user", "content": request}],
                inputs_schema(k),
                parse_inputs,
                api_base=api_base,
                attempts=2,
                temperature=0.9,
                max_tokens=300 * k + 100,
                seed=seed * 1000 + 10 * calls,
                on_reply=call_lines(say, f"inputs, {len(kept)}/{n} so far"),
            )
        except GenerationFailed as e:
            problem, failures_in_a_row = str(e), failures_in_a_row + 1
            continue
        added = 0
        for d in drafts:
            if len(kept) == n:
                break
            if deduper.duplicate_of(d.text) is None:
                kept.append(
                    Scenario(
                        id=content_hash(d.text)[:12], task=d.text, difficulty=d.difficulty, metadata=dict(provenance)
                    )
                )
                added += 1
        if added:
            failures_in_a_row = 0
        else:
            problem, failures_in_a_row = "the reply only repeated earlier inputs", failures_in_a_row + 1
    return enough(kept, n, model, problem)
