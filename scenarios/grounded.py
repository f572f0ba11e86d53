"""Grounded scenarios: tasks whose answers a live server gave, checked by value, with the call
chain that reached each one.

From an exploration's record (`mcprl.scenarios.explore`), every call that answered without error is a
source of tasks whose answer is a value its result holds:

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
             made by the environment before the episode (`Scenario.prepare`, `state_of`, `lighten`)

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

import hashlib
import json
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio
from pydantic import BaseModel, Field

from mcprl.checks import Check, ContainsCheck, HoldsCheck, as_number, holds_answer, live_of, normalize_text, numbers
from mcprl.errors import UserError
from mcprl.scenarios.explore import Exploration, ExploredCall, may_write, source_call
from mcprl.scenarios.lexicon import (
    EARLIEST,
    LATEST,
    NAME_KEYS,
    NOT_KINDS,
    about,
    known,
    participle,
    question,
    record_of,
    shaped,
    singular,
    spoken,
    stated,
    words_of,
)
from mcprl.scenarios.phrasing import (
    ASKS,
    DOES,
    FORMULA_ASKS,
    NAME_ASKS,
    STATE_NAME_ASKS,
    TOPIC_ASKS,
    Said,
    field_words,
    formula,
    noun_of,
    phrase,
    quoted,
    said,
    value_text,
)
from mcprl.scenarios.replay import (
    REPLAYS_AT_ONCE,
    chain_of,
    clock_bound,
    clock_moved,
    comes_back,
    live_task,
    needed,
    replayed,
    text_parameter,
    verify,
)
from mcprl.scenarios.results import (
    ISO_DATE,
    MESSAGE,
    NOTHING,
    counted,
    result_data,
    result_records,
    result_values,
    sentence_fields,
    server_text,
)
from mcprl.scenarios.selection import focus, optional_parameters, select
from mcprl.tools import ServerGone, ToolPool
from mcprl.types import ReferenceCall, Scenario

MAX_ANSWER_WORDS = 8  # a longer value is prose, not an answer a check can hold
MAX_ANSWER_CHARS = 80  # ... and a value longer than a line is read off, not answered (a PATH of 200 characters)
ANSWER_LABEL_WORDS = 3  # words besides a result's one number that still make it that number ("Total: 42 USD")
FIELDS_PER_RESULT = 3  # field tasks made from one result, at most
MAX_LISTED = 8  # names a listing may give for a task that asks for them all
# ... and values one may give for a task that asks how many there are (a longer one is counted by no one;
# `results.flatten` reads 50 at most)
MAX_COUNTED = 40
STOCK_REPLY = 3  # calls of a tool, none a filter of another, that gave one text: the tool's reply to anything
ANSWER_WORDS = 12  # words an answer may add around the value ("The confirmation code of the email is ZOE67V.")
BASE64 = re.compile(r"[A-Za-z0-9+/]{40,}={0,2}")


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


def _answer(text: str) -> Any | None:
    """The answer a short result gives: its one number when a line of a few words has exactly one ("Total: 42
    USD"), else the text itself when it is short; None when it is not an answer a check can hold (a text of lines,
    "Meeting at 10am.\nBudget: 4500 USD", or a sentence, "Cache hit ratio 0.95, latency 150ms", is asked for by its
    labelled values, not as its one number)."""
    text = text.strip()
    # a row of a listing, a message ("No items match."), a search that found nothing ("No matches found"),
    # or a heading that introduces nothing ("Staged changes:")
    if " | " in text or MESSAGE.fullmatch(text) or NOTHING.fullmatch(text) or text.endswith(":"):
        return None
    if "\n" not in text and (number := _number_of(text, words=ANSWER_LABEL_WORDS)) is not None:
        return number
    if numbers(text) or not text or len(text.split()) > MAX_ANSWER_WORDS or "\n" in text:
        return None
    return text


def _holds(value: Any) -> bool:
    """Whether a value can be an answer: short (in words and in characters), with something a check can hold, and
    not encoded bytes (a file's base64 `blob`: no one asks for it), and not a yes or no (a guess holds it half the
    time)."""
    text = str(value).strip()
    return (
        bool(normalize_text(text))
        and normalize_text(text) not in {"true", "false"}
        and len(text.split()) <= MAX_ANSWER_WORDS
        and len(text) <= MAX_ANSWER_CHARS
        and len(numbers(text)) <= 1
        and not BASE64.fullmatch(text)
        and not text.endswith(":")
    )


def _id(task: str, chain: list[ExploredCall] | list[ReferenceCall], prepare: list[ExploredCall] | None = None) -> str:
    """A grounded task's id: its text's, its chain's and its prepared state's, so the same seed grounds the same ids
    (what a scenario is shown keys on it)."""
    state = [[[c.tool, c.arguments] for c in prepare]] if prepare else []
    key = json.dumps([task, [[c.tool, c.arguments] for c in chain], *state], sort_keys=True, default=str)
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def _scenario(
    task: str,
    answer: Any,
    chain: list[ExploredCall],
    kind: str,
    read_back: ExploredCall | None = None,
    field: str | None = None,
    given: list[str] | None = None,
    check: Check | None = None,
    prepare: list[ExploredCall] | None = None,
) -> Scenario:
    chain = needed(task, chain)
    return Scenario(
        id=_id(task, chain, prepare),
        task=task,
        answer=answer,
        difficulty=min(5, len(chain)),
        tools=list(dict.fromkeys(c.tool for c in chain)),
        # a task that changes state is checked on the state it leaves (its read-back), a record: any numbers
        # an answer is a sentence around the value, not a pasted result (a recital held every field: trained on, it was
        # learnt)
        check=check
        or (
            HoldsCheck(max_words=len(str(answer).split()) + ANSWER_WORDS)
            if read_back is None
            else HoldsCheck(on="read_back", max_other_numbers=None)
        ),
        read_back=None if read_back is None else {"tool": read_back.tool, "arguments": read_back.arguments},
        metadata={
            "source": "grounded",
            "kind": kind,
            **({"field": field} if field else {}),
            **({"given": given} if given else {}),  # the values it states, which a rephrasing keeps
            # how many records the result that holds the answer has: one to read, or a line of a listing to find
            "records": len(result_records(chain[-1].data, chain[-1].structured)) if read_back is None else 1,
        },
        reference=[_reference(c) for c in chain],
        prepare=[_reference(c) for c in prepare or []],
    )


def _reference(call: ExploredCall) -> ReferenceCall:
    return ReferenceCall(
        tool=call.tool, arguments=call.arguments, result=call.text, writes=call.writes, sources=call.sources
    )


def state_of(calls: list[ExploredCall], chain: list[ExploredCall]) -> list[ExploredCall]:
    """The writes that made the state `chain` read: those its session made, and answered, before its last call,
    none of the chain's own (a task's `prepare`, made by the environment before its episode: the note added that
    a task asking what the notes say reads)."""
    last, own = chain[-1], {c.index for c in chain}
    return [
        c
        for c in calls
        if c.session == last.session and c.writes and not c.is_error and c.index < last.index and c.index not in own
    ]


def _write_tasks(
    calls: list[ExploredCall],
    again: ExploredCall,
    titles: dict[str, str],
    rng: random.Random,
    stated: Callable[[dict[str, Any]], dict[str, Any]],
    prepares: bool,
) -> list[Scenario]:
    """A task to make the write that `again` (a read repeated after it) shows the effect of,
    checked by that read in the rollout's own session: it must hold a value that changed. `prepares`: the writes
    its session made before it are the task's `prepare` (the task updated must exist)."""
    by_index = {c.index: c for c in calls}
    write, before = by_index.get(again.reads_back), by_index.get(again.repeats)  # type: ignore[arg-type]
    if write is None or before is None or write.is_error or before.is_error or again.is_error:
        return []
    chain = chain_of(calls, write)
    if any(c.is_error or any(shaped(v) for v in c.arguments.values()) for c in chain):
        return []  # (a write stated by its query, "INSERT INTO ...", would paste it)
    old = {(k, str(v)) for k, v in result_values(before.data, before.structured)}
    # a value the read did not hold before the write: holding it afterwards is the write's doing
    changed = [
        v
        for k, v in result_values(again.data, again.structured)
        if (k, str(v)) not in old and _holds(v) and not holds_answer(before.data, v)
    ]
    if not changed:
        return []
    done = said(title_of(titles, write.tool), stated(write.arguments)).order()
    return [
        _scenario(
            rng.choice(DOES).format(done),
            rng.choice(changed),
            chain,
            "write",
            read_back=again,
            given=[value_text(v) for v in write.arguments.values()],
            prepare=state_of(calls, chain) if prepares else None,
        )
    ]


