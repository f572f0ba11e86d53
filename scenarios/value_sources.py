"""Where an exploring call's candidate values are found (the arms of `mcprl.scenarios.values` draw from them):
the examples a parameter's description gives, the values in plain view before any call (the server's command line,
environment and resources), what an error names and how it words a bad value, the names a listing gives, a value
that worked with its numbers varied, a value of the schema's type from its bounds and formats; and a value fitted to
the type a parameter takes."""

from __future__ import annotations

import ast
import datetime
import functools
import itertools
import json
import math
import random
import re
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from mcprl.scenarios.expressions import EXPRESSION
from mcprl.scenarios.lexicon import ALLOWED_VALUES, DENIED, FORBIDDING, LIST_GOES_ON, PROBES, VERBS, words_of
from mcprl.tools import ServerSpec
from mcprl.tools.convert import TRACEBACK, reports_error
from mcprl.tools.copies import RUNTIME_VARIABLES, assigned, is_program
from mcprl.tools.redact import secret_values

QUOTED = re.compile(r"""(?<![\w])['"`]([^'"`\n]{1,120})['"`]""")
# a command's usage an error quotes ("usage: 'git <command> [<revision>...]'"): its placeholders are no value
USAGE = re.compile(r"<[\w-]+>|\[[^\]]*\.\.\.\]")
PATH = re.compile(r"(?<![\w/@])(?:~?/[\w.@-]+(?:/[\w.@-]+)*/?|(?:[\w-][\w.-]*/)*[\w-]+\.[A-Za-z]\w{0,5})(?![\w/@])")
NAME = re.compile(r"[\w][\w.@-]{0,79}")  # one token a listing may name (a file, a folder, a key)
# a token of letters and digits mixed, too long to say: a digest a server computed, an id it issued
# ("098f6bcd4621d373cade4e832627b4f6"); one of its characters changed names nothing
ISSUED = re.compile(r"(?=\S*\d)(?=\S*[A-Za-z])[\w-]{20,}")


def kinds_of(schema: dict[str, Any]) -> list[Any]:
    return schema.get("type") if isinstance(schema.get("type"), list) else [schema.get("type")]


def number_of(text: str) -> float | None:
    """The number a text is, where a float holds it (not "inf", nor 400 digits: no integer parameter takes them)."""
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def fits_type(value: Any, kinds: list[Any]) -> bool:
    if kinds == [None]:
        return isinstance(value, (str, int, float)) and not isinstance(value, bool)
    if isinstance(value, bool):
        return "boolean" in kinds
    if isinstance(value, str):
        if "string" in kinds:
            return True
        number = number_of(value)
        return number is not None and ("number" in kinds or "integer" in kinds and float(number).is_integer())
    if isinstance(value, (int, float)):  # (an int as it is: the factorial of 200 is too large for a float)
        integral = isinstance(value, int) or value.is_integer()
        return "number" in kinds or "integer" in kinds and integral or "string" in kinds
    return False


def coerce(value: Any, schema: dict[str, Any]) -> Any:
    """A value read from text, as the parameter's type wants it ("42" for an integer -> 42; 7 for a string -> "7")."""
    kinds = kinds_of(schema)
    if isinstance(value, str) and "string" not in kinds and (number := number_of(value)) is not None:
        return int(number) if "integer" in kinds or number.is_integer() and "number" not in kinds else number
    if isinstance(value, (int, float)) and not isinstance(value, bool) and kinds == ["string"]:
        return str(value)
    return value


def offered(text: str) -> list[str]:
    """The values a text quotes, but those it forbids or says there is none of (`FORBIDDING`: "ref must not start with
    "-"", "'EmptySet' object has no attribute 'inv'"; `DENIED`: "name 'f' is not defined")."""
    return [
        m[1]
        for m in QUOTED.finditer(text)
        if not FORBIDDING.search(text[max(0, m.start() - 80) : m.start()]) and not DENIED.match(text, m.end())
    ]


# the words that give examples of a value: of many, not the ones it takes ("e.g. 'e4', 'Nf3'" of a chess move)
EXAMPLE_CUE = r"(?:e\.g\.|eg\.|for example|such as|like)"


