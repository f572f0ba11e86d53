"""MCP -> what the model sees: tools as OpenAI function schemas, tool results as bounded text.

Both work on the MCP wire format (plain JSON dicts), which is the same whichever SDK produced it.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from mcprl.tools.content import (
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    is_text,
    parse_blocks,
)
from mcprl.types import ToolSchema, content_hash

# Keywords whose value is a schema, or a list/map of schemas, in a JSON Schema.
_SUBSCHEMA = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def to_openai(tool: dict[str, Any]) -> ToolSchema:
    """An MCP tool as `{"type": "function", "function": {"name", "description", "parameters"}}`.

    Schema `title`s (pydantic's "addArguments", "A", ...) are dropped: they cost prompt tokens
    and tell the model nothing the property names don't.
    """
    parameters = _without_titles(tool.get("inputSchema") or {})
    parameters.setdefault("type", "object")
    if parameters["type"] == "object":
        parameters.setdefault("properties", {})
    return {
        "type": "function",
        "function": {
            "name": tool["name"],
            "description": (tool.get("description") or tool.get("title") or "").strip(),
            "parameters": parameters,
        },
    }


def _without_titles(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if k != "title" or not isinstance(v, str)}
    for key in _SUBSCHEMA:
        if key in out:
            out[key] = _without_titles(out[key])
    for key in _SUBSCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_without_titles(s) for s in out[key]]
    for key in _SUBSCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: _without_titles(s) for name, s in out[key].items()}
    return out


# Keywords that apply their schema(s) to the same instance: a $ref cycle through only these never
# reaches a smaller part of the instance, so a validator following it recurses forever.
_SAME_INSTANCE = ("not", "if", "then", "else")
_SAME_INSTANCE_LISTS = ("allOf", "anyOf", "oneOf")
MAX_SCHEMA_DEPTH = 64  # applicators nested deeper than this (through $refs included) are refused


def pointed(schema: Any, ref: str) -> Any:
    """What a local `$ref` ("#/$defs/Request") of `schema` points to; None where it points nowhere."""
    node = schema
    for part in ref.removeprefix("#").split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def inlined(schema: Any) -> Any:
    """`schema` with each local `$ref` replaced by the schema it points to (the keywords beside it kept), and its
    `$defs` dropped, so that each part stands alone (a nested object drawn and checked by its own schema, as a
    pydantic model's `{"request": {"$ref": "#/$defs/Request"}}` needs). A `$ref` met again below itself (a tree's
    `children`) takes any value there."""

    def walk(node: Any, refs: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(n, refs) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            rest = {k: v for k, v in node.items() if k != "$ref"}
            target = pointed(schema, ref)
            if ref in refs or len(refs) >= MAX_SCHEMA_DEPTH or not isinstance(target, dict):
                return walk(rest, refs)
            return walk({**target, **rest}, (*refs, ref))
        out = {}
        for key, value in node.items():
            if key in ("properties", "patternProperties", "dependentSchemas") and isinstance(value, dict):
                out[key] = {name: walk(sub, refs) for name, sub in value.items()}  # names, then schemas
            elif key not in ("$defs", "definitions"):
                out[key] = value if key in ("enum", "const", "default", "examples") else walk(value, refs)
        return out

    return walk(schema, ())


def schema_problem(schema: Any) -> str | None:
    """Why a tool's input schema cannot be used to check arguments, or None: a local `$ref` that
    leads back to itself without descending into the instance (`#/$defs/A` -> `#/$defs/B` ->
    `#/$defs/A`: jsonschema raises RecursionError on it, a grammar compiler loops or refuses),
    or applicators nested past MAX_SCHEMA_DEPTH. A recursive schema that does descend (a tree
    whose `children` items refer to the root) is fine."""

    clean: set[str] = set()  # refs whose every path was followed without a problem

    def walk(node: Any, refs: tuple[str, ...], depth: int) -> str | None:
        if not isinstance(node, dict):
            return None
        if depth > MAX_SCHEMA_DEPTH:
            return f"applicators nested more than {MAX_SCHEMA_DEPTH} levels deep"
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#") and ref not in clean:
            if ref in refs:
                return "$ref cycle: " + " -> ".join([*refs[refs.index(ref) :], ref])
            if (found := walk(pointed(schema, ref), (*refs, ref), depth + 1)) is not None:
                return found
            clean.add(ref)
        for key in _SAME_INSTANCE:
            if (found := walk(node.get(key), refs, depth + 1)) is not None:
                return found
        for key in _SAME_INSTANCE_LISTS:
            for sub in node.get(key) if isinstance(node.get(key), list) else ():
                if (found := walk(sub, refs, depth + 1)) is not None:
                    return found
        return None

    # every subschema of the document, each walked along what applies to the same instance;
    # iterative, as a server's schema can nest deeper than Python's recursion limit
    stack: list[tuple[Any, int]] = [(schema, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > 4 * MAX_SCHEMA_DEPTH:
            return f"nested more than {4 * MAX_SCHEMA_DEPTH} levels deep"
        if isinstance(node, dict):
            if (found := walk(node, (), 0)) is not None:
                return found
            stack += [(v, depth + 1) for v in node.values()]
        elif isinstance(node, list):
            stack += [(v, depth + 1) for v in node]
    return None


def tools_hash(tools: list[ToolSchema]) -> str:
    """Stable across listing order: the same tools hash the same however the server orders them."""
    return content_hash(sorted(tools, key=lambda t: t["function"]["name"]))


def hash_change_warning(previous: str | None, current: str, server: str) -> str | None:
    """A warning when a run's recorded tool-list hash differs from the server's tools now."""
    if previous is None or previous == current:
        return None
    return (
        f"the tools of {server} changed since this run started (hash {previous} -> {current}); "
        "its trajectories before and after saw different tool lists"
    )


TRUNCATED = re.compile(r"\n\[\.\.\. truncated: \d+ more characters\]$")  # what _BoundedText ends a cut result with


def untruncated(text: str) -> tuple[str, bool]:
    """A result's text without the line saying it was cut, and whether it was cut (its last line,
    then, may end mid-record)."""
    kept = TRUNCATED.sub("", text)
    return kept, kept != text


HTML_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


class _BoundedText:
    """Joins parts up to `limit` characters and only counts the rest, so a huge result stays cheap.
    `data()`: only the parts added as data, cut where `text()` is (a part not data takes its room)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.kept = 0
        self.cut = 0
        self.data_parts: list[str] = []

    def add(self, text: str, data: bool = True) -> None:
        first = not self.parts
        joined = text if first else "\n" + text
        room = self.limit - self.kept
        if room > 0:
            piece = joined[:room]
            self.parts.append(piece)
            self.kept += len(piece)
            if data:
                self.data_parts.append(piece if first else piece[1:])
        self.cut += max(0, len(joined) - max(room, 0))

    def _marked(self, joined: str) -> str:
        return f"{joined}\n[... truncated: {self.cut} more characters]" if self.cut else joined

    def text(self) -> str:
        return self._marked("".join(self.parts))

    def data(self) -> str:
        # (an HTML line break is one: some servers join their lines with it, mcp-server-obsidian its notes' paths)
        return self._marked(HTML_BREAK.sub("\n", "\n".join(self.data_parts)))


