"""Reference chains and their replay: the calls a task's answer came from (`chain_of`), the ones a rollout must
make (`needed`), and the check that a task's chain, replayed in a fresh session, gives its answer back where it
came from (`comes_back`, `verify`). An answer from a result that states about today's date (`clock_bound`) is
replayed again with the server's clock moved (`clock_moved`), and holds only where it comes back then too. A
result that comes back other than recorded is replayed twice; an answer the server gives anew each time is asked
live where it can be (`live_task`).
Grounding (mcprl.scenarios.grounded) and the references found for a user's own tasks
(mcprl.scenarios.answers) replay their chains here."""

from __future__ import annotations

import contextlib
import datetime
import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from mcprl.checks import (
    HoldsCheck,
    LiveValue,
    holds_answer,
    labelled_lines,
    live_of,
    normalize_text,
    same_value,
    value_at,
)
from mcprl.scenarios.explored import ExploredCall, source_call
from mcprl.scenarios.results import (
    ISO_DATE,
    RELATIVE_TIME,
    answer_paths,
    clock_spans,
    counted,
    listing_size,
    result_data,
    result_values,
)
from mcprl.tools import ServerGone, ServerSpec, ToolPool, ToolSession
from mcprl.types import ReferenceCall, Scenario

REPLAYS_AT_ONCE = 4  # chains replayed at once where every session is its own server process
WEEKDAYS = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
# Where a task's answer came from a result that read the server's clock, the task is replayed again with the
# clock this far ahead (libfaketime's offset): half a year and a day, on the other side of daylight saving in both
# hemispheres, on another weekday, at another hour. An answer that comes back then too (9:30 in Tokyo is 6:00 in
# Kolkata) does not hold only today.
CLOCK_MOVE = "+4397.3h"
SO = "libfaketime.so.1"  # libfaketime's library, by its file's name


def chain_of(calls: list[ExploredCall], call: ExploredCall) -> list[ExploredCall]:
    """`call` and the calls its arguments came from, transitively, in the order they were made."""
    by_index = {c.index: c for c in calls}
    order: dict[int, ExploredCall] = {}
    todo = [call]
    while todo:
        c = todo.pop()
        if c.index not in order:
            order[c.index] = c
            todo += [by_index[p] for p in c.parents if p in by_index]
    return [order[i] for i in sorted(order)]


def reissued(step: ReferenceCall, made: list[tuple[ReferenceCall, str]]) -> dict[str, Any]:
    """`step`'s arguments as replayed after the calls `made` (each as recorded, and what it answered now): a value
    it took from an earlier result is that result's value now, at the same field, where the server issued another
    (the id of a session a load opened, new in every process)."""
    arguments = dict(step.arguments)
    for k, v in step.arguments.items():
        if source_call(step.sources.get(k, "")) is None or isinstance(v, (dict, list)):
            continue
        for recorded, now in reversed(made):
            fields = {f for f, value in result_values(recorded.result, None) if str(value) == str(v)}
            issued = {str(value): value for f, value in result_values(now, None) if f in fields}
            if fields:
                if len(issued) == 1:
                    value = next(iter(issued.values()))
                    arguments[k] = str(value) if isinstance(v, str) else value
                break
    return arguments


def needed(task: str, chain: list[ExploredCall]) -> list[ExploredCall]:
    """The calls of `chain` a rollout must make: the last, the writes (they made the state the
    others read), and the earlier calls whose results gave one of those a value the task does not
    state (a list, where it does not state each of its items). `What is the price of the item with sku
    SKU-3000?` needs `get_item` alone, although exploring found SKU-3000 by `list_items` first."""
    by_index = {c.index: c for c in chain}
    made, todo = set(), [chain[-1], *(c for c in chain if c.writes)]
    while todo:
        c = todo.pop()
        if c.index in made:
            continue
        made.add(c.index)
        for k, v in c.arguments.items():
            stated = all(holds_answer(task, item) for item in v) if isinstance(v, list) else holds_answer(task, v)
            if (parent := by_index.get(source_call(c.sources.get(k, "")))) and not stated:
                todo.append(parent)
    return [c for c in chain if c.index in made]