def description_examples(description: str) -> list[str]:
    """Example values a parameter's description gives: `e.g. SKU-1234`, `'drill'`, `like 2024-03-31`."""
    found = re.findall(EXAMPLE_CUE + r"\s*,?:?\s*['\"]?([\w@./:-]+(?: [\w@./:-]+)?)", description, re.I)
    found += offered(description)
    return list(dict.fromkeys(v.rstrip(".,)") for v in found if v.strip()))


@functools.cache
def _called(tools: tuple[str, ...]) -> re.Pattern[str]:
    """Where a text calls one of `tools` as code does (its name, then "("), the longest name first; made once per
    server, not once per result text."""
    return re.compile(rf"\b({'|'.join(map(re.escape, sorted(tools, key=len, reverse=True)))})\(")


def call_examples(text: str, params: dict[str, list[str]]) -> dict[tuple[str, str], list[Any]]:
    """The values a text shows a call of one of the server's tools sent, written as a call in code is (a catalogue's
    `"example": "transform_crs(geojson=data, from_crs='EPSG:4326', to_crs='EPSG:3857')"`, a description's
    `geocode('Dhaka, Bangladesh', limit=1)`): (tool, parameter) -> those values, each a literal (a name, `data`,
    stands for a value the example does not give); a value given by position is the parameter's of that place."""
    found: dict[tuple[str, str], list[Any]] = {}
    if not params:
        return found
    for m in _called(tuple(params)).finditer(text):
        depth, quote, end = 1, "", None
        for i in range(m.end(), min(len(text), m.end() + 2000)):
            c = text[i]
            if quote:
                quote = "" if c == quote and text[i - 1] != "\\" else quote
            elif c in "'\"":
                quote = c
            elif c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth == 0:
                    end = i
                    break
        if end is None:
            continue
        try:
            call = ast.parse(f"f({text[m.end() : end]})", mode="eval").body
        except SyntaxError:
            continue
        assert isinstance(call, ast.Call)
        tool, names = m[1], params[m[1]]
        given = [(names[i], a) for i, a in enumerate(call.args) if i < len(names)]
        given += [(k.arg, k.value) for k in call.keywords if k.arg in names]
        for name, node in given:
            try:
                value = ast.literal_eval(node)
            except ValueError:
                continue
            found.setdefault((tool, name), []).append(value)
    return found


_ITEM = r"[\w@./:+-]+(?: [\w@./:+-]+){0,2}"
# a list of short items in a text, after "(", ":" or "either": "(Mercury, Venus, Earth or Mars)", "unit: m, ft and in",
# "either json or text", "(asc, desc, none)"
LIST = re.compile(
    rf"(?:[(:]|\beither\b)\s*(?:{EXAMPLE_CUE}\s*)?(?P<items>{_ITEM}(?:,\s*{_ITEM})*,?\s+(?:or|and)\s+{_ITEM}"
    rf"|{_ITEM}(?:,\s*{_ITEM}){{2,}}(?=\)))",
    re.I,
)


# ... or anywhere, of three items or more ("Create a new issue, todo, feature, epic, or diary entry"): the kinds of
# thing a tool makes, where a parameter is named for its kind (`item_type`)
PROSE_LIST = re.compile(rf"(?P<items>{_ITEM}(?:,\s*{_ITEM}){{2,}},?\s+(?:or|and)\s+{_ITEM})", re.I)


def listed_items(text: str, pattern: re.Pattern[str] = LIST) -> list[str]:
    """The items of the lists a text gives (`LIST`): a tool that takes one of a few values often names them so, in its
    own description or its parameter's ("How many moons a planet has (Mercury, Venus, Earth or Mars)"); an article
    opening one is no part of it ("a new issue"), nor what follows a preposition ("diary entry for current project"),
    nor the "etc." that says the list goes on."""
    return [
        re.sub(r"^(?:an?|the)\s+|\s+(?:for|of|in|on|to|with|from|by|at)\b.*$", "", item.strip(" ."), flags=re.I)
        for m in pattern.finditer(text)
        for item in re.split(r",\s*(?:(?:or|and)\s+)?|\s+(?:or|and)\s+", m["items"], flags=re.I)
        if item.strip(" .") and item.strip(" .").lower() not in LIST_GOES_ON
    ]


