"""Grounding's fallback: synthesized tasks, each with a reference call made on the live server.

Where exploring found tools that answer but grounding kept too few tasks (answers it could not
ask about, chains that did not replay), the set is topped up with tasks the generator model writes
(mcprl.scenarios.synthesize) for the tools that answered. For each, the generator then writes the
arguments of the task's first call as JSON under that tool's input schema (our endpoint enforces
it by constrained decoding, so the offline `local` model writes valid JSON too); the call is made
in a fresh session, and the task is kept only where it ran without error and found something (not
"no items match"), and where it reads as a request of that call (`unfit`): words, not a tool's
identifier, about what the tool does, stating the values the call was given (a small model's
drafts echo the prompt, "make the new ones", or are no words at all). That call is its
`Scenario.reference`, shown by the demonstration and written for groups no rollout solved
(`--unsolved reference`) as for grounded tasks. These tasks have no check: their answers are not
known, so the judge scores them with RULER (mcprl.judges.JudgeConfig.build, `unchecked`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel, Field

from mcprl.checks import holds_answer
from mcprl.errors import UserError, clip
from mcprl.llm import LLMError, complete, extract_json
from mcprl.scenarios.explored import Exploration
from mcprl.scenarios.isolation import may_write
from mcprl.scenarios.lexicon import FUNCTION_WORDS, GETS, words_of
from mcprl.scenarios.results import failed_items, flatten, found_nothing, result_records
from mcprl.scenarios.synthesize import synthesize
from mcprl.tools import ServerGone
from mcprl.tools.convert import inlined
from mcprl.types import ReferenceCall, Scenario

if TYPE_CHECKING:
    from mcprl.tools import ToolPool

ARGUMENTS_PROMPT = (
    "You start a task by calling the tool `{name}`{description}. Write that call's arguments as JSON: the "
    "values the task names, else realistic ones taken from the values seen."
)
TRIES = 2  # argument writes per task: the greedy one, then one sampled
AT_ONCE = 4  # tasks whose call is written and made at once where every session is its own server process
EXTRA = 0.5  # tasks synthesized beyond those needed, as a share of them: some get no call that runs
MIN_WORDS = 3  # words of letters a request has at the least ("get_holidays" alone is one)
# code's punctuation a request holds at most, per character: JSON or a list it quotes has a few (one in thirteen),
# a draft that strews words among code ("{#13;}]; {#2;}]") one in four or more
CODE_MARKS = re.compile(r"[{}\[\];#]")
MAX_CODE_SHARE = 0.15
# words a program's names run together ("dataMapper", "DateTimeTime"): a request names one now and then ("iPhone"),
# a draft that is a program's source, or strings such names, a quarter of its words or more
RUN_TOGETHER = re.compile(r"[a-z][A-Z]")
MAX_RUN_TOGETHER = 0.25
ROOT = 5  # letters two words share at their start to be one word's forms ("holiday", "holidays")


class FallbackReport(BaseModel):
    """How the top-up went: tasks the generator wrote, kept, and why the others were not."""

    requested: int
    synthesized: int = 0
    kept: int = 0
    dropped: dict[str, int] = Field(default_factory=dict)
    synthesis: str = Field(default="", description="the synthesis report's first line")

    def summary(self) -> str:
        dropped = ", ".join(f"{n} {why}" for why, n in self.dropped.items()) or "none"
        line = (
            f"synthesized {self.kept} tasks with a reference call that ran on the server "
            f"({self.synthesized} written, {self.requested} wanted; dropped: {dropped})"
        )
        return f"{line}; synthesis: {self.synthesis}" if self.synthesis and not self.kept else line


def _roots(text: str) -> set[str]:
    """A text's content words, each by its start (`ROOT` letters): not function words, nor a verb of getting that
    any request has ("get", "show")."""
    return {w[:ROOT] for w in words_of(text) if len(w) >= 3 and w not in FUNCTION_WORDS and w not in GETS}


def _stated(task: str, value: Any) -> bool:
    """Whether a task states an argument's value: whole, or a word of it ("Tokyo" of "Asia/Tokyo")."""
    if holds_answer(task, value):
        return True
    return isinstance(value, str) and any(
        holds_answer(task, w) for w in re.findall(r"[A-Za-z]{4,}", value) if w.lower() not in FUNCTION_WORDS
    )


