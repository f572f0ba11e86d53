"""Reading a tool's result as data: the records it holds and their fields, whatever the server
printed (structured content, JSON, a Python literal, a unified diff, an `a | b | c` listing, a CSV table, `key: value`
lines): the text its text blocks hold (`ToolOutcome.data_text`, `ExploredCall.data`), never the client's rendering of
an image.
Exploration feeds the values on to later calls (mcprl.scenarios.explore); grounding asks about them
(mcprl.scenarios.grounded)."""

from __future__ import annotations

import ast
import contextlib
import csv
import datetime
import json
import re
from collections import Counter
from typing import Any

from partial_json_parser import Allow
from partial_json_parser import loads as loads_partial

from mcprl.checks import ISO_DATE, labelled, labelled_lines, same_value
from mcprl.scenarios.lexicon import ERROR_FIELDS, IRREGULAR_PARTICIPLES, LINKS, NAME_KEYS, OUTCOMES, participle
from mcprl.scenarios.value_sources import shape_of
from mcprl.tools.convert import HTML_BREAK, reports_error, untruncated

# seconds or milliseconds since 1970 ("last_scan_time": 1796145733)
UNIX_TIME = re.compile(r"(?<![\w.])(\d{10}|\d{13})(?:\.\d+)?(?![\w.])")
# a date written out with its weekday, as JavaScript's `Date.toString` and mail headers write one ("Wed Dec 02 2026
# 04:05:11", "Wed, 02 Dec 2026 04:05:11"), its time with it (not its zone's offset)
MONTHS = "jan feb mar apr may jun jul aug sep oct nov dec".split()
WRITTEN_TIME = re.compile(
    r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? (?:(?P<day>\d{1,2}) (?P<month>[A-Z][a-z]{2,8})"
    r"|(?P<month2>[A-Z][a-z]{2,8}) (?P<day2>\d{1,2})),? (?P<year>\d{4})(?:,? \d{1,2}:\d{2}(?::\d{2})?)?"
)
# a time said as how long before or after now ("in 3 months", "2 years ago", "yesterday"): read off the clock, though
# it states no time to cut from a result (the years of "239 years ago" are what a call sent 1788 gets)
RELATIVE_TIME = re.compile(
    r"\b(?:in (?:a|an|a few|\d+(?:\.\d+)?) (?:second|minute|hour|day|week|month|year)s?"
    r"|(?:a|an|a few|\d+(?:\.\d+)?) (?:second|minute|hour|day|week|month|year)s? (?:ago|from now)"
    r"|yesterday|tomorrow)\b",
    re.I,
)
CLOCK_SPAN = datetime.timedelta(hours=36)  # a date this near now may be the server's clock
NULL_TEXTS = {"none", "null", "nil", "undefined", "nan"}  # a missing value as programs write it out
# A result that says it found nothing: "No matches found", "Task not found", "[]", "null", a program's empty values
# ("set()", "NotImplemented", "undefined")
NOTHING = re.compile(
    r"\W*(?:no\b.{0,30}\b(?:found|match(?:es|ed)?|results?)|nothing(?: found)?|(?:\S+ ){0,4}not found"
    # ... or says there are none of a kind of thing ("No footnotes in document", "No tasks yet")
    r"|no [a-z]+s(?: (?:in|for|on|at|with|yet|available|left)\b[^.\n]{0,40})?"
    r"|(?:none|null|undefined|nan|notimplemented)\b|set\(\)|\[\]|\{\}|\(\))\W*",
    re.I,
)
# the shapes of ids, letters and digits joined: one found in words ("SKU-3486", "A4", "order_17" in a task), and a
# value that is one whole, long enough not to be a code of a few characters and not a date (a commit's hash, "ws-101",
# a UUID, "v1.2.0")
ID_LIKE = re.compile(r"\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9][\w-]*\b")
ID_FORM = re.compile(r"(?!\d{4}-\d\d-\d\d)(?=[^\s]*\d)(?=[^\s]*[A-Za-z])[\w.:/-]{6,}")
MESSAGE = re.compile(
    r"[^\n|]*\w \w[^\n|]*[.!]"
)  # a result that is one sentence ("No items match."): a message, not data
# a text that lists names by commas alone ("blake2b, blake2s, md5, sha1": the algorithms a server has)
ENUMERATION = re.compile(r"[\w.+-]+(?:, ?[\w.+-]+){2,}")
# a file's name, by its extension of a few letters or digits ("Garden plan.md", "Q3 report.pdf"): a file, no folder
FILE_NAME = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,4}$")