def illustrates(description: str) -> bool:
    """Whether a description gives values as examples (`EXAMPLE_CUE`), not as the ones a parameter takes."""
    return re.search(rf"\b{EXAMPLE_CUE}", description, re.I) is not None


# the names of MCP's transports: a server's command line says which it speaks (`excel-mcp-server stdio`, `--transport
# stdio`), which no tool of it takes (a sheet, a column, a search "stdio")
TRANSPORTS = frozenset({"stdio", "sse", "http", "streamable-http", "streamable_http", "streamablehttp"})


def context_values(spec: ServerSpec, resources: list[dict[str, Any]], templates: list[dict[str, Any]]) -> list[str]:
    """Values in plain view before any call: the stdio command's arguments (but the program, its
    script or module, flags and the transport it names: `--repository /srv/r` gives /srv/r, `env GIT_BASE_DIR=/srv/r`
    too),
    the environment given to the server (secrets left out) and its working directory, the server's
    resources' URIs and names and its resource templates' names (not a name that `serves` them)."""
    found: list[str] = []
    command = spec.command[1:]
    for i, arg in enumerate(command):
        if arg.partition("=")[0] in RUNTIME_VARIABLES:  # (where its programs are: `env PYTHONPATH=...`)
            continue
        if (value := assigned(arg)) is not None:  # (a flag's value, or a variable's that `env` sets)
            found.append(value)
            continue
        if arg.startswith("-"):
            continue
        if i and command[i - 1] == "-m" or is_program(arg):
            continue  # the server's own program (after `env -C DIR`, say)
        found.append(arg)
    secret = set(secret_values(spec, environ={}))
    found += [v for k, v in spec.env.items() if v not in secret and k not in RUNTIME_VARIABLES]
    if spec.cwd:
        found.append(spec.cwd)
    for r in resources:
        found += [str(r[k]) for k in ("uri", "name") if r.get(k) and not (k == "name" and serves(str(r[k])))]
    found += [str(t["name"]) for t in templates if t.get("name") and not serves(str(t["name"]))]
    return [v for v in dict.fromkeys(found) if v and len(v) <= 300 and v.lower() not in TRANSPORTS]


def serves(name: str) -> bool:
    """Whether a resource's name is the function's that serves it (`get_schema_list`, `listTables`: an identifier
    opening with a verb, as a Python server names its resources), which is no value of the server's: mcp-sqlalchemy's
    `column_name` was sent "get_table_info"."""
    words = words_of(name)
    return re.fullmatch(r"[A-Za-z]\w*", name) is not None and len(words) > 1 and words[0] in VERBS


FOLDER_ENTRIES = 40  # entries under one folder in plain view offered as values
LISTED_PER_FOLDER = 200  # entries of one folder read (a folder of 100,000 files is not listed whole)


def folder_entries(spec: ServerSpec, context: list[str]) -> dict[str, list[str]]:
    """The files and folders under each value in plain view that names a folder on this machine (a stdio
    server's working directory, `--root /srv/docs`; relative to the working directory), as paths relative to
    it: two levels deep, nearest first, hidden ones left out. A server given a folder works on the files in it
    (a spreadsheet server started in the user's folder of workbooks), as one that lists them would say."""
    if spec.transport != "stdio":
        return {}
    found: dict[str, list[str]] = {}
    for value in context:
        folder = Path(spec.cwd or "", value)
        if not (folder.is_absolute() and folder.is_dir()):
            continue
        entries: list[Path] = []
        level = [folder]
        for _ in range(2):
            below = []
            for parent in level:
                try:
                    below += sorted(itertools.islice(parent.iterdir(), LISTED_PER_FOLDER))
                except OSError:  # a folder this user may not read
                    continue
            level = [e for e in below if not e.name.startswith(".")]
            entries += level
            level = [e for e in level if e.is_dir()]
        found[value] = [str(e.relative_to(folder)) for e in entries[:FOLDER_ENTRIES]]
    return {value: names for value, names in found.items() if names}


