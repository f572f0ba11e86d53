"""Where an exploring call's arguments come from, and what the server's answers teach about them
(`mcprl.scenarios.explore` makes the calls).

A tool's input schema is built as the schema says (nested objects and arrays included); each leaf,
named by its property, draws from *arms*, each a source of candidate values (read out of what is in
view by `mcprl.scenarios.value_sources`):

    const, enum, default, example  the schema's own values (and the examples its description quotes)
    worked     values a parameter of this name took in calls that answered, on any tool, something new or
               saying the value (an answer said before, "Distance: 0", shows no value sent works)
    sibling    the other values of the result's field that gave one that worked for this parameter (a listing's
               other entries)
    kin        values that worked for a parameter whose bad values draw the same error ("Ref '{}' did not
               resolve to an object" of `git_diff`'s `target` and `git_show`'s `revision`): the same kind
    error      values an error named when this parameter was blamed ("outside the allowed repository
               '/srv/r'", "must be one of ('pending', 'done')"), less those the call sent
    context    values in plain view: the server's command line, the environment and working
               directory it was given, its resources and resource templates
    result     values earlier results held (`result.FIELD`, an arm per field: which results feed which
               parameter is learnt, as RESTler infers producers and consumers); this session's link the
               calls into a chain ("result:N")
    shaped     values results held that have the shape of an example ("SKU-3000" for "e.g. SKU-1234")
    key        the names of the fields results and the files in plain view held (a CSV's header), for a
               parameter named or described as taking a field's name (`lexicon.FIELD_NAMED`: "Column name")
    word       a word of a longer text a result held, as a person searches ("Porto")
    joined     a name a result listed, under the path the call that listed it took ("notes.txt" of
               `list_directory("/srv/docs")` -> "/srv/docs/notes.txt"), or a folder in plain view holds on
               this machine (`value_sources.folder_entries`), for any parameter
    varied     a value that worked, with other numbers in it ("2 + 3" -> "17 + 45")
    schema     sampled from the schema: numbers in its bounds, booleans, formats
    least      the least number the schema allows from 1 up, in a tool's least call (`Knowledge.arguments`)
    probe      the fuzzing dictionary (`mcprl.scenarios.lexicon.PROBES`), for strings
    composed   a query of the parameter's shape over a name a result gave ("SELECT * FROM orders LIMIT 5"):
               over the names of the kind it takes that a known query listed (`Knowledge.kinds`: a table
               of a table listing, a column of a column listing), else, before any listed one, any name
    described  a word of the parameter's description: the last resort

Each leaf picks an arm by Thompson sampling over Beta(prior + successes, prior + failures) of the
calls that drew from it, counted per parameter name across tools (every tool's `repo_path` learns from
the first that answered; a result's fields are one source, drawn by what all its fields met, then a field of it by
what that field met), and prefers a value this tool has not been sent yet. A parameter that is the server's context
(`Knowledge.fixed`: the one value in plain view that worked, where others failed) is sent that value alone; one whose
schema's values alone answered, where others failed (`Knowledge.closed`), is sent those alone; an optional one whose
every arm was dropped is left out. A call that answered
credits its arms; one that failed blames the parameters its error names (by name, or by the value
sent), else all of them, and what the error quotes becomes their `error` candidates; a value two tools refused
alike is not sent on. An optional parameter is given a value now and then (more often while its tool says the
same again), never its default: leaving it out gives that.
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath
from typing import Any

import jsonschema
from pydantic import BaseModel

from mcprl.errors import clip
from mcprl.scenarios.lexicon import (
    DOCUMENT,
    FIELD_NAMED,
    FILES,
    FLAGS,
    FOLDERS,
    FORMATTED,
    FUNCTION_WORDS,
    IDENTIFIER,
    IDENTIFYING,
    KINDS,
    LOCATING,
    MADE,
    MADE_NAMES,
    NAME_KEYS,
    NOT_A_FOLDER,
    PLAIN,
    QUERIES,
    bound_pairs,
    composed,
    counts_of,
    described_as,
    known,
    listed_kind,
    named_probes,
    probes,
    shaped,
    words_of,
    written,
)
from mcprl.scenarios.results import (
    FILE_NAME,
    ID_FORM,
    ISO_DATE,
    MESSAGE,
    NOTHING,
    clock_spans,
    failed_items,
    flatten,
    found_nothing,
    result_data,
    result_values,
)
from mcprl.scenarios.value_sources import (
    ISSUED,
    PROSE_LIST,
    QUOTED,
    call_examples,
    coerce,
    description_examples,
    error_shape,
    error_values,
    fits_type,
    from_schema,
    illustrates,
    kinds_of,
    listed_items,
    listed_names,
    message_of,
    renumbered,
    shape_of,
)
from mcprl.tools.copies import within

# arm -> Beta prior (successes, failures) before any call: how much a source is trusted untried
PRIORS: dict[str, tuple[float, float]] = {
    "const": (9, 1),
    "worked": (6, 1),
    "kin": (3, 1),
    "sibling": (3, 1),  # (another value of the listing's field that gave one that worked: `Knowledge.siblings`)
    "enum": (3, 1),
    "default": (3, 1),
    "example": (3, 1),
    "error": (3, 1),
    "entry": (3, 1),  # (a path within a folder an error named: `Knowledge.bases`)
    "shaped": (3, 1),
    "named": (3, 1),  # (the dictionary's values of a form the parameter's name says: `lexicon.named_probes`)
    "file": (3, 1),
    "context": (2, 1),
    "key": (2, 1),
    "composed": (2, 1),
    "joined": (1, 1),
    "schema": (1, 1),
    "result": (1, 2),
    "varied": (1, 2),
    "probe": (1, 2),
    "generator": (1, 2),
    "word": (1, 3),
    "described": (1, 4),
}
NAMED_RESULT_PRIOR = (3, 1)  # a result field whose name shares a word with the parameter's ("sku" -> `sku`)
NUMERIC_RESULT_PRIOR = (2, 2)  # any number a result gave, for a number: a computed value fed on (a multi-step task)
# a result field whose values have an id's form (letters and digits, one token: a commit's hash, "ws-101", a UUID):
# what a tool that takes one thing's name is sent, before a field of names, dates or messages ("Bob Stone")
ID_RESULT_PRIOR = (2, 1)
# a result field most of whose values have a file's name ("progress.md" of a listing's lines), for a parameter said to
# take a file (`filename`): what a read of one file is sent, before a made-up name or a folder in plain view
FILE_RESULT_PRIOR = (3, 1)
# the kinds of name a known query is composed over with no other (a table; a column needs its table): an error may
# name one of the server's
COMPOSED_ALONE = {
    q.over
    for queries in QUERIES.values()
    for q in queries
    if q.over and set(re.findall(r"\{(\w+)\}", q.text)) == {q.over}
}
KNOWN_VALUES = 400  # values results held that are kept to draw from (the latest)
LONG_VALUE = 80  # a longer text a result held is prose, not a value to pass on
DRAWS = 8  # draws of a call before giving up on finding one not made yet
STALE = 0.3  # the weight of a source with no value untried, for a parameter a draw looks for a new value of
REPEAT_CREDIT = 0.25  # a call that answered what was answered before (or nothing) counts a quarter of a success
SETTLED = 0.15  # below this chance of answering, an arm is dropped for a parameter (`Knowledge.dead`)
FIXED_AFTER = 3  # values that failed on a parameter besides the one in plain view that worked: its context
# tools that require a parameter, and that were sent values of it, none working, before it awaits a value a call is to
# issue (a handle: `awaited`)
AWAITING = 3
MISSHAPEN = 2  # values of one shape blamed on a parameter, none of it working, where another shape worked: no more
# arms that make a value up rather than take one given
INVENTED = {"probe", "named", "described", "schema", "varied", "least"}
# arms whose values are what the parameter was given or offered as such (what worked, its schema's, its dictionary's,
# queries composed for it), not texts found elsewhere
GIVEN_AS_IS = {
    "const",
    "enum",
    "default",
    "example",
    "worked",
    "varied",
    "composed",
    "probe",
    "named",
    "generator",
    "schema",
    "file",
    "least",
}
ONE_ITEM = 0.2  # chance a list is given one item
ONE_REQUEST = 0.8  # ... a read's list of requests (objects, or paths)
OPTIONAL = 0.25  # chance an optional parameter is given a value (else the server's default) ...
OPTIONAL_MOST = 0.75  # ... growing, while a tool says the same again, to this (`Knowledge._object`)
# failures in a row with one error, whatever was sent, after which a tool gets a least call (`Knowledge.arguments`), at
# most LEAST_CALLS of them while that error lasts
LEAST_AFTER, LEAST_CALLS = 2, 2
# why a tool gets no more calls of its own, that says nothing against making one of them again: a write that issues
# a handle (a game's id) is made again, as it was made, before the calls that take one
SENT_ALL = "no call left that it was not sent already"
SCHEMA_GIVEN = {"const", "enum", "default", "example"}  # arms whose values the tool's own schema gives
WRITTEN_ARMS = SCHEMA_GIVEN | {"error", "result", "probe", "named", "generator", "file"}
OPTIONAL_ARMS = SCHEMA_GIVEN | {"worked", "kin", "sibling", "error", "shaped", "word", "result", "file", "key"}


class SeenValue(BaseModel):
    value: Any
    field: str
    call: int
    session: int = 0


@dataclass
class Drawn:
    """One leaf of a call's arguments: where in them, the parameter's name, the arm it came from."""

    path: str
    name: str
    arm: str
    value: Any
    parent: int | None = None  # the call whose result gave the value, in this session

    @property
    def argument(self) -> str:
        """The call's argument the leaf is in: `ranges` of `ranges[].start`."""
        return re.split(r"[.\[]", self.path)[0]


@dataclass
class ToolLog:
    """What exploring one tool gave: calls, answers, the errors it gave and the arms drawn from."""

    calls: int = 0
    answered: int = 0
    results: set[str] = field(default_factory=set)  # distinct answers to calls drawn
    again: int = 0  # answers to calls made again (a read after a write, at a session's start): checks, not draws
    errors: Counter = field(default_factory=Counter)  # first line of each error text
    # ... and the arguments of the latest call that got it, the error last got last (shown to the generator)
    failed_with: dict[str, dict[str, Any]] = field(default_factory=dict)
    arms: Counter = field(default_factory=Counter)
    exhausted: int = 0  # sessions that found no call it had not made yet
    failing: int = 0  # calls that failed since its last answer
    # the error its latest failures gave, and how many in a row gave it (whatever they were sent); and the least calls
    # made since (`Knowledge.arguments`)
    last_error: str = ""
    streak: int = 0
    least: int = 0
    drawn_least: bool = False  # its latest call drawn was a least call
    least_answered: bool = False  # a least call of it answered: its next draws that fail are followed by another
    blamed: set[str] = field(default_factory=set)  # the paths of the values those failures blamed
    faults: set[str] = field(default_factory=set)  # the paths of the values any failure of it blamed
    silent: int = 0  # answers in a row that said nothing ("", "[]", "No matches") of a state that held something
    told: int = 0  # answers that said something (not that they found nothing)
    same: int = 0  # answers in a row that said what it had said before
    invented: bool = (
        False  # the latest call's arguments were all made up (INVENTED arms) or the generator's: it may know better
    )

    def weight(self) -> float:
        """How much a session should call it: a tool whose answers were new, and that still answers,
        most; one that has not answered yet keeps getting tries."""
        if not self.answered:
            return 2.0
        return 0.2 + 3.0 * self.novelty() / (1 + self.failing)

    def novelty(self) -> float:
        """The share of its drawn calls' answers that were new (a read made again to check a write says what it said
        before, which tells nothing of what drawing it again would find)."""
        drawn = self.answered - self.again
        return len(self.results) / drawn if drawn else 1.0


def sentence(value: Any) -> bool:
    """Whether a value is a sentence ("Ask Dana about the budget."): prose, not what a person searches by."""
    return isinstance(value, str) and MESSAGE.fullmatch(value.strip()) is not None