def title_of(titles: dict[str, str], tool: str) -> str:
    """How a task names what a tool does: its title, else its name's words ("git_log" -> "git log")."""
    return titles.get(tool) or " ".join(words_of(tool)) or tool


def candidates(
    exploration: Exploration, descriptions: dict[str, str], *, seed: int, titles: dict[str, str] | None = None
) -> list[Scenario]:
    """Every task the record grounds (see the module's docstring), before verification. `descriptions`
    (tool -> description) give expressions they state (`formula`), `titles` (tool -> title) the words
    a task names a call by."""
    titles = titles or {}
    rng = random.Random(f"{seed}/grounded")
    calls = exploration.calls
    # where each session starts from fresh state and no write outlives it, the environment may make a session's
    # writes again before an episode: what a read said after them is a question too (a store that starts empty)
    prepares = exploration.isolated and not exploration.outlived
    # a field that held one value in every record a tool returned ("To: <the user>") tells no record apart; one that
    # held only 0 and 1 (a flag: SQLite's `pk`) or counted its records from 0 (a position: `cid`) is no fact a person
    # asks for
    values: dict[tuple[str, str], set[str]] = defaultdict(set)
    # (tool, field) -> the distinct records that held it (one record read again and again tells nothing apart)
    held: dict[tuple[str, str], set[str]] = defaultdict(set)
    for call in calls:
        if not call.is_error:
            for record in result_records(call.data, call.structured):
                for k, v in record:
                    values[call.tool, k].add(str(v))
                    held[call.tool, k].add(repr(record))
    unasked: dict[str, set[str]] = defaultdict(set)  # tool -> its fields that no task asks for, nor picks a line by
    for (tool, field), seen in values.items():
        if len(held[tool, field]) >= 3 and (
            len(seen) == 1 or seen <= {"0", "1"} or seen == {str(i) for i in range(len(seen))}
        ):
            unasked[tool].add(field)

    def fixed_out(args: dict[str, Any]) -> dict[str, Any]:
        """What a task states of a call's arguments: not the server's context (`Exploration.fixed`)."""
        return {k: v for k, v in args.items() if not (k in exploration.fixed and v == exploration.fixed[k])}

    # a call that said what a call of the same tool with fewer of its arguments said (a filter that changed
    # nothing: `git_log` with `end_timestamp` "Bob") is asked for as the plainest of those
    said_alike: dict[tuple[str, str], list[ExploredCall]] = defaultdict(list)
    for call in calls:
        if not call.is_error and (prepares or call.reads_back is None):
            said_alike[call.tool, call.text].append(call)

    def plainest(call: ExploredCall) -> ExploredCall:
        fewer = [
            c
            for c in said_alike[call.tool, call.text]
            if all(k in call.arguments and call.arguments[k] == v for k, v in c.arguments.items())
        ]
        return min(fewer, key=lambda c: (len(c.arguments), c.index))

    # a table's columns, in order, as a known query that lists them answered: they name the cells of the table's
    # rows where a server prints them unnamed ("[(1, 'steel hammer', 12.5, 40)]")
    columns: dict[str, list[str]] = {}
    for call in calls:
        for v in call.arguments.values():
            if not call.is_error and (found := known(v)) and found[0].lists == "column" and "table" in found[1]:
                names = [str(n) for _, n in result_values(call.data, call.structured)]
                columns.setdefault(found[1]["table"], names)

    out: list[Scenario] = []
    for call in calls:
        if call.reads_back is not None:  # what a write changed: a task to make it
            if not exploration.outlived:  # ... where a rollout may write: not where its write would stay
                out += _write_tasks(calls, call, titles, rng, fixed_out, prepares)
            if not prepares:  # ... and, where the environment may make that write, a question on what it left
                continue
        if call.is_error:
            continue
        call = plainest(call)
        chain = chain_of(calls, call)
        if any(c.is_error or c.tool in exploration.outlived for c in chain):  # a write that stays is no step to repeat
            continue
        state = state_of(calls, chain) if prepares else None
        # a query (an SQL statement) is never pasted into a task: a call of one the lexicon knows is asked about by
        # what it means (`lexicon.question`, `lexicon.about`); one it does not know grounds only tasks that state
        # no call (a record asked for by its name)
        queries = [v for v in call.arguments.values() if shaped(v)]
        unknown = any(shaped(v) and known(v) is None for c in chain for v in c.arguments.values())
        data = result_data(call.data, call.structured)
        while isinstance(data, (list, tuple)) and len(data) == 1:  # one row of one value: "[(2,)]" answers 2
            data = data[0]
        if queries and isinstance(data, dict) and len(data) == 1:  # ... a row's one column named: "[{'COUNT(*)': 3}]"
            data = next(iter(data.values()))
        answer = (
            _answer(str(data) if data is not None else server_text(call.data)[0])
            if data is None or isinstance(data, (str, int, float))
            else None
        )
        given_values = [value_text(v) for v in call.arguments.values()]
        # an answer the arguments already hold, or a text that echoes one ("no items match 'drill'"), is no answer;
        # nor a text the tool gave to three calls or more, none a filter of another ("Task not found" for every id
        # asked): its reply to anything, no fact about what it was asked
        echo = isinstance(answer, str) and (
            any(v and normalize_text(v) in normalize_text(answer) for v in given_values)
            or as_number(answer) is None
            and len({plainest(c).index for c in said_alike[call.tool, call.text]}) >= STOCK_REPLY
        )
        if answer is not None and queries:
            asked = None if unknown else next((q for v in queries if (q := question(v, answer))), None)
            if asked is not None and not echo and not holds_answer(asked, answer):
                given = [name for v in queries for name in stated(v)]
                # what it asks, whatever the table or column: tasks are spread over these as over a record's fields
                what = next(normalize_text(k[0].text) for v in queries if (k := known(v)))
                out.append(_scenario(asked, answer, chain, "result", field=what, given=given, prepare=state))
            continue
        pasted = any(shaped(v) for c in chain for v in c.arguments.values())  # steps stated would paste a query
        if (
            answer is not None
            and not echo
            and not pasted
            and (not holds_answer(" ".join(given_values), answer) or chosen(call.arguments, answer))
        ):
            linked = [frozenset(k for k in c.arguments if c.sources.get(k, "").startswith("result:")) for c in chain]
            # each call is said after the one before it, a value it took from a result as "the previous result": one
            # from an earlier call would be misread
            if any(source_call(c.sources[k]) != chain[i - 1].index for i, c in enumerate(chain) for k in linked[i]):
                continue
            steps = [said(title_of(titles, c.tool), fixed_out(c.arguments), ln) for c, ln in zip(chain, linked)]
            if len(steps) == 1:
                task = rng.choice(steps[0].asks_result())
            else:
                first, *then = [s.order() for s in steps]
                task = rng.choice(ASKS).format(". ".join([first, *(f"Then {o[:1].lower()}{o[1:]}" for o in then)]))
            expression = _expression(chain, linked, descriptions)
            # as often asked as the expression a description states as in words; always where the value is one ("What is
            # 98 + 51?")
            own = (
                len(chain) == 1
                and len(call.arguments) == 1
                and expression == " ".join(str(next(iter(call.arguments.values()))).split())
            )
            if expression is not None and (own or rng.random() < 0.5):
                task = rng.choice(FORMULA_ASKS).format(expression)
            out.append(
                _scenario(
                    task,
                    answer,
                    chain,
                    "chain" if len(chain) > 1 else "result",
                    given=[value_text(v) for c in chain for v in fixed_out(c.arguments).values()],
                    prepare=state,
                )
            )
            continue
        meant = None if unknown else next((a for v in queries if (a := about(v))), None)
        # a query is said by what its result holds, and not at all where that is unknown
        saying = (
            (Said(None, "", about=meant) if meant else None)
            if queries
            else said(title_of(titles, call.tool), fixed_out(call.arguments))
        )
        noun = next((noun_of(r) for v in queries if (r := record_of(v))), None)
        tables = [found[1]["table"] for v in queries if (found := known(v)) and found[0].record and "table" in found[1]]
        if noun and tables and (named := _named_rows(data, columns.get(tables[0], []))):
            call = call.model_copy(update={"structured": named})
        out += _listing_tasks(call, fixed_out(call.arguments), chain, saying, queries, state)
        out += _field_tasks(
            call, fixed_out(call.arguments), chain, rng, unasked[call.tool], saying, queries, noun, state
        )
    return out