# the heading of a docstring's section of arguments (Google's "Args:", "Parameters:"; NumPy's underlined one)
ARGS_HEADING = re.compile(r"^\s*(?:args|arguments|parameters|params)\s*:?\s*(?:\n\s*-{3,})?\s*$", re.I | re.M)
ARG_LINE = re.compile(r"^(\s*)(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")  # "path (str): File path", "path: ..."
PARAM_FIELD = re.compile(r":param\s+(?:\w+\s+)?(\w+)\s*:\s*([^\n]+)")  # Sphinx's ":param path: File path"


def documented(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool whose parameters lacking a description in its schema get the one its description's docstring gives
    (`Args:` / `Parameters:` sections, `:param name:` fields), as a Python server's tools often carry them: "path: File
    path relative to project root" says the path is a file's, where the schema says only `"title": "Path"`."""
    schema = tool.get("inputSchema") or {}
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    text = str(tool.get("description") or "")
    said: dict[str, str] = dict(PARAM_FIELD.findall(text))
    for heading in ARGS_HEADING.finditer(text):
        indent: int | None = None
        lines = [line for line in text[heading.end() :].splitlines()[1:] if line.strip()]
        for i, line in enumerate(lines):
            found = ARG_LINE.match(line)
            depth = len(line) - len(line.lstrip())
            if indent is None and found is None:
                break
            if found is not None and (indent is None or depth == indent):
                indent = depth
                # (NumPy's "path : str", its description on the line below, indented more)
                below = lines[i + 1] if i + 1 < len(lines) else ""
                typed = " " not in found[3].strip() and len(below) - len(below.lstrip()) > depth
                if found[2] in props:
                    said.setdefault(found[2], (below if typed else found[3]).strip())
            elif indent is None or depth <= indent:
                break  # the next section ("Returns:") or prose
    filled = {
        k: {**v, "description": said[k]}
        for k, v in props.items()
        if isinstance(v, dict) and not v.get("description") and said.get(k)
    }
    if not filled:
        return tool
    return {**tool, "inputSchema": {**schema, "properties": {**props, **filled}}}


FILE_TEXT_BYTES = 2000  # a file in plain view this small is a text a parameter may be given whole ...
FILE_TEXTS = 12  # ... of this many files at most


def file_texts(spec: ServerSpec, context: list[str], folders: dict[str, list[str]]) -> dict[str, str]:
    """The texts of the small files in plain view (those the server is given, and those in the folders it is given:
    `folder_entries`), by their paths: what a parameter that takes a document of their kind may be given (a CSV
    server's `content`, as a person pastes the file they have)."""
    paths = [Path(spec.cwd or "", v) for v in context]
    paths += [Path(spec.cwd or "", folder, name) for folder, names in folders.items() for name in names]
    found: dict[str, str] = {}
    for path in paths:
        if len(found) >= FILE_TEXTS:
            break
        try:
            if not path.is_absolute() or not path.is_file() or path.stat().st_size > FILE_TEXT_BYTES:
                continue
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):  # not readable, or no text
            continue
        if text.strip() and "\x00" not in text:
            found[str(path)] = text
    return found


def scalars(data: Any) -> list[str]:
    """The texts and numbers in JSON data, its keys left out."""
    if isinstance(data, dict):
        data = list(data.values())
    if isinstance(data, list):
        return [text for v in data for text in scalars(v)]
    return [str(data)] if isinstance(data, (str, int, float)) and not isinstance(data, bool) else []


def message_of(error: str) -> str:
    """What an error's text says: of a JSON object, its values (its keys, `status`, `error_code`, or the request's
    own, `database`, `schema`, said back, are its form); of a traceback, the exception's message alone (its frames
    name the server's files and code, "eval(code, self.locals)", not what was sent nor what to send)."""
    if "{" in error:
        try:
            data = json.loads(error[error.index("{") :])
        except ValueError:
            data = None
        if isinstance(data, dict):
            error = "\n".join(scalars(data))
    if (trace := TRACEBACK.search(error)) is None:
        return error
    return error[: trace.start()] + error.rstrip().rpartition("\n")[2]