def _size(n_bytes: int) -> str:
    if n_bytes < 1024:
        return f"{n_bytes} B"
    if n_bytes < 1024 * 1024:
        return f"{round(n_bytes / 1024)} KB"
    return f"{n_bytes / (1024 * 1024):.1f} MB"


def _placeholder(mime: str | None, b64: str) -> str:
    n_bytes = len(b64) * 3 // 4 - b64[-2:].count("=") if b64 else 0
    return f"[{mime or 'application/octet-stream'}, {_size(n_bytes)}]"


def block_text(block: ContentBlock) -> str:
    """A block as the model is shown it: text as it is, a binary as a placeholder (`[image/png, 4 KB]`,
    `[audio content]` for a kind this client does not know), a resource link as its URI."""
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, (ImageContent, AudioContent)):
        return _placeholder(block.mimeType, block.data)
    if isinstance(block, EmbeddedResource):
        if "text" in block.resource:
            return str(block.resource["text"])
        return _placeholder(block.resource.get("mimeType"), str(block.resource.get("blob", "")))
    if isinstance(block, ResourceLink):
        return block.uri
    return f"[{block.type} content]"


class Rendered(NamedTuple):
    text: str  # what the model is shown
    data: str  # the text the server wrote (text blocks, text resources; else its structured content), cut alike