def chosen(arguments: dict[str, Any], answer: Any) -> bool:
    """Whether `answer` is one of the different values a list argument gives, and no other argument states it (the
    largest of 3, 8 and 5 is 8): a choice the task asks for, not an answer it gives away."""
    lists, others = [], []
    for v in arguments.values():
        (lists if isinstance(v, list) and len({value_text(x) for x in v}) >= 2 else others).append(v)
    in_a_list = any(holds_answer(value_text(x), answer) for v in lists for x in v)
    return in_a_list and not holds_answer(" ".join(map(value_text, others)), answer)


def _named_rows(data: Any, columns: list[str]) -> list[dict[str, Any]] | None:
    """Rows printed without their columns' names (tuples), each as a record named by `columns`; None where
    the rows are not such tuples, one cell for each column."""
    if not columns or not isinstance(data, (list, tuple)) or not data:
        return None
    if not all(isinstance(row, (list, tuple)) and len(row) == len(columns) for row in data):
        return None
    return [dict(zip(columns, row)) for row in data]


def _expression(chain: list[ExploredCall], linked: list[frozenset[str]], descriptions: dict[str, str]) -> str | None:
    """The chain as one expression, where each call's description states one and each call after
    the first takes the previous result ("(18.5 * 10) - 3"); else None."""
    expression = ""
    for i, (c, ln) in enumerate(zip(chain, linked)):
        if bool(i) != bool(ln):
            return None
        expression = formula(descriptions.get(c.tool, ""), c.tool, c.arguments, ln, expression)
        if expression is None:
            return None
    return expression


