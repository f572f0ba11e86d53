"""Every task an exploration's record grounds, before verification (the kinds are `mcprl.scenarios.grounded`'s):
each call that answered asked for its result, said as the call, as the chain of calls that fed it, as an expression its
description states or as what its query means, or asked about the records it gave (`mcprl.scenarios.record_tasks`);
each write, checked by a read made again after it; and, where each session starts fresh, what a read said after
writes, those writes the task's `prepare`."""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping
from typing import Any

from mcprl.checks import as_number, holds_answer, normalize_text, same_value
from mcprl.scenarios.explored import Exploration, ExploredCall, source_call
from mcprl.scenarios.expressions import chain_expression, in_words
from mcprl.scenarios.grounded_task import (
    answerable,
    chosen,
    document_sentence,
    grounded_scenario,
    result_answer,
    stored_sentence,
    task_id,
)
from mcprl.scenarios.lexicon import (
    BOUND_WORDS,
    ENTRY,
    IDENTIFYING,
    NAME_KEYS,
    PATHS,
    about,
    bound_pairs,
    counts,
    known,
    misplaced_path,
    question,
    record_of,
    shaped,
    singular,
    stated,
    words_of,
)
from mcprl.scenarios.phrasing import (
    ASKS,
    DOES,
    FORMULA_ASKS,
    WORDED_FORMULA_ASKS,
    Said,
    named_record,
    noun_of,
    quoted,
    said,
    value_text,
)
from mcprl.scenarios.record_tasks import count_tasks, field_tasks, listing_tasks, wrapped_kind
from mcprl.scenarios.replay import chain_of, of_clock_kind
from mcprl.scenarios.results import (
    ISO_DATE,
    answer_paths,
    clock_spans,
    column_rows,
    data_key,
    failed_items,
    flatten,
    found_nothing,
    listing_of,
    listing_size,
    result_data,
    result_records,
    result_values,
    says_done,
    server_text,
    wrapped_listing,
)
from mcprl.scenarios.selection import unsaid_parameters, unstated
from mcprl.scenarios.value_sources import ISSUED
from mcprl.scenarios.values import call_key, gist
from mcprl.types import Scenario

EXPRESSION_FIELD = "value"  # what a task worded as an expression asks for ("What is 2 + 3?")
# a key that names no property: a number, or a letter or two and a number (`{"matches": {"E3": "2024-03-05"}}`, a
# cell's address: a map's keys are values, not fields)
CODE_KEY = re.compile(r"[A-Za-z]{0,2}\d+|\.\w+")  # (... or a file's extension: `{"file_counts": {".py": 1}}`)
STOCK_REPLY = 3  # calls of a tool, none a filter of another, that gave one text: the tool's reply to anything
INERT = 3  # distinct values of a parameter that answered, said alike wherever compared, before it changes nothing


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


def changed_by(by_index: dict[int, ExploredCall], again: ExploredCall) -> tuple[ExploredCall, list[Any]] | None:
    """The write that `again` (a read repeated after it) reads back, and the values it holds that the read did not
    before: holding them afterwards is the write's doing. None where a call of the three failed, or where a write
    that is no step of the write's own chain answered between the read and the write (what that one made, a task's
    `prepare` makes too: a check that the state holds it passes with nothing done)."""
    write, before = by_index.get(again.reads_back), by_index.get(again.repeats)  # type: ignore[arg-type]
    if write is None or before is None or write.is_error or before.is_error or again.is_error:
        return None
    between = [
        i
        for i in range(before.index + 1, write.index)
        if (c := by_index.get(i)) is not None and c.session == write.session and c.writes and not c.is_error
    ]
    if between and not {c.index for c in chain_of(list(by_index.values()), write)} >= set(between):
        return None
    old = {(k, str(v)) for k, v in result_values(before.data, before.structured)}
    return write, [
        v
        for k, v in result_values(again.data, again.structured)
        if (k, str(v)) not in old and answerable(v) and not holds_answer(before.data, v)
    ]


def _write_tasks(
    calls: list[ExploredCall],
    again: ExploredCall,
    write: ExploredCall,
    changed: list[Any],
    say: Callable[[ExploredCall], Said],
    rng: random.Random,
    prepares: bool,
) -> list[Scenario]:
    """A task to make `write`, which `again` (a read repeated after it) shows the effect of, checked by that read in
    the rollout's own session: it must hold one of the values that changed (`changed_by`, less those any write of the
    tool leaves). `prepares`: the writes its session made before it are the task's `prepare` (the task updated must
    exist)."""
    chain = chain_of(calls, write)
    if any(c.is_error or requests(c.arguments) or any(shaped(v) for v in c.arguments.values()) for c in chain):
        return []  # (a write stated by its query, "INSERT INTO ...", would paste it)
    if not changed or misplaced_path(write.arguments):
        return []
    done = say(write).order()
    return [
        grounded_scenario(
            rng.choice(DOES).format(done),
            rng.choice(changed),
            chain,
            "write",
            read_back=again,
            given=[value_text(v) for v in write.arguments.values()],
            prepare=state_of(calls, chain) if prepares else None,
        )
    ]


def requests(arguments: dict[str, Any]) -> bool:
    """Whether a call was sent several requests at once: a list of two records or more, none named by a name of its
    own (`mcp-text-editor`'s reads of three files' ranges, "(file path ..., ranges (start 14)), (file path ...)"): a
    task would recite them, where one request is a question (named records, entities to create, are said by name)."""
    held = list(arguments.values())
    while held:
        value = held.pop()
        if isinstance(value, list) and sum(isinstance(x, dict) and not named_record(x) for x in value) > 1:
            return True
        held += value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return False


def listed_texts(data: Any) -> list[str]:
    """The texts a result lists as values: the items of its lists that hold texts alone, at any depth."""
    if isinstance(data, dict):
        return [x for v in data.values() for x in listed_texts(v)]
    if isinstance(data, list):
        if data and all(isinstance(x, str) for x in data):
            return data
        return [x for v in data for x in listed_texts(v)]
    return []