def named_result(arm: str, name: str, description: str = "") -> bool:
    """Whether an arm is a result's field whose name shares a word with the parameter's ("sku" -> `sku`), or with
    what its `description` opens by saying it is (`from`, "The name of the entity where the relation starts" ->
    `name`), where a word they share is what either is, its last (`project_name` of `project`, not `last_scan_time`
    of `scan_depth`: a time is no depth); not where the word shared is a kind that each names of another thing
    (`entityType` of `relationType`: a relation's type is no entity's)."""
    kind, _, field_name = arm.partition(".")
    if kind != "result" or not field_name:
        return False
    said = re.match(r"\s*(?:(?:the|an?)\s+)?([A-Za-z]+(?: [A-Za-z]+)?)\s+of\b", description, re.I)
    field, named = stems(field_name), stems(name) | (stems(said[1]) if said else set())
    heads = {w for text in (field_name, name, said[1] if said else "") for w in stems(" ".join(words_of(text)[-1:]))}
    shared = field & named
    return bool(shared & heads) and not (shared <= KINDS and field - KINDS and named - KINDS)


def issued_as(arm: str, name: str) -> bool:
    """Whether an arm is a result's field named as the parameter is, every word of it (`session_id` of `session_id`,
    not `max_sessions`)."""
    kind, _, field_name = arm.partition(".")
    return kind == "result" and stems(name) <= stems(field_name)


def keyed_fields(data: Any, key: str = "") -> set[str]:
    """The fields of the objects in `data`, each under the key that holds its object, or the list it is in
    ("tasks.id" of `{"tasks": [{"id": "task-1"}]}`, "task.id" of `{"task": {"id": "task-1"}}`), however deep."""
    if isinstance(data, dict):
        return {f"{key}.{k}" for k in data if key} | {f for k, v in data.items() for f in keyed_fields(v, str(k))}
    if isinstance(data, list):
        return {f for v in data for f in keyed_fields(v, key)}
    return set()


def call_key(tool: str, args: dict[str, Any]) -> str:
    """A call in canonical form: the same call, whatever the order of its arguments."""
    return json.dumps([tool, args], sort_keys=True, default=str)


