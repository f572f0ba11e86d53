"""Hermes-style tool calling: the chat template we ship for tool-less models, and its parser.

The model writes tool calls as

    <tool_call>
    {"name": "search_emails", "arguments": {"query": "invoice"}}
    </tool_call>

`parse_tool_calls` turns such text into OpenAI `tool_calls`. Text that looks like a tool call
but does not parse is never dropped: it stays as content and the error is reported.
"""

from __future__ import annotations

import json
import re
import uuid
from functools import cache
from importlib import resources

from pydantic import BaseModel

TOOL_CALL_RE = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_DECODER = json.JSONDecoder()


@cache
def tool_template() -> str:
    return resources.files("mcprl").joinpath("templates/hermes_tools.jinja").read_text()


def template_supports_tools(template: str | None) -> bool:
    return bool(template) and "tools" in template


class ParsedReply(BaseModel):
    content: str
    tool_calls: list[dict]
    error: str | None = None  # why text that looked like a tool call was not parsed


def parse_tool_calls(text: str) -> ParsedReply:
    """Split a model reply into content and OpenAI-format tool calls."""
    if "<tool_call>" not in text:
        return ParsedReply(content=text, tool_calls=[])
    calls: list[dict] = []
    for raw in TOOL_CALL_RE.findall(text):
        try:  # the first JSON value in the block; small models often trail it with prose
            obj, _ = _DECODER.raw_decode(raw)
        except json.JSONDecodeError as e:
            return ParsedReply(
                content=text, tool_calls=[], error=f"tool call is not valid JSON ({e.msg} at char {e.pos})"
            )
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            return ParsedReply(content=text, tool_calls=[], error='tool call must be an object with a string "name"')
        args = obj.get("arguments", obj.get("parameters", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError:
                return ParsedReply(
                    content=text, tool_calls=[], error="tool call arguments are a string that is not JSON"
                )
        if not isinstance(args, dict):
            return ParsedReply(content=text, tool_calls=[], error="tool call arguments must be a JSON object")
        calls.append(
            {
                "id": f"call_{uuid.uuid4().hex[:16]}",
                "type": "function",
                "function": {"name": obj["name"], "arguments": json.dumps(args, ensure_ascii=False)},
            }
        )
    content = TOOL_CALL_RE.sub("", text).strip()
    return ParsedReply(content=content, tool_calls=calls)


def tool_call_format(tools: list[dict]) -> dict:
    """The `response_format` (vLLM's structural_tag) that holds Hermes tool calls to the offered
    tools: free text, and each `<tool_call>` completed as a call of one of `tools` whose arguments
    validate against its input schema, written as the chat template writes one."""
    structures = []
    for t in tools:
        fn = t.get("function") or t
        schema = fn.get("parameters") or {"type": "object"}
        structures.append(
            {
                "begin": f'<tool_call>\n{{"name": {json.dumps(fn["name"])}, "arguments": ',
                "schema": schema,
                "end": "}\n</tool_call>",
            }
        )
    return {"type": "structural_tag", "structures": structures, "triggers": ["<tool_call>"]}