def unfit(task: str, tool: dict[str, Any], args: dict[str, Any] | None, names: list[str]) -> str | None:
    """Why a synthesized task is no request a person would make of its first call (`tool`, an MCP tool definition,
    given `args`; None: not written yet), or None where it is one: it has words, names no tool by its identifier
    (`names`; the generator is told not to) nor is one's name in words, shares a word with what the tool does or
    with the values it is given, and states every value the call was given but a flag, a choice the schema lists and
    a default."""
    # (words that spaces part: "parse_notes_to_json" is one; and a request opens with one, not with "]));")
    words = sum(bool(re.search(r"[A-Za-z]{2,}", t)) for t in task.split())
    code = len(CODE_MARKS.findall(task)) / max(len(task), 1)
    run_together = sum(bool(RUN_TOGETHER.search(t)) for t in task.split()) / max(words, 1)
    if (
        words < MIN_WORDS
        or not re.match(r"[\"'“(]?\w", task.strip())
        or re.search(r"(?:\.\.\.|…)\W*$", task)  # (trails off: "Calling to get text from multiple files...")
        or code > MAX_CODE_SHARE
        or run_together >= MAX_RUN_TOGETHER
    ):
        return "no words"
    if any(re.search(rf"(?<!\w){re.escape(n)}(?!\w)", task) for n in names if len(words_of(n)) > 1):
        return "names a tool"
    if any(words_of(task) == words_of(n) for n in names):  # a tool's name in words, "Calculate Time Distance"
        return "names a tool"
    if args is None:
        return None
    values = flatten(args)  # (however deep: the file and the range of a request in a list of them)
    given = [str(v) for _, v in values]
    if not _roots(task) & _roots(" ".join([tool["name"], tool.get("description") or "", *given])):
        return "not about its tool"
    props = _properties(inlined(tool.get("inputSchema") or {}))
    for key, value in values:
        schema = props.get(key, {})
        chosen = "enum" in schema or "const" in schema or value == schema.get("default")
        if not chosen and not _stated(task, value):
            return "does not state its call's values"
    return None


