"""The demonstration shown to the policy before its task (a request and a tool-call reply): where it
comes from.

Small models make no tool calls zero-shot; a demonstration fixes the format, and one that looks
like the real tasks works far better than a made-up one. In order of preference:

    file          `rollout.demonstrations` in a run file, else `--demonstration-file FILE` (a JSON
                  list of OpenAI chat messages): the user's own messages
    task-module   the task set's hand-written DEMONSTRATION (`--tasks NAME`, unless `--no-task-help`)
    grounded:<id> the first call of a grounded training scenario's reference chain (mcprl.scenarios.grounded),
                  known to run without error; the scenario then leaves training. With
                  `--demonstration-per-tool`, one such exchange per tool, each scenario shown
                  one of them (chosen by its id, so a group shares one)
    scenario:<id> built from one real training scenario, which is then kept out of training and
                  evaluation: the generator model writes a few candidate first tool calls,
                  constrained by that tool's own input schema (strings and arrays kept short,
                  strings first made of the task's words, then cut to shorter runs of those
                  words, `narrowed`), each is executed against the server, and the most useful
                  one that answers without error is kept: the one whose result holds the
                  scenario's known answer, else the one whose result tells the most the task did
                  not already say (`usefulness`)
    generic       `Example request: use <first tool>.` with placeholder arguments (mcprl.rollout.loop)

Each source but the generic one is a function in `SOURCES`, in this order (`off`, the run's
`--no-demonstration`, first: source "none"): `async (Context) -> (Demonstration, training
scenarios) | None`, None leaving the choice to the next; `settle` takes the first answer, and the
generic one where none answers (no server). A new source is one more function in that list.

A scenario demonstration ends at the assistant's tool call, like the hand-written ones: there is
no ground truth for a final answer in general, and a tool result in the prompt would put one
successful call into every trajectory, which checkers that replay a trajectory's calls (the
inventory's) would count as the agent's own. A grounded task has both, recorded and replayed, but
the whole episode shown (call, result, answer) made SmolLM2-135M answer without calling (docs/benchmarks.md,
"Phrasing and demonstration").
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
from pydantic import BaseModel, TypeAdapter, ValidationError

from mcprl.checks import holds_answer
from mcprl.errors import UserError, clip, first_problem
from mcprl.judges.shaping import novel_words
from mcprl.llm import LLMError, complete, extract_json
from mcprl.run.references import reference_exchange
from mcprl.types import Message, Scenario

if TYPE_CHECKING:
    from mcprl.tools import ToolPool

CANDIDATES = 3  # scenarios tried before falling back to the generic demonstration
SAMPLES = 4  # calls written at a time for a scenario (one round per constraint, up to two rounds)
NARROWED = 32  # calls made of shorter runs of a written string's words, at most, for a scenario
# A demonstration's call is short: every string and array of the constraint gets at most this many
# characters or items unless its schema bounds it already, so that a small generator repeating
# itself inside a string (greedy decoding loops) still ends with a complete call instead of
# running out of tokens mid-string.
MAX_STRING, MAX_ITEMS = 48, 4
WRITER_PROMPT = (
    "You are an agent that solves the user's task by calling tools. Write the arguments of your first call "
    "to the tool `{name}`{description} for the task the user gives. Use the values the task mentions."
)
PICKER_PROMPT = (
    "You are an agent that solves the user's task by calling tools. Choose the tool to call first. Tools:\n{tools}"
)


class ChatMessage(BaseModel):
    """An OpenAI chat message, as far as `--demonstration-file` needs it checked."""

    role: Literal["system", "user", "assistant", "tool"]
    content: Any = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None


class Demonstration(BaseModel):
    # each scenario is shown one (RolloutConfig.demonstrations): one for every task, or one per tool;
    # None: the generic one, made up from the tool list (or none at all: source "none")
    exchanges: list[list[Message]] | None
    source: str  # "none" | "file" | "task-module" | "grounded:<id>[,<id>...]" | "scenario:<id>" | "generic"


def load_file(path: Path) -> list[Message]:
    """`--demonstration-file FILE`: a JSON list of chat messages; anything else is a one-line UserError."""
    fix = 'fix: a JSON list like [{"role": "user", "content": "..."}, {"role": "assistant", "tool_calls": [...]}]'
    if not path.exists():
        raise UserError(f"--demonstration-file {path}: no such file; {fix}")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise UserError(f"--demonstration-file {path}: not valid JSON ({e.msg} at line {e.lineno}); {fix}") from None
    if not isinstance(data, list) or not data:
        raise UserError(
            f"--demonstration-file {path}: expected a non-empty JSON list of chat messages, "
            f"got {type(data).__name__}; {fix}"
        )
    try:
        TypeAdapter(list[ChatMessage]).validate_python(data)
    except ValidationError as e:
        raise UserError(f"--demonstration-file {path}: message {first_problem(e)}; {fix}") from None
    return data


def task_words(task: str) -> list[str]:
    """The task's own words (punctuation around them dropped), longest first, each once."""
    return sorted({w.strip(".,;:!?\"'()") for w in task.split()} - {""}, key=len, reverse=True)