def tallies(data: Any) -> list[dict[str, Any]]:
    """The objects a result holds under a key whose values are all numbers (a count of each thing, or a field per
    figure: which of the two, the keys' being listed elsewhere says)."""
    found = []
    for v in data.values() if isinstance(data, dict) else data if isinstance(data, list) else []:
        if isinstance(data, dict) and isinstance(v, dict) and v:
            if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v.values()):
                found.append(v)
        found += tallies(v)
    return found


def record_names(records: list[list[tuple[str, Any]]]) -> list[str]:
    """The names a listing's records hold under a key that names its record (`NAME_KEYS`)."""
    return [str(v) for record in records for k, v in record if k.lower() in NAME_KEYS]


def spread(held: set[tuple[str, str, int]], wide: set[str]) -> int:
    """Over how many things a field was seen, of its (call, record, result) triples: the calls that differ in what
    they were asked, or the records one result gave, whichever are more (a call made again, after a write or in
    another session, asks no other thing, though its record differs: another session's home folder in an
    environment read again). Calls that gave the same records, each of several fields (`wide`), whole, asked for one
    thing by other names or options that changed nothing of it (a folder listed as "." and by its path): they count
    once; a reply of one field said to every call ("Insight added") does not tell them apart, and they count as the
    calls they are."""
    records: dict[str, set[str]] = defaultdict(set)
    results: dict[int, set[str]] = defaultdict(set)
    for call, record, index in held:
        records[call].add(record)
        results[index].add(record)
    things = {frozenset(found) if found <= wide else call for call, found in records.items()}
    return max(len(things), *map(len, results.values()), 0)