def _field_tasks(
    call: ExploredCall,
    args: dict[str, Any],
    chain: list[ExploredCall],
    rng: random.Random,
    unasked: set[str],
    saying: Said | None,
    queries: list[str] | None = None,
    noun: str | None = None,
    prepare: list[ExploredCall] | None = None,
) -> list[Scenario]:
    """Tasks asking for a labelled field of one record of the result (one line of a listing, or
    the whole result when it is one record); not for a field of `unasked` (a flag, a position, a constant). `args`:
    what a task states of the call's arguments; `saying`, the call in words. A call that took `queries` (SQL)
    is said by what its result holds and its records named `noun` (a table's row), never by its query; with
    no `saying`, only its records' names ask for them."""
    writes = [json.dumps(c.arguments, ensure_ascii=False) for c in prepare or []]  # the arguments of its state's writes
    pairs = result_values(call.data, call.structured)
    records = result_records(call.data, call.structured)
    listing = len(records) > 1
    if listing:  # a listing's fields are the keys every record has ("stock: 5"), not a colon inside a cell
        keys = Counter(k for record in records for k in {k for k, _ in record if k})
        records = [
            [(k, v) if keys[k] == len(records) else ("", f"{k}: {v}" if k else v) for k, v in record]
            for record in records
        ]
    noun = noun or noun_of(call.tool)
    kind = _kind(records, unasked) if listing else None
    row = len(records) == 1 and " | " in call.data  # one row of cells ("SKU-3002 | item ccc | stock: 42")
    given_text = normalize_text(" ".join(map(value_text, call.arguments.values())))
    given_each = {normalize_text(value_text(v)) for v in call.arguments.values()}
    # prose (a message's body, a description) may state labelled values of its own: "Tracking number: 1Z99."
    # ("Confirmation code", "ZOE67V. Flight SW 764 ...") stands for ("Confirmation code", "ZOE67V"), and keeps the rest
    records = [list(dict.fromkeys(pair for k, v in record for pair in _stated(k, v))) for record in records]
    held = Counter(k for record in records for k in {k for k, _ in record if k})
    # a search's words (one argument, a word or more): a field that one record of its listing holds is asked
    # for by what the search was about ("the confirmation code in the email about Porto"), as a user asks it
    words_given = [v for v in args.values() if isinstance(v, str) and re.search(r"[A-Za-z]{3}", v)]
    topic = words_given[0] if listing and len(args) == 1 and words_given and not queries else None
    out: list[Scenario] = []
    # a dated listing's first and last lines by their place ("the latest commit"); only its first, "the first one
    # listed", where its dates are in no order
    places: dict[int, str] = {}
    if listing and saying is not None:
        if (order := _date_order(records)) is not None:
            places = {0: f"{order[0]} {kind or 'one'}", len(records) - 1: f"{order[1]} {kind or 'one'}"}
        elif any(ISO_DATE.search(str(v)) for _, v in records[0]):
            places = {0: "first one listed"}
    for at in rng.sample(range(len(records)), min(2, len(records))):
        record, place = records[at], places.get(at)
        # a key the record holds more than once (lines that were not read as a listing) names no one value
        twice = {k for k, n in Counter(k for k, _ in record).items() if n > 1}
        labelled = [
            (k, v)
            for k, v in record
            if k
            and k not in twice
            and k not in unasked
            and _holds(v)
            and (normalize_text(str(v)) not in given_text or chosen(call.arguments, v))
            # (nor labelled by what the call was given: "Debug: Cache hit ratio 0.95" of message type "debug")
            and normalize_text(k) not in given_each
        ]
        # (a line that introduces what follows, "README.md:", names it without its colon; markup, "# Project", names
        # nothing)
        names = [
            v.rstrip(":")
            for k, v in record
            if isinstance(v, str)
            and re.search(r"[A-Za-z]{3}", v)
            and v[:1].isalnum()
            and 1 <= len(v.split()) <= MAX_ANSWER_WORDS
            and not re.search(r"@|://", v)
            # a value with no key names a record of a listing, or a cell of a row; the lines of a result that
            # is one record are its heading or prose ("Repository status:", "On branch main")
            and (not k and (listing or row) or k.lower() in NAME_KEYS)
        ]
        names.sort(key=lambda v: (" " not in v, bool(re.search(r"\d", v))))  # names before codes
        # values with a digit first (an amount, a code, a count): what a person asks a record for
        picked = sorted(rng.sample(labelled, len(labelled)), key=lambda kv: not re.search(r"\d", str(kv[1])))
        for field, value in picked[:FIELDS_PER_RESULT]:
            # a name that picks the record out: of it alone, and given by at most one of the writes that made the
            # state it is read from (two tasks created "Weekly report" are not told apart by it)
            label = next(
                (
                    n
                    for n in names
                    if n != value and sum(n in str(v) for _, v in pairs) == 1 and sum(n in w for w in writes) <= 1
                ),
                None,
            )
            asked = spoken(field) or field.lower()
            # one record that a call's arguments named (an id, a key): asked for by those or by its name, as a user
            # might; one question is worded one way, whichever call grounds it, so that duplicates stay duplicates
            if topic is not None and held[field] == 1 and (label is None or rng.random() < 0.5):
                task = _worded(TOPIC_ASKS, topic, asked).format(**field_words(asked), noun=noun, topic=topic)
                given = [topic]
            # (not a line of a listing of one thing's parts, which the call named: a table's columns, a folder's
            # files, whose names other things' parts share)
            elif label is not None and (not (saying and saying.named) if listing else not args or rng.random() < 0.5):
                # bare, only a name that reads as a thing's ("steel hammer"), not a subject ("Your flight is
                # confirmed") nor a proper name, which takes no article ("the Project Apollo's")
                bare = len(label.split()) <= 4 and not re.search(r"\d", label) and label.islower()
                asks = STATE_NAME_ASKS if participle(asked) else NAME_ASKS
                task = _worded(asks if bare else asks[:1], label, asked).format(
                    **field_words(asked), noun=noun, name=label
                )
                given = [label]
            elif place is not None and rng.random() < 0.5:
                # the first or last line of a listing in time order (its lines dated), by its place: a log's latest
                # entry, as people ask "Who made the latest commit?"; not a table's first row, whose place means
                # nothing. Said alone only of the first line of a call that states nothing: a listing cut short
                # keeps its first line, not its last
                given = [value_text(v) for v in args.values() if not shaped(v)]
                alone = kind is not None and not given and at == 0
                task = _worded(saying.asks_record(asked, f"of the {place}", alone), given, asked)
            elif listing and saying is not None and (key := _identifying(record, records, field, unasked)) is not None:
                # a line of a listing without a name: picked out by a field that no other line shares, as the thing
                # the line is where that is known ("of the commit whose message is ...", "of commit a1b2")
                given = [value_text(key[1]), *(value_text(v) for v in args.values() if not shaped(v))]
                said_key = spoken(key[0])
                which = (
                    f"where {quoted(key[1])} is {said_key}"
                    if participle(said_key)
                    else f"where the {said_key} is {quoted(key[1])}"
                    if kind is None
                    else f"of {kind} {quoted(key[1])}"
                    if said_key == kind
                    else f"of the {kind} whose {said_key} is {quoted(key[1])}"
                )
                task = _worded(saying.asks_record(asked, which, kind is not None and len(given) == 1), given, asked)
            elif not listing and saying is not None:  # the one record a call gave: by the call (its title alone,
                # where it states nothing)
                given = [] if queries else [value_text(v) for v in args.values()]
                # (a state that names a thing, "modified: TODO.md", not a date, "created: 2024-03-01")
                state = participle(asked) and not re.search(r"\d", str(value))
                task = _worded(saying.asks_field(asked, state), given, asked)
            else:
                continue
            number = (
                _number_of(value, words=1) if isinstance(value, str) else None
            )  # a field's value states a number, or a name
            answer = value if number is None else number
            # the record was named by what states the answer ("the sum 'The sum of 10 and 20 is 30.'"); a value chosen
            # from a list the call was given is asked for (the largest of 3, 8 and 5), but not a name, which is the
            # one of the names given that the server found, said back ("Open nodes with names A, B: the name?")
            if holds_answer(task, answer) and (not chosen(call.arguments, answer) or field.lower() in NAME_KEYS):
                continue
            out.append(
                _scenario(task, answer, chain, "field", field=normalize_text(field), given=given, prepare=prepare)
            )
    return out


