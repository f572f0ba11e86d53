"""Verifiable judges: compare a trajectory's final answer with the scenario's ground truth.

`Scenario.check` selects the verifier; `value` defaults to `Scenario.answer`:

    {"kind": "exact", "value": "42"}                 stripped string equality
    {"kind": "normalized", "value": "New York"}      case/punctuation/space-insensitive; numbers by value
    {"kind": "contains", "value": ["Paris", "Rome"]} fraction of the values found (normalised) in the answer
    {"kind": "holds", "value": 22.6}                 the answer holds the value (numbers by value, text as
                                                     whole words; `any_of` a list), with at most 3 other numbers;
                                                     `"on": "read_back"`: the result of the scenario's read-back
                                                     call, made in the rollout's session after it (state changes)
    {"kind": "regex", "pattern": "\\b42\\b"}        1 if the pattern matches anywhere (`ignore_case` optional)
    {"kind": "json_field", "field": "order.total", "value": 12.5}  parse the answer as JSON, compare a field
    {"kind": "python", "function": "pkg.module:fn"}  fn(scenario, trajectory) -> float
    {"kind": "server", "server": "inventory", ...}   the task set's checker:
                                                     mcprl.tasks.get(server).check(scenario, trajectory)

Scores are floats in [0, 1]; a checker's result outside that range is clamped.
"""

from __future__ import annotations

import importlib
import inspect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from mcprl import tasks
from mcprl.errors import UserError, first_problem
from mcprl.judges.base import zero_failed
from mcprl.llm import extract_json
from mcprl.matching import as_number, holds_answer, normalize_text, numbers, same_value
from mcprl.types import SUCCESS_THRESHOLD, Scenario, Trajectory, TrajectoryGroup

Checker = Callable[[Scenario, Trajectory], Any]  # returns a float, or an awaitable of one