class Knowledge:
    """What exploring has learnt so far: the arms' successes and failures per parameter name, the
    values that worked and that errors named, the values results held, the calls made and failed,
    and each tool's log."""

    def __init__(
        self,
        context: list[str],
        writers: frozenset[str] = frozenset(),
        folders: dict[str, list[str]] | None = None,
        params: dict[str, list[str]] | None = None,
        fresh_sessions: bool = False,
        descriptions: dict[str, str] | None = None,
        texts: dict[str, str] | None = None,
    ) -> None:
        self.context = context
        # a kind of file (its extension) -> the texts of the small files of that kind in plain view (`file_texts`)
        self.texts: dict[str, list[str]] = defaultdict(list)
        for path, text in (texts or {}).items():
            self.texts[PurePath(path).suffix[1:].lower()].append(text)
        # the names of the fields those files' records have (a CSV's header): the columns a person asks about
        self.file_fields = [k for text in (texts or {}).values() for k, _ in result_values(text, None)]
        self.descriptions = descriptions or {}  # tool -> its description (what a parameter's words mean there)
        self.writers = writers  # the tools that may write
        # the folders a write may name a path in (`within`: the session's own, set as each starts); None: any
        self.bounds: list[Path] | None = None
        self.params = params or {}  # tool -> the names of its arguments (the input schema's properties)
        # (tool, parameter) -> the values calls written as code showed it sent, in any tool's description or any
        # result (`call_examples`): a catalogue's "transform_crs(geojson=data, from_crs='EPSG:4326', ...)"
        self.shown: dict[tuple[str, str], list[Any]] = defaultdict(list)
        for description in self.descriptions.values():
            self._show(description)
        # the server's tool and parameter names: an error quotes them to say what to give or call ("specify a 'path'
        # or use 'git_set_working_dir' first"), and none it quotes is a value
        self.names = frozenset(self.params) | {p for names in self.params.values() for p in names}
        # each session is a server of its own, started afresh: what a write made there is gone in the next
        self.fresh_sessions = fresh_sessions
        self.initial: set[str] = set()  # values read before any write of their session: every fresh server's
        self.wanted: set[str] = set()  # optional parameters an error asked for where a call left them out ...
        self.needed: set[str] = set()  # ... of which those it asked for alone ("Please specify a 'path'")
        # tools of one parameter that refused a call sent nothing, naming no value: what was left out is all a caller
        # can change (a query tool whose schema requires no `sql`: "Client was passed a null or undefined query"), given
        # from then on (to that tool: `clear_session`'s `session_id` is one every tool may leave out)
        self.bare_refused: set[str] = set()
        self.stats: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
        self.worked: dict[str, list[Any]] = defaultdict(list)
        self.worked_at: dict[tuple[str, str], int] = {}  # (parameter name, value) -> the latest call it worked in
        self.first_worked: dict[tuple[str, str], int] = {}  # ... and the first
        # (tool, parameter) -> the values its schema or description lists for it, where it lists some; and the values
        # it answered with: there, a value another tool took on a parameter of that name has not shown it works
        # (`proven`)
        self.offers: dict[tuple[str, str], set[str]] = {}
        self.took: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.named: dict[str, list[str]] = defaultdict(list)  # parameter name -> values errors named
        self.tried: dict[tuple[str, str], set[str]] = defaultdict(set)  # (tool, leaf path) -> values sent
        # (tool, leaf path) -> values sent only in calls that failed for another's value ("kitc: not found" of a
        # language beside a program): as good as untried there, to be sent with another value of that one
        self.unblamed: dict[tuple[str, str], set[str]] = defaultdict(set)
        # tool -> leaf path -> a value an error blamed there without naming it -> the values beside it then (leaf path
        # -> value as sent): a blame beside a value that had never worked is lifted once its parameter works
        # (`_partnered`)
        self.beside: dict[str, dict[str, dict[str, dict[str, str]]]] = defaultdict(lambda: defaultdict(dict))
        self.choices: dict[tuple[str, str], list[str]] = {}  # (tool, leaf path) -> the values its schema lists
        self.sent: dict[str, set[str]] = defaultdict(set)  # parameter name -> values sent, any tool
        self.said: set[str] = set()  # every value sent, any parameter, any tool
        # (tool, a list of values' path) -> the lengths of it in calls that failed
        self.refused_lengths: dict[tuple[str, str], set[int]] = defaultdict(set)
        self.refused_alone: dict[tuple[str, str], set[int]] = defaultdict(set)  # ... where it was the one list sent
        # parameter name -> the arms of values sent to it for the first time and blamed
        self.failed_new: dict[str, Counter] = defaultdict(Counter)
        self.refused: dict[str, set[str]] = defaultdict(set)  # parameter name -> values blamed on it, any tool
        self.refused_at: dict[tuple[str, str], int] = {}  # (parameter name, value) -> the latest call that blamed it
        # (name, value, an error's wording) -> the tools that refused the value on a parameter of that name so; and
        # name -> the values two tools refused alike there
        self.refused_on: dict[tuple[str, str, str], set[str]] = defaultdict(set)
        self.refused_widely: dict[str, dict[str, int]] = defaultdict(dict)  # (and the call that made it so)
        self.refused_shapes: dict[str, Counter] = defaultdict(Counter)  # parameter name -> `shape_of` its blamed values
        self.shapes: dict[str, set[str]] = defaultdict(set)  # an error's wording (`error_shape`) -> names it blamed
        # (tool, leaf path) -> values blamed there -> the latest call that blamed it
        self.blamed: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
        self.made: set[str] = set()
        # calls made again once a write made a handle they send (`renewed`), or made first after it: not to be renewed
        self.remade: set[str] = set()
        self.failed: set[str] = set()
        # tool -> the leaf path its latest call's error blamed alone, and the values that error named (`corrected`)
        self.hints: dict[str, tuple[str, list[str]]] = {}
        self.seen: list[SeenValue] = []
        self.state_from: dict[int, int] = {}  # session -> its latest write that answered: results before it are stale
        self.holding: set[int] = set()  # the sessions a call answered values in (their state holds data)
        self.handles: set[str] = set()  # parameters that take a value a call issues (a session's id: `awaited`)
        # the fields results held, each under the key that holds its record (`keyed_fields`): "tasks.id", where a
        # record's id says what it is the id of
        self.record_fields: set[str] = set()
        self.bases: set[str] = set()  # folders an error said a relative path was looked for in
        self.made_at: dict[int, tuple[str, dict[str, Any]]] = {}  # call index -> its tool and arguments
        self.named_at: dict[int, set[str]] = {}  # a write's call index -> the names and ids its result gave (`repr`)
        # parameter name -> the writes whose result, in the same session, gave a value that worked for it (a load that
        # opens a session, whose id the reads of it take), each with the arguments of the call that gave it
        self.issuers: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
        # ... but for the parameters a value worked for in a session that no write of it had made nor given, nor a
        # result of it: they take values no write issues (any number a square root takes, not only the factorial a
        # session computed first), and no write is made first for them
        self.unissued: set[str] = set()
        self.session_writes: dict[int, list[int]] = defaultdict(list)  # session -> its writes that answered
        # parameter name -> the write call (`call_key`) -> the values it gave that worked; and what each making of a
        # write answered (`call_key` -> texts): a write made again alike that gave another value each time issues
        # handles (a session's id), not records (the rows a query listed)
        self.issued: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        self.written: dict[str, list[str]] = defaultdict(list)
        self.listed: dict[str, list[tuple[str, int, int]]] = defaultdict(list)  # path -> (name, call, session)
        for folder, names in (folders or {}).items():  # what a folder in plain view holds: listed by no call
            self.listed[folder] += [(name, -1, -1) for name in names]
        # the values known to name a folder: the dictionary's, and those in plain view that are folders on this machine
        self.folders = {".", "./", "..", "/"} | {v for v in context if os.path.isabs(v) and os.path.isdir(v)}
        self.folders |= {
            f"{folder.rstrip('/')}/{name}"
            for folder, names in (folders or {}).items()
            for name in names
            if os.path.isdir(os.path.join(folder, name))
        }
        self.folders_wanted: set[tuple[str, str]] = set()  # (tool, parameter) an error said was sent no folder
        self.logs: dict[str, ToolLog] = defaultdict(ToolLog)
        # a kind of name (lexicon.Query.lists: "table", "column") -> the bindings known queries' results gave
        self.kinds: dict[str, list[dict[str, str]]] = defaultdict(list)
        self.none_listed: set[str] = set()  # kinds a listing of them answered none of (a database with no tables)
        self._validators: dict[str, Any] = {}
        self.least_call = False  # a least call is being drawn (`arguments`)

    # ---- drawing a call ----------------------------------------------------------------------------
    def arguments(
        self, tool: str, schema: dict[str, Any], session: int, rng: random.Random
    ) -> tuple[dict[str, Any], list[Drawn]] | None:
        """Arguments for a call of `tool` not made yet (a failed call would fail again, a read would say
        the same again, a write would do what was seen done), with the leaves drawn; None when DRAWS
        draws found none. The first draws keep to
        what the arms say (a value that worked is sent again, the call differs in another
        argument); later ones favour values this tool has not been sent. A tool that requires nothing is
        first called with nothing: the server's own defaults, the plainest call (a listing of the whole
        state, which a write shows in, where a filter drawn at random would not)."""
        if not schema.get("required") and call_key(tool, {}) not in self.made:
            return {}, []
        # a tool that keeps giving one error whatever it is sent may refuse what no value alone does: a shape whose
        # product is not the number of values sent, lists of unequal lengths. Its least call (required parameters
        # only, each list one item, each number the least the schema allows from 1 up) meets most such rules, as a
        # fuzzer's input shrunk to its least does
        log = self.logs[tool]
        least = self.least_call = (
            log.streak >= (1 if log.least_answered else LEAST_AFTER) and log.least < LEAST_CALLS and shrinks(schema)
        )
        try:
            drawn = self._draw(tool, schema, session, rng)
        finally:
            self.least_call = False
        log.drawn_least = least and drawn is not None
        log.least += log.drawn_least
        return drawn

    def _draw(
        self, tool: str, schema: dict[str, Any], session: int, rng: random.Random
    ) -> tuple[dict[str, Any], list[Drawn]] | None:
        leaves: list[Drawn] = []
        properties = sorted(p for p, sub in (schema.get("properties") or {}).items() if isinstance(sub, dict))
        for attempt in range(DRAWS):
            stale = 0.0 if attempt == DRAWS - 1 else STALE
            # after two repeats, one argument at a time looks for a value not sent yet: first those that
            # have taken the most values that worked (a second file to read, not a second repository); after a
            # repeat that gave none (optional parameters all left out), a parameter drawn to be given one; the last
            # draw, only from a source that has such a value (else a tool with values untried ran out of calls)
            turns = sorted(leaves, key=lambda d: (-len(self.worked.get(d.name, [])), d.path))
            fresh = (
                {turns[(attempt - 2) % len(turns)].path if turns else rng.choice(properties): stale}
                if attempt >= 2 and (turns or properties)
                else {}
            )
            leaves = []
            args = self._object(tool, "", schema, session, rng, leaves, fresh)
            if not self.sendable(tool, args):
                continue
            if call_key(tool, args) not in self.made or self.renewed(tool, args, leaves, session):
                return args, leaves
        return None

    def sendable(self, tool: str, args: dict[str, Any]) -> bool:
        """Whether a call may be sent: a write, only where every path it names lies in the session's own folders
        (`bounds`). Sent "/", or a path another session's results named in a folder of that session's since
        removed, a server makes its store there, on the user's machine, and no fresh session undoes it."""
        return tool not in self.writers or self.bounds is None or within(args, self.bounds)

    def renewed(self, tool: str, args: dict[str, Any], leaves: list[Drawn], session: int) -> bool:
        """Whether a call made before may be made again: a handle it sends is one the session's latest write made
        (`made_by`: tree-sitter's project registered by the path its tools had been refused before it named one), or
        the name that write was sent for what it made (a matrix made under a name the reads had been sent before,
        from the same dictionary), where no write had made it when the call was made, and it sends nothing else (a
        file's path sent beside it is no likelier to answer now: that call is drawn anew, never repeated); once."""
        key = call_key(tool, args)
        if key in self.remade:
            return False
        if all(d.name in self.handles for d in leaves) and self.sends_made_handle(leaves, session):
            return True
        # (a name a write was given: a call another tool refused, each value of it one the write was given so)
        write = self.state_from.get(session, -1)
        named = self._named_by_write(write)
        writer = self.made_at.get(write, ("", {}))[0]
        return key in self.failed and writer != tool and bool(leaves) and all(named(d) for d in leaves)

    def sends_made_handle(self, leaves: list[Drawn], session: int) -> bool:
        """Whether a call's `leaves` send a handle the session's latest write made (`made_by`), or the name it was sent
        for what it made, as that parameter."""
        write = self.state_from.get(session, -1)
        made = self.made_by(write)
        named = self._named_by_write(write, made)
        return any(repr(d.value) in made for d in leaves if d.name in self.handles) or any(map(named, leaves))

    def _named_by_write(self, write: int, made: set[str] | None = None) -> Callable[[Drawn], bool]:
        """Whether a leaf sends what `write` (a call's index) was sent under the same parameter's name, as what names
        the thing it made (`made_by`), and that first worked there (a database's path a write took, that reads had
        taken before, names no database it made)."""
        made = self.made_by(write) if made is None else made
        sent = self.made_at.get(write, ("", {}))[1]

        def named(d: Drawn) -> bool:
            value = repr(d.value)
            return value in made and repr(sent.get(d.name)) == value and self.first_worked.get((d.name, value)) == write

        return named

    def listed_paths(self) -> list[tuple[str, int, int]]:
        """The paths of the entries of the folders listed (by a call, or in plain view): each (path, the call that
        listed it, its session; -1 for plain view)."""
        return [(f"{base.rstrip('/')}/{n}", call, s) for base, names in self.listed.items() for n, call, s in names]

    def corrected(
        self, tool: str, schema: dict[str, Any], args: dict[str, Any], leaves: list[Drawn]
    ) -> tuple[dict[str, Any], list[Drawn]] | None:
        """The call that just failed, made again as a person who read its error would: the one parameter the error
        blamed ("no column 'x'; the columns: name, team") given the first value it named for it (one this tool was
        not sent there first) that makes a call not made yet, the rest as they were. None where the error blamed
        more than one, or named no such value."""
        if (hint := self.hints.pop(tool, None)) is None:
            return None
        path, told = hint
        *parents, last = path.split(".")
        for value in sorted(told, key=lambda v: repr(v) in self.tried[tool, path]):  # values not sent there first
            again = copy.deepcopy(args)
            node = again
            for part in parents:
                node = node[part]
            node[last] = value
            if self._validator(schema)(again) and call_key(tool, again) not in self.made and self.sendable(tool, again):
                drawn = Drawn(path=path, name=last, arm="error", value=value)
                return again, [drawn if d.path == path else d for d in leaves]
        return None

    def given_by(self, value: Any, session: int) -> int | None:
        """The latest call of `session` whose result gave `value`, if one did: a call sent it is linked to that one."""
        return next((v.call for v in reversed(self.seen) if v.session == session and v.value == value), None)

    def offered(self, tool: str, schema: dict[str, Any], session: int) -> bool:
        """Whether a result of `session` gave a value in a field named as one of `tool`'s parameters is (`label` of
        `label`, "ws-work" from opening a folder), one the tool was not sent yet: the server's own, to send before the
        generator writes one."""
        return any(
            named_result(f"result.{v.field}", name, str(leaf.get("description") or ""))
            and repr(v.value) not in self.tried[tool, name]
            for v in self.seen
            if v.session == session
            for name, leaf in (schema.get("properties") or {}).items()
            if isinstance(leaf, dict)
        )

    def proposed(self, tool: str, schema: dict[str, Any], written: dict[str, Any], session: int) -> list[Drawn] | None:
        """The leaves of arguments the generator wrote, if they are valid and not a call made already; a value a
        result of this `session` gave is linked to that call, as a drawn one is (it was shown the values seen)."""
        key = call_key(tool, written)
        if not self._validator(schema)(written) or key in self.failed or key in self.made:
            return None
        if not self.sendable(tool, written):
            return None
        return [
            Drawn(
                path=k,
                name=k,
                arm="generator",
                value=v,
                parent=self.given_by(v, session),
            )
            for k, v in written.items()
        ]

    def _object(
        self,
        tool: str,
        path: str,
        schema: dict[str, Any],
        session: int,
        rng: random.Random,
        leaves: list[Drawn],
        fresh: dict[str, float],
    ) -> dict[str, Any]:
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        required = set(schema.get("required") or [])
        out: dict[str, Any] = {}
        first = len(leaves)  # (the leaves drawn here: another item of a list has leaves at the same paths)
        # a tool that says the same again whatever it is sent is given more of its optional parameters at once: the
        # answer may need two of them together (a distance between two dates, each "now" by default, is 0 with one)
        chance = min(OPTIONAL_MOST, OPTIONAL * (1 + self.logs[tool].same / 2))
        for name, sub in props.items():
            if not isinstance(sub, dict):
                continue
            optional = name not in required and name not in self.wanted and (path or tool not in self.bare_refused)
            if optional and self.least_call:
                continue
            here = f"{path}.{name}" if path else name
            if optional and here not in fresh and rng.random() >= chance * (1.5 if "default" not in sub else 1.0):
                continue
            value = self._value(tool, here, name, sub, session, rng, leaves, fresh, optional)
            if value is not _SKIP:
                out[name] = value
        # the two ends of a range, drawn each on its own, given in order, as a person gives them (lines 5 to 19, not
        # 19 to 5)
        for low, high in bound_pairs(list(out)):
            if backwards(out[low], out[high]):
                out[low], out[high] = out[high], out[low]
                at = {d.path: k for k, d in enumerate(leaves) if k >= first}
                ends = [at.get(f"{path}.{n}" if path else n) for n in (low, high)]
                if None not in ends:  # (each value keeps the source it came from)
                    i, j = ends
                    a, b = leaves[i], leaves[j]
                    leaves[i], leaves[j] = replace(b, path=a.path, name=a.name), replace(a, path=b.path, name=b.name)
        return out

    def _value(
        self,
        tool: str,
        path: str,
        name: str,
        schema: dict[str, Any],
        session: int,
        rng: random.Random,
        leaves: list[Drawn],
        fresh: dict[str, float],
        optional: bool = False,
    ) -> Any:
        for branch in schema.get("anyOf") or schema.get("oneOf") or []:
            if isinstance(branch, dict) and branch.get("type") != "null":
                merged = {**branch, **{k: schema[k] for k in ("description", "default", "examples") if k in schema}}
                return self._value(tool, path, name, merged, session, rng, leaves, fresh, optional)
        kinds = kinds_of(schema)
        if "object" in kinds and isinstance(schema.get("properties"), dict):
            return self._object(tool, path, schema, session, rng, leaves, fresh)
        if "array" in kinds:
            item = schema.get("items") if isinstance(schema.get("items"), dict) else {"type": "string"}
            # a list as people give one: mostly two or three different items (a range of one number says
            # nothing), one now and then, within the schema's bounds, and of a length this tool has not refused
            # where one is left (a tool that "requires one input" in a list of numbers); a read's list of
            # requests (the files to read, each with its line ranges, or their paths alone) mostly one, as a person
            # asks of one thing
            least, most = int(schema.get("minItems") or 1), int(schema.get("maxItems") or 1e9)
            requests = tool not in self.writers and (
                "object" in kinds_of(item) or described_as("path", name, str(schema.get("description") or ""))
            )
            one = ONE_REQUEST if requests else ONE_ITEM
            count = 1 if least <= 1 and rng.random() < one else max(2, least) + (rng.random() < 0.3)
            lengths = [n for n in (count, 1, 2, 3) if least <= n <= most and n not in self.refused_lengths[tool, path]]
            if self.least_call:  # (the least length not refused where it was the one list sent: "requires one input")
                refused = self.refused_alone[tool, path]
                count = next((n for n in range(max(1, least), min(most, least + 3) + 1) if n not in refused), least)
            else:
                count = lengths[0] if lengths else min(count, most)
            # (each item a different thing: one of a name an item before it has, two entities "Weekly report", is
            # left out, with the values drawn for it)
            items: list[Any] = []
            names: set[str] = set()
            # (the items of an optional list are drawn as an optional value is: an exclusion list sent a listing's
            # total, "2 files, 1 directories", only cluttered the task asking of the tree)
            for _ in range(count):
                first = len(leaves)
                value = self._value(tool, f"{path}[]", name, item, session, rng, leaves, fresh, optional)
                named = [repr(v) for k, v in value.items() if k in NAME_KEYS] if isinstance(value, dict) else []
                if value is _SKIP or set(named) & names:
                    del leaves[first:]
                    continue
                names.update(named)
                items.append(value)
            if optional and not items:
                return _SKIP
            return list({json.dumps(v, sort_keys=True, default=str): v for v in items}.values())
        if "object" in kinds:  # (of no properties: an empty filter, which leaving it out gives where it is optional)
            return _SKIP if optional else {}
        # (a list's items differ: two entities of one name are one entity)
        taken = {repr(d.value) for d in leaves if d.path == path}
        drawn = self._leaf(tool, path, name, schema, session, rng, fresh, optional, taken)
        if drawn is None:
            return _SKIP
        leaves.append(drawn)
        return drawn.value

    def _leaf(
        self,
        tool: str,
        path: str,
        name: str,
        schema: dict[str, Any],
        session: int,
        rng: random.Random,
        fresh: dict[str, float],
        optional: bool,
        taken: set[str],
    ) -> Drawn | None:
        if self.fixed(name):  # the server's context: the one value it takes, whatever else varies
            return Drawn(path=path, name=name, arm="context", value=coerce(self.worked[name][0], schema))
        if self.least_call and {"integer", "number"} & set(kinds_of(schema)) and not {"enum", "const"} & set(schema):
            value = least_number(schema)
            while repr(value) in taken:  # (a list's items differ: 1, 2, 3)
                value += 1
            return Drawn(path=path, name=name, arm="least", value=value)
        renew = tool in self.writers and written(name)
        description = str(schema.get("description") or "")
        arms = self._arms(
            name, schema, session, rng, described=renew, around=self.descriptions.get(tool, ""), tool=tool
        )
        if isinstance(schema.get("enum"), list):
            self.choices[tool, path] = [repr(v) for v in schema["enum"]]
        # it takes what its schema gives ("local", "remote", "all"), nothing from elsewhere; but not where the values
        # its description gives are examples of many ("e.g. 'e4', 'Nf3'" of a move): others fail for other reasons
        if self.closed(name) and not illustrates(description):
            arms = {a: c for a, c in arms.items() if a in SCHEMA_GIVEN or a == "worked"} or arms
        if name in self.handles:  # a handle takes what was issued as one (a result's `session_id`), nothing else
            arms = {a: c for a, c in arms.items() if issued_as(a, name)} or arms
        # a value of the parameter's name that this session's latest write gave another tool, or a result since, is
        # what it is sent (the id of the session a load opened, for the reads of it), where it was not sent here yet;
        # not one the write was sent and says back, nor what a write says of itself to its own next call (a move made)
        since = self.state_from.get(session, -1)
        writer, sent = self.made_at.get(since, ("", {}))
        echoed = {repr(v) for v in sent.values()} | self.tried[tool, path]
        issued = {
            a: [(v, p) for v, p in c if p is not None and p >= since and repr(v) not in echoed]
            for a, c in arms.items()
            if issued_as(a, name) and writer != tool
        }
        arms = {a: c for a, c in issued.items() if c} if since >= 0 and any(issued.values()) else arms
        if tool in self.writers and self.bounds is not None:  # (`sendable`: no path outside the session's folders)
            arms = {a: kept for a, c in arms.items() if (kept := [(v, p) for v, p in c if within(v, self.bounds)])}
        if not arms:
            return None
        # what a write stores as a person's text (a name, a description, tags) is written as a person would, from
        # the dictionary (lexicon.PROBES), not another field's value ("active" as a task's name), which any write
        # takes (the server's answer says nothing of whether it fits); nor, for a name of a record it makes, one
        # it has given before (two tasks "Weekly report" are not told apart by a task that names one), unless it
        # has nothing else (a name it is to add to). An optional filter given a made-up value matches nothing, or
        # is ignored and only clutters the task: only the schema's own values and values the server gave or named
        # ... nor its default, which leaving it out gives (a distance "from now", as without `from_date`), nor where an
        # error asked for it when it was left out (a path "." of a session directory none set)
        default = repr(schema["default"]) if "default" in schema and (optional or name in self.wanted) else None
        if renew or optional:
            allowed = WRITTEN_ARMS if renew else OPTIONAL_ARMS
            arms = {
                a: kept
                for a, c in arms.items()
                if a.partition(".")[0] in allowed and (not a.startswith("result") or named_result(a, name, description))
                if (kept := [(v, p) for v, p in c if repr(v) != default])
            }
        elif default is not None:
            arms = {a: kept for a, c in arms.items() if (kept := [(v, p) for v, p in c if repr(v) != default])}
        if not arms:
            return None
        # (a value blamed here that worked for a parameter of this name since is not to blame: the error was another's;
        # one two tools refused alike on a parameter of this name is not this one's either: "Working directory does
        # not exist: /srv/r/git init" of every tool's `path`; but a query a write refused, a read may take)
        tried = self.spent(tool, path) | taken
        # ("since": a path "table_name" a database's creation took, then a read refused, is still to blame there)
        excused = {repr(v) for v in self.worked.get(name, []) if self.proven(tool, name, v)}
        blamed = {
            v
            for v, at in [*self.blamed[tool, path].items(), *self.refused_widely[name].items()]
            if v not in excused or self.worked_before(name, v, at)
        }
        numeric = bool({"integer", "number"} & set(kinds_of(schema)))
        # an arm whose values keep failing for this parameter is dropped (a repository path the command line
        # fixes: every made-up one fails), so a tool whose every parameter has one live value runs out of calls
        # rather than spending them on values bound to fail; the best one stays where all have failed, but for an
        # optional parameter, which is left out then: leaving it out always answers (a branch listing's `contains`
        # sent words of results, "malformed object name ...", one call after another)
        # a handle the session's latest write named (its result's name or id: the project it registered) is what is
        # sent, whichever source holds it
        named_now = self.named_at.get(since, set()) if name in self.handles else set()
        arms = {a: kept for a, c in arms.items() if (kept := [(v, p) for v, p in c if repr(v) in named_now])} or arms
        live = {a: c for a, c in arms.items() if not self.dead(name, a, numeric)}
        if not live and optional:
            return None
        if not live:
            best = max(arms, key=lambda a: self.mean(name, a, numeric))
            live = {best: arms[best]}
        # an arm whose every value an error here blamed has nothing to send ("Is a directory: '/srv'" of the one
        # folder the command line names), while another has; but a value this session's latest write gave, or a
        # result after it, is sent where it was blamed before: the write made it (a workspace's id, opened again; a
        # handle's: not a database's path "1" a count of its tables gave, that reads had not found)

        # (and a handle that write made: a project registered by a path that had named none)
        made_now = self.made_by(since) if name in self.handles else set()

        def as_sent(value: Any) -> str:
            """A value as the errors and the calls before saw it: sent as the parameter's type (a count 1 a result gave
            is the path "1" an error blamed)."""
            return repr(coerce(value, schema))

        def sendable(value: Any, parent: int | None) -> bool:
            return not self.misshapen(name, value) and (
                as_sent(value) not in blamed
                or (since >= 0 and parent is not None and parent >= since and name in self.handles)
                or repr(value) in made_now
            )

        # (each arm with only the values it may send: one of a list's fields whose values are misshapen here, an item's
        # name sent as a database's path, is no fresh source for being untried)
        arms = {a: kept for a, c in live.items() if (kept := [(v, p) for v, p in c if sendable(v, p)])} or live

        def prior(arm: str) -> tuple[float, float]:
            return self.prior(arm, name, numeric, [v for v, _ in arms[arm]], description)

        def chance(arm: str) -> float:  # (its prior's and its calls' chance of answering)
            (a, b), (won, lost) = prior(arm), self.stats[name, arm]
            return (a + won) / (a + b + won + lost)

        def fresh_in(members: list[str]) -> bool:
            return any(as_sent(v) not in tried or repr(v) in made_now for m in members for v, _ in arms[m])

        # a source, then, of a source of many arms (a result's fields), one of them: a result is one source however
        # many fields it gives, drawn (from its likeliest field's prior) by what all its fields met here: twenty
        # fields are no twenty fresh chances where those tried kept failing (a branch type sent an author, a message,
        # a hash, a date); of its fields, the likeliest with a value not sent yet (an id's form before a name, a date
        # or a note), a tie drawn
        families: dict[str, list[str]] = defaultdict(list)
        for a in sorted(arms):
            families[a.partition(".")[0]].append(a)
        met: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for (other, a), (won, lost) in self.stats.items():
            if other == name:
                family_met = met[a.partition(".")[0]]
                family_met[0] += won
                family_met[1] += lost

        def sample(family: str) -> float:
            members = families[family]
            (a, b), (won, lost) = prior(max(members, key=chance)), met[family]
            stale = fresh.get(path, STALE if renew else 1.0)
            return rng.betavariate(a + won, b + lost) * (1.0 if fresh_in(members) else stale)

        family = max(sorted(families), key=sample)
        arm = max(families[family], key=lambda a: (fresh_in([a]), chance(a), rng.random()))
        options = [(v, p) for v, p in arms[arm] if sendable(v, p)] or arms[arm]
        untried = [(v, p) for v, p in options if as_sent(v) not in tried or repr(v) in made_now]
        # a value this session's results gave first: the calls link into a chain that replays in one session; of
        # those, one the state as it is now gave (read after the session's latest write: the moves open after a move)
        untried = (
            [(v, p) for v, p in untried if p is not None and p > since]
            or [(v, p) for v, p in untried if p is not None]
            or untried
        )
        # ... and one that got past the server's check of it (a call of it failed for another's value) before one
        # never sent: the language that ran, where the program beside it was at fault; but not for the parameter a
        # later draw looks for a value not sent yet for (`fresh`): the pair of such values was made already, and
        # drawing it again would leave the tool with nothing new to send
        if path not in fresh:
            untried = [(v, p) for v, p in untried if repr(v) in self.unblamed[tool, path]] or untried
        # untried values of the dictionary in its order (the shapes the parameter is described with first)
        value, parent = (
            (untried[0] if arm in ("probe", "named") else rng.choice(untried)) if untried else rng.choice(options)
        )
        if parent is None:  # (a value that worked, that a result of this session gave too: the calls chain)
            parent = self.given_by(value, session)
        return Drawn(path=path, name=name, arm=arm, value=coerce(value, schema), parent=parent)

    def worked_before(self, name: str, value: str, refused: int) -> bool:
        """Whether `value` (a `repr`) last worked on a parameter named `name` before call `refused` refused it there:
        that refusal stands (a value with no such call recorded is taken to have worked since)."""
        return self.worked_at.get((name, value), refused + 1) < refused

    def proven(self, tool: str, name: str, value: Any, blaming: bool = False) -> bool:
        """Whether `value` worked on a parameter named `name`: on any tool's, but where `tool`'s lists the values it
        takes, on `tool`'s or as one of those (an `operation` a number-theory tool took, "prime_factors", is no
        statistics tool's, which lists "mean, median, mode"). `blaming` (to clear it of an error): on `tool` or a
        read, since a tool last refused it there (a path "1" a database's creation took, or took before a read
        found no such file, proves nothing to a fresh server's reads)."""
        key = (name, repr(value))
        if key[1] not in map(repr, self.worked.get(name, [])):
            return False
        refused = self.refused_at.get(key)
        if blaming and (
            refused is not None
            and self.worked_before(name, key[1], refused)
            or not any(
                key[1] in took for (t, n), took in self.took.items() if n == name and t not in self.writers - {tool}
            )
        ):
            return False
        offers = self.offers.get((tool, name))
        return offers is None or repr(value) in offers | self.took[tool, name]

    def prior(
        self, arm: str, name: str, numeric: bool = False, values: Sequence[Any] = (), description: str = ""
    ) -> tuple[float, float]:
        """An arm's prior for a parameter (`PRIORS`), but for results of the parameter's name (or of what its
        `description` says it is; not a count of those things, `counts_of`, for a parameter that takes one), results
        fed on to a number, and results whose `values` (the arm's candidates, where known) have an id's form."""
        kind, _, field = arm.partition(".")
        # (but not a count of the things it names, for a parameter that takes one: "Files tracked: 0" of `filePath`)
        counted = bool(values) and all(re.fullmatch(r"\d+", str(v)) for v in values) and counts_of(field)
        if named_result(arm, name, description) and (numeric or not counted):
            return NAMED_RESULT_PRIOR
        if kind == "result" and not numeric and values and all(ID_FORM.fullmatch(str(v)) for v in values):
            return ID_RESULT_PRIOR
        said = set(words_of(name)) | set(words_of(description))
        files = sum(bool(FILE_NAME.search(str(v))) for v in values)
        if kind == "result" and said & FILES and not said & FOLDERS and 2 * files > len(values):
            return FILE_RESULT_PRIOR
        return NUMERIC_RESULT_PRIOR if kind == "result" and numeric else PRIORS[kind]

    def _arms(
        self,
        name: str,
        schema: dict[str, Any],
        session: int,
        rng: random.Random,
        described: bool = False,
        around: str = "",
        tool: str = "",
    ) -> dict[str, list[tuple[Any, int | None]]]:
        """Every arm's candidates for one leaf, each (value, the call of this session it came from); the
        dictionary's values only of the shapes the parameter is described with, where `described`; `around`, its
        tool's description (where a word of its name has two senses), and `tool` its name (the kind of file it
        takes)."""
        if "const" in schema:
            return {"const": [(schema["const"], None)]}
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            # (and those of them that worked, sent again with other values beside them: the one language of forty
            # that runs, for programs other than the first)
            worked = [(v, None) for v in schema["enum"] if repr(v) in map(repr, self.worked.get(name, []))]
            return {"enum": [(v, None) for v in schema["enum"]], **({"worked": worked} if worked else {})}
        kinds = kinds_of(schema)
        valid = self._validator(schema)
        # (where each session is a fresh server, only what a session read before its first write, or this session's
        # results: a workspace's id an earlier process opened names none in this one)
        seen = [
            v for v in self.seen if not self.fresh_sessions or v.session == session or repr(v.value) in self.initial
        ]
        # (nor a time of now, a record's `createdAt`: it names nothing, another each call; but to a parameter that
        # takes a date or a time)
        description = str(schema.get("description") or "")
        if not any(described_as(shape, name, description) for shape in ("date", "time")):
            seen = [v for v in seen if not (isinstance(v.value, str) and read_off_clock(v.value))]

        def fit(values: list[Any]) -> list[tuple[Any, int | None]]:
            return [(v, None) for v in values if fits_type(v, kinds) and valid(coerce(v, schema))]

        arms: dict[str, list[tuple[Any, int | None]]] = {}
        if "default" in schema and schema["default"] is not None:
            arms["default"] = fit([schema["default"]])
        # and the items of a list its description gives, or where it gives none, its tool's ("How many moons a
        # planet has (Mercury, Venus, Earth or Mars)", its `planet` described by nothing but its name)
        examples = [
            *(schema.get("examples") or []),
            *self.shown.get((tool, name), []),
            *description_examples(description),
            *listed_items(description),
        ]
        # (its tool's, only where it takes this one parameter: a docstring's list is of the parameter it follows,
        # "execution_mode: "inline" or "subprocess"", not of the code beside it)
        examples = examples or (listed_items(around) if len(self.params.get(tool) or [name]) == 1 else [])
        # (and a list anywhere in it, for a parameter named for a kind: the kinds of thing the tool makes, `item_type`
        # of "Create a new issue, todo, feature, epic, or diary entry")
        examples = examples or (listed_items(around, PROSE_LIST) if set(words_of(name)) & KINDS else [])
        arms["example"] = fit(examples)
        if examples and tool:
            self.offers[tool, name] = {repr(e) for e in examples}
        shapes = {shape_of(str(e)) for e in examples}
        arms["shaped"] = [
            (v.value, v.call if v.session == session else None)
            for v in seen
            if isinstance(v.value, str) and shape_of(v.value) in shapes and valid(coerce(v.value, schema))
        ]
        if not {"integer", "number"} & set(kinds):  # any number works: one that did says nothing
            arms["worked"] = fit([v for v in self.worked.get(name, []) if self.proven(tool, name, v)])
            arms["kin"] = fit([v for other in sorted(self.kin(name)) for v in self.worked.get(other, [])])
            arms["sibling"] = fit(self.siblings(name))
        arms["error"] = fit(self.named.get(name, []))
        # (a URI in plain view, a resource's, only for a parameter that takes one: not a graph's entity name; and for
        # one that takes a path, the paths first: the repository `GIT_BASE_DIR` names, not the `stdio` beside it)
        context = [v for v in self.context if "://" not in v or described_as("url", name, description)]
        paths = [v for v in context if "/" in v] if described_as("path", name, description) else []
        arms["context"] = fit(paths or context)
        # the whole text of a file in plain view of a kind the parameter or its tool names (`load_csv_from_content`'s
        # `content`: data.csv's lines), as a person pastes the file they have; not for a parameter that takes a path
        # (a parameter named for a text, or for the kind itself: `csv`; not the session id beside it)
        own = set(words_of(name))
        said_of = own | set(words_of(description))  # (the words the parameter is named and described with)
        if not any(described_as(shape, name, description) for shape in ("path", "url")):
            said = said_of | set(words_of(around)) | set(words_of(tool))
            arms["file"] = fit(
                [
                    text
                    for kind, found in self.texts.items()
                    if kind in said and own & (DOCUMENT | {kind})
                    for text in found
                ]
            )
        if said_of & FIELD_NAMED:
            fields = [f.rpartition(".")[2] for f in [*self.file_fields, *(v.field for v in seen)]]
            arms["key"] = fit([f for f in dict.fromkeys(fields) if IDENTIFIER.fullmatch(f)])
        for v in seen:
            if fits_type(v.value, kinds) and valid(coerce(v.value, schema)):
                arms.setdefault(f"result.{v.field}", []).append((v.value, v.call if v.session == session else None))
        searched = ("string" in kinds or kinds == [None]) and described_as(PLAIN, name, description)
        # (a parameter of a form of its own, a date or a path, takes no word: "until Stone" filters nothing; nor a
        # setting, one with a default of its own: a delimiter "," sent "Found" splits nothing, yet answers)
        setting = isinstance(schema.get("default"), str) and schema["default"] != ""
        wordy = searched or not setting and not any(described_as(shape, name, description) for shape in FORMATTED)
        if "string" in kinds or kinds == [None]:
            # one word of a longer text, as a person searches ("Porto" of "Your flight to Porto is booked")
            # (of a text the server wrote: not one it was sent and says back, "Weekly report" of a task's name,
            # but for a search, which finds a record by any word of it); not a sentence's first word, an order's
            # verb ("Send" of "Send the draft to Sam by Friday."), which no one searches notes by; a word ends in a
            # letter ("matches" of "'matches'")
            arms["word"] = [
                (w, v.call if v.session == session else None)
                for v in seen
                if wordy
                and isinstance(v.value, str)
                and " " in v.value.strip()
                and (searched or repr(v.value) not in self.said)
                for w in re.findall(r"[A-Za-z][A-Za-z'-]{2,}[A-Za-z]", v.value)[1 if sentence(v.value) else 0 :]
                if valid(w) and w.lower() not in FUNCTION_WORDS
            ]
            arms["joined"] = [(v, call if s == session else None) for v, call, s in self.listed_paths() if valid(v)]
            # ... and by their paths within a folder an error said relative paths are taken in (`bases`)
            if described_as("path", name, description):
                arms["entry"] = [
                    (entry, call if s == session else None)
                    for base in sorted(self.bases)
                    for folder, names in self.listed.items()
                    if f"{folder.rstrip('/')}/".startswith(f"{base}/")
                    for listed, call, s in names
                    if valid(entry := os.path.relpath(f"{folder.rstrip('/')}/{listed}", base))
                ]
            # a parameter that takes a URI is sent a file or folder in plain view as one too (RFC 8089's
            # `file:///srv/docs/plan.html`): a converter of documents reads a local file by its URI, not its path
            if described_as("url", name, description):
                for arm in ("context", "joined"):
                    arms[arm] += [
                        (uri, p)
                        for v, p in arms[arm]
                        if isinstance(v, str) and os.path.isabs(v) and valid(uri := PurePath(v).as_uri())
                    ]
            # (a value in plain view is the server's context, a folder or a file: one of its digits changed names
            # nothing there; nor does a digest or an id the server issued; nor does a table made to be asked about
            # get other years in its rows)
            arms["varied"] = fit(
                [
                    renumbered(v, rng)
                    for v in self.worked.get(name, [])
                    if isinstance(v, str)
                    and re.search(r"\d", v)
                    and v not in self.context
                    and v not in MADE
                    and not ISSUED.fullmatch(v)
                ]
            )
            # (where each session is a fresh server, a table `MAKING` made is one only in the sessions that made it)
            here = {repr(v.value) for v in seen}
            listed: dict[str, list[dict[str, str]]] = {
                kind: [
                    b
                    for b in bindings
                    if not (self.fresh_sessions and set(b.values()) & MADE_NAMES)
                    or all(repr(n) in here for n in b.values())
                ]
                for kind, bindings in self.kinds.items()
            }
            if "table" not in listed:  # before any listing of tables answered: any name a result gave may be one
                names = [v.value for v in seen if isinstance(v.value, str) and IDENTIFIER.fullmatch(v.value)]
                listed["table"] = [{"table": n} for n in list(dict.fromkeys(names))[-24:]]
            making = self.none_listed if tool in self.writers else set()
            # (once a value worked, only the shapes it is described with or took a value of: a lenient date parser
            # answers "12 * 4" too, and tasks then convert the time "(7 - 2) / 5")
            took = self.worked.get(name, [])
            # (those of a form its name says it takes are trusted as examples are: a runner's `code` sent results,
            # paths and words of its description, ten in all, never a program, was retired)
            arms["named"] = fit(named_probes(name, around))
            arms["probe"] = fit(
                probes(
                    name,
                    description,
                    described or bool(took),
                    around,
                    making=making,
                    worked=[v for v in took if isinstance(v, str)],
                )
            )
            arms["composed"] = fit(composed(name, description, listed, around))
            arms["described"] = fit([w for w in words_of(description) if len(w) > 3][:8])
        sampled = from_schema(schema, kinds, rng)
        if sampled is not None:
            arms["schema"] = fit([sampled])
        # a parameter said to take a file's path is sent no folder (a file's tool sent "." said "Is a directory")
        if said_of & FILES and not said_of & FOLDERS:
            arms = {
                a: [(v, p) for v, p in options if not (isinstance(v, str) and v in self.folders)]
                for a, options in arms.items()
            }
        # ... and one an error said was sent no folder ("Path is not a directory: .../shop.py") only the folders
        if (tool, name) in self.folders_wanted:
            arms = {
                a: kept for a, options in arms.items() if (kept := [(v, p) for v, p in options if v in self.folders])
            } or arms
        if searched:  # a person searches by a word of a sentence ("budget"), not by the whole of it ...
            arms = {a: [(v, p) for v, p in options if not sentence(v)] for a, options in arms.items()}
            # ... nor by where a file is (a search of a workbook's cells sent its path found nothing, every time), but
            # where the schema or its description gives one
            arms = {
                a: [(v, p) for v, p in options if a in SCHEMA_GIVEN or not (isinstance(v, str) and v.startswith("/"))]
                for a, options in arms.items()
            }
        # a parameter's own name is no value of it ("LIKE pattern" read as an example of `pattern`), but where the
        # schema lists it
        own = words_of(name)
        arms = {
            arm: [(v, p) for v, p in options if arm == "enum" or not (isinstance(v, str) and words_of(v) == own)]
            for arm, options in arms.items()
        }
        # ... nor is a text a result, an error or a description held a statement, where the parameter takes one but it
        # is one (dbhub's `sql` sent "main" and "salary": a syntax error each, and the tool retired before a query ran)
        if described_as("sql", name, description, around):
            arms = {
                arm: [(v, p) for v, p in options if arm in GIVEN_AS_IS or shaped(v)] for arm, options in arms.items()
            }
        # ... nor is a yes or a no a result said of something else ("DST Active: No" is no `country`)
        arms = {
            arm: [
                (v, p)
                for v, p in options
                if not (
                    arm.startswith("result.") and str(v).lower() in FLAGS and not named_result(arm, name, description)
                )
            ]
            for arm, options in arms.items()
        }
        # a text of the kind the tool takes is all it is given, while that has not kept failing: a made-up sentence is
        # no CSV (a load of one answers, and every statistic of what it loaded fails)
        if arms.get("file") and not self.dead(name, "file"):
            return {"file": arms["file"]}
        return {arm: options for arm, options in arms.items() if options}

    def mean(self, name: str, arm: str, numeric: bool = False) -> float:
        """The arm's chance of a value that answers, for this parameter: its Beta posterior's mean."""
        a, b = self.prior(arm, name, numeric)
        won, lost = self.stats[name, arm]
        return (a + won) / (a + b + won + lost)

    def dead(self, name: str, arm: str, numeric: bool = False) -> bool:
        """Whether the arm has failed this parameter too often to be drawn from again (SETTLED)."""
        return sum(self.stats[name, arm]) >= 3 and self.mean(name, arm, numeric) < SETTLED

    def misshapen(self, name: str, value: Any) -> bool:
        """Whether `value` has a shape (`shape_of`) that MISSHAPEN values blamed on parameter `name` had, none of
        it working, where a value of another shape worked: after "no folder '61 bytes'" and "... '29 bytes'", with
        "reports" listed, a size is no folder, whichever field of a listing gives the next one. (A value two tools
        refused since it worked shows no shape works: "5" a database's creation took as its path, no read found.)"""
        shape = shape_of(str(value))
        widely = self.refused_widely[name]
        worked = {
            shape_of(str(v))
            for v in self.worked.get(name, [])
            if (refused := widely.get(repr(v))) is None or not self.worked_before(name, repr(v), refused)
        }
        return bool(worked) and shape not in worked and self.refused_shapes[name][shape] >= MISSHAPEN

    def renews(self, name: str) -> bool:
        """Whether a value that worked for parameter `name`, given by a write, is one another making of that write,
        alike, did not give: the server issues it anew (a session's id), it is no record the write made again."""
        return any(v not in text for key, got in self.issued[name].items() for v in got for text in self.written[key])

    def awaited(self, name: str) -> bool:
        """Whether parameter `name` awaits a value some call is to issue (the id of a session a load opens): AWAITING
        tools or more were sent values of it that failed on its account (not all for another's: a file's path beside
        a project not found), none worked, no error named one, and no result held a field of its name. The tools
        that require it wait for one; the others (the load) are called first."""
        sent_by = {tool for tool, path in self.tried if path == name and self.spent(tool, path)}
        return (
            len(sent_by) >= AWAITING
            and not self.worked.get(name)
            and not self.named.get(name)
            and not any(issued_as(f"result.{v.field}", name) for v in self.seen)
            and not any(issued_as(f"result.{f}", name) for f in self.record_fields)
        )

    def fixed(self, name: str) -> bool:
        """Whether parameter `name` is the server's context: one value of it worked, a value in plain view
        (its command line, environment, resources) that no tool refused (a folder that a tool reading files
        refuses is one place among others), and FIXED_AFTER others sent to it failed on it."""
        worked = self.worked[name]
        return (
            len(worked) == 1
            and worked[0] in self.context
            and repr(worked[0]) not in self.refused[name]
            and self.failed_new[name].total() >= FIXED_AFTER
        )

    def closed(self, name: str) -> bool:
        """Whether parameter `name` takes only the values its schema gives (its description's "'local', 'remote' or
        'all'"): every arm a value that answered came from is the schema's own, and FIXED_AFTER values from
        elsewhere failed on it (an example of its own that failed, "Bxe5" of a move, says nothing of the rest)."""
        won = {arm for (other, arm), (w, _) in self.stats.items() if other == name and w > 0} - {"worked"}
        elsewhere = sum(n for arm, n in self.failed_new[name].items() if arm not in SCHEMA_GIVEN)
        return bool(won) and won <= SCHEMA_GIVEN and elsewhere >= FIXED_AFTER

    def siblings(self, name: str) -> list[Any]:
        """The other values a result held in the field that held one that worked for `name`, not sent to it yet: the
        other collections of a listing whose first one a read took ("recipes" beside "meeting_notes")."""
        worked = set(map(repr, self.worked.get(name, [])))
        origins = {(v.call, v.field) for v in self.seen if repr(v.value) in worked}

        def said_back(v: SeenValue) -> bool:  # (what its call was sent: a conversion's source and target zones)
            return repr(v.value) in {repr(a) for a in self.made_at.get(v.call, ("", {}))[1].values()}

        return list(
            dict.fromkeys(
                v.value
                for v in self.seen
                if (v.call, v.field) in origins
                and repr(v.value) not in worked | self.sent[name]
                and not sentence(v.value)
                and not said_back(v)
            )
        )

    def kin(self, name: str) -> set[str]:
        """The other parameters whose bad values drew an error worded as one of `name`'s did (`error_shape`), and those
        that take the same kind of thing by their names (`kind_named`: `table` and `tableName`, `name_a` and `name`)."""
        shaped = {other for names in self.shapes.values() if name in names for other in names}
        return (shaped | {other for other in self.worked if kind_named(other) == kind_named(name)}) - {name}

    def _validator(self, schema: dict[str, Any]) -> Any:
        key = json.dumps(schema, sort_keys=True, default=str)
        if key not in self._validators:
            try:
                self._validators[key] = jsonschema.validators.validator_for(schema)(schema).is_valid
            except (jsonschema.SchemaError, TypeError, RecursionError):
                self._validators[key] = lambda _: True
        return self._validators[key]

    # ---- learning from a call ----------------------------------------------------------------------
    def _show(self, text: str) -> None:
        """Keep the values `text` shows calls of the server's tools sent (`shown`)."""
        for key, values in call_examples(text, self.params).items():
            for value in values:
                if repr(value) not in map(repr, self.shown[key]):
                    self.shown[key].append(value)

    def learn(
        self,
        tool: str,
        args: dict[str, Any],
        leaves: list[Drawn],
        *,
        index: int,
        session: int,
        text: str,
        is_error: bool,
        error_kind: str | None,
        values: list[tuple[str, Any]],
        again: bool = False,
    ) -> None:
        """What one call made (`index` in `session`) taught: its result's `values` (field, value) or its error;
        `again`: the call was made again as it was (a check, not a draw)."""
        log = self.logs[tool]
        log.calls += 1
        log.arms.update(d.arm.partition(".")[0] for d in leaves)
        log.invented = bool(leaves) and all(d.arm in INVENTED or d.arm == "generator" for d in leaves)
        key = call_key(tool, args)
        if key in self.made or self.sends_made_handle(leaves, session):
            self.remade.add(key)
        self.made.add(key)
        first = [d for d in leaves if repr(d.value) not in self.sent[d.name]]
        for d in leaves:
            self.tried[tool, d.path].add(repr(d.value))
            self.sent[d.name].add(repr(d.value))
            self.said.add(repr(d.value))
        self.hints.pop(tool, None)
        self.made_at[index] = (tool, args)
        if tool in self.writers and not is_error:
            self.state_from[session] = index
            self.session_writes[session].append(index)
            self.written[key].append(text)
            self.named_at[index] = {repr(v) for k, v in values if k.rpartition(".")[2].lower() in IDENTIFYING}
        if error_kind == "timeout":
            log.errors[clip(text.partition("\n")[0], 160)] += 1
            return
        if is_error:
            log.failing += 1
            self.failed.add(key)
            lists = Counter(d.path[:-2] for d in leaves if d.path.endswith("[]"))
            for path, length in lists.items():
                self.refused_lengths[tool, path].add(length)
                if len(lists) == 1:  # (the one list sent: its length may be to blame, not how it fits another's)
                    self.refused_alone[tool, path].add(length)
            # (what it says: not a JSON error's keys, the request's `database` said back, nor a traceback's frames,
            # "eval(code, self.locals)"; nor the "Error: {" a JSON error opens with, in the report)
            message = message_of(text)
            line = clip(" ".join(message.split()) if message != text else text.partition("\n")[0], 160)
            # a thing of a kind queries are composed over alone, quoted and not sent, that an error of a query names:
            # the server's (BQL, which has no catalogue: `column "sqlite_master" not found in table "postings"`)
            if any(known(d.value) is not None for d in leaves):
                sent_text = " ".join(str(d.value) for d in leaves).lower()
                for kind in COMPOSED_ALONE:
                    for name in re.findall(rf"\b{kind}\s+[\"'`]({IDENTIFIER.pattern})[\"'`]", message, flags=re.I):
                        if name.lower() not in sent_text:
                            self._bind(kind, {kind: name})
            log.errors[line] += 1
            log.streak, log.least = (log.streak + 1, log.least) if line == log.last_error else (1, 0)
            log.last_error = line
            log.failed_with.pop(line, None)
            log.failed_with[line] = args

            def unproven(among: list[Drawn]) -> list[Drawn]:  # (its values not among those that worked, since blamed)
                return [d for d in among if not self.proven(tool, d.name, d.value, blaming=True)]

            def unblame(among: list[Drawn]) -> None:  # (one that worked is drawn as one, `worked`)
                for d in unproven(among):
                    self.unblamed[tool, d.path].add(repr(d.value))

            sent = {str(d.value) for d in leaves}
            # (a tool's name, "column_total", names no "column"; but where a value sent holds it, the error may quote
            # that value: "Invalid projection: transform_crs" of a system sent the name a catalogue listed)
            lowered = message.lower()
            if not any(tool.lower() in v.lower() for v in sent):
                lowered = lowered.replace(tool.lower(), " ")
            quoted = set(QUOTED.findall(message))
            # a relative path it says it looked for in a folder ("no such file ... '/srv/vault/README.md'" of
            # "README.md"): the folder relative paths are taken in, whose files are sent by theirs (`entry`)
            relatives = {str(d.value).removeprefix("./") for d in leaves if isinstance(d.value, str)}
            for relative in relatives - {""}:
                looked = re.search(rf"(/[^\s'\"`]*?)/{re.escape(relative)}(?![\w/.-])", message)
                if looked and not relative.startswith(("/", ".")):
                    self.bases.add(looked[1])
            told = [v for v in error_values(text, sent | {tool}) if not (v in self.names and v in quoted)]
            # (extensions it names, where a file was sent, are the files in view of those kinds: "Invalid file
            # extension. Supported: ['.csv', '.tsv']" of a workbook names the CSV file beside it, not ".csv")
            exts = tuple(v.lower() for v in told if FILE_NAME.fullmatch(v))
            if exts and any(FILE_NAME.search(v) for v in sent):
                in_view = [*self.context, *(path for path, _, _ in self.listed_paths())]
                told = [v for v in told if v.lower() not in exts]
                told += [p for p in dict.fromkeys(in_view) if p.lower().endswith(exts) and p not in sent]
            # a parameter of the tool it asks for, not sent ("Please specify a 'path'"): given from now on, as if
            # required (alone of the tool's: "... or use 'git_set_working_dir' first" names another tool, no choice)
            missing = {q for q in quoted & set(self.params.get(tool, ())) if q not in args}
            # (where it names no value: "Session 'default' not found" says what the server took when sent nothing)
            if not args and len(self.params.get(tool, ())) == 1 and not quoted - self.names:
                self.bare_refused.add(tool)
            self.wanted |= missing
            self.needed |= missing if len(missing) == 1 else set()
            if asked := self._asked(tool, args, lowered, leaves, parts=[q for q in quoted if len(q) > 3]):
                # it names, by their names, parameters the call left out, and nothing it sent ("Please provide either
                # a country (e.g., "Poland", "PL") or a city" of a call given a date): those are wanted, each with
                # the values named after it; what was sent is not to blame
                for value in told:
                    at = m.start() if (m := re.search(rf"(?<!\w){re.escape(value.lower())}(?!\w)", lowered)) else -1
                    before = [(mentioned(p, lowered[:at]), p) for p in asked]
                    owners = [max(before)[1]] if at >= 0 and max(before)[0] >= 0 else asked
                    for p in owners:
                        self.named[p] = list(dict.fromkeys([*self.named[p], value]))
                self.wanted |= set(asked)
                unblame(leaves)
                return
            # an error names a parameter, or the value it was sent (whole, or quoted in part: "Ref '2024-01-15 09'";
            # a quote of one value whole is not part of another: "no column '/srv'" of a file "/srv/a.csv"; nor is a
            # folder the start of a path in it: "path '/srv/r/VERSION' ... not in 'a632078'" of a repository "/srv/r")
            parts = [q for q in quoted if len(q) > 3 and q not in sent]
            # (a parameter named as its tool's thing is no more named by the words: "Error executing query: could not
            # connect to database at ." of `execute_query` names the call, not its `query`); nor by a value sent that
            # spells it ("Database file not found at table_name" of a path sent "table_name" beside a `table_name`)
            own = stems(tool)
            unsent = lowered
            for value in sorted((v.lower() for v in sent if len(v) > 1), key=len, reverse=True):
                unsent = unsent.replace(value, " ")
            by_name = [d for d in leaves if name_in(d.name, unsent) and not stems(d.name) <= own]

            def beyond_others(value: str) -> str:
                """The error without the values sent that hold `value` in them: a value said back inside another that
                holds it is not named ("Invalid projection: transform_crs(..., from_crs='EPSG:4326')" of a `to_crs`
                sent the catalogue's whole example names no `from_crs` sent "EPSG:4326")."""
                out = lowered
                holders = [v.lower() for v in sent if value in v.lower() and len(v) > len(value)]
                for other in sorted(holders, key=len, reverse=True):
                    out = out.replace(other, " ")
                return out

            named = [
                d
                for d in leaves
                if d in by_name
                or (len(str(d.value)) > 1 or str(d.value).isalnum())  # ("not found at 1"; not a sentence's ".")
                and re.search(
                    rf"(?<!\w){re.escape(str(d.value).lower())}(?![\w/])", beyond_others(str(d.value).lower())
                )
                or any(q in str(d.value) for q in parts)
            ]
            # one value sent to two parameters and quoted back: the one the error names is to blame ("no column
            # '/srv/a.csv'" of a file and a column both sent it)
            if not named:  # ... or a word of one parameter's name alone ("Invalid session" of `session_id`)
                worded = [
                    d
                    for d in leaves
                    if not stems(d.name) <= own
                    and any(len(w) > 3 and re.search(rf"\b{w}s?\b", lowered) for w in stems(d.name))
                ]
                named = worded if len({d.name for d in worded}) == 1 else []
            if not named:  # ... or the values of the type a Python error names ("'float' object has no attribute")
                kind = m[1] if (m := PYTHON_TYPE.search(message)) else None
                typed = [d for d in leaves if kind and of_type(kind, d.value)]
                named = typed if len(typed) < len(leaves) else []
            # a result per item: those it says failed, not the ones it read; but not where the error names by its name
            # a parameter sent that value too ("no folder '340 bytes'" of a folder and an item of `exclude` both
            # sent it)
            failed = failed_items(text, args)
            if failed and not any(name_in(d.name, lowered) and str(d.value) in failed for d in named):
                named = [d for d in leaves if d.path.endswith("[]") and str(d.value) in failed]
            by_name = [d for d in named if d in by_name]
            one_value = len({repr(d.value) for d in named}) == 1
            named = by_name if len(named) > 1 and len(by_name) == 1 and one_value else named

            # of those, or else of every parameter, the ones whose value has not worked before (a repository
            # path that worked, sent also as a branch type that the error quotes back, is not to blame; nor where the
            # error names it only by its name's word: "no such path '' in HEAD" of a file path sent beside it)
            # (an error that names nothing, of a call that sent an empty object or list: that is the likelier
            # fault, "near WHERE: syntax error" of a table's update sent no data, and no value is to blame)
            empty = any(v in ({}, []) for v in args.values())
            blamed = [] if empty and not named else unproven(named or leaves) or unproven(leaves) or named or leaves
            named = [d for d in named if d in blamed]
            for d in named:
                if d in first:
                    self.failed_new[d.name][d.arm] += 1
            for d in named:
                if (shape := error_shape(text, str(d.value), tool)) is not None:
                    self.shapes[shape].add(d.name)
            if len(named) == 1 and told and "[]" not in named[0].path:
                self.hints[tool] = (named[0].path, told)
            # (one asked for, sent and refused by name: left out again, where the error that asked for it named
            # others to give instead, "either a country or a city"; one asked for alone is needed whatever it is sent)
            self.wanted -= {d.name for d in named} - self.needed
            # a failure blaming only values of parameters none blamed before got further than those did: the ones
            # refused before were taken ("Session not found", then "No numeric column 'item'" once a session was
            # loaded), and the tool's run of failures starts again from it (once a parameter, so bounded)
            paths = {d.path for d in blamed}
            if paths and log.faults and not paths & log.faults:
                log.failing = 1
            log.faults |= paths
            log.blamed |= paths
            if NOT_A_FOLDER.search(text):
                self.folders_wanted |= {(tool, d.name) for d in blamed if isinstance(d.value, str)}
            for d in blamed:
                self._refuse(tool, d, text, index)
                self.named[d.name] = list(dict.fromkeys([*self.named[d.name], *told]))
                if d not in named:  # (blamed for want of another: an error that names a value blames it whatever)
                    self.beside[tool][d.path][repr(d.value)] = {o.path: repr(o.value) for o in leaves if o != d}
            unblame([d for d in leaves if d not in blamed])
            return
        log.answered += 1
        log.failing = log.streak = log.least = 0
        log.last_error = ""
        log.least_answered |= log.drawn_least and not again
        log.blamed = set()
        for said in [text, *(v for _, v in values if isinstance(v, str) and v != text)]:
            self._show(said)
        self.record_fields |= keyed_fields(result_data(text, None))
        if again:
            log.again += 1
        # an answer said before, or one that found nothing ("[]", "No matches"), is worth less than a new one
        # (one that differs from another only in the time it was read at, or in the value it says back of those it
        # was sent, says the same: "Current UTC Time from <server>: <now>")
        said = gist(text, args)
        new = said not in log.results and not NOTHING.fullmatch(text.strip())
        # ... and one that says back what it was sent (`echoes`) is worth nothing: a new answer each time, no news
        credit = 0.0 if echoes(text, args) else 1.0 if new else REPEAT_CREDIT
        if not again:
            log.results.add(said)
            log.same = 0 if new else log.same + 1
        # (a value whose call found nothing has not shown it works: a filter by a file path "1" lists no commits)
        nothing = found_nothing(text, args)
        # (of values drawn, not a call made again, and of a state that held something: a search of an empty store
        # says nothing whatever it is sent)
        log.silent = 0 if not nothing else log.silent + 1 if leaves and session in self.holding else log.silent
        log.told += not nothing
        failed = failed_items(text, args)  # a list's items the result says failed, the call answering for the rest
        self._partnered(tool, [d for d in leaves if repr(d.value) not in self.took[tool, d.name]])
        for d in leaves:
            self.unblamed[tool, d.path].discard(repr(d.value))
            if d.path.endswith("[]") and str(d.value) in failed:
                self._refuse(tool, d, text, index)
                continue
            self.stats[d.name, d.arm][0] += credit
            self.stats[d.name, d.arm][1] += 1.0 - credit
            self.took[tool, d.name].add(repr(d.value))
            # (an answer said before has not shown a value works, unless it says that value: a city sent to a tool
            # that answers "Distance: 0" whatever the city, one the server cannot place, is not sent on as one)
            if not nothing and (new or says_value(text, d.value)):
                self.worked_at[d.name, repr(d.value)] = index
                self.first_worked.setdefault((d.name, repr(d.value)), index)
                if repr(d.value) not in map(repr, self.worked[d.name]):
                    self.worked[d.name].append(d.value)
            # (the write its value came from issues it; a handle that answered once a write made it, from wherever it
            # was drawn, is that write's: a project registered by the path a listing had given)
            # (the first of the session to give it: a write that gave it later says back what was issued before, a
            # task's details naming the request a plan made; nor one that was sent it under this name, a task added
            # to a request naming the request: each is made in a fresh server only after what issued it)
            first = next((v.call for v in self.seen if v.session == session and v.value == d.value), d.parent)
            issuer = first if first in self.made_at and self.made_at[first][0] in self.writers else None
            if issuer is not None and repr(self.made_at[issuer][1].get(d.name)) == repr(d.value):
                issuer = None
            if issuer is None and d.name in self.handles and (write := self.state_from.get(session, -1)) >= 0:
                issuer = write if repr(d.value) in self.made_by(write) else None
            if issuer is not None and d.name not in self.unissued:
                self.issuers[d.name].setdefault(*self.made_at[issuer])
                self.issued[d.name][call_key(*self.made_at[issuer])].add(str(d.value))
            elif (
                self.fresh_sessions
                and first is None
                and not nothing
                and not any(repr(d.value) in self.made_by(w) for w in self.session_writes[session] if w != index)
            ):
                self.unissued.add(d.name)
                self.issuers.pop(d.name, None)
        # a long text is prose, and a line ending in a colon a heading ("Staged changes:"): no values to pass on
        seen = [
            SeenValue(value=v, field=k, call=index, session=session)
            for k, v in values
            if not (isinstance(v, str) and (len(v) > LONG_VALUE or v.rstrip().endswith(":")))
        ]
        if seen and not nothing:  # (values, not a word that it was done: "Entities deleted")
            self.holding.add(session)
        if index < self.state_from.get(session, index + 1):  # the state a fresh server starts in
            self.initial |= {repr(n.value) for n in seen}
        # a value a write of this session gave is still the write's where a read says it again (a project registered,
        # then listed): the write issued it, and is made first in a later session that sends it (`issuers`)
        # ... and one a read of this session gave before a write said it back is the read's (the sheet a format of it
        # names): the write issued nothing, and no chain through it is needed to ask of the sheet
        kept = {
            repr(s.value)
            for s in self.seen
            if s.session == session and (tool in self.writers or self.made_at[s.call][0] in self.writers)
        }
        seen = [n for n in seen if repr(n.value) not in kept]
        self.seen = [s for s in self.seen if repr(s.value) not in {repr(n.value) for n in seen}] + seen
        self.seen = self.seen[-KNOWN_VALUES:]
        # a known query that lists names of a kind (a database's tables, a table's columns): its result's names are
        # of that kind, bound with the names the query was composed over (a column with its table); one that answered
        # with none, where its parameter takes one (not a search's words: a table finder sent "SHOW TABLES"), a kind
        # of which the server holds nothing (in a fresh server: of the user's)
        if not is_error and not values:
            around = self.descriptions.get(tool, "")
            listing = {
                found[0].lists
                for d in leaves
                if (found := known(d.value)) is not None and any(described_as(s, d.name, "", around) for s in QUERIES)
            }
            self.none_listed |= (listing | {listed_kind(tool) if not args else None}) - {None}
        # (... and the fields of the records a known query of records gave: a table's rows, its columns, where a query
        # language lists none, BQL's postings)
        for d in leaves:
            if (found := known(d.value)) is None:
                continue
            query, bound = found
            for k, v in values:
                if query.lists is not None and isinstance(v, str):
                    self._bind(query.lists, {**bound, query.lists: v})
                if query.fields is not None:
                    self._bind(query.fields, {**bound, query.fields: k})
        # ... as are the names a call gives of a tool named for listing that kind (`list_tables`), sent nothing but
        # where to look (a database's path: not a filter, nor the table whose columns it lists): its lines, its
        # records' names, or the values of its one key (`{"result": ["products", "orders"]}`, a list the SDK wrapped)
        if all(set(words_of(k)) & LOCATING for k in args) and (kind := listed_kind(tool)) is not None:
            one_key = len({k for k, _ in values}) == 1
            for k, v in values:
                if (not k or one_key or k.rpartition(".")[2].lower() in NAME_KEYS) and isinstance(v, str):
                    self._bind(kind, {kind: v})
        # what a call that took a path listed: names to join under that path (a listing's lines, its names'
        # fields; not a labelled field's value, a size or a permission of `get_file_info`), not of a file's (a note
        # read: its lines are no names in it)
        for d in leaves:
            folder = isinstance(d.value, str) and not FILE_NAME.search(d.value)
            if folder and ("/" in d.value or d.value in (".", "~")):
                for _, v in [(k, v) for k, v in values if not k or k.rpartition(".")[2].lower() in NAME_KEYS]:
                    for token in listed_names(v):
                        if (token, index, session) not in self.listed[d.value] and not token.startswith("/"):
                            self.listed[d.value].append((token, index, session))

    def _bind(self, kind: str, binding: dict[str, str]) -> None:
        """A name known to be of `kind` (with the names it goes with: a column's table), for queries to be composed
        over; not one that is no identifier, nor one known already."""
        if IDENTIFIER.fullmatch(binding[kind]) and binding not in self.kinds[kind]:
            self.kinds[kind].append(binding)

    def _partnered(self, tool: str, first: list[Drawn]) -> None:
        """Values of `tool` that work for the first time (`first`: a language that ran a program) lift the blame of
        the values an error blamed without naming them beside another value of their parameter that had never worked:
        `console.log(6 * 7)`, refused by bash beside `shellscript` ("syntax error near token"), is as good as untried
        beside `javascript` (a program is refused by one language's interpreter, run by another's). Once a value: a
        blame beside a value that works stands, as does one an error named ("Could not connect to database at 1")."""
        for d in first:
            for path, blamed in self.beside[tool].items():
                for value, partners in list(blamed.items()):
                    partner = partners.get(d.path)
                    if partner not in (None, repr(d.value)) and partner not in self.took[tool, d.name]:
                        del blamed[value]
                        self.blamed[tool, path].pop(value, None)
                        self.unblamed[tool, path].add(value)

    def _refuse(self, tool: str, d: Drawn, text: str, index: int) -> None:
        """Value `d` was refused by call `index`: a loss for its arm, blamed on its parameter here, refused on its name
        (by an error `text`, whose wording, the value and the tool's name left out, tools that refuse it alike
        share)."""
        line = text.strip().partition("\n")[0]
        wording = (line.replace(str(d.value), "{}") if str(d.value) else line).replace(tool, "{tool}")
        self.stats[d.name, d.arm][1] += 1
        self.blamed[tool, d.path][repr(d.value)] = index
        self.unblamed[tool, d.path].discard(repr(d.value))
        if repr(d.value) not in self.refused[d.name]:
            self.refused_shapes[d.name][shape_of(str(d.value))] += 1
        self.refused[d.name].add(repr(d.value))
        self.refused_at[d.name, repr(d.value)] = index
        self.refused_on[d.name, repr(d.value), wording].add(tool)
        if len(self.refused_on[d.name, repr(d.value), wording]) >= 2:
            self.refused_widely[d.name][repr(d.value)] = index

    def _asked(self, tool: str, args: dict[str, Any], lowered: str, leaves: list[Drawn], parts: list[str]) -> list[str]:
        """The arguments of `tool` left out of a call that an error names, by their names' words, where it names
        none that was sent and quotes no value sent: what it asks for."""
        sent = [str(d.value).lower() for d in leaves if len(str(d.value)) > 1]
        if (
            any(mentioned(d.name, lowered) >= 0 for d in leaves)
            or any(v in lowered for v in sent)
            or any(q.lower() in v for q in parts for v in sent)
        ):
            return []
        return [p for p in self.params.get(tool, []) if p not in args and mentioned(p, lowered) >= 0]

    def refused_since(self, tool: str, arguments: dict[str, Any], index: int) -> bool:
        """Whether `tool` blamed a value of `arguments` (those of call `index`) on a later call: made again, the call
        would fail for it (a database's path a write made in the session the call answered in, that the next
        session's reads found no file at)."""
        return any(self.blamed.get((tool, k), {}).get(repr(v), -1) > index for k, v in arguments.items())

    def spent(self, tool: str, path: str) -> set[str]:
        """The values sent to `tool` at `path` that are not to be sent there again on their own account: all, but
        those whose calls each failed for another's value (`unblamed`)."""
        return self.tried[tool, path] - self.unblamed[tool, path]

    def made_by(self, write: int) -> set[str]:
        """The values (`repr`) a write (its call's index) may have made: those it was sent as what names a thing, or as
        a handle (a project registered by its path is named by it; not a password a key's derivation was sent, "test")
        and those results gave from it on (the name it answered) that no fresh server held before a write (`initial`:
        the algorithms a listing named, read after a key's derivation, are not the derivation's)."""
        if write not in self.made_at:
            return set()
        naming = IDENTIFYING | NAME_KEYS | self.handles
        return {repr(v) for k, v in self.made_at[write][1].items() if k in naming or naming & set(words_of(k))} | (
            {repr(s.value) for s in self.seen if s.call >= write} - self.initial
        )

    def retired(self, tool: str, after: int) -> str | None:
        """Why `tool` gets no more calls: `after` distinct calls in a row failed or said nothing, or nothing new to
        send."""
        log = self.logs[tool]
        # (but not while the failures blamed a parameter's value of a list the schema gives, with values untried:
        # the server refuses those one by one, "kitc: not found" of the one language of forty installed untried)
        if log.failing >= after and any(
            v not in self.spent(tool, p) for p in log.blamed for v in self.choices.get((tool, p), [])
        ):
            return None
        if not log.answered and log.failing >= after:
            return f"{log.calls} calls, all errors"
        if log.failing >= after:
            return f"its last {log.failing} calls failed"
        if log.silent >= after:
            return f"its last {log.silent} answers said nothing"
        if log.exhausted >= 2:
            return SENT_ALL
        return None