def _listing_tasks(
    call: ExploredCall,
    args: dict[str, Any],
    chain: list[ExploredCall],
    saying: Said | None,
    queries: list[str] | None = None,
    prepare: list[ExploredCall] | None = None,
) -> list[Scenario]:
    """A task asking for every name a short listing gives (`git_branch`'s "  feature/alerts\n* main": its
    lines, none labelled, each a name after a marker such as `*` or `[FILE]`), checked by the share of them
    the answer holds; or how many a longer one gives ("How many valid moves are there?" -> 20: values of one
    kind, each once, the whole result, `results.counted`), where the call names what it lists
    (`Said.asks_count`), its replay listing as many. `args`: what a task states of the call's arguments; a call
    that took `queries` (SQL) is asked for by what its result holds ("the tables of the database"), and not at
    all without it (`saying`)."""
    if saying is None:
        return []
    count = None if queries else counted(call.data, call.structured)
    if count is not None and MAX_LISTED < count <= MAX_COUNTED and (asks := saying.asks_count()):
        given = [value_text(v) for v in args.values()]
        return [_scenario(_worded(asks, call.tool, count), count, chain, "count", given=given, prepare=prepare)]
    records = result_records(call.data, call.structured)
    if len(records) > 1 and all(len(r) == 1 and r[0][0].lower() in NAME_KEYS for r in records):
        records = [[("", r[0][1]) for r in records]]  # records that are each a name alone: [{'name': 'orders'}, ...]
    if len(records) != 1 or any(k for k, _ in records[0]):
        return []
    names = [_listed_name(v) for _, v in records[0]]
    if not 2 <= len(names) <= MAX_LISTED or None in names or len(set(names)) < len(names):
        return []
    given_text = " ".join(map(value_text, call.arguments.values()))
    if any(holds_answer(given_text, n) for n in names):  # a listing of what the call was given
        return []
    task = _worded(saying.asks_listing(), call.tool, sorted(names))
    given = [name for v in queries for name in stated(v)] if queries else [value_text(v) for v in args.values()]
    return [_scenario(task, names, chain, "listing", given=given, check=ContainsCheck(), prepare=prepare)]


