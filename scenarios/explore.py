"""Exploring a live MCP server: a bounded, seeded walk over its tools that records every call and
result. Grounded tasks (`mcprl.scenarios.grounded`) are made from this record.

Which tools are called. MCP's tool annotations decide first (`readOnlyHint`, `destructiveHint`),
the tool's name and description second (`get_`/`list_`/`search_` read, `create_`/`delete_`/`send_`
write); a tool that says neither may write. A tool that may write is called only where each
session gets a fresh server (`isolated`: per-rollout stdio sessions by default), never on a
shared HTTP/SSE server unless `writes` is on. A stdio command that names a file (a database given
on the command line) keeps its state outside the process: such a server is not taken as isolated
unless the user says it is (`--isolated`).

Where arguments come from: `mcprl.scenarios.arguments` (earlier results of the session first, then
the schema), or, for a few calls where only the schema gave values, the generator model writing
JSON under the tool's input schema (a city a weather tool knows, a real-looking query). A value
taken from an earlier result links the two calls, so the record holds chains (search, then get;
list, then read), and multi-step tasks exist. After a write, the session's earlier reads are made
again, so the record shows what the write changed.

Bounds: `calls` in all, `minutes` of wall time, `call_timeout` per call (a tool that hangs is
skipped from then on); results are cut like the model's (`ServerSpec.max_result_chars`).
"""

from __future__ import annotations

import math
import random
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel, Field

from mcprl.scenarios.arguments import ArgumentWriter, SeenValue, coerce, words_of
from mcprl.scenarios.config import ExploreConfig
from mcprl.scenarios.results import MESSAGE, result_values
from mcprl.tools import ServerGone, redact_model
from mcprl.tools import ToolPool as Pool
from mcprl.tools.client import schema_validator
from mcprl.types import dump_jsonl

if TYPE_CHECKING:
    from mcprl.tools import ToolPool, ToolSession

# Leading words of tool names (and descriptions) that say what a tool does to the server's state.
READ_WORDS = frozenset(
    "get list search find read show describe fetch lookup look query count calculate compute convert compare check "
    "view info inspect explain summarize summarise resolve validate browse retrieve lookup stat status preview "
    "estimate evaluate analyze analyse parse format render translate tell whoami echo ping".split()
)
WRITE_WORDS = frozenset(
    "create delete remove update set write send post put patch insert move rename schedule cancel upload edit modify "
    "append clear reset drop execute exec run restart kill stop start commit push merge publish book buy order pay "
    "transfer grant revoke assign archive mark save store register subscribe invite apply install uninstall "
    "enable disable close open lock unlock approve reject submit replace upsert import sync".split()
)
SESSION_CALLS = 6  # calls per session: one chain's worth of state
SHOWN_VALUES = 24  # values shown to the generator model writing a call's arguments, the latest first
KNOWN_VALUES = 400  # distinct values an argument may be drawn from (the latest, where a session saw more)
SESSIONS_AT_ONCE = 4  # per-rollout sessions explored concurrently (each its own server process)
READ_BACKS = 2  # earlier reads repeated after a write, per write: what the write changed


def known(seen: list[SeenValue]) -> list[SeenValue]:
    """The distinct values a session has seen, each from the latest call that gave it, oldest first.
    Every record of a listing is a source, not only its last lines: drawn from the latest few
    values, every lookup took one of the last records' ids (a warehouse of 36 items explored 4)."""
    latest: dict[str, SeenValue] = {}
    for v in seen:
        latest.pop(repr(v.value), None)
        latest[repr(v.value)] = v
    return list(latest.values())[-KNOWN_VALUES:]


def source_call(source: str) -> int | None:
    """The call an argument's value came from (`ExploredCall.sources`: "result:<index>"), if a call's."""
    return int(source[7:]) if source.startswith("result:") else None


class ExploredCall(BaseModel):
    """One call made while exploring, and what came back."""

    index: int
    session: int = Field(description="calls of one session share the server's state")
    tool: str
    arguments: dict[str, Any]
    text: str
    structured: Any = None
    is_error: bool = False
    error_kind: str | None = None
    latency_s: float = 0.0
    writes: bool = Field(default=False, description="the tool may change the server's state (may_write)")
    sources: dict[str, str] = Field(default_factory=dict, description="argument -> where its value came from")
    parents: list[int] = Field(default_factory=list, description="calls whose results gave argument values")
    reads_back: int | None = Field(
        default=None, description="the write call this call reads back: it repeats `repeats` after it"
    )
    repeats: int | None = Field(default=None, description="the earlier read of the same session this call repeats")