_SKIP = object()


def shrinks(schema: dict[str, Any]) -> bool:
    """Whether a tool's input schema requires a number or a list, which a least call makes its least (a tool of texts
    alone has no least call: its required texts are drawn as ever, and leaving its options out only narrowed it)."""
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = [props[n] for n in schema.get("required") or [] if isinstance(props.get(n), dict)]
    return any({"integer", "number", "array"} & set(kinds_of(s)) or shrinks(s) for s in required)


def least_number(schema: dict[str, Any]) -> int | float:
    """The least number `schema` allows from 1 up (its minimum where that is more; where its maximum is below 1, the
    least it allows): one item, a factor that changes nothing, a size of one."""
    kinds = kinds_of(schema)
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    value: int | float = 1
    if isinstance(low, (int, float)):
        above = "minimum" not in schema  # (an exclusive minimum is not allowed itself)
        value = max(value, math.floor(low) + 1 if above and "integer" in kinds else low + 0.5 * above)
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        if isinstance(high, (int, float)) and (value > high or value == high and "maximum" not in schema):
            value = low + 0.5 * above if "integer" not in kinds else math.floor(low) + above
    return int(value) if "integer" in kinds else value


# Python's words for a value of the wrong type, naming the type: "'float' object has no attribute 'get'",
# "'NoneType' object is not subscriptable"; and the texts a value of each is sent as (a JSON text the server parses)
PYTHON_TYPE = re.compile(r"'(float|int|str|NoneType|list|dict|bool)' object (?:has no|is not)")
SENT_AS = {
    "float": re.compile(r"-?\d+\.\d*(?:[eE][-+]?\d+)?"),
    "int": re.compile(r"-?\d+"),
    "NoneType": re.compile(r"null|None"),
    "list": re.compile(r"\[.*\]", re.S),
    "dict": re.compile(r"\{.*\}", re.S),
    "bool": re.compile(r"true|false|True|False"),
}