def _listed_name(line: Any) -> str | None:
    """The name a listing's line gives: the line, or its word after a marker ("* main", "[FILE] notes.txt",
    "- draft"), where that reads as a name (letters, no spaces inside)."""
    words = line.split() if isinstance(line, str) else []
    marked = len(words) == 2 and re.fullmatch(r"[^\w\s]+|\[\w+\]", words[0])
    if not (len(words) == 1 or marked) or len(words[-1]) > 60 or not re.search(r"[A-Za-z]{2}", words[-1]):
        return None
    return words[-1]


def _kind(records: list[list[tuple[str, Any]]], unasked: set[str]) -> str | None:
    """What each record of a listing is: the thing the key that opens every one names ("Commit: a1b2..." -> commit),
    where its values tell the records apart and it names a kind of thing (not `NOT_KINDS`: an id, a name, a date;
    nor one of `unasked`: a position, "cid: 0")."""
    opening = {record[0][0] if record else "" for record in records}
    key = opening.pop() if len(opening) == 1 else ""
    if not re.fullmatch(r"[A-Za-z]{3,}", key) or key.lower() in NOT_KINDS or key in unasked:
        return None
    values = [str(record[0][1]) for record in records]
    if len(set(values)) < len(values):
        return None
    return singular(key.lower())