def _properties(schema: Any) -> dict[str, dict[str, Any]]:
    """The schemas of an (inlined) input schema's properties by name, however deep (a request's `file_path` in a list
    of them)."""
    found: dict[str, dict[str, Any]] = {}
    if isinstance(schema, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if isinstance(sub, dict):
                found.setdefault(name, sub)
                found.update({k: v for k, v in _properties(sub).items() if k not in found})
        found.update({k: v for k, v in _properties(schema.get("items")).items() if k not in found})
    return found


def _first_tool(scenario: Scenario, answered: list[str]) -> str | None:
    """The task's first tool among those that answered while exploring (the one tool, when only one did)."""
    for name in scenario.tools:
        if name in answered:
            return name
    return answered[0] if len(answered) == 1 else None


async def _arguments(
    scenario: Scenario,
    tool: dict[str, Any],
    seen: list[Any],
    *,
    model: str,
    api_base: str | None,
    seed: int,
    attempt: int,
) -> dict[str, Any] | None:
    """The arguments of the task's first call of `tool` (an MCP tool definition), written by the
    generator under the tool's input schema; None when it wrote none."""
    summary = (tool.get("description") or "").strip().partition("\n")[0]
    shown = json.dumps(seen[:12], default=str)[:600]
    messages = [
        {
            "role": "system",
            "content": ARGUMENTS_PROMPT.format(name=tool["name"], description=f" ({summary})" if summary else ""),
        },
        {"role": "user", "content": f"Task: {scenario.task}\nValues seen: {shown}"},
    ]
    try:
        reply = await complete(
            model,
            messages,
            api_base=api_base,
            json_schema=tool.get("inputSchema") or {"type": "object"},
            temperature=0.0 if attempt == 0 else 0.7,
            max_tokens=200,
            seed=seed + attempt,
            num_retries=0,
        )
        written = extract_json(reply.text)
    except (LLMError, UserError, ValueError):
        return None
    return written if isinstance(written, dict) else None


async def referenced_synthesized(
    pool: ToolPool,
    n: int,
    exploration: Exploration,
    *,
    model: str,
    api_base: str | None,
    seed: int,
    say: Callable[[str], None] = print,
) -> tuple[list[Scenario], FallbackReport]:
    """Up to `n` synthesized tasks for the tools that answered in `exploration`, each with a
    reference call that ran without error in a fresh session of `pool`'s server, and the report."""
    assert pool.toolset is not None
    report = FallbackReport(requested=n)
    answered = exploration.answered()
    tools = {t["name"]: t for t in pool.toolset.mcp_tools if t["name"] in answered}
    offered = [t for t in pool.toolset.tools if t["function"]["name"] in tools]
    if not offered or n <= 0:
        return [], report
    try:
        result = await synthesize(
            offered,
            n + max(1, int(n * EXTRA)),
            model,
            api_base=api_base,
            seed=seed,
            say=say,
            resources=pool.toolset.resources,
            prompts=pool.toolset.prompts,
        )
    except UserError as e:  # a generator that cannot be reached: the caller says what is left
        report.synthesis = clip(str(e), 300)
        return [], report
    report.synthesized = len(result.scenarios)
    report.synthesis = result.report.summary().partition("\n")[0]
    seen = [c.arguments for c in exploration.calls if not c.is_error and c.arguments][-12:]
    names = [t["name"] for t in pool.toolset.mcp_tools]
    dropped: Counter = Counter()
    limiter = anyio.CapacityLimiter(AT_ONCE if pool.per_rollout else 1)

    async def reference_for(scenario: Scenario, k: int) -> Scenario | str:
        """The task with its reference call, or why it got none."""
        name = _first_tool(scenario, answered)
        if name is None:
            return "uses no tool that answered"
        if why := unfit(scenario.task, tools[name], None, names):
            return why
        why = "the generator wrote no arguments"
        for attempt in range(TRIES):
            args = await _arguments(
                scenario, tools[name], seen, model=model, api_base=api_base, seed=seed * 1000 + k, attempt=attempt
            )
            if args is None:
                continue
            if unfit_now := unfit(scenario.task, tools[name], args, names):
                why = unfit_now
                continue
            try:
                async with limiter, pool.session() as session:
                    outcome = await session.call(name, args)
            except ServerGone:
                why = "the server went away"
                continue
            if outcome.is_error:
                why = "its call failed"
            elif found_nothing(outcome.data_text, args):
                why = "its call found nothing"
            elif failed_items(outcome.text, args):  # (a read of several files, some of which are not there)
                why = "its call failed for some of what it was sent"
            else:
                reference = ReferenceCall(tool=name, arguments=args, result=outcome.text, writes=may_write(tools[name]))
                return scenario.model_copy(
                    update={
                        "tools": list(dict.fromkeys([name, *scenario.tools])),
                        "reference": [reference],
                        "check": None,  # no known answer: judged by RULER
                        "metadata": {
                            **scenario.metadata,
                            "source": "synthesized",
                            "fallback": "grounded too few",
                            "records": max(1, len(result_records(outcome.data_text, outcome.structured))),
                        },
                    }
                )
        return why

    async def one(outcomes: list[Scenario | str], j: int, k: int, scenario: Scenario) -> None:
        outcomes[j] = await reference_for(scenario, k)

    kept: list[Scenario] = []
    todo = list(enumerate(result.scenarios))
    while todo and len(kept) < n:  # as many at once as are still needed, kept in the generator's order
        batch, todo = todo[: n - len(kept)], todo[n - len(kept) :]
        outcomes: list[Scenario | str] = [""] * len(batch)

        async with anyio.create_task_group() as tg:
            for j, (k, scenario) in enumerate(batch):
                tg.start_soon(one, outcomes, j, k, scenario)
        for outcome in outcomes:
            if isinstance(outcome, Scenario):
                kept.append(outcome)
            else:
                dropped[outcome] += 1
    if todo:
        dropped["beyond the number asked for"] += len(todo)
    report.kept = len(kept)
    report.dropped = dict(dropped)
    return kept, report