def words_pattern(words: list[str]) -> str:
    """A regex for strings made of `words` (one or more, space-separated)."""
    word = "(?:" + "|".join(re.escape(w) for w in words) + ")"
    return f"^{word}(?: {word})*$"


def short_call_schema(schema: Any, words: list[str] | None = None) -> Any:
    """`schema` with MAX_STRING / MAX_ITEMS on every string and array that has no bound of its own
    (nested ones, `$defs`, `anyOf` branches included), and, with `words`, every free string made of
    those words; nothing else changes. A bound never goes below the schema's own minimum, and a
    string gets the words pattern only where one of the words alone fits its length bounds, so the
    constraint is satisfiable wherever the schema is (a task word longer than the bound, a
    `minLength` above it, would otherwise leave a required string nothing to match)."""
    if isinstance(schema, list):
        return [short_call_schema(s, words) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        k: short_call_schema(v, words) if k not in ("enum", "const", "default", "examples", "required") else v
        for k, v in schema.items()
    }
    types = schema.get("type") if isinstance(schema.get("type"), list) else [schema.get("type")]
    if "string" in types and not {"maxLength", "enum", "const", "format", "pattern"} & set(schema):
        least = schema.get("minLength", 0) if isinstance(schema.get("minLength", 0), int) else 0
        out["maxLength"] = most = max(MAX_STRING, least)
        if any(least <= len(w) <= most for w in words or ()):
            out["pattern"] = words_pattern([w for w in words or () if len(w) <= most])
    if "array" in types and "maxItems" not in schema:
        least = schema.get("minItems", 0) if isinstance(schema.get("minItems", 0), int) else 0
        out["maxItems"] = max(MAX_ITEMS, least)
    return out