def _date_order(records: list[list[tuple[str, Any]]]) -> tuple[str, str] | None:
    """The places of a listing's first and last records by their dates: (`LATEST`, `EARLIEST`) newest first (a log),
    (`EARLIEST`, `LATEST`) oldest first; None where a record has no date or they are in no order."""
    stamps = []
    for record in records:
        found = next((m[0] for _, v in record if (m := ISO_DATE.search(str(v)))), None)
        if found is None:
            return None
        stamps.append(found)
    if len(set(stamps)) < len(stamps):  # two at once: which is latest is the listing's choice
        return None
    if stamps == sorted(stamps, reverse=True):
        return LATEST, EARLIEST
    return (EARLIEST, LATEST) if stamps == sorted(stamps) else None


def _identifying(
    record: list[tuple[str, Any]], records: list[list[tuple[str, Any]]], field: str, unasked: set[str]
) -> tuple[str, Any] | None:
    """A field of `record` (not `field`, nor one of `unasked`: a flag, a position) whose value no other record of
    the listing has: a name first, else an id, a hash or a uuid last (no one says those from memory)."""
    options = []
    for k, v in record:
        if (
            k
            and k != field
            and k not in unasked
            and isinstance(v, (str, int, float))
            and len(str(v)) <= 40
            and sum(any(k2 == k and str(v2) == str(v) for k2, v2 in other) for other in records) == 1
        ):
            hexadecimal = re.fullmatch(r"[0-9a-fA-F-]{12,}", str(v)) is not None
            options.append((hexadecimal, not re.search(r"[A-Za-z]{3}", str(v)), k, v))
    return min(options)[2:] if options else None