def error_values(text: str, sent: set[str]) -> list[str]:
    """Values an error message names that the call did not send: quoted ones ("outside the allowed
    repository '/srv/r'"), examples ("a date like 2024-03-31") and the items of a list it says it
    takes ("must be one of (a, b)", "the columns: name, team")."""
    text = message_of(text)
    found = offered(text) + description_examples(text)  # "after must be a date like 2024-03-31"
    for m in ALLOWED_VALUES.finditer(text):
        items = [item.strip(" '\"`.") for item in re.split(r",|\bor\b|\|", m["items"].split(". ")[0])]
        if not m["kind"] or len(items) >= 2 and all(0 < len(item.split()) <= 3 for item in items):
            found += items
    # not what the call sent, quoted back whole or in part, nor a message quoting it ("error: no object /srv/r"), nor
    # most of it joined to what the server adds ("/srv/r/<a long value sent>", cut where a quote ended early)
    # (in any case: "Could not parse date "utc"" of a date sent "UTC" quotes it back); nor a quote cut short by one
    # inside it, or a message an error quotes, which no value is ("cannot sympify object of type <class " of `"cannot
    # sympify object of type <class 'X'>"`)
    lowered = {s.lower() for s in sent}
    return [
        v
        for v in dict.fromkeys(found)
        if v
        and v == v.strip()
        and not reports_error(v)
        and len(v) <= 120
        and not v.endswith(":")
        and not USAGE.search(v)
        and not any(
            (low := v.lower()) in s or len(s) > 2 and (s in low or _shared(low, s) >= max(8, len(s) * 2 // 3))
            for s in lowered
        )
    ]


def _shared(a: str, b: str) -> int:
    """The length of the longest text two texts share."""
    return SequenceMatcher(None, a, b, autojunk=False).find_longest_match().size


def error_shape(text: str, value: str, tool: str) -> str | None:
    """An error's first line with the value it quotes back ("Ref '2024-03-05 10' did not resolve",
    whole or in part) and the tool's name left out: parameters whose bad values draw one wording take
    one kind of value. None where the error does not quote the value (a bare echo says nothing of its
    kind), or says nothing besides it."""
    line = text.strip().partition("\n")[0]
    quoted = [q for q in QUOTED.findall(line) if q == value or len(q) > 3 and q in value]
    if not quoted:
        return None
    for q in quoted:
        line = line.replace(q, "{}")
    line = line.replace(tool, "{tool}")
    return line if len(re.findall(r"[A-Za-z]{3,}", line.replace("{tool}", ""))) >= 2 else None


def listed_names(value: Any) -> list[str]:
    """The names a listed value gives: its paths ("docs/a.txt"), or its one token ("notes.txt" of "[FILE]
    notes.txt")."""
    if not isinstance(value, str):
        return []
    paths = PATH.findall(value)
    if paths:
        return paths
    tokens = [t for t in value.split() if NAME.fullmatch(t)]
    return tokens if len(tokens) == 1 and len(value.split()) <= 2 else []


def shape_of(text: str) -> str:
    """`SKU-1234` -> `A-9`: runs of letters and of digits, and the punctuation between them."""
    return re.sub(r"\d+", "9", re.sub(r"[A-Za-z]+", "A", text))


# A date, a date and time, or a time of day, as ISO 8601 writes them ("2025-03-23", "2025-03-23 12:30:00", "09:30")
DATE_OR_TIME = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})(?:(?P<sep>[T ])(?P<time>\d{2}:\d{2}(?::\d{2})?))?"
    r"|(?P<clock>(?<![\d:])\d{1,2}:\d{2}(?::\d{2})?(?![\d:]))"
)


OPERATOR = re.compile(r"(?<=[\d)])(\s*)([-+*/])(\s*)(?=[-\d(])")  # an operator between two operands


