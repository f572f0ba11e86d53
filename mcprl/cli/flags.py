"""Command-line flags made from the run's settings (mcprl.run.config.RunConfig), for every command.

One flag per setting, named after the field (`rollout.max_turns` is `--max-turns`; the `[lora]`
section's carry its name, `--lora-rank`), with the field's description as its help, the model's
default in brackets and a help panel per section; booleans are `--x/--no-x`, lists repeat the
flag, and `headers`/`env` take `Name: value` / `K=V` strings. A new setting gets its flag by
being added to its section. A few flags have names of their own (`FLAG_NAMES`).

A command takes the flags of the settings it uses (`mcprl train` all of them; every command
that connects to a server those of `[server]`, `SERVER_FLAGS`) by declaring `**given` and
passing through `with_flags`; `overrides(given)` turns what the user gave into
`{"rollout.max_turns": 2}` for `mcprl.run.config.load_config`.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any, Literal

import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from mcprl.run.config import RunConfig

# Flags named otherwise than their field (the field's own name would say less, or is taken), and
# the short forms of the server's flags.
FLAG_NAMES = {
    "server.target": ("--server", "-s"),
    "server.headers": ("--header", "-H"),
    "server.env": ("--env", "-e"),
    "scenarios.file": ("--scenarios",),
    "scenarios.difficulties": ("--difficulty",),
    "judge.mode": ("--judge",),
    "judge.model": ("--judge-model",),
    "time_budget_minutes": ("--time-budget",),
    "scenarios.source": ("--scenario-source",),
    "scenarios.fallback": ("--synthesized-fallback",),
    "explore.calls": ("--explore-calls",),
    "explore.minutes": ("--explore-minutes",),
    "explore.call_timeout": ("--explore-call-timeout",),
    "explore.writes": ("--explore-writes",),
    "explore.generated": ("--explore-generated",),
    "cluster.engine": ("--cluster",),
    "cluster.address": ("--ray-address",),
}
# Sections whose flags carry the section's name: `--rank` alone would not say of what.
PREFIXED = ("lora",)
SCALARS = (str, int, float, bool)

Found = dict[str, tuple[str, type, FieldInfo]]  # parameter name -> (place, flag type, field)


def settings(model: type[BaseModel] = RunConfig, prefix: str = "") -> Iterator[tuple[str, FieldInfo]]:
    """(dotted place, field) of every setting, sections (fields that are models) walked into."""
    for name, field in model.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            yield from settings(field.annotation, f"{prefix}{name}.")
        else:
            yield prefix + name, field


def flag_type(annotation: Any) -> type | None:
    """The type a flag parses a setting's value as (a list type repeats the flag), or None where no
    flag can give one (e.g. a list of chat messages: a run file can). A list or one of some words
    (`target_modules`: names, or all-linear) is a repeated flag."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if annotation in SCALARS:
        return annotation
    if words(annotation):
        return str
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return flag_type(args[0])
    if origin in (typing.Union, types.UnionType) and {flag_type(a) for a in args} == {list[str], str}:
        return list[str]
    if origin is list and len(args) == 1 and args[0] in SCALARS:
        return list[args[0]]
    if origin is dict and args == [str, str]:
        return list[str]
    return None


def words(annotation: Any) -> list[str]:
    """The words a setting takes, where it takes words: a Literal's, and `on` and `off` beside them where it also
    takes a bool (`gradient_checkpointing`: on, off or auto; pydantic reads `on` and `off` as the bool)."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is Literal:
        return list(args) if all(isinstance(a, str) for a in args) else []
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and bool in args:
        said = [words(a) for a in args if a is not bool]
        return ["on", "off", *(w for ws in said for w in ws)] if said and all(said) else []
    return []


def flag_names(place: str) -> tuple[str, ...]:
    section, _, leaf = place.rpartition(".")
    if section in PREFIXED:
        leaf = f"{section}_{leaf}"
    return FLAG_NAMES.get(place) or ((f"-{leaf}",) if len(leaf) == 1 else ("--" + leaf.replace("_", "-"),))


def flag_name(place: str) -> str:
    return flag_names(place)[0]


def flag_help(field: FieldInfo, kind: type, show_default: bool = True) -> str:
    """The field's description, its choices, 'repeatable' for a list, and its default in brackets."""
    text = field.description or ""
    if choices := words(field.annotation):
        text += f" ({'|'.join(choices)})"
    if typing.get_origin(kind) is list:
        text += "; repeatable"
    default = field.get_default(call_default_factory=True)
    if isinstance(default, bool):
        default = "on" if default else "off"
    elif isinstance(default, list):
        default = ", ".join(map(str, default))
    if show_default and default not in (None, "", {}) and len(str(default)) <= 40:
        text += f" \\[{default}]"  # a bracket rich would otherwise read as markup
    return text


def flags(model: type[BaseModel] = RunConfig, only: Callable[[str], bool] = lambda place: True) -> Found:
    """Python parameter name -> (place, flag type, field), for every setting a flag can give
    (of those whose place `only` accepts)."""
    out = {}
    for place, field in settings(model):
        kind = flag_type(field.annotation)
        if kind is None or (field.json_schema_extra or {}).get("cli") is False or not only(place):
            continue
        out[place.replace(".", "__")] = (place, kind, field)
    return out


FLAGS = flags()
SERVER_FLAGS = flags(only=lambda place: place.startswith("server."))
EXPLORE_FLAGS = flags(only=lambda place: place.startswith("explore."))


def with_flags(
    command: Callable[..., Any], found: Found, *, show_defaults: bool = True, panel_note: str = ""
) -> Callable[..., Any]:
    """`command` (which takes `**given`) as Typer reads it: its own parameters, then a flag per
    setting in `found`, in a help panel per section. `show_defaults=False` leaves the model's
    defaults out of the help, for a command whose defaults come from elsewhere (a run's own)."""
    own = [
        p
        for p in inspect.signature(command, eval_str=True).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    names = [
        d
        for p in own
        for info in (p.default, *typing.get_args(p.annotation)[1:])
        for d in getattr(info, "param_decls", None) or ()
    ]
    names += [n for place, _, _ in found.values() for n in flag_names(place)]
    if clash := {n for n in names if names.count(n) > 1}:
        raise RuntimeError(f"settings share the flag(s) {', '.join(sorted(clash))}; name one of each in FLAG_NAMES")
    params = list(own)
    for param, (place, kind, field) in found.items():
        section = place.partition(".")[0] if "." in place else None
        decls = flag_names(place)
        if kind is bool:
            decls = (f"{decls[0]}/--no-{decls[0][2:]}", *decls[1:])
        option = typer.Option(
            [] if typing.get_origin(kind) is list else None,
            *decls,
            help=flag_help(field, kind, show_defaults),
            rich_help_panel=f"\\[{section}]{panel_note}" if section else None,
            show_default=False,
        )
        params.append(inspect.Parameter(param, inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=option))
    command.__signature__ = inspect.Signature(params)
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command


def overrides(given: dict[str, Any], found: Found = FLAGS) -> dict[str, Any]:
    """The settings the user gave as flags, by place (`{"rollout.max_turns": 2}`), for load_config."""
    return {found[k][0]: v for k, v in given.items() if k in found}