def _worded(asks: tuple[str, ...], *about: Any) -> str:
    """One of `asks`, the same for the same question (its record and field) in every exploration."""
    return asks[int(hashlib.sha256(json.dumps(about).encode()).hexdigest(), 16) % len(asks)]


def _stated(key: str, value: Any) -> list[tuple[str, Any]]:
    """A record's pair, with the labelled values its text states (`sentence_fields`) after it; the
    pair itself gives way to the value its own label states."""
    stated = sentence_fields(f"{key}: {value}" if key else value) if isinstance(value, str) else []
    return stated if key and any(k == key for k, _ in stated) else [(key, value), *stated]


def _number_of(text: str, words: int | None = None) -> float | int | None:
    """The one number a text holds; with `words`, only if it has at most that many words besides
    ("$88.88", "37 units", but not "48 hours in Porto", "Invoice for March 2024")."""
    found = numbers(text)
    if len(found) != 1 or words is not None and len(re.findall(r"[A-Za-z]+", text)) > words:
        return None
    (value,) = found
    return int(value) if value.is_integer() else value


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
    long = [t for t in tasks if t.metadata.get("given") and t.read_back is None and not t.prepare and focus(t) > (1, 1)]
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
                if options and (min(options)[0][0], 1) < focus(t):
                    (records, text, _), tool, parameter = min(options)
                    reference = [ReferenceCall(tool=tool, arguments={parameter: name}, result=text)]
                    if (tool, {parameter: name}) != (t.reference[-1].tool, t.reference[-1].arguments):
                        t.metadata["shortened"] = True  # another call than the one it asks about: right by its answer
                    t.id, t.tools, t.difficulty = _id(t.task, reference), [tool], 1
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
    its own where the server keeps its state there, and offers no tool whose writes outlived the process."""
    assert pool.toolset is not None
    if exploration.private_home:
        pool.give_private_homes()
    if exploration.outlived:
        pool.hide(set(exploration.outlived))
        say(
            f"not offering {', '.join(exploration.outlived)} to the policy: they may write, and this server's state "
            "outlived its process, so a rollout's write would stay there (--isolated if each session starts fresh)"
        )
    descriptions = {t["name"]: t.get("description") or "" for t in pool.toolset.mcp_tools}
    titles = {
        t["name"]: title
        for t in pool.toolset.mcp_tools
        if (title := t.get("title") or (t.get("annotations") or {}).get("title"))
    }
    optional = optional_parameters(pool.toolset.mcp_tools)
    found = candidates(exploration, descriptions, seed=seed, titles=titles)
    # a task whose answer came from the server's clock is kept as it is only where it comes back with the clock
    # moved, else asked live (`live_task`: checked by what the episode's own call gives) where it can be
    clocked = {id(t) for t in found if clock_bound(t.reference[-1].result, t.answer)}
    later = clock_moved(pool.spec)
    asked = found if later is not None else [live_task(t, []) if id(t) in clocked else t for t in found]
    timeless = [t for t in asked if t is not None]
    fits = [t for t in timeless if max_calls is None or len(t.reference) <= max_calls]
    shortened = await shortcut(fits, pool)
    ordered, dropped = select(fits, len(fits), seed=seed, optional=optional)
    if len(timeless) < len(found):
        dropped[
            "holds only today (the server's clock; with faketime installed it is replayed with the clock moved)"
        ] += len(found) - len(timeless)
    if len(fits) < len(timeless):
        dropped[f"more calls than an episode's {max_calls}"] += len(timeless) - len(fits)
    verified: list[Scenario] = []
    async with AsyncExitStack() as stack:
        moved = None  # the server with its clock moved, started once where a task needs it
        if later is not None and clocked:
            try:  # a server that cannot start with its clock moved keeps none of its clock's tasks
                moved = await stack.enter_async_context(
                    ToolPool(later, per_rollout=pool.per_rollout, workdir=pool.workdir)
                )
            except UserError as e:
                say(f"could not start the server with its clock moved ({e}); its clock's tasks are dropped")
        while ordered and len(verified) < n:
            batch, ordered = ordered[: n - len(verified)], ordered[n - len(verified) :]
            kept, lost = await verify(batch, pool, later=moved, say=say)
            verified += kept
            dropped.update(lost)
    picked, left = select(
        verified, n, seed=seed, optional=optional
    )  # spread again: what verification dropped was not even
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