def render(content: list[ContentBlock], structured: Any, limit: int) -> Rendered:
    """A `tools/call` result as text: text blocks joined, binaries as `[image/png, 12 KB]`, resource
    links as their URI, structured content as JSON when there is no other content. Longer than `limit`
    characters: cut, with a marker saying how much was cut. And the same with only the text the server
    wrote (`data`): no placeholder of ours."""
    out = _BoundedText(limit)
    for block in content:
        out.add(block_text(block), data=is_text(block))
    if not out.parts and structured is not None:
        out.add(json.dumps(structured, ensure_ascii=False))
    return Rendered(out.text(), out.data())


def result_text(result: dict[str, Any], limit: int) -> str:
    """A `tools/call` result (wire JSON) as the model is shown it (`render`)."""
    return render(parse_blocks(result.get("content")), result.get("structuredContent"), limit).text


# A result that reports an error in its text without MCP's `isError` ("Database error: near
# \"2026\": syntax error", "ValueError: ...", "notes.txt: Error - ENOENT: ...", {"error": "not found"}):
# the first line opens with an error word or a refusal, or names one before a colon within its first few words, or
# says it of what it names ("NAME: Error - ..."), or the whole result is a JSON object whose only keys
# are error fields or it says `"ok": false`. A listing whose later lines mention errors is data.
_ERROR_OPENING = re.compile(
    r"^\W*(?:error|exception|traceback|fatal|failed|failure)\b"
    # ... or says the call could not be done, or asks for what it lacks ("Could not parse date 'x'. Use ISO 8601",
    # "Unknown calendar", "Please provide either a country or a city"), after a label too ("Note: Could not
    # resolve country 'x'", where what follows is the server's fallback, not what was asked)
    r"|^\W*(?:[A-Za-z]{2,12}:\s*)?(?:could ?n[o']t|can ?n[o']t|unable to|failed to|not supported)\b"
    r"|^\W*(?:invalid|unknown|unsupported|unrecognized|please (?:provide|specify|use|enter|supply|give|pass))\s+\w"
    # ("Must provide either footnote_id or search_text", "You must specify a path")
    r"|^\W*(?:you\s+)?(?:must|need to) (?:provide|specify|supply|give|pass|include)\s+\w"
    r"|^[\w .'-]{0,40}?\b\w*(?:error|exception)\b\s*[:!]"
    # ... or says what failed, and why ("Session merge failed: Source session not found"; not a count, "Tests
    # failed: 3"), or what the call lacks ("Either keys or keyPattern must be provided", "watcherId is required")
    r"|^[\w .'-]{0,40}?\b(?:failed|failure)\s*:(?!\s*\d)"
    r"|^\W*[\w .'`\"-]{1,60}?\s(?:must be (?:provided|given|specified|supplied)|(?:is|are) required)\b"
    r"|^.{1,80}?:\s+(?:error|exception)\b\s*[:!-]"
    # ... or that what a value it quotes names is not there ("Column 'x' not found in table orders", "[NOT_FOUND] x —
    # path does not exist"; not an absence, "No notes found")
    r"|^\W*not[ _]found\b"
    # ... or that the call was refused ("Access denied: Can only read files in working directory: /srv", "Permission
    # denied", "Forbidden: ...", "Not allowed to write there")
    r"|^\W*(?:access|permission|operation|request)\s+(?:denied|forbidden|refused|not (?:allowed|permitted))\b"
    r"|^\W*(?:denied|forbidden|refused|not (?:allowed|permitted))\s*(?:[:.!]|$|to\b)"
    r"|^[\w .-]{0,40}?(?<!\w)(['\"`])[^'\"`\n]{1,80}\1\s+(?:(?:was|is)\s+)?(?:not found|does(?: not|n't) exist)\b",
    re.IGNORECASE,
)
# a line of a result, past its first, that says what follows is an error: a heading of one ("--- Error (status code:
# 1) ---", "## Error") or a Python traceback's first line: the output of code run, which failed
_ERROR_HEADING = re.compile(r"^\s*[-=#*]+\s*error\b(?:\s*\([^)]*\))?\s*[-=#*:]*\s*$", re.IGNORECASE | re.MULTILINE)
TRACEBACK = re.compile(r"^\s*Traceback \(most recent call last\):\s*$", re.MULTILINE)
# the fields of an object that says only that the call failed: its error, and what goes with one (a hint on what to
# fix: mcp-geo's `{"error": "Invalid GeoJSON: ...", "hint": "Check your input parameters."}`)
_ERROR_KEYS = {
    "error", "errors", "error_message", "error_type", "error_code", "message", "detail", "details", "reason", "hint",
    "suggestion", "traceback", "code", "status", "ok", "success",
}  # fmt: skip
_OUTCOME_FLAGS = ("ok", "success", "succeeded", "successful")  # a result's flag of whether the call worked
_FAILED_STATUSES = (False, "error", "failed", "failure", "fail")  # a `status` that says the call did not work