class Exploration(BaseModel):
    calls: list[ExploredCall] = Field(default_factory=list)
    skipped_tools: dict[str, str] = Field(default_factory=dict, description="tool -> why it was not called")
    hung_tools: list[str] = Field(default_factory=list)
    seconds: float = 0.0

    def answered(self) -> list[str]:
        """The tools that answered at least once without error, in the order first seen."""
        return list(dict.fromkeys(c.tool for c in self.calls if not c.is_error))

    def summary(self) -> str:
        errors = sum(c.is_error for c in self.calls)
        chained = sum(bool(c.parents) and not c.is_error for c in self.calls)
        line = (
            f"explored {len(self.calls)} calls in {self.seconds:.0f} s: {len(self.calls) - errors} answered, "
            f"{errors} errors, {chained} chained; tools answering: {', '.join(self.answered()) or 'none'}"
        )
        if self.skipped_tools:
            line += f"; not called: {', '.join(f'{t} ({why})' for t, why in self.skipped_tools.items())}"
        return line


def may_write(tool: dict[str, Any]) -> bool:
    """Whether calling `tool` (an MCP tool definition) may change the server's state."""
    hints = tool.get("annotations") or {}
    if hints.get("readOnlyHint") is True:
        return False
    if hints.get("readOnlyHint") is False or hints.get("destructiveHint") is True:
        return True
    for text in (tool.get("name") or "", tool.get("description") or ""):
        words = words_of(text)[:2]
        if any(w in WRITE_WORDS for w in words):
            return True
        if any(w in READ_WORDS for w in words):
            return False
    return True


def names_a_file(command: list[str]) -> str | None:
    """The first argument of a stdio command (after the program) that names an existing file or
    folder, or looks like a data file's path: where a server keeps state that outlives its process."""
    for arg in command[1:]:
        value = arg.partition("=")[2] if arg.startswith("--") and "=" in arg else arg
        if (
            value.startswith("-")
            or "/" not in value
            and "." not in value
            or re.search(r"\.(py|m?js|ts|jar|rb)$", value)
        ):
            continue  # a flag, a module name, or the server's own program
        if re.search(r"\.(db|sqlite3?|json|csv|ya?ml|toml|txt|xlsx?|parquet)$", value, re.I) or Path(value).exists():
            return value
    return None


def is_isolated(pool: ToolPool, cfg: ExploreConfig, say: Callable[[str], None]) -> bool:
    """Whether each session of `pool` starts from fresh server state (see the module's docstring)."""
    if cfg.isolated is not None:
        return cfg.isolated
    if not pool.per_rollout:
        return False
    if (path := names_a_file(pool.spec.command)) is not None:
        say(
            f"note: the server's command names {path}: its state may live outside the process, so tools that may "
            f"write are not explored (pass --isolated if each session really starts fresh)"
        )
        return False
    return True


# Writes a call's arguments for a tool (its MCP definition), given values seen in the session; None if it cannot.
Proposer = Callable[[dict[str, Any], list[Any]], Awaitable["dict[str, Any] | None"]]