def inert(calls: list[ExploredCall]) -> dict[str, set[str]]:
    """tool -> its parameters that change nothing it says (a `random_string` a client needs every tool to take),
    which no task states: sent INERT distinct values or more that answered, none said back, where calls made in one
    state (a session between two of its writes) and sent the same other arguments, but other values of it, said one
    text, at least once, and never two (a filter's "done" and "pending", read in one state, list other tasks; a search
    that found nothing for either of two words says nothing of the words)."""
    written: dict[int, int] = {}  # session -> its latest write that answered, so far
    said: dict[tuple[str, str], dict[tuple[int, int, str], dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    echoed: set[tuple[str, str]] = set()
    for call in calls:
        if not call.is_error and not found_nothing(call.text, call.arguments):
            state, text = (call.session, written.get(call.session, -1)), gist(call.text, {})
            for name, value in call.arguments.items():
                others = call_key(call.tool, {k: v for k, v in call.arguments.items() if k != name})
                said[call.tool, name][(*state, others)][repr(value)] = text
                # (said as itself, not as a part of a name: "Progress" of "progress.md")
                said_as = str(value)
                if isinstance(value, (str, int, float)) and not isinstance(value, bool) and len(said_as) > 1:
                    if re.search(rf"(?<![\w.]){re.escape(said_as)}(?!\w|\.\w)", call.text, flags=re.I):
                        echoed.add((call.tool, name))
        if call.writes and not call.is_error:
            written[call.session] = call.index
    found: dict[str, set[str]] = defaultdict(set)
    for (tool, name), states in said.items():
        if (
            (tool, name) not in echoed
            and len({v for by_value in states.values() for v in by_value}) >= INERT
            and all(len(set(by_value.values())) == 1 for by_value in states.values())
            and any(len(by_value) > 1 for by_value in states.values())
        ):
            found[tool].add(name)
    return found


def title_of(titles: dict[str, str], tool: str) -> str:
    """How a task names what a tool does: its title, else its name's words ("git_log" -> "git log")."""
    return titles.get(tool) or " ".join(words_of(tool)) or tool


def candidates(
    exploration: Exploration,
    descriptions: dict[str, str],
    *,
    seed: int,
    titles: dict[str, str] | None = None,
    defaults: dict[str, dict[str, Any]] | None = None,
    stand_ins: Mapping[str, set[str]] | None = None,
) -> list[Scenario]:
    """Every task the record grounds (see `mcprl.scenarios.grounded`'s docstring), before verification.
    `descriptions` (tool -> description) give expressions they state (`mcprl.scenarios.expressions`), `titles`
    (tool -> title) the words a task names a call by, `defaults` (tool -> parameter -> its schema's default) the
    values a task need not state, nor those of `stand_ins` (tool -> parameters its schema describes as changing
    nothing, `selection.stand_in_parameters`). Nor does a task asking a call for a field state the values that
    changed none of its answers (`selection.unsaid_parameters`: a file's total lines, whichever line a read started
    at): the record is grounded again without them where some did."""
    titles, defaults, stand_ins = titles or {}, defaults or {}, stand_ins or {}
    found = _candidates(exploration, descriptions, seed, titles, defaults, stand_ins, {})
    if needless := unsaid_parameters(found):
        found = _candidates(exploration, descriptions, seed, titles, defaults, stand_ins, needless)
    return found


def _candidates(
    exploration: Exploration,
    descriptions: dict[str, str],
    seed: int,
    titles: dict[str, str],
    defaults: dict[str, dict[str, Any]],
    stand_ins: Mapping[str, set[str]],
    needless: Mapping[tuple[str, str], set[str]],
) -> list[Scenario]:
    """`candidates`, whose tasks asking a call (`call_key`) for a field leave out the parts of its arguments
    `needless` gives of them."""
    rng = random.Random(f"{seed}/grounded")
    calls = exploration.calls
    # where each session starts from fresh state and no write outlives it, the environment may make a session's
    # writes again before an episode: what a read said after them is a question too (a store that starts empty)
    prepares = exploration.isolated and not exploration.outlived
    # writes that are no step of a task: those that stayed past the process, and those that changed the user's files
    stays = {*exploration.outlived, *exploration.withheld}
    # a call that said what a call of the same tool with fewer of its arguments said (a filter that changed
    # nothing: `git_log` with `end_timestamp` "Bob") is asked for as the plainest of those: said beyond the clock,
    # and with a value the plainer call was not sent said back where that one said its schema's default (an NTP
    # server's name the server did not use: "UTC time from using: ..." said what "from pool.ntp.org: ..." did)
    said_alike: dict[tuple[str, str], list[ExploredCall]] = defaultdict(list)
    answered: dict[str, list[ExploredCall]] = defaultdict(list)  # tool -> its calls that answered
    for call in calls:
        if not call.is_error and (prepares or call.reads_back is None):
            said_alike[call.tool, call.text].append(call)
            answered[call.tool].append(call)
    beyond_clock = {c.index: gist(c.text, {}) for found in answered.values() for c in found}

    def says_as(plainer: ExploredCall, call: ExploredCall) -> bool:
        """Whether `call` said what `plainer`, sent some of its arguments alike and no other, said."""
        if not all(k in call.arguments and call.arguments[k] == v for k, v in plainer.arguments.items()):
            return False
        text, default = plainer.text, defaults.get(call.tool, {})
        for k, v in call.arguments.items():
            if k not in plainer.arguments and isinstance(v, str) and isinstance(d := default.get(k), str) and d:
                text = text.replace(d, v)
        return (gist(text, {}) if text != plainer.text else beyond_clock[plainer.index]) == beyond_clock[call.index]

    # session -> where a write that is no step of a task first answered in it: what was read after it asks nothing
    kept_from: dict[int, int] = {}
    for call in calls:
        if call.writes and not call.is_error and call.tool in stays:
            kept_from.setdefault(call.session, call.index)

    plain: dict[int, ExploredCall] = {}

    def plainest(call: ExploredCall) -> ExploredCall:
        if call.index not in plain:
            fewer = [c for c in answered[call.tool] if call.index in beyond_clock and says_as(c, call)]
            # (the fewest arguments; of those, one read before any such write, as a read made again clean was)
            plain[call.index] = min(
                [call, *fewer], key=lambda c: (len(c.arguments), c.index > kept_from.get(c.session, c.index), c.index)
            )
        return plain[call.index]

    # a field that held one value in every record a tool returned ("To: <the user>") tells no record apart; one that
    # held only 0 and 1 (a flag: SQLite's `pk`) or counted its records from 0 (a position: `cid`) is no fact a person
    # asks for
    values: dict[tuple[str, str], set[str]] = defaultdict(set)
    # (tool, field) -> the distinct calls and records that held it (one record read again and again tells nothing
    # apart, given optional values that changed nothing too, or another session's handle: the mean of one column of
    # the table each session loaded; one reply to every different call, "Insight added", does not either)
    held: dict[tuple[str, str], set[tuple[str, str, int]]] = defaultdict(set)
    wide: set[str] = set()  # the records of several fields among them (`spread`)
    # (tool, field named as one of its parameters) -> whether it held what the call sent, every time one was sent; and
    # the values it held where none was: the request said back, where those are one value, its default
    # (`detail_level: names`), not a filter's (`status: done` of a listing filtered by it, any status unfiltered)
    echoed: dict[tuple[str, str], bool] = {}
    unsent: dict[tuple[str, str], set[str]] = defaultdict(set)
    # (tool, field) -> whether every value it held may have been read off the server's clock (a weekday, a flag, an
    # offset beside today's date: `of_clock_kind`): calls made within a minute of each other all say "Wednesday" or
    # "not daylight saving", which is the hour's doing, not a constant's
    of_clock: dict[tuple[str, str], bool] = {}
    # tool -> the kinds of thing it and its results name (`update_entities`: entity; `{"entities": [...],
    # "relations": [...]}`: entity, relation): a field saying one of them of every record is the record's kind tag
    # (`"type": "entity"`), which the call already says
    kinds_named: dict[str, set[str]] = defaultdict(set)
    # the texts results listed or held as values, and tool -> the objects its results map names to numbers in
    # (`tallies`)
    listed: set[str] = set()
    tallied: dict[str, list[dict[str, Any]]] = defaultdict(list)
    held_by: dict[str, set[str]] = defaultdict(set)  # tool -> the calls whose whole results held records
    unasked: dict[str, set[str]] = defaultdict(set)  # tool -> its fields that no task asks for, nor picks a line by
    # (tool, field) -> whether it held the length of the text before it named as it is, record by record (`measures`)
    measures: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for call in calls:
        # (what found nothing holds no record: its code, `"status": "task_not_found"`, is no second value of the tag
        # every record found is given, `"status": "task_details"`)
        if not call.is_error and not found_nothing(call.text, call.arguments):
            kinds_named[call.tool] |= {singular(w) for w in words_of(call.tool)[-1:]}
            data = result_data(call.data, call.structured)
            if isinstance(data, dict):
                kinds_named[call.tool] |= {singular(w) for key in data for w in words_of(str(key))[-1:]}
            listed.update(map(str, listed_texts(data)))
            tallied[call.tool] += tallies(data)
            states_now = bool(clock_spans(call.text))  # (once a call: a text's scan, not a value's)
            asked = {p: v for p, v in plainest(call).arguments.items() if p not in exploration.handles}
            records = result_records(call.data, call.structured)
            if records and not server_text(call.data)[1]:  # (a result the client cut may have lost its last field)
                held_by[call.tool].add(call_key(call.tool, asked))
            # (an end the call was sent by name, whole: `start` of `start_line`; not `max_results` of a column's `max`)
            bounds = [
                set(w) for k, v in flatten(call.arguments) if type(v) is int and set(w := words_of(k)) & BOUND_WORDS
            ]
            for record in records:
                # the bounds of a range a result says back where the call was sent one: the lines read of those asked
                # for (`"start_line": 3, "end_line": 8` of `"ranges": [{"start": 3}]`), the request's, not the thing's
                numbers = [k for k, v in record if type(v) is int]
                for low, high in bound_pairs(numbers) if bounds else []:
                    if any(sent <= set(words_of(end)) for sent in bounds for end in (low, high)):
                        unasked[call.tool] |= {low, high}
                # ... and the length of a text before it, named after it (`content_size` of `content`; a record of
                # several ranges holds each range's pair in turn), in every record that holds both, two or more (not a
                # file's size that a short name's length happened to be once)
                texts: dict[tuple[str, ...], str] = {}
                for k, v in record:
                    w = tuple(words_of(k))
                    if isinstance(v, str) and w:
                        texts[w] = v
                    elif type(v) is int and (named := [p for p in texts if w[: len(p)] == p]):
                        measures[call.tool, k].append(
                            any(v in (len(t), len(t.encode())) for t in map(texts.pop, named))
                        )
                # ... and beside a record's own `id`, a `status_id` or a `parent_id`: the code of a record it is not
                # (kanban's child item: "What is the status id of ...?" -> 1)
                own = {k.rpartition(".")[0] for k, _ in record if words_of(k.rpartition(".")[2]) == ["id"]}
                for k, v in record:
                    parent, _, leaf = k.rpartition(".")
                    if parent in own and len(words := words_of(leaf)) > 1 and words[-1] == "id":
                        unasked[call.tool].add(k)
                    values[call.tool, k].add(str(v))
                    if isinstance(v, str):
                        listed.add(v)
                    of_clock[call.tool, k] = of_clock.get((call.tool, k), True) and states_now and of_clock_kind(v)
                    # (a record read again that differs only in the clock is the same record)
                    held[call.tool, k].add((call_key(call.tool, asked), whole := gist(repr(record), {}), call.index))
                    if len(record) > 1:
                        wide.add(whole)
                    if k in call.arguments:
                        echoed[call.tool, k] = echoed.get((call.tool, k), True) and same_value(v, call.arguments[k])
                    else:
                        unsent[call.tool, k].add(str(v))
    for (tool, field), seen in values.items():
        if (
            echoed.get((tool, field))
            and len(unsent[tool, field]) <= 1
            or spread(held[tool, field], wide) >= 3
            and not of_clock[tool, field]
            # (one value, said by every call: a value said only where some were asked for is theirs, a table's
            # column in its schema)
            and (
                len(seen) == 1
                and held_by[tool] <= {c for c, _, _ in held[tool, field]}
                or seen <= {"0", "1"}
                or seen == {str(i) for i in range(len(seen))}
            )
            or {v.lower() for v in seen} <= kinds_named[tool]
            # (a field named as a parameter the call was never sent, saying its schema's default: `"mode": "list"`,
            # `"limit_requested": 10` of `limit`)
            or (tool, field) not in echoed
            and any(
                seen == {str(default)} and words_of(field.rpartition(".")[2])[: len(words := words_of(p))] == words
                for p, default in defaults.get(tool, {}).items()
            )
            or CODE_KEY.fullmatch(field)
            or CODE_KEY.fullmatch(field.rpartition(".")[2])
            # (a key of one letter, a board's column, names nothing people ask for or by: "whose a is o")
            or not re.search(r"[A-Za-z]{2}", field)
        ):
            unasked[tool].add(field)
    for (tool, field), equal in measures.items():
        if len(equal) >= 2 and all(equal):  # (a measure of the answer, not of the thing)
            unasked[tool].add(field)
    # ... nor the keys of a tally: an object inside a result that maps names the server listed or held as values
    # elsewhere to numbers (`"languages": {"markdown": 3, "python": 1}`, where `list_languages` listed both; a column's
    # `top_10_values` of the names a preview's rows held): its keys are values
    # (or the folders of the files they held, a key "" the folder they are in: `"dir_counts": {"": 1, "pkg": 0}` of a
    # match in "pkg/shop.py")
    folders = {"/".join(parts[:i]) for v in listed if "/" in v for parts in [v.split("/")] for i in range(len(parts))}
    for tool, found in tallied.items():
        for tally in found:
            if set(tally) <= listed | folders:
                unasked[tool] |= set(tally)
    # ... nor one that every tool that answered gave, two tools or more, each always the same value, over three calls
    # or records: the server's own (`"backend": "openpyxl"`, a tool's "status_message" of success), not a fact about
    # what was asked (a repository's one branch, which only some tools say, still is)
    tools_of: dict[str, set[str]] = defaultdict(set)
    for tool, field in values:
        tools_of[field].add(tool)
    answering = {c.tool for c in calls if not c.is_error}
    # ... nor an id two tools or more give, always one value: what holds every record (a board's `project_id`), no
    # record's own, whatever tools do not say it
    for field, tools in tools_of.items():
        if (
            len(tools) > 1
            and (
                tools == answering
                and all(len(values[t, field]) == 1 for t in tools)
                or words_of(field)[-1:] == ["id"]
                and len({v for t in tools for v in values[t, field]}) == 1
            )
            and sum(spread(held[t, field], wide) for t in tools) >= 3
            and not any(of_clock[t, field] for t in tools)
        ):
            for tool in tools:
                unasked[tool].add(field)

    changes_nothing = inert(calls)
    for tool, names in stand_ins.items():
        changes_nothing[tool] |= names

    def fixed_out(call: ExploredCall) -> dict[str, Any]:
        """What a task states of a call's arguments: not the server's context (`Exploration.fixed`), nor its schema's
        default, drawn as one or not (the call is the same without it: `git_diff`'s "staged False"), nor one that
        changes nothing the tool says (`inert`, `stand_ins`)."""
        default = defaults.get(call.tool, {})
        return {
            k: v
            for k, v in call.arguments.items()
            if not (k in exploration.fixed and v == exploration.fixed[k])
            and k not in changes_nothing[call.tool]
            and call.sources.get(k) != "default"
            and not (k in default and (type(v), v) == (type(default[k]), default[k]))
        }

    def say(call: ExploredCall, linked: frozenset[str] = frozenset(), states: dict[str, Any] | None = None) -> Said:
        """The call in words (`said`), by its tool's title and the arguments a task states (`states`, else
        `fixed_out`'s); a parameter its schema gives a default is a setting of the call."""
        return said(
            title_of(titles, call.tool),
            fixed_out(call) if states is None else states,
            linked,
            settings=frozenset(defaults.get(call.tool, ())),
            order=call.writes,
        )

    def quieted(
        call: ExploredCall, states: dict[str, Any], issued: frozenset[str]
    ) -> Callable[[str], tuple[dict[str, Any], Said]]:
        """`field_tasks`' `quiet` of a call whose task states `states` (its `issued` handles said as the previous
        result): for a field, those and the call in words, less the values that changed none of its answers
        (`needless`)."""

        def quiet(field: str) -> tuple[dict[str, Any], Said]:
            left = needless.get((call_key(call.tool, call.arguments), normalize_text(field)), set())
            return unstated(states, left), say(call, issued, unstated(fixed_out(call), left))

        return quiet

    def handled(chain: list[ExploredCall]) -> tuple[frozenset[str], list[Said], list[str]] | None:
        """How a task says a chain whose calls take handles (`Exploration.handles`: a session's id, another each
        session), which it never states: the handles its last call takes, said as "the previous result", after the
        calls before it, said as orders ("Load csv ... Then ... for the previous result"), and the values those
        state. None where a handle a result gave came from another call than the one before (a task would state
        it, or misread "the previous result")."""
        linked = links(chain, exploration.handles)
        if linked is None:  # (a value from a result that no task says where it came from: stated, unless a handle)
            taken = [k for c in chain for k in c.arguments if source_call(c.sources.get(k, "")) is not None]
            return None if set(exploration.handles) & set(taken) else (frozenset(), [], [])
        issued = frozenset(k for k in linked[-1] if k in exploration.handles)
        stated = [value_text(v) for c in chain[:-1] for v in fixed_out(c).values()]
        # (a handle whose value a call before was sent, a project's name its registering gave, is the user's own, the
        # same each session: where the environment makes those calls before an episode, the task asks after them as
        # after any write it does not say, stating the value: "What is the size of ... with project "Weekly report"?")
        if not issued or prepares and all(value_text(chain[-1].arguments[k]) in stated for k in issued):
            return frozenset(), [], []
        steps = [say(c, ln) for c, ln in zip(chain[:-1], linked)]
        return issued, steps, stated

    # a table's columns, in order, as a known query that lists them answered: they name the cells of the table's
    # rows where a server prints them unnamed ("[(1, 'steel hammer', 12.5, 40)]")
    columns: dict[str, list[str]] = {}
    # the names a listing said were each a kind of thing (a known query's, "the columns of the products table"; or
    # one an object's key wraps, `{"tables": [...]}`) -> that kind: another tool's records named those names alike
    # are those things ("the name of the column whose type is REAL" of a table's description, not "the name where
    # the type is REAL")
    listed_as: dict[frozenset[str], str] = {}
    for call in calls:
        if call.is_error:
            continue
        for v in call.arguments.values():
            if (found := known(v)) and found[0].lists is not None:
                names = [str(n) for _, n in result_values(call.data, call.structured)]
                listed_as.setdefault(frozenset(names), found[0].lists)
                if found[0].lists == "column" and "table" in found[1]:
                    columns.setdefault(found[1]["table"], names)
        if (wrapped := wrapped_listing(result_data(call.data, call.structured))) and (kind := wrapped_kind(call)):
            listed_as.setdefault(frozenset(record_names([list(r.items()) for r in wrapped[1]])), kind)
    listed_as.pop(frozenset(), None)

    # a tool's writes with different arguments that left one value alike, read back by the same read: that value is
    # any write's, no check of one
    by_index = {c.index: c for c in calls}
    changes = {c.index: found for c in calls if c.reads_back is not None and (found := changed_by(by_index, c))}
    left: dict[tuple[str, str, str], set[str]] = defaultdict(set)  # (tool, read-back, value) -> the writes' calls
    for index, (write, changed) in changes.items():
        again = by_index[index]
        for v in changed:
            left[write.tool, call_key(again.tool, again.arguments), str(v)].add(call_key(write.tool, write.arguments))
    any_write: dict[str, set[str]] = defaultdict(set)
    for (tool, _, value), writes in left.items():
        if len(writes) > 1:
            any_write[tool].add(value)

    out: list[Scenario] = []
    for call in calls:
        if call.reads_back is not None:  # what a write changed: a task to make it, where a rollout may make it
            if (found := changes.get(call.index)) is not None and found[0].tool not in stays:
                write, changed = found
                changed = [v for v in changed if str(v) not in any_write[write.tool]]
                if (after := handled(chain_of(calls, write))) is not None:
                    issued, steps, stated_before = after
                    made = _write_tasks(
                        calls, call, write, changed, lambda c, issued=issued: say(c, issued), rng, prepares
                    )
                    out += _after(made, steps, stated_before)
            if not prepares:  # ... and, where the environment may make that write, a question on what it left
                continue
        # (a filter that matched nothing: its zeros are no answer; what it says back is what it was sent, or its
        # schema's defaults for the rest; nor a call some of whose list's items the result says failed: no task
        # states a file that is not there beside one that is)
        if (
            call.is_error
            or found_nothing(call.data, {**defaults.get(call.tool, {}), **call.arguments})
            or failed_items(call.data, call.arguments)
        ):
            continue
        call = plainest(call)
        chain = chain_of(calls, call)
        if any(c.is_error or c.tool in stays for c in chain):  # a write that stays is no step to repeat
            continue
        if any(requests(c.arguments) for c in chain):
            continue
        state = state_of(calls, chain) if prepares else None
        if state and any(c.tool in stays for c in state):  # nor one to make before an episode
            continue
        # a query (an SQL statement) is never pasted into a task: a call of one the lexicon knows is asked about by
        # what it means (`lexicon.question`, `lexicon.about`); one it does not know grounds only tasks that state
        # no call (a record asked for by its name)
        queries = [v for v in call.arguments.values() if shaped(v)]
        unknown = any(shaped(v) and known(v) is None for c in chain for v in c.arguments.values())
        data = returned = result_data(call.data, call.structured)
        data = column_rows(data) or data  # (a table's columns beside its rows: the rows, each a record of them)
        while isinstance(data, (list, tuple)) and len(data) == 1:  # one row of one value: "[(2,)]" answers 2
            data = data[0]
        if queries and isinstance(data, dict) and len(data) == 1:  # ... a row's one column named: "[{'COUNT(*)': 3}]"
            data = next(iter(data.values()))
        given_values = [value_text(v) for v in call.arguments.values()]
        answer = (
            result_answer(str(data) if data is not None else server_text(call.data)[0], given_values)
            if data is None or isinstance(data, (str, int, float))
            else None
        )
        # (a query's one cell of text is its answer whole: the first payee in order, "25 Degrees Burger Bar", not 25)
        if queries and returned is not None and isinstance(data, str) and as_number(data) is None and data.strip():
            answer = data.strip()
        # a read that says back a sentence a write of its state stored, and little else ("File: README.md" and
        # "Send the draft to Sam by Friday.", after the write of that note that is the task's `prepare`) is asked
        # for that sentence: what the store holds, not a message of the server's
        says_stored = False
        if answer is None and state:
            written = [v for c in state for _, v in flatten(c.arguments)]
            if (stored := stored_sentence(call.text, given_values, written)) is not None:
                answer, says_stored = stored, True
        # ... and so is the one sentence of a document a read gave, under its headings or its name
        if answer is None and not call.writes and (document := document_sentence(call.text, given_values)):
            answer, says_stored = document, True
        # an answer the arguments already hold, or a text that echoes one ("no items match 'drill'"), is no answer;
        # nor a text the tool gave to three calls or more, none a filter of another ("Task not found" for every id
        # asked): its reply to anything, no fact about what it was asked; nor words the request holds (the header
        # `MAX(id)` of a query's empty result)
        # (a number alone, "8", is no stock reply: many sums are 8; a number in words, "Server v2 is up.", can be)
        # (but a text that several calls gave, each sent another part of it, is what they each matched: a search by a
        # part of a name, "Garden plan.md" of "Garden" and of "plan", found it; no reply to anything, nor an echo of
        # one; unlike "Generated bar plot" of plots of kind "bar", each of another title)
        alike = {plainest(c).index: c for c in said_alike[call.tool, call.text]}
        held = [
            {
                value_text(v)
                for v in c.arguments.values()
                if v and normalize_text(value_text(v)) in normalize_text(c.text)
            }
            for c in alike.values()
        ]
        matched = all(held) and len({frozenset(h) for h in held}) >= 2
        stock = (
            not matched
            and len(alike) >= STOCK_REPLY
            or (
                call.writes and says_done(answer)  # a write's word that it was done
            )
        )
        echo = (
            isinstance(answer, str)
            and (
                any(
                    v and normalize_text(v) in normalize_text(answer) and not (matched and v != answer)
                    for v in given_values
                )
                or as_number(answer) is None
                and (any(f" {normalize_text(answer)} " in f" {normalize_text(v)} " for v in given_values) or stock)
            )
            or (stock and as_number(answer) is not None and re.search(r"[A-Za-z]{2}", call.text) is not None)
        )
        if answer is not None and queries:
            dated = isinstance(answer, str) and ISO_DATE.fullmatch(answer.strip()) is not None
            asked = None if unknown else next((q for v in queries if (q := question(v, answer, dated))), None)
            if asked is not None and not echo and not holds_answer(asked, answer):
                given = [name for v in queries for name in stated(v)]
                # what it asks, whatever the table or column: tasks are spread over these as over a record's fields
                what = next(normalize_text(k[0].text) for v in queries if (k := known(v)))
                out.append(grounded_scenario(asked, answer, chain, "result", field=what, given=given, prepare=state))
            continue
        pasted = any(shaped(v) for c in chain for v in c.arguments.values())  # steps stated would paste a query
        if (
            answer is not None
            and answerable(answer, whole=True)
            and not echo
            and not pasted
            and (not holds_answer(" ".join(given_values), answer) or chosen(call.arguments, answer))
        ):
            if (linked := links(chain)) is None:
                continue
            steps = [say(c, ln) for c, ln in zip(chain, linked)]
            if len(steps) == 1:
                task = rng.choice(steps[0].asks_text() if says_stored else steps[0].asks_result())
            else:
                first, *then = [s.order() for s in steps]
                task = rng.choice(ASKS).format(". ".join([first, *(f"Then {o[:1].lower()}{o[1:]}" for o in then)]))
            expression = chain_expression(chain, linked, descriptions, answer)
            # as often asked as the expression a description states as in words; always where the value is one ("What is
            # 98 + 51?")
            own = (
                len(chain) == 1
                and len(call.arguments) == 1
                and expression == " ".join(str(next(iter(call.arguments.values()))).split())
            )
            worded = expression is not None and (own or rng.random() < 0.5)
            if worded:
                # (half the time in words where it reads left to right, as people ask: "What is 45 times 6?")
                spoken = in_words(expression) if rng.random() < 0.5 else None
                task = (
                    rng.choice(WORDED_FORMULA_ASKS).format(spoken)
                    if spoken
                    else rng.choice(FORMULA_ASKS).format(expression)
                )
            elif holds_answer(task, answer) and not chosen(call.arguments, answer):
                continue  # the tool's name says it ("What is the sympy complexes?" -> Complexes)
            out.append(
                grounded_scenario(
                    task,
                    answer,
                    chain,
                    "chain" if len(chain) > 1 else "result",
                    # (an expression's value is one question whichever tool computed it)
                    field=EXPRESSION_FIELD if worded else None,
                    # (not what a step took from the result before it, said as "the previous result")
                    given=[
                        value_text(v) for c, ln in zip(chain, linked) for k, v in fixed_out(c).items() if k not in ln
                    ],
                    prepare=state,
                )
            )
            continue
        meant = None if unknown else next((a for v in queries if (a := about(v))), None)
        # a query is said by what its result holds, and not at all where that is unknown
        saying = (Said(None, "", about=meant) if meant else None) if queries else say(call)
        noun = next((noun_of(r) for v in queries if (r := record_of(v))), None)
        tables = [found[1]["table"] for v in queries if (found := known(v)) and found[0].record and "table" in found[1]]
        if noun and tables and (named := _named_rows(data, columns.get(tables[0], []))):
            call = call.model_copy(update={"structured": named})
        if (after := handled(chain)) is None:
            continue
        issued, steps, stated_before = after
        states = {k: v for k, v in fixed_out(call).items() if k not in issued}
        if issued:
            saying = say(call, issued)
        elif unsaid := [c for c in chain[:-1] if c.writes]:
            # a write before the call that the task does not say ("Add tasks to request req-1 ..." of the planning
            # that made req-1): the environment makes it before the episode (its `prepare`), where it may; no task
            # asks for the call after a write it never mentions
            if state is None:
                continue
            state = sorted([*state, *unsaid], key=lambda c: c.index)
            chain = [c for c in chain if not c.writes or c is call]
        # (an object holding listings of two kinds, `{"entities": [...], "relations": [...]}`: each on its own, its
        # records called what its key says, never the fields of both taken for one record of the whole)
        parts = [{k: v} for k, v in data.items() if listing_of(v)] if isinstance(data, dict) else []
        # (... and one beside empty listings of other kinds, the object holding nothing else)
        lists = len(parts) > 1 or len(parts) == 1 < len(data) and all(isinstance(v, list) for v in data.values())
        # a total beside a listing that counts its records is asked as how many it lists, not as a field, where what
        # the listing holds has a name: the key that wraps it (`{"commits": [...], "totalCount": 2}`: "How many commits
        # are in the git log?", not "... tell me its total count"), or a known query's meaning (a statement's rows,
        # two objects deep, beside its "count": "Count the columns of the department table."); of a query, only one
        # that lists all there is (the rows of `SELECT * ... LIMIT 5` count the sample)
        wrapped, kind, many = wrapped_listing(data), wrapped_kind(call), listing_size(data)
        sized = {k for k, v in flatten(data) if counts(k) and type(v) is int and v == many > 1}
        complete = all((k := known(v)) is not None and k[0].lists is not None for v in queries)
        said_what = kind is not None or bool(queries) and complete
        # (not where it lists as many as a list the call was sent: the task states them, and counting them back asks
        # nothing; nor is a count of that list under its name asked, `batch_calculate`'s "total_expressions": 2 of
        # its `expressions`)
        sent_lengths = {p: len(v) for p, v in call.arguments.items() if isinstance(v, list)}
        counted_back = {
            k
            for k, v in flatten(data)
            if type(v) is int
            and any(v == n and set(words_of(p)) <= set(words_of(k.rpartition(".")[2])) for p, n in sent_lengths.items())
        }
        made = (
            count_tasks(call, many, states, chain, saying, queries, state, kind)
            if sized and saying and said_what and many not in sent_lengths.values()
            else []
        )
        hidden = unasked[call.tool] | counted_back | (sized if made or not complete else set())
        for part in parts if lists else [None]:
            one = call if part is None else call.model_copy(update={"structured": part, "text": json.dumps(part)})
            named = noun if part is None else singular(" ".join(words_of(next(iter(part)))))
            made += listing_tasks(one, states, chain, saying, queries, state)
            # (a part of one record is that record in what the call gives: "What is the relation in the graph
            # from?", not "What is the graph from?")
            # (... and so is a listing of one record, `[{"name": "todo.txt", "type": "file"}]`, where the call named
            # what it lists: "What is the type of the entry in the directory tree for docs?", not "... of the directory
            # tree for docs?", whose record is the file, not docs)
            says = saying
            listed = next(iter(part.values())) if part is not None else wrapped[1] if wrapped else returned
            if (
                not queries
                and saying is not None
                and (whole := saying.phrase())
                and listing_of(listed)
                and len(listed) == 1
            ):
                named = named if part is not None else kind or ENTRY
                says = Said(None, "", about=f"the {named} in {whole}")
            names = frozenset(record_names(result_records(one.data, one.structured)))
            # (a query's rows are each a row of its table: "the date of the order whose customer is Cleo")
            each = listed_as.get(names) or (named if queries and part is None else None)
            quiet = quieted(one, states, issued) if says is saying and saying is not None and not queries else None
            made += field_tasks(one, states, chain, rng, hidden, says, queries, named, state, each, quiet)
        if wrapped is not None:  # ... and what is said of a listing it wraps
            own = call.model_copy(update={"structured": {k: v for k, v in data.items() if k != wrapped[0]}})
            made += field_tasks(own, states, chain, rng, hidden, saying, queries, noun, state)
        out += _after(made, steps, stated_before)

    # a search's place for what it was sent: where two calls of a tool found theirs at one place in its result under
    # different keys (`{"matches": {"Staff": {"C2": 38}}}` of 38, `... {"D3": "Ben"}` of Ben), those keys say where a
    # value is (a cell's address), and the tool, named for the things it finds, is asked which one holds it; not where
    # the place is in an item of a list: the items are records alike, their keys the fields each has (a knowledge
    # graph's entity found by its `name` or its `entityType`: "Which node holds event?" -> "entityType")
    def place(tool: str, at: str) -> tuple[str, str, int]:
        """A place in a tool's result: the result's key it is under, at a depth (the keys on the way may vary too:
        a sheet's name)."""
        return tool, at.partition(".")[0], at.count(".")

    found_at: dict[tuple[str, str, int], set[str]] = defaultdict(set)
    for call in calls:
        if not call.is_error and not call.writes:
            for _, at in searched_at(call):
                found_at[place(call.tool, at)].add(at.rpartition(".")[2])
    for call in calls:
        things = words_of(call.tool)[-1:]
        if call.is_error or call.writes or not things or singular(things[0]) == things[0]:
            continue
        chain = chain_of(calls, call)
        if call.index > kept_from.get(call.session, call.index) or len(chain) > 1:
            continue
        state = state_of(calls, chain) if prepares else None
        if state and any(c.tool in stays for c in state):
            continue
        for name, at in searched_at(call):
            key = at.rpartition(".")[2]
            value = call.arguments[name]
            in_list = any(part.isdigit() for part in at.split(".")[:-1])
            if (
                len(found_at[place(call.tool, at)]) < 2
                or data_key(key)
                or in_list
                or holds_answer(value_text(value), key)
            ):
                continue
            # (the call said without what it searched for, which the question says: "Find cells "/srv/shop.xlsx" with
            # sheet Staff. Which cell holds 38?")
            others = call.model_copy(update={"arguments": {k: v for k, v in call.arguments.items() if k != name}})
            task = f"{say(others).order()}. Which {singular(things[0])} holds {quoted(value)}?"
            given = [value_text(v) for v in fixed_out(call).values()]
            out.append(
                grounded_scenario(task, key, chain, "result", field=singular(things[0]), given=given, prepare=state)
            )
    # (no task on a call sent a path where none is asked for, `open_nodes` of names "/srv/memory.jsonl", nor one
    # that states or is answered by what a write was sent so: "What is the relation from?" -> the server's own file)
    sent = [(c, k, v) for c in calls for k, v in flatten(c.arguments) if isinstance(v, str) and v.startswith("/")]
    placed = {v for _, k, v in sent if not misplaced_path(v, k)}  # (a path sent where one is asked is the user's)
    wrote = {v for c, k, v in sent if c.writes and v not in placed}
    # (... but a path the server itself named a thing by, where the write that made it was sent no name, is that
    # thing's name: a project registered with no name of its own is called by its folder's path)
    named = {
        v
        for c in calls
        if c.writes and not c.is_error
        for k, v in flatten(result_data(c.data, c.structured))
        if k.lower() in NAME_KEYS - PATHS
        and isinstance(v, str)
        and not any(v == w for n, w in flatten(c.arguments) if n.lower() in NAME_KEYS - PATHS)
    }
    # (a digest a call computed, an id it issued, that a call's whole result was: no one states it; a task asks for it
    # by the call that gave it)
    issued = {text for c in calls if not c.is_error and ISSUED.fullmatch(text := c.data.strip())}
    return [
        t
        for t in out
        if not wrote & {str(t.answer), *map(str, t.metadata.get("given", []))}
        and not issued & set(map(str, t.metadata.get("given", [])))
        and not any(
            misplaced_path({k: v for k, v in c.arguments.items() if not (isinstance(v, str) and v in named)})
            for c in t.reference
        )
    ]


def searched_at(call: ExploredCall) -> list[tuple[str, str]]:
    """Where in its result a read found a value it was sent (a search's text, not a path): each (the parameter, the
    dotted path of the one place the result holds its value), for values it holds in one place only."""
    data = result_data(call.data, call.structured)
    # (not where it says the value back under a parameter's name: a request echoed, `"pattern": "PRIMARY"`)
    return [
        (k, paths[0])
        for k, v in call.arguments.items()
        if isinstance(v, (str, int, float))
        and not isinstance(v, bool)
        and not str(v).startswith("/")
        and len(paths := answer_paths(data, v)) == 1
        and "." in paths[0]
        and paths[0].rpartition(".")[2] not in call.arguments
    ]


def links(chain: list[ExploredCall], said: Collection[str] | None = None) -> list[frozenset[str]] | None:
    """Each call's arguments that took a value from a result, said as "the previous result" where each call is said
    after the one before it; None where one came from an earlier call than that, or where that result labelled it
    neither as what names a thing (a name, an id, a path) nor as the parameter's kind of thing (a health report's
    "max_sessions": 100 sent as a session id), or where one said so (all, or those `said` names: the rest are
    stated) was one item of a listing: each would be misread."""
    linked = [frozenset(k for k in c.arguments if source_call(c.sources.get(k, "")) is not None) for c in chain]
    if any(source_call(c.sources[k]) != chain[i - 1].index for i, c in enumerate(chain) for k in linked[i]):
        return None
    for before, call, taken in zip(chain, chain[1:], linked[1:]):
        pairs = result_values(before.data, before.structured)
        for k in taken:
            labels = {label for label, v in pairs if same_value(v, call.arguments[k])}
            # (one item of a listing, which another value under its label stands beside, is no "previous result":
            # which one? `factorial` of 4 after `divisors` of 4 said "[1, 2, 4]")
            if (said is None or k in said) and any(
                label in labels and not same_value(v, call.arguments[k]) for label, v in pairs
            ):
                return None
            # (a part of one of its values, a word of "/Reading list.md" sent as a search's query, is no "previous
            # result"; a value made of one, an expression over the number it gave, is)
            sent = str(call.arguments[k])
            if not labels and not any(str(v) in sent for _, v in pairs) and any(sent in str(v) for _, v in pairs):
                return None
            head = singular(words_of(k)[-1]) if words_of(k) else ""
            worded = [{singular(w) for w in words_of(label)} for label in labels]
            if labels and not any(not w or head in w or w & (IDENTIFYING | NAME_KEYS) for w in worded):
                return None
    return linked


def _after(tasks: list[Scenario], steps: list[Said], stated: list[str]) -> list[Scenario]:
    """`tasks`, each asked after the `steps` that made what it takes ("Load csv ... Then what is ..."), which state
    the values `stated`; those the steps give the answer away in dropped."""
    if not steps:
        return tasks
    lead = ". Then ".join(o if i == 0 else f"{o[:1].lower()}{o[1:]}" for i, o in enumerate(s.order() for s in steps))
    out = []
    for t in tasks:
        task = f"{lead}. Then {t.task[:1].lower()}{t.task[1:]}"
        if not holds_answer(task, t.answer):
            given = [*stated, *t.metadata.get("given", [])]
            out.append(
                t.model_copy(
                    update={
                        "task": task,
                        "id": task_id(task, t.reference, t.prepare),
                        "metadata": {**t.metadata, "given": given},
                    }
                )
            )
    return out


def _named_rows(data: Any, columns: list[str]) -> list[dict[str, Any]] | None:
    """Rows printed without their columns' names (tuples), each as a record named by `columns`; None where
    the rows are not such tuples, one cell for each column."""
    if not columns or not isinstance(data, (list, tuple)) or not data:
        return None
    if not all(isinstance(row, (list, tuple)) and len(row) == len(columns) for row in data):
        return None
    return [dict(zip(columns, row)) for row in data]