def of_type(kind: str, value: Any) -> bool:
    """Whether `value`, as sent, is of the Python type `kind` an error named as the one that failed (`PYTHON_TYPE`: a
    text "0.0" sent where a geometry was wanted, parsed to a float)."""
    python = {"float": float, "int": int, "str": str, "list": list, "dict": dict, "bool": bool}.get(kind)
    if kind == "NoneType" and value is None or python is not None and type(value) is python:
        return True
    return isinstance(value, str) and kind in SENT_AS and SENT_AS[kind].fullmatch(value.strip()) is not None


def echoes(text: str, args: dict[str, Any]) -> bool:
    """Whether a result says back what the call was sent and nothing more (`SELECT 26` -> "[(26,)]"): its numbers
    and words all in its text arguments (a number computed from numbers may equal one of them). A value varied
    into such a call is a new answer each time, and no news."""
    sent = " ".join(v for v in args.values() if isinstance(v, str))
    numbers_sent = set(re.findall(r"\d+(?:\.\d+)?", sent))
    words_sent = {w.lower() for w in re.findall(r"[A-Za-z]{3,}", sent)}
    found = re.findall(r"\d+(?:\.\d+)?", text)
    words = {w.lower() for w in re.findall(r"[A-Za-z]{3,}", text)}
    return bool(found or words) and set(found) <= numbers_sent and words <= words_sent


