"""The English that exploring relies on, in one place: everything else in `mcprl.scenarios` works from
structure (schemas, annotations, what the server answered). Four things:

- `READ_WORDS`, `WRITE_WORDS`: the leading words of a tool's name or description that say whether it
  changes the server's state, for tools without MCP's `readOnlyHint`/`destructiveHint`;
- `PROBES`: a small fuzzing dictionary, as RESTler keeps one: values of common shapes (a number, an
  arithmetic expression, a date, a path, an SQL introspection query, ...) for a string parameter that
  nothing else gave a value; `probes(name, description)` orders them by the words the parameter is
  described with, and exploring learns from the server's answers which shape a parameter takes;
- `COMPOSED`: queries of those shapes over a name a result gave (a table's);
- `RATE_LIMITED`: an error that asks the client to slow down;
- `ALLOWED_VALUES`: where an error lists the values it would take ("must be one of ...");
- `NAME_KEYS`: the fields whose value names its record (a file's, an item's), as a value with no key
  does in a listing ("[FILE] notes.txt").
"""

from __future__ import annotations

import re

NAME_KEYS = frozenset({"name", "title", "subject", "label", "path", "file", "filename"})
READ_WORDS = frozenset(
    "get list search find read show describe fetch lookup look query count calculate compute convert compare check "
    "view info inspect explain summarize summarise resolve validate browse retrieve stat status preview "
    "estimate evaluate analyze analyse parse format render translate tell whoami echo ping".split()
)
WRITE_WORDS = frozenset(
    "create delete remove update set write send post put patch insert move rename schedule cancel upload edit modify "
    "append clear reset drop execute exec run restart kill stop start commit push merge publish book buy order pay "
    "transfer grant revoke assign archive mark save store register subscribe invite apply install uninstall "
    "enable disable close open lock unlock approve reject submit replace upsert import sync".split()
)

# shape -> (values, the words a parameter of that shape is described with)
PROBES: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {
    "expression": (
        ("2 + 3", "12 * 4", "(7 - 2) / 5"),
        frozenset("expression expr formula math equation calculate calculation compute evaluate".split()),
    ),
    "sql": (
        (
            "SELECT name FROM sqlite_master WHERE type='table'",
            "SELECT table_name FROM information_schema.tables",
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
    "timezone": (("UTC", "Europe/London"), frozenset("timezone tz zone iana".split())),
    "url": (("https://example.com",), frozenset("url uri link website site href".split())),
    "email": (("user@example.com",), frozenset("email mail recipient sender".split())),
    "number": (("1", "42"), frozenset("number id count amount index num".split())),
    "word": (
        ("test", "example", "hello world"),
        frozenset("name query search text term keyword title topic message".split()),
    ),
    "json": (("{}", "[]"), frozenset("json object payload".split())),
}

# shape -> queries of that shape over a name a result gave ("orders" -> "SELECT * FROM orders LIMIT 5")
COMPOSED: dict[str, tuple[str, ...]] = {"sql": ("SELECT * FROM {} LIMIT 5", "SELECT COUNT(*) FROM {}")}

RATE_LIMITED = re.compile(
    r"\b(?:429|rate[ -]?limit(?:ed)?|too many requests|retry[ -]after|slow down)\b", re.IGNORECASE
)
# "must be one of ('pending', 'done')", "valid values are: a, b", "expected one of [x, y]"
ALLOWED_VALUES = re.compile(
    r"\b(?:one of|(?:valid|allowed|possible|supported) (?:values|options|choices)(?: are)?|choose from)"
    r"\s*:?\s*[\[({]?(?P<items>[^\n\])}]{1,300})",
    re.IGNORECASE,
)


def words_of(name: str) -> list[str]:
    """`getItemById` / `get_item-by id` -> ['get', 'item', 'by', 'id']."""
    return [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", name)]


def _rank(shape: str, name: str, description: str) -> int:
    """0: the parameter's name has a word of the shape's, 1: its description has one, 2: neither."""
    hints = PROBES[shape][1]
    return 0 if set(words_of(name)) & hints else 1 if set(words_of(description)) & hints else 2


def probes(name: str, description: str) -> list[str]:
    """The dictionary's values, those of shapes the parameter is described with first (its name's
    words, then its description's), then the rest in the dictionary's order."""
    return [value for shape in sorted(PROBES, key=lambda s: _rank(s, name, description)) for value in PROBES[shape][0]]


def composed(name: str, description: str, names: list[str]) -> list[str]:
    """`COMPOSED` queries over `names` (identifiers results gave), for a parameter described as of their shape."""
    return [
        template.format(n)
        for shape, templates in COMPOSED.items()
        if _rank(shape, name, description) < 2
        for template in templates
        for n in names
    ]
