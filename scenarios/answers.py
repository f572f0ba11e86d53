"""Reference calls for tasks whose answers are known but not how to reach them (a user's own
questions about their server, with the right answers, `--scenarios FILE`).

The server is explored as for grounding (mcprl.scenarios.explore, the same bounds). Among the
calls it recorded that answered without error and read only (no tool that may write, nor a call
made after a write in its session), a task's candidates are the call chains (a call and the calls
its arguments came from, mcprl.scenarios.grounded) whose last result holds the task's answer
(`holds_answer`: numbers by value, text as whole words), cut to the calls a rollout must make (none
that found a value the task states). Where none of them takes a value the task states, a few more
calls are made (`FURTHER_CALLS` at most): each read-only tool of one text parameter is called with
the values the task states (a name a result held, an id like `SKU-3486`, a quoted string). The
candidates are ranked: one whose string arguments the task states before one whose do not, then
the shortest chain, then the answer in the fewest records (a lookup, not a listing's line). The
first whose replay in a fresh session still holds the answer is the task's `Scenario.reference`,
which the demonstration and `--unsolved reference` then use as they use a grounded task's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel, Field

from mcprl.checks import holds_answer
from mcprl.scenarios.explored import Exploration, ExploredCall
from mcprl.scenarios.isolation import may_write
from mcprl.scenarios.replay import REPLAYS_AT_ONCE, chain_of, needed, reissued, text_parameter
from mcprl.scenarios.results import ID_LIKE, found_nothing, result_records, result_values
from mcprl.tools import ServerGone
from mcprl.types import ReferenceCall, Scenario

if TYPE_CHECKING:
    from mcprl.tools import ToolPool, ToolSession

FURTHER_CALLS = 24  # calls made besides the exploration's, for tasks none of whose candidates takes a stated value
VALUES_PER_TASK = 3  # values a task states that further calls are made with, longest first
REPLAYS_PER_TASK = 3  # candidates replayed per task before it is given none
# an id a task states: letters and digits joined (`ID_LIKE`), or a quoted string
QUOTED = re.compile(r"[\"“']([^\"”']{2,60})[\"”']")
UNANSWERED_KINDS = ("python", "server", "regex")  # checks that state no value a result could hold


class ReferenceReport(BaseModel):
    tasks: int = Field(default=0, description="tasks with a known answer and no reference")
    found: int = 0
    further_calls: int = 0

    def summary(self) -> str:
        return f"references found for {self.found} of {self.tasks} tasks ({self.further_calls} calls besides exploring)"


def known_answer(scenario: Scenario) -> tuple[list[Any], bool] | None:
    """The values a task's answer must hold, and whether any one of them will do (else all); None where
    its check states no value a result could hold (a function, a pattern, a state read back)."""
    check = scenario.check
    if check is not None and (check.kind in UNANSWERED_KINDS or getattr(check, "on", None) == "read_back"):
        return None
    value = getattr(check, "value", None)
    value = scenario.answer if value is None else value
    if value is None or value == [] or value == "":
        return None
    if isinstance(value, list):
        return value, bool(getattr(check, "any_of", False))
    return [value], True


def holds(text: str, answer: tuple[list[Any], bool]) -> bool:
    values, any_of = answer
    found = [holds_answer(text, v) for v in values]
    return any(found) if any_of else all(found)


def readable(exploration: Exploration) -> list[ExploredCall]:
    """The calls that answered without error and read state no write had changed: not a tool that
    may write, and not made after a write in its session."""
    first_write: dict[int, int] = {}
    for c in exploration.calls:
        if c.writes and c.session not in first_write:
            first_write[c.session] = c.index
    return [
        c
        for c in exploration.calls
        if not c.is_error
        and not c.writes
        and c.reads_back is None
        and c.index < first_write.get(c.session, len(exploration.calls) + 1)
        and not found_nothing(c.data, c.arguments)
    ]


def stated(task: str, value: Any) -> bool:
    """Whether the task states a string value (a name, an id) of a call's arguments."""
    return isinstance(value, str) and bool(re.search(r"[A-Za-z]", value)) and holds_answer(task, value)


