"""Description experiments (`--tool-overrides FILE`): change what the model is shown of a server's
tools, never what the server receives. A JSON or TOML file:

    [tools.search_items]
    description = "Search the catalogue by a word of the item's name."
    [tools.search_items.parameters.query]
    description = "one word of the name, e.g. 'steel'"
    examples = ["steel", "bolt"]
    [tools.delete_everything]
    hidden = true

Applied to the OpenAI function schemas the model is offered (`apply`); the calls still go to the
server's own tools, checked against their own schemas.
"""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcprl.errors import UserError, first_problem
from mcprl.types import ToolSchema


class ParameterOverride(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str | None = None
    examples: list[Any] | None = None


class ToolOverride(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str | None = None
    hidden: bool = False
    parameters: dict[str, ParameterOverride] = Field(default_factory=dict)


class ToolOverrides(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tools: dict[str, ToolOverride] = Field(default_factory=dict)

    def apply(self, schemas: list[ToolSchema]) -> list[ToolSchema]:
        """The schemas as the model is to see them; a name or parameter the server does not have is a UserError."""
        names = {(s.get("function") or {}).get("name"): s for s in schemas}
        for name, o in self.tools.items():
            if name not in names:
                raise UserError(
                    f"--tool-overrides: the server has no tool {name!r}; its tools: {', '.join(map(str, names))}"
                )
            params = ((names[name].get("function") or {}).get("parameters") or {}).get("properties") or {}
            for p in o.parameters:
                if p not in params:
                    raise UserError(
                        f"--tool-overrides: {name} has no parameter {p!r}; its parameters: "
                        f"{', '.join(params) or 'none'}"
                    )
        out = []
        for s in schemas:
            fn = s.get("function") or {}
            o = self.tools.get(fn.get("name"))
            if o is None:
                out.append(s)
                continue
            if o.hidden:
                continue
            s = copy.deepcopy(s)
            fn = s["function"]
            if o.description is not None:
                fn["description"] = o.description
            props = (fn.get("parameters") or {}).get("properties") or {}
            for p, po in o.parameters.items():
                if po.description is not None:
                    props[p]["description"] = po.description
                if po.examples is not None:
                    props[p]["examples"] = po.examples
            out.append(s)
        if not out:
            raise UserError("--tool-overrides hides every tool; the model would have none to call")
        return out


def load_overrides(path: Path) -> ToolOverrides:
    """A JSON (`.json`) or TOML file of overrides; a bad one is a one-line UserError."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file; give a JSON or TOML file of tool overrides")
    try:
        data = json.loads(path.read_text()) if path.suffix == ".json" else tomllib.loads(path.read_text())
    except (ValueError, tomllib.TOMLDecodeError) as e:
        raise UserError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'TOML'} ({e})") from None
    try:
        return ToolOverrides.model_validate(data)
    except ValidationError as e:
        raise UserError(f"{path}: not a tool-overrides file ({first_problem(e)}); see docs/usage-report.md") from None
