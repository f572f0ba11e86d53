"""Where an exploring call's arguments come from (`mcprl.scenarios.explore`): values earlier results in
the session held, matched to the parameter by name or by the shape of the examples its description
gives; the schema's enums, defaults and examples; a value of the shape the description asks for
(HH:MM, a date, an e-mail, a URL); an SQL query over a table a result named; else a value sampled
from the schema."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel


def words_of(name: str) -> list[str]:
    """`getItemById` / `get_item-by id` -> ['get', 'item', 'by', 'id']."""
    return [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", name)]


class SeenValue(BaseModel):
    value: Any
    field: str
    call: int


def _shape(text: str) -> str:
    """`SKU-1234` -> `A-9`: letters, digits and punctuation runs, for matching a value to an example."""
    return re.sub(r"\d+", "9", re.sub(r"[A-Za-z]+", "A", text))


def description_examples(description: str) -> list[str]:
    """Example values a parameter's description gives: `e.g. SKU-1234`, `'drill'`, `like 2024-03-31`."""
    found = re.findall(
        r"(?:e\.g\.|eg\.|for example|such as|like)\s*:?\s*['\"]?([\w@./:-]+(?: [\w@./:-]+)?)", description, re.I
    )
    found += re.findall(r"['\"`]([^'\"`]{1,40})['\"`]", description)
    return list(dict.fromkeys(v.rstrip(".,)") for v in found if v.strip()))