def _tool_fn(tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(t["function"] for t in tools if t["function"]["name"] == name)


def _summary(fn: dict[str, Any]) -> str:
    """The first line of a tool's description."""
    return (fn.get("description") or "").strip().partition("\n")[0]


async def _json(
    prompt: str,
    task: str,
    schema: dict[str, Any],
    *,
    model: str,
    api_base: str | None,
    seed: int,
    temperature: float = 0.0,
) -> Any:
    messages = [{"role": "system", "content": prompt}, {"role": "user", "content": task}]
    reply = await complete(
        model, messages, api_base=api_base, json_schema=schema, temperature=temperature, max_tokens=256, seed=seed
    )
    return extract_json(reply.text)


async def _first_tool(
    scenario: Scenario, tools: list[dict[str, Any]], *, model: str, api_base: str | None, seed: int
) -> str:
    """The scenario's own first tool when it names an offered one, else the generator's choice
    (an enum of the offered names, so the answer is always a real tool)."""
    names = [t["function"]["name"] for t in tools]
    for name in scenario.tools:
        if name in names:
            return name
    if len(names) == 1:
        return names[0]
    listing = "\n".join(f"- {n}: {_summary(_tool_fn(tools, n))}" for n in names)
    schema = {"type": "object", "properties": {"tool": {"type": "string", "enum": names}}, "required": ["tool"]}
    choice = await _json(
        PICKER_PROMPT.format(tools=listing), scenario.task, schema, model=model, api_base=api_base, seed=seed
    )
    if not isinstance(choice, dict) or choice.get("tool") not in names:
        raise ValueError(f"the generator chose no offered tool ({choice!r})")
    return choice["tool"]


def usefulness(scenario: Scenario, args: dict[str, Any], result: str) -> tuple[int, int]:
    """How much a call that ran without error tells about its task, as a sort key (higher is
    better). A result holding the scenario's known answer beats any other, and among those the one
    with the fewest other new words (the answer found, not a dump that happens to contain it).
    Otherwise: the more words the result brings that neither the task nor the call's arguments
    hold, the better (a lookup that found something beats one that echoed "no match"). The same
    measures as shaping's evidence stage (mcprl.judges.shaping)."""
    novel = novel_words(result, f"{scenario.task} {json.dumps(args)}")
    if scenario.answer is not None and holds_answer(result, scenario.answer):
        return 1, -novel
    return 0, novel


class Candidate(BaseModel):
    """One written call that ran without error, and how useful its result is."""

    rating: tuple[int, int]
    messages: list[Message]

    @property
    def has_answer(self) -> bool:
        return self.rating[0] == 1


def narrowed(args: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """Calls like `args` with one multi-word string argument cut to a shorter run of its own words,
    each with the run's length, longest first: the value a task names (an item, a city, a file) is
    often a part of the sentence a small writer copied whole."""
    out = []
    for key, value in args.items():
        if isinstance(value, str) and len(words := value.split()) > 1:
            out += [
                (n, {**args, key: " ".join(words[i : i + n])})
                for n in range(len(words) - 1, 0, -1)
                for i in range(len(words) - n + 1)
            ]
    return sorted(out, key=lambda v: -v[0])


async def from_scenario(
    scenario: Scenario,
    pool: ToolPool,
    *,
    model: str,
    api_base: str | None,
    seed: int,
    say: Callable[[str], None] = print,
) -> Candidate | None:
    """The most useful exchange `task -> first tool call` for `scenario` (see `usefulness`), or
    None when no call the generator writes runs without error. The generator writes SAMPLES calls
    at a time, each run in its own session: first with string arguments made of the task's own
    words (the values a task names: an item, a city, a path); unless one of those found the
    scenario's answer, the same calls with a string cut to a shorter run of its words (`narrow`);
    and unless that found it either, calls written freely (short_call_schema). Ties go to the
    earlier call: the greedy one, the task's words. A failed generator call or tool call is one
    call fewer; a constraint the generator refuses outright (every call of the round failed, e.g. an
    endpoint's 400) says so in one line and the next, looser, constraint is tried: the tool's own
    schema last."""
    tools = pool.toolset.tools
    name = await _first_tool(scenario, tools, model=model, api_base=api_base, seed=seed)
    fn = _tool_fn(tools, name)
    description = f" ({_summary(fn)})" if _summary(fn) else ""
    schema = fn.get("parameters") or {"type": "object", "properties": {}}
    prompt = WRITER_PROMPT.format(name=name, description=description)

    async def execute(calls: list[dict[str, Any]]) -> list[Candidate]:
        """The calls that run without error, as candidates, in the order given."""
        ran: list[Candidate | None] = [None] * len(calls)

        async def run(i: int, args: dict[str, Any]) -> None:
            try:
                async with pool.session() as session:
                    outcome = await session.call(name, args)
            except Exception:  # a session the server broke is one failed call, like an error result
                return
            if not outcome.is_error:
                ran[i] = Candidate(
                    rating=usefulness(scenario, args, outcome.text),
                    messages=[
                        {"role": "user", "content": scenario.task},
                        {
                            "role": "assistant",
                            "content": "",
                            "tool_calls": [
                                {
                                    "id": "call_example",
                                    "type": "function",
                                    "function": {"name": name, "arguments": json.dumps(args)},
                                }
                            ],
                        },
                    ],
                )

        async with anyio.create_task_group() as tg:
            for i, args in enumerate(calls):
                tg.start_soon(run, i, args)
        return [c for c in ran if c is not None]

    async def write_all(constraint: Any) -> tuple[list[Any], list[str]]:
        """SAMPLES calls written under `constraint` (None where a write failed), and why each failed."""
        written: list[Any] = [None] * SAMPLES
        problems: list[str] = []

        async def write(i: int) -> None:
            # the first greedy, the rest sampled: different values for the same argument
            try:
                written[i] = await _json(
                    prompt,
                    scenario.task,
                    constraint,
                    model=model,
                    api_base=api_base,
                    seed=seed + i,
                    temperature=0.0 if i == 0 else 1.0,
                )
            except Exception as e:  # one failed generator call never ends the run (nor the other writes)
                problems.append(
                    str(e) if isinstance(e, (LLMError, ValueError, UserError)) else f"{type(e).__name__}: {e}"
                )

        async with anyio.create_task_group() as tg:
            for i in range(SAMPLES):
                tg.start_soon(write, i)
        return written, problems

    best: Candidate | None = None
    known = scenario.answer is not None
    words, free = short_call_schema(schema, task_words(scenario.task)), short_call_schema(schema)
    rounds = [words] if words == free else [words, free]  # no strings: one round
    # The tool's own schema, unshortened, only when the generator refused every shortened one
    # (a server can use keywords that, combined with our bounds, leave nothing to write).
    rounds += [schema] if schema != free else []
    refused = True  # every round so far: no call written at all
    for n, constraint in enumerate(rounds):
        if constraint is schema and not refused:
            break
        written, problems = await write_all(constraint)
        refused = refused and len(problems) == SAMPLES
        if len(problems) == SAMPLES:
            looser = n + 1 < len(rounds) and (rounds[n + 1] is not schema or refused)
            say(
                f"demonstration from scenario {scenario.id}: the generator wrote no call to `{name}` "
                f"({clip(problems[0], 300)})" + ("; trying a looser constraint" if looser else "")
            )
            continue
        calls = [args for i, args in enumerate(written) if isinstance(args, dict) and args not in written[:i]]
        ran = await execute(calls)
        best = most_useful(best, *ran)
        # With no answer to seek, narrow only when the calls told nothing to choose between them: a
        # call that already found something stays as written (a shorter run finds more, not better).
        if constraint is words and not (best and best.has_answer) and (known or len({c.rating for c in ran}) <= 1):
            best = most_useful(best, await narrow(calls, best, execute, seek_answer=known))
        if best is not None and best.has_answer:
            break
    return best


def most_useful(*candidates: Candidate | None) -> Candidate | None:
    """The highest-rated candidate; on a tie the earliest."""
    return max((c for c in candidates if c is not None), key=lambda c: c.rating, default=None)


async def narrow(
    calls: list[dict[str, Any]],
    floor: Candidate | None,
    execute: Callable[[list[dict[str, Any]]], Awaitable[list[Candidate]]],
    *,
    seek_answer: bool,
) -> Candidate | None:
    """The best of the `narrowed` variants of `calls` (at most NARROWED: the first, greedy, call's
    all, then the others' as they fit) whose result beats `floor`, run a length at a time, longest
    runs first: the first that holds the answer (`seek_answer`: the scenario has one), else the
    longest run that told more."""
    variants: list[tuple[int, dict[str, Any]]] = []
    for length, args in (v for call in calls for v in narrowed(call)):
        if args not in calls and all(args != a for _, a in variants):
            variants.append((length, args))
    variants = variants[:NARROWED]
    fallback: Candidate | None = None
    for length in sorted({n for n, _ in variants}, reverse=True):
        ran = await execute([a for n, a in variants if n == length])
        top = most_useful(*(c for c in ran if floor is None or c.rating > floor.rating))
        if top is not None and (top.has_answer or not seek_answer):
            return top
        fallback = fallback or top
    return fallback


async def build(
    train: list[Scenario], pool: ToolPool, *, model: str, api_base: str | None, seed: int, say=print
) -> tuple[Demonstration, list[Scenario]]:
    """A scenario demonstration from one of at most CANDIDATES training scenarios (picked by the
    seed): the first whose call found the scenario's answer, else the most useful; the training
    scenarios without it. The generic one when no call runs without error."""
    if len(train) < 2:
        return Demonstration(exchanges=None, source="generic"), train
    best: tuple[Candidate, Scenario] | None = None
    for scenario in random.Random(f"{seed}/demonstration").sample(train, min(CANDIDATES, len(train) - 1)):
        try:
            candidate = await from_scenario(scenario, pool, model=model, api_base=api_base, seed=seed, say=say)
        except Exception as e:  # the demonstration is a help: no failure of it ends the run
            reason = str(e) if isinstance(e, (LLMError, UserError, ValueError)) else f"{type(e).__name__}: {e}"
            say(f"warning: no demonstration from scenario {scenario.id}: {clip(reason, 300)}")
            continue
        if candidate is not None and (best is None or candidate.rating > best[0].rating):
            best = candidate, scenario
            if candidate.has_answer:
                break
    if best is None:
        say("no training scenario gave a tool call that runs without error; showing the generic one")
        return Demonstration(exchanges=None, source="generic"), train
    candidate, scenario = best
    # its task leaves training whole: copies of it (task generators repeat tasks) too
    return Demonstration(exchanges=[candidate.messages], source=f"scenario:{scenario.id}"), [
        s for s in train if s.task != scenario.task
    ]


def from_reference(
    grounded: list[Scenario], train: list[Scenario], *, seed: int, per_tool: bool = False
) -> tuple[Demonstration, list[Scenario]]:
    """The `reference_exchange` of a grounded training scenario, with no generator call: reads before
    writes, one-call tasks first (the call is the whole solution), of those the ones of the tool
    the most tasks begin with (the small policy copies the demonstration's call, arguments and all:
    the tool most tasks need is then right most often, where a lookup of one commit's hash, which
    its own task stated, had that hash sent with most questions), then the ones whose task states
    the fewest values (the policy copies those too: a date the shown task was about went into other
    questions' calls and answers), then the ones whose answer is in the fewest records (a lookup,
    not a listing the small policy then cannot read), picked by the seed; its task leaves training
    whole.

    `per_tool`: one such exchange for each tool a reference chain starts with (its shortest chains
    first), each scenario shown one of them (RolloutConfig.demonstrations). With a single exchange the
    small policy sends every task to the tool it was shown (`8 * 9.25` to `divide`); shown a
    different tool from task to task, copying the demonstration's tool stops paying."""
    rng = random.Random(f"{seed}/demonstration")
    by_tool: dict[str, list[Scenario]] = {}
    for s in grounded:
        by_tool.setdefault(s.reference[0].tool, []).append(s)
    groups = list(by_tool.values()) if per_tool else [grounded]

    def cost(s: Scenario) -> tuple[bool, int, int, int, int]:
        # a read (a policy that copies a write changes state on every task), the fewest calls, the
        # tool the most tasks begin with, the fewest values stated, then the answer in the fewest
        # records (a lookup, not a listing)
        calls = s.reference
        stated = len(s.metadata.get("given") or [])
        return (
            any(c.writes for c in calls),
            len(calls),
            -len(by_tool[calls[0].tool]),
            stated,
            s.metadata.get("records", 1),
        )

    chosen = []
    for group in groups:
        easiest = min(map(cost, group))
        chosen.append(rng.choice([s for s in group if cost(s) == easiest]))
    shown = {s.task for s in chosen}
    source = "grounded:" + ",".join(s.id for s in chosen)
    kept = [s for s in train if s.task not in shown]
    return Demonstration(exchanges=[reference_exchange(s) for s in chosen], source=source), kept


@dataclass
class Context:
    """What the run gives a demonstration source to choose from."""

    train: list[Scenario]  # the training scenarios
    pool: ToolPool | None  # the server's tools; None without a server
    enabled: bool  # `rollout.demonstration`: off, the run shows none
    given: list[list[Message]] | None  # `rollout.demonstrations`: messages given as they are
    file: str | None  # `--demonstration-file FILE`
    shipped: list[Message] | None  # the task set's DEMONSTRATION, when its help is on
    model: str  # the generator model (`judge.model`) and its endpoint
    api_base: str | None
    seed: int
    per_tool: bool  # `--demonstration-per-tool`
    say: Callable[[str], None] = print


# A demonstration source: the run's demonstration and the training scenarios without one it was
# built from, or None to leave the choice to the next source.
Source = Callable[[Context], Awaitable[tuple[Demonstration, list[Scenario]] | None]]


async def off(c: Context) -> tuple[Demonstration, list[Scenario]] | None:
    """No demonstration at all (`--no-demonstration`)."""
    return None if c.enabled else (Demonstration(exchanges=None, source="none"), c.train)


async def given(c: Context) -> tuple[Demonstration, list[Scenario]] | None:
    """The user's own messages: `rollout.demonstrations` as they are, else `--demonstration-file FILE`."""
    if c.given is not None:
        return Demonstration(exchanges=c.given, source="file"), c.train
    if c.file:
        return Demonstration(exchanges=[load_file(Path(c.file))], source="file"), c.train
    return None


async def task_module(c: Context) -> tuple[Demonstration, list[Scenario]] | None:
    """The task set's hand-written DEMONSTRATION."""
    return None if c.shipped is None else (Demonstration(exchanges=[c.shipped], source="task-module"), c.train)


async def grounded(c: Context) -> tuple[Demonstration, list[Scenario]] | None:
    """A grounded training scenario's first reference call (`from_reference`), with no generator call."""
    if c.pool is None or not (chain_known := [s for s in c.train if s.reference]):
        return None
    return from_reference(chain_known, c.train, seed=c.seed, per_tool=c.per_tool)


async def generated(c: Context) -> tuple[Demonstration, list[Scenario]] | None:
    """A call the generator model writes for a training scenario (`build`)."""
    if c.pool is None:
        return None
    c.say(f"building the demonstration from a training scenario with {c.model} ...")
    return await build(c.train, c.pool, model=c.model, api_base=c.api_base, seed=c.seed, say=c.say)


# The sources in order of preference (the module's docstring): the first that answers gives the
# run its demonstration. A new source is one more function here.
SOURCES: list[Source] = [off, given, task_module, grounded, generated]


async def settle(context: Context, sources: Sequence[Source] = SOURCES) -> tuple[Demonstration, list[Scenario]]:
    """The run's demonstration from the first of `sources` that gives one, and the training scenarios
    without one it was built from; the generic one when none does (no server)."""
    for source in sources:
        if (found := await source(context)) is not None:
            return found
    return Demonstration(exchanges=None, source="generic"), context.train