def comes_back(original: str, replayed: str, answer: Any) -> bool:
    """Whether a replayed result gives `answer` where the `original` result gave it: in each field that held it
    there (a time difference of 9 hours, not the "+09:00" of a date beside it), in each time it said as how long from
    now; anywhere in its text where no field did (prose that states it)."""

    def places(text: str) -> set[str]:
        return {field for field, value in result_values(text, None) if holds_answer(str(value), answer)}

    # (and a time said as how long from now that held it says so again: with the clock half a year on, "in 3 months"
    # is "3 months ago", which holds the 3)
    said = {m[0].lower() for m in RELATIVE_TIME.finditer(original) if holds_answer(m[0], answer)}
    return (
        holds_answer(replayed, answer)
        and places(original) <= places(replayed)
        and all(s in replayed.lower() for s in said)
    )


def recorded(task: Scenario) -> str:
    """The recorded result `task`'s answer was read from: its chain's last ("" for a write's, read back live)."""
    return task.reference[-1].result if task.read_back is None else ""


def gives_answer(task: Scenario, replayed: str) -> bool:
    """Whether the replayed result of `task`'s chain (or of its read-back) gives its answer: each of its values
    where the recorded result gave it (`comes_back`); a count, which is in no text, by listing as many values; a
    live answer (`live_task`), by having a value where the recorded result had it. And the record it names is there
    (`names_again`)."""
    if not names_again(task, replayed):
        return False
    if (live := live_of(task.check)) is not None:
        return value_at(replayed, live.field) is not None
    if task.metadata.get("kind") == "count":  # (a listing's lines, or the records of a JSON one)
        return task.answer in (counted(replayed), listing_size(result_data(replayed, None)))
    original = recorded(task)
    return all(comes_back(original, replayed, v) for v in answer_values(task))


def answer_values(task: Scenario) -> list[Any]:
    """The values `task`'s answer is: each of a listing's, or the one."""
    return task.answer if isinstance(task.answer, list) else [task.answer]


def answered_anew(task: Scenario, results: list[str]) -> bool:
    """Whether two fresh sessions gave the fields that held `task`'s answer in its recorded result other values
    (a die's rolls [3, 1] then [3, 2]): the answer came back in both by chance, not as a fixed one. The fields whose
    value is the answer, not those that hold it in a longer text (the 9 of a time "09:00:01" beside a difference of
    9 hours). (A live task's answer is the one each session gives.)"""
    if len(results) < 2 or results[0] == results[1] or live_of(task.check) is not None:
        return False
    fields = {f for f, v in result_values(recorded(task), None) if any(same_value(v, a) for a in answer_values(task))}

    def held(text: str) -> list[tuple[str, str]]:
        return sorted((f, str(v)) for f, v in result_values(text, None) if f in fields)

    return held(results[0]) != held(results[1])


def names_again(task: Scenario, replayed: str) -> bool:
    """Whether the values `task` states that its recorded result held (the record it names) are in the replayed
    result too: a record named by the time it was made is none a replay, or an episode, has."""
    original = recorded(task)
    return all(holds_answer(replayed, g) for g in task.metadata.get("given") or [] if holds_answer(original, g))