def backwards(low: Any, high: Any) -> bool:
    """Whether a range's two ends are given the wrong way round: numbers, or dates, the first later (on a later day,
    whatever their forms: "2025-01-15" after "2024-01-15T12:00:00Z"; a time of a day after the day itself)."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)):
        return low > high
    dates = all(isinstance(v, str) and ISO_DATE.fullmatch(v) for v in (low, high))
    return dates and (low[:10], len(low), low) > (high[:10], len(high), high)


def says_value(text: str, value: Any) -> bool:
    """Whether a result says a value it was sent, whole ("No public holiday data available for Germany" of
    "Germany"); not a flag, nor a value of one character that any text holds."""
    said = str(value)
    return (
        not isinstance(value, bool)
        and len(said) > 1
        and re.search(rf"(?<![\w.]){re.escape(said)}(?![\w])", text, flags=re.I) is not None
    )


def read_off_clock(value: str) -> bool:
    """Whether a text is a time of now and nothing else ("2026-12-06T04:14:06.351Z"), its zone's offset aside."""
    spans, rest = clock_spans(value), value
    for start, end in reversed(spans):
        rest = rest[:start] + rest[end:]
    return bool(spans) and re.fullmatch(r"\s*(?:Z|[+-]\d{2}:?\d{2})?\s*", rest) is not None


