"""What a verifiable task is checked by: `Scenario.check`, one of the `Check` models (a union told apart by
`kind`). The models are the data every stage reads alike, below them all: grounding and the task sets
write them, the `verify` judge (mcprl.judges.verify) scores by them, the run and the report read them.
Written as JSON (a scenarios file, a task set's generator) they are the same dicts as ever; a check
dumps only the keys it was given (and its `kind`), so a file read and written again is unchanged:

    {"kind": "exact", "value": "42"}                 stripped string equality
    {"kind": "normalized", "value": "New York"}      case/punctuation/space-insensitive; numbers by value
    {"kind": "contains", "value": ["Paris", "Rome"]} fraction of the values found (normalised) in the answer
    {"kind": "holds", "value": 22.6}                 the answer holds the value (numbers by value, text as
                                                     whole words; `any_of` a list), with at most 3 other numbers;
                                                     `"on": "read_back"`: the result of the scenario's read-back
                                                     call, made in the rollout's session after it (state changes);
                                                     `"live": {"tool", "arguments", "field"}`: the value that call,
                                                     made in the episode, gave at `field` of its JSON result, or
                                                     on its line so labelled (a server that answers anew each
                                                     time: dice, the clock)
    {"kind": "regex", "pattern": "\\b42\\b"}        1 if the pattern matches anywhere (`ignore_case` optional)
    {"kind": "json_field", "field": "order.total", "value": 12.5}  parse the answer as JSON, compare a field
    {"kind": "python", "function": "pkg.module:fn"}  fn(scenario, trajectory) -> float
    {"kind": "server", "server": "inventory", ...}   the task set's checker, with the task set's own keys:
                                                     mcprl.tasks.get(server).check(scenario, trajectory)

`value` defaults to `Scenario.answer`. A check also reads as the mapping it was written as
(`check["answer"]`, `check.get("world_seed")`), which is how a task set reads its own keys."""

from __future__ import annotations

import json
import math
import re
import struct
import unicodedata
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializationInfo, SerializerFunctionWrapHandler, model_serializer


