"""The English that exploring relies on, in one place: everything else in `mcprl.scenarios` works from
structure (schemas, annotations, what the server answered). It holds:

- `READ_WORDS`, `WRITE_WORDS`, `DESCRIBED_READS`: the leading words of a tool's name or description that say
  whether it changes the server's state, for tools without MCP's `readOnlyHint`/`destructiveHint`; `MACHINE`: the
  things of the machine a server runs on that a write may act on (a process, a shell command), outside the server;
- `PROBES`: a small fuzzing dictionary, as RESTler keeps one: values of common shapes (a number, an
  arithmetic expression, a date, a path, an SQL introspection query, ...) for a string parameter that
  nothing else gave a value; `probes(name, description)` orders them by the words the parameter is
  described with (a word with two senses, `AMBIGUOUS`, only beside another in the tool's description), and
  exploring learns from the server's answers which shape a parameter takes; `FORMATTED`: the shapes of a form of
  their own, which take no word of a text; `named_probes`: the values of those a parameter's name says it takes
  (a program for `code`), trusted as an example is; `misplaced_path`: a path where nothing named a path is asked for;
  `MAKING`: values of those shapes that make records to read (an SQL table and its rows, in one statement), sent
  first to a tool that may write once a listing found none of their kind: a store that starts empty has nothing to
  ask about until something is made;
- `QUERIES`: queries of those shapes that a lexicon knows the meaning of: those that list names of a kind
  (a database's tables, a table's columns), and those composed over such names (`composed`: a table's row
  count, a column's largest value), each with the question its one-value result answers and what its result
  holds, in words; `known(text)` reads a query sent back into its meaning, so that a task asks what the
  query asks and never pastes it; `listed_kind(tool)`: the kind a tool named for listing them gives
  (`list_tables`);
- `RATE_LIMITED`: an error that asks the client to slow down;
- `BOUNDS` (`bound_pairs`, `BOUND_WORDS`): the words that name the lower and the upper end of a range (`start_line`,
  `end_line`);
- `ALLOWED_VALUES`: where an error lists the values it would take ("must be one of ..."); `FORBIDDING`, `DENIED`: the
  words just before a quoted value that forbid it ("must not start with "-""), or just after it that deny it ("'x' not
  found"); `LIST_GOES_ON`: a list's last item that says it goes on ("etc.");
- `DOCUMENT`: the words of a parameter's name that say it takes a document's text; `FILES`, `FOLDERS`: those that say
  it takes a file's path, or a folder's; `LOCATING`: those that say where a call looks, not what it asks about;
- `NAME_KEYS`: the fields whose value names its record (a file's, an item's), as a value with no key
  does in a listing ("[FILE] notes.txt");
- `LINKS`: the words that end no label in a result's prose; `FUNCTION_WORDS`: the words of a text no one searches by;
- `BARE_NAMES`, `PREPOSITIONS` (`TIMES`), `ENDS`, `KINDS`, `IDENTIFYING`, `ABOUT_IT` (`ABOUT_ONLY`), `OPERANDS`,
  `OPERATOR_WORDS`: how a call's arguments are said in a task; `spoken`: a key in words, its short forms written
  out (`ABBREVIATIONS`), a unit it ends in said as one (`UNITS`);
- `OUTCOMES`, `ERROR_FIELDS`: the words a reply says it worked with, the fields it says what failed in; `FLAGS`: the
  words that say yes or no (no answer, and no value of another parameter than one named as the flag it came from);
- `COUNTING` (`counts`): the keys that say how many a listing holds; `WHEN` (`unix_time`): the keys of a time;
  `DATA_TYPES` (`data_type`): the names of the types a database or a schema gives a field ("price: REAL");
- `PEOPLE`, `NOT_KINDS`, `ENTRY`, `NOT_PARTICIPLES`, `NOT_COUNTS`, `LATEST`, `EARLIEST`, `who` (`head`),
  `participle`: how a task asks about a record (who or what a field is, a state it is in, how many it has, what the
  record is, its place in a dated listing);
- `VERBS`, `GETS`, `FILLER`, `singular`, `plural` (`IRREGULAR_PLURALS`): how a tool's title is said, as an order or as
  the thing it gives.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcprl.checks import as_number

NAME_KEYS = frozenset({"name", "title", "subject", "label", "path", "file", "filename"})
# How a call's arguments are said in a task (mcprl.scenarios.phrasing.said): a parameter named by one of
# `BARE_NAMES` is its value alone ("Convert weight 14.25", not "with value 14.25"), and one whose name
# starts with a preposition is that preposition and its value ("from F to C", not "from unit F and to unit C")
BARE_NAMES = frozenset("value amount quantity number input expression".split())
PREPOSITIONS = frozenset("from to into at by for since until before after".split())
TIMES = frozenset("since until before after".split())  # ... of those, the ones of time ("since when", not worded)
# Words that tie a label to what it is of, and so end none ("Meeting at 10am" labels nothing "meeting at")
LINKS = frozenset("at by for from in of on to with".split())
# words a title may open with that say how much of a thing, not what is done to it ("all table names": no order "all")
DETERMINERS = frozenset("all every each any some".split())
# words of four letters or more that a person searching a text by one of its words never picks ("about", not "budget")
FUNCTION_WORDS = frozenset(
    "about above after again also been before being below could does done each from have here into just more most "
    "only other over same should some such than that their them then there these they this those through under "
    "until very were what when where which while will with would your".split()
)
# ... as is one whose name starts with a word for where a move starts or ends ("from Asia/Tokyo to UTC", not "with
# source timezone Asia/Tokyo and target timezone UTC")
ENDS = {"source": "from", "src": "from", "origin": "from", "target": "to", "destination": "to", "dest": "to"}
# ... and one named as the thing itself ("move" of "make move"), or by it and a word that is not a kind of it
# (`move_san`, `table_name`, but not `branch_type` of "git branch": "with branch type all")
KINDS = frozenset("type kind mode format category class".split())
# the types a database (SQL's) or a schema (JSON's) gives a field: a value that is one says what the field holds, not
# what it is ("- price: REAL" of a table's columns is the price's type)
DATA_TYPES = frozenset(
    "integer int bigint smallint tinyint text varchar char character real float double numeric decimal boolean "
    "bool date datetime timestamp timestamptz blob bytea json jsonb uuid string number object array null".split()
)
# ... and one named as what it identifies ("Read the file "notes.txt"", not "with path "notes.txt""); "for" it where
# the title's thing is something about it (`ABOUT_IT`: 'the file info for "./docs"')
IDENTIFYING = frozenset("path file filename name id".split())
# the words that name a parameter taking a document's whole text (a CSV server's `content`), which the text of a file
# in plain view of the kind its tool names is given (not an id or a name beside it)
DOCUMENT = frozenset("content contents text data body document source input raw".split())
# the words that say a parameter takes a file's path, and those that say a folder's: one said to take a file is sent
# no folder ("File path relative to project root" sent "." answered "Is a directory")
FILES, FOLDERS = frozenset("file filename".split()), frozenset("dir directory folder".split())
# an error that says a path sent is no folder ("Path is not a directory: .../shop.py"): a folder is what it takes
NOT_A_FOLDER = re.compile(r"(?:\bnot|n't|\bmust be) an? (?:directory|folder)\b", re.I)
# the words that say a parameter takes the name of a field of the records a server holds (a table's column: "Column
# name to calculate the average for"), which the names of the fields results and files in plain view held are sent
FIELD_NAMED = frozenset("column columns field fields header headers attribute attributes".split())
# the words of a parameter's name that say where a call looks (a repository's path, a folder), not what it asks about
LOCATING = frozenset({"path", "repository", "repo", "root", "workspace", *FOLDERS})
# ... though a path names only a place ("Read the file "notes.txt"", but "the git blame for "/srv/repo"")
PATHS, PLACES = frozenset("path file filename".split()), frozenset("file folder directory document repository".split())
ABOUT_IT = frozenset(
    "info information details metadata stats statistics status tree size sizes summary history content contents".split()
)
# ... of which those that say nothing of their own: a field of the file info for "./docs" is the file's ("the size of
# the file "./docs"")
ABOUT_ONLY = frozenset("info information details metadata".split())
# ... and two operands of an order whose order matters, as people say them ("divide 5 by 18", "subtract 2 from 9"
# for a - b), the first argument's value `{0}`
OPERANDS = {"divide": "{0} by {1}", "multiply": "{0} by {1}", "subtract": "{1} from {0}"}
# ... and an arithmetic operator ("45 * 6": "45 times 6"), `mcprl.scenarios.expressions.in_words`
OPERATOR_WORDS = {"+": "plus", "-": "minus", "*": "times", "/": "divided by", "%": "modulo", "**": "to the power of"}
WHEN = frozenset("time timestamp date created modified updated accessed mtime ctime atime".split())  # (`unix_time`)
COUNTING = frozenset("count total number num".split())  # the words of a key that says how many (`counts`)
# what the one record of a listing is called where nothing names its kind ("the entry in the directory tree")
ENTRY = "entry"
# How a task asks about a record: "Who" is a field that names a person ("Who is the author of ...?")
PEOPLE = frozenset(
    "author owner creator sender recipient assignee committer reviewer maintainer reporter organizer customer".split()
)
# ... what the record is: the thing the key that opens each record of a listing names ("Commit: a1b2..." -> the
# commit), but for a key that names no kind of thing
NOT_KINDS = IDENTIFYING | NAME_KEYS | KINDS | frozenset("key index value number date time status result".split())
# ... and a field named by a word that ends as a participle but is a thing ("seed", "feed", "speed")
NOT_PARTICIPLES = frozenset("speed seed feed need embed breed bleed".split())
# ... and a field in the plural whose number is a code, not how many ("permissions": 644, a file's mode)
NOT_COUNTS = frozenset("permissions flags options settings modes".split())
# past participles not ending in -ed, as a result says what was done ("notes folder set to /srv/notes")
IRREGULAR_PARTICIPLES = frozenset("set reset unset sent made done written built begun put cut kept".split())
# ... and the verbs of those done by the thing itself, not to it, each by its participle: a date one names is asked
# "When did the customer join?", not "When was the customer joined?"
DONE_BY_ITSELF = {
    "joined": "join",
    "started": "start",  # (a task or a person that did: "When did Carla Diaz start?")
    "arrived": "arrive",
    "departed": "depart",
    "landed": "land",
    "expired": "expire",
    "occurred": "occur",
    "happened": "happen",
    "retired": "retire",
    "graduated": "graduate",
    "died": "die",
    "ended": "end",
}
# ... and the words a write's reply says it worked with ("success", `"status": "ok"`), no fact of the state it left
OUTCOMES = frozenset("success successful succeeded ok done".split())
# the words that say yes or no: no answer (a guess holds it half the time), and no value of another parameter
FLAGS = frozenset("true false yes no on off".split())
# the values that say a thing is not known, as normalised ("n/a" -> "n a"): no answer ("What is the type of the
# column "name"?" -> "unknown" holds for any column a server cannot type)
UNKNOWN = frozenset({"unknown", "n a", "na", "not available", "not set", "not specified", "tbd"})
# the fields in which a result says what went wrong (`{"file_content": ..., "error": "YAML parser returned ..."}`):
# their text is no value to pass on, nor an answer
ERROR_FIELDS = frozenset("error errors exception traceback stderr".split())
# ... and its place in a listing in time order, its first or last one
LATEST, EARLIEST = "latest", "earliest"
# How a task names a call by its tool's title: a title starting with a verb is an order ("Convert temperature ..."),
# any other one names a thing ("Git log", "Sum"); a verb of `GETS` asks for its object ("Get sum" -> "the sum").
# `FILLER`: a title's words that say nothing of what it does ("Get Sum Tool")
GETS = frozenset("get fetch retrieve read show view lookup look".split())
FILLER = frozenset({"tool"})
# ... and a title's words from one of `HOW` on, which say how it does it, not what ("Get Current Time with Optional
# Location and Calendar Systems" -> "the current time")
HOW = frozenset("with using via".split())
READ_WORDS = frozenset(
    "get list search find read show describe fetch lookup look query count calculate compute convert compare check "
    "view info inspect explain summarize summarise resolve validate browse retrieve stat status preview "
    "estimate evaluate analyze analyse parse format render translate tell whoami echo ping peek".split()
)
# ... and a description's opening verb that says a read, as a docstring's "Returns the schema ..." does (not a
# name's first word: `return_book` writes)
DESCRIBED_READS = READ_WORDS | {"return"}
WRITE_WORDS = frozenset(
    "create delete remove update set write send post put patch insert move rename schedule cancel upload edit modify "
    "append clear reset drop execute exec run restart kill stop start commit push merge publish book buy order pay "
    "transfer grant revoke assign archive mark save store register subscribe invite apply install uninstall "
    "enable disable close open lock unlock approve reject submit replace upsert import sync "
    # (and those that move a record's state along: kanban-mcp's `advance_status` was asked "Find the advance status")
    "advance revert restore undo toggle increment decrement complete finish reopen rollback".split()
)
# what a tool acts on that is the machine's, not the server's: a process it kills or starts, a command or script it
# runs, a terminal or container it drives; a server started afresh for a session holds none of them
MACHINE = frozenset("process pid command shell terminal container script".split())
# words a parameter's description says it changes nothing with: a stand-in some clients need every tool to take
# (memory-bank-mcp's `random_string`: "Dummy parameter for no-parameter tools"), which no task states
STAND_IN_WORDS = frozenset("dummy unused".split())
# a title's first word that makes it an order, though it neither reads nor writes by the lists above
VERBS = (
    READ_WORDS
    | WRITE_WORDS
    | frozenset("make play roll add subtract multiply divide generate draw pick take configure".split())
)

# the short forms keys are written in, as a task says them (`spoken`)
ABBREVIATIONS = {
    "desc": "description",
    "expr": "expression",
    "descr": "description",
    "qty": "quantity",
    "addr": "address",
    "msg": "message",
    "amt": "amount",
    "num": "number",
    "cnt": "count",
    "img": "image",
    "dob": "date of birth",
    "tel": "telephone",
    "pct": "percent",
    "dir": "directory",
    "repo": "repository",
    "env": "environment",
    "max": "maximum",
    "min": "minimum",
    "avg": "average",
}
# the words a key may end in that name its value's type in a program, not the thing (`range_str` of "A1:D10"): a
# task leaves them out, "range A1:D10"
TYPE_WORDS = frozenset("str int bool dict obj arr".split())
# the units a key's last word may be (`duration_ms`, `price_usd`), as a task says them
UNITS = {
    "ms": "milliseconds",
    "sec": "seconds",
    "secs": "seconds",
    "mg": "milligrams",
    "g": "grams",
    "kg": "kilograms",
    "lb": "pounds",
    "lbs": "pounds",
    "mm": "millimetres",
    "cm": "centimetres",
    "km": "kilometres",
    "kb": "kilobytes",
    "mb": "megabytes",
    "gb": "gigabytes",
    "usd": "US dollars",
    "eur": "euros",
    "gbp": "pounds sterling",
}
# shape -> (values, the words a parameter of that shape is described with), the shapes a value must have before
# the kinds of free text; a parameter described with none of them is sent a plain word (`PLAIN`) first. What a
# person writes into a store (a name, a text, a tag) is sent as a person would write it, not as a test string: a
# task about the record reads as one a person asks ("What is the status of the task "Weekly report"?").
PLAIN = "word"
# shapes whose values have a form of their own (a date, a path, an address): a word of a text is none of them
FORMATTED = (
    "date",
    "time",
    "timezone",
    "url",
    "email",
    "path",
    "glob",
    "number",
    "expression",
    "symbol",
    "code",
    "geojson",
    "json",
)
WRITTEN = ("title", "text", "relation", "kind", "tag")
# the tables the standard's catalogue lists, but its own and PostgreSQL's (`pg_catalog`: two hundred of the engine's
# tables beside a database's three)
CATALOGUED = (
    "SELECT table_name FROM information_schema.tables WHERE table_schema NOT IN ('information_schema', 'pg_catalog')"
)
PROBES: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {
    "expression": (
        ("2 + 3", "x**2 + 3*x", "12 * 4", "(7 - 2) / 5"),  # (one over a variable, for algebra: its derivative)
        frozenset("expression expr formula math equation calculate calculation compute evaluate".split()),
    ),
    "symbol": (("x", "y"), frozenset("variable variables symbol symbols var".split())),
    # a program that prints what it computes, in the forms most languages a runner of code takes share: Python's,
    # Ruby's, Lua's, Julia's, R's print; JavaScript's and TypeScript's console.log; a shell's echo
    "code": (
        ("print(6 * 7)", "console.log(6 * 7)", "echo $((6 * 7))"),
        frozenset("code snippet script program source python javascript shell bash".split()),
    ),
    "sql": (
        (
            "SELECT name FROM sqlite_master WHERE type='table'",
            CATALOGUED,
            "SHOW TABLES",
            "SELECT 1",
        ),
        frozenset("sql query select statement database".split()),
    ),
    "path": ((".", "/", "README.md"), frozenset("path file filename dir directory folder repo repository".split())),
    "glob": (("*", "*.txt"), frozenset("pattern glob wildcard".split())),
    "date": (
        ("2024-01-15", "2024-01-15T12:00:00Z"),
        frozenset("date day timestamp since until when start end".split()),
    ),
    "time": (("12:00", "09:30"), frozenset("time hour clock".split())),
    "timezone": (
        ("UTC", "Europe/London", "Asia/Tokyo", "America/New_York", "Asia/Kolkata", "Australia/Sydney"),
        frozenset("timezone tz zone iana".split()),
    ),
    "url": (("https://example.com",), frozenset("url uri link website site href".split())),
    "email": (("user@example.com",), frozenset("email mail recipient sender".split())),
    "number": (("1", "42"), frozenset("number id count amount index num".split())),
    # a place, a line and an area in GeoJSON (RFC 7946: longitude first), a standard's shapes as SQL's are: a
    # server of geometry takes them as text
    "geojson": (
        (
            '{"type": "Point", "coordinates": [-9.1393, 38.7223]}',
            '{"type": "Polygon", "coordinates": [[[-9.15, 38.72], [-9.14, 38.72], [-9.14, 38.73], [-9.15, 38.73], '
            "[-9.15, 38.72]]]}",
            '{"type": "LineString", "coordinates": [[-9.15, 38.72], [-9.14, 38.73]]}',
        ),
        frozenset("geojson geometry geometries".split()),
    ),
    "json": (("{}", "[]"), frozenset("json object payload".split())),
    "word": (("test", "example", "hello world"), frozenset("query search term keyword find filter".split())),
    "title": (
        (
            "Weekly report",
            "Team meeting",
            "Project Apollo",
            "Garden plan",
            "Trip to Lisbon",
            "Reading list",
            "Tax return",
            "Birthday party",
        ),
        frozenset("name title subject heading label topic".split()),
    ),
    "text": (
        (
            "Send the draft to Sam by Friday.",
            "Book a room for the review.",
            "Ask Dana about the budget.",
            "Check the flights to Oslo.",
            "Renew the library books.",
            "Water the plants on Monday.",
        ),
        frozenset(
            "text description desc content body note notes message comment details observation observations".split()
        ),
    ),
    "relation": (
        ("knows", "works with", "part of", "reports to"),
        frozenset("relation relationship predicate".split()),
    ),
    "kind": (("person", "project", "event", "place"), frozenset("type kind".split())),
    "tag": (
        ("work", "urgent", "home", "travel", "family", "finance"),
        frozenset("tag tags category categories group labels".split()),
    ),
}


# shape -> the kind of name its values make, and the values (by the name each makes) that make records of their own
# for reads to find, each in one call (one SQL statement: a server runs one a call, and one that creates tables takes
# no INSERT): sent first to a tool that may write once a listing of that kind found none (`probes(making=...)`), so
# that an empty database gets a table of rows to ask about, and one with tables of its own is never sent one.
# `CREATE TABLE ... AS SELECT` is SQLite's, PostgreSQL's, MySQL's and DuckDB's alike.
MAKING: dict[str, tuple[str, dict[str, str]]] = {
    "sql": (
        "table",
        {
            "novels": "CREATE TABLE novels AS SELECT 'Persuasion' AS title, 'Jane Austen' AS author, 1817 AS year, "
            "249 AS pages UNION ALL SELECT 'Middlemarch', 'George Eliot', 1871, 880 UNION ALL SELECT 'Rebecca', "
            "'Daphne du Maurier', 1938, 449 UNION ALL SELECT 'Kindred', 'Octavia Butler', 1979, 264",
            "cities": "CREATE TABLE cities AS SELECT 'Lisbon' AS name, 'Portugal' AS country, 545000 AS population "
            "UNION ALL SELECT 'Oslo', 'Norway', 709000 UNION ALL SELECT 'Kyoto', 'Japan', 1464000",
        },
    )
}
MADE_NAMES = frozenset(name for _, made in MAKING.values() for name in made)  # the names they make ("novels")
MADE = frozenset(text for _, made in MAKING.values() for text in made.values())


@dataclass(frozen=True)
class Query:
    """A query of a shape (`PROBES`) whose meaning is known. `text` may hold placeholders for names of a
    kind (`{table}`, `{column}`): it is composed over the bindings of kind `over` that earlier results gave
    (a column's binding holds its table's name too). `lists`: the kind of name each value of its result is
    (the names then bound with this query's own bindings); `ask`: the question its one-value result answers
    (`text_ask` where that value is a text, not a number; `date_ask`, a date); `about`: what its result holds, in words;
    `record`: what one record of its result is (a row of `{table}`), and `fields` the kind of name each of its fields
    is (the table's columns)."""

    text: str
    over: str | None = None
    lists: str | None = None
    ask: str | None = None
    text_ask: str | None = None
    date_ask: str | None = None
    about: str | None = None
    record: str | None = None
    fields: str | None = None


TABLES = "the tables of the database"
# shape -> queries of that shape whose meaning is known: the probes among them, then those composed over names
QUERIES: dict[str, tuple[Query, ...]] = {
    "sql": (
        Query("SELECT name FROM sqlite_master WHERE type='table'", lists="table", about=TABLES),
        Query(CATALOGUED, lists="table", about=TABLES),
        Query("SHOW TABLES", lists="table", about=TABLES),
        Query(
            "SELECT * FROM {table} LIMIT 5",
            over="table",
            about="the rows of the {table} table",
            record="{table}",
            fields="column",
        ),
        Query("SELECT COUNT(*) FROM {table}", over="table", ask="How many rows does the {table} table have?"),
        # a table's columns: the standard's catalogue (information_schema), and SQLite's, which lacks one
        Query(
            "SELECT column_name FROM information_schema.columns WHERE table_name = '{table}'",
            over="table",
            lists="column",
            about="the columns of the {table} table",
        ),
        Query(
            "SELECT name FROM pragma_table_info('{table}')",
            over="table",
            lists="column",
            about="the columns of the {table} table",
        ),
        Query(
            "SELECT MAX({column}) FROM {table}",
            over="column",
            ask="What is the largest value of {column} in the {table} table?",
            text_ask="Which {column} in the {table} table comes last in alphabetical order?",
            date_ask="What is the latest date in the {column} column of the {table} table?",
        ),
        Query(
            "SELECT MIN({column}) FROM {table}",
            over="column",
            ask="What is the smallest value of {column} in the {table} table?",
            text_ask="Which {column} in the {table} table comes first in alphabetical order?",
            date_ask="What is the earliest date in the {column} column of the {table} table?",
        ),
        Query(
            "SELECT COUNT(DISTINCT {column}) FROM {table}",
            over="column",
            ask="How many different values of {column} does the {table} table have?",
        ),
    )
}
# text in a query's shape, whether or not its meaning is known: what a task never pastes
SHAPED = {
    "sql": re.compile(
        r"\s*(?:select\s+(?:.+\sfrom\s.+|[^a-z]*\d[^a-z]*)|with\s+\w+\s+as\s*\(.+|show\s+(?:tables|databases|columns)\b.*"
        r"|pragma\s+\w+.*|insert\s+into\s.+|update\s+\w+\s+set\s.+|delete\s+from\s.+"
        r"|(?:create|drop|alter)\s+(?:table|view|index)\s.+)",
        re.IGNORECASE | re.DOTALL,
    )
}
IDENTIFIER = re.compile(r"[A-Za-z_]\w{0,63}")  # a name a query may be composed over

RATE_LIMITED = re.compile(
    r"\b(?:429|rate[ -]?limit(?:ed)?|too many requests|retry[ -]after|slow down)\b", re.IGNORECASE
)
# "must be one of ('pending', 'done')", "valid values are: a, b", "expected one of [x, y]"; or a list the error
# names by its kind ("no column 'x'; the columns: name, team, hours": `kind`, where the list must have two or more
# short items to be one)
ALLOWED_VALUES = re.compile(
    r"\b(?:one of|(?:valid|allowed|possible|supported) (?:values|options|choices)(?: are)?|choose from"
    r"|(?P<kind>[A-Za-z]+s)(?: are)?:)"
    r"\s*:?\s*[\[({]?(?P<items>[^\n\])}]{1,300})",
    re.IGNORECASE,
)

# the last item of a list that says it goes on ("(mean, median, mode, stdev, etc.)"): no item of it
LIST_GOES_ON = frozenset({"etc", "etcetera"})

# the words just before a quoted value that forbid it or say there is none of it, a negation at most three words back
# ("must not start with "-"", "cannot be 'root'", "never '..'", "has no attribute 'inv'", "Unknown column 'x'"): no
# example to send, as a value the text offers is
FORBIDDING = re.compile(
    r"\b(?:not|never|cannot|can't|mustn't|shouldn't|don't|doesn't|no|unknown|invalid|unsupported|unrecognized"
    r"|undefined)\s+(?:[\w-]+\s+){0,3}$",
    re.I,
)
# ... and the words just after one that say there is none of it ("name 'f' is not defined", "'x' not found", "Table
# 'x' doesn't exist", "'x' is not a valid date"), or that it is a type of the program's that failed ("'float' object
# has no attribute 'get'", "'NoneType' object is not subscriptable": Python's, of a value of the wrong kind)
DENIED = re.compile(
    r"\s*(?:(?:is|was|are|does|do|did|could|can)\s*)?(?:not|n't)\s+(?:be\s+)?"
    r"(?:found|defined|exists?|recogni[sz]ed|supported|valid|allowed|known|a|an)\b"
    r"|\s+object\s+(?:has\s+no|is\s+not)\b",
    re.I,
)


_COMPOSED_KINDS = frozenset(k for queries in QUERIES.values() for q in queries for k in (q.over, q.lists) if k)


def listed_kind(tool: str) -> str | None:
    """The kind of name a tool named for listing them gives, where `QUERIES` are composed over that kind
    (`list_tables` -> "table"; not `describe_table`, which names one)."""
    words = words_of(tool)
    kind = singular(words[-1]) if words else None
    return kind if kind in _COMPOSED_KINDS and kind != words[-1] else None


# the plurals no "s" makes ("children" of a board's item: "the child "Offline mode"", not "the children ...")
IRREGULAR_PLURALS = {
    "children": "child",
    "people": "person",
    "men": "man",
    "women": "woman",
    "indices": "index",
    "matrices": "matrix",
    "vertices": "vertex",
    "analyses": "analysis",
}
_IRREGULAR_SINGULARS = {one: many for many, one in IRREGULAR_PLURALS.items()}


def singular(noun: str) -> str:
    """A plural's "s" taken off ("entries" -> "entry", "branches" -> "branch"), not the end of "status", "analysis"
    or "address"; the plurals no "s" makes as `IRREGULAR_PLURALS` has them ("children" -> "child")."""
    if noun in IRREGULAR_PLURALS:
        return IRREGULAR_PLURALS[noun]
    if noun in ("series", "species"):
        return noun
    if noun.endswith("ies") and len(noun) > 4:
        return noun[:-3] + "y"
    if noun.endswith(("ches", "shes", "xes", "sses")):
        return noun[:-2]
    return noun[:-1] if noun.endswith("s") and not noun.endswith(("ss", "us", "is")) else noun


def plural(noun: str) -> str:
    """A noun's plural, by the regular rules ("branch" -> "branches", "entry" -> "entries") or as
    `IRREGULAR_PLURALS` has it ("child" -> "children")."""
    if noun in _IRREGULAR_SINGULARS:
        return _IRREGULAR_SINGULARS[noun]
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in set("aeiou"):
        return noun[:-1] + "ies"
    return noun + "s"


def participle(field: str) -> bool:
    """Whether a field is a state a thing is in ("modified: TODO.md", "deleted: a.txt"), said as one ("What is
    modified in the git status?"), not as a thing it has ("the modified of")."""
    last = field.split(" ")[-1]
    return len(last) > 4 and last.endswith("ed") and last not in NOT_PARTICIPLES


def head(field: str) -> str:
    """A field's head word, the one before what it is in or of ("maximum size in megabytes" is a size, "type of
    customer" a type), else its last."""
    words = field.split(" ")
    return next((words[i - 1] for i, w in enumerate(words) if i and w in LINKS), words[-1])


def who(field: str) -> str:
    """ "Who" for a field that names a person ("author"), by its `head` ("type of customer" names a type), "What"
    otherwise."""
    return "Who" if head(field) in PEOPLE else "What"


def spoken(name: str) -> str:
    """A key as a task says it, its words written out: `desc` -> "description", `max_qty` -> "maximum quantity",
    a unit it ends in as one, `weight_g` -> "weight in grams", and without a word naming a program's type of it
    (`TYPE_WORDS`): `range_str` -> "range"."""
    words = words_of(name)
    if len(words) > 1 and words[-1] in TYPE_WORDS:
        words.pop()
    unit = f" in {UNITS[words.pop()]}" if len(words) > 1 and words[-1] in UNITS else ""
    return " ".join(ABBREVIATIONS.get(w, w) for w in words) + unit


def data_type(value: Any) -> bool:
    """Whether a value names a data type (`DATA_TYPES`), its size or precision aside ("VARCHAR(255)", "DECIMAL(10,
    2)")."""
    return isinstance(value, str) and re.sub(r"\s*\(.*\)$", "", value.strip()).lower() in DATA_TYPES


def unix_time(key: str, value: Any) -> bool:
    """Whether a value is a count of seconds since 1970 under a key of time (`last_scan_time`: 1796218191.2,
    `created`): a time no one reads, or asks for, as a number."""
    number = as_number(value) if isinstance(value, (int, float, str)) else None
    return number is not None and 1e9 <= number < 1e10 and bool(WHEN & set(words_of(key)))


def counts(key: str) -> bool:
    """Whether a key names how many there are (`count`, `totalCount`, `num_rows`): a listing's total beside it."""
    return bool(COUNTING & set(words_of(key)))


def counts_of(key: str) -> bool:
    """Whether a key whose value is a whole number says how many of a thing there are, not which one: it `counts`,
    or it is a plural with a word beside it ("Files tracked", `total_files`; not `ids` alone, a list of them), not a
    code's (`permissions`)."""
    words = words_of(key)
    return counts(key) or len(words) > 1 and any(singular(w) != w and w not in NOT_COUNTS for w in words)


# the first and the last of a range, as parameters are named: `start_line`/`end_line`, `from_date`/`to_date`
BOUNDS = (
    ("start", "end"),
    ("begin", "end"),
    ("from", "to"),
    ("since", "until"),
    ("min", "max"),
    ("minimum", "maximum"),
    ("low", "high"),
    ("lower", "upper"),
    ("first", "last"),
)

BOUND_WORDS = frozenset(w for pair in BOUNDS for w in pair)


def bound_pairs(names: Sequence[str]) -> list[tuple[str, str]]:
    """The pairs of `names` that name the two ends of one range (`BOUNDS`): the same words but one, that one a
    range's first and last (`start_line`, `end_line`; `from`, `to`), each pair (lower, upper)."""
    words = {n: words_of(n) for n in names}
    pairs = []
    for low in names:
        for high in names:
            a, b = words[low], words[high]
            differ = [(x, y) for x, y in zip(a, b) if x != y]
            if len(a) == len(b) and len(differ) == 1 and differ[0] in BOUNDS:
                pairs.append((low, high))
    return pairs


def words_of(name: str) -> list[str]:
    """`getItemById` / `get_item-by id` -> ['get', 'item', 'by', 'id']; digits stay with the letters before them, a
    name's part (`hash_md5` -> ['hash', 'md5'], `sha3_224` -> ['sha3', '224'], not "md 5")."""
    return [w.lower() for w in re.findall(r"[A-Z]?[a-z]+(?:\d+[a-z]*)*|[A-Z]+\d*(?![a-z])|\d+", name)]


# a shape's words that another sense shares: a parameter named so is of the shape only where its description or
# its tool's says so with another of the shape's words ("query" of "a SQL query", not of "the search query")
AMBIGUOUS = {"sql": frozenset({"query"}), "code": frozenset({"code", "source"})}


def _rank(shape: str, name: str, description: str, around: str = "") -> int:
    """0: the parameter's name has a word of the shape's, 1: its description has one, 2: neither; a word of the
    shape's that another sense shares (`AMBIGUOUS`) counts only beside another in the description or `around` (its
    tool's description); a plural as its singular (`paths`, a list of paths)."""
    strong = PROBES[shape][1] - AMBIGUOUS.get(shape, frozenset())
    named, said = ({form for w in words_of(text) for form in (w, singular(w))} for text in (name, description))
    if named & strong or named & PROBES[shape][1] and (said | set(words_of(around))) & strong:
        return 0
    return 1 if said & strong else 2


def described_as(shape: str, name: str, description: str, around: str = "") -> bool:
    """Whether a parameter's name or description has a word of a `PROBES` shape's ("uri" of "url"); `around`, its
    tool's description, tells an ambiguous word's sense (`AMBIGUOUS`)."""
    return _rank(shape, name, description, around) < 2


def written(name: str) -> bool:
    """Whether a parameter is named as text a person writes into a store (`WRITTEN`: a name, a text, a kind of
    thing, tags)."""
    return any(_rank(shape, name, "") == 0 for shape in WRITTEN)


def probes(
    name: str,
    description: str,
    described: bool = False,
    around: str = "",
    making: Collection[str] = (),
    worked: Collection[str] = (),
) -> list[str]:
    """The dictionary's values, those of shapes the parameter is described with first (its name's
    words, then its description's, or a value of theirs it was sent `worked`: one that took "test" takes a plain
    word, "hello world" too), then a plain word, then the rest in the dictionary's order; only the first where
    `described`; before them, for a tool that may write, the values of those shapes that make records (`MAKING`) of
    a kind in `making` (those a listing found none of)."""
    took = set(worked)
    ranks = {
        shape: min(_rank(shape, name, description, around), 1 if took & set(values) else 2)
        for shape, (values, _) in PROBES.items()
    }
    order = sorted(
        (s for s in PROBES if ranks[s] < 2 or not described), key=lambda s: (ranks[s], ranks[s] == 2 and s != PLAIN)
    )
    made = [v for s in order if ranks[s] < 2 and s in MAKING and MAKING[s][0] in making for v in MAKING[s][1].values()]
    return made + [value for shape in order for value in PROBES[shape][0]]


# formatted shapes whose values the server's own are better than the dictionary's: its paths in plain view, its ids
SERVED = ("path", "number")


def named_probes(name: str, around: str = "") -> list[str]:
    """The dictionary's values of the shapes of a form of their own (`FORMATTED`, but `SERVED`) that a parameter's
    name says it takes: `code` beside a tool that runs Python is sent a program, `expression` an expression, before
    anything a result or an error gave, as a value of the shape its schema's examples give is."""
    return [
        value
        for shape in FORMATTED
        if shape not in SERVED and _rank(shape, name, "", around) == 0
        for value in PROBES[shape][0]
    ]


def composed(
    name: str, description: str, names: Mapping[str, Sequence[Mapping[str, str]]], around: str = ""
) -> list[str]:
    """`QUERIES` composed over `names` (kind -> the bindings results gave: {"table": "orders"}, {"table":
    "orders", "column": "price"}), for a parameter described as of their shape; names that are not
    identifiers are left out (a query over them would not parse)."""
    return [
        query.text.format(**binding)
        for shape, queries in QUERIES.items()
        if _rank(shape, name, description, around) < 2
        for query in queries
        if query.over is not None
        for binding in names.get(query.over, ())
        if all(IDENTIFIER.fullmatch(v) for v in binding.values())
    ]


def _pattern(query: Query) -> re.Pattern[str]:
    """A query's text as a pattern: its placeholders any identifier, its numbers any number ("LIMIT 20"),
    its spaces any spacing, its letters either case."""
    parts = re.split(r"(\{\w+\}|\d+|\s+)", query.text)
    seen: set[str] = set()
    out = []
    for part in parts:
        if re.fullmatch(r"\{\w+\}", part):
            key = part[1:-1]
            out.append(f"(?P={key})" if key in seen else rf"(?P<{key}>[A-Za-z_]\w*)")
            seen.add(key)
        elif part.isdigit():
            out.append(r"\d+")
        elif part.isspace():
            out.append(r"\s+")
        else:
            out.append(re.escape(part))
    return re.compile(r"\s*" + "".join(out) + r"\s*;?\s*", re.IGNORECASE)


_PATTERNS = [(query, _pattern(query)) for queries in QUERIES.values() for query in queries]


def shaped(value: object) -> bool:
    """Whether a value is text in a query's shape (an SQL statement), known or not."""
    return isinstance(value, str) and any(p.fullmatch(value) for p in SHAPED.values())


def known(value: object) -> tuple[Query, dict[str, str]] | None:
    """The known query (`QUERIES`) a value is, with the names it was composed over; None for any other."""
    if isinstance(value, str):
        for query, pattern in _PATTERNS:
            if m := pattern.fullmatch(value):
                return query, m.groupdict()
    return None


def _words(binding: Mapping[str, str]) -> dict[str, str]:
    """Names as a person writes them in a question: `product_id` -> "product id"."""
    return {k: " ".join(words_of(v)) or v for k, v in binding.items()}


def question(value: object, answer: object, dated: bool = False) -> str | None:
    """The question a known query's one-value result (`answer`, `dated` where it is a date) answers, in words; None
    where it has none."""
    found = known(value)
    if found is None:
        return None
    query, binding = found
    text = isinstance(answer, str) and as_number(answer) is None
    if text and not dated and query.text_ask and re.fullmatch(r"\s*[-+]?\d[\d,]*\.\d+\s*[A-Za-z]{0,4}\s*", str(answer)):
        return None  # (an amount kept as text, "2500.00 EUR": which comes first in alphabetical order, no one asks)
    ask = ((dated and query.date_ask) or query.text_ask or query.ask) if text else query.ask
    return ask.format(**_words(binding)) if ask else None


def _said(value: object, wording: str) -> str | None:
    """A known query's `wording` (a `Query` field) with the names it was composed over; None where it has none."""
    found = known(value)
    template = getattr(found[0], wording) if found is not None else None
    return template.format(**_words(found[1])) if template else None


def about(value: object) -> str | None:
    """What a known query's result holds, in words ("the columns of the orders table"); None where unknown."""
    return _said(value, "about")


def record_of(value: object) -> str | None:
    """What one record of a known query's result is ("products": a row of that table); None where unknown."""
    return _said(value, "record")


def stated(value: object) -> list[str]:
    """The names a known query's question states, as it words them ("orders", "product id")."""
    found = known(value)
    return list(_words(found[1]).values()) if found is not None else []


def misplaced_path(value: Any, key: str = "") -> bool:
    """Whether a value holds a path where nothing named a path is asked for (a relation "to /srv/memory.jsonl", the
    server's own file, which exploring sends anywhere first): no one writes or asks that."""
    if isinstance(value, dict):
        return any(misplaced_path(v, str(k)) for k, v in value.items())
    if isinstance(value, list):
        return any(misplaced_path(v, key) for v in value)
    places = ("path", "url", "glob")  # (and where a move starts or ends: `source`, `destination`)
    return (
        isinstance(value, str)
        and value.startswith("/")
        and not any(described_as(p, key, "") for p in places)
        and not (set(words_of(key)) & set(ENDS))
    )