async def explore(
    pool: ToolPool,
    cfg: ExploreConfig,
    *,
    seed: int,
    say: Callable[[str], None] = print,
    record: Path | None = None,
    secrets: list[str] | None = None,
    propose: Proposer | None = None,
) -> Exploration:
    """Explore `pool`'s server within `cfg`'s bounds; the record is also written to `record`
    (JSONL, secrets masked) when given. `propose` (the generator model) writes the arguments of up
    to `cfg.generated` calls whose every value would otherwise be sampled from the schema."""
    assert pool.toolset is not None
    isolated = is_isolated(pool, cfg, say)
    out = Exploration()
    tools: dict[str, dict[str, Any]] = {}
    for tool in pool.toolset.mcp_tools:
        if may_write(tool) and not (isolated or cfg.writes):
            out.skipped_tools[tool["name"]] = (
                "may write, and the server is shared"
                if not pool.per_rollout
                else "may write, and the server's state may outlive its process"
            )
        else:
            tools[tool["name"]] = tool
    if not tools:
        return out
    spec = pool.spec.model_copy(update={"call_timeout": cfg.call_timeout})
    explorer = Pool(spec, per_rollout=pool.per_rollout)  # fresh temp dirs for stdio sessions
    writers = {name for name, tool in tools.items() if may_write(tool)}
    validators = {name: schema_validator(t.get("inputSchema") or {}) for name, t in tools.items()}
    # The tools in a seeded order, dealt out in turn to the sessions that run at once, each session
    # starting with its share and going on to the others in its own seeded order: the first
    # len(tools) calls try every tool (a small budget still covers them), each is tried about as
    # often as the others, and what session N calls (and with what, from its own generator) does
    # not depend on how the concurrent sessions interleave
    order = list(tools)
    random.Random(f"{seed}/explore").shuffle(order)
    at_once = SESSIONS_AT_ONCE if explorer.per_rollout else 1
    started = time.monotonic()

    def deal(number: int) -> list[str]:
        """The tools session `number` calls, in order: its share of the seeded order, then the rest."""
        share = list(dict.fromkeys(order[j % len(order)] for j in range(number, number + len(order), at_once)))
        rest = [n for n in order if n not in share]
        random.Random(f"{seed}/explore/{number}/deal").shuffle(rest)
        dealt = ([*share, *rest] * math.ceil(SESSION_CALLS / len(order)))[:SESSION_CALLS]
        # the calls that need no argument first (listings: their values feed the others' arguments,
        # so chains form), and reads before writes (a write shows what it changed by the reads before it)
        dealt.sort(key=lambda n: (bool((tools[n].get("inputSchema") or {}).get("required")), n in writers))
        return dealt

    # The bound shared out in session order before any call: session N makes at most `budgets[N]`
    # calls (its deal and the read-backs its writes may need), so which calls are made does not
    # depend on which session finished first (the generator's `generated` calls excepted: first
    # come, first served). What sessions left unused (a write that failed needs no read-back) is
    # shared out again to new sessions once they are all done, a round at a time.
    budgets: list[int] = []

    def plan(calls: int) -> range:
        first, total = len(budgets), 0
        while total < calls:
            dealt = deal(len(budgets))
            budgets.append(min(len(dealt) + READ_BACKS * sum(n in writers for n in dealt), calls - total))
            total += budgets[-1]
        return range(first, len(budgets))

    generated = 0  # calls whose arguments `propose` wrote

    async def call(
        session: ToolSession, number: int, name: str, args: dict[str, Any], **fields: Any
    ) -> ExploredCall | None:
        """Make and record one call; None when the server went away (the session ends)."""
        try:
            outcome = await session.call(name, args)
        except ServerGone as e:
            out.calls.append(
                ExploredCall(
                    index=len(out.calls),
                    session=number,
                    tool=name,
                    arguments=args,
                    writes=name in writers,
                    text=f"Error: the server went away ({e.reason})",
                    is_error=True,
                    error_kind="protocol",
                    **fields,
                )
            )
            return None
        recorded = ExploredCall(
            index=len(out.calls),
            session=number,
            tool=name,
            arguments=args,
            writes=name in writers,
            text=outcome.text,
            structured=outcome.structured,
            is_error=outcome.is_error,
            error_kind=outcome.error_kind,
            latency_s=round(outcome.latency_s, 3),
            **fields,
        )
        out.calls.append(recorded)
        if outcome.error_kind == "timeout" and name not in out.hung_tools:
            out.hung_tools.append(name)
            say(f"warning: {name} did not answer within {cfg.call_timeout:g} s while exploring; skipping it")
        return recorded

    async def session_walk(session: ToolSession, number: int) -> None:
        nonlocal generated
        rng = random.Random(f"{seed}/explore/{number}")
        writer = ArgumentWriter(rng)
        seen: list[SeenValue] = []
        reads: dict[str, ExploredCall] = {}  # the session's answered reads, by call: what a write may change
        made = 0
        for name in deal(number):
            if made >= budgets[number] or len(out.hung_tools) >= len(tools):
                return
            if name in out.hung_tools:
                continue
            made += 1
            schema = tools[name].get("inputSchema") or {}
            props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
            values = known(seen)
            for _ in range(3):  # a call the session already made tells nothing new: draw again
                args, sources, parents = writer.arguments(schema, values)
                args = {k: coerce(v, props.get(k) or {}) for k, v in args.items()}
                if repr((name, args)) not in reads:
                    break
            if validators[name] is not None and not validators[name].is_valid(args):
                args, sources, parents = writer.arguments(schema, [])  # what a result gave did not fit
                args = {k: coerce(v, props.get(k) or {}) for k, v in args.items()}
            if (
                propose is not None
                and generated < (cfg.generated or 0)
                and sources
                and set(sources.values()) == {"schema"}
            ):
                generated += 1  # nothing but the schema gave a value: a model may know what the tool wants
                written = await propose(tools[name], [v.value for v in seen[-SHOWN_VALUES:]])
                if (
                    isinstance(written, dict)
                    and written
                    and (validators[name] is None or validators[name].is_valid(written))
                ):
                    args, sources, parents = written, dict.fromkeys(written, "generator"), []
            made_call = await call(session, number, name, args, sources=sources, parents=parents)
            if made_call is None:
                return
            if made_call.is_error:
                continue
            # a result that is one sentence ("No items match.") is a message, not a value to pass on
            message = MESSAGE.fullmatch(made_call.text.strip()) is not None
            seen += [
                SeenValue(value=v, field=k, call=made_call.index)
                for k, v in result_values(made_call.text, made_call.structured)
                if not (isinstance(v, str) and (len(v) > 80 or message and v == made_call.text.strip()))
            ]
            if name not in writers:
                reads[repr((name, args))] = made_call
                continue
            # a write: read again what the session read before it, so the record shows what it changed;
            # first the reads of what the write named (a value in common), then of the whole state (no
            # arguments), then the latest
            named = {repr(v) for v in args.values()}
            backs = sorted(
                reads.values(),
                key=lambda c: (not named & {repr(v) for v in c.arguments.values()}, bool(c.arguments), -c.index),
            )
            for before in backs[:READ_BACKS]:
                if made >= budgets[number] or before.tool in out.hung_tools:
                    break
                made += 1
                again = await call(
                    session,
                    number,
                    before.tool,
                    before.arguments,
                    reads_back=made_call.index,
                    repeats=before.index,
                    sources=before.sources,
                    parents=before.parents,
                )
                if again is None:
                    return
                if not again.is_error:
                    reads[repr((again.tool, again.arguments))] = again

    async def worker(sessions: Iterator[int]) -> None:
        for number in sessions:
            if len(out.hung_tools) >= len(tools):
                return
            try:
                async with explorer.session() as session:
                    await session_walk(session, number)
            except ServerGone as e:
                say(f"warning: exploring: {e.reason}")
                if not out.calls:
                    return
            if number % 5 == 4:
                say(f"exploring: {len(out.calls)}/{cfg.calls} calls, {len(out.answered())}/{len(tools)} tools answered")

    async with explorer:
        with anyio.move_on_after(cfg.minutes * 60):
            while (left := cfg.calls - len(out.calls)) > 0 and len(out.hung_tools) < len(tools):
                before = len(out.calls)
                sessions = iter(plan(left))
                async with anyio.create_task_group() as tg:
                    for _ in range(at_once):
                        tg.start_soon(worker, sessions)
                if len(out.calls) == before:  # the server answers nothing more: no round will
                    break
    out.seconds = time.monotonic() - started
    # numbered by session, then by order within it, not by when concurrent sessions finished
    out.calls.sort(key=lambda c: (c.session, c.index))
    new = {c.index: i for i, c in enumerate(out.calls)}

    def renumbered(source: str) -> str:
        return f"result:{new[i]}" if (i := source_call(source)) in new else source

    out.calls = [
        c.model_copy(
            update={
                "index": new[c.index],
                "parents": [new[p] for p in c.parents if p in new],
                "sources": {k: renumbered(v) for k, v in c.sources.items()},
                "reads_back": new.get(c.reads_back),
                "repeats": new.get(c.repeats),
            }
        )
        for c in out.calls
    ]
    if record is not None:
        dump_jsonl([redact_model(c, secrets or []) for c in out.calls], record)
    return out