def clock_spans(text: str, now: datetime.datetime | None = None) -> list[tuple[int, int]]:
    """Where a text states a time of about `now` (an ISO date, with a time or not, but its zone's offset, one written
    out with its weekday, or a Unix time in seconds or milliseconds): the server's clock, as far as a text tells."""
    now = now or datetime.datetime.now(datetime.UTC)
    spans = []
    for m in ISO_DATE.finditer(text):
        try:
            when = datetime.datetime(int(m[1]), int(m[2]), int(m[3]), tzinfo=datetime.UTC)
        except ValueError:
            continue
        if abs(when - now) <= CLOCK_SPAN:  # (not its offset: the zone a time is given in is no clock's)
            offset = re.search(r"(?:Z|[+-]\d{2}:?\d{2})$", m[0]) if ":" in m[0] else None
            spans.append((m.start(), m.end() - (len(offset[0]) if offset else 0)))
    for m in WRITTEN_TIME.finditer(text):
        try:
            day, month = int(m["day"] or m["day2"]), MONTHS.index((m["month"] or m["month2"])[:3].lower()) + 1
            when = datetime.datetime(int(m["year"]), month, day, tzinfo=datetime.UTC)
        except ValueError:
            continue
        if abs(when - now) <= CLOCK_SPAN:
            spans.append(m.span())
    for m in UNIX_TIME.finditer(text):
        when = datetime.datetime.fromtimestamp(float(m[0]) / (1000 if len(m[1]) == 13 else 1), datetime.UTC)
        if abs(when - now) <= CLOCK_SPAN:
            spans.append(m.span())
    return sorted(spans)


def reports(text: str) -> bool:
    """Whether a one-line result says what was done ("Task created successfully with ID: 1", "Task 2 updated"): a
    message whose words are the server's, not values of its data to pass on."""
    words = [w.strip(".,:;!").lower() for w in text.split()]
    return (
        "\n" not in text.strip()
        and len(words) >= 3
        and any(participle(w) or w in IRREGULAR_PARTICIPLES for w in words[1:])
    )


def failed_items(text: str, args: dict[str, Any]) -> set[str]:
    """The items of the call's list arguments that its result says failed: a line naming one that reports an error
    (`reports_error`: "Sun Mar 10 2024: Error - ENOENT: no such file" of a file read among others)."""
    items = {str(v) for value in args.values() if isinstance(value, list) for v in value if str(v).strip()}
    if not items:
        return set()
    # (less the mark the client puts before an error's text: "Error: a.txt: Error - ENOENT"; lines joined by HTML's
    # line breaks read as lines, as the server's text is)
    lines = [
        re.sub(r"^error:\s*", "", line.strip(), flags=re.IGNORECASE) for line in HTML_BREAK.sub("\n", text).splitlines()
    ]
    return {
        item
        for item in items
        for line in lines
        if (said := re.match(rf"{re.escape(item)}\s*:\s*(.*)", line)) is not None
        and reports_error(said[1])
        or f"'{item}'" in line
        and reports_error(line)
    }


def says_done(text: Any) -> bool:
    """Whether a write's reply, or a field of it, says no more than that the write was done: words and no number,
    ending as a participle or an outcome ("Insight added", "All caches cleared", "success"), or a report of it
    (`reports`). Every write of the tool says it alike: it is no fact of the state the write left."""
    if not isinstance(text, str):
        return False
    words = [w.strip(".,:;!").lower() for w in text.split()]
    return (
        bool(words)
        and not re.search(r"\d", text)
        and (participle(words[-1]) or words[-1] in IRREGULAR_PARTICIPLES or words[-1] in OUTCOMES or reports(text))
    )


def found_nothing(text: str, given: dict[str, Any] | None = None) -> bool:
    """Whether a result says it found nothing: no text, "No matches found", or one short line that begins so
    ("no items match 'zzzz'"), or a JSON object holding, at any depth, nothing but empty lists, zeros, flags,
    sentences and the values the call was `given` said back (`{"success": true, "commits": [], "totalCount": 0,
    "note": "No commits matched the applied filters."}`, `{"data": {"object_type": "column", "count": 0,
    "results": []}}` of a search for columns), or one whose one text says so (`{"message": "No matches found for 'x'
    in /srv"}`)."""
    text = text.strip()
    return (
        says_none(text)
        or text.startswith("{")
        and _holds_nothing(text, {str(v) for v in (given or {}).values() if isinstance(v, (str, int, float))})
    )


def says_none(text: str) -> bool:
    """Whether a text says only that nothing was found: none at all, "No matches found", or one short line that
    begins so ("No matches found for 'zzzz' in /srv/db")."""
    text = text.strip()
    return (
        not text
        or NOTHING.fullmatch(text) is not None
        or ("\n" not in text and len(text) <= 120 and NOTHING.match(text) is not None)
    )