class _Check(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExactCheck(_Check):
    kind: Literal["exact"]
    value: Any = None


class NormalizedCheck(_Check):
    kind: Literal["normalized"]
    value: Any = None


class ContainsCheck(_Check):
    kind: Literal["contains"]
    value: str | list[str] | None = None


class HoldsCheck(_Check):
    """The answer holds the value (numbers by value, text as whole words), or with `any_of` one of
    the values, and gives at most `max_other_numbers` numbers that are neither a value nor in the
    task, and at most `max_words` words: an answer reciting a whole record (or pasting a tool's
    result) does not pass for the one field asked for."""

    kind: Literal["holds"]
    value: Any = None
    on: Literal["answer", "read_back"] = Field(
        default="answer", description="what must hold it: the final answer, or the scenario's read-back call's result"
    )
    any_of: bool = False
    max_other_numbers: int | None = Field(default=3, ge=0)
    max_words: int | None = Field(default=None, ge=1, description="an answer of more words recites rather than answers")


class RegexCheck(_Check):
    kind: Literal["regex"]
    pattern: str | None = None
    ignore_case: bool = False


class JsonFieldCheck(_Check):
    kind: Literal["json_field"]
    field: str = Field(description="dotted path; integer parts index lists, e.g. items.0.sku")
    value: Any = None


class PythonCheck(_Check):
    kind: Literal["python"]
    function: str = Field(pattern=r"^[\w.]+:[\w.]+$", description="module:attribute")


class ServerCheck(_Check):
    model_config = ConfigDict(extra="allow")  # the server's own check spec rides along
    kind: Literal["server"]
    server: str


Check = Annotated[
    ExactCheck | NormalizedCheck | ContainsCheck | HoldsCheck | RegexCheck | JsonFieldCheck | PythonCheck | ServerCheck,
    Field(discriminator="kind"),
]
_CHECK = TypeAdapter(Check)


def parse_check(scenario: Scenario) -> Check:
    """The scenario's check, validated; a bad one is a UserError naming the scenario."""
    try:
        return _CHECK.validate_python(scenario.check)
    except ValidationError as e:
        raise UserError(
            f"scenario {scenario.id}: invalid check {scenario.check!r} ({first_problem(e)}); "
            "kinds: exact, normalized, contains, holds, regex, json_field, python, server"
        ) from None


def _truth(scenario: Scenario, value: Any) -> Any:
    truth = scenario.answer if value is None else value
    if truth is None:
        raise UserError(f"scenario {scenario.id}: its check has no value and the scenario no answer; set one of them")
    return truth


def _json_field(data: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(data, list) and part.lstrip("-").isdigit():
            data = data[int(part)]
        elif isinstance(data, dict):
            data = data[part]
        else:
            raise KeyError(part)
    return data


def checker_for(scenario: Scenario) -> Checker:
    """The verifier `scenario.check` selects, as a `(scenario, trajectory) -> score` callable."""
    check = parse_check(scenario)
    if isinstance(check, ExactCheck):
        truth = str(_truth(scenario, check.value)).strip()
        return lambda s, t: float(t.final_answer().strip() == truth)
    if isinstance(check, NormalizedCheck):
        truth = _truth(scenario, check.value)
        return lambda s, t: float(same_value(t.final_answer(), truth))
    if isinstance(check, ContainsCheck):
        wanted = _truth(scenario, check.value)
        needles = [normalize_text(w) for w in ([wanted] if isinstance(wanted, str) else wanted)]
        return lambda s, t: sum(n in normalize_text(t.final_answer()) for n in needles) / max(1, len(needles))
    if isinstance(check, HoldsCheck):
        truth = _truth(scenario, check.value)
        values = truth if check.any_of and isinstance(truth, list) else [truth]
        given = numbers(scenario.task) | {n for v in values if (n := as_number(v)) is not None}

        def holds(s: Scenario, t: Trajectory) -> float:
            answer = t.final_answer() if check.on == "answer" else str(t.metadata.get("read_back") or "")
            if check.max_other_numbers is not None and len(numbers(answer) - given) > check.max_other_numbers:
                return 0.0
            if check.max_words is not None and len(answer.split()) > check.max_words:
                return 0.0
            return float(any(holds_answer(answer, v) for v in values))

        return holds
    if isinstance(check, RegexCheck):
        try:
            pattern = re.compile(str(_truth(scenario, check.pattern)), re.IGNORECASE if check.ignore_case else 0)
        except re.error as e:
            raise UserError(f"scenario {scenario.id}: bad regex in its check ({e}); fix the pattern") from None
        return lambda s, t: float(pattern.search(t.final_answer()) is not None)
    if isinstance(check, JsonFieldCheck):
        truth = _truth(scenario, check.value)

        def json_field(s: Scenario, t: Trajectory) -> float:
            try:
                return float(same_value(_json_field(extract_json(t.final_answer()), check.field), truth))
            except (ValueError, KeyError, IndexError):
                return 0.0  # no JSON, or no such field: the answer is wrong, not the checker

        return json_field
    if isinstance(check, PythonCheck):
        module_name, _, attr = check.function.partition(":")
        try:
            target: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError) as e:
            raise UserError(
                f"scenario {scenario.id}: cannot load check function {check.function} ({e}); make it importable as "
                "module:function"
            ) from None
        return target
    return tasks.get(check.server).check


def build_checks(scenarios: list[Scenario], source: str) -> None:
    """Build every scenario's checker now, so that a check that cannot be built fails the run
    before any rollout, naming the file and scenario, instead of skipping groups mid-training."""
    for scenario in scenarios:
        if scenario.check is None:
            continue
        try:
            checker_for(scenario)
        except UserError as e:
            reason = str(e).removeprefix(f"scenario {scenario.id}: ")
            raise UserError(f"{source}: scenario {scenario.id} ({scenario.task[:40]!r}): {reason}") from None


@dataclass
class VerifyJudge:
    """Scores each trajectory with `checker` if given, else with the scenario's own check.

    A group without a scenario (or check) is skipped; so is one whose checker raises, with the
    exception as the reason, since a crashing checker says nothing about the answers.

    `all_or_nothing` drops partial credit: 1 for a solved task (score >= `success_threshold`, the run's
    `--success-threshold`), else 0."""

    checker: Checker | None = None
    name: str = "verify"
    all_or_nothing: bool = False
    success_threshold: float = SUCCESS_THRESHOLD

    async def score_group(self, group: TrajectoryGroup) -> TrajectoryGroup:
        zero_failed(group)
        scenario = group.scenario
        if scenario is None:
            group.skipped = f"{self.name}: the group has no scenario to verify against"
            return group
        if self.checker is None and scenario.check is None:
            group.skipped = f"{self.name}: scenario {scenario.id} has no check; add one or judge with RULER"
            return group
        checker = self.checker or checker_for(scenario)
        scores: list[float] = []
        for t in group.valid:
            try:
                score = checker(scenario, t)
                if inspect.isawaitable(score):
                    score = await score
                score = float(score)
                if not math.isfinite(score):
                    raise ValueError(f"score {score} is not a finite number")
                score = min(1.0, max(0.0, score))
                scores.append(float(score >= self.success_threshold) if self.all_or_nothing else score)
            except Exception as e:
                group.skipped = f"{self.name}: checker raised {type(e).__name__}: {e} (scenario {scenario.id})"
                return group
        for t, score in zip(group.valid, scores):
            t.reward = score
            t.metrics[self.name] = score
        return group