def live_task(task: Scenario, replays: list[str]) -> Scenario | None:
    """`task` checked by the value its call gives in each episode (`HoldsCheck.live`), for a server that answers
    anew each time (dice, the clock, live data): where its one call's JSON result gave the answer at one place
    (the field the task asks for, where several held it), or its text on one labelled line ("Day: Wednesday"), and
    every replay gives a value there too. None for a
    task that cannot be asked so: a count, a listing, a write read back, a chain whose call takes an earlier
    result's value (an episode's would differ), one `shortcut` gave (known to be the task's by the answer it gave,
    which a value given anew shows nothing of), an answer in text no path or label reaches."""
    if (
        not isinstance(task.check, HoldsCheck)
        or task.read_back is not None
        or task.metadata.get("shortened")
        or len(task.reference) != 1
        or isinstance(task.answer, list)
        or task.metadata.get("kind") == "count"
    ):
        return None
    call = task.reference[0]
    try:  # JSON, as the judge reads it (`value_at`), not a Python literal the grounding also reads
        paths = answer_paths(json.loads(call.result), task.answer)
    except ValueError:  # a text: the lines labelled so ("Day: Wednesday")
        paths = [label for label, value in labelled_lines(call.result) if same_value(value, task.answer)]
    if len(paths) > 1 and (field := task.metadata.get("field")):
        paths = [p for p in paths if p.rpartition(".")[2] == field]
    if len(paths) != 1 or any(value_at(r, paths[0]) is None or not names_again(task, r) for r in replays):
        return None
    live = LiveValue(tool=call.tool, arguments=call.arguments, field=paths[0])
    return task.model_copy(update={"check": HoldsCheck(**task.check.model_dump(exclude={"kind"}), live=live)})


async def verify(
    tasks: list[Scenario], pool: ToolPool, *, later: ToolPool | None = None, say: Callable[[str], None] = print
) -> tuple[list[Scenario], Counter]:
    """The tasks whose reference chain, replayed in a fresh session, still brings their answer back where it
    came from; and why the others were dropped. Where the server can run with its clock moved (`later`, from
    `clock_moved`), every task must bring its answer back there too: an answer read off the clock holds only today
    whether or not its result states a date ("The number of days in month is 31." of the month it is now). Without
    one, or where every chain fails with the clock moved (the server does not run so), a task whose result states
    about today's date (`clock_bound`) holds only today."""
    kept, dropped = await replayed(tasks, pool, say=say)
    asked = [t for t in kept if live_of(t.check) is None]
    dated = {t.id for t in asked if clock_bound(t.reference[-1].result, t.answer, any_answer=later is not None)}
    # those that do not come back with the clock moved are asked live where they can be (`replayed`)
    held, lost = await replayed(asked, later, say=say) if later is not None and asked else ([], Counter())
    runs = later is not None and (held or lost["chain failed on replay"] < len(asked))
    after = {t.id: t for t in held}
    gone = {t.id for t in asked} - set(after) if runs else dated
    kept = [after.get(t.id, t) for t in kept if t.id not in gone]
    if gone:
        dropped["holds only today (another answer with the clock moved)"] += len(gone)
    return kept, dropped