def _holds_nothing(text: str, given: set[str]) -> bool:
    """Whether a JSON object holds nothing found: an empty list or text, the rest zeros, flags, sentences and
    `given` values, in it or in the objects it holds."""
    try:
        data = json.loads(text)
    except ValueError:
        return False
    if not isinstance(data, dict):
        return False

    def leaves(d: dict[str, Any]) -> list[Any]:
        return [leaf for v in d.values() for leaf in (leaves(v) if isinstance(v, dict) and v else [v])]

    def blank(v: Any) -> bool:  # (an empty text, list or object, a zero)
        return v in ("", [], {}) or isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0

    def said(v: Any) -> bool:  # (a flag, a sentence, a value the call was given)
        return isinstance(v, bool) or isinstance(v, str) and (MESSAGE.fullmatch(v.strip()) is not None or v in given)

    def none_found(v: Any) -> bool:  # ("No such task found", "No matches found for 'zzzz' in /srv/db")
        return isinstance(v, str) and v.strip() != "" and says_none(v)

    values = leaves(data)
    rest = [v for v in values if not blank(v) and not said(v)]
    if not rest:
        return any(v in ("", [], {}) for v in values) or any(map(none_found, values))
    # ... or one that says so, beside codes that say it again (`{"status": "task_not_found", "message": "No such task
    # found"}`)
    code = re.compile(r"[a-z]+(?:[_-][a-z]+)*")
    return any(map(none_found, values)) and all(none_found(v) or isinstance(v, str) and code.fullmatch(v) for v in rest)


def result_data(text: str, structured: Any) -> Any:
    """The data a result holds: its structured content (unless that only wraps plain text:
    `{"result": "..."}`, `{"content": "..."}`), else its text read as JSON or as a Python literal
    (servers that print `repr()`); None for text."""
    if structured is not None and not (
        isinstance(structured, dict) and len(structured) == 1 and isinstance(next(iter(structured.values())), str)
    ):
        return structured
    try:
        return json.loads(text)
    except ValueError:
        pass
    opening = text.lstrip()[:1]
    if opening in ("[", "{") and (cut := server_text(text))[1]:
        # JSON the client cut: its complete values (no string or number cut short, no object or list closed
        # early but the outer ones), and of a list not its last item, which may have been cut mid-record
        with contextlib.suppress(ValueError, RecursionError):
            data = loads_partial(cut[0], Allow.OBJ | Allow.ARR)
            return data[:-1] if isinstance(data, list) else data
    if opening in ("[", "{", "("):
        try:
            return ast.literal_eval(text.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    return None


def server_text(text: str) -> tuple[str, bool]:
    """The server's text of a result (`ToolOutcome.data_text`: its text blocks, never a placeholder of ours
    for an image or a blob) without our truncation marker, and whether the client cut it."""
    return untruncated(text)


def flatten(data: Any, key: str = "") -> list[tuple[str, Any]]:
    """(field, value) pairs of the scalars in `data`, each under its nearest key; not the text of a field that says
    what went wrong (`lexicon.ERROR_FIELDS`: `"error": "File does not exist: 4096"`), a count of errors as it is, nor
    another field's that says it again (a validator's `"hint": "<the error>. Try: ..."`)."""
    if isinstance(data, dict):
        said = [
            v.strip() for k, v in data.items() if str(k).lower() in ERROR_FIELDS and isinstance(v, str) and v.strip()
        ]
        return [
            pair
            for k, v in data.items()
            for pair in flatten(v, str(k))
            if not (
                isinstance(pair[1], str)
                and (str(k).lower() in ERROR_FIELDS or any(pair[1].strip().startswith(e) for e in said))
            )
        ]
    if isinstance(data, (list, tuple)):
        return [pair for v in list(data)[:50] for pair in flatten(v, key)]
    if isinstance(data, (str, int, float)) and not isinstance(data, bool) and str(data).strip():
        return [(key, data)]
    return []


def list_keys(data: Any) -> set[str]:
    """The keys of `data` (JSON) that map to a list somewhere in it: `flatten` gives each item a list holds under its
    key (`"values": [[40000]]` -> ("values", 40000)), which is one of them, not how many there are."""
    if isinstance(data, dict):
        return {str(k) for k, v in data.items() if isinstance(v, list)} | {
            k for v in data.values() for k in list_keys(v)
        }
    if isinstance(data, list):
        return {k for v in data for k in list_keys(v)}
    return set()


def data_key(key: str) -> bool:
    """Whether an object's key is a value, not the name of a field: a file's name, a path, an address, a number, a
    share ("shop.xlsx": 5627, "/srv/a", "50%", "2024-03"), or a missing one as a program writes it (`{"A": 1, "None":
    2}` of counts by priority): what it maps to has no name a task could ask it by."""
    return bool(re.search(r"\w\.\w|[/\\@%]|^\W*\d", key)) or key.strip().lower() in NULL_TEXTS


def answer_paths(data: Any, answer: Any, path: str = "") -> list[str]:
    """The dotted paths (mcprl.checks.field_at's) of the values in JSON `data` that are `answer` (`same_value`)."""
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in answer_paths(v, answer, f"{path}.{k}" if path else str(k))]
    if isinstance(data, list):
        return [p for i, v in enumerate(data) for p in answer_paths(v, answer, f"{path}.{i}" if path else str(i))]
    return [path] if data is not None and same_value(data, answer) else []