def gist(text: str, args: dict[str, Any]) -> str:
    """What a result says beyond the server's clock (`clock_spans`) and the values its call was sent (their text
    said back, in any case; and the numbers a text sent holds, each: `SELECT 2` gives rows of "2", as `SELECT 1`
    gave rows of "1"), each put as a mark."""
    for start, end in reversed(clock_spans(text)):
        text = f"{text[:start]}\x00now{text[end:]}"
    sent = {v for _, v in flatten(args) if isinstance(v, str) and len(v) > 1}
    for value in sorted(sent, key=len, reverse=True):
        text = re.sub(re.escape(value), "\x00sent", text, flags=re.I)
    for number in {n for v in sent for n in re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", v)}:
        text = re.sub(rf"(?<![\w.]){re.escape(number)}(?![\w.])", "\x00sent", text)
    return text


def mentioned(name: str, lowered: str) -> int:
    """Where a (lower-cased) text last names a parameter, whole, as written or as words ("file_path", "file path"); -1
    where it does not."""
    found = [
        m.start()
        for form in {name.lower(), " ".join(words_of(name))}
        for m in re.finditer(rf"\b{re.escape(form)}\b", lowered)
    ]
    return max(found, default=-1)


def name_in(name: str, lowered: str) -> bool:
    """Whether a parameter's name is in a (lower-cased) error text, as written or as words ("repo_path", "repo
    path")."""
    return name.lower() in lowered or len(name) > 2 and " ".join(words_of(name)) in lowered


def kind_named(name: str) -> str:
    """The kind of thing a parameter's name says it takes: without the letter or number that tells two of a kind apart
    (`name_a` and `name_b` of a sum of two matrices, `path1`), nor the "name" a thing is given by (`tableName` of a
    table, as `table` takes one)."""
    words = words_of(name)
    if len(words) > 1 and (len(words[-1]) == 1 or words[-1].isdigit()):
        words = words[:-1]
    if len(words) > 1 and words[-1] == "name":
        words = words[:-1]
    return " ".join([*words[:-1], re.sub(r"(?<=[a-z])\d+$", "", words[-1])] if words else words)


def stems(name: str) -> set[str]:
    """A name's words without a plural's s: `names` and `name`, `entityNames` and `entity name` share them."""
    return {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words_of(name)} - {"the", "of", "a"}