def named(task: str, seen: list[str], answer: tuple[list[Any], bool]) -> list[str]:
    """The values a task states that a lookup could take, longest first: values results held that the
    task names, its ids and quoted strings; never the answer itself."""
    found = {v for v in seen if len(v) >= 3 and stated(task, v)}
    found |= set(ID_LIKE.findall(task)) | {q.strip() for q in QUOTED.findall(task)}
    return sorted({v for v in found if v and not holds(v, answer)}, key=lambda v: (-len(v), v))


def _record_text(record: list[tuple[str, Any]]) -> str:
    return " | ".join(f"{k}: {v}" if k else str(v) for k, v in record)


class Candidate(BaseModel):
    calls: list[ReferenceCall]
    argued: int = Field(description="string arguments the task states")
    related: bool = Field(description="takes a value the task states, or the answer's record holds one")
    records: int = Field(description="records of the result that holds the answer")
    order: int = 0

    def key(self) -> tuple[bool, bool, int, int, int]:
        return (not self.argued, not self.related, len(self.calls), self.records, self.order)


def _candidate(task: str, chain: list[ExploredCall], values: list[str], answer: tuple[list[Any], bool]) -> Candidate:
    """A chain as a candidate reference; `values`: those the task states (`named`)."""
    chain = needed(task, chain)
    last = chain[-1]
    records = [_record_text(r) for r in result_records(last.data, last.structured)]
    holding = [r for r in records if holds(r, answer)] or [last.data]
    return Candidate(
        calls=[ReferenceCall(tool=c.tool, arguments=c.arguments, result=c.text, sources=c.sources) for c in chain],
        argued=(argued := sum(stated(task, v) for c in chain for v in c.arguments.values())),
        related=bool(argued) or any(holds_answer(r, v) for r in holding for v in values),
        records=max(1, len(records)),
        order=last.index,
    )