# What a string parameter's description (or format) says its value looks like -> a value of that shape.
FORMAT_HINTS: tuple[tuple[re.Pattern[str], Callable[[random.Random], str]], ...] = (
    (
        re.compile(r"\bHH:MM\b|\btime\b", re.I),
        lambda rng: f"{rng.randint(0, 23):02d}:{rng.choice([0, 15, 30, 45]):02d}",
    ),
    (re.compile(r"YYYY-MM-DD|\bdate\b", re.I), lambda rng: f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"),
    # an address, not a parameter that searches e-mails ("words that must appear in the email")
    (re.compile(r"^email\b|e-?mail address|\bemail$", re.I), lambda rng: "user@example.com"),
    (re.compile(r"\bur[li]\b", re.I), lambda rng: "https://example.com"),
)
_WORD = re.compile(r"[A-Za-z][A-Za-z']{3,}")  # a word of four letters or more ("SKU-5222" has none)
# A file's or a folder's path inside a value ("/srv/data", "notes/a.txt" in "[FILE] notes/a.txt"), and the
# words that name a parameter taking one
PATH = re.compile(r"(?<![\w/@])(?:~?/[\w.@-]+(?:/[\w.@-]+)*/?|(?:[\w-][\w.-]*/)*[\w-]+\.[A-Za-z]\w{0,5})(?![\w/@])")
PATH_WORDS = {
    "path",
    "paths",
    "file",
    "files",
    "filename",
    "filepath",
    "dir",
    "directory",
    "folder",
    "source",
    "destination",
}
SQL = re.compile(r"\bsql\b|\bselect\b", re.I)


def _is_sql(name: str, schema: dict[str, Any]) -> bool:
    return bool(SQL.search(f"{name} {schema.get('description') or ''}"))


class ArgumentWriter:
    """Proposes arguments for one tool from a schema and the values a session has seen."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def arguments(
        self, schema: dict[str, Any], seen: list[SeenValue]
    ) -> tuple[dict[str, Any], dict[str, str], list[int]]:
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        required = set(schema.get("required") or [])
        args: dict[str, Any] = {}
        sources: dict[str, str] = {}
        parents: list[int] = []
        for name, sub in props.items():
            if not isinstance(sub, dict):
                continue
            if name not in required and ("default" in sub or self.rng.random() < 0.6):
                # optional: usually left to the server, but sometimes given a value an earlier result held
                # (a search's query), or one of the schema's (another page, date window or size): else every
                # search is the same listing of the newest records
                draw = self.rng.random()
                hit = self.from_results(name, sub, _kinds(sub), _examples(sub), seen) if seen and draw < 0.5 else None
                if hit is not None:
                    value, source, parent = hit.value, f"result:{hit.call}", hit.call
                elif (
                    draw > 0.75
                    and "default" in sub
                    and (value := self.sample(name, sub, _kinds(sub), guess=False)) is not None
                ):
                    source, parent = "schema", None
                else:
                    continue
            else:
                value, source, parent = self.value(name, sub, seen)
            if source == "none":
                continue
            args[name], sources[name] = value, source
            if parent is not None:
                parents.append(parent)
        return args, sources, sorted(set(parents))

    def value(self, name: str, schema: dict[str, Any], seen: list[SeenValue]) -> tuple[Any, str, int | None]:
        kinds = _kinds(schema)
        if "const" in schema:
            return schema["const"], "schema", None
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return self.rng.choice(schema["enum"]), "enum", None
        for branch in schema.get("anyOf") or schema.get("oneOf") or []:
            if isinstance(branch, dict) and branch.get("type") != "null":
                return self.value(name, {**branch, "description": schema.get("description", "")}, seen)
        examples = _examples(schema)
        if _is_sql(name, schema):  # a query over a table some result named
            tables = [
                v
                for v in seen
                if isinstance(v.value, str)
                and re.fullmatch(r"[A-Za-z_]\w*", v.value)
                and set(words_of(v.field)) & {"table", "name", "tbl"}
            ]
            if tables:
                pick = self.rng.choice(tables)
                return f"SELECT * FROM {pick.value} LIMIT 5", f"result:{pick.call}", pick.call
        if hit := self.from_results(name, schema, kinds, examples, seen):
            return hit.value, f"result:{hit.call}", hit.call
        item = schema.get("items")
        if (
            "array" in kinds
            and isinstance(item, dict)
            and (hit := self.from_results(name, item, _kinds(item), _examples(item), seen))
        ):
            return (
                [hit.value],
                f"result:{hit.call}",
                hit.call,
            )  # a list of one value a result held ("paths": ["notes/a.txt"])
        if examples and self.rng.random() < 0.7:
            return self.rng.choice(examples), "example", None
        if "default" in schema:
            return schema["default"], "default", None
        return self.sample(name, schema, kinds), "schema", None

    def from_results(
        self, name: str, schema: dict[str, Any], kinds: list[Any], examples: list[Any], seen: list[SeenValue]
    ) -> SeenValue | None:
        """A value seen earlier that fits the parameter: same field name, else the shape of one of
        its examples, else (free-text parameters: query, name, ...) any short text."""
        words = set(words_of(name))
        shapes = {_shape(str(e)) for e in examples}
        fits = [v for v in seen if _fits_type(v.value, kinds)]
        if not fits:
            return None
        by_name = [v for v in fits if v.field and (set(words_of(v.field)) & words - {"the", "of"})]
        by_shape = [v for v in fits if isinstance(v.value, str) and _shape(v.value) in shapes]
        # words a person would search for: a name's or a subject's, not an id's or a date's
        free = [
            v
            for v in fits
            if isinstance(v.value, str)
            and 1 <= len(v.value.split()) <= 8
            and _WORD.search(v.value)
            and words & {"query", "q", "search", "text", "name", "term", "keyword", "keywords", "title", "topic"}
        ]
        # a path parameter takes a path a result held (a folder a listing named, a file in "[FILE] a.txt")
        paths = [
            v.model_copy(update={"value": m.group()})
            for v in fits
            if isinstance(v.value, str) and words & PATH_WORDS
            for m in [PATH.search(v.value)]
            if m
        ]
        # a number parameter may take any number a result gave (a computed value fed on)
        numeric = [v for v in fits if "string" not in kinds and _number(str(v.value)) is not None]
        # a search takes words of a name before a value of its example's shape ('drill' has a category's shape too)
        for pool, chance in ((by_name, 0.85), (paths, 1.0), (free, 0.85), (by_shape, 0.85), (numeric, 0.4)):
            if pool and self.rng.random() < chance:
                pick = self.rng.choice(pool)
                said = pick.value.split() if isinstance(pick.value, str) else []
                if pool is free and len(said) > 1 and (len(said) > 3 or self.rng.random() < 0.5):
                    # one word of a name or a subject, as a person searches ("Porto" from "Your flight to Porto is
                    # confirmed")
                    words_in = [w for w in said if _WORD.fullmatch(w)] or said
                    return pick.model_copy(update={"value": self.rng.choice(words_in)})
                return pick
        return None

    def sample(self, name: str, schema: dict[str, Any], kinds: list[Any], guess: bool = True) -> Any:
        """A value of the schema's type and shape; a free string is a word of the description
        (None unless `guess`: a filter given a random word matches nothing)."""
        if "integer" in kinds or "number" in kinds:
            low = schema.get("minimum", schema.get("exclusiveMinimum", 0) + (1 if "exclusiveMinimum" in schema else 0))
            high = schema.get("maximum", max(low, 0) + 20)
            value = self.rng.randint(int(low), max(int(low), int(high)))
            return value if "integer" in kinds or self.rng.random() < 0.7 else value + self.rng.choice([0.5, 0.25])
        if "boolean" in kinds:
            return self.rng.random() < 0.5
        if "array" in kinds:
            item = schema.get("items") if isinstance(schema.get("items"), dict) else {"type": "string"}
            item_kinds = item.get("type") if isinstance(item.get("type"), list) else [item.get("type")]
            return [self.sample(name, item, item_kinds) for _ in range(max(1, schema.get("minItems", 1)))]
        if "object" in kinds:
            return {}
        if schema.get("format") == "date-time":
            return "2024-03-01T12:00:00Z"
        for pattern, make in FORMAT_HINTS:
            if any(
                pattern.search(hint) for hint in (schema.get("format") or "", schema.get("description") or "", name)
            ):
                return make(self.rng)
        if not guess:
            return None
        words = [w for w in words_of(str(schema.get("description") or "")) if len(w) > 3] or words_of(name) or ["test"]
        return self.rng.choice(words)[: schema.get("maxLength", 40)]


def _kinds(schema: dict[str, Any]) -> list[Any]:
    return schema.get("type") if isinstance(schema.get("type"), list) else [schema.get("type")]


def _examples(schema: dict[str, Any]) -> list[Any]:
    return [*(schema.get("examples") or []), *description_examples(str(schema.get("description") or ""))]


def _fits_type(value: Any, kinds: list[Any]) -> bool:
    if kinds == [None]:
        return True
    if isinstance(value, str):
        if "string" in kinds:
            return True
        number = _number(value)
        return number is not None and ("number" in kinds or "integer" in kinds and float(number).is_integer())
    if isinstance(value, (int, float)):
        return "number" in kinds or "integer" in kinds and float(value).is_integer()
    return False


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def coerce(value: Any, schema: dict[str, Any]) -> Any:
    """A value read from text, as the parameter's type wants it ("42" for an integer -> 42)."""
    kinds = schema.get("type") if isinstance(schema.get("type"), list) else [schema.get("type")]
    if isinstance(value, str) and "string" not in kinds and (number := _number(value)) is not None:
        return int(number) if "integer" in kinds or number.is_integer() and "number" not in kinds else number
    return value
