"""Tasks asking about the records a call's result holds (the `field`, `listing` and `count` tasks of
`mcprl.scenarios.candidates`): a labelled field of one record, picked out by a name of its own, by the call's
arguments, by what a search was about, by its place in a dated listing or by a field no other record shares, worded
one way whichever call grounds it; and every name a short listing gives, or how many a longer one gives."""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from mcprl.checks import ContainsCheck, holds_answer, normalize_text
from mcprl.scenarios.explored import ExploredCall
from mcprl.scenarios.grounded_task import MAX_ANSWER_WORDS, answer_of, answerable, chosen, grounded_scenario
from mcprl.scenarios.lexicon import (
    EARLIEST,
    IDENTIFYING,
    KINDS,
    LATEST,
    NAME_KEYS,
    NOT_COUNTS,
    NOT_KINDS,
    PREPOSITIONS,
    TIMES,
    data_type,
    head,
    participle,
    record_of,
    shaped,
    singular,
    spoken,
    stated,
    unix_time,
    words_of,
)
from mcprl.scenarios.phrasing import (
    COUNT_NAME_ASKS,
    DATED_NAME_ASKS,
    FILTER_ASKS,
    NAME_ASKS,
    PREPOSITION_NAME_ASKS,
    STATE_NAME_ASKS,
    TOPIC_ASKS,
    Said,
    field_words,
    names_each,
    noun_of,
    quoted,
    value_text,
)
from mcprl.scenarios.results import (
    FILE_NAME,
    ID_FORM,
    ISO_DATE,
    counted,
    data_key,
    list_keys,
    listing_of,
    one_listed,
    result_data,
    result_records,
    result_values,
    says_done,
    sentence_fields,
    server_text,
    wrapped_listing,
)
from mcprl.types import Scenario

FIELDS_PER_RESULT = 3  # field tasks made from one result, at most
MAX_LISTED = 8  # names a listing may give for a task that asks for them all
# ... and values one may give for a task that asks how many there are (a longer one is counted by no one;
# `results.flatten` reads 50 at most)
MAX_COUNTED = 40
FILE_NAME_WORDS = 5  # the words a file's name (`results.FILE_NAME`) may hold in a listing ("Garden plan.md")