CSV_HEADER = re.compile(r"[A-Za-z_][\w ]{0,39}")  # a CSV table's column name


def csv_rows(lines: list[str]) -> list[list[tuple[str, Any]]] | None:
    """The rows of a CSV table, each cell under its column's name ("name,qty\napple,3" -> [[("name", "apple"),
    ("qty", "3")]]): a header of names and at least two rows, every line as many cells (two or more); else None."""
    try:
        table = list(csv.reader(lines))
    except csv.Error:  # a NUL byte, a cell past csv's size limit: no table
        return None
    if len(table) < 3:
        return None
    header, *rows = table
    if (
        len(header) < 2
        or len(set(header)) < len(header)
        or not all(CSV_HEADER.fullmatch(h.strip()) for h in header)
        or any(len(row) != len(header) for row in rows)
    ):
        return None
    return [[(h.strip(), cell.strip()) for h, cell in zip(header, row) if cell.strip()] for row in rows]


MARKDOWN_ROW = re.compile(r"\|(.*)\|")  # a row of a Markdown table: "| Oslo | 3 |"
MARKDOWN_RULE = re.compile(r":?-{3,}:?")  # a cell of the line under its header: "---", ":--:"


def markdown_rows(lines: list[str]) -> list[list[tuple[str, Any]]] | None:
    """The rows of the Markdown tables in a text (a document converted, a report), each cell under its column's name
    ("| city | nights |\n| --- | --- |\n| Oslo | 3 |" -> [[("city", "Oslo"), ("nights", "3")]]), the text around
    them left out; None where it has none. A table is a header row, the rule under it, and the rows after."""
    rows: list[list[tuple[str, Any]]] = []
    split = [
        [cell.strip() for cell in m[1].split("|")] if (m := MARKDOWN_ROW.fullmatch(line.strip())) else None
        for line in lines
    ]
    for at in range(1, len(split)):
        header, rule = split[at - 1], split[at]
        if header is None or rule is None or len(rule) != len(header) or not all(map(MARKDOWN_RULE.fullmatch, rule)):
            continue
        for row in split[at + 1 :]:
            if row is None or len(row) != len(header):
                break
            rows.append([(h, cell) for h, cell in zip(header, row, strict=True) if cell])
    return rows or None


LIST_MARK = re.compile(r"^[-*+•]\s+")  # the mark of an item of a bulleted list: "- ", "* "
# the rule under a plain table's header, as a database's client prints one: "------", "-----+------", "--- ----"
TABLE_RULE = re.compile(r"[-+| ]*-{3,}[-+| ]*")


def ruled_rows(lines: list[str]) -> list[list[tuple[str, Any]]] | None:
    """The rows of a plain table, each cell under its column's name: a header, a rule of dashes under it, and rows
    divided as the header is (by "|", by commas, by runs of spaces, or one column), as a database's client prints a
    query's result ("MAX(price)\n----------\n999.0", "id, name\n--------\n1, Ada"); the text around it left out,
    the rows up to the first that does not fit the header. None where it has none, or more than one rule: parts
    that rules divide ("a.md\n---\nb.md\n---\nc.md")."""
    ruled = [at for at, line in enumerate(lines) if TABLE_RULE.fullmatch(line.strip())]
    if len(ruled) != 1 or ruled[0] == 0:
        return None
    at = ruled[0]
    above = lines[at - 1].strip()
    # (not a line naming what follows, "Apollo.md:", nor a field above a rule, "status: active\n---")
    if labelled(above) is not None or above.endswith(":"):
        return None

    def split(line: str) -> list[str]:  # (divided as the header is)
        if "|" in above:
            return [c.strip() for c in line.strip().strip("|").split("|")]
        if "," in above:
            return [c.strip() for c in next(csv.reader([line]), [])]
        return re.split(r"\s{2,}|\t", line.strip())  # (columns spaces pad apart, or one: "COUNT(DISTINCT city)")

    header = split(above)
    if not all(header) or len(set(header)) < len(header):
        return None
    rows: list[list[tuple[str, Any]]] = []
    for line in lines[at + 1 :]:
        cells = split(line)
        if len(cells) != len(header) or labelled(line.strip()) is not None:
            break
        rows.append([(h, cell) for h, cell in zip(header, cells, strict=True) if cell])
    return rows or None


