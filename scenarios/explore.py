"""Exploring a live MCP server: a bounded, seeded search over its tools, steered by what the server
answers, that records every call and result. Grounded tasks (`mcprl.scenarios.grounded`) are made
from this record.

Which tools are called: `mcprl.scenarios.isolation` (a tool that may write only where each session
gets a fresh server). Nor is a server taken as isolated whose fresh session, once a write showed in a read made
again after it (one write a session until then), reads otherwise than the first one did (a file of its own): its
writes stop there. A server run on copies of the
user's files (`ServerSpec.private_copy`) is isolated, and a tool whose write changed the files there is retired
after it (`Exploration.withheld`): a task does not ask to change the user's repository or database, while a
write kept in the server's process (a project registered, a working folder set) is explored on; a tool never
seen answering there is withheld too (what it would change is not known). A read that answered only after such a
write in its session is made again at a later session's start, before its writes (`unwritten`), and a write that
answered on the copies without changing them spends no share of the writes (`unchanging`). The session of
that first write, and the one checking after it, run with a home folder of their own
(`ServerSpec.private_home`), where the server reads as it did in the user's: a server that keeps its
state under the home (`~/.local/share/<app>`) writes into that one, is then given one per session
from there on (rollouts too), and the user's is never written.

Where arguments come from: `mcprl.scenarios.values` (the schema, the server's command line and
resources, earlier results, values errors named, what worked before, a fuzzing dictionary), each
source chosen per parameter by what the server's answers taught; and, for a tool that has not
answered, the generator model writing JSON under the tool's input schema, shown what the server said of the tool's
failed calls (`generated` calls at most; the offline local one only for a tool that has not answered in a few
calls). A value taken from an earlier result of the session links the two calls, so the record holds
chains (search, then get; list, then read), and multi-step tasks exist. After a write, the
session's earlier reads are made again, so the record shows what the write changed. Where each session is a fresh
server, a write that filled what it holds nothing of (a read that found nothing gave values after it: a table made
in an empty database, then listed) is made again, as it was, first in each later session (those that filled, in
turn): their reads explore what it made, and tasks prepared by it ask about that.

The search: sessions one after another (a per-rollout server: each its own process), each of a few calls: first the
tools not called yet, then by what they gave (a tool whose answers were new is called more than one that repeats
itself, one that has not answered yet keeps getting tries). No call is made twice (one that failed would fail again,
a read would say the same, a write would do what was seen done), but the reads repeated after a write to see what it
changed (until writes are found to change nothing read back), and a call refused before a write made the handle it
sends (below); a tool whose error said which tool comes first ("Use initialize_memory_bank to create one") is called
again right after that one (`told_first`); a tool whose last `retire_after` calls failed, or whose last answers to
them said nothing of a state that held something, or that has nothing new to be sent, gets no more calls, and the
record says which errors it gave and which sources were tried; sessions that make no call end the search.
A parameter that many tools require, that no made-up value worked for and no result named, is a handle
(`Exploration.handles`: the id of a session a load opens, another in every process): the tools that take it wait
while a write that takes none, which may issue it, is left to call (the load); once a write's result gave one that
worked, a session whose tools take it makes that write first, as it was made then, and the parameter is sent what the
write issued under its name. A task
states no handle: it says the write before the call ("Load ... Then ... for the previous result"), and its replay
takes the handle the write issues then. A write that makes a handle the waiting tools take (tree-sitter's project,
registered by a path and named by it) gives them a turn right after it, though another write of the session took its
turn before (a configuration set first in each session); they are sent the name or id its result gave, and a call
refused before any write had made the handle it sends is made again once (`Knowledge.renewed`), as a person retries
after registering. A write whose change to a copy of the user's files is records of the
server's own alone (under a hidden folder it made: a history of the file it loaded) is no change of theirs.

Bounds: `calls` in all (`ExploreConfig.budget`: more on a server of many tools; by default a quarter more for the
writes on copies of the user's files, which a set budget shares), `minutes` of wall
time, `call_timeout` per call (a tool that hangs is skipped from then on), `rate` calls a second at
most; an error that asks to slow down (HTTP 429, "rate limit") backs off. Results are cut like the
model's (`ServerSpec.max_result_chars`).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from mcprl.scenarios.config import ExploreConfig
from mcprl.scenarios.explored import Exploration, ExploredCall, ToolReport, source_call
from mcprl.scenarios.isolation import is_isolated, may_write, unsafe_writers
from mcprl.scenarios.lexicon import IDENTIFYING, RATE_LIMITED
from mcprl.scenarios.results import MESSAGE, enumerated, found_nothing, reports, result_values, says_done
from mcprl.scenarios.value_sources import context_values, documented, file_texts, folder_entries
from mcprl.scenarios.values import AWAITING, SENT_ALL, Drawn, Knowledge, call_key, gist, stems
from mcprl.tools import ServerGone, redact_model
from mcprl.tools import ToolPool as Pool
from mcprl.tools.convert import inlined, reports_error
from mcprl.tools.copies import changed_paths, files_of, own_records
from mcprl.types import dump_jsonl

if TYPE_CHECKING:
    from mcprl.tools import ToolPool, ToolSession

SESSION_CALLS = 6  # calls per session: one chain's worth of state
QUIET_COPIES = 2  # a write's answers on copies of the user's files, none changing them: no share of the writes'
IDLE_SESSIONS = 3  # sessions in a row that made no call: exploring is over (a session may end before its first call)
READ_BACKS = 2  # earlier reads repeated after a write, per write: what the write changed
CLEAN_READS = 3  # reads made again at a session's start, where a write the user's files keep came before each
QUIET_WRITES = 2  # writes of a tool that changed none of the reads made again after them: no more read-backs
# writes of any tools that changed no read made again after them, none having changed one: a server whose tools
# compute rather than store (named like writes, unannotated), read back after no more writes
QUIET_SERVER = 4
PERSISTENCE_READS = 2  # reads that showed a write, asked again in a fresh session: did the state outlive it?
WRITE_SHARE = 0.25  # of the calls, for writes on copies of the user's files (`ServerSpec.private_copy`)
CORRECTIONS = 3  # calls made again, in turn, with the values an error named for the parameter it blamed
BACKOFF_S = (2.0, 5.0, 15.0)  # waits after errors that ask to slow down, in turn
REDUCTIONS = 2  # reads of a tool given two optional values or more whose values are each left out in turn


# Writes a call's arguments for a tool (its MCP definition), given values seen so far and the tool's calls that
# failed, each with the first line of what the server said ("Only CREATE TABLE statements are allowed": what a
# generator that reads it writes next); None if it cannot.
Proposer = Callable[[dict[str, Any], list[Any], list[tuple[dict[str, Any], str]]], Awaitable["dict[str, Any] | None"]]
SHOWN_VALUES = 24  # values shown to the generator model writing a call's arguments, the latest first
SHOWN_ERRORS = 4  # a tool's failed calls shown to it, the latest, one a distinct error
LATE_TRIES = 3  # calls of a tool, none answered, before a late generator is asked


def told_first(text: str, tools: list[str]) -> str | None:
    """The tool an error tells to call first, of `tools`: the first one its text names as a word ("Memory Bank not
    found. Use initialize_memory_bank to create one."), a name of two words or more (`set_memory_bank_path`,
    `setWorkingDir`), as no English word of an error is ("could not read" names no tool `read`)."""
    named = [
        (m.start(), tool)
        for tool in tools
        if re.search(r"[_-]|[a-z][A-Z]", tool)
        for m in [re.search(rf"(?<![\w-]){re.escape(tool)}(?![\w-])", text)]
        if m is not None
    ]
    return min(named)[1] if named else None


async def explore(
    pool: ToolPool,
    cfg: ExploreConfig,
    *,
    seed: int,
    say: Callable[[str], None] = print,
    record: Path | None = None,
    secrets: list[str] | None = None,
    propose: Proposer | None = None,
    propose_late: bool = False,
) -> Exploration:
    """Explore `pool`'s server within `cfg`'s bounds; the record is also written to `record`
    (JSONL, secrets masked) when given. `propose` (the generator model) writes the arguments of up
    to `cfg.generated` calls of tools whose latest call's values were all made up; `propose_late`
    (a slow or weak generator: the offline local one) only for tools that have not answered in
    LATE_TRIES calls."""
    assert pool.toolset is not None
    isolated = is_isolated(pool, cfg, say)
    unsafe = unsafe_writers(pool, cfg, say=lambda _: None)  # the note was just said
    out = Exploration(isolated=isolated)
    tools: dict[str, dict[str, Any]] = {}
    for tool in pool.toolset.mcp_tools:
        if tool["name"] in unsafe:
            out.skipped_tools[tool["name"]] = unsafe[tool["name"]]
        else:  # (its schema's parts each standing alone: values are drawn and checked part by part)
            # (and its parameters described where only its docstring describes them)
            tools[tool["name"]] = {**tool, "inputSchema": inlined(documented(tool).get("inputSchema") or {})}
    if not tools:
        return out
    budget = cfg.budget(len(pool.toolset.mcp_tools))
    spec = pool.spec.model_copy(update={"call_timeout": cfg.call_timeout})
    explorer = Pool(spec, per_rollout=pool.per_rollout)  # fresh temp dirs for stdio sessions
    writers = frozenset(name for name, tool in tools.items() if may_write(tool))
    # the tools the server says destroy, where it tells them from writes that only add (MCP's `destructiveHint`, true
    # of some writes, false of others): called only once a fresh session was seen to start fresh, or on copies;
    # before, what they would delete may be the user's (a knowledge graph in a file of the server's own)
    destroys = {n: (t.get("annotations") or {}).get("destructiveHint") for n, t in tools.items() if n in writers}
    destroyers = frozenset(n for n, d in destroys.items() if d is True) if False in destroys.values() else frozenset()
    # on a server run on copies of the user's files what tasks ask about is there already: writes are explored for
    # what they open (a project registered, a working folder set), within a share of the calls: one beyond the
    # default budget, so that the reads keep theirs (of a budget the user set, a share of it)
    write_calls = int(budget * WRITE_SHARE) if pool.spec.private_copy and writers else budget
    share_used = f"the share of calls for writes ({write_calls}) was used"
    budget += write_calls if write_calls < budget and cfg.calls is None else 0
    context = context_values(pool.toolset.spec, pool.toolset.resources, pool.toolset.resource_templates)
    params = {t["name"]: list((t.get("inputSchema") or {}).get("properties") or {}) for t in pool.toolset.mcp_tools}
    folders = folder_entries(pool.toolset.spec, context)
    knowledge = Knowledge(
        context,
        writers,
        folders,
        params,
        fresh_sessions=isolated and pool.per_rollout,
        descriptions={t["name"]: t.get("description") or "" for t in pool.toolset.mcp_tools},
        texts=file_texts(pool.toolset.spec, context, folders),
    )
    order = list(tools)
    random.Random(f"{seed}/explore").shuffle(order)
    retired: dict[str, str] = {}
    started = time.monotonic()
    last_call = 0.0
    generated = 0  # calls whose arguments `propose` wrote
    backoffs = 0

    # session -> the copies of the user's files as its first write found them (as they were made: reads write none)
    originals: dict[int, dict[str, tuple[int, int]]] = {}
    kept_files: Counter = Counter()  # write -> its answers on copies of the user's files that left them as they were
    # writes that filled what a fresh server holds nothing of (`call_key` -> tool, arguments): a read that found nothing
    # before one gave values after it (a table made, then listed); where each session is a fresh server, a session
    # begins with one of them, in turn, made again as it was: its reads explore the records it made, as a task
    # prepared by it asks about them (a store that starts empty has nothing to ask about otherwise)
    filling: dict[str, tuple[str, dict[str, Any]]] = {}
    reduced: Counter = Counter()  # read -> its calls whose optional values were each left out in turn (`REDUCTIONS`)
    turns_given: set[str] = set()  # the values writes gave that gave tools turns (`open_turns`)
    firsts: set[tuple[int, str]] = set()  # (session, tool) an error told to call first, called so there (`told_first`)

    def required(name: str) -> list[str]:
        return list((tools[name].get("inputSchema") or {}).get("required") or [])

    def unchanging() -> set[str]:
        """The writes that answered QUIET_COPIES times or more on copies of the user's files and never changed them:
        a query tool that says it may write, run on a copy of the database it reads. They spend no share of the
        writes, and what they answer is read as a read's."""
        return {w for w in writers if kept_files[w] >= QUIET_COPIES and w not in out.withheld}

    def spent() -> bool:
        """Whether the share of calls for writes is used; the writes are retired then, but those that issue what
        others take (a session's id: made for them as they need it), and, where tools take a handle
        (`Exploration.handles`), those that take none, which may issue it (the load of a file, whose tries are
        bounded as any tool's are). The share keeps the reads theirs: once every read is retired, the calls left are
        the writes' (those retired for the share are called again)."""
        quiet = unchanging()
        reads = set(tools) - writers | quiet
        if reads and all(n in retired for n in reads):
            for writer in [w for w, why in retired.items() if why == share_used]:
                del retired[writer]
            return False
        if sum(knowledge.logs[w].calls for w in writers - quiet) < write_calls:
            return False
        issuing = {w for issued in knowledge.issuers.values() for w in issued}
        if any(p in knowledge.handles for name in tools for p in required(name)):
            issuing |= {w for w in writers if not knowledge.handles & set(required(w))}
        for writer in writers - set(retired) - issuing - quiet:
            retired[writer] = share_used
        return True

    def handles() -> set[str]:
        """The parameters that take a handle (`Knowledge.handles`), as far as the calls so far tell: those that
        AWAITING tools or more require and that awaited a value some call issues, and, where each session is a fresh
        server, those that took a value a write gave that another making of it, alike, did not give (a handle the server
        issues anew, not a record it made again alike)."""
        requiring = Counter(p for name in tools for p in required(name))  # (a handle is what many tools require)
        knowledge.handles.update(p for p, n in requiring.items() if n >= AWAITING and knowledge.awaited(p))
        # (none that a value worked for that no call issued: a database's path found in a folder listed, awaited while
        # only made-up ones were sent)
        knowledge.handles -= {p for p in knowledge.handles if knowledge.worked.get(p) and not knowledge.issuers.get(p)}
        knowledge.handles.update(p for p in knowledge.issued if knowledge.fresh_sessions and knowledge.renews(p))
        return knowledge.handles

    def openers(live: list[str]) -> list[str]:
        """The writes that take no handle and are named for one that no call is known to issue yet
        (`register_project_tool` of `project`, `create_session` of `session_id`): the load that opens one, by its
        name. Each session makes them first, and the writes' turns (`open_turns`) are theirs, until a call issues
        the handle; what another write gives no tool awaiting one."""
        unissued = {w for p in knowledge.handles if not knowledge.issuers.get(p) for w in stems(p)} - IDENTIFYING
        return [n for n in live if n in writers and not knowledge.handles & set(required(n)) and stems(n) & unissued]

    def plan(number: int) -> tuple[list[str], dict[str, dict[str, Any]]]:
        """The tools session `number` calls, in order: those not called yet first (in the seeded
        order), then drawn by what they gave; calls that need no argument first (listings: their
        values feed the others' arguments), reads before writes (a write shows what it changed by
        the reads before it). A tool that requires a handle (`Knowledge.awaited`: a session's id, which made-up
        values never were) that no call is known to issue waits while others are left to call (the load that opens
        one); where each session is a fresh server, a tool that takes a value only a write of its session issues
        has that write made before it, as it was made when it issued one (returned with those arguments; the
        issuers in turn); where none is, a write that filled an empty state (`filling`, in turn) is made first."""
        rng = random.Random(f"{seed}/explore/{number}/plan")
        handles()
        shared = spent()

        def issuers(p: str) -> list[str]:
            return [w for w in knowledge.issuers[p] if retired.get(w, SENT_ALL) == SENT_ALL]

        unchecked = isolated and not persistence_checked and not pool.spec.private_copy
        live = [n for n in order if n not in retired and not (unchecked and n in destroyers)]
        # (waiting while a write that takes no handle, which may issue one, is left to call: else no call would)
        if any(n in writers and not knowledge.handles & set(required(n)) for n in live):
            live = [n for n in live if not any(p in knowledge.handles and not issuers(p) for p in required(n))] or live
        # (an issuer, then, called as it is needed; not one that spends no share, a read in effect)
        sharing = writers - unchanging() if shared else set()
        drawn = [n for n in live if not (n in sharing and any(n in issued for issued in knowledge.issuers.values()))]
        opening = openers(live)
        picked = [*opening, *(n for n in live if not knowledge.logs[n].calls and n not in opening)][:SESSION_CALLS]
        while drawn and len(picked) < SESSION_CALLS:
            picked.append(rng.choices(drawn, weights=[knowledge.logs[n].weight() for n in drawn])[0])
        issuing: dict[str, dict[str, Any]] = {}

        def issue(name: str, chain: tuple[str, ...] = ()) -> None:
            """Into `issuing`: an issuer of each handle `name` requires, after the issuers of those it requires itself
            (a request planned before a task is added to it, which requires the request's id)."""
            for p in required(name):
                made = [w for w in issuers(p) if w != name and w not in chain]
                if made and not set(issuing) & set(knowledge.issuers[p]):
                    issuer = made[number % len(made)]
                    issue(issuer, (*chain, name))
                    # (made without a handle it takes as an option: the one it was sent first was made up before
                    # any was known to be one, "session id 60", and issued nothing a fresh server had)
                    issuing[issuer] = {
                        k: v
                        for k, v in knowledge.issuers[p][issuer].items()
                        if k not in knowledge.handles or k in required(issuer)
                    }

        if knowledge.fresh_sessions:
            for name in list(picked):
                issue(name)
        filler = None
        # (not one that changed the user's files: no task asks after it; nor one whose state outlived its process)
        fillers = [
            (name, args) for name, args in filling.values() if name not in out.withheld and name not in out.outlived
        ]
        if knowledge.fresh_sessions and fillers and not issuing:
            filler, args = fillers[number % len(fillers)]
            issue(filler)  # (a task added to a request: the request planned first)
            issuing[filler] = args
        # (the issuers first, each once; a filling write's tool drawn too is explored after it, as any other)
        picked = [*issuing, *(n for n in picked if n not in issuing or n == filler)]
        first = len(issuing) + len(opening)
        at = sorted(range(len(picked)), key=lambda i: (i >= first, bool(required(picked[i])), picked[i] in writers))
        return [picked[i] for i in at], issuing

    async def call(
        session: ToolSession, number: int, name: str, args: dict[str, Any], leaves: list[Drawn], **fields: Any
    ) -> ExploredCall | None:
        """Make, record and learn from one call; None when the server went away or hung on it (the session ends)."""
        nonlocal last_call, backoffs
        if cfg.rate is not None and (wait := last_call + 1 / cfg.rate - time.monotonic()) > 0:
            await anyio.sleep(wait)
        last_call = time.monotonic()
        sources: dict[str, str] = fields.pop("sources", {})
        # per argument: a result of this session where any of its leaves came from one, else its first leaf's arm
        for d in leaves:
            if d.parent is not None and source_call(sources.get(d.argument, "")) is None:
                sources[d.argument] = f"result:{d.parent}"
            sources.setdefault(d.argument, d.arm)
        parents = sorted({d.parent for d in leaves if d.parent is not None} | set(fields.pop("parents", [])))
        made = ExploredCall(
            index=len(out.calls),
            session=number,
            tool=name,
            arguments=args,
            writes=name in writers,
            sources=sources,
            parents=parents,
            text="",
            **fields,
        )
        # a write on copies of the user's files (`ServerSpec.private_copy`): what it changed there, compared
        held = files_of(session.copy_folders) if name in writers and session.copy_folders else None
        original = originals.setdefault(number, held) if held is not None else None  # (the session's first write's)
        try:
            outcome = await session.call(name, args)
        except ServerGone as e:
            out.calls.append(
                made.model_copy(
                    update={
                        "text": f"Error: the server went away ({e.reason})",
                        "is_error": True,
                        "error_kind": "protocol",
                    }
                )
            )
            return None
        made = made.model_copy(
            update={
                "text": outcome.text,
                "data_text": None if outcome.data_text == outcome.text else outcome.data_text,
                "structured": outcome.structured,
                "digest": hashlib.sha256(
                    outcome.result.model_dump_json().encode() if outcome.result else outcome.text.encode()
                ).hexdigest()[:16],
                "is_error": outcome.is_error,
                "error_kind": outcome.error_kind,
                "latency_s": round(outcome.latency_s, 3),
            }
        )
        out.calls.append(made)
        now = files_of(session.copy_folders) if held is not None and not outcome.is_error else held
        kept_files[name] += held is not None and not outcome.is_error and now == held
        if (
            held is not None
            and name not in out.withheld
            and now != held
            and not own_records(session.copy_folders, original or {}, changed_paths(held, now), session.made_files)
        ):
            # it changed the files the server works on: no task asks to change the user's repository or database (but
            # records of the server's own it made, a history of a file it loaded, change nothing of the user's)
            out.withheld.append(name)
            retired[name] = "changed the files the server works on (in a copy of them)"
        if outcome.is_error and RATE_LIMITED.search(outcome.text):  # not the arguments' fault: slow down
            await anyio.sleep(BACKOFF_S[min(backoffs, len(BACKOFF_S) - 1)])
            backoffs += 1
            return made
        # a result that is one sentence ("No items match.") or says what was done: a message, not a value to pass on;
        # nor a write's word that it was done (`{"message": "Insight added"}`), nor what a part of the result says
        # went wrong ("a.txt: Error - ENOENT"), nor a rule between parts ("---"); and one that found nothing gives
        # none (what it holds is what it was sent, said back: `{"message": "No matches found for 'x' in /srv"}`)
        message = MESSAGE.fullmatch(made.data.strip()) is not None or reports(made.data)
        values = (
            []
            if outcome.is_error or found_nothing(made.data, args)
            else [
                (k, v)
                for k, v in result_values(made.data, outcome.structured, beside=True)
                if not (message and v == made.data.strip())
                and not (made.writes and says_done(v))
                and not (isinstance(v, str) and (reports_error(v) or not re.search(r"\w", v)))
            ]
        )
        # (the names a text lists by commas, each a value of a field of its own: "md5" of "blake2b, md5, sha1" is sent
        # where the digests beside it, of that text's field, were refused)
        values += [(f"{k}[]", item) for k, v in values for item in enumerated(v)]
        knowledge.learn(
            name,
            args,
            leaves,
            index=made.index,
            session=number,
            text=outcome.text,
            is_error=outcome.is_error,
            error_kind=outcome.error_kind,
            values=values,
            again=made.repeats is not None,
        )
        if outcome.error_kind == "timeout":
            if name not in out.hung_tools:
                out.hung_tools.append(name)
                retired[name] = f"did not answer within {cfg.call_timeout:g} s"
                say(f"warning: {name} did not answer within {cfg.call_timeout:g} s while exploring; skipping it")
            # the session ends: a server still at the call it hung on answers the next ones late, or slows them all
            # (mcp-sympy's `checkodesol` kept its core busy, and the calls after it took twice as long); the next
            # session starts it afresh
            return None
        if name not in retired and (why := knowledge.retired(name, cfg.retire_after)):
            retired[name] = why
        return made

    async def arguments(name: str, number: int, rng: random.Random) -> tuple[dict[str, Any], list[Drawn]] | None:
        """A call of `name` not made yet: drawn from the sources, or, for a tool whose latest call
        had only made-up values (nothing the server gave fits it), written by the generator."""
        nonlocal generated
        tool = tools[name]
        log = knowledge.logs[name]
        late = not log.answered and log.calls >= LATE_TRIES
        schema = tool.get("inputSchema") or {}
        # (not while a result of this session named a value for it that it was not sent: the server's word first)
        if (
            propose is not None
            and generated < (cfg.generated or 0)
            and log.invented
            and (late or not propose_late)
            and not knowledge.offered(name, schema, number)
        ):
            generated += 1
            failed = [(args, line) for line, args in list(log.failed_with.items())[-SHOWN_ERRORS:]]
            written = await propose(tool, [v.value for v in reversed(knowledge.seen[-SHOWN_VALUES:])], failed)
            if isinstance(written, dict) and written:
                drawn = knowledge.proposed(name, schema, written, number)
                if drawn is not None:
                    return written, drawn
        return knowledge.arguments(name, schema, number, rng)

    # reads answered in a fresh session before any write: in an isolated server every session starts in
    # that state, so they are what a session's first write changes (read again after it), made once
    fresh_reads: dict[str, ExploredCall] = {}
    unchanged: Counter = Counter()  # tool that may write -> its writes whose reads made again all said the same
    read_back: Counter = Counter()  # a read (tool, arguments) -> the times it was made again after a write
    altered: Counter = Counter()  # ... and the times it answered otherwise then
    shown_any = False  # whether a read made again after a write ever answered otherwise
    persistence_checked = cfg.isolated is not None  # the user said whether sessions start fresh
    # a home folder of each session's own, for the first write and the check after it (the module's docstring):
    # "untried" until a session is about to write, "trial" from then until the check, then "kept" or "off"
    homes = (
        "untried"
        if isolated and not persistence_checked and writers and explorer.per_rollout and not spec.private_home
        else "off"
    )
    home_wrote: list[str] = []  # what the first write changed under the home it was given

    def quiet_server() -> bool:
        """Whether QUIET_SERVER writes changed no read made again after them, none having changed one: tools that
        compute rather than store (named like writes, unannotated)."""
        return not shown_any and unchanged.total() >= QUIET_SERVER

    def unwritten() -> list[ExploredCall]:
        """The reads (not read-backs) that answered only in sessions where a write the user's files would keep had
        answered before them, each once, and were never made in a session without one: to be made again in a
        session before its writes (`CLEAN_READS`)."""
        after: dict[str, ExploredCall] = {}
        clean: set[str] = set()
        written: set[int] = set()  # the sessions such a write answered in, so far
        reads = set(tools) - writers | unchanging()
        for c in out.calls:
            if c.tool in out.withheld and not c.is_error:
                written.add(c.session)
            elif c.tool in reads and c.reads_back is None:
                # (one made in a session without such a write was made clean, whether it answered or failed: one
                # that failed there needs the write, and a failed call is never made again alike)
                if c.session not in written:
                    clean.add(call_key(c.tool, c.arguments))
                elif not c.is_error:
                    after.setdefault(call_key(c.tool, c.arguments), c)
        stopped = set(out.hung_tools) | {n for n in tools if knowledge.logs[n].failing >= cfg.retire_after}
        # (nor one whose tool refused a value it was sent since: where the write was not, it needs it)
        return [
            c
            for key, c in after.items()
            if key not in clean and c.tool not in stopped and not knowledge.refused_since(c.tool, c.arguments, c.index)
        ]

    async def repeat(session: ToolSession, number: int, before: ExploredCall, **fields: Any) -> ExploredCall | None:
        """`before`'s call made again in `session`: a read asked again after a write, or in a fresh session. A value
        it took from a result of another session is one that worked, here: the call is linked to no call of that
        session (a status read again at a session's start is no step after the last session's setting of its
        folder)."""
        here = {c.index for c in out.calls if c.session == number}
        return await call(
            session,
            number,
            before.tool,
            before.arguments,
            [],
            repeats=before.index,
            sources={k: s if source_call(s) in here | {None} else "worked" for k, s in before.sources.items()},
            parents=[p for p in before.parents if p in here],
            **fields,
        )

    async def outlived(session: ToolSession, number: int) -> str | None:
        """A read that showed the write (read again after it, it answered otherwise: up to PERSISTENCE_READS, those
        of the whole state first) that this fresh session answers as it did after the write, twice: state that
        outlived the process. Not a clock or dice (they answer otherwise every time), nor a value each session has
        of its own (its working directory: the same before and after the write, another in this session). None
        when none does, or no read showed the write."""
        after = {c.repeats: c for c in out.calls if c.reads_back is not None and not c.is_error}
        showed = [b for b in fresh_reads.values() if b.index in after and after[b.index].digest != b.digest]
        for before in sorted(showed, key=lambda c: (bool(c.arguments), c.index))[:PERSISTENCE_READS]:
            answers = []
            for _ in range(2):
                again = await repeat(session, number, before)
                if again is None or again.is_error or again.digest != after[before.index].digest:
                    break
                answers.append(again.digest)
            if len(answers) == 2:
                return before.tool
        return None

    async def session_walk(session: ToolSession, number: int) -> None:
        nonlocal persistence_checked, homes, shown_any
        rng = random.Random(f"{seed}/explore/{number}")
        # a write names paths only in this session's own folders (`Knowledge.sendable`): a process of its own undoes
        # nothing it wrote elsewhere on the machine (a stdio server's; an HTTP server's paths are of its machine)
        knowledge.bounds = session.own_folders if session.spec.transport == "stdio" else None
        # the answered reads of the state the session is in, by call: what a write may change
        reads: dict[str, ExploredCall] = dict(fresh_reads) if isolated else {}
        wrote = False

        def answered_read(made: ExploredCall) -> None:
            """A read that answered: the state the session is in (before its first write, a fresh server's)."""
            reads[repr((made.tool, made.arguments))] = made
            if isolated and not wrote:
                fresh_reads[repr((made.tool, made.arguments))] = made

        if homes == "trial" and not any(c.writes for c in out.calls):
            # the first session with a home of its own: a read that answered in the user's and fails here needs
            # something of the user's (a configuration, a credential): such a server is explored in theirs
            here: dict[str, ExploredCall] = {}
            # of the whole state, and data first (not an image alone): the reads this home's writes are read back by
            state_first = sorted(fresh_reads.values(), key=lambda c: (bool(c.arguments), not c.data.strip(), c.index))
            for before in state_first[:PERSISTENCE_READS]:
                again = await repeat(session, number, before)
                if again is None or again.is_error:
                    homes = "off"
                    say(
                        f"note: {before.tool} answered in your home folder and not in one of its own; the server "
                        "is explored in yours"
                    )
                    return
                here[repr((again.tool, again.arguments))] = again
            # the state the first write changes is this home's: what the user's home read (their own records) is no
            # "before" to it
            reads = dict(here)
            fresh_reads.clear()
            fresh_reads.update(here)
        if isolated and not persistence_checked and fresh_reads and (shown_any or quiet_server()):
            # once after a write showed in a read made again (one that showed nothing, an entity made that was there
            # already, leaves nothing to check by), or writes were found to show in none: does a fresh session still
            # read what the first one did? If not, the server keeps its state outside its process (a file of its
            # own), and writes would pile up there
            persistence_checked = True
            changed = await outlived(session, number)
            if changed is None and home_wrote:
                out.private_home = True
                say(
                    f"note: the server wrote {', '.join(home_wrote)} under the home folder it was given, and a "
                    "fresh one starts empty: each of its sessions (rollouts too) gets a home of its own "
                    "(--private-home), and yours is not written"
                )
            homes = "kept" if out.private_home else "off"
            if changed is not None:
                for writer in writers - set(retired):
                    retired[writer] = "may write, and the server's state outlived its process"
                out.outlived = sorted(writers)
                landed = [c for c in out.calls if c.writes and not c.is_error]
                say(
                    f"warning: {changed} answered differently in a fresh session: the server keeps its state "
                    "outside its process, so tools that may write are not explored further "
                    f"(--isolated says otherwise); the {len(landed)} write(s) it answered before are kept there, "
                    "undo them if that state is yours:"
                )
                for c in landed:  # whole, not clipped: what a user needs to find and undo each
                    say(f"  {c.tool} {json.dumps(c.arguments, default=str)}")
        # reads that answered only after a write of their session that changed the user's files (no task asks after
        # such a write: `Exploration.withheld`), made again here before any write, a few a session
        for before in unwritten()[:CLEAN_READS]:
            if len(out.calls) >= budget:
                return
            again = await repeat(session, number, before)
            if again is None:
                return
            if not again.is_error:
                answered_read(again)
        queue, issuing = plan(number)
        # a write an error told to make first, in `issuing` -> the call of it made again as it was (this session's)
        remaking: dict[str, int] = {}
        opened = False  # whether a write of this session gave the tools that had not answered their turn
        at = 0

        def open_turns(write: str, gave: set[int]) -> None:
            """A write that gave values (a project registered, a connection opened, an entity made), or whose reads
            made again gave new ones (a table made, then listed), may make what the tools that have told nothing yet
            need (not answered, or answered only that they found nothing: a search of an empty store): they get a
            turn in this session right after it, sent those values first (`state_from`); once a session, and again
            for a write that gave values no write gave turns with before, while tools take a handle and none of them
            answered (tree-sitter's project registered, after the configuration set first in each session had taken
            the session's turn); while a write named for a handle awaited is left to make (`openers`), another's turns
            go to the tools that take no handle (no sure "Project not found" each session)."""
            nonlocal opened
            new = {repr(v.value) for v in knowledge.seen if v.call in gave}
            if not new:
                return
            if opened and not (
                new - turns_given
                and any(
                    knowledge.handles & set(required(n)) and not knowledge.logs[n].answered
                    for n in tools
                    if n not in writers
                )
            ):
                return
            opened = True
            turns_given.update(new)
            waiting = [n for n in order if n not in retired and n not in writers and not knowledge.logs[n].told]
            if (opening := openers(order)) and write not in opening:
                # (the turns of a write not named for a handle awaited go to the tools that take none)
                waiting = [n for n in waiting if not knowledge.handles & set(required(n))]
            queue[at:at] = waiting[:SESSION_CALLS]

        while at < len(queue):  # (a list that grows while walked: the turns a write gives come right after it)
            name = queue[at]
            at += 1
            if len(out.calls) >= budget:
                return
            if name in writers and wrote and isolated and not persistence_checked and fresh_reads:
                # a fresh session checks for state that outlives the process before any other write, so that a server
                # keeping it in a file of its own (a user's knowledge graph) gets one write that shows, not a session's
                # worth; the session's reads are still made (a write that issues a handle goes first in each session,
                # and a write drawn after it ended the session there: its reads were never made)
                continue
            if name in writers:
                spent()
            if name in retired and name not in issuing:
                continue
            # (an issuing write made again as it was: in a fresh server it issues anew, where nothing was done yet)
            remade = issuing.pop(name, None)
            sendable = remade is not None and knowledge.sendable(name, remade)  # (a path of its session's, gone)
            drawn = (remade, []) if sendable else await arguments(name, number, rng)
            if drawn is None:
                knowledge.logs[name].exhausted += 1
                if why := knowledge.retired(name, cfg.retire_after):
                    retired[name] = why
                continue
            args, leaves = drawn
            if name in writers and homes == "untried":
                homes = "trial"  # the first write, in a session with a home of its own
                return
            # the trial's write: what the home folder holds before it, to see what it (or a correction of it) wrote
            home = session.home if name in writers and homes == "trial" and not home_wrote else None
            home_held = files_of([home]) if home is not None else None
            answers = len(knowledge.logs[name].results)  # (to tell whether this call's answer was new)
            remade_from = remaking.pop(name, None)
            on_purpose = {"repeats": remade_from} if sendable and remade_from is not None else {}
            made_call = await call(session, number, name, args, leaves, **on_purpose)
            if made_call is None:
                return
            # made again as a person who read the error would: with the values it named for what it blamed, in turn
            # while each fails blaming nothing else ("the columns: customer, item, quantity", then "could not convert
            # 'Ana Ruiz'"), CORRECTIONS at most
            hint = knowledge.hints.get(name)
            for _ in range(CORRECTIONS if made_call.is_error else 0):
                again = knowledge.corrected(name, tools[name].get("inputSchema") or {}, args, leaves)
                if again is None or len(out.calls) >= budget:
                    break
                args, leaves = again
                made_call = await call(session, number, name, args, leaves)
                if made_call is None:
                    return
                if not made_call.is_error:
                    break
                if hint is not None:  # (an error blaming a parameter again says what to send next itself)
                    knowledge.hints.setdefault(name, hint)
            if made_call.is_error:
                # an error that tells which other tool to call first ("Memory Bank not found. Use
                # initialize_memory_bank to create one."): that one next, then this tool again, once a session (calls
                # not made yet: the one that failed may fail again for its values, and no request is sent twice);
                # where each session is a fresh server, that one as a write of it that answered before was made, one
                # retired too (the bank made again, as a person would, not a new one drawn)
                setups: dict[str, ExploredCall] = {}
                for c in out.calls if knowledge.fresh_sessions else []:
                    if (
                        c.tool in writers
                        and not c.is_error
                        and c.repeats is None
                        and knowledge.sendable(c.tool, c.arguments)
                    ):
                        setups.setdefault(c.tool, c)
                first = told_first(
                    made_call.text, [n for n in tools if n != name and (n not in retired or n in setups)]
                )
                if first is not None and (number, first) not in firsts:
                    firsts.add((number, first))
                    queue[at:at] = [first, name]
                    if first in setups and first not in issuing:
                        issuing[first] = setups[first].arguments
                        remaking[first] = setups[first].index  # (made again on purpose: the record says so)
                continue
            if home is not None and home_held is not None:
                home_wrote.extend(os.path.relpath(p, home) for p in changed_paths(home_held, files_of([home])))
            if name not in writers:
                answered_read(made_call)
                # a new answer of a read given optional values: made again with what it needs alone (its required
                # parameters, and those an error asked for), once; where that says the same, the values changed
                # nothing, and a task asks of the plain call and states none of them (an exclusion that excluded
                # nothing, a flag that flagged nothing)
                needs = set((tools[name].get("inputSchema") or {}).get("required") or []) | knowledge.wanted
                plain = {k: v for k, v in args.items() if k in needs}
                new = len(knowledge.logs[name].results) > answers
                said = gist(made_call.text, {})
                alike = False
                if plain != args and new and call_key(name, plain) not in knowledge.made and len(out.calls) < budget:
                    bare = await call(session, number, name, plain, [d for d in leaves if d.argument in plain])
                    if bare is None:
                        return
                    if not bare.is_error:
                        answered_read(bare)
                        alike = gist(bare.text, {}) == said
                # where that said otherwise, of two optional values or more, each left out in turn, and kept out where
                # the answer stays: the fewest that say it (the date that set a time difference, not the zone and
                # the city sent beside it, which changed nothing), a call a task asks of and states alone
                optional = [k for k in args if k not in needs]
                if new and not alike and len(optional) >= 2 and reduced[name] < REDUCTIONS:
                    reduced[name] += 1
                    kept = dict(args)
                    for k in optional:
                        fewer = {a: v for a, v in kept.items() if a != k}
                        if call_key(name, fewer) in knowledge.made or len(out.calls) >= budget:
                            continue
                        tried = await call(session, number, name, fewer, [d for d in leaves if d.argument in fewer])
                        if tried is None:
                            return
                        if not tried.is_error:
                            answered_read(tried)
                            if gist(tried.text, {}) == said:
                                kept = fewer
                continue
            wrote = True
            open_turns(name, {made_call.index})
            # its writes (or the server's, none having shown) changed no read so far (a sum, not a store): reading
            # back tells nothing
            if unchanged[name] >= QUIET_WRITES or quiet_server():
                continue
            # a write: read again what the session read before it, so the record shows what it changed;
            # first the reads of what the write named (a value in common), then those that gave data (not an
            # image alone: nothing to ask about), not read back already to no change (a catalogue no add to a cart
            # changes, where the cart's size did), of the whole state (no arguments), read back the fewest times
            # (each read of the state gets its turn: the moves left after a move, not the turn alone), the latest
            named = {repr(v) for v in args.values()}
            backs = sorted(
                reads.values(),
                key=lambda c: (
                    not named & {repr(v) for v in c.arguments.values()},
                    not c.data.strip(),
                    read_back[key := repr((c.tool, c.arguments))] > 0 and not altered[key],
                    bool(c.arguments),
                    read_back[key],
                    -c.index,
                ),
            )
            shown = None  # whether a read made again answered otherwise
            showed: set[int] = set()  # the reads made again that answered otherwise
            for before in backs[:READ_BACKS]:
                # (a read with no new call left to make is still made again; one that hangs or fails is not)
                stopped = knowledge.logs[before.tool].failing >= cfg.retire_after or before.tool in out.hung_tools
                if len(out.calls) >= budget or stopped:
                    break
                again = await repeat(session, number, before, reads_back=made_call.index)
                if again is None:
                    return
                read_back[repr((before.tool, before.arguments))] += 1
                if not again.is_error:
                    reads[repr((again.tool, again.arguments))] = again
                differs = again.digest != before.digest
                shown = shown or differs
                if differs:
                    altered[repr((before.tool, before.arguments))] += 1
                    showed.add(again.index)
                    gave = any(v.call == again.index for v in knowledge.seen)
                    if gave and found_nothing(before.text, before.arguments):
                        filling.setdefault(call_key(name, args), (name, args))
            if shown is False:
                unchanged[name] += 1
            shown_any = shown_any or bool(shown)
            open_turns(name, showed)

    async with explorer:
        with anyio.move_on_after(cfg.minutes * 60):
            number = idle = 0
            while len(out.calls) < budget and len(retired) < len(tools):
                before = len(out.calls)
                opened = False
                try:
                    async with explorer.session(private_home=True if homes in ("trial", "kept") else None) as session:
                        opened = True
                        await session_walk(session, number)
                except ServerGone as e:
                    if not opened and homes == "trial":  # it does not start without the user's home
                        homes = "off"
                        say(f"note: the server did not start with a home folder of its own ({e.reason}): yours then")
                        continue
                    say(f"warning: exploring: {e.reason}")
                    if not out.calls:
                        break
                number += 1
                if number % 5 == 0:
                    say(
                        f"exploring: {len(out.calls)}/{budget} calls, {len(out.answered())}/{len(tools)} tools answered"
                    )
                idle = idle + 1 if len(out.calls) == before else 0
                if (
                    idle
                    and all(knowledge.logs[n].exhausted for n in tools if n not in retired)
                    or idle >= IDLE_SESSIONS
                ):
                    break  # nothing new to send to any tool, or no tool is left to call that any session makes
    out.seconds = time.monotonic() - started
    if pool.spec.private_copy:  # a write never seen answering: what it would change in the user's files is not known
        out.withheld += sorted(w for w in writers if not knowledge.logs[w].answered and w not in out.withheld)
    # a write that landed under the home it was given, the check after it not made (the budget ran out): a home of
    # each session's own is the safe side
    out.private_home = out.private_home or homes == "trial" and bool(home_wrote)
    out.handles = sorted(handles())
    out.fixed = {name: knowledge.worked[name][0] for name in knowledge.worked if knowledge.fixed(name)}
    for name in tools:
        log = knowledge.logs[name]
        out.tools[name] = ToolReport(
            calls=log.calls,
            answered=log.answered,
            distinct=len(log.results),
            errors=dict(log.errors.most_common(2)),
            sources=dict(log.arms.most_common()),
            retired=retired.get(name),
        )
    if record is not None:
        dump_jsonl([redact_model(c, secrets or []) for c in out.calls], record)
    return out