def field_tasks(
    call: ExploredCall,
    args: dict[str, Any],
    chain: list[ExploredCall],
    rng: random.Random,
    unasked: set[str],
    saying: Said | None,
    queries: list[str] | None = None,
    noun: str | None = None,
    prepare: list[ExploredCall] | None = None,
    kind: str | None = None,
    quiet: Callable[[str], tuple[dict[str, Any], Said]] | None = None,
) -> list[Scenario]:
    """Tasks asking for a labelled field of one record of the result (one line of a listing, or
    the whole result when it is one record); not for a field of `unasked` (a flag, a position, a constant). `args`:
    what a task states of the call's arguments; `saying`, the call in words; `quiet(field)`, both where a task asks
    for that field (less the values that changed none of its answers: a file's total lines, whichever line a read
    started at). A call that took `queries` (SQL) is said by what its result holds and its records named `noun` (a
    table's row), never by its query; with no `saying`, only its records' names ask for them. `kind`: what each
    record of a listing is, where another listing said so of their names (else its wrapper's key or opening key says
    it)."""
    stated_args, said_call = args, saying  # (what `quiet` gives in their place, field by field)
    writes = [json.dumps(c.arguments, ensure_ascii=False) for c in prepare or []]  # the arguments of its state's writes
    pairs = result_values(call.data, call.structured)
    records = result_records(call.data, call.structured)
    # (the rows of a query that lists a table's rows are some of its rows, a `LIMIT 1` one of them: each asked for
    # as one row of a listing, by a field that picks it out, never as "the rows of the products table")
    listing = len(records) > 1 or len(records) == 1 and any(record_of(v) for v in queries or [])
    if listing:  # a listing's fields are the keys every record has ("stock: 5"), not a colon inside a cell
        keys = Counter(k for record in records for k in {k for k, _ in record if k})
        records = [
            [(k, v) if keys[k] == len(records) else ("", f"{k}: {v}" if k else v) for k, v in record]
            for record in records
        ]
    kind = (kind or wrapped_kind(call) or _kind(records, unasked)) if listing else None
    # what a record is called where it is asked for by its name: the noun given, else the tool's where its name calls
    # each record so (a listing of it in the plural), else the kind a listing's records are known as
    each = noun or (noun_of(call.tool) if not listing or names_each(call.tool) else kind)
    noun = noun or noun_of(call.tool)
    row = len(records) == 1 and " | " in call.data  # one row of cells ("SKU-3002 | item ccc | stock: 42")
    given_text = normalize_text(" ".join(map(value_text, call.arguments.values())))
    given_each = {normalize_text(value_text(v)) for v in call.arguments.values()}
    worded = [v for v in call.arguments.values() if isinstance(v, str) and re.search(r"[A-Za-z]{3}", v)]
    # prose (a message's body, a description) may state labelled values of its own: "Tracking number: 1Z99."
    # ("Confirmation code", "ZOE67V. Flight SW 764 ...") stands for ("Confirmation code", "ZOE67V"), and keeps the rest
    records = [list(dict.fromkeys(pair for k, v in record for pair in _stated(k, v))) for record in records]
    held = Counter(k for record in records for k in {k for k, _ in record if k})
    # a search's words (one argument, a word or more): a field that one record of its listing holds is asked
    # for by what the search was about ("the confirmation code in the email about Porto"), as a user asks it
    words_given = [v for v in args.values() if isinstance(v, str) and re.search(r"[A-Za-z]{3}", v)]
    # (... and so is the one record a search found: a listing of one, beside none of any other kind)
    data = result_data(call.data, call.structured)
    in_lists = list_keys(data)  # (a number a list holds is one of its items, no count of them)
    lists = [v for v in (data.values() if isinstance(data, dict) else [data]) if listing_of(v) or v == []]
    # (a result that is one record holding a listing of one, `{"count": 1, "results": [{"name": "PRIMARY"}]}`: that
    # record's name names its own fields, not the count of the listing it is in)
    inner = None if listing else one_listed(data)
    found = listing or sum(map(len, lists)) == 1
    # (a field that says only which listing its records are in, each "type": "entity" of `{"entities": [...]}`, is no
    # answer; a listing's files and folders each "type": "file" or "directory" are)
    kinds = {singular(spoken(k)): v for k, v in data.items() if listing_of(v)} if isinstance(data, dict) else {}
    sorts = {k for k, v in kinds.items() if all(k in {normalize_text(str(x)) for x in r.values()} for r in v)}
    # (not a value that names what the call looks at, a path or a name: the files of "docs" are no search about docs)
    naming = any(set(words_of(k)) & IDENTIFYING for k in args)
    topic = words_given[0] if found and len(args) == 1 and words_given and not queries and not naming else None
    # ... or where the one argument is named as a field the records hold, a filter by it (`filter_by_context` sent
    # context "phone", each todo's `contexts` holding it): the record is the one with that value ("the todo with
    # context phone"), what the listing's key calls it where the tool's name calls it by the filter ("context")
    held_words = {singular(w) for r in records for k, _ in r for w in words_of(k)}
    by = next(iter(args)) if topic is not None else ""
    filtered = spoken(by) if by and {singular(w) for w in words_of(by)} <= held_words else None
    filter_noun = noun
    if filtered is not None and singular(filtered) == noun:
        filter_noun = next(iter(kinds)) if len(kinds) == 1 else "one"
    out: list[Scenario] = []
    # a dated listing's first and last lines by their place ("the latest commit"); only its first, "the first one
    # listed", where its dates are in no order, or the client cut it (its last line shown is not the last one)
    places: dict[int, str] = {}
    # (... or a query's LIMIT stopped it, as many rows as it allowed: a sample of its table, whose other rows may share
    # a value with one shown, "the posting whose narration is Payroll" of many)
    limits = [int(m[1]) for q in queries or [] if (m := re.search(r"\bLIMIT\s+(\d+)\s*;?\s*$", q, re.I))]
    cut = server_text(call.data)[1] or any(len(records) >= n for n in limits)
    if listing and saying is not None:
        if (order := _date_order(records)) is not None:
            places = {0: f"{order[0]} {kind or 'one'}", len(records) - 1: f"{order[1]} {kind or 'one'}"}
            if cut:
                del places[len(records) - 1]
        elif any(ISO_DATE.search(str(v)) for _, v in records[0]):
            places = {0: f"first {kind or 'one'} listed"}  # ("the first entity listed", where the kind is known)
    # the latest line of a listing in time order is always one of those asked of, by its place: what people ask of a
    # log or an inbox most is its newest entry ("Who made the latest commit?")
    latest = next((at for at, said in places.items() if said.startswith(LATEST)), None)
    ats = rng.sample(range(len(records)), min(2, len(records)))
    if latest is not None and latest not in ats:
        ats[-1] = latest
    for at in ats:
        record, place = records[at], places.get(at)
        # a key the record holds more than once (lines that were not read as a listing) names no one value
        twice = {k for k, n in Counter(k for k, _ in record).items() if n > 1}
        labelled = [
            (k, v)
            for k, v in record
            if k
            and k not in twice
            and k not in unasked
            and not data_key(k)
            and answerable(v)
            and not unix_time(k, v)
            and normalize_text(str(v)) not in sorts
            and normalize_text(str(v)) != normalize_text(call.tool)  # (the tool's name said back: an `operation`)
            # (nor a write's word that it was done: "Insight added", "status: success")
            and not (call.writes and says_done(v))
            # (nor one that says back what the call was given: "Europe/Warsaw (CET)" of timezone Europe/Warsaw)
            and (
                f" {normalize_text(str(v))} " not in f" {given_text} "  # (as words: "file" of a folder "files")
                and not any(holds_answer(str(v), w) for w in worded)
                or chosen(call.arguments, v)
            )
            # (nor labelled by what the call was given: "Debug: Cache hit ratio 0.95" of message type "debug")
            and normalize_text(k) not in given_each
            # (nor the name of a record that is its name alone, of a call sent nothing that picks it out: "List
            # tables. What is the name?" of `[{"name": "books"}]`)
            and not (len(record) == 1 and not call.arguments and k.lower() in NAME_KEYS)
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
            and not data_type(v)  # ("- name: TEXT" of a table's columns: the column's type, not its name)
            # a value with no key names a record of a listing, or a cell of a row; the lines of a result that
            # is one record are its heading or prose ("Repository status:", "On branch main"); a name key the record
            # holds more than once names its parts ("sheets": [{"name": "Orders"}, {"name": "Staff"}]), not it
            and (not k and (listing or row) or k.lower() in NAME_KEYS and k not in twice)
        ]
        names.sort(key=lambda v: (" " not in v, bool(re.search(r"\d", v))))  # names before codes
        # a record a search found by a word of its name is asked by that name, not as what the search was about: "the
        # entity "Team meeting"", not "the entity about Team"; a title of more words is about things, "the email about
        # Porto" of "Your flight to Porto is confirmed"
        of_name = topic is not None and any(
            set(words_of(topic)) <= set(words) for n in names if len(words := words_of(n)) <= 3
        )
        # values with a digit first (an amount, a code, a count): what a person asks a record for
        picked = sorted(rng.sample(labelled, len(labelled)), key=lambda kv: not re.search(r"\d", str(kv[1])))
        for field, value in picked[:FIELDS_PER_RESULT]:
            at_place = None  # the place that picks the record out, where one does ("latest commit")
            args, saying = quiet(field) if quiet is not None else (stated_args, said_call)
            # a name that picks the record out: of it alone, and given by at most one of the writes that made the
            # state it is read from (two tasks created "Weekly report" are not told apart by it)
            label = next(
                (
                    n
                    for n in names
                    if n != value
                    and sum(n in str(v) for _, v in pairs) == 1
                    and sum(n in w for w in writes) <= 1
                    and (inner is None or field in inner or n not in map(str, inner.values()))
                ),
                None,
            )
            asked = spoken(field) or field.lower()
            # (a field a data type is given for, "- price: REAL" of a table's columns: asked for its type)
            if data_type(value) and asked.split(" ")[-1] not in KINDS:
                asked = f"type of {asked}"
            # (a number of things, "pages": 880, is asked how many: not "What are the pages of ...?")
            whole = re.fullmatch(r"\d+", str(value).strip()) is not None
            # (of what it is, not of its unit: "maximum size in megabytes" is no number of megabytes)
            head_word = head(asked)
            many = (
                whole
                and not participle(asked)
                and singular(head_word) != head_word
                and head_word not in NOT_COUNTS
                and field not in in_lists
            )
            # (a field a preposition names, "from" of an email, is asked after the thing it is of: "Who is the email
            # ... from?", never as a line of a listing a field picks out, "the to where ...")
            after = asked in PREPOSITIONS
            # (a date a participle names is the day the thing was done: "When was the document created?")
            dated = participle(asked) and ISO_DATE.fullmatch(str(value).strip()) is not None
            if asked in TIMES:
                continue  # (a time a preposition names is asked "since when", which no template words)
            # one record that a call's arguments named (an id, a key): asked for by those or by its name, as a user
            # might; one question is worded one way, whichever call grounds it, so that duplicates stay duplicates
            # (a field of the record, not of the result it is in: "the todo with project Report"'s fields, not the
            # count of the listing that found it)
            if (
                topic is not None
                and held[field] == 1
                and (inner is None or field in inner)
                and not after
                and not of_name
                and (label is None or rng.random() < 0.5)
            ):
                asks = TOPIC_ASKS if filtered is None else FILTER_ASKS
                task = _worded(asks, topic, asked).format(
                    **field_words(asked), noun=filter_noun, topic=topic, filter=filtered
                )
                given = [topic]
            # (not a line of a listing of one thing's parts, which the call named: a table's columns, a folder's
            # files, whose names other things' parts share; nor what a write made, which is not there before the
            # write a task asks for: "Register project ... and tell me", not "the project Team meeting's")
            elif (
                label is not None
                and (each is not None or participle(asked) and not after)
                and not call.writes
                and (not (saying and saying.named) if listing else not args or rng.random() < 0.5)
            ):
                # bare, only a name that reads as a thing's ("steel hammer"), not a subject ("Your flight is
                # confirmed") nor a proper name, which takes no article ("the Project Apollo's"), nor a file's ("the
                # todo.txt's"); where what the record is has no name, a state in it alone ("What is added in TODO.md?")
                bare = each is None or len(label.split()) <= 4 and re.fullmatch(r"[a-z ]+", label) is not None
                asks = (
                    PREPOSITION_NAME_ASKS
                    if after
                    else DATED_NAME_ASKS
                    if dated
                    else STATE_NAME_ASKS
                    if participle(asked)
                    else COUNT_NAME_ASKS
                    if many
                    else NAME_ASKS
                )
                asks = asks if each is not None else asks[1:]
                task = _worded(asks if bare else asks[:1], label, asked).format(
                    **field_words(asked), noun=each, name=label
                )
                given = [label]
            elif after and listing:
                continue
            elif place is not None and (at == latest or rng.random() < 0.5):
                # the first or last line of a listing in time order (its lines dated), by its place: a log's latest
                # entry, as people ask "Who made the latest commit?"; not a table's first row, whose place means
                # nothing. Said alone only of the first line of a call that states nothing: a listing cut short
                # keeps its first line, not its last; and only where the place says what the line is ("the latest
                # commit", not "the first one listed": of what?)
                given = [value_text(v) for v in args.values() if not shaped(v)]
                alone = kind is not None and not given and at == 0 and place.endswith(f" {kind}")
                task = _worded(saying.asks_record(asked, f"of the {place}", alone, dated), given, asked)
                at_place = place
            elif (
                listing
                and saying is not None
                and (key := _identifying(record, records, field, unasked, cut)) is not None
            ):
                # a line of a listing without a name: picked out by a field that no other line shares, as the thing
                # the line is where that is known ("of the commit whose message is ...", "of commit a1b2")
                given = [value_text(key[1]), *(value_text(v) for v in args.values() if not shaped(v))]
                said_key = spoken(key[0])
                picked_by = quoted(key[1])
                if participle(said_key) and ISO_DATE.fullmatch(str(key[1]).strip()):  # ("the one started on ...")
                    which = f"of the {kind or 'one'} {said_key} on {picked_by}"
                elif participle(said_key):
                    which = f"where {picked_by} is {said_key}"
                elif said_key in PREPOSITIONS:
                    which = f"of the {kind or 'one'} {said_key} {picked_by}"  # ("of the relation from "Ann"")
                elif said_key in ("name", "title"):  # by its name: "of the sheet Orders", "the type of price"
                    which = f"of the {kind} {picked_by}" if kind else f"of {picked_by}"
                elif kind is None:
                    which = f"where the {said_key} is {picked_by}"
                elif said_key == kind:
                    which = f"of {kind} {picked_by}"
                elif asked == kind:  # (the thing itself: "who is the customer whose ...")
                    which = f"whose {said_key} is {picked_by}"
                else:
                    which = f"of the {kind} whose {said_key} is {picked_by}"
                alone = kind is not None and len(given) == 1
                task = _worded(saying.asks_record(asked, which, alone, dated), given, asked)
            elif not listing and saying is not None:  # the one record a call gave: by the call (its title alone,
                # where it states nothing)
                # (of a query: the names it states, as its result is said: "the rows of the department table")
                given = [n for v in queries for n in stated(v)] if queries else [value_text(v) for v in args.values()]
                # (a state that names a thing, "modified: TODO.md", not a date, "created: 2024-03-01")
                state = participle(asked) and not re.search(r"\d", str(value))
                # (... and a count of things in one, "files changed: 1", "Relations created: 0", or of those the call
                # did, "succeeded": 2 of a batch: "How many succeeded?", never "What is the succeeded?")
                subject = asked.split(" ")[:-1]
                counted = many or (
                    whole and participle(asked) and (not subject or any(singular(w) != w for w in subject))
                )
                one = bool(lists) and sum(map(len, lists)) == 1  # (the one line of a listing)
                if not (asks := saying.asks_field(asked, state, counted, listed=one, dated=dated)):
                    continue
                task = _worded(asks, given, asked)
            else:
                continue
            answer = answer_of(value)  # what a person answers: the number the value states, a name without its address
            # the record was named by what states the answer ("the sum 'The sum of 10 and 20 is 30.'"); a value chosen
            # from a list the call was given is asked for (the largest of 3, 8 and 5), but not a name, which is the
            # one of the names given that the server found, said back ("Open nodes with names A, B: the name?")
            if holds_answer(task, answer) and (not chosen(call.arguments, answer) or field.lower() in NAME_KEYS):
                continue
            out.append(
                grounded_scenario(
                    task,
                    answer,
                    chain,
                    "field",
                    field=normalize_text(field),
                    given=given,
                    prepare=prepare,
                    place=at_place,
                )
            )
    return out