async def replayed(
    tasks: list[Scenario], pool: ToolPool, *, say: Callable[[str], None] = print
) -> tuple[list[Scenario], Counter]:
    """The tasks whose reference chain, replayed in a fresh session of `pool` (after the task's `prepare`), brings
    their answer back where it came from (`comes_back`); and why the others were dropped. Tasks sharing a chain
    share one replay, and chains that write nothing one session."""
    by_chain: dict[str, list[Scenario]] = defaultdict(list)
    for t in tasks:
        by_chain[
            repr([[(c.tool, c.arguments) for c in calls] for calls in (t.prepare, t.reference)] + [t.read_back])
        ].append(t)
    kept: list[Scenario] = []
    dropped: Counter = Counter()
    limiter = anyio.CapacityLimiter(REPLAYS_AT_ONCE if pool.per_rollout else 1)
    done = running = 0
    retry: list[list[Scenario]] = []  # chains that failed while others replayed beside them, to replay alone
    # a chain -> the values it took from a result that the server issued anew on replay (a session's id)
    renewed: dict[int, set[str]] = defaultdict(set)

    async def chain(session: ToolSession, group: list[Scenario]) -> str | None:
        """The chain's last result (or its read-back's) in `session`, the task's state prepared first; None where
        a call failed."""
        last = None
        read_back = [ReferenceCall(**group[0].read_back)] if group[0].read_back else []
        made: list[tuple[ReferenceCall, str]] = []
        for step in [*group[0].prepare, *group[0].reference, *read_back]:
            arguments = reissued(step, made)
            renewed[id(group)] |= {str(v) for k, v in step.arguments.items() if arguments[k] != v}
            outcome = await session.call(step.tool, arguments)
            if outcome.is_error:
                return None
            made.append((step, outcome.text))
            last = outcome.data_text  # the server's text, not our placeholder for an image
        return last

    async def run(group: list[Scenario]) -> str | None:
        """The chain's last result in a fresh session; None where a call failed."""
        try:
            async with pool.session() as session:
                return await chain(session, group)
        except ServerGone:
            return None

    async def replay(group: list[Scenario]) -> None:
        nonlocal done, running
        async with limiter:
            running += 1
            crowded = running > 1
            results = [await run(group)]
            # a result that came back other than recorded may come from a server that answers anew each time
            # (dice): it is replayed once more, so that an answer that came back by chance is not taken as fixed
            if group[0].read_back is None and results[0] not in (None, group[0].reference[-1].result):
                results.append(await run(group))
            crowded = crowded or running > 1
            running -= 1
        if None in results and crowded:
            retry.append(group)
            limiter.total_tokens = 1  # from now on, one at a time
            return
        for t in group:
            if None in results:
                dropped["chain failed on replay"] += 1
            elif any(holds_answer(t.task, v) for v in renewed[id(group)]):  # a rollout would send what it states
                dropped["states a value the server issues anew each session"] += 1
            elif all(gives_answer(t, r) for r in results) and not answered_anew(t, results):
                kept.append(t)
            elif len(results) > 1 and results[0] == results[1] and not clock_spans(results[0]):
                # fresh sessions answer alike, and otherwise than the record: its answer came from what the calls
                # before it in the exploring session left (a count of the thoughts sent so far), not anew each time
                dropped["answered otherwise in every fresh session"] += 1
            elif (live := live_task(t, results)) is not None:  # another answer each time, at one place
                kept.append(live)
            else:
                dropped["answer not reproduced"] += 1
        done += 1
        if done % 20 == 0:
            say(f"verifying grounded tasks: {done}/{len(by_chain)} chains replayed, {len(kept)} tasks kept")

    # chains that write nothing, where each session is a server process of its own: replayed one after another in
    # one session (one process, not one each). A read changes no state (as exploring takes it), so each finds the
    # server as a fresh session would; one that does not give its result back there as recorded is replayed in a
    # fresh session after all
    reads: list[list[Scenario]] = []
    alone: list[list[Scenario]] = []
    for group in by_chain.values():
        quiet = pool.per_rollout and not group[0].prepare and not any(c.writes for c in group[0].reference)
        (reads if quiet else alone).append(group)
    if reads:
        passed: list[list[Scenario]] = []
        many = len(reads) > 1
        with contextlib.suppress(ServerGone):
            async with pool.session() as session:
                while reads:
                    result = await chain(session, reads[0])
                    group = reads.pop(0)
                    if result == group[0].reference[-1].result and all(gives_answer(t, result) for t in group):
                        passed.append(group)
                    else:
                        alone.append(group)
                # the first made again: where it reads otherwise now, the reads changed what it reads (a count of the
                # calls so far), and each is replayed in a fresh session after all
                if passed and many and await chain(session, passed[0]) != passed[0][0].reference[-1].result:
                    alone += passed
                    passed = []
        kept += [t for group in passed for t in group]
        done += len(passed)
        alone += reads  # the server went away: the rest each in a session of its own
    async with anyio.create_task_group() as tg:
        for group in alone:
            tg.start_soon(replay, group)
    # a chain that failed while others replayed beside it may have failed for them (a database file that one
    # process at a time may lock): it is replayed again, alone
    again, retry = retry, []
    for group in again:
        await replay(group)
    order = {t.id: i for i, t in enumerate(tasks)}
    return sorted(kept, key=lambda t: order[t.id]), dropped