# Value matching: whether a text holds a value (numbers by value, text as whole words, both
# normalised). Grounding (mcprl.scenarios) writes answers with it and the checks score by it (the
# `verify` judge, the tool-use shaping, the demonstration, the task sets), so a task's answer is read
# the same way where it is written and where it is checked.
def normalize_text(text: str) -> str:
    """Unicode-folded, lower-cased, punctuation replaced by spaces, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.sub(r"[^\w\s]", " ", text).split())


# A number standing alone, with its exponent ("1.9e-05": group 2, no unit after one) or a unit of up to three
# letters after it ("5.5h", "12kg", "150ms"): never part of a token (SKU-1234, A4, 2d6, a hash 86004dd47, a version
# 1.2.0), nor the whole part of a decimal ("-5.5h" is -5.5, not -5). Thousands separators are dropped before reading
# (`THOUSANDS`).
NUMBER = re.compile(
    r"(?<![\w-])(?<!\d\.)(-?\d+(?:\.\d+)?)(?:([eE][-+]?\d+)(?!\.\d|[\w-])|(?!\.\d)(?:[A-Za-z]{1,3})?(?![\w-]))"
)
THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


def numbers(text: str) -> set[float]:
    """The values of the numbers standing alone in `text`."""
    return {float(whole + exponent) for whole, exponent in NUMBER.findall(THOUSANDS.sub("", text))}


def as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(str(value).strip().replace(",", ""))
    except ValueError:
        return None
    return number if math.isfinite(number) else None


# numbers equal but for float noise: a relative tolerance of 1e-9 would take a clock's seconds 1.8 s apart
# (1796022807.35 and 1796022809.12) for one value, and a replay of a clock for the answer it gave
REL_TOL = 1e-12


def same_value(a: Any, b: Any) -> bool:
    """Equal as numbers when both read as numbers (so "42.0" matches 42), else as normalised text."""
    x, y = as_number(a), as_number(b)
    if x is not None and y is not None:
        return math.isclose(x, y, rel_tol=REL_TOL, abs_tol=1e-9)
    return normalize_text(str(a)) == normalize_text(str(b))


def words(text: str) -> list[str]:
    return normalize_text(text).split()


def single(number: float) -> float:
    """`number` rounded to single precision: a database's REAL column (duckdb's FLOAT) gives 0.9 as
    0.8999999761581421, and a reply of 0.9 holds that answer."""
    try:
        return struct.unpack("f", struct.pack("f", number))[0]
    except OverflowError:
        return number


# An ISO date, with a time or not ("2026-11-27", "2026-11-27T14:00:00+01:00", "2026-11-27 09:40:46"); a day is
# given so, alone or as a midnight timestamp ("2024-03-20T00:00:00.000Z", a database driver's for a date column), or
# with its month named ("March 20, 2024", "20 Mar 2024")
ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b")
MIDNIGHT = re.compile(r"(?:[T ]00:00(?::00(?:\.0+)?)?(?:Z|[+-]00:?00)?)?")
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH = rf"({'|'.join(MONTHS)})[a-z]*\.?"
NAMED_DAY = re.compile(
    rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b|\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\b",
    re.I,
)


def days(text: str) -> set[tuple[int, int, int]]:
    """The days a text names (year, month, day), in ISO or with the month named."""
    found = {(int(y), int(m), int(d)) for y, m, d in ISO_DATE.findall(text)}
    for m in NAMED_DAY.finditer(text):
        month, day, year = (m[1], m[2], m[3]) if m[1] else (m[5], m[4], m[6])
        found.add((int(year), MONTHS.index(month.lower()[:3]) + 1, int(day)))
    return found


def holds_answer(text: str, answer: Any) -> bool:
    """Whether `text` holds `answer`: a number as a number of the same value ("$22.60" holds
    22.6, "SKU-1234" holds no 1234; a fraction stored in single precision as the shortest number
    that rounds to it, `single`), a day as that day however it is written (`days`: "March 20, 2024" holds
    "2024-03-20T00:00:00.000Z", a date column's value as a driver gives it), anything else as whole words, both
    normalised."""
    if (
        isinstance(answer, str)
        and (day := ISO_DATE.fullmatch(answer.strip()))
        and MIDNIGHT.fullmatch(answer.strip()[10:])
    ):
        return (int(day[1]), int(day[2]), int(day[3])) in days(text)
    number = as_number(answer)
    if number is not None:
        return any(
            math.isclose(n, number, rel_tol=REL_TOL, abs_tol=1e-9) or single(n) == number != int(number)
            for n in numbers(text)
        )
    needle = " ".join(words(str(answer)))
    return bool(needle) and f" {needle} " in f" {' '.join(words(text))} "


def field_at(data: Any, path: str) -> Any:
    """The value at a dotted `path` of JSON data ("" is the whole of it); integer parts index lists
    ("items.0.sku"). KeyError, IndexError or TypeError where the data has nothing there."""
    for part in path.split(".") if path else []:
        if isinstance(data, list) and part.lstrip("-").isdigit():
            data = data[int(part)]
        elif isinstance(data, dict):
            data = data[part]
        else:
            raise KeyError(part)
    return data


LABEL = re.compile(r"[A-Za-z][\w .'/-]*")


# Markdown around a label and its value: a list's marker or a quote's before it ("- Game ID: b095ea75", "> Note: ..."),
# emphasis around the label ("**Turn**: White to move") and code marks around the value ("`e2e4`")
MARKED_LABEL = re.compile(r"^(?:[-*+•>]\s+)*(?:\*\*|__)?(?P<label>[^*_:]+?)(?:\*\*|__)?$")


def labelled(cell: str) -> tuple[str, str] | None:
    """A `key: value` cell's key and value, where the key is a label (words, "Commit", "new file"), not code
    that holds a colon (`return {"city": city}`), in Markdown or not (`MARKED_LABEL`); else None."""
    key, sep, value = cell.partition(": ")
    key = m["label"] if (m := MARKED_LABEL.match(key.strip())) else key
    value = value.strip()
    if len(value) > 2 and value[0] == value[-1] == "`":
        value = value[1:-1].strip()
    if sep and len(key) <= 30 and value and LABEL.fullmatch(key.strip()):
        return key.strip(), value
    return None


def labelled_lines(text: str) -> list[tuple[str, str]]:
    """The `label: value` lines of a text ("Day: Wednesday"), each as its label and value."""
    return [pair for line in text.splitlines() if (pair := labelled(line.strip())) is not None]


def value_at(text: str, path: str) -> Any:
    """The one value (a number, a text, a flag) at `path` (`field_at`) of a JSON text, or of a text that is no JSON
    the value of its one line labelled `path` (`labelled_lines`); None where there is no such one value. A live
    answer (`LiveValue`) is read so where it is written and checked."""
    try:
        data = json.loads(text)
    except ValueError:
        values = [value for label, value in labelled_lines(text) if label == path]
        return values[0] if len(values) == 1 else None
    try:
        value = field_at(data, path)
    except (KeyError, IndexError, TypeError):
        return None
    return None if isinstance(value, (dict, list)) else value


def same_arguments(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two calls' arguments are the same: the same names, each value the same (`same_value` for
    scalars, so 2 is "2"; nested values as their JSON)."""

    def same(x: Any, y: Any) -> bool:
        if isinstance(x, (dict, list)) or isinstance(y, (dict, list)):
            return json.dumps(x, sort_keys=True) == json.dumps(y, sort_keys=True)
        return same_value(x, y)

    return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)