def _failed_status(status: Any) -> bool:
    return status is False or isinstance(status, str) and status.strip().lower() in _FAILED_STATUSES


def reports_error(text: str) -> bool:
    """Whether a tool result that MCP calls a success says in its text that the call failed: an error opening its
    first line, a line heading an error or a traceback (code run that failed), or a JSON object that says it (`{"ok":
    false, ...}`, `{"success": false, ...}`, `{"status": "error", "message": ...}`, `{"result": "error", "reason":
    ...}`, or only error fields: `{"error": "not found"}`), or one whose every entry does (a result per file asked
    for, each failed)."""
    try:
        data = json.loads(text)
    except ValueError:
        opening = text.lstrip().partition("\n")[0][:200]
        return _ERROR_OPENING.search(opening) is not None or any(
            p.search(text[:4000]) for p in (_ERROR_HEADING, TRACEBACK)
        )
    if not isinstance(data, dict):
        return False
    # (a batch's records, each holding only an error where its result would be: mcp-geo's `batch_geocode`, whose
    # every address's `matches` was `{"error": "Name or service not known", "hint": ...}`, beside its counts)
    batches = [v for v in data.values() if isinstance(v, list) and v and all(isinstance(i, dict) for i in v)]
    return (
        _says_failed(data)
        or bool(data)
        and all(isinstance(v, dict) and _says_failed(v) for v in data.values())
        or bool(batches)
        and all(_holds_error(record) for batch in batches for record in batch)
    )


def _holds_error(data: Any) -> bool:
    """Whether a JSON value is, or holds at any depth, an object of error fields only (`_errors_only`)."""
    if isinstance(data, dict):
        return _errors_only(data) or any(_holds_error(v) for v in data.values())
    return isinstance(data, list) and any(_holds_error(v) for v in data)


def _errors_only(data: dict[str, Any]) -> bool:
    """Whether an object holds an error and nothing but what goes with one (`_ERROR_KEYS`)."""
    return bool(data.get("error") or data.get("errors")) and set(data) <= _ERROR_KEYS


def _says_failed(data: dict[str, Any]) -> bool:
    return (
        any(data.get(flag) is False for flag in _OUTCOME_FLAGS)
        # (a failed `status` or `result` with a message or reason beside it: `{"status": false, "status_message":
        # "..."}`, `{"result": "error", "reason": "..."}`; alone it may be a thing's state, a lamp's
        # `{"status": false}`)
        or any(_failed_status(data.get(key)) for key in ("status", "result"))
        and any("message" in key or "error" in key or "reason" in key for key in data)
        or _errors_only(data)
    )
