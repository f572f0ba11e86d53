"""Grounded scenarios: tasks whose answers a live server gave, checked by value, with the call
chain that reached each one.

From an exploration's record (`mcprl.scenarios.explore`), every call that answered without error is a
source of tasks whose answer is a value its result holds (`mcprl.scenarios.candidates`):

    result   a short result (a computed number, a converted amount): "Add two numbers and return 3 + 4.
             What is the result?" (the description with the call's values in place of its arguments)
    field    a labelled field of a record the result holds ("price: 12.5", or a value its text states:
             "Confirmation code: ZOE67V."), asked about the record by a name-like value of its own or by
             the call's arguments, in one of a few wordings: 'What is the price of the item "steel hammer"?',
             'What is the price of the steel hammer?', 'What is the price of item SKU-3000?', or, one record of
             a search's listing, by what the search was about: 'What is the confirmation code in the email about Porto?'
    chain    a `result` whose call took an argument from an earlier call's result: both calls, in order
    query    a call of a query the lexicon knows (mcprl.scenarios.lexicon.QUERIES: SQL over a table or a column a
             result named) asked by what it means ("How many rows does the orders table have?"); a task never
             pastes a query, and one the lexicon does not know grounds only tasks that state no call
    write    a call that changed the server's state ("Add a product to the cart (product id P-101)."),
             checked by reading it back: a read the exploration repeated after the write, whose result
             then held a value it did not hold before (`Scenario.read_back`; the rollout makes that
             call in its own session once the episode is over)
    prepared any of the above from a read made after writes, where each session starts fresh and no write outlived
             it: asked about the state the writes left (a todo list's task), those of them the answer needs
             made by the environment before the episode (`Scenario.prepare`, `candidates.state_of`, `lighten`)

Each task carries a `holds` check (numbers by value, text as whole words; mcprl.checks), so the
`verify` judge scores it with no LLM; its reference chain (`Scenario.reference`: the calls, in
order); and a difficulty, the chain's length. Tasks are phrased from templates made of the tool's
description and the call's values (`mcprl.scenarios.phrasing`); a generator model may rephrase them (JSON via
`response_format`;
`ExploreConfig.phrase`), and a rephrasing that drops a value the task needs, or gives the answer
away, is not used.

A task that names its record but whose chain found it the long way (a listing's line) is given the
one call a person would make where one exists (`shortcut`: a search for the name). Before use,
every task's chain is replayed in a fresh session (mcprl.scenarios.replay): a task whose answer does not
come back where it came from (a random id, a chain that cannot reach it, a clock where it cannot be moved)
is dropped, unless its one call's JSON result gave it at one place that every replay fills anew (a roll of
dice, the time in Tokyo): it is then asked live, checked by what the episode's own call gives there
(mcprl.checks.LiveValue). What is left is deduplicated and spread over the tools; the report says how many were kept and
dropped, and why, and which tools no task covers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from contextlib import AsyncExitStack

import anyio
from pydantic import BaseModel, Field

from mcprl.checks import live_of
from mcprl.errors import UserError
from mcprl.scenarios.candidates import candidates
from mcprl.scenarios.explored import Exploration
from mcprl.scenarios.grounded_task import task_id
from mcprl.scenarios.isolation import may_write
from mcprl.scenarios.phrasing import phrase, task_titles
from mcprl.scenarios.replay import (
    REPLAYS_AT_ONCE,
    clock_bound,
    clock_moved,
    comes_back,
    live_task,
    replayed,
    text_parameter,
    verify,
)
from mcprl.scenarios.results import result_records
from mcprl.scenarios.selection import focus, optional_parameters, schema_defaults, select, stand_in_parameters
from mcprl.tools import ServerGone, ToolPool
from mcprl.types import ReferenceCall, Scenario


class GroundingReport(BaseModel):
    explored: int = 0
    candidates: int = 0
    kept: int = 0
    dropped: dict[str, int] = Field(default_factory=dict)
    tools: list[str] = Field(default_factory=list, description="the server's tools")
    covered: dict[str, int] = Field(default_factory=dict, description="tool -> kept tasks whose chain calls it")
    rephrased: int = 0
    shortened: int = Field(default=0, description="candidates given a one-call chain by `shortcut`")
    live: int = Field(
        default=0, description="kept tasks the server answers anew each time, checked by the episode's own call's value"
    )
    unprepared: int = Field(default=0, description="prepare calls dropped from kept questions that came back without")

    @property
    def uncovered(self) -> list[str]:
        return [t for t in self.tools if not self.covered.get(t)]

    def summary(self) -> str:
        dropped = ", ".join(f"{n} {why}" for why, n in self.dropped.items()) or "none"
        line = (
            f"grounded {self.kept} tasks ({self.rephrased} rephrased) in {self.explored} explored calls "
            f"({self.candidates} candidates, "
            f"{self.shortened} chains shortened, {self.live} answered anew each call, {self.unprepared} prepared "
            "writes not needed; "
            f"dropped: {dropped}); tasks per tool: {', '.join(f'{t} {n}' for t, n in self.covered.items()) or 'none'}"
        )
        if self.uncovered:
            line += f"; no task uses {', '.join(self.uncovered)}"
        return line


async def shortcut(tasks: list[Scenario], pool: ToolPool) -> int:
    """Give a task that names its record (`metadata["given"]`, a name it states) but whose chain finds
    it the long way (a listing's line; a listing, then a lookup by its id; a category's search) a
    one-call chain where one exists: a read-only tool of one text parameter, called with the name,
    whose result holds the answer in fewer records. That chain is what the demonstration and the
    references of unsolved groups show, and what a person would do: search for the steel level,
    not list 36 items first. Returns how many chains were shortened."""
    assert pool.toolset is not None
    tools = [(t["name"], p) for t in pool.toolset.mcp_tools if not may_write(t) and (p := text_parameter(t))]
    # (its one session has no prepared state: a task asked of one keeps its chain)
    long = [
        t for t in tasks if t.metadata.get("given") and t.read_back is None and not t.prepare and focus(t)[:2] > (1, 1)
    ]
    if not tools or not long:
        return 0
    found: dict[
        tuple[str, str], tuple[int, str, str] | None
    ] = {}  # (tool, name) -> its result's records, text and the server's text (data_text); None: an error
    shortened = 0
    try:  # a server gone leaves the rest of the chains as they were
        async with pool.session() as session:
            for t in long:
                name = t.metadata["given"][0]
                for tool, parameter in list(tools):
                    if (tool, name) not in found:
                        outcome = await session.call(tool, {parameter: name})
                        found[tool, name] = (
                            None
                            if outcome.is_error
                            else (
                                len(result_records(outcome.data_text, outcome.structured)),
                                outcome.text,
                                outcome.data_text,
                            )
                        )
                        if outcome.error_kind == "timeout":  # a tool that hangs is tried no more
                            tools.remove((tool, parameter))
                options = [
                    (got, tool, parameter)
                    for tool, parameter in tools
                    if (got := found[tool, name]) and comes_back(t.reference[-1].result, got[2], t.answer)
                ]
                if options and (min(options)[0][0], 1) < focus(t)[:2]:
                    (records, text, _), tool, parameter = min(options)
                    reference = [ReferenceCall(tool=tool, arguments={parameter: name}, result=text)]
                    if (tool, {parameter: name}) != (t.reference[-1].tool, t.reference[-1].arguments):
                        t.metadata["shortened"] = True  # another call than the one it asks about: right by its answer
                    t.id, t.tools, t.difficulty = task_id(t.task, reference), [tool], 1
                    t.reference = reference
                    t.metadata["records"] = records
                    shortened += 1
    except ServerGone:
        pass
    return shortened


async def lighten(tasks: list[Scenario], pool: ToolPool, *, say: Callable[[str], None] = print) -> int:
    """Drop from each question's `prepare` the writes its answer comes back without (replayed in a fresh session
    with one fewer, the latest first, until none can go): of the session's writes that made the state it read, the
    ones it needs, so that fewer records it does not ask about (another task named "test") stand beside the one it
    does. A write task keeps its own (what its check reads held before the write is what exploring saw). Returns how
    many went."""
    dropped = 0
    limiter = anyio.CapacityLimiter(REPLAYS_AT_ONCE)  # (a task with a prepare is asked only where sessions are fresh)

    async def lighter(k: int) -> None:
        nonlocal dropped
        task, went = tasks[k], True
        while went:  # until none can go: each write left is needed by what is left
            went = False
            for i in reversed(range(len(task.prepare))):
                fewer = task.model_copy(update={"prepare": task.prepare[:i] + task.prepare[i + 1 :]})
                async with limiter:
                    kept, _ = await replayed([fewer], pool, say=say)
                if kept and kept[0].check == task.check:  # (not asked live instead: an answer that came back other)
                    task, dropped, went = kept[0], dropped + 1, True
        tasks[k] = task

    async with anyio.create_task_group() as tg:
        for k, task in enumerate(tasks):
            if task.prepare and task.read_back is None:
                tg.start_soon(lighter, k)
    return dropped


async def ground(
    pool: ToolPool,
    n: int,
    exploration: Exploration,
    *,
    seed: int,
    phrase_with: str | None = None,
    api_base: str | None = None,
    max_calls: int | None = None,
    say: Callable[[str], None] = print,
) -> tuple[list[Scenario], GroundingReport]:
    """Up to `n` verified grounded tasks from `exploration` of `pool`'s server, and the report.
    Tasks are verified in the order `select` spreads them, a batch at a time, until `n` are kept;
    `phrase_with` (a generator model) rephrases the ones kept. `max_calls`: the calls an episode
    has room for; a task whose chain is longer no rollout could solve, and is not kept. What exploring found
    unsafe holds from here on, for the replays and the rollouts after them: the pool gives each session a home of
    its own where the server keeps its state there, and offers no tool whose writes outlived the process or changed
    the files it works on."""
    assert pool.toolset is not None
    if exploration.private_home:
        pool.give_private_homes()
    if exploration.outlived:
        pool.hide(set(exploration.outlived))
        say(
            f"not offering {', '.join(exploration.outlived)} to the policy: they may write, and this server's state "
            "outlived its process, so a rollout's write would stay there (--isolated if each session starts fresh)"
        )
    if exploration.withheld:
        pool.hide(set(exploration.withheld))
        say(
            f"not offering {', '.join(exploration.withheld)} to the policy: they may write to the files the server "
            "works on (they changed its copy of them while exploring, or never answered), and a task here does not "
            "ask to change yours"
        )
    descriptions = {t["name"]: t.get("description") or "" for t in pool.toolset.mcp_tools}
    optional = optional_parameters(pool.toolset.mcp_tools)
    found = candidates(
        exploration,
        descriptions,
        seed=seed,
        titles=task_titles(pool.toolset.mcp_tools),
        defaults=schema_defaults(pool.toolset.mcp_tools),
        stand_ins=stand_in_parameters(pool.toolset.mcp_tools),
    )
    # a task whose answer came from the server's clock is kept as it is only where it comes back with the clock
    # moved (`verify`), else asked live (`live_task`: checked by what the episode's own call gives) where it can be;
    # without a clock to move, a task whose result states today's date is asked live
    later = clock_moved(pool.spec)
    asked = (
        found
        if later is not None
        else [live_task(t, []) if clock_bound(t.reference[-1].result, t.answer) else t for t in found]
    )
    timeless = [t for t in asked if t is not None]
    fits = [t for t in timeless if max_calls is None or len(t.reference) <= max_calls]
    shortened = await shortcut(fits, pool)
    ordered, dropped = select(fits, len(fits), seed=seed, optional=optional)
    if len(timeless) < len(found):
        today = "holds only today (the server's clock, which libfaketime could not move here)"
        dropped[today] += len(found) - len(timeless)
    if len(fits) < len(timeless):
        dropped[f"more calls than an episode's {max_calls}"] += len(timeless) - len(fits)
    verified: list[Scenario] = []
    async with AsyncExitStack() as stack:
        moved = None  # the server with its clock moved, started once: every task is replayed on it too
        if later is not None:
            try:  # a server that cannot start with its clock moved keeps none of its clock's tasks
                moved = await stack.enter_async_context(
                    ToolPool(later, per_rollout=pool.per_rollout, workdir=pool.workdir)
                )
            except UserError as e:
                say(f"could not start the server with its clock moved ({e}); its clock's tasks are dropped")
        picked: list[Scenario] = []
        left: Counter = Counter()
        while ordered and len(picked) < n:
            batch, ordered = ordered[: n - len(picked)], ordered[n - len(picked) :]
            kept, lost = await verify(batch, pool, later=moved, say=say)
            verified += kept
            dropped.update(lost)
            # spread again: what verification dropped was not even, and one kept may ask what another does (a
            # name stated beside made-up ones), so more are verified until n are left
            picked, left = select(verified, n, seed=seed, optional=optional)
    dropped.update(left)
    unprepared = await lighten(picked, pool, say=say)
    rephrased = await phrase(picked, phrase_with, api_base=api_base, seed=seed) if phrase_with and picked else 0
    if ordered:
        dropped["beyond the number asked for"] += len(ordered)
    report = GroundingReport(
        explored=len(exploration.calls),
        candidates=len(found),
        kept=len(picked),
        dropped=dict(dropped),
        tools=list(descriptions),
        rephrased=rephrased,
        shortened=shortened,
        unprepared=unprepared,
    )
    report.live = sum(live_of(t.check) is not None for t in picked)
    covered: Counter = Counter(tool for t in picked for tool in t.tools)
    report.covered = {t: covered[t] for t in descriptions if covered[t]}
    return picked, report