KINDS = ("exact", "normalized", "contains", "holds", "regex", "json_field", "python", "server")


class BaseCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        """Only the keys given, and `kind` always (a dump that leaves defaults out keeps it too): the JSON a
        check was written as, without its defaults."""
        data = handler(self)
        given = self.model_fields_set | set(self.__pydantic_extra__ or {})
        return {"kind": self.kind, **{k: v for k, v in data.items() if k in given and k != "kind"}}

    def __getitem__(self, key: str) -> Any:
        """A key of the check's JSON as written: a field given (or `kind`), or a key given beside them (a
        task set's own); a field left to its default is not one."""
        extra = self.__pydantic_extra__ or {}
        if key in extra:
            return extra[key]
        if key == "kind" or key in self.model_fields_set:
            return getattr(self, key)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return key in (self.__pydantic_extra__ or {}) or key == "kind" or key in self.model_fields_set

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


class ExactCheck(BaseCheck):
    kind: Literal["exact"] = "exact"
    value: Any = None


class NormalizedCheck(BaseCheck):
    kind: Literal["normalized"] = "normalized"
    value: Any = None


class ContainsCheck(BaseCheck):
    kind: Literal["contains"] = "contains"
    value: str | list[str] | None = None


class LiveValue(BaseModel):
    """An answer the server gives anew each time (a roll of dice, the clock, live data): the value that the
    episode's own call of `tool` with `arguments` gave at `field` of its JSON result (a dotted path, "" for the
    whole result) or, of a text, on its line labelled `field` (`value_at`), not a value fixed when the task was
    written."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    field: str = ""


class HoldsCheck(BaseCheck):
    """The answer holds the value (numbers by value, text as whole words), or with `any_of` one of
    the values, and gives at most `max_other_numbers` numbers that are neither a value nor in the
    task, and at most `max_words` words: an answer reciting a whole record (or pasting a tool's
    result) does not pass for the one field asked for."""

    kind: Literal["holds"] = "holds"
    value: Any = None
    on: Literal["answer", "read_back"] = Field(
        default="answer", description="what must hold it: the final answer, or the scenario's read-back call's result"
    )
    any_of: bool = False
    max_other_numbers: int | None = Field(default=3, ge=0)
    max_words: int | None = Field(default=None, ge=1, description="an answer of more words recites rather than answers")
    live: LiveValue | None = Field(
        default=None, description="the value is the one this call gave in the episode, not `value` (`LiveValue`)"
    )


class RegexCheck(BaseCheck):
    kind: Literal["regex"] = "regex"
    pattern: str | None = None
    ignore_case: bool = False


class JsonFieldCheck(BaseCheck):
    kind: Literal["json_field"] = "json_field"
    field: str = Field(description="dotted path; integer parts index lists, e.g. items.0.sku")
    value: Any = None


class PythonCheck(BaseCheck):
    kind: Literal["python"] = "python"
    function: str = Field(pattern=r"^[\w.]+:[\w.]+$", description="module:attribute")


class ServerCheck(BaseCheck):
    """A task set's check: `server` names the task set (mcprl.tasks), and the task set's own keys ride along."""

    model_config = ConfigDict(extra="allow")
    kind: Literal["server"] = "server"
    server: str


def live_of(check: BaseCheck | None) -> LiveValue | None:
    """Where a check reads its value from the episode's own call (`HoldsCheck.live`), that call; else None."""
    return check.live if isinstance(check, HoldsCheck) else None


Check = Annotated[
    ExactCheck | NormalizedCheck | ContainsCheck | HoldsCheck | RegexCheck | JsonFieldCheck | PythonCheck | ServerCheck,
    Field(discriminator="kind"),
]