async def find_references(
    pool: ToolPool,
    scenarios: list[Scenario],
    exploration: Exploration,
    *,
    say: Callable[[str], None] = print,
) -> tuple[list[Scenario], ReferenceReport]:
    """`scenarios` with a reference attached to each task whose answer is known, that had none, and
    for which a call chain holding the answer was found and replayed (see the module's docstring);
    and the report. The others are returned as they were."""
    assert pool.toolset is not None
    scenarios = list(scenarios)
    wanted = {
        i: answer
        for i, s in enumerate(scenarios)
        if not s.reference and s.read_back is None and (answer := known_answer(s)) is not None
    }
    report = ReferenceReport(tasks=len(wanted))
    if not wanted:
        return scenarios, report
    calls = readable(exploration)
    seen = sorted({str(v) for c in calls for _, v in result_values(c.data, c.structured) if isinstance(v, str)})
    lookups = [(t["name"], p) for t in pool.toolset.mcp_tools if not may_write(t) and (p := text_parameter(t))]
    made = {(c.tool, repr(sorted(c.arguments.items()))) for c in exploration.calls}
    values = {i: named(scenarios[i].task, seen, answer) for i, answer in wanted.items()}
    candidates: dict[int, list[Candidate]] = {}
    for i, answer in wanted.items():
        task = scenarios[i].task
        found = [_candidate(task, chain_of(calls, c), values[i], answer) for c in calls if holds(c.data, answer)]
        # a task that states values (a name, an id) asks about their record: a chain related to none of
        # them holds the answer by chance ("aisle 5" of another item)
        candidates[i] = [c for c in found if c.related or not values[i]]
    further: dict[tuple[str, str], ExploredCall | None] = {}

    async def lookup(
        session: ToolSession, tool: str, parameter: str, value: str, parent: int | None
    ) -> ExploredCall | None:
        """`tool` called with `value` (a call besides the exploration's, within FURTHER_CALLS, made once),
        its value taken from the task or from call `parent`'s result."""
        key = (tool, value)
        if key not in further and (tool, repr([(parameter, value)])) in made:
            # made while exploring: its answer, if it read one (a call that failed or wrote is no lookup)
            further[key] = next((c for c in calls if c.tool == tool and c.arguments == {parameter: value}), None)
        if key not in further:
            if report.further_calls >= FURTHER_CALLS:
                return None
            report.further_calls += 1
            outcome = await session.call(tool, {parameter: value})
            further[key] = (
                None
                if outcome.is_error or found_nothing(outcome.data_text, {parameter: value})
                else ExploredCall(
                    index=-report.further_calls - 1,  # apart from the exploration's
                    session=-1,
                    tool=tool,
                    arguments={parameter: value},
                    text=outcome.text,
                    data_text=None if outcome.data_text == outcome.text else outcome.data_text,
                    structured=outcome.structured,
                )
            )
        if (got := further[key]) is None:
            return None
        return got.model_copy(
            update={
                "sources": {parameter: "task" if parent is None else f"result:{parent}"},
                "parents": [] if parent is None else [parent],
            }
        )

    # further calls, for tasks none of whose candidates takes a value they state: lookups by those
    # values, and lookups by the ids of the records those found that name one of them (a search, then a get)
    try:
        async with pool.session() as session:
            for i, answer in wanted.items():
                if any(c.argued for c in candidates[i]):
                    continue
                task = scenarios[i].task
                for value in values[i][:VALUES_PER_TASK]:
                    for tool, parameter in lookups:
                        got = await lookup(session, tool, parameter, value, None)
                        if got is None:
                            continue
                        if holds(got.data, answer):
                            candidates[i].append(_candidate(task, [got], values[i], answer))
                            continue
                        records = [_record_text(r) for r in result_records(got.data, got.structured)]
                        ids = {
                            v
                            for r in records
                            if any(holds_answer(r, n) for n in values[i])
                            for v in ID_LIKE.findall(r)
                            if not holds_answer(task, v)
                        }
                        for key in sorted(ids)[:VALUES_PER_TASK]:
                            for then_tool, then_parameter in lookups:
                                then = await lookup(session, then_tool, then_parameter, key, got.index)
                                if then is not None and holds(then.data, answer):
                                    candidates[i].append(_candidate(task, [got, then], values[i], answer))
    except ServerGone as e:
        say(f"warning: finding references: {e.reason}")
    replayed: dict[str, str | None] = {}  # a chain's calls -> its last result replayed (None: it failed)
    limiter = anyio.CapacityLimiter(REPLAYS_AT_ONCE if pool.per_rollout else 1)

    async def confirm(i: int, answer: tuple[list[Any], bool]) -> None:
        """The first of task `i`'s best candidates whose replay holds its answer, as its reference."""
        for candidate in sorted(candidates[i], key=Candidate.key)[:REPLAYS_PER_TASK]:
            key = repr([(c.tool, c.arguments) for c in candidate.calls])
            if key not in replayed:
                async with limiter:
                    replayed[key] = await _replay(pool, candidate.calls)
            if (text := replayed[key]) is not None and holds(text, answer):
                calls_made = [*candidate.calls[:-1], candidate.calls[-1].model_copy(update={"result": text})]
                scenarios[i] = scenarios[i].model_copy(
                    update={
                        "reference": calls_made,
                        "tools": scenarios[i].tools or list(dict.fromkeys(c.tool for c in calls_made)),
                        "metadata": {
                            **scenarios[i].metadata,
                            "reference_from": "exploration",
                            "records": candidate.records,  # which reference the demonstration prefers
                        },
                    }
                )
                report.found += 1
                return

    async with anyio.create_task_group() as tg:
        for i, answer in wanted.items():
            tg.start_soon(confirm, i, answer)
    return scenarios, report


async def _replay(pool: ToolPool, calls: list[ReferenceCall]) -> str | None:
    """The last result of `calls` made in a fresh session; None where one failed."""
    last = None
    made: list[tuple[ReferenceCall, str]] = []
    try:
        async with pool.session() as session:
            for call in calls:
                outcome = await session.call(call.tool, reissued(call, made))
                if outcome.is_error:
                    return None
                made.append((call, outcome.text))
                last = outcome.data_text
    except ServerGone:
        return None
    return last