def clock_bound(text: str, answer: Any, now: datetime.datetime | None = None, *, any_answer: bool = False) -> bool:
    """Whether an answer may hold only today: the result it comes from states the date of about now
    (the server read its clock: an ISO date, or a Unix time in seconds or milliseconds, `"last_scan_time":
    1796145733`), and the answer is such a date, a weekday, a flag or an offset (a number, "+6.0h", "-04:00")
    rather than a name or a record's field (a commit's author stays). With `any_answer` (the server can be
    replayed with its clock moved, which keeps every answer that holds then too), any answer of such a result: a
    month's name in any calendar is read off the clock as a date is."""
    return bool(clock_spans(text, now) or RELATIVE_TIME.search(text)) and (any_answer or of_clock_kind(answer))


def of_clock_kind(answer: Any) -> bool:
    """Whether a value is of a kind the clock gives: a date, a weekday, a flag or an offset (a number, "+6.0h",
    "-04:00"), not a name."""
    said = str(answer).strip()
    return (
        ISO_DATE.search(said) is not None
        or normalize_text(said) in WEEKDAYS | {"true", "false"}
        or isinstance(answer, (int, float))
        or re.fullmatch(r"[+-]?\d+(?:[.:]\d+)?\s*h?", said) is not None
    )


def clock_library() -> Path | None:
    """libfaketime's library, preloaded to move a server's clock: the system's (Debian's `faketime` package), else the
    one the `libfaketime` package ships (a dependency on Linux), where a process preloaded with it reads the clock
    moved; None where neither is, or neither moves it (another machine's build)."""
    candidates: list[Path] = []
    if (faketime := shutil.which("faketime")) is not None:
        # (the library itself, not the `faketime` program: that one makes a semaphore named by its process id and
        # leaves it behind when it is killed, and a later process given that id cannot start)
        prefix = Path(faketime).resolve().parent.parent
        candidates += [p for pattern in ("lib*/faketime/", "lib*/*/faketime/") for p in prefix.glob(f"{pattern}{SO}")]
    if (package := importlib.util.find_spec("libfaketime")) is not None and package.submodule_search_locations:
        candidates.append(Path(package.submodule_search_locations[0], "vendor", "libfaketime", "src", SO))
    return next((p for p in candidates if moves_clock(p)), None)


@functools.cache
def moves_clock(library: Path) -> bool:
    """Whether a process preloaded with `library` reads its clock `CLOCK_MOVE` ahead (a library built for another
    machine is ignored by the loader, and the clock would be today's: every answer would seem to hold)."""
    if not library.is_file():
        return False
    env = {**os.environ, "LD_PRELOAD": str(library), "FAKETIME": CLOCK_MOVE}
    try:
        said = subprocess.run(
            [sys.executable, "-c", "import time; print(time.time())"], env=env, capture_output=True, timeout=30
        ).stdout
        ahead = float(said) - time.time()
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return False
    return abs(ahead - float(CLOCK_MOVE.strip("+h")) * 3600) < 600


def clock_moved(spec: ServerSpec) -> ServerSpec | None:
    """`spec`'s server started with its clock `CLOCK_MOVE` ahead (`clock_library`, preloaded); None where it cannot be:
    a server behind a URL, or no libfaketime that moves it."""
    if spec.transport != "stdio" or (library := clock_library()) is None:
        return None
    preloaded = spec.env.get("LD_PRELOAD", "")
    # an offset, not a date: the clock goes on from there, and the server's timers keep time
    moved = {"LD_PRELOAD": ":".join(filter(None, [str(library), preloaded])), "FAKETIME": CLOCK_MOVE}
    return spec.model_copy(update={"env": {**spec.env, **moved}})


def text_parameter(tool: dict[str, Any]) -> str | None:
    """The one text parameter a tool can be called with alone (its one required parameter, or its
    one parameter when none is required), if it has one."""
    schema = tool.get("inputSchema") or {}
    props, required = schema.get("properties") or {}, schema.get("required") or []
    names = required if required else list(props)
    if len(names) == 1 and (props.get(names[0]) or {}).get("type") == "string":
        return names[0]
    return None
