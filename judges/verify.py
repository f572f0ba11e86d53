"""Verifiable judges: compare a trajectory's final answer with the scenario's ground truth.

`Scenario.check` (one of mcprl.checks' models, which lists the kinds) selects the verifier; `value`
defaults to `Scenario.answer`. Scores are floats in [0, 1]; a checker's result outside that range is
clamped.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from mcprl import tasks
from mcprl.checks import (
    KINDS,
    Check,
    ContainsCheck,
    ExactCheck,
    HoldsCheck,
    JsonFieldCheck,
    LiveValue,
    NormalizedCheck,
    PythonCheck,
    RegexCheck,
    as_number,
    field_at,
    holds_answer,
    normalize_text,
    numbers,
    same_arguments,
    same_value,
    value_at,
)
from mcprl.errors import UserError, first_problem
from mcprl.judges.base import zero_failed
from mcprl.llm import extract_json
from mcprl.types import SUCCESS_THRESHOLD, Scenario, Trajectory, TrajectoryGroup, content_text

Checker = Callable[[Scenario, Trajectory], Any]  # returns a float, or an awaitable of one


_CHECK = TypeAdapter(Check)


def parse_check(scenario: Scenario) -> Check:
    """The scenario's check (validated when the scenario was; again here, in case it was set since as a
    dict); a bad one is a UserError naming the scenario."""
    try:
        return _CHECK.validate_python(scenario.check)
    except ValidationError as e:
        raise UserError(
            f"scenario {scenario.id}: invalid check {scenario.check!r} ({first_problem(e)}); kinds: {', '.join(KINDS)}"
        ) from None


def _truth(scenario: Scenario, value: Any) -> Any:
    truth = scenario.answer if value is None else value
    if truth is None:
        raise UserError(f"scenario {scenario.id}: its check has no value and the scenario no answer; set one of them")
    return truth


def live_value(trajectory: Trajectory, live: LiveValue) -> Any:
    """The value a task's answer is read from where the server answers anew each time (`LiveValue`): what the
    episode's last call of `live.tool` with `live.arguments` gave at `live.field` of its JSON result, read from the
    agent's messages (a written reference chain's too; a demonstration's call is not the episode's); None where no
    such call answered, or its result has no value there."""
    matching: set[str] = set()
    value = None
    for m in trajectory.agent_messages():
        for call in m.get("tool_calls") or []:
            function = call.get("function") or {}
            arguments = function.get("arguments") or {}
            try:
                arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
            except ValueError:
                continue
            if function.get("name") == live.tool and isinstance(arguments, dict):
                if same_arguments(arguments, live.arguments):
                    matching.add(call.get("id"))
        if m.get("role") == "tool" and m.get("tool_call_id") in matching:
            value = value_at(content_text(m.get("content")), live.field)
    return value


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
            truths, numbered = values, given
            if check.live is not None:  # the value this episode's own call gave
                if (live := live_value(t, check.live)) is None:
                    return 0.0
                truths, numbered = [live], numbers(scenario.task) | {n for n in [as_number(live)] if n is not None}
            if check.max_other_numbers is not None and len(numbers(answer) - numbered) > check.max_other_numbers:
                return 0.0
            if check.max_words is not None and len(answer.split()) > check.max_words:
                return 0.0
            return float(any(holds_answer(answer, v) for v in truths))

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
                return float(same_value(field_at(extract_json(t.final_answer()), check.field), truth))
            except (ValueError, KeyError, IndexError, TypeError):
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