def renumbered(value: str, rng: random.Random) -> str:
    """A value with its numbers changed as a person changes them: each within half to twice its size, in its form
    (integers stay integers, zero-padded ones padded, decimals keep their places): `2d6+3` gives `3d10+2`, not
    `61d35-8`; a date or a time of day moves as a calendar does, to one that exists (`2025-03-23 12:30:00` gives
    `2024-11-02 14:15:00`, not `4050-06-46 24:60:00`). A path's folders stay (where the server works): only its
    last part changes, `/srv/s51/report-3.md` gives `/srv/s51/report-5.md`. A sum's operators change too: `12 * 4`
    gives `9 - 5`."""

    def vary(m: re.Match[str]) -> str:
        digits, _, decimals = m.group().partition(".")
        number = float(m.group()) * rng.uniform(0.5, 2.0)
        if decimals:
            return f"{max(number, 10 ** -len(decimals)):.{len(decimals)}f}"
        return str(max(1, round(number))).zfill(len(digits) if digits.startswith("0") else 0)

    def moved(m: re.Match[str]) -> str:
        if m["date"] is None and m["clock"] is None:
            return vary(m)
        clock = m["time"] or m["clock"] or ""
        form = "%H:%M:%S" if clock.count(":") == 2 else "%H:%M" if clock else ""
        form = f"%Y-%m-%d{m['sep'] or ''}{form}" if m["date"] else form
        try:
            when = datetime.datetime.strptime(m.group(), form)
        except ValueError:  # no day of the calendar ("2025-02-30"): its numbers vary as numbers do
            return re.sub(r"\d+", vary, m.group())
        days = rng.choice([-1, 1]) * rng.randint(1, 400) if m["date"] else 0
        minutes = rng.choice([-1, 1]) * 15 * rng.randint(1, 24) if clock else 0
        said = (when + datetime.timedelta(days=days, minutes=minutes)).strftime(form)
        return said[1:] if m["clock"] and len(m["clock"]) < len(said) and said[0] == "0" else said

    # an arithmetic expression is no path ("(7 - 2) / 5" has no folder): every number of it varies, and each operator
    # is drawn again, as a person asks other sums ("12 * 4" gives "9 - 5"); one with an operator other than a dash
    # (a date, a phone number, "7 - 2" vary as before)
    if EXPRESSION.fullmatch(value) and any(m[2] != "-" for m in OPERATOR.finditer(value)):
        value = OPERATOR.sub(lambda m: f"{m[1]}{rng.choice('+-*/')}{m[3]}", value)
        return re.sub(r"\d+(?:\.\d+)?", vary, value)
    folders, slash, last = value.rpartition("/")
    return folders + slash + re.sub(rf"{DATE_OR_TIME.pattern}|\d+(?:\.\d+)?", moved, last)


def from_schema(schema: dict[str, Any], kinds: list[Any], rng: random.Random) -> Any:
    """A value of the schema's type from its structure alone (bounds, formats, a text's least length: sentences of the
    dictionary's, as many as it takes); None for a free string."""
    if "integer" in kinds or "number" in kinds:
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0) + (1 if "exclusiveMinimum" in schema else 0))
        high = schema.get("maximum", max(low, 0) + 20)
        value = rng.randint(int(low), max(int(low), int(high)))
        return value if "integer" in kinds or rng.random() < 0.7 else value + rng.choice([0.5, 0.25])
    if "boolean" in kinds:
        return rng.random() < 0.5
    formats = {
        "date-time": "2024-03-01T12:00:00Z",
        "date": "2024-03-01",
        "time": "12:00:00",
        "email": "user@example.com",
        "uri": "https://example.com",
        "url": "https://example.com",
        "uuid": "123e4567-e89b-12d3-a456-426614174000",
    }
    sentences = list(PROBES["text"][0])
    least = schema.get("minLength")
    if schema.get("format") or "string" not in kinds or not isinstance(least, int) or least <= max(map(len, sentences)):
        return formats.get(str(schema.get("format") or ""))
    # (a text a tool wants longer than any sentence of the dictionary's, an analysis of 100 characters at least)
    rng.shuffle(sentences)
    text = " ".join(itertools.islice(itertools.cycle(sentences), least // 20 + 1))
    return text if len(text) >= least and not schema.get("pattern") else None
