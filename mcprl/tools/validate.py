"""Checks for server authors (`mcprl validate`): will these tools work for a model?"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, Literal

import jsonschema
from pydantic import BaseModel

from mcprl.tools.convert import schema_problem, to_openai

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_DESCRIPTION_CHARS = 1024  # OpenAI's limit for a function description


class Finding(BaseModel):
    level: Literal["error", "warning"]
    tool: str
    message: str


def check_tools(mcp_tools: list[dict[str, Any]]) -> list[Finding]:
    """Errors: an illegal or duplicate name, no description, an input schema that is not valid
    JSON Schema, has a `$ref` cycle or nests too deep (convert.schema_problem), or is not an object schema, a tool that
    does not convert to an OpenAI function. Warnings: parameters without descriptions, required parameters that are not
    defined, descriptions longer than OpenAI accepts."""
    findings: list[Finding] = []
    counts = Counter(str(t.get("name", "")) for t in mcp_tools)
    for tool in mcp_tools:
        name = str(tool.get("name", ""))

        def add(level: Literal["error", "warning"], message: str, name: str = name) -> None:
            findings.append(Finding(level=level, tool=name, message=message))

        if not NAME.match(name):
            add(
                "error",
                "the name must be 1-64 letters, digits, '_' or '-' (what OpenAI-style function calling accepts)",
            )
        if counts[name] > 1:
            add("error", f"the name is used by {counts[name]} tools; names must be unique")
        description = (tool.get("description") or "").strip()
        if not description:
            add("error", "no description: the model chooses tools by their descriptions")
        elif len(description) > MAX_DESCRIPTION_CHARS:
            add(
                "warning",
                f"the description is {len(description)} characters; OpenAI accepts at most {MAX_DESCRIPTION_CHARS}",
            )
        schema = tool.get("inputSchema")
        if not isinstance(schema, dict):
            add("error", "no input schema (an object schema is required, even with no parameters)")
            continue
        schema_ok = True
        if problem := schema_problem(schema):
            schema_ok = False
            add("error", f"the input schema cannot be used to check arguments ({problem})")
        try:
            if schema_ok:
                jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator).check_schema(
                    schema
                )
        except jsonschema.SchemaError as e:
            schema_ok = False
            where = "/".join(str(p) for p in e.absolute_path)
            add(
                "error",
                "the input schema is not valid JSON Schema" + (f" at {where!r}" if where else "") + f": {e.message}",
            )
        if schema.get("type") != "object":
            add("error", f"the input schema must have type 'object', not {schema.get('type')!r}")
            continue
        properties = schema.get("properties") or {}
        for prop, sub in properties.items():
            if isinstance(sub, dict) and not str(sub.get("description") or "").strip():
                add("warning", f"parameter {prop!r} has no description")
        for missing in sorted(set(schema.get("required") or []) - set(properties)):
            add("warning", f"required parameter {missing!r} is not among the schema's properties")
        if schema_ok:
            try:
                json.dumps(to_openai(tool))
            except (TypeError, ValueError, KeyError) as e:
                add("error", f"does not convert to an OpenAI function schema ({e})")
    return findings