RULE = re.compile(r"([-=*_~])\1{2,}")  # a line that divides a text's parts: "---", "==="
HUNK = re.compile(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def diff_records(lines: list[str]) -> list[list[tuple[str, Any]]] | None:
    """The files of a unified diff (git's, `diff -u`'s), each a record of its path and the lines it adds
    and removes ("+++ b/TODO.md\n@@ -1,2 +1,3 @@\n+- support Fahrenheit" -> [[("file", "TODO.md"),
    ("added", "- support Fahrenheit")]]), each hunk read for as many lines as its header counts. None
    where the lines hold no diff, or where a labelled line comes before it (a commit's "Author: Ann
    Lee"): that result is a record with a diff in it, read as its lines."""

    def path(header: str) -> str:
        name = header[4:].split("\t")[0].strip()  # (diff -u puts a date after a tab)
        return name[2:] if name[:2] in ("a/", "b/") else name

    records: list[list[tuple[str, Any]]] = []
    before, old, new = "", 0, 0  # the file's old path; the lines left of the hunk, old and new
    for line in lines:
        if old > 0 or new > 0:
            mark, content = line[:1], line[1:].strip()
            if mark in ("", " "):  # a line of context (blank: an empty one) in both
                old, new = old - 1, new - 1
            elif mark in "+-":  # ("\ No newline at end of file" counts in neither)
                old, new = (old, new - 1) if mark == "+" else (old - 1, new)
                if content:
                    records[-1].append(("added" if mark == "+" else "removed", content))
        elif line.startswith("--- "):
            before = path(line)
        elif line.startswith("+++ "):
            after = path(line)
            records.append([("file", before if after == "/dev/null" else after)])  # a deleted file: its old path
        elif (hunk := HUNK.match(line)) and records:
            old, new = (int(n) if n is not None else 1 for n in hunk.groups())
        elif not records and labelled(line) is not None:
            return None
    return records or None


def counted(text: str, structured: Any = None) -> int | None:
    """How many values a listing of one kind of value gives: a result of one record whose values share one key
    (or none) and differ; None for any other result, or one the client cut (its count is not the server's)."""
    if server_text(text)[1]:
        return None
    records = result_records(text, structured)
    if len(records) != 1 or len({k for k, _ in records[0]}) != 1:
        return None
    values = [str(v) for _, v in records[0]]
    return len(values) if len(set(values)) == len(values) else None


def listing_size(data: Any) -> int:
    """How many records a result's listing holds: the listing an object wraps, else the most times one key comes in
    an object at any depth (a statement's rows two objects deep); 0 for any other result."""
    if (wrapped := wrapped_listing(data)) is not None:
        return len(wrapped[1])
    return max(Counter(k for k, _ in flatten(data)).values(), default=0) if isinstance(data, dict) else 0


def listing_of(value: Any) -> bool:
    """Whether a value is a listing of records: a list of objects, not empty."""
    return isinstance(value, list) and bool(value) and all(isinstance(d, dict) for d in value)


def one_listed(data: Any) -> dict[str, Any] | None:
    """The one record of the one listing an object holds at any depth, where that listing holds one
    (`{"data": {"count": 1, "results": [{"name": "PRIMARY", "table": "employee"}]}}` -> the index PRIMARY); None
    otherwise."""
    found: list[list[dict[str, Any]]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for v in value.values():
                if listing_of(v):
                    found.append(v)
                else:
                    walk(v)

    walk(data)
    return found[0][0] if len(found) == 1 and len(found[0]) == 1 else None


def wrapped_listing(data: Any) -> tuple[str, list[dict[str, Any]]] | None:
    """The listing an object wraps, with its key: its one list of objects, where all else it holds is about the
    listing (a total, a page, a flag, a note, an object of properties: `{"commits": [...], "totalCount": 1,
    "success": true}`, `{"sheets": [...], "doc_properties": {...}}`), so that no
    record takes the wrapper's fields for its own and the key says what each is (a commit); None for an object that
    is a record itself, holding a list (`{"name": "Ann", "orders": [...]}`)."""
    if not isinstance(data, dict):
        return None
    lists = [(k, v) for k, v in data.items() if listing_of(v)]
    rest = [v for k, v in data.items() if not any(k == key for key, _ in lists)]
    about = all(
        v is None
        or isinstance(v, (bool, int, float, dict))  # (an object of its own: the properties of what holds the listing)
        or isinstance(v, str)
        and len(v.split()) > 3
        for v in rest
    )
    return (str(lists[0][0]), lists[0][1]) if len(lists) == 1 and about else None


def column_rows(data: Any) -> list[dict[str, Any]] | None:
    """A table given as its columns' names beside its rows (`{"columns": ["name", "price"], "columnTypes": [...],
    "rows": [["bolt", 4]], "rowCount": 1}`, a database's query result; or the columns as records, each named:
    `[{"name": "date", "type": "datetime.date"}]`): the rows, each a record of those names; None for any other
    value. What is said of the columns beside them (their types) is the table's form, no record's."""
    if not isinstance(data, dict):
        return None
    names = [v for v in data.values() if isinstance(v, list) and v and all(isinstance(n, str) for n in v)]
    for v in data.values():
        if isinstance(v, list) and v and all(isinstance(n, dict) for n in v):
            key = next(
                (k for k in v[0] if str(k).lower() in NAME_KEYS and all(isinstance(n.get(k), str) for n in v)), None
            )
            names += [[n[key] for n in v]] if key is not None else []
    for head in [v for v in names if len(set(v)) == len(v)]:  # (distinct names)
        for rows in data.values():
            if isinstance(rows, list) and rows and all(isinstance(r, list) and len(r) == len(head) for r in rows):
                return [dict(zip(head, row, strict=True)) for row in rows]
    return None


def grid_rows(value: Any) -> list[dict[str, Any]] | None:
    """A table given as rows, the first naming the columns (`[["id", "product"], [1, "Steel bolt"]]`, a spreadsheet's
    range): its other rows, each a record of those names; None for any other value."""
    if not (isinstance(value, list) and len(value) > 1 and all(isinstance(row, list) for row in value)):
        return None
    head, *rows = value
    named = len(head) > 1 and all(isinstance(h, str) and h.strip() for h in head) and len(set(head)) == len(head)
    if not named or any(len(row) != len(head) for row in rows):
        return None
    # (a first row of values, not of names, where a range starts below the header: a cell written as every cell under
    # it is, digits in the same places, "2019-03-01" over "2020-06-15", names no column: "Ann Lee" is no field)
    if any(
        re.search(r"\d", h) and all(shape_of(str(row[at])) == shape_of(h) for row in rows) for at, h in enumerate(head)
    ):
        return None
    return [dict(zip(head, row, strict=True)) for row in rows]


def held_table(data: Any) -> list[list[tuple[str, Any]]] | None:
    """The rows of a table that a structured result holds as its one text of lines (a file's content read by a tool
    that says where it read, `{"stock.csv": {"content": "item,count\napple,12\npear,7", "total_lines": 3}}`): what
    a person asks of it is in the table, not in what is said of the read; None where it holds no such text, or holds
    a listing of records (one record's text of lines, a note's, is no table of the listing)."""

    def listing(value: Any) -> bool:  # (a listing of two or more records, at any depth)
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
        return listing_of(value) and len(value) > 1 or any(listing(v) for v in children)

    if listing(data):
        return None
    texts = {v for _, v in flatten(data) if isinstance(v, str) and "\n" in v.strip()}
    if len(texts) != 1:
        return None
    lines = [line for line in next(iter(texts)).splitlines() if line.strip()]
    return markdown_rows(lines) or ruled_rows(lines) or csv_rows(lines)


def result_records(text: str, structured: Any) -> list[list[tuple[str, Any]]]:
    """The records a result holds, each its (field, value) pairs: the objects of a list, a single object, the rows of
    a table under its column names (`grid_rows`, `markdown_rows`, `ruled_rows`), the files of a unified diff, the
    lines of an `a | b | c` listing
    (cells as field '', `key: value` cells by key) or of `key: value` pairs ("name: Ann, team: Sales"), or the
    `key: value` lines of a text."""
    data = result_data(text, structured)
    # a table of rows under its column names, given beside them (`column_rows`: rows of texts alone are no header), or
    # first among them, alone or beside what is said of it (`{"range": "A1:E5", "values": [[...]]}`): its rows
    grids = [g for v in (data.values() if isinstance(data, dict) else [data]) if (g := grid_rows(v)) is not None]
    if (named := column_rows(data)) is not None:
        data = named
    elif len(grids) == 1 and (not isinstance(data, dict) or all(not isinstance(v, dict) for v in data.values())):
        data = grids[0]
    if (wrapped := wrapped_listing(data)) is not None:
        data = wrapped[1]
    if isinstance(data, (dict, list)) and (table := held_table(data)) is not None:
        return table
    # a map whose every key is a value (`data_key`: `{"shop.xlsx": 5627}` of a workbook's name to its size) lists
    # them: each a record of its key, unlabelled as a listing's name is, and the fields it maps to (a number alone has
    # no name to ask it by)
    if isinstance(data, dict) and data and all(data_key(str(k)) for k in data):
        return [[("", str(k)), *(flatten(v) if isinstance(v, dict) else [])] for k, v in list(data.items())[:50]]
    if isinstance(data, (list, tuple)) and data and all(isinstance(d, dict) for d in data):
        return [flatten(d) for d in list(data)[:50]]
    if data is not None:
        return [flatten(data)]

    def cells(line: str) -> list[tuple[str, Any]]:
        # cells `|` divides, or that spaces pad into columns ("[FILE] notes.txt      66 B"): no one value is the line;
        # but a label padded from its value is one pair ("modified:   TODO.md")
        if " | " in line:
            parts = line.split(" | ")
        else:
            parts = [line] if labelled(line.strip()) is not None else re.split(r"(?<=\S) {3,}(?=\S)", line)
        if len(parts) == 1 and len(pairs := re.split(r"[,;] ", line)) > 1 and all(map(labelled, pairs)):
            parts = pairs  # a line of `key: value` pairs ("name: Ann, team: Sales, hours: 31")
        out = []
        for cell in parts:
            if (pair := labelled(cell)) is not None:
                out.append(pair)
            elif cell.strip():  # (an item of a bulleted list is the item: "customers" of "- customers")
                out.append(("", LIST_MARK.sub("", cell.strip()) or cell.strip()))
        return out

    text, cut = server_text(text)
    text = unmarked(text)
    lines = [line for line in text.splitlines()[:200] if line.strip()]
    if cut and len(lines) > 1:
        lines.pop()  # cut mid-record: not a record
    if (files := diff_records(text.splitlines())) is not None:
        return files
    if (table := markdown_rows(lines) or ruled_rows(lines)) is not None:
        return table
    pairs = [cells(line) for line in lines]
    rows = [p for p in pairs if len(p) > 1]
    # a listing: every line a row of cells, but for a note before or after the rows ("(10 of 11 shown)")
    if len(rows) > 1 and rows in (pairs, pairs[1:], pairs[:-1]):
        return rows
    # a CSV table, alone or under one line naming it (the file it is: "File: /srv/data.csv", "data.csv:"), that line
    # left out as the text around a Markdown table is
    headed = len(lines) > 1 and (labelled(lines[0].strip()) is not None or lines[0].strip().endswith(":"))
    if (table := csv_rows(lines) or (csv_rows(lines[1:]) if headed else None)) is not None:
        return table
    # parts a rule divides ("a.txt:\nsize: 44\n---\nb.txt:\nsize: 340", files read at once): a record each; but a
    # document's front matter (`key: value` lines between rules at its start, or after the heading naming it, "a.md:",
    # before a body that is no such lines) is one record with the text after it: a note's fields
    rules = [i for i, line in enumerate(lines) if RULE.fullmatch(line.strip())]
    if rules:
        parts = [pairs[a + 1 : b] for a, b in zip([-1, *rules], [*rules, len(pairs)])]
        at = 1
        while at < len(parts) - 1:
            before, fields = parts[at - 1], parts[at]
            named = len(before) == 1 and len(before[0]) == 1 and not before[0][0][0] and before[0][0][1].endswith(":")
            body = any(not (len(p) == 1 and p[0][0]) for p in parts[at + 1])  # (not another record of fields)
            if (at == 1 and not before or named) and fields and body and all(len(p) == 1 and p[0][0] for p in fields):
                parts[at - 1 : at + 2] = [before + fields + parts[at + 1]]
            at += 1
        return [[pair for p in part for pair in p] for part in parts if part]
    # records of `key: value` lines that blank lines divide, each under a heading or not ("1. row\nname: products\n\n2.
    # row\nname: orders\n\nResult: 2 rows"): a record each paragraph with the keys two or more have, its heading no
    # field of it; a paragraph that has none of those keys (a count after them) is no record
    paragraphs = [[cells(line) for line in part.splitlines() if line.strip()] for part in re.split(r"\n\s*\n", text)]
    paragraphs = paragraphs[:-1] if cut else paragraphs
    if all(len(p) == 1 for para in paragraphs for p in para):
        keyed = [[p[0] for p in para if p[0][0]] for para in paragraphs]
        shapes = Counter(frozenset(k for k, _ in record) for record in keyed if record)
        shape, times = shapes.most_common(1)[0] if shapes else (frozenset(), 0)
        if times > 1 and all(frozenset(k for k, _ in r) == shape or not shape & {k for k, _ in r} for r in keyed):
            return [r for r in keyed if frozenset(k for k, _ in r) == shape]
    # records of `key: value` lines, one after another ("Commit: a1\nAuthor: Ann\nCommit: b2\nAuthor: Bob"):
    # a new record starts where the key that opens the first one comes again
    keys = [p[0][0] for p in pairs if len(p) == 1 and p[0][0]]
    if keys and keys.count(keys[0]) > 1:
        records: list[list[tuple[str, Any]]] = []
        for p in pairs:
            if len(p) == 1 and p[0][0] == keys[0] or not records:
                records.append([])
            records[-1] += p
        # a heading before the first record ("Commit history:") is not one
        return [r for r in records if any(k == keys[0] for k, _ in r)]
    return [[pair for p in pairs for pair in p]]


# A value a sentence labels: "Confirmation code: ZOE67V.", "Your reservation number is 4F2A9C01." The label is
# a short noun phrase at a sentence's or a clause's start, up to its first preposition (after "and" and
# "Your"/"The": "..., and the time in UTC is 2025-03-23 04:30:00"); the value one token that looks like an
# identifier or an amount (it holds a digit), or a date and its time, so "is on its way" labels nothing; nor the
# first number of an expression ("tags: 2 + 3").
_LABELLED = re.compile(
    r"(?:^|(?<=[.!?]\s)|(?<=,\s))(?:(?:and|but) )?(?:(?:[Yy]our|[Tt]he|[Mm]y) )?"
    r"(?P<label>[A-Za-z][\w-]*(?: [\w-]+){0,5}?)(?:: | is )"
    r"(?P<value>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?|[$€£]?[\w-]*\d[\w.,-]*?)"
    r"(?=[.,;:!?]?(?:\s(?![-+*/×÷^=<>]\s*[\d(])|$))"
)


# A list of measures, each a few words and its number ("Cache hit ratio 0.95, latency 150ms"; "2 files, 1
# directories"), after a label or not
_WORDS, _NUMBER = r"[A-Za-z][\w-]*(?: [A-Za-z][\w-]*){0,3}", r"[$€£]?\d[\d.,]*"
_MEASURE = re.compile(
    rf"(?P<label>{_WORDS}) (?P<value>{_NUMBER}(?: ?[A-Za-z%]{{1,3}})?)|(?P<count>{_NUMBER}) (?P<counted>{_WORDS})"
)


def _measure(part: str) -> re.Match | None:
    """The measure a part of a line is, if it is one: not words that end with a link to more ("Meeting at 10am")."""
    m = _MEASURE.fullmatch(part)
    return None if m is None or m["label"] and m["label"].split()[-1].lower() in LINKS else m


def sentence_fields(text: str) -> list[tuple[str, Any]]:
    """(label, value) pairs that sentences of a prose text state (`_LABELLED`), each label once; or, for a line
    that is a list of two or more measures and nothing else (`_MEASURE`), each measure by its words (a count,
    "2 files", is no value of a label: "Total: 2 files, 1 directories" labels no 2)."""
    lines = [line.split(": ", 1)[-1].strip().rstrip(".") for line in text.splitlines()]
    measures = [[_measure(part) for part in line.split(", ")] for line in lines]
    if any(len(ms) >= 2 and all(ms) for ms in measures):
        return [(m["label"], m["value"]) for ms in measures if len(ms) >= 2 and all(ms) for m in ms if m["label"]]
    found: dict[str, Any] = {}
    for m in _LABELLED.finditer(text):
        # (a number that is one part of a measure of several, "78 weeks and 6 days", is no value alone)
        if re.fullmatch(r"[\d.,]+", m["value"]) and re.match(r" [A-Za-z]+(?: and)?,? \d", text[m.end() :]):
            continue
        label = m["label"].strip()
        clause = re.split(r" (?:at|for|of|in|on|to|with|by) ", label)
        # a clause ("Task created successfully with ID") labels its value by the noun after its last preposition;
        # a noun by the words before its first ("Wi-Fi password at Lake Cabin")
        if len(clause) > 1 and any(participle(w) for w in clause[0].split()[1:]):
            label = clause[-1]
        else:
            label = re.split(r" (?:at|for|of|in|on|to) ", label)[0]
        found.setdefault(label, m["value"].rstrip(".,"))
    return list(found.items())


def result_values(text: str, structured: Any, beside: bool = False) -> list[tuple[str, Any]]:
    """(field, value) pairs a result holds, over all its records (`result_records`), and of a text whose records are
    the rows of a Markdown table, the `label: value` lines around it (a game's "- Game ID: b095ea75" above its
    board). `beside`: and where the records are a table the result holds as one text (`held_table`), the fields
    beside that text, which a later call may take though no task asks of them (the request's id a plan issued beside
    its progress table)."""
    pairs = [pair for record in result_records(text, structured) for pair in record]
    data = result_data(text, structured)
    if beside and isinstance(data, dict) and held_table(data) is not None:
        keys = {k for k, _ in pairs}
        pairs += [(k, v) for k, v in flatten(data) if k not in keys and not (isinstance(v, str) and "\n" in v.strip())]
    said = unmarked(server_text(text)[0])
    if markdown_rows([line for line in said.splitlines() if line.strip()]) and data is None:
        keys = {k for k, _ in pairs}
        pairs += [p for p in dict.fromkeys(labelled_lines(said)) if p[0] not in keys]
    return pairs


HTML_PAGE = re.compile(r"<!DOCTYPE html|<html[\s>]", re.I)


def enumerated(value: Any) -> list[str]:
    """The names a value lists by commas alone (`ENUMERATION`), each a value as a JSON list's items are; [] of any
    other value."""
    if not (isinstance(value, str) and ENUMERATION.fullmatch(value.strip())):
        return []
    return [item.strip() for item in value.split(",")]


def unmarked(text: str) -> str:
    """A text less the web page it carries (a game's board as HTML after what the call said): a page's style and
    script hold `height: 8px` and the like, no field of what the call gave."""
    return HTML_PAGE.split(text, maxsplit=1)[0]