ADDRESS = re.compile(r"[A-Za-z]{1,2}\d+")  # a cell's address, a square's: "B3", "e4"


def listing_tasks(
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
    if count is not None and MAX_LISTED < count <= MAX_COUNTED:
        return count_tasks(call, count, args, chain, saying, None, prepare)
    records = result_records(call.data, call.structured)
    # records that are each a name alone, [{'name': 'orders'}, ...], or one line alone (between rules, "---")
    if len(records) > 1 and all(len(r) == 1 and (r[0][0].lower() in NAME_KEYS or not r[0][0]) for r in records):
        records = [[("", r[0][1]) for r in records]]
    # a map keyed by addresses, each letters and a number (the cells a search of a workbook matched, `{"B3": "dev",
    # "A5": "Dev"}`): its keys are the names it lists
    addresses = len(records) == 1 and all(ADDRESS.fullmatch(k) for k, _ in records[0])
    if len(records) != 1 or any(k for k, _ in records[0]) and not addresses:
        return []
    # less its headings ("Here are 3 resource links ...:", a file's name before its text, a Markdown "# Title": the
    # names then are what a thing read lists, asked of by the call)
    titled = False
    lines = list(records[0])
    while not addresses and lines and re.match(r".*:$|#{1,6} ", str(lines[0][1])):
        heading = str(lines.pop(0)[1])
        titled = titled or heading.startswith("#")
    names = [k for k, _ in lines] if addresses else [_listed_name(v) for _, v in lines]
    if not 2 <= len(names) <= MAX_LISTED or None in names or len(set(names)) < len(names):
        return []
    given_text = " ".join(map(value_text, call.arguments.values()))
    if any(holds_answer(given_text, n) for n in names):  # a listing of what the call was given
        return []
    task = _worded(saying.asks_listing(within=titled), call.tool, sorted(names))
    given = [name for v in queries for name in stated(v)] if queries else [value_text(v) for v in args.values()]
    out = [grounded_scenario(task, names, chain, "listing", given=given, check=ContainsCheck(), prepare=prepare)]
    # the one line a listing marks, as a shell marks the current one of its kind (`* main` of `git branch`, the
    # others unmarked): which one is current
    starred = [line.strip() for line in call.text.splitlines() if line.lstrip().startswith("* ")]
    marked = _listed_name(starred[0]) if len(starred) == 1 else None
    if marked in names and not addresses and not titled and (asks := saying.asks_marked()):
        task = _worded(asks, call.tool, marked)
        out.append(grounded_scenario(task, marked, chain, "field", field="current", given=given, prepare=prepare))
    return out


def count_tasks(
    call: ExploredCall,
    count: int,
    args: dict[str, Any],
    chain: list[ExploredCall],
    saying: Said,
    queries: list[str] | None = None,
    prepare: list[ExploredCall] | None = None,
    kind: str | None = None,
) -> list[Scenario]:
    """A task asking how many things the call lists, `count` ("How many valid moves are there?", "Count the columns of
    the department table."), where the call names what it lists or they are of a `kind` (`Said.asks_count`)."""
    if not (asks := saying.asks_count(kind)):
        return []
    given = [name for v in queries for name in stated(v)] if queries else [value_text(v) for v in args.values()]
    return [grounded_scenario(_worded(asks, call.tool, count), count, chain, "count", given=given, prepare=prepare)]


def _listed_name(line: Any) -> str | None:
    """The name a listing's line gives: the line, or what follows a marker ("* main", "[FILE] notes.txt",
    "- draft"), less a note after it in parentheses ("- notes.docx (35.80 KB)"), where that reads as a name (letters,
    no spaces inside but in a file's name, "Garden plan.md"; not a CSV line's cells, "apple,3")."""
    words = re.sub(r"(?<=\S)\s+\([^()]*\)$", "", line.strip()).split() if isinstance(line, str) else []
    if len(words) > 1 and re.fullmatch(r"[^\w\s]+|\[\w+\]", words[0]):
        words = words[1:]
    name = " ".join(words)
    if not (len(words) == 1 or len(words) <= FILE_NAME_WORDS and FILE_NAME.search(name)):
        return None
    if len(name) > 60 or not re.search(r"[A-Za-z]{2}", name) or re.search(r"\w,\w", name):
        return None
    return name


def wrapped_kind(call: ExploredCall) -> str | None:
    """What each record of a listing an object wraps is, by the listing's key where that is a plural of a kind of
    thing ("commits" -> commit; not `NOT_KINDS`, nor a word that is no plural: "data")."""
    wrapped = wrapped_listing(result_data(call.data, call.structured))
    key = spoken(wrapped[0]).lower() if wrapped is not None else ""
    one = singular(key)
    return one if re.fullmatch(r"[a-z]{3,}", key) and one != key and one not in NOT_KINDS else None


def _kind(records: list[list[tuple[str, Any]]], unasked: set[str]) -> str | None:
    """What each record of a listing is: the thing the key that opens every one names ("Commit: a1b2..." -> commit),
    where its values tell the records apart and it names a kind of thing (not `NOT_KINDS`: an id, a name, a date;
    nor a preposition, a relation's "from"; nor a participle, a session's "Created: <date>"; nor one of `unasked`: a
    position, "cid: 0")."""
    opening = {record[0][0] if record else "" for record in records}
    key = opening.pop() if len(opening) == 1 else ""
    if (
        not re.fullmatch(r"[A-Za-z]{3,}", key)
        or key.lower() in NOT_KINDS | PREPOSITIONS
        or participle(key.lower())
        or key in unasked
    ):
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
    record: list[tuple[str, Any]], records: list[list[tuple[str, Any]]], field: str, unasked: set[str], cut: bool
) -> tuple[str, Any] | None:
    """A field of `record` (not `field`, nor one of `unasked`: a flag, a position) whose value no other record of
    the listing has: a name first, else an id, a hash or a uuid last (no one says those from memory); never one that
    says the answer (a batch's "expression" 10000 whose "result" is 10000). Of a listing `cut` (by the client, or a
    query's LIMIT), only a value of an id's form or the record's own `id`: an author no other line shown has may have
    more lines unshown."""
    options = []
    answers = {str(v) for k, v in record if k == field}
    for k, v in record:
        if (
            k
            and k != field
            and str(v) not in answers
            and k not in unasked
            and isinstance(v, (str, int, float))
            and len(str(v)) <= 40
            and sum(any(k2 == k and str(v2) == str(v) for k2, v2 in other) for other in records) == 1
            and (not cut or ID_FORM.fullmatch(str(v)) is not None or k.lower() == "id")
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
